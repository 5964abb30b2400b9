"""Exact integer bounds and optima of guessing games, for certificates of optimality.

:class:`ExactBounds` holds a guessing game's admissible bounds in integers, on the host: what
a certificate is checked with, so that "proven" never rests on float sums.

A certificate (:func:`jaxsearch.guessing.certificates`) must show, at every node of a proof, that
every guess which could still beat the target was searched. Near the leaves of a large proof
the sets of remaining secrets are small, and there a bounded depth-first search settles the
question outright: :meth:`ExactSolver.at_least` decides whether *no* policy finds a set of
secrets in fewer than ``target`` guesses in total, exactly, in integers. Where a tree's policy
cannot be certified because it is not optimal, :meth:`ExactSolver.best_policy` returns the
optimal one (every set's optimum is memoised with the guess that reaches it).

The search is the classic one for Mastermind and Wordle (Knuth 1977; Koyama and Lai 1993;
Ville 2013; and the exhaustive Wordle solvers that proved 7920 / 3.421 for ``salet``):
guesses are tried in order of their admissible one-step bound ``n + Σ_b T(|P_b|)``
(:meth:`ExactBounds.action_totals`), and a guess is abandoned as soon as its parts' totals
so far plus the bounds of the parts not yet solved reach the best total known. Every set's
exact optimum, or the largest total it is known to need, is memoised, and a part's bound is
the best memoised one. With ``ExactBounds.lookahead``, each part whose bound is only the
counting bound first gets its two-step bound (the least one-step bound of its guesses), so
that a guess whose parts cannot fit the budget together is dropped before any part is
searched. With the game's ``symmetry`` (:class:`GuessSymmetry`), only one guess of each
class is searched: guesses that get the same feedback from every secret of the set, and
guesses that a permutation mapping the set onto itself maps onto each other (Mastermind:
:mod:`games.mastermind_set_symmetry`). :mod:`jaxsearch.guessing.exact_game` solves whole
games this way (Mastermind up to 5×5 and 4×8: docs/solving.md).
Work is capped (``max_work`` feedback codes sorted, ``n × G`` for a set of ``n`` secrets
and ``G`` guesses): a question that would take longer is answered "not shown", which a
certificate treats as a failure — never as a proof.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Callable, Optional, Protocol

import numpy as np

from jaxsearch.guessing import feedback_totals
from jaxsearch.guessing.game import (State, counting_bound_levels, counting_bound_starts,
                            feedback_branching)


class GuessSymmetry(Protocol):
  """A game's symmetries, as :class:`ExactBounds` reads them: plain data and methods, so
  that the bounds can be sent to worker processes."""

  def history_redundant(self, symmetries) -> Optional[np.ndarray]:
    """``bool[G]``: the guesses a state's kept permutations (``state.symmetries``, or
    ``None``) make redundant, or ``None``."""

  def set_redundant(self, secrets: np.ndarray) -> Optional[np.ndarray]:
    """``bool[G]``: the guesses the stabiliser of the set ``secrets`` makes redundant
    (each is equivalent to a guess kept), or ``None``."""

  def merged_redundant(self, secrets: np.ndarray) -> Optional[np.ndarray]:
    """``bool[G]``: guesses that get, from every secret of ``secrets``, the feedback of a
    guess kept, or ``None``."""


class OutOfWork(Exception):
  """The bounded search reached its work cap before it could answer."""


class ExactSolver:
  """Exact optimal totals of sets of secrets, by depth-first search with pruning.

  Args:
    bounds: the game's admissible integer bounds (:class:`ExactBounds`:
      ``table u8[S, G]``, ``solved_code``, ``node_total``, ``action_totals``).
    max_secrets: sets larger than this are never searched (``at_least`` answers False).
    max_work: the most feedback codes one question may sort (``n × G`` per set of ``n``
      secrets searched; about 10 ns each).
  """

  def __init__(self, bounds, max_secrets: int = 64, max_work: int = 50_000_000):
    self.bounds = bounds
    self.max_secrets = max_secrets
    self.max_work = max_work
    self._optimum: dict[bytes, int] = {}  # set -> its exact optimal total
    self._needs: dict[bytes, int] = {}  # set -> a total it is known to need (a lower bound)
    self._choice: dict[bytes, int] = {}  # set -> the guess its memoised optimum opens with
    self._work = 0
    self._deadline: Optional[float] = None

  def _bounded(self, secrets, question, fallback, deadline: Optional[float] = None):
    """``question(sorted secrets)`` within the work cap (or, with ``deadline``, until then
    instead), or ``fallback`` where the set is larger than ``max_secrets`` or the search
    runs out: the one way every public question is asked."""
    secrets = np.sort(np.asarray(secrets, np.int64))
    if len(secrets) > self.max_secrets:
      return fallback
    saved = self.max_work
    self._work, self._deadline = 0, deadline
    if deadline is not None:
      self.max_work = 1 << 62
    try:
      return question(secrets)
    except OutOfWork:
      return fallback
    finally:
      self.max_work, self._deadline = saved, None

  def at_least(self, secrets: np.ndarray, target: int) -> bool:
    """Whether every policy needs at least ``target`` guesses in total to find each of
    ``secrets`` (``int[n]``, indices into the table's rows). False also where the set is
    larger than ``max_secrets`` (then only the counting bound decides) or the search would
    exceed ``max_work``."""
    if len(secrets) > self.max_secrets:
      return target <= self.bounds.node_total(len(secrets))
    return self._bounded(secrets, lambda s: self._solve(s, target) >= target, False)

  def guess_at_least(self, secrets: np.ndarray, guess: int, target: int) -> bool:
    """Whether every policy that opens with ``guess`` on ``secrets`` needs at least
    ``target`` guesses in total. False also where the set is larger than ``max_secrets``
    or the search would exceed ``max_work``."""
    return self._bounded(
        secrets, lambda s: self._guess_total(s, int(guess), target) >= target, False)

  def optimum_within(self, secrets: np.ndarray) -> int | None:
    """The exact optimal total of ``secrets`` if the search finds it within ``max_work``
    (and the set is not larger than ``max_secrets``), else ``None``."""
    return self._bounded(secrets, lambda s: self._solve(s, 1 << 62), None)

  def optimum(self, secrets: np.ndarray) -> int:
    """The exact optimal total of ``secrets`` (no work cap, no size cap; for small sets and
    tests)."""
    saved_secrets, self.max_secrets = self.max_secrets, 1 << 62
    try:
      return self._bounded(secrets, lambda s: self._solve(s, 1 << 62), None,
                           deadline=float("inf"))
    finally:
      self.max_secrets = saved_secrets

  def best_policy(self, secrets: np.ndarray, below: int,
                  deadline: Optional[float] = None) -> Optional[tuple[int, Optional[dict]]]:
    """The best policy for ``secrets`` if its total is below ``below``, found exactly:

    * ``(total, policy)`` — an optimal policy and its total (``< below``), ``policy =
      {"guess": g, "children": {code: policy}}`` in guess indices and feedback codes (the
      code that solves is left out);
    * ``(bound, None)`` — proven: every policy needs at least ``bound >= below``;
    * ``None`` — the search could not tell by ``deadline`` (``time.monotonic()``; no work
      cap then), within ``max_work``, or the set is larger than ``max_secrets``.
    """
    def question(sorted_secrets):
      total = self._solve(sorted_secrets, below)
      return (total, None) if total >= below else (total, self._policy(sorted_secrets))
    return self._bounded(secrets, question, None, deadline)

  def _policy(self, secrets: np.ndarray) -> dict:
    """The memoised optimal policy of a set whose optimum :meth:`_solve` found."""
    if len(secrets) <= 2:  # guess one; if wrong, the other
      names = getattr(self.bounds, "guess_of_secret", None)
      # Without names, a secret's index is its guess's (Mastermind: every code is both).
      guess = int(secrets[0] if names is None else names[secrets[0]])
    else:
      guess = self._choice[secrets.tobytes()]
    return {"guess": guess, "children": {
        code: self._policy(part) for code, part in self._parts(secrets, guess)}}

  def _parts(self, secrets: np.ndarray, guess: int) -> list:
    """``(code, part)`` for each feedback of ``guess`` that does not solve, each part in
    ascending order."""
    feedback = self.bounds.table[secrets, guess]
    order = np.argsort(feedback, kind="stable")
    ordered, moved = feedback[order], secrets[order]
    ends = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    starts = [0] + ends
    solved = self.bounds.solved_code
    return [(code, moved[a:b]) for code, a, b in
            zip(ordered[starts].tolist(), starts, ends + [len(secrets)]) if code != solved]

  def _solve(self, secrets: np.ndarray, limit: int) -> int:
    """The optimum of ``secrets`` where it is below ``limit``; otherwise some total
    ``>= limit`` that every policy needs (a proof that the optimum is not below it)."""
    n = len(secrets)
    if n <= 2:
      return 2 * n - 1  # guess one; if wrong, the other
    key = secrets.tobytes()
    if key in self._optimum:
      return self._optimum[key]
    needs = max(self._needs.get(key, 0), self.bounds.node_total(n))
    if needs >= limit:
      return needs
    separated = self._separated(secrets) if n <= self._separable_up_to else -1
    if separated is not None:
      if separated >= 0:  # the least possible: one secret found first, every other second
        self._optimum[key] = 2 * n - 1
        self._choice[key] = separated
        return 2 * n - 1
      # No secret, guessed, tells the others apart: some secret needs a third guess (or
      # a non-secret is guessed first), so at least 2n. (Past ``_separable_up_to`` no
      # guess has enough feedbacks to tell ``n - 1`` secrets apart.)
      needs = max(needs, 2 * n)
      if needs >= limit:
        self._needs[key] = max(self._needs.get(key, 0), needs)
        return needs
    self._work += n * self.bounds.table.shape[1]
    if self._work > self.max_work or (
        self._deadline is not None and time.monotonic() > self._deadline):
      raise OutOfWork
    # Guesses equivalent to one kept (the same feedbacks, or a symmetry of the set) are
    # left out: their totals are the kept one's.
    totals, considered = self._totals(secrets, symmetric=n >= SYMMETRY_FROM)
    order = np.flatnonzero(considered)
    order = order[np.argsort(totals[order], kind="stable")]
    best, best_guess = limit, -1  # the best total found below ``limit``, else ``limit``
    for guess in order.tolist():
      if totals[guess] >= best:
        break  # sorted: no later guess can do better either
      total = self._guess_total(secrets, guess, best)
      if total < best:
        best, best_guess = total, guess
    if best < limit:
      self._optimum[key] = best
      self._choice[key] = best_guess
      return best
    self._needs[key] = max(self._needs.get(key, 0), limit)
    return limit

  def _totals(self, secrets: np.ndarray, symmetric: bool):
    """The guesses' one-step totals and which to search: the bounds' ``search_totals``
    where they have it, else ``action_totals``."""
    search_totals = getattr(self.bounds, "search_totals", None)
    if search_totals is None:
      return self.bounds.action_totals(secrets)
    return search_totals(secrets, symmetric)

  @functools.cached_property
  def _separable_up_to(self) -> int:
    """The largest set one guess can tell apart: ``F + 1`` secrets (one solved, every other
    alone in one of the ``F`` other feedbacks)."""
    caps = self.bounds.caps
    return int(caps[1]) + 1 if len(caps) > 1 else 1 << 62

  def _separated(self, secrets: np.ndarray):
    """The guess of one of ``secrets`` that gives every other one a different feedback, or
    -1 where none does (``None`` where the bounds do not say which guess names which
    secret). ``O(n²)``."""
    names = getattr(self.bounds, "guess_of_secret", None)
    if names is None:
      return None
    columns = np.sort(self.bounds.table[secrets][:, names[secrets]], axis=0)  # [n, n]
    apart = np.flatnonzero(np.all(columns[1:] != columns[:-1], axis=0))
    return int(names[secrets[apart[0]]]) if len(apart) else -1

  def _floor(self, part: np.ndarray) -> int:
    """A total every policy needs on ``part``: its memoised optimum or bound, at least the
    counting bound."""
    n = len(part)
    if n <= 2:
      return 2 * n - 1
    key = part.tobytes()
    known = self._optimum.get(key)
    if known is not None:
      return known
    return max(self._needs.get(key, 0), self.bounds.node_total(n))

  def _two_step(self, part: np.ndarray) -> int:
    """A total every policy needs on ``part`` (3 or more secrets, nothing memoised): the
    least of its guesses' one-step bounds, memoised as what it needs."""
    self._work += len(part) * self.bounds.table.shape[1]
    if self._work > self.max_work:
      raise OutOfWork
    totals, considered = self._totals(part, symmetric=False)
    needs = int(totals[considered].min()) if considered.any() else self.bounds.node_total(
        len(part))
    key = part.tobytes()
    self._needs[key] = max(self._needs.get(key, 0), needs)
    return self._needs[key]

  def _guess_total(self, secrets: np.ndarray, guess: int, best: int) -> int:
    """The total of the best policy opening with ``guess`` where it is below ``best``;
    otherwise some total ``>= best`` that every such policy needs."""
    parts = [part for _, part in self._parts(secrets, guess)]
    parts.sort(key=len, reverse=True)  # the largest part decides most often: first
    floors = [self._floor(part) for part in parts]
    total = len(secrets) + sum(floors)
    lookahead = getattr(self.bounds, "lookahead", 0)
    if lookahead and total < best:
      for index, part in enumerate(parts):
        if len(part) >= lookahead and floors[index] == self.bounds.node_total(len(part)):
          raised = self._two_step(part)
          total += raised - floors[index]
          floors[index] = raised
          if total >= best:
            return total
    for index, part in enumerate(parts):
      if total >= best:
        return total
      # This part may use what the others' floors leave below ``best``.
      budget = best - (total - floors[index])
      total += self._solve(part, budget) - floors[index]
    return total


# The exact search behind certificates (:class:`ExactSolver`) settles nodes of at most this
# many secrets, sorting at most this many feedback codes per question (a few seconds).
EXACT_MAX_SECRETS = 512
EXACT_MAX_WORK = 500_000_000
PAIRWISE_UP_TO = 40  # secrets per node up to which it compares feedback rows pairwise instead
HISTOGRAM_MAX_CODES = 64  # games with at most this many feedbacks count them by histogram
SYMMETRY_FROM = 24  # the exact search looks for a set's symmetries from this many secrets


@dataclasses.dataclass(frozen=True, eq=False)
class ExactBounds:
  """The guessing game's admissible bounds in exact integers, on the host (numpy): what a
  certificate of optimality is checked with (:func:`jaxsearch.guessing.certificates`), so that
  "proven" never rests on float sums.

  Totals are numbers of guesses summed over a node's ``n`` remaining secrets:

  * :meth:`node_total` — ``T(n)``, the counting bound (see :func:`jaxsearch.guessing.game.guessing_game`);
  * :meth:`action_totals` — for every guess ``g``: ``n + Σ_b T(|P_b|)`` over the feedback
    parts ``P_b`` it leaves unsolved (every secret pays for ``g``; each part then needs at
    least its counting bound). No policy starting with ``g`` needs fewer in total.

  Attributes:
    table: ``u8[S, G]`` feedback table, secret-major.
    solved_code: the all-correct code.
    caps, starts: the counting bound's levels (:func:`counting_bound_levels`,
      :func:`counting_bound_starts`).
    redundant: ``state -> bool[G]`` guesses equivalent to another one at that state (a
      symmetry), or ``None``: their totals equal their representatives', so a minimum over
      the others is the minimum over all.
    search_secrets: the exact search (:meth:`guess_at_least`, :meth:`optimum_within`)
      settles sets of at most this many secrets; 0 turns it off.
    guess_of_secret: ``int[S]`` the guess that names each secret, or ``None``: lets the
      exact search settle a set outright when one of its own secrets, guessed, tells all
      the others apart (``2n - 1`` guesses, the least possible).
    symmetry: the game's symmetries as data (a :class:`GuessSymmetry`, e.g.
      :class:`games.mastermind_set_symmetry.SetSymmetry`), or ``None``: the guesses a
      state's kept permutations make redundant (as ``redundant``, where that is ``None``)
      and, in the exact search, those the stabiliser of each set makes redundant. Unlike a
      ``redundant`` function it is sent to the certificates' worker processes.
    lookahead: in the exact search, before a guess's parts are searched, each part of at
      least this many secrets whose bound is only the counting bound gets its two-step
      bound (the least of its guesses' one-step bounds, memoised), so that a guess whose
      parts cannot fit the budget together is dropped before any is searched; 0: off
      (Mastermind: 3, 2-5x less work on whole games).
  """

  table: np.ndarray
  solved_code: int
  caps: np.ndarray
  starts: np.ndarray
  redundant: Optional[Callable[[State], np.ndarray]] = None
  search_secrets: int = EXACT_MAX_SECRETS
  guess_of_secret: Optional[np.ndarray] = None
  symmetry: Optional["GuessSymmetry"] = None
  lookahead: int = 0

  def without_search(self) -> "ExactBounds":
    """The same bounds with the exact search of small sets off: certificates then rest on
    the search tree alone (what tests of the tree's proofs need)."""
    return dataclasses.replace(self, search_secrets=0)

  @classmethod
  def build(cls, table, num_outcomes: int, solved_code: int,
            branching: Optional[int] = None, redundant=None,
            guess_of_secret=None, symmetry=None, lookahead: int = 0) -> "ExactBounds":
    table = np.asarray(table, np.uint8)
    if branching is None:
      branching = feedback_branching(table, num_outcomes, solved_code)
    caps = counting_bound_levels(table.shape[0], branching)
    return cls(table=table, solved_code=int(solved_code), caps=caps,
               starts=counting_bound_starts(caps), redundant=redundant,
               guess_of_secret=None if guess_of_secret is None else np.asarray(guess_of_secret),
               symmetry=symmetry, lookahead=int(lookahead))

  def set_redundant(self, secrets: np.ndarray) -> Optional[np.ndarray]:
    """``bool[G]``: guesses equivalent, at the set ``secrets`` (ascending), to a guess
    kept (by a permutation of the game that maps the set onto itself), or ``None``."""
    return None if self.symmetry is None else self.symmetry.set_redundant(secrets)

  def counting_total(self, sizes) -> np.ndarray:
    """``int64[...]``: ``T(h)`` of every entry of ``sizes`` (integers)."""
    sizes = np.asarray(sizes, np.int64)
    total = np.zeros(sizes.shape, np.int64)
    for level, (cap, start) in enumerate(zip(self.caps.tolist(), self.starts.tolist())):
      total += (level + 1) * np.clip(sizes - start, 0, cap)
    return total

  @functools.cached_property
  def _node_totals(self) -> np.ndarray:
    """``int64[S + 1]``: ``T(n)`` for every ``n`` (looked up: certificates ask millions)."""
    return self.counting_total(np.arange(self.table.shape[0] + 1))

  def node_total(self, n: int) -> int:
    """``T(n)``: no policy finds ``n`` secrets in fewer guesses in total."""
    return int(self._node_totals[n])

  @functools.cached_property
  def _solver(self):
    return ExactSolver(self, max_secrets=self.search_secrets, max_work=EXACT_MAX_WORK)

  def guess_at_least(self, secrets: np.ndarray, guess: int, target: int) -> bool:
    """Whether, exactly, every policy opening with ``guess`` on ``secrets`` needs at least
    ``target`` guesses in total (a bounded depth-first search on small sets,
    :class:`ExactSolver`; False where it cannot tell)."""
    return self._solver.guess_at_least(secrets, guess, target)

  def optimum_within(self, secrets: np.ndarray) -> Optional[int]:
    """The exact optimal total of a small set of secrets, or ``None`` where the bounded
    search cannot tell (:class:`ExactSolver`)."""
    return self._solver.optimum_within(secrets)

  def best_policy(self, secrets: np.ndarray, below: int, deadline: Optional[float] = None):
    """An exactly optimal policy for a set of secrets where one beats ``below``, or the
    proof that none does, or ``None`` where the search cannot tell by ``deadline``
    (:meth:`ExactSolver.best_policy`)."""
    return self._solver.best_policy(secrets, below, deadline)

  def action_totals(self, secrets: np.ndarray, state=None) -> tuple[np.ndarray, np.ndarray]:
    """``(totals int64[G], considered bool[G])`` at the node whose remaining secrets are
    ``secrets`` (``int[n]``, ``n >= 1``).

    ``considered`` is False for guesses that can never be optimal there: non-candidates
    whose feedback is the same for every remaining secret (they cost a guess and teach
    nothing, so ``opt = n + opt`` would follow) and, with ``state``, guesses the game's
    symmetry makes redundant. Cost (:mod:`jaxsearch.guessing.feedback_totals`): one sort of
    each guess's ``n`` feedbacks; for small sets ``n²/2`` comparisons of feedback rows
    (``pairwise_totals``); where the game has few feedbacks (``O <=``
    :data:`HISTOGRAM_MAX_CODES`: Mastermind), one histogram of every guess's feedbacks
    instead of the sort (``histogram_totals``, 1.1-2.5x faster there; slower for Wordle's
    243 feedbacks).
    """
    secrets = np.asarray(secrets, np.int64)
    totals, candidate, one_part = self._column_totals(secrets)
    considered = ~(one_part & ~candidate)  # one part, and not a candidate
    if state is not None:
      redundant = self._state_redundant(state)
      if redundant is not None:
        considered &= ~np.asarray(redundant, bool)
    return totals, considered

  def _column_totals(self, secrets: np.ndarray, guesses: Optional[np.ndarray] = None):
    """``(totals, candidate, one_part)`` of every guess, or of ``guesses`` (``int[k]``)
    only, by the cheapest of the three ways (:meth:`action_totals`)."""
    rows = self.table[secrets] if guesses is None else self.table[np.ix_(secrets, guesses)]
    if len(secrets) <= min(self._linear_up_to, PAIRWISE_UP_TO):
      return feedback_totals.pairwise_totals(rows, self.solved_code)
    if self._num_codes <= HISTOGRAM_MAX_CODES:
      return feedback_totals.histogram_totals(rows, self._node_totals, self.solved_code,
                                              self._num_codes)
    return feedback_totals.sorted_totals(rows, self._node_totals, self.solved_code)

  def search_totals(self, secrets: np.ndarray, symmetric: bool = True):
    """:meth:`action_totals` for the exact search, over the guesses it needs only: with the
    game's ``symmetry``, the guesses that give the same feedback as a kept one on every
    secret (``merged_redundant``) and, if ``symmetric``, those the set's stabiliser makes
    redundant (:meth:`set_redundant`) are left out (not ``considered``; their totals are
    not computed: ``2**62``). Without symmetry, :meth:`action_totals`."""
    if self.symmetry is None:
      return self.action_totals(secrets)
    dropped = self.symmetry.merged_redundant(secrets)
    redundant = self.symmetry.set_redundant(secrets) if symmetric else None
    if redundant is not None:
      dropped = redundant if dropped is None else dropped | redundant
    if dropped is None:
      return self.action_totals(secrets)
    kept = np.flatnonzero(~dropped)
    totals = np.full(self.table.shape[1], 1 << 62, np.int64)
    considered = np.zeros(self.table.shape[1], bool)
    totals[kept], candidate, one_part = self._column_totals(secrets, kept)
    considered[kept] = ~(one_part & ~candidate)
    return totals, considered

  def _state_redundant(self, state) -> Optional[np.ndarray]:
    """The guesses ``state``'s kept permutations make redundant (``redundant``, else the
    ``symmetry``'s reading of ``state.symmetries``), or ``None``."""
    if self.redundant is not None:
      return self.redundant(state)
    if self.symmetry is not None:
      return self.symmetry.history_redundant(getattr(state, "symmetries", None))
    return None

  @functools.cached_property
  def _linear_up_to(self) -> int:
    """The largest ``m`` with ``T(j) = 2j - 1`` for every ``j <= m`` (one secret found
    first, every other second: the counting bound while a guess can split that many)."""
    sizes = np.arange(1, len(self._node_totals))
    off = np.flatnonzero(self._node_totals[1:] != 2 * sizes - 1)
    return int(off[0]) if len(off) else int(sizes[-1]) if len(sizes) else 0

  @functools.cached_property
  def _num_codes(self) -> int:
    """``O``: one more than the largest feedback code in the table."""
    return int(self.table.max()) + 1
