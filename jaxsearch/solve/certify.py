"""Exact certificates of optimality for guessing games, in integers.

"Proven optimal" for Mastermind and Wordle is checked after the search by :func:`certify`,
with the game's exact admissible bounds (``puzzle.exact``, e.g.
:class:`games.guessing_exact.ExactBounds`): every comparison that decides is between integers.
(:mod:`jaxsearch.solve.exact` certifies any game's bounds in exact rationals.)
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from typing import Callable, Optional, Sequence

import jax
import numpy as np

from jaxsearch.solve.extract import _remaining
from jaxsearch.solve.loop import _row_of


# Children of at most this many secrets are given their exact optimum as their target
# (``exact.optimum_within``); larger ones what the tree's float bound suggests.
CLAIM_MAX_SECRETS = 24


class _Certifier:
  """Checks, in exact integers, that no policy from a node of one tree needs fewer than a
  target number of guesses in total (over the node's secrets).

  ``holds(node, target)`` is a proof by the game's exact admissible bounds
  (``puzzle.exact``, :class:`games.guessing_exact.ExactBounds`): the target is met outright when
  the node's counting bound reaches it; otherwise every guess that could still do better —
  its exact action bound below the target — must have been expanded in the tree, and for
  each such guess the targets of its feedbacks' children, summed with the ``n`` guesses it
  costs, must reach the target and hold recursively. The search's float bounds only choose
  the children's targets (rounded to integers, lowered where there is slack); every
  comparison that decides is between integers, so a float rounding error can make a true
  claim fail to certify, never a false one pass.

  Where the game offers an exact search of small sets (``exact.guess_at_least``,
  ``exact.optimum_within``: :class:`games.guessing_exact.ExactSolver`), a guess the tree never
  expanded, or whose subtree falls short, is settled by that search instead, and small
  children get their exact optimum as their target: the tree proves the top of a large
  problem, the exact search its many small leaves.
  """

  def __init__(self, puzzle, trees, row: int, deadline: Optional[float] = None):
    trees, row = _row_of(trees, row)
    take = lambda x: np.asarray(x[row])  # noqa: E731
    self.puzzle = puzzle
    self.exact = puzzle.exact
    self.deadline = deadline  # ``time.monotonic()`` after which the exact search stops
    self.states = jax.tree.map(take, trees.nodes.state)
    self.node_upper = take(trees.bounds.upper).astype(np.float64)
    self.node_terminal = take(trees.nodes.terminal)
    self.slot_action = take(trees.slots.action)
    self.slot_chance = take(trees.slots.chance)
    self.chance_prob = take(trees.chance.prob)
    self.chance_child = take(trees.chance.child)
    self.num_nodes = int(np.asarray(trees.num_nodes)[row])
    self._proven: dict[int, int] = {}  # node -> largest target shown to hold
    self._failed: dict[int, int] = {}  # node -> smallest target that did not certify

  def secrets_at(self, node: int) -> np.ndarray:
    return _remaining(self.states.remaining[node], len(self.puzzle.secrets))

  def claim(self, node: int) -> tuple[int, bool]:
    """``(total, settled)``: the integer total to certify for ``node`` — its exact optimum
    where the game's exact search finds it (``exact.optimum_within``, small sets; then
    ``settled``), else what the tree's float optimistic bound suggests (at least the
    counting bound) — and whether asking more of it is hopeless."""
    secrets = self.secrets_at(node)
    n = len(secrets)
    if n == 0 or self.states.solved[node] or self.node_terminal[node]:
      return 0, True
    optimum = self._exact_optimum(secrets)
    if optimum is not None:
      return optimum, True
    total = -self.node_upper[node] * n
    floor = self.floor(node)
    if not (np.isfinite(total) and abs(total) < 1e15):
      return floor, False
    return max(floor, int(round(total))), False

  def floor(self, node: int) -> int:
    """The counting bound of ``node``'s secrets (0 where none remain)."""
    n = len(self.secrets_at(node))
    return self.exact.node_total(n) if n else 0

  def _exact_optimum(self, secrets: np.ndarray):
    find = getattr(self.exact, "optimum_within", None)
    return None if find is None or len(secrets) > CLAIM_MAX_SECRETS else find(secrets)

  def _guess_shown(self, secrets: np.ndarray, action: int, target: int) -> bool:
    """Whether the game's exact search shows that opening with ``action`` needs at least
    ``target`` guesses (where the tree cannot: unexpanded, or its children fall short)."""
    check = getattr(self.exact, "guess_at_least", None)
    if check is None or (self.deadline is not None and time.monotonic() > self.deadline):
      return False
    return bool(check(secrets, int(action), target))

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
    secrets = self.secrets_at(node)
    n = len(secrets)
    if n == 0 or bool(self.states.solved[node]) or self.node_terminal[node]:
      return target <= 0
    if target <= self.exact.node_total(n):
      return True
    optimum = self._exact_optimum(secrets)
    if optimum is not None:  # the exact search has settled this set outright
      return target <= optimum
    state = jax.tree.map(lambda x: x[node], self.states)
    totals, considered = self.exact.action_totals(secrets, state)
    expanded = {int(self.slot_action[node, slot]): int(self.slot_chance[node, slot])
                for slot in np.flatnonzero(self.slot_chance[node] >= 0)}
    for action in np.flatnonzero(considered & (totals < target)):
      chance = expanded.get(int(action))
      if chance is not None:
        children = [int(self.chance_child[chance, o])
                    for o in np.flatnonzero(self.chance_prob[chance] > 0)
                    if o != self.puzzle.solved_outcome]
        if self.children_hold(children, target - n):
          continue
      # Never searched, or its subtree falls short: the exact search may still settle it.
      if not self._guess_shown(secrets, action, target):
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
  ``trees`` (one root: ``rows = [0]``, ``cost = 0``; a fixed first guess: every feedback's
  root, ``cost`` = the number of secrets, who all pay for it). See :class:`_Certifier`.
  Needs ``puzzle.exact``; ``False`` without it. After ``deadline`` (``time.monotonic()``)
  the game's exact search is not asked any more: what the tree alone shows still counts."""
  if puzzle.exact is None:
    return False
  certifiers = {row: _Certifier(puzzle, trees, row, deadline) for row in rows}
  claims = {row: certifiers[row].claim(0) for row in rows}
  floors = {row: certifiers[row].floor(0) for row in rows}
  targets = _share_out(claims, floors, target - cost)
  return targets is not None and all(certifiers[row].holds(0, targets[row]) for row in rows)


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
  and, where that fails, asks the game's exact search (``exact.best_policy``, small sets)
  for the optimum outright: a better policy, with its total, or the proof that none exists.
  A tree policy that is not optimal is so corrected, not only left unproven."""
  if certify(puzzle, trees, [row], target, deadline=deadline):
    return Settled(True, int(target))
  search = getattr(puzzle.exact, "best_policy", None)
  if search is None or (deadline is not None and time.monotonic() > deadline):
    return Settled(False, int(target))
  found = search(_root_secrets(puzzle, trees, row), int(target), deadline)
  if found is None:
    return Settled(False, int(target))
  total, policy = found
  return Settled(True, int(target) if policy is None else int(total), policy)


def settle_each(puzzle, trees, targets: dict, deadline: Optional[float] = None,
                workers: Optional[int] = None,
                on_settled: Optional[Callable[[int, Settled], None]] = None) -> dict:
  """``{row: settle(puzzle, trees, row, target)}`` for ``targets = {row: target}``, the
  roots in parallel processes (``workers``, default one per CPU core) where the game's exact
  bounds can be sent to them (a dataclass of arrays, no closures), else one after another.
  Each root is independent, and the exact search is single-threaded numpy: the cores are
  otherwise idle while it runs. Largest roots first, so that the processes finish together.
  ``on_settled(row, settled)`` is called in this process as each root's result comes (e.g.
  to checkpoint it: :meth:`jaxsearch.solve.checkpoint.Checkpoint.save_settled`)."""
  workers = min(workers or os.cpu_count() or 1, len(targets))
  exact = puzzle.exact
  portable = (exact is not None and dataclasses.is_dataclass(exact)
              and getattr(exact, "redundant", None) is None)
  done = {}
  if workers <= 1 or not portable:
    for row, target in targets.items():
      done[row] = settle(puzzle, trees, row, target, deadline)
      if on_settled is not None:
        on_settled(row, done[row])
    return done
  order = sorted(targets, key=lambda row: len(_root_secrets(puzzle, trees, row)), reverse=True)
  light = (dataclasses.replace(exact), len(puzzle.secrets), puzzle.solved_outcome)
  with _worker_pool(workers, _start_worker, light) as pool:
    futures = {pool.submit(_settle_row, _one_tree(trees, row), targets[row], deadline): row
               for row in order}
    for future in concurrent.futures.as_completed(futures):
      done[futures[future]] = future.result()
      if on_settled is not None:
        on_settled(futures[future], done[futures[future]])
  return {row: done[row] for row in targets}


@contextlib.contextmanager
def _worker_pool(workers: int, initializer, initargs: tuple = ()):
  """A pool of ``workers`` spawned processes (JAX's threads do not survive a fork), each
  started by ``initializer(*initargs)``, that end with this process: killed with it, even by
  ``SIGKILL``, they do not run on as orphans (nor, once they are gone, does the resource
  tracker they share). Shut down (its work done) on leaving the block.

  Linux's ``PR_SET_PDEATHSIG`` fires when the *thread* that started a worker ends: a spawn
  pool starts its workers in the thread that submits work, which stays in this block until
  they are shut down."""
  context = multiprocessing.get_context("spawn")
  with _workers_skip_main(), concurrent.futures.ProcessPoolExecutor(
      workers, mp_context=context, initializer=_end_with_parent,
      initargs=(os.getpid(), initializer, tuple(initargs))) as pool:
    yield pool


# How often a worker checks that its parent is alive, where the system does not tell it.
_PARENT_POLL_SECONDS = 0.5


def _end_with_parent(parent: int, initializer, initargs: tuple) -> None:
  """A worker's start (:func:`_worker_pool`): makes it end when its parent process ``parent``
  does, then runs ``initializer(*initargs)``. On Linux the kernel sends it ``SIGKILL`` when
  its parent dies (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread also polls the
  parent (it is gone once the worker's parent process id changes) and ends the worker with
  ``os._exit``."""
  _kill_on_parent_death()
  if os.getppid() != parent:  # the parent died before the request above took effect
    os._exit(1)

  def watch():
    while True:
      time.sleep(_PARENT_POLL_SECONDS)
      if os.getppid() != parent:
        os._exit(1)

  threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
  initializer(*initargs)


def _kill_on_parent_death() -> bool:
  """Asks Linux to send this process ``SIGKILL`` when its parent dies; whether it did."""
  if not sys.platform.startswith("linux"):
    return False
  try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) == 0
  except (OSError, AttributeError):
    return False


@contextlib.contextmanager
def _workers_skip_main():
  """Hides the caller's ``__main__`` while worker processes run, and keeps them off the
  accelerator. A spawned process re-imports the parent's main module, and a user's script
  without an ``if __name__ == "__main__"`` guard would then run again in every worker (and
  fail); the workers need only this module. Their exact search is numpy on the host: were
  one to touch JAX's GPU backend, each would reserve most of the GPU's memory."""
  main = sys.modules.get("__main__")
  sys.modules["__main__"] = types.ModuleType("__main__")
  saved = {name: os.environ.get(name) for name in _WORKER_ENVIRONMENT}
  os.environ.update(_WORKER_ENVIRONMENT)
  try:
    yield
  finally:
    sys.modules["__main__"] = main
    for name, value in saved.items():
      if value is None:
        os.environ.pop(name, None)
      else:
        os.environ[name] = value


# What a spawned worker inherits: JAX on the host only, and no memory reserved up front.
_WORKER_ENVIRONMENT = {"JAX_PLATFORMS": "cpu", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def _root_secrets(puzzle, trees, row: int) -> np.ndarray:
  """The secrets remaining at root ``row`` (indices)."""
  batch, index = _row_of(trees, row)
  return _remaining(np.asarray(batch.nodes.state.remaining[index, 0]), len(puzzle.secrets))


def _one_tree(trees, row: int):
  """Root ``row``'s tree as a batch of one, in numpy (what a worker process is sent)."""
  trees, index = _row_of(trees, row)
  return jax.tree.map(lambda x: np.asarray(x[index:index + 1]), trees)


_WORKER_PUZZLE = None  # in a worker process: what a certificate needs of the puzzle


def _start_worker(exact, num_secrets: int, solved_outcome: int) -> None:
  global _WORKER_PUZZLE
  _WORKER_PUZZLE = types.SimpleNamespace(exact=exact, secrets=range(num_secrets),
                                         solved_outcome=solved_outcome)


def _settle_row(tree, target: int, deadline: Optional[float]) -> Settled:
  return settle(_WORKER_PUZZLE, tree, 0, target, deadline=deadline)
