"""After a search: the policy an opening's trees hold, evaluated exactly, then settled and
certified (the exact search of small sets, in one process per core).

Shared by the solve of fixed openings (:mod:`jaxsearch.guessing.puzzle`) and the search over
first guesses (:mod:`jaxsearch.guessing.root`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Callable, Optional

from jaxsearch.guessing import policy_file
from jaxsearch.memory import MemoryEstimate, WorkerPlan
from jaxsearch.guessing.certificates import Settled, certify, settle_each, worker_plan
from jaxsearch.guessing.extract import PolicyExtractor
from jaxsearch.solve.options import RunClock

if TYPE_CHECKING:  # root.py imports this module
  from jaxsearch.guessing.root import RootReport


@dataclasses.dataclass
class Outcome:
  """What one way of solving a puzzle found (one tree from the start, a batch of trees per
  fixed opening, or the search over first guesses), before
  :func:`jaxsearch.guessing.solve_puzzle` states what it proves.

  Attributes:
    policy: the exported policy (:mod:`jaxsearch.guessing.policy_file` node).
    evaluation: its exact evaluation.
    bound_total, upper_total: the search's achievable and optimistic bounds in total
      guesses (``upper_total`` ``None`` without one), over what this way searched.
    proven: the certificate holds: ``evaluation.total_guesses`` is optimal among the
      policies this way searched (given its first guesses).
    simulations, nodes, seconds, history, phases, memory, resumed_from: the search's work
      (:class:`jaxsearch.solve.chunked.SearchResult`), ``history`` in total guesses.
    trees: one batch of one tree per root (``None``: nothing searched).
    subproblems: with fixed openings, ``(proven, total)`` sub-problems of the chosen one.
    opening_rows: with fixed openings, the rows of ``trees`` of the chosen one.
    root: the search over first guesses' report (:class:`jaxsearch.guessing.root.RootReport`).
  """

  policy: dict
  evaluation: policy_file.Evaluation
  bound_total: float
  upper_total: Optional[float]
  proven: bool
  simulations: int
  nodes: int
  seconds: float
  history: list
  phases: dict
  memory: Optional[MemoryEstimate] = None
  resumed_from: int = 0
  trees: Optional[list] = None
  subproblems: Optional[tuple[int, int]] = None
  opening_rows: Optional[tuple[int, int]] = None
  root: Optional[RootReport] = None


@dataclasses.dataclass
class RunProgress:
  """One solve's deadlines and what it says of its progress.

  Attributes:
    clock: the deadlines (:class:`jaxsearch.solve.options.RunClock`).
    on_chunk: called after every chunk of the search with its figures, or ``None``.
    on_phase: called as each phase other than the trees' search goes, with a dict: ``{"phase":
      "exact", "done": k, "of": n, "incumbent": t, "deadline": d, "stopped": s}`` as the
      exact search of the whole game goes (``k`` of ``n`` first guesses settled, ``t`` the
      best total so far or ``None``; ``d`` its deadline or ``None``; ``s`` true once it
      ended without a proof; ``"alone"`` true where the trees would not fit in memory and
      will not follow), ``{"phase":
      "extracting"}`` when the policy is read off the trees and evaluated, ``{"phase":
      "certifying", "done": k, "total": n, "deadline": d}`` before the certificates and
      after each (``d``: when they stop at the latest, ``time.monotonic()``), or ``None``;
      as the exact certificates start, their dict also has ``"workers"``: where they run
      (a :class:`jaxsearch.memory.WorkerPlan`: worker processes, cores, the memory cap).
    memory: the run's memory budget in bytes (``None``: the memory available), which the
      certificates' worker processes must fit in beside the search's ``estimate``.
    estimate: the search's memory estimate (:class:`jaxsearch.memory.MemoryEstimate`),
      once known.
  """

  clock: RunClock
  on_chunk: Optional[Callable[[dict], None]] = None
  on_phase: Optional[Callable[[dict], None]] = None
  certified: int = 0  # certificates done so far in this run
  to_certify: int = 0  # and in all, as far as known
  memory: Optional[float] = None
  estimate: Optional[MemoryEstimate] = None

  def extracting(self) -> None:
    if self.on_phase is not None:
      self.on_phase({"phase": "extracting"})

  def exact_search(self, info: dict) -> None:
    """The exact search of the whole game (:func:`jaxsearch.guessing.exact_game.exact_first`)
    started or settled a first guess: ``info`` has ``done``, ``of`` (first guesses),
    ``incumbent`` (the best total so far, or ``None``), ``deadline``, ``stopped`` (true
    where it ended without a proof: the trees take over) and ``alone`` (true where no trees
    follow: they would not fit in memory)."""
    if self.on_phase is not None:
      self.on_phase({"phase": "exact", "done": info["done"], "of": info["of"],
                     "incumbent": info["incumbent"], "deadline": info["deadline"],
                     "stopped": bool(info.get("stopped", False)),
                     "alone": bool(info.get("alone", False))})

  def certifying(self, deadline: float, more: int = 0, done: int = 0,
                 say: bool = True, workers: Optional[WorkerPlan] = None) -> None:
    """``more`` certificates are coming, ``done`` were completed (told unless ``say`` is
    false); ``workers``: where the exact certificates about to start run."""
    self.to_certify += more
    self.certified += done
    if self.on_phase is not None and say:
      info = {"phase": "certifying", "done": self.certified, "total": self.to_certify,
              "deadline": deadline}
      if workers is not None:
        info["workers"] = workers
      self.on_phase(info)


def quiet_progress() -> RunProgress:
  """No deadlines beyond the options', nothing said."""
  return RunProgress(RunClock(time.monotonic(), None, None, float("inf")))


def evaluate(puzzle, policy: dict) -> policy_file.Evaluation:
  """Exact evaluation of ``policy`` over every secret of ``puzzle``."""
  return policy_file.evaluate(policy, puzzle.secrets, puzzle.score,
                              guesses=puzzle.valid_guesses)


def exported_policy(puzzle, policy: dict) -> dict:
  """An exact search's policy (guess indices, feedback codes) in the export format."""
  return {"guess": puzzle.guess_names[policy["guess"]], "children": {
      puzzle.outcome_name(code): exported_policy(puzzle, child)
      for code, child in policy["children"].items()}}


def opening_policy(puzzle, guess: str, outcomes, trees, rows):
  """``(evaluation, policy, sub_totals)``: the policy opening with ``guess`` whose feedbacks
  ``outcomes`` go on with the policies the trees' ``rows`` hold (``trees``: one batch of one
  tree per root; one row per feedback, in order), its exact evaluation, and each row's exact
  total."""
  extractors = [PolicyExtractor(puzzle, trees[row]) for row in rows]
  policy = {"guess": guess, "children": {
      puzzle.outcome_name(o): extractor.policy(0) for o, extractor in zip(outcomes, extractors)}}
  return evaluate(puzzle, policy), policy, [extractor.best(0)[0] for extractor in extractors]


def corrected_policy(puzzle, policy: dict, evaluation, outcomes, first_row: int, settled: dict):
  """``(policy, evaluation)``: ``policy`` (an opening's) with the sub-problems where the exact
  search found better (``settled``, by row; ``outcomes[row - first_row]`` their feedbacks)
  replaced by its policies, and evaluated again."""
  better = {row: one for row, one in settled.items() if one.policy is not None}
  if not better:
    return policy, evaluation
  children = dict(policy["children"])
  for row, one in better.items():
    children[puzzle.outcome_name(outcomes[row - first_row])] = exported_policy(puzzle, one.policy)
  policy = {"guess": policy["guess"], "children": children}
  return policy, evaluate(puzzle, policy)


def settle_saved(puzzle, trees, targets: dict, deadline: float, store,
            progress: Optional[RunProgress] = None) -> dict:
  """:func:`settle_each`, each result saved to the checkpoint ``store`` as it comes (and
  told to ``progress``); those it holds already for this search (a resumed run killed while
  certifying) are not redone."""
  saved = {} if store is None else store.settled(targets, Settled)
  todo = {row: target for row, target in targets.items() if row not in saved}
  # One worker process per core and root, as many as the memory holds beside the search's.
  plan = worker_plan(puzzle, trees, list(todo),
                     None if progress is None else progress.estimate,
                     None if progress is None else progress.memory, deadline=deadline)
  if progress is not None:
    progress.certifying(deadline, more=len(targets), done=len(saved),
                        workers=plan if todo else None)

  def save(row, one):
    if store is not None:
      store.save_settled(row, todo[row], one)
    if progress is not None:
      progress.certifying(deadline, done=1)

  fresh = (settle_each(puzzle, trees, todo, deadline, workers=plan.workers, on_settled=save)
           if todo else {})
  return {row: saved[row] if row in saved else fresh[row] for row in targets}


def certify_saved(puzzle, trees, rows, target: int, cost: int, deadline: float, store,
               name: str, progress: Optional[RunProgress] = None) -> bool:
  """:func:`certify`, its answer saved to (or, resumed, taken from) the checkpoint ``store``
  under ``name`` (and told to ``progress``)."""
  saved = None if store is None else store.certified(name, target)
  if saved is not None:
    proven = saved
  else:
    proven = certify(puzzle, trees, rows, target, cost, deadline)
    if store is not None:
      store.save_certified(name, target, proven)
  if progress is not None:
    progress.certifying(deadline, done=1)
  return proven
