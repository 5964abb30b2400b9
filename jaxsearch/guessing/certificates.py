"""Exact certificates of optimality for guessing games, in integers.

"Proven optimal" for Mastermind and Wordle is checked after the search by :func:`certify`,
with the game's exact admissible bounds (``puzzle.exact``, e.g.
:class:`games.guessing_exact.ExactBounds`): every comparison that decides is between integers.
(:mod:`jaxsearch.solve.exact` certifies any game's bounds in exact rationals.)

What a certificate asks of the game is declared here: :class:`IntegerBounds` (required) and
the optional :class:`ExactSearch` of small sets, both checked once, when a
:class:`CertificateGame` is made of the puzzle; that small object (not the puzzle) is what
the certificates read, and what their worker processes are sent.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pickle
import time
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

import jax
import numpy as np

from jaxsearch.guessing.workers import worker_pool
from jaxsearch.memory import MemoryEstimate, WorkerPlan, plan_workers, worker_bytes
from jaxsearch.solve.tree_reader import TreeReader


# Less time than this left to the certificates: no worker process is started (one takes
# 1-5 s to start, importing JAX; after the deadline each certificate reads its tree alone).
WORKER_START_SECONDS = 2.0

# Children of at most this many secrets are given their exact optimum as their target
# (``exact.optimum_within``); larger ones what the tree's float bound suggests.
CLAIM_MAX_SECRETS = 24


@runtime_checkable
class IntegerBounds(Protocol):
  """A guessing game's admissible bounds in exact integers (``Puzzle.exact``): what every
  certificate is checked with. Totals are numbers of guesses summed over a node's secrets.
  :class:`jaxsearch.guessing.exact.ExactBounds` implements it (and
  :class:`ExactSearch`)."""

  def node_total(self, n: int) -> int:
    """No policy finds ``n`` secrets in fewer guesses in total."""

  def action_totals(self, secrets: np.ndarray, state: Any = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(totals int64[G], considered bool[G])`` at the node whose remaining secrets are
    ``secrets``: no policy opening with guess ``g`` needs fewer than ``totals[g]``; guesses
    not ``considered`` can never be optimal there."""


@runtime_checkable
class ExactSearch(Protocol):
  """An optional capability of ``Puzzle.exact``: an exact search of small sets of secrets,
  which settles what the tree cannot. Without it a certificate rests on the tree alone (the
  documented fallback: what the tree shows still counts, nothing more is asked)."""

  search_secrets: int  # the sets it settles hold at most this many secrets (0: none)

  def optimum_within(self, secrets: np.ndarray) -> Optional[int]:
    """The exact optimal total of a small set, or ``None`` where it cannot tell."""

  def guess_at_least(self, secrets: np.ndarray, guess: int, target: int) -> bool:
    """Whether every policy opening with ``guess`` needs at least ``target`` (False where it
    cannot tell)."""

  def best_policy(self, secrets: np.ndarray, below: int, deadline: Optional[float] = None):
    """``(total, policy)``: an optimal policy where one beats ``below`` (``policy`` ``None``:
    none does, proven), or ``None`` where it cannot tell by ``deadline``."""


@dataclasses.dataclass(frozen=True)
class CertificateGame:
  """What a certificate needs of a guessing game, its capabilities checked once
  (:meth:`of`): small, so that it is what a worker process is sent.

  Attributes:
    exact: the game's :class:`IntegerBounds`.
    num_secrets: the number of secrets (the states' bitsets hold that many).
    solved_outcome: the all-correct feedback (no child below it).
    searches: ``exact`` is also an :class:`ExactSearch`.
  """

  exact: IntegerBounds
  num_secrets: int
  solved_outcome: int
  searches: bool

  @classmethod
  def of(cls, puzzle) -> Optional["CertificateGame"]:
    """The certificate's view of ``puzzle`` (a :class:`jaxsearch.guessing.Puzzle`), or ``None``
    where it has no exact bounds (then nothing is ever claimed proven).

    Raises:
      TypeError: ``puzzle.exact`` is not an :class:`IntegerBounds`.
    """
    exact = puzzle.exact
    if exact is None:
      return None
    if not isinstance(exact, IntegerBounds):
      raise TypeError(f"puzzle.exact must provide node_total(n) and action_totals(secrets, "
                      f"state) (jaxsearch.guessing.IntegerBounds), got {type(exact).__name__}")
    return cls(exact=exact, num_secrets=len(puzzle.secrets),
               solved_outcome=int(puzzle.solved_outcome),
               searches=isinstance(exact, ExactSearch))

  @property
  def search_secrets(self) -> Optional[int]:
    """The exact search's largest set, or ``None`` without an exact search."""
    return int(self.exact.search_secrets) if self.searches else None

  @property
  def portable(self) -> bool:
    """Whether the bounds can be sent to worker processes: a dataclass of data (arrays,
    numbers), no function among its fields (a closure does not pickle)."""
    exact = self.exact
    return dataclasses.is_dataclass(exact) and not any(
        callable(getattr(exact, field.name)) for field in dataclasses.fields(exact))

  def for_workers(self) -> "CertificateGame":
    """A copy to send to worker processes: the bounds without what they cached (the exact
    search's memo, built again where needed)."""
    return dataclasses.replace(self, exact=dataclasses.replace(self.exact))

  def optimum_within(self, secrets: np.ndarray) -> Optional[int]:
    """The exact search's optimum of a small set (``None``: too large, or no search)."""
    if not self.searches or len(secrets) > CLAIM_MAX_SECRETS:
      return None
    return self.exact.optimum_within(secrets)

  def guess_at_least(self, secrets: np.ndarray, action: int, target: int,
                     deadline: Optional[float]) -> bool:
    """Whether the exact search shows that opening with ``action`` needs at least ``target``
    (False without a search, or after ``deadline``)."""
    if not self.searches or (deadline is not None and time.monotonic() > deadline):
      return False
    return bool(self.exact.guess_at_least(secrets, int(action), target))

  def best_policy(self, secrets: np.ndarray, target: int, deadline: Optional[float]):
    """The exact search's answer for a set (:meth:`ExactSearch.best_policy`), or ``None``
    without a search or after ``deadline``."""
    if not self.searches or (deadline is not None and time.monotonic() > deadline):
      return None
    return self.exact.best_policy(secrets, int(target), deadline)


class _Certifier:
  """Checks, in exact integers, that no policy from a node of one tree needs fewer than a
  target number of guesses in total (over the node's secrets).

  ``holds(node, target)`` is a proof by the game's exact admissible bounds
  (:class:`IntegerBounds`, e.g. :class:`games.guessing_exact.ExactBounds`): the target is met
  outright when the node's counting bound reaches it; otherwise every guess that could still
  do better — its exact action bound below the target — must have been expanded in the tree,
  and for each such guess the targets of its feedbacks' children, summed with the ``n``
  guesses it costs, must reach the target and hold recursively. The search's float bounds
  only choose the children's targets (rounded to integers, lowered where there is slack);
  every comparison that decides is between integers, so a float rounding error can make a
  true claim fail to certify, never a false one pass.

  Where the game offers an exact search of small sets (:class:`ExactSearch`), a guess the
  tree never expanded, or whose subtree falls short, is settled by that search instead, and
  small children get their exact optimum as their target: the tree proves the top of a
  large problem, the exact search its many small leaves.
  """

  def __init__(self, game: CertificateGame, tree, deadline: Optional[float] = None):
    self.game = game
    self.exact = game.exact
    self.deadline = deadline  # ``time.monotonic()`` after which the exact search stops
    self.reader = TreeReader(tree)
    self._proven: dict[int, int] = {}  # node -> largest target shown to hold
    self._failed: dict[int, int] = {}  # node -> smallest target that did not certify

  def secrets_at(self, node: int) -> np.ndarray:
    return self.reader.secrets_at(node, self.game.num_secrets)

  def _finished(self, node: int, secrets: np.ndarray) -> bool:
    """No guess is left to make at ``node``: no secret, solved, or terminal."""
    return (len(secrets) == 0 or bool(self.reader.states.solved[node])
            or bool(self.reader.terminal[node]))

  def claim(self, node: int) -> tuple[int, bool]:
    """``(total, settled)``: the integer total to certify for ``node`` — its exact optimum
    where the game's exact search finds it (small sets; then ``settled``), else what the
    tree's float optimistic bound suggests (at least the counting bound) — and whether
    asking more of it is hopeless."""
    secrets = self.secrets_at(node)
    if self._finished(node, secrets):
      return 0, True
    optimum = self.game.optimum_within(secrets)
    if optimum is not None:
      return optimum, True
    total = -np.float64(self.reader.upper[node]) * len(secrets)
    floor = self.floor(node)
    if not (np.isfinite(total) and abs(total) < 1e15):
      return floor, False
    return max(floor, int(round(total))), False

  def floor(self, node: int) -> int:
    """The counting bound of ``node``'s secrets (0 where none remain)."""
    n = len(self.secrets_at(node))
    return self.exact.node_total(n) if n else 0

  def holds(self, node: int, target: int) -> bool:
    if target <= self._proven.get(node, 0):
      return True
    if target >= self._failed.get(node, 1 << 62):
      return False
    proven = self._holds(node, target)
    if proven:
      self._proven[node] = max(self._proven.get(node, 0), target)
    else:
      self._failed[node] = min(self._failed.get(node, 1 << 62), target)
    return proven

  def _holds(self, node: int, target: int) -> bool:
    reader = self.reader
    secrets = self.secrets_at(node)
    n = len(secrets)
    if self._finished(node, secrets):
      return target <= 0
    if target <= self.exact.node_total(n):
      return True
    optimum = self.game.optimum_within(secrets)
    if optimum is not None:  # the exact search has settled this set outright
      return target <= optimum
    totals, considered = self.exact.action_totals(secrets, reader.state(node))
    expanded = {int(reader.slot_action[node, slot]): int(reader.slot_chance[node, slot])
                for slot in reader.expanded_slots(node)}
    for action in np.flatnonzero(considered & (totals < target)):
      chance = expanded.get(int(action))
      if chance is not None:
        children = [child for _, child in reader.children(chance, self.game.solved_outcome)]
        if self.children_hold(children, target - n):
          continue
      # Never searched, or its subtree falls short: the exact search may still settle it.
      if not self.game.guess_at_least(secrets, action, target, self.deadline):
        return False
    return True

  def children_hold(self, children: Sequence[int], target: int) -> bool:
    """Whether the totals of ``children`` provably sum to at least ``target``: each child is
    given a target (:func:`_share_out`), then each is certified."""
    claims = {child: self.claim(child) for child in children}
    floors = {child: self.floor(child) for child in children}
    targets = _share_out(claims, floors, target)
    return targets is not None and all(self.holds(child, targets[child]) for child in children)


def _share_out(claims: dict, floors: dict, target: int):
  """Targets for nodes whose totals must sum to at least ``target``, or ``None`` where that
  is hopeless: each starts from its claim (``(total, settled)``, :meth:`_Certifier.claim`).
  Slack above ``target`` is taken off the largest ones first, down to their counting bounds
  ``floors``; a shortfall is asked of the largest node not settled (its float bound may be
  loose, and the exact search may show more)."""
  targets = {key: total for key, (total, _) in claims.items()}
  slack = sum(targets.values()) - target
  if slack < 0:
    unsettled = [key for key, (_, settled) in claims.items() if not settled]
    if not unsettled:
      return None
    targets[max(unsettled, key=lambda key: targets[key])] -= slack
    return targets
  for key in sorted(targets, key=lambda key: -targets[key]):
    cut = min(slack, max(targets[key] - floors[key], 0))
    targets[key] -= cut
    slack -= cut
  return targets


def certify(puzzle, trees, rows: Sequence[int], target: int,
            cost: int = 0, deadline: Optional[float] = None) -> bool:
  """Whether, in exact integers, no policy does better than ``target`` total guesses, where a
  policy's total is ``cost`` plus the totals of the sub-problems at the roots ``rows`` of
  ``trees`` (one batch of one tree per root, as :class:`jaxsearch.solve.chunked.SearchResult`
  holds them; one root: ``rows = [0]``, ``cost = 0``; a fixed first guess: every feedback's
  root, ``cost`` = the number of secrets, who all pay for it). See :class:`_Certifier`.
  Needs ``puzzle.exact``; ``False`` without it. After ``deadline`` (``time.monotonic()``)
  the game's exact search is not asked any more: what the tree alone shows still counts."""
  game = CertificateGame.of(puzzle)
  return game is not None and _certify(game, [trees[row] for row in rows], target, cost,
                                       deadline)


def _certify(game: CertificateGame, trees: list, target: int, cost: int,
             deadline: Optional[float]) -> bool:
  """:func:`certify` of the roots of ``trees`` (each a batch of one tree)."""
  certifiers = [_Certifier(game, tree, deadline) for tree in trees]
  claims = {i: certifier.claim(0) for i, certifier in enumerate(certifiers)}
  floors = {i: certifier.floor(0) for i, certifier in enumerate(certifiers)}
  targets = _share_out(claims, floors, target - cost)
  return targets is not None and all(certifier.holds(0, targets[i])
                                     for i, certifier in enumerate(certifiers))


@dataclasses.dataclass(frozen=True)
class Settled:
  """What the certificate made of one sub-problem's policy (:func:`settle`).

  Attributes:
    proven: no policy for the sub-problem needs fewer than ``total`` guesses.
    total: the best total known: the claimed one, or the exact search's better one.
    policy: the exact search's policy where it beat the claim (``{"guess": g, "children":
      {code: policy}}`` in guess indices and feedback codes, the solving code left out);
      ``None``: the claimed policy stands.
  """

  proven: bool
  total: int
  policy: Optional[dict] = None


def settle(puzzle, trees, row: int, target: int, deadline: Optional[float] = None) -> Settled:
  """Certifies that root ``row``'s policy of ``target`` guesses is optimal (:func:`certify`)
  and, where that fails, asks the game's exact search (:meth:`ExactSearch.best_policy`,
  small sets) for the optimum outright: a better policy, with its total, or the proof that
  none exists. A tree policy that is not optimal is so corrected, not only left unproven."""
  return _settle_tree(CertificateGame.of(puzzle), trees[row], target, deadline)


def _settle_tree(game: Optional[CertificateGame], tree, target: int,
                 deadline: Optional[float]) -> Settled:
  """:func:`settle` of one tree (a batch of one); not proven without exact bounds."""
  if game is not None and _certify(game, [tree], target, 0, deadline):
    return Settled(True, int(target))
  found = None if game is None else game.best_policy(_root_secrets(game, tree), target,
                                                     deadline)
  if found is None:
    return Settled(False, int(target))
  total, policy = found
  return Settled(True, int(target) if policy is None else int(total), policy)


def worker_plan(puzzle, trees, rows, estimate: Optional[MemoryEstimate] = None,
                budget: Optional[float] = None, cores: Optional[int] = None,
                deadline: Optional[float] = None) -> WorkerPlan:
  """The worker processes :func:`settle_each` starts for the roots ``rows`` of ``trees``:
  one per core (``cores``, default ``os.cpu_count()``) and root, as many as fit in the
  memory (:func:`jaxsearch.memory.plan_workers`: the budget ``budget`` less the run's
  ``estimate``, or the memory available now), each worker counted at its runtime, the
  game's exact bounds as sent (pickled) and the largest tree
  (:func:`jaxsearch.memory.worker_bytes`). One (no process started) where the bounds cannot
  be sent, or where ``deadline`` (``time.monotonic()``) leaves less than
  :data:`WORKER_START_SECONDS`: the exact search stops then, and the trees alone are read
  quicker than a process starts."""
  rows = list(rows)
  game = CertificateGame.of(puzzle)
  cores = max(int(cores or os.cpu_count() or 1), 1)
  if game is None or not game.portable or len(rows) <= 1:
    return WorkerPlan(workers=1, cores=cores, each=0, free=None, capped=False)
  if deadline is not None and deadline - time.monotonic() < WORKER_START_SECONDS:
    return WorkerPlan(workers=1, cores=cores, each=0, free=None, capped=False, late=True)
  game_bytes = len(pickle.dumps(game.for_workers(), protocol=pickle.HIGHEST_PROTOCOL))
  tree_bytes = max(sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(trees[row]))
                   for row in rows)
  return plan_workers(worker_bytes(game_bytes, tree_bytes), len(rows), estimate, budget,
                      cores)


def settle_each(puzzle, trees, targets: dict, deadline: Optional[float] = None,
                workers: Optional[int] = None,
                on_settled: Optional[Callable[[int, Settled], None]] = None) -> dict:
  """``{row: settle(puzzle, trees, row, target)}`` for ``targets = {row: target}``, the
  roots in parallel processes (``workers``, default one per CPU core and root, as many as
  fit in the memory available: :func:`worker_plan`) where the game's exact bounds can be
  sent to them (:attr:`CertificateGame.portable`: a dataclass of arrays, no closures), else
  one after another. Each root is independent, and the exact search is single-threaded
  numpy: the cores are otherwise idle while it runs. Largest roots first, so that the
  processes finish together. ``on_settled(row, settled)`` is called in this process as each
  root's result comes (e.g. to checkpoint it:
  :meth:`jaxsearch.solve.checkpoint.Checkpoint.save_settled`)."""
  if workers is None:
    workers = worker_plan(puzzle, trees, targets).workers
  workers = min(workers, len(targets))
  game = CertificateGame.of(puzzle)
  done = {}
  if workers <= 1 or game is None or not game.portable:
    for row, target in targets.items():
      done[row] = _settle_tree(game, trees[row], target, deadline)
      if on_settled is not None:
        on_settled(row, done[row])
    return done
  order = sorted(targets, key=lambda row: len(_root_secrets(game, trees[row])), reverse=True)
  with worker_pool(workers, _start_worker, (game.for_workers(),)) as pool:
    futures = {pool.submit(_settle_row, jax.tree.map(np.asarray, trees[row]), targets[row],
                           deadline): row
               for row in order}
    for future in concurrent.futures.as_completed(futures):
      done[futures[future]] = future.result()
      if on_settled is not None:
        on_settled(futures[future], done[futures[future]])
  return {row: done[row] for row in targets}


def _root_secrets(game: CertificateGame, tree) -> np.ndarray:
  """The secrets remaining at the root of ``tree`` (a batch of one), as indices."""
  return TreeReader(tree).secrets_at(0, game.num_secrets)


_WORKER_GAME: Optional[CertificateGame] = None  # in a worker process: what it certifies


def _start_worker(game: CertificateGame) -> None:
  global _WORKER_GAME
  _WORKER_GAME = game


def _settle_row(tree, target: int, deadline: Optional[float]) -> Settled:
  return _settle_tree(_WORKER_GAME, tree, target, deadline)
