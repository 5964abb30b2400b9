"""A whole guessing game solved by the exact search alone, its sub-problems on every core.

For games whose exact search is fast enough (Mastermind up to a few thousand codes, with its
colour-and-peg symmetries and the two-step floors of :class:`jaxsearch.guessing.exact.ExactSolver`),
the optimum is found and proven without a search tree: each first guess up to symmetry
splits the secrets into its feedback parts, and the parts are solved in worker processes.

* The first guess with the lowest one-step bound (:meth:`ExactBounds.action_totals`) is
  solved outright: every part's optimum and policy. Its total is the incumbent.
* Every other first guess is then either ruled out or found better. Its parts are asked,
  largest first, whether they beat their share of the incumbent: part ``i`` gets the budget
  ``incumbent - S - Σ_{j≠i} floor_j``, where ``floor_j`` is the best lower bound known for
  part ``j`` (its two-step bound to start with, then what its own search showed). A part
  that needs at least its budget proves that the first guess cannot beat the incumbent
  (the others need at least their floors); a part below it is solved exactly. If all are,
  the first guess's exact total is known, and it replaces the incumbent where lower.

Every comparison is between integers, and every bound is the exact search's (admissible:
see :mod:`jaxsearch.guessing.exact`), so a completed run is a proof of optimality. A run cut
short by its deadline still says what it showed: the best total found, and the least total
any first guess can still reach (the lower bound).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import os
import time
from typing import Callable, Optional, Sequence

import numpy as np

from jaxsearch.guessing.exact import ExactBounds, ExactSolver
from jaxsearch.guessing.workers import worker_pool


@dataclasses.dataclass(frozen=True)
class ExactSolution:
  """What :func:`solve_exactly` showed.

  Attributes:
    total: the best total found (guesses summed over every secret), or ``None`` where not
      even the first first guess was solved in time.
    first_guess: the guess its policy opens with (an index), or ``None``.
    policy: ``{"guess": g, "children": {code: policy}}`` in guess indices and feedback codes
      (the solving code left out), or ``None``.
    lower_bound: no policy needs fewer guesses in total; equal to ``total`` when proven.
    proven: ``total`` is the game's optimum (every first guess given was settled).
    first_guesses: ``{guess: (lower bound, exact total or None)}`` for each first guess.
    seconds: wall time.
  """

  total: Optional[int]
  first_guess: Optional[int]
  policy: Optional[dict]
  lower_bound: int
  proven: bool
  first_guesses: dict
  seconds: float


# Games of at least this many secrets are solved in one worker process per core by default
# (Mastermind 4×6, 1,296 codes, takes about 3 s of one core: less than starting workers).
PARALLEL_FROM = 2000

_WORKER: dict = {}  # in a worker process: its exact search (memo kept between parts)


def _start_worker(bounds: ExactBounds) -> None:
  _WORKER["solver"] = ExactSolver(bounds, max_secrets=bounds.table.shape[0], max_work=1 << 62)


def _solve_part(part: np.ndarray, below: int, deadline: Optional[float]):
  """In a worker: :meth:`ExactSolver.best_policy` of one part."""
  return _WORKER["solver"].best_policy(part, below, deadline)


class _Runner:
  """Runs parts in worker processes (:func:`jaxsearch.guessing.workers.worker_pool`), or
  here with one worker."""

  def __init__(self, bounds: ExactBounds, workers: int):
    self.bounds = bounds
    self.workers = workers
    self.pool = None
    self.local = None
    self._stack = contextlib.ExitStack()

  def __enter__(self):
    if self.workers <= 1:
      self.local = ExactSolver(self.bounds, max_secrets=self.bounds.table.shape[0],
                               max_work=1 << 62)
    else:
      self.pool = self._stack.enter_context(
          worker_pool(self.workers, _start_worker, (self.bounds,)))
    return self

  def __exit__(self, *exc):
    if self.pool is not None:
      self.pool.shutdown(wait=True, cancel_futures=True)
    return self._stack.__exit__(*exc)

  def submit(self, part, below, deadline) -> concurrent.futures.Future:
    if self.pool is not None:
      return self.pool.submit(_solve_part, part, below, deadline)
    future = concurrent.futures.Future()
    future.set_result(self.local.best_policy(part, below, deadline))
    return future


def _floors(bounds: ExactBounds, parts: list) -> list[int]:
  """Each part's two-step bound: the least one-step bound of its guesses (at least the
  counting bound; ``2n - 1`` for parts of at most two secrets)."""
  floors = []
  for part in parts:
    floor = bounds.node_total(len(part))
    if len(part) > 2:
      totals, considered = bounds.action_totals(part)
      if considered.any():
        floor = max(floor, int(totals[considered].min()))
    floors.append(floor)
  return floors


def _first_guess(runner: _Runner, bounds: ExactBounds, guess: int, incumbent: Optional[int],
                 deadline: Optional[float]):
  """``(lower, total, children)`` of one first guess: ``total`` its exact total where it is
  below ``incumbent`` (``None`` otherwise, or out of time), ``children`` its parts'
  policies then; ``lower`` what every policy opening with it needs, as far as shown."""
  n = bounds.table.shape[0]
  column = bounds.table[:, guess]
  codes = [int(c) for c in np.unique(column) if c != bounds.solved_code]
  parts = {code: np.flatnonzero(column == code) for code in codes}
  order = sorted(codes, key=lambda code: -len(parts[code]))
  floors = dict(zip(order, _floors(bounds, [parts[code] for code in order])))
  exact: dict[int, tuple[int, dict]] = {}
  running: dict = {}
  waiting = list(order)
  timed_out = False
  limit = (1 << 62) if incumbent is None else incumbent - n  # the parts' totals must beat it
  while waiting or running:
    while waiting and len(running) < runner.workers and sum(floors.values()) < limit:
      code = waiting.pop(0)
      budget = (1 << 62) if incumbent is None else limit - (sum(floors.values()) - floors[code])
      running[runner.submit(parts[code], budget, deadline)] = code
    if not running:
      break
    done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
    for future in done:
      code = running.pop(future)
      found = future.result()
      if found is None:
        timed_out = True
        continue
      value, policy = found
      floors[code] = max(floors[code], int(value))
      if policy is not None:
        exact[code] = (int(value), policy)
  lower = n + sum(floors.values())
  if timed_out or len(exact) < len(codes) or lower >= n + limit:
    return lower, None, None
  return lower, lower, {code: policy for code, (_, policy) in exact.items()}


def solve_exactly(bounds: ExactBounds, first_guesses: Sequence[int],
                  deadline: Optional[float] = None, workers: Optional[int] = None,
                  on_first_guess: Optional[Callable[[dict], None]] = None) -> ExactSolution:
  """The optimal policy of the whole game by exact search (module docstring).

  Args:
    bounds: the game's :class:`ExactBounds` (with its symmetries, where it has any).
    first_guesses: guess indices that cover every first guess up to the game's symmetry
      (Mastermind's openings), so that settling them settles the game.
    deadline: ``time.monotonic()`` after which the search stops (``None``: none).
    workers: processes for the parts (1: in this process; default one per CPU core from
      :data:`PARALLEL_FROM` secrets, else 1: a worker takes seconds to start).
    on_first_guess: told after each first guess, with ``{"guess", "lower", "total",
      "incumbent", "done", "of"}``.
  """
  started = time.perf_counter()
  n = bounds.table.shape[0]
  if workers is None:  # starting a worker costs seconds: worth it for large games only
    workers = (os.cpu_count() or 1) if n >= PARALLEL_FROM else 1
  one_step, _ = bounds.action_totals(np.arange(n))
  order = sorted((int(g) for g in first_guesses), key=lambda g: (one_step[g], g))
  report = {guess: (int(one_step[guess]), None) for guess in order}
  best: Optional[tuple[int, int, dict]] = None
  with _Runner(bounds, workers) as runner:
    for done, guess in enumerate(order):
      if deadline is not None and time.monotonic() > deadline:
        break
      incumbent = None if best is None else best[0]
      if incumbent is not None and one_step[guess] >= incumbent:
        if on_first_guess is not None:  # ruled out by its one-step bound
          on_first_guess({"guess": guess, "lower": int(one_step[guess]), "total": None,
                          "done": done + 1, "of": len(order), "incumbent": incumbent})
        continue
      lower, total, children = _first_guess(runner, bounds, guess, incumbent, deadline)
      report[guess] = (max(lower, report[guess][0]), total)
      if total is not None and (best is None or total < best[0]):
        best = (total, guess, children)
      if on_first_guess is not None:
        on_first_guess({"guess": guess, "lower": lower, "total": total, "done": done + 1,
                        "of": len(order), "incumbent": None if best is None else best[0]})
  if best is None:
    return ExactSolution(None, None, None, min(lower for lower, _ in report.values()),
                         False, report, time.perf_counter() - started)
  total, guess, children = best
  lower_bound = min([total] + [lower for g, (lower, _) in report.items() if g != guess])
  return ExactSolution(total=total, first_guess=guess,
                       policy={"guess": guess, "children": children},
                       lower_bound=lower_bound, proven=lower_bound >= total,
                       first_guesses=report, seconds=time.perf_counter() - started)


def exact_outcome(puzzle, openings: Sequence[str], deadline: Optional[float] = None,
                  workers: Optional[int] = None,
                  on_first_guess: Optional[Callable[[dict], None]] = None):
  """:func:`solve_exactly` of a :class:`jaxsearch.guessing.Puzzle` from its ``openings`` (first
  guesses by name), as the :class:`jaxsearch.guessing.finish.Outcome` a solve returns, or
  ``None`` where the puzzle has no exact search or nothing was solved in time.

  The policy found is exported and evaluated over every secret
  (:func:`jaxsearch.guessing.finish.evaluate`); ``proven`` when every opening was settled
  (the claim is for the game when ``openings`` cover every first guess up to symmetry).
  No tree is searched: ``simulations``, ``nodes`` and ``history`` are empty, ``phases``
  holds ``exact_s``, ``subproblems`` the first guess's parts, all solved exactly.

  Raises:
    RuntimeError: the exported policy's evaluation differs from the exact search's total (a
      bug: never claimed).
  """
  from jaxsearch.guessing.finish import Outcome, evaluate, exported_policy
  bounds = getattr(puzzle, "exact", None)
  if bounds is None or not getattr(bounds, "search_secrets", 0):
    return None
  names = list(puzzle.guess_names)
  found = solve_exactly(bounds, [names.index(guess) for guess in openings], deadline,
                        workers, on_first_guess)
  if found.policy is None:
    return None
  policy = exported_policy(puzzle, found.policy)
  evaluation = evaluate(puzzle, policy)
  if evaluation.total_guesses != found.total:
    raise RuntimeError(f"the exact search's policy takes {evaluation.total_guesses} guesses, "
                       f"not the {found.total} it found")
  parts = len(found.policy["children"])
  return Outcome(policy=policy, evaluation=evaluation, bound_total=float(found.total),
                 upper_total=float(found.lower_bound), proven=found.proven, simulations=0,
                 nodes=0, seconds=found.seconds, history=[],
                 phases={"exact_s": round(found.seconds, 3)}, subproblems=(parts, parts))


# The share of the search's time the exact search of the whole game gets before the trees
# take over (:func:`exact_first`): where it does not finish, the trees get the rest.
EXACT_SHARE = 0.75


def exact_first(puzzle, openings: Sequence[str], options, progress, alone: bool = False):
  """The game solved by its exact search alone (:func:`exact_outcome`), where that proves
  the optimum within :data:`EXACT_SHARE` of the search's time; else ``None`` (the solve goes
  on with the trees, which then have the rest of the time). ``alone``: no trees will follow
  (they would not fit in memory): the whole search time, and the best policy found is
  returned even unproven (``None`` only where none was found).

  Asked by :func:`jaxsearch.guessing.solve_puzzle` (method ``auto``) when ``openings`` cover
  every first guess up to the game's symmetry, so that a result is a proof about the game.
  ``options``: the solve's :class:`jaxsearch.solve.options.SolveOptions` (its search
  ``seconds``); ``progress``: its :class:`jaxsearch.guessing.finish.RunProgress` (deadlines,
  and ``on_phase`` told ``{"phase": "exact", "done", "of", "incumbent", "deadline"}`` as the
  search starts and after each first guess, and with ``"stopped": True`` where it ends
  unproven and the trees take over).
  """
  bounds = getattr(puzzle, "exact", None)
  if bounds is None or not getattr(bounds, "search_secrets", 0) or not hasattr(bounds, "table"):
    return None
  left = min(options.budget.seconds, progress.clock.search_left())
  if left <= 0:
    return None
  share = 1.0 if alone else EXACT_SHARE
  deadline = time.monotonic() + share * left if math.isfinite(left) else None
  progress.exact_search({"done": 0, "of": len(openings), "incumbent": None,
                         "deadline": deadline, "alone": alone})

  last = {"done": 0, "of": len(openings), "incumbent": None}

  def on_first_guess(info: dict) -> None:
    last.update(info)
    progress.exact_search({**info, "deadline": deadline})

  outcome = exact_outcome(puzzle, openings, deadline, on_first_guess=on_first_guess)
  if outcome is not None and (outcome.proven or alone):
    return outcome
  if not alone:
    progress.exact_search({**last, "deadline": deadline, "stopped": True})
  return None
