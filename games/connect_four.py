"""Connect Four (7 columns x 6 rows) as pure JAX functions, tuned for ``jax.vmap`` on CPU.

Action ``c`` in ``[0, 7)`` drops a disc in column ``c`` (shown to humans, and written in move
strings, as ``c + 1``). The first player is ``X``, the second ``O``.

Representation: each player's discs are six 7-bit row masks (``uint8[6]``, row 0 = bottom,
bit ``c`` = column ``c``), stored relative to the mover (``mine`` / ``theirs``) and swapped after
every move. Why: a move, the landing row, the legality mask and the full four-in-a-row test are
then a few dozen elementwise shifts/ANDs -- no gathers, no scatters, no Python loops at trace
time -- which XLA fuses into a few tight loops over the batch (about 20-35 M steps/s for
``jit(vmap(step))`` at B=256 on 2 CPU cores, 3-6x pgx's connect_four). The state is
14 bytes, which matters because the search stores one per tree node.

Conventions (see ``jaxsearch.game``): reward ``+1`` to the mover on a winning move, else ``0``;
``discount`` ``-1`` on moves that do not end the game and ``0`` on the move that ends it (win or
full-board draw); ``legal_actions`` of a terminal state is all ``False``. Stepping a terminal
state, a full column, or an out-of-range column is a no-op: the state is returned unchanged with
``reward = 0``, ``discount = 0`` (the engine masks illegal actions; this only has to be
harmless).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.game import Game, StepResult

NUM_COLUMNS = 7
NUM_ROWS = 6
NUM_ACTIONS = NUM_COLUMNS
FULL_ROW = (1 << NUM_COLUMNS) - 1  # 0b1111111
FULL_COLUMN_SCORE = -1000  # marker of an unplayable column in the Test_*.moves files


@struct.dataclass
class State:
  """One Connect Four position (unbatched; batched states have a leading ``[B]``).

  Attributes:
    mine: ``uint8[6]`` row masks of the discs of the player to move (row 0 = bottom, bit ``c``
      = column ``c``).
    theirs: ``uint8[6]`` row masks of the opponent's discs.
    num_moves: ``int8[]`` discs on the board; the player to move is X iff it is even.
    terminal: ``bool[]`` the game is over (four in a row, or the board is full).
  """

  mine: jax.Array
  theirs: jax.Array
  num_moves: jax.Array
  terminal: jax.Array


def init(key: jax.Array) -> State:
  """The empty board, X to move. ``key`` is unused (the start is deterministic)."""
  del key
  return State(
      mine=jnp.zeros((NUM_ROWS,), jnp.uint8),
      theirs=jnp.zeros((NUM_ROWS,), jnp.uint8),
      num_moves=jnp.int8(0),
      terminal=jnp.bool_(False),
  )


def legal_actions(state: State) -> jax.Array:
  """``bool[7]``: columns whose top cell is empty; all ``False`` at terminal states."""
  top = state.mine[NUM_ROWS - 1] | state.theirs[NUM_ROWS - 1]
  col_full = (top >> jnp.arange(NUM_COLUMNS, dtype=jnp.uint8)) & 1
  return (col_full == 0) & ~state.terminal


# Bit masks over a word of 4 rows x 7 bits (bit 7*k + c = row k, column c).
_WORD_ROW0 = (1 << NUM_COLUMNS) - 1  # row 0 of the word: windows must start there
_LEFT4 = 0b0001111  # columns 0..3: where a rightward run of 4 can start
_RIGHT4 = 0b1111000  # columns 3..6: where a leftward (up-left diagonal) run can start
_HORIZONTAL_STARTS = _LEFT4 * (1 | 1 << 7 | 1 << 14 | 1 << 21)  # columns 0..3 of every row


def _has_four(rows: jax.Array) -> jax.Array:
  """``bool[]``: the ``uint8[6]`` row masks contain four in a row in any direction.

  Checks the whole board rather than the lines through the last disc: packing rows
  ``r..r+3`` into a 28-bit word turns every direction into one shift-and (shift 1 horizontal,
  7 vertical, 8 up-right, 6 up-left), i.e. ~40 scalar integer ops and no gathers. Measured
  ~1.4x faster under vmap on CPU than the same test on ``[6]`` row vectors (pgx, which gathers
  all 69 lines of a 42-cell board, steps 3-6x slower overall).
  """
  r = rows.astype(jnp.uint32)
  w0 = r[0] | (r[1] << 7) | (r[2] << 14) | (r[3] << 21)  # rows 0-3
  w1 = r[1] | (r[2] << 7) | (r[3] << 14) | (r[4] << 21)  # rows 1-4
  w2 = r[2] | (r[3] << 7) | (r[4] << 14) | (r[5] << 21)  # rows 2-5

  def run4(w, shift):  # bit i set iff bits i, i+s, i+2s, i+3s are all set
    return w & (w >> shift) & (w >> (2 * shift)) & (w >> (3 * shift))

  # Horizontal: w0 covers rows 0-3, w2 rows 2-5; runs starting at columns 4-6 would wrap into
  # the next row, hence the mask.
  horizontal = (run4(w0, 1) | run4(w2, 1)) & _HORIZONTAL_STARTS
  # Vertical and diagonal windows span the 4 rows of a word, so they start in its row 0.
  vertical = (run4(w0, 7) | run4(w1, 7) | run4(w2, 7)) & _WORD_ROW0
  up_right = (run4(w0, 8) | run4(w1, 8) | run4(w2, 8)) & _LEFT4  # (k, c+k): 7k + k
  up_left = (run4(w0, 6) | run4(w1, 6) | run4(w2, 6)) & _RIGHT4  # (k, c-k): 7k - k
  return (horizontal | vertical | up_right | up_left) != 0


def step(state: State, action: jax.Array, outcome: jax.Array | int = 0) -> StepResult:
  """Drops a disc of the player to move in column ``action``.

  Args:
    state: the current state (unbatched).
    action: ``i32[]`` column in ``[0, 7)``.
    outcome: ignored (deterministic game, one outcome).

  Returns:
    ``StepResult`` with ``reward`` ``f32[]`` (``+1`` if the move makes four in a row),
    ``discount`` ``f32[]`` (``-1``, or ``0`` when the move ends the game or is a no-op) and
    ``terminal`` ``bool[]``. The next state is from the opponent's view (mine/theirs swapped).
  """
  del outcome
  action = jnp.asarray(action, jnp.int32)
  in_range = (action >= 0) & (action < NUM_COLUMNS)
  col_bit = jnp.left_shift(jnp.uint8(1), jnp.clip(action, 0, NUM_COLUMNS - 1).astype(jnp.uint8))
  occupied = ((state.mine | state.theirs) & col_bit) != 0  # bool[6], filled bottom-up
  ok = in_range & ~state.terminal & ~occupied[NUM_ROWS - 1]
  # The disc lands on the lowest empty cell: empty, and the cell below is occupied (or floor).
  below = jnp.concatenate([jnp.ones((1,), jnp.bool_), occupied[:-1]])
  landing = ~occupied & below & ok  # one-hot over rows (all False for a no-op)
  placed = state.mine | jnp.where(landing, col_bit, jnp.uint8(0))
  won = ok & _has_four(placed)
  board_full = ((placed[NUM_ROWS - 1] | state.theirs[NUM_ROWS - 1]) == FULL_ROW)
  ended = ok & (won | board_full)
  terminal = state.terminal | ended
  next_state = State(
      # Swap perspectives only when a move was made; a no-op returns the state unchanged.
      mine=jnp.where(ok, state.theirs, state.mine),
      theirs=jnp.where(ok, placed, state.theirs),
      num_moves=state.num_moves + ok.astype(jnp.int8),
      terminal=terminal,
  )
  return StepResult(
      state=next_state,
      reward=won.astype(jnp.float32),
      discount=jnp.where(ok & ~ended, -1.0, 0.0).astype(jnp.float32),
      terminal=terminal,
  )


def _unpack(rows: jax.Array) -> jax.Array:
  """``uint8[..., 6]`` row masks -> ``bool[..., 6, 7]`` cells (row 0 = bottom)."""
  return ((rows[..., :, None] >> jnp.arange(NUM_COLUMNS, dtype=jnp.uint8)) & 1) == 1


def observe(state: State) -> jax.Array:
  """``f32[6, 7, 2]`` network input from the mover's view: planes (mover's discs, opponent's),
  row 0 = bottom."""
  return jnp.stack([_unpack(state.mine), _unpack(state.theirs)], axis=-1).astype(jnp.float32)


def board(state: State) -> jax.Array:
  """``int8[6, 7]`` absolute board, row 0 = bottom: ``+1`` X (first player), ``-1`` O, 0 empty."""
  sign = jnp.where(state.num_moves % 2 == 0, 1, -1).astype(jnp.int8)  # mover is X iff even
  return (sign * (_unpack(state.mine).astype(jnp.int8) - _unpack(state.theirs).astype(jnp.int8)))


GAME = Game(
    name="connect_four",
    num_actions=NUM_ACTIONS,
    init=init,
    legal_actions=legal_actions,
    step=step,
    max_length=NUM_COLUMNS * NUM_ROWS,
    value_range=(-1.0, 1.0),
    value_bounds=(-1.0, 1.0),  # a win, a draw or a loss
)

# ---------------------------------------------------------------------------------------------
# Plain-Python helpers (not jittable).


def _py_has_four(rows: Sequence[int]) -> bool:
  """Python mirror of :func:`_has_four` over six int row masks."""
  r = list(rows)
  if any(x & (x >> 1) & (x >> 2) & (x >> 3) for x in r):
    return True
  for i in range(NUM_ROWS - 3):
    a, b, c, d = r[i:i + 4]
    if (a & b & c & d) or (a & (b >> 1) & (c >> 2) & (d >> 3)) or (
        a & (b << 1) & (c << 2) & (d << 3)):
      return True
  return False


def _play(moves: str) -> tuple[list[int], list[int], int, bool]:
  """Plays a move string in Python; returns (mine, theirs, num_moves, terminal)."""
  mine, theirs = [0] * NUM_ROWS, [0] * NUM_ROWS
  terminal = False
  for i, ch in enumerate(moves):
    if terminal:
      raise ValueError(f"state_from_moves({moves!r}): move {i + 1} ({ch!r}) after the game ended")
    if ch not in "1234567":
      raise ValueError(f"state_from_moves({moves!r}): move {i + 1} is {ch!r}, expected a column "
                       f"digit 1..7")
    bit = 1 << (int(ch) - 1)
    row = next((r for r in range(NUM_ROWS) if not (mine[r] | theirs[r]) & bit), None)
    if row is None:
      raise ValueError(f"state_from_moves({moves!r}): move {i + 1}: column {ch} is full")
    mine[row] |= bit
    terminal = _py_has_four(mine) or (mine[-1] | theirs[-1]) == FULL_ROW
    mine, theirs = theirs, mine
  return mine, theirs, len(moves), terminal


def state_from_moves(moves: str) -> State:
  """The state after ``moves``, a string of column digits ``1..7`` (first player first), the
  format of Pascal Pons' test sets (``jaxsearch/data/connect4/Test_*``, shipped with the package).

  Raises:
    ValueError: on a non-digit, a full column, or a move after the game ended.
  """
  mine, theirs, n, terminal = _play(moves.strip())
  return State(
      mine=jnp.asarray(mine, jnp.uint8),
      theirs=jnp.asarray(theirs, jnp.uint8),
      num_moves=jnp.int8(n),
      terminal=jnp.bool_(terminal),
  )


def states_from_moves(move_strings: Sequence[str]) -> State:
  """Batched :func:`state_from_moves`: leaves ``[P, ...]``, built on the host in one transfer
  (much faster than stacking ``P`` separate device states)."""
  played = [_play(m.strip()) for m in move_strings]
  if not played:
    raise ValueError("states_from_moves: no move strings given")
  return State(
      mine=jnp.asarray(np.array([p[0] for p in played], np.uint8)),
      theirs=jnp.asarray(np.array([p[1] for p in played], np.uint8)),
      num_moves=jnp.asarray(np.array([p[2] for p in played], np.int8)),
      terminal=jnp.asarray(np.array([p[3] for p in played], np.bool_)),
  )


def load_test_positions(path: str | Path) -> tuple[list[str], np.ndarray]:
  """Reads a ``Test_*.moves`` file: one position a line, ``MOVES S1 S2 ... S7``.

  Args:
    path: the file, e.g. ``jaxsearch/data/connect4/Test_L2_R1.moves``.

  Returns:
    ``(moves, scores)``: ``P`` move strings (digits 1..7) and ``int32[P, 7]`` perfect-play scores
    of each column for the player to move (positive = win, larger = sooner; ``-1000`` = full
    column).

  Raises:
    FileNotFoundError: if ``path`` does not exist.
    ValueError: if a line is not ``MOVES`` followed by 7 integers.
  """
  path = Path(path)
  fmt = ("expected a Test_*.moves file: one position a line, 'MOVES S1 ... S7' with MOVES the "
         "columns played (digits 1-7) and S1..S7 the integer score of each column "
         f"({FULL_COLUMN_SCORE} = full column)")
  if not path.is_file():
    raise FileNotFoundError(f"Connect Four test positions not found at {path}: {fmt}")
  moves, scores = [], []
  for lineno, line in enumerate(path.read_text().splitlines(), start=1):
    fields = line.split()
    if not fields:
      continue
    if len(fields) == 2:
      raise ValueError(f"{path}:{lineno}: {line!r} has one score per position (a Test_* file); "
                       f"per-column scores are in the matching .moves file; {fmt}")
    try:
      if len(fields) != 1 + NUM_COLUMNS or not set(fields[0]) <= set("1234567"):
        raise ValueError
      row = [int(x) for x in fields[1:]]
    except ValueError:
      raise ValueError(f"{path}:{lineno}: cannot parse {line!r}; {fmt}") from None
    moves.append(fields[0])
    scores.append(row)
  if not moves:
    raise ValueError(f"{path}: no positions found; {fmt}")
  return moves, np.array(scores, np.int32)


def render(state: State) -> str:
  """The board, top row first, ``X`` (first player) / ``O`` / ``.``, columns numbered 1..7
  underneath, then a status line (who moves, or the result)."""
  if np.shape(state.mine) != (NUM_ROWS,):
    raise ValueError(f"render expects one unbatched state, got mine shape {np.shape(state.mine)}")
  mine = [int(x) for x in np.asarray(state.mine)]
  theirs = [int(x) for x in np.asarray(state.theirs)]
  n = int(np.asarray(state.num_moves))
  me, other = ("X", "O") if n % 2 == 0 else ("O", "X")
  lines = []
  for r in reversed(range(NUM_ROWS)):
    cells = [me if mine[r] >> c & 1 else other if theirs[r] >> c & 1 else "."
             for c in range(NUM_COLUMNS)]
    lines.append("|" + " ".join(cells) + "|")
  lines.append("+" + "-" * (2 * NUM_COLUMNS - 1) + "+")
  lines.append(" " + " ".join(str(c + 1) for c in range(NUM_COLUMNS)))
  if _py_has_four(theirs):  # the player who just moved
    status = f"{other} wins"
  elif (mine[-1] | theirs[-1]) == FULL_ROW:
    status = "draw"
  else:
    status = f"{me} to move"
  return "\n".join(lines) + "\n" + status
