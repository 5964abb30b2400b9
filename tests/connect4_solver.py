"""Exact Connect Four solver, the tests' oracle: re-derives the scores of the Connect Four test
sets (``tests/test_connect4_solver.py`` checks every shipped set against it).

    python tests/connect4_solver.py                          # the shipped Test_L3_R1, all lines
    python tests/connect4_solver.py --limit 100 FILE ...     # the first 100 lines of each file
    python tests/connect4_solver.py jaxsearch/data/connect4/Test_L3_R1.moves --limit 20

A file holds one position a line: ``MOVES SCORE`` (the ``Test_*`` sets) or ``MOVES S1 .. S7``
(the ``Test_*.moves`` files: the score after each column, ``-1000`` for a full column). MOVES
lists the columns played from the empty board, ``1``-``7`` from the left, first player first.
The command scores every line again and prints one JSON line per run: the number of lines, how
many matched, the first mismatches and the time taken; it exits with status 1 on a mismatch.

From the tests (``tests/`` is on their import path: ``import connect4_solver``):

    solver = connect4_solver.Solver()           # or connect4_solver.solve(moves), one shared Solver
    solver.solve("4455")                        # 18
    solver.score_columns("7422341735647741166133573473242566")  # [-3, 1, None, None, -4, 1, None]

**Score** (the convention of the test sets, Pascal Pons' "test protocol"): the result of
perfect play for the player to move, both sides winning as early and losing as late as they
can. A win is ``22 - k`` where ``k`` is the number of stones the winner has played when the
game ends (one side has 21 stones at most), a loss is ``k - 22``, a draw is 0. So with ``n``
moves played, winning with the next stone scores ``(43 - n) // 2``, losing to the opponent's
next stone ``-((42 - n) // 2)``.

**Method**: negamax with alpha-beta pruning over bitboards, a transposition table of score
bounds, and move ordering (moves that create more threats first, ties broken centre first).
Each column is 7 bits, the six cells from the bottom up plus an always-empty bit on top that
keeps lines from wrapping into the next column; cell ``(column c, row r)`` is bit ``7c + r``.
A position is ``(mine, mask)``: the stones of the player to move and all stones. Moves that
hand the opponent an immediate win are never searched: if the opponent threatens a playable
cell the mover must take it (two such threats lose at once), and a cell directly below an
opponent's threat is not played. Pure Python, one CPU core (a shared one, so +-50%): the 1000
end-game positions of ``Test_L3_R1`` (fewer than 14 moves left) take 0.3 s, those of
``Test_L2_R1`` 10 s; ``Test_L2_R2`` (14 to 28 moves left) about 0.5 s a position. Early
positions take far longer (the columns of ``"4455"``, 37 moves left: minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

WIDTH = 7
HEIGHT = 6
CELLS = WIDTH * HEIGHT  # 42
FULL_COLUMN_SCORE = -1000  # the marker of a full column in ``Test_*.moves``

_COLUMN_BITS = HEIGHT + 1
_BOTTOM = sum(1 << (_COLUMN_BITS * c) for c in range(WIDTH))  # row 0 of every column
_BOARD = _BOTTOM * ((1 << HEIGHT) - 1)  # every playable cell (no top guard bits)
_COLUMN = [((1 << HEIGHT) - 1) << (_COLUMN_BITS * c) for c in range(WIDTH)]
_TOP = [1 << (_COLUMN_BITS * c + HEIGHT - 1) for c in range(WIDTH)]
# Centre first, then alternately left and right: 3, 2, 4, 1, 5, 0, 6.
_ORDER = sorted(range(WIDTH), key=lambda c: (abs(2 * c - (WIDTH - 1)), c))
_DATA = Path(__file__).resolve().parents[1] / "jaxsearch" / "data" / "connect4"
_DEFAULT_SET = _DATA / "Test_L3_R1"


def _has_four(stones: int) -> bool:
  """Whether ``stones`` hold four in a line (vertical, horizontal, both diagonals)."""
  for step in (1, _COLUMN_BITS, _COLUMN_BITS - 1, _COLUMN_BITS + 1):
    pairs = stones & (stones >> step)
    if pairs & (pairs >> (2 * step)):
      return True
  return False


def _threats(stones: int, mask: int) -> int:
  """The empty cells (playable now or not) that would complete four for ``stones``."""
  # Vertical: only the cell on top of three stones.
  cells = (stones << 1) & (stones << 2) & (stones << 3)
  for step in (_COLUMN_BITS, _COLUMN_BITS - 1, _COLUMN_BITS + 1):
    behind = (stones << step) & (stones << (2 * step))  # stones at x - step and x - 2 step
    cells |= behind & (stones << (3 * step))  # ... and x - 3 step
    cells |= behind & (stones >> step)  # ... and x + step
    ahead = (stones >> step) & (stones >> (2 * step))  # stones at x + step and x + 2 step
    cells |= ahead & (stones >> (3 * step))
    cells |= ahead & (stones << step)
  return cells & (_BOARD ^ mask)


def _playable(mask: int) -> int:
  """The lowest empty cell of every column that is not full."""
  return (mask + _BOTTOM) & _BOARD


def parse_moves(moves: str) -> tuple[int, int, int]:
  """``(mine, mask, n)`` after ``moves`` (columns ``1``-``7``), ``mine`` being the stones of the
  player to move and ``n = len(moves)``.

  Raises:
    ValueError: a character that is not a column, a move into a full column, or a move after
      the game was won.
  """
  mine = mask = 0
  for i, char in enumerate(moves):
    if char not in "1234567":
      raise ValueError(f"{moves!r}: {char!r} (move {i + 1}) is not a column 1-7")
    col = int(char) - 1
    if mask & _TOP[col]:
      raise ValueError(f"{moves!r}: move {i + 1} plays in full column {char}")
    if _has_four(mine ^ mask):
      raise ValueError(f"{moves!r}: move {i + 1} comes after the game was won")
    cell = (mask + (1 << (_COLUMN_BITS * col))) & _COLUMN[col]
    mine, mask = mine ^ mask, mask | cell  # the other player moves next
  if _has_four(mine ^ mask):
    raise ValueError(f"{moves!r}: the game is over (the last move made four)")
  return mine, mask, len(moves)


class Solver:
  """Exact scores of Connect Four positions, with a transposition table kept between calls
  (positions of one game share much of their trees); ``max_entries`` bounds it (it is
  cleared when full). ``nodes`` counts the positions searched."""

  def __init__(self, max_entries: int = 4_000_000):
    self.max_entries = max_entries
    self.table: dict[int, tuple[int, int]] = {}
    self.nodes = 0

  def solve(self, moves: str) -> int:
    """The score of the position after ``moves`` for the player to move (see the module
    docstring); ``ValueError`` for an invalid or finished game."""
    mine, mask, n = parse_moves(moves)
    return self._score(mine, mask, n, -CELLS, CELLS)

  def score_columns(self, moves: str) -> list[Optional[int]]:
    """The score of playing each column in the position after ``moves``, for the player to
    move there (``None`` for a full column); its maximum is :meth:`solve`'s score."""
    mine, mask, n = parse_moves(moves)
    scores: list[Optional[int]] = []
    for col in range(WIDTH):
      cell = _playable(mask) & _COLUMN[col]
      if not cell:
        scores.append(None)
      elif _has_four(mine | cell):
        scores.append((CELLS + 1 - n) // 2)
      elif n + 1 == CELLS:
        scores.append(0)
      else:
        scores.append(-self._score(mine ^ mask, mask | cell, n + 1, -CELLS, CELLS))
    return scores

  def _score(self, mine: int, mask: int, n: int, alpha: int, beta: int) -> int:
    """:meth:`_search` where the player to move may have an immediate win."""
    if n == CELLS:
      return 0
    if _threats(mine, mask) & _playable(mask):
      return (CELLS + 1 - n) // 2
    if len(self.table) > self.max_entries:
      self.table.clear()
    return self._search(mine, mask, n, alpha, beta)

  def _search(self, mine: int, mask: int, n: int, alpha: int, beta: int) -> int:
    """Negamax score of a position whose mover cannot win at once, within ``(alpha, beta)``:
    a result ``<= alpha`` is an upper bound of the score, ``>= beta`` a lower bound, anything
    between the exact score."""
    self.nodes += 1
    theirs = mine ^ mask
    their_threats = _threats(theirs, mask)
    playable = _playable(mask)
    forced = playable & their_threats
    if forced:
      if forced & (forced - 1):
        return -((CELLS - n) // 2)  # two threats: they win with their next stone
      playable = forced
    candidates = playable & ~(their_threats >> 1)  # never play under their threat
    if not candidates:
      return -((CELLS - n) // 2)
    if n >= CELLS - 2:
      return 0  # no four can be made with the last two stones any more
    # The opponent cannot win at once after a candidate, and we cannot win before our next
    # stone: the score lies within [low, high].
    low = -((CELLS - 2 - n) // 2)
    high = (CELLS - 1 - n) // 2
    # One number per position: a column of h stones adds the mover's stones there to
    # 2**h - 1, a value in [2**h - 1, 2**(h + 1) - 2] that gives back h and the stones, and
    # never carries into the next column.
    key = mine + mask
    known = self.table.get(key)
    if known is not None:
      low, high = max(low, known[0]), min(high, known[1])
    if low == high or high <= alpha:
      return high
    if low >= beta:
      return low
    a, b = max(alpha, low), min(beta, high)
    # Candidates, most new threats first, ties centre first (sorted() is stable).
    children = []
    for col in _ORDER:
      cell = candidates & _COLUMN[col]
      if cell:
        children.append((_threats(mine | cell, mask | cell).bit_count(), cell))
    children.sort(key=lambda child: -child[0])
    a0, best = a, -CELLS
    for _, cell in children:
      value = -self._search(theirs, mask | cell, n + 1, -b, -a)
      if value > best:
        best = value
        if value > a:
          a = value
          if a >= b:
            break
    if best >= b:
      low = max(low, best)  # a cut: the score is at least best
    elif best <= a0:
      high = min(high, best)  # every move failed low: the score is at most best
    else:
      low = high = best
    self.table[key] = (low, high)
    return best


_SOLVER = Solver()


def solve(moves: str) -> int:
  """The score of the position after ``moves`` (columns ``1``-``7``) for the player to move:
  positive = a win (``22 -`` the winner's stones at the end), 0 = a draw, negative = a loss."""
  return _SOLVER.solve(moves)


def score_columns(moves: str) -> list[Optional[int]]:
  """The score of each column in the position after ``moves`` (``None`` for a full column)."""
  return _SOLVER.score_columns(moves)


def check_lines(lines, solver: Optional[Solver] = None, limit: Optional[int] = None) -> dict:
  """Scores the positions of test-set ``lines`` again: ``MOVES SCORE`` or ``MOVES S1 .. S7``.
  Returns ``{"positions", "matched", "mismatches"}``, ``mismatches`` a list of
  ``{"line", "moves", "expected", "found"}`` (in file order, line numbers from 1)."""
  solver = solver or Solver()
  positions, matched, mismatches = 0, 0, []
  for number, line in enumerate(lines, start=1):
    fields = line.split()
    if not fields:
      continue
    if limit is not None and positions >= limit:
      break
    moves, numbers = fields[0], [int(x) for x in fields[1:]]
    if len(numbers) == 1:
      expected, found = numbers[0], solver.solve(moves)
    elif len(numbers) == WIDTH:
      expected = numbers
      found = [FULL_COLUMN_SCORE if s is None else s for s in solver.score_columns(moves)]
    else:
      raise ValueError(f"line {number}: expected MOVES SCORE or MOVES S1 .. S7, got {line!r}")
    positions += 1
    if found == expected:
      matched += 1
    else:
      mismatches.append(dict(line=number, moves=moves, expected=expected, found=found))
  return dict(positions=positions, matched=matched, mismatches=mismatches)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("files", nargs="*", type=Path, default=[_DEFAULT_SET],
                      help="test-set files (default: the shipped Test_L3_R1)")
  parser.add_argument("--limit", type=int, default=None,
                      help="score only the first LIMIT positions of each file")
  args = parser.parse_args(argv)
  solver = Solver()
  start = time.perf_counter()
  files = []
  positions = matched = 0
  for path in args.files:
    with open(path, encoding="ascii") as lines:
      result = check_lines(lines, solver, args.limit)
    files.append(dict(file=str(path), positions=result["positions"], matched=result["matched"],
                      mismatches=result["mismatches"][:5]))
    positions += result["positions"]
    matched += result["matched"]
  seconds = time.perf_counter() - start
  print(json.dumps(dict(positions=positions, matched=matched, all_matched=matched == positions,
                        seconds=round(seconds, 2), nodes=solver.nodes, files=files)))
  return 0 if matched == positions else 1


if __name__ == "__main__":
  sys.exit(main())
