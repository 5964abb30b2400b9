"""Exact optimum of small Wordle sub-problems: depth-first branch and bound over every guess.

``Exact(table, secret_of_guess).solve(secrets)`` is the least **total** number of guesses over
the secrets of ``secrets`` (each equally likely, the final correct guess counted) that a
strategy needs to find every one of them — the figure the AVTS article reports per answer (its mean
is the total divided by the number of secrets). It is a plain minimum over all guesses at
every state, nothing left out, so it is the reference a search's achievable bound must reach.

Per state it groups guesses that split the secrets identically (one representative each), and
tries them in order of a lower bound, stopping when the bound can no longer beat the best:
a part of ``k`` secrets needs at least ``2k - 1`` guesses (one guessed right at once, every
other with at least two). The split of the solved pattern is an exact leaf (cost 0 beyond the
guess). Sub-results are memoised by the set of secrets.

Used by ``scripts/bench_rules_wordle.py``. Exponential in the worst case; with the 3158
answers as guesses, 36 of the 37 classes of ``tarse`` with 15 to 60 answers took under 10 s
each on a shared CPU core; ``BGYBY`` (33 answers, optimum 97: most of its partitions leave
parts that need a third guess) took 160 s.
"""

from __future__ import annotations

import numpy as np


class Exact:
  """Memoised exact solver over one feedback table.

  Args:
    table: ``u8[G, S]`` pattern of guess (row) for secret (column), e.g.
      ``np.asarray(games.wordle.Wordle.feedback)``.
    secret_of_guess: ``int[G]`` the secret index of each guess, ``-1`` if it is none.
    solved_code: the all-green pattern (``games.wordle.SOLVED``).
    candidates: optional ``secrets tuple -> int[k]``, the guesses allowed at a state (e.g. a
      search's top-``K`` cutoff by q̂1); default every guess. Sets of one or two secrets are
      taken as solved by guessing a secret (any cutoff that ranks the secrets first agrees).
  """

  def __init__(self, table, secret_of_guess, solved_code: int, candidates=None):
    self.table = np.asarray(table)
    self.secret_of_guess = np.asarray(secret_of_guess)
    self.solved_code = int(solved_code)
    self.candidates = candidates
    self._memo: dict[tuple[int, ...], int] = {}
    self.states_solved = 0

  def solve(self, secrets) -> int:
    """Least total guesses to find every secret of ``secrets`` (an iterable of secret
    indices, each one equally likely); ``None`` if the allowed guesses cannot finish."""
    return self._solve(tuple(sorted(int(s) for s in secrets)))

  def total_after(self, secrets, guess: int) -> int:
    """Least total guesses for ``secrets`` when the first guess is ``guess`` (``-1`` if the
    guess learns nothing and is not a secret: no strategy starts with it; ``None`` if the
    allowed guesses cannot finish)."""
    secrets = tuple(sorted(int(s) for s in secrets))
    codes = self.table[guess, list(secrets)]
    if np.all(codes == codes[0]) and codes[0] != self.solved_code and len(secrets) > 1:
      return -1
    total = len(secrets)
    for code in np.unique(codes):
      if code != self.solved_code:
        part = self._solve(tuple(s for s, c in zip(secrets, codes) if c == code))
        if part is None:
          return None
        total += part
    return total

  def _solve(self, secrets: tuple[int, ...]) -> int:
    n = len(secrets)
    if n <= 2:
      return (1, 3)[n - 1]  # one: guess it; two: guess one, then the other
    if secrets in self._memo:
      return self._memo[secrets]
    self.states_solved += 1
    sub = self.table[:, list(secrets)]  # [G, n]
    if self.candidates is not None:
      sub = sub[np.asarray(self.candidates(secrets), np.int64)]
    # Guesses that split the secrets alike are interchangeable here: one representative each.
    _, first = np.unique(sub, axis=0, return_index=True)
    sub = sub[first]
    sorted_codes = np.sort(sub, axis=1)
    parts = 1 + np.sum(sorted_codes[:, 1:] != sorted_codes[:, :-1], axis=1)
    hits = np.any(sub == self.solved_code, axis=1)
    useful = (parts > 1) | hits
    # n (this guess) + sum over unsolved parts of (2k - 1) = n + 2 (n - hit) - (parts - hit).
    lower = n + 2 * (n - hits) - (parts - hits)
    best = None  # stays None when no allowed guess is useful (a cutoff left none)
    for row in np.argsort(np.where(useful, lower, np.iinfo(np.int64).max), kind="stable"):
      if not useful[row] or (best is not None and lower[row] >= best):
        break
      groups = {}
      for s, c in zip(secrets, sub[row]):
        if c != self.solved_code:
          groups.setdefault(int(c), []).append(s)
      # Replace each part's lower bound by its exact cost, largest parts first; give up on
      # this guess once it cannot beat the best.
      total = int(lower[row])
      for part in sorted(groups.values(), key=len, reverse=True):
        exact = self._solve(tuple(part))
        if exact is None:
          total = None
          break
        total += exact - (2 * len(part) - 1)
        if best is not None and total >= best:
          total = None
          break
      if total is not None and (best is None or total < best):
        best = total
    self._memo[secrets] = best
    return best
