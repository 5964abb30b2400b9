"""What a guessing game's solve found (:class:`SolveResult`), and what it may claim: for the
game, or only given its first guesses (:func:`covers_every_opening`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

from jaxsearch.guessing import policy_file
from jaxsearch.memory import MemoryEstimate
from jaxsearch.guessing.finish import Outcome
from jaxsearch.guessing.root import RootReport


@dataclasses.dataclass
class SolveResult:
  """What :func:`solve_puzzle` found.

  Attributes:
    policy: the exported decision tree (a :mod:`jaxsearch.guessing.policy_file` node).
    evaluation: its exact evaluation over every secret (``total_guesses`` is *the* figure).
    bound_total: the achievable bound in total guesses: the search's, or the exported
      policy's exact total where that is better.
    upper_total: the optimistic bound in total guesses, or ``None``: no policy within
      ``upper_total_scope`` does better.
    upper_total_scope: what ``upper_total`` (and the history's optimistic bounds) bound:
      ``"game"``, every policy; ``"given_first"``, only the policies whose first guess is the
      fixed one (``first``) or one of the listed ``openings`` — the game's optimum may be
      lower.
    proven_optimal: ``evaluation.total_guesses`` is *the game's* optimum, certified exactly:
      the certificate holds and its claim is unconditional (a search from the initial state,
      openings that cover every first guess up to symmetry such as ``puzzle.openings``, or a
      policy that solves every secret with its first guess).
    proven_given_first: ``evaluation.total_guesses`` is optimal among the policies whose
      first guess is the fixed one (or one of the openings), certified exactly; true
      whenever ``proven_optimal`` is.
    simulations, nodes, seconds: work done (nodes summed over the batch of trees).
    history: ``(simulations, seconds, bound_total, upper_total)`` after every chunk.
    phases: seconds per phase — ``setup_s`` (memory estimate, compilation, initial trees),
      ``first_chunk_s`` (the first chunk, its compilation included), ``search_s`` (every
      chunk), ``extract_s`` (policies read off the trees and evaluated), ``certify_s`` (the
      exact certificates), ``device_s`` (the chunks after the first, from dispatch to
      results) and ``host_share``: of those chunks' time, the share spent on host work
      (reading bounds, regrowing trees, progress) while the device idles; ``exact_s``
      where the exact search of the whole game solved it (no tree searched:
      :func:`jaxsearch.guessing.exact_game.exact_first`).
    memory: the run's memory estimate (:class:`MemoryEstimate`), or ``None``.
    trees: the final search trees, one batch of one tree per root (numpy arrays, leading
      axis 1; with openings, every opening's sub-problems in order), e.g. to draw
      (``jaxsearch.viz.draw(result.trees[0], path)``); ``None`` where nothing was searched
      (a first guess that solves every secret).
    subproblems: with a fixed first guess (or openings), ``(proven, total)``: how many of
      the chosen opening's feedback sub-problems are certified solved optimally by the
      policy found (:func:`certify`); ``None`` otherwise.
    resumed_from_simulations: the simulations per tree of the checkpoint this run went on
      from (``resume``); 0 for a run started afresh.
    opening_rows: with a fixed first guess (or openings), ``(start, stop)``: the rows of
      ``trees`` that hold the exported first guess's feedback sub-problems, in the order of
      :func:`opening_roots`; ``None`` from one tree.
    root: with the search over first guesses (``solve_puzzle(root=...)``), what it did
      (:class:`jaxsearch.guessing.root.RootReport`: the first guesses visited, how many of the
      game's first guesses are shown unable to beat the policy and how many are open);
      ``None`` otherwise. ``trees`` are then the exported first guess's.
  """

  policy: dict
  evaluation: policy_file.Evaluation
  bound_total: float
  upper_total: Optional[float]
  proven_optimal: bool
  simulations: int
  nodes: int
  seconds: float
  history: list
  memory: Optional[MemoryEstimate] = None
  subproblems: Optional[tuple[int, int]] = None
  trees: Any = None
  phases: dict = dataclasses.field(default_factory=dict)
  proven_given_first: bool = False
  upper_total_scope: str = "game"
  resumed_from_simulations: int = 0
  opening_rows: Optional[tuple[int, int]] = None
  root: Optional[RootReport] = None


def result_of(puzzle, outcome: Outcome, unconditional: bool) -> SolveResult:
  """The :class:`SolveResult` of an ``outcome``: what it proves, for the game
  (``unconditional``: the way searched every first guess) or given its first guesses."""
  proven, evaluation = outcome.proven, outcome.evaluation
  # Every secret costs at least one guess: a policy whose total is the number of secrets
  # solves each with its first guess, and no policy of the game does better.
  if evaluation.total_guesses == len(puzzle.secrets):
    unconditional = proven = True
  # The achievable bound is the exported policy's exact total where that is better; "proven"
  # comes from the exact certificate, never from comparing the float totals.
  bound_total = min(outcome.bound_total, float(evaluation.total_guesses))
  # The certificate shows that no policy within the bound's scope does better: the
  # optimistic bound meets. (The search over first guesses bounds the game, so only a proof
  # for the game moves its bound.)
  upper_total = outcome.upper_total
  if proven and (outcome.root is None or unconditional):
    upper_total = float(evaluation.total_guesses)
  return SolveResult(policy=outcome.policy, evaluation=evaluation, bound_total=bound_total,
                     upper_total=upper_total, proven_optimal=bool(proven and unconditional),
                     proven_given_first=bool(proven),
                     upper_total_scope=("game" if unconditional or outcome.root is not None
                                        else "given_first"),
                     simulations=outcome.simulations, nodes=outcome.nodes,
                     seconds=outcome.seconds, history=outcome.history, memory=outcome.memory,
                     subproblems=outcome.subproblems, trees=outcome.trees,
                     phases=outcome.phases,
                     resumed_from_simulations=int(outcome.resumed_from),
                     opening_rows=outcome.opening_rows, root=outcome.root)


def covers_every_opening(puzzle, openings: Sequence[str]) -> bool:
  """Whether ``openings`` hold a first guess of every class of first guesses up to the game's
  symmetries (``puzzle.openings``), so that the best of them is the game's best."""
  return puzzle.openings is not None and set(puzzle.openings) <= set(openings)
