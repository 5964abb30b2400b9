"""Guessing games ("find the secret") as the solver sees them, and their solve.

A :class:`Puzzle` is the protocol through which a guessing game plugs into the solver: its JAX
game and estimator, and the names, scoring and header of its exported policies. The games
build their own (``games.mastermind.puzzle``, ``games.wordle.puzzle``); this module knows none
of them. Guesses cost 1 each: a root's value is minus its expected number of guesses, so the
figures here are totals of guesses over the root's secrets.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch import policy_file
from jaxsearch.game import Estimator, Game
from jaxsearch.memory import MemoryEstimate
from jaxsearch.solve import checkpoint as checkpoint_lib
from jaxsearch.solve import loop
from jaxsearch.solve.extract import _remaining, extract_policy
from jaxsearch.solve.finish import (  # noqa: F401  (evaluate: part of this module's interface)
    _certified, _corrected, _named, _opening_policy, _settle, evaluate)
from jaxsearch.solve.root import RootOptions, RootReport, _solve_root
from jaxsearch.solve.subproblems import (  # noqa: F401  (part of this module's interface)
    meets, opening_roots, subproblem_min_nodes)


@dataclasses.dataclass(frozen=True)
class Puzzle:
  """A guessing game as the solver sees it (built by the game's module, e.g.
  ``games.mastermind.puzzle``).

  Attributes:
    name: the game's name in policy file headers (``"mastermind"``, ``"wordle"``).
    game, estimator: the JAX game (states hold the remaining secrets as a bitset
      ``remaining``, and ``solved``) and its action-value estimator.
    secrets: the secrets in state-bit order.
    guess_names: the name of every action (a code or a word).
    outcome_name: feedback index -> feedback key of the export format.
    solved_outcome: the all-correct feedback.
    score: ``(guess, secret) -> feedback key``, for exact evaluation.
    valid_guesses: allowed guesses for evaluation (``None``: the secrets).
    header: the export file's header (:mod:`jaxsearch.policy_file`).
    initial_state: the unbatched state before any guess.
    table: ``u8[S, G]`` (numpy) feedback index of guess ``g`` for secret ``s``.
    guess_of_secret: ``int[S]`` (numpy) the action that guesses each secret.
    greedy_guess: ``int[n] secrets -> action``, the game's greedy guess for a set of
      remaining secrets (by index): the policy that completes the exported one below the
      searched nodes.
    openings: first guesses that cover every first guess up to the game's symmetries, or
      ``None``.
    tables: large arrays the game and estimator read (a pytree), or ``None``. With ``bind``,
      the solver passes them to its compiled programs as arguments instead of letting
      ``game``/``estimator`` close over them (a closed-over array is embedded in every
      compiled program as a constant).
    bind: ``tables -> (game, estimator)``, the same pair built over the given (traced)
      tables, or ``None`` to use ``game`` and ``estimator`` as they are.
    exact: the game's admissible bounds in exact integers (an object with ``node_total(n)``
      and ``action_totals(secrets, state)``), which :func:`certify` checks a proof of
      optimality with; ``None``: nothing is ever claimed proven.
  """

  name: str
  game: Game
  estimator: Estimator
  secrets: tuple[str, ...]
  guess_names: Sequence[str]
  outcome_name: Callable[[int], str]
  solved_outcome: int
  score: Callable[[str, str], str]
  valid_guesses: Optional[Sequence[str]]
  header: dict
  initial_state: Any
  table: np.ndarray
  guess_of_secret: np.ndarray
  greedy_guess: Callable[[np.ndarray], int]
  openings: Optional[tuple[str, ...]] = None
  tables: Any = None
  bind: Optional[Callable[[Any], tuple[Game, Estimator]]] = None
  exact: Any = None


@dataclasses.dataclass
class SolveResult:
  """What :func:`solve_puzzle` found.

  Attributes:
    policy: the exported decision tree (a :mod:`jaxsearch.policy_file` node).
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
      (reading bounds, regrowing trees, progress) while the device idles.
    memory: the run's memory estimate (:class:`MemoryEstimate`), or ``None``.
    trees: the final batch of search trees (numpy arrays, leading ``[B]``; with openings,
      every opening's sub-problems in order), e.g. to draw (:func:`jaxsearch.viz.draw`);
      ``None`` where nothing was searched (a first guess that solves every secret).
    subproblems: with a fixed first guess (or openings), ``(proven, total)``: how many of
      the chosen opening's feedback sub-problems are certified solved optimally by the
      policy found (:func:`certify`); ``None`` otherwise.
    resumed_from_simulations: the simulations per tree of the checkpoint this run went on
      from (``resume``); 0 for a run started afresh.
    opening_rows: with a fixed first guess (or openings), ``(start, stop)``: the rows of
      ``trees`` that hold the exported first guess's feedback sub-problems, in the order of
      :func:`opening_roots`; ``None`` from one tree.
    root: with the search over first guesses (``solve_puzzle(root=...)``), what it did
      (:class:`jaxsearch.solve.root.RootReport`: the first guesses visited, how many of the
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


def solve(puzzle: Puzzle, roots=None, *, extract: bool = True, **options):
  """Searches a guessing game until proven optimal, out of time, simulations or nodes.

  Args:
    puzzle: the game (e.g. ``games.mastermind.puzzle(4, 6)``).
    roots: ``[B]`` root states (default: the initial state, ``B = 1``); a batch of
      sub-problems is searched as one batch of trees.
    extract: extract every root's policy (``False``: ``policies`` is ``None``; use
      :func:`extract_policy` on the roots wanted).
    seconds: wall-clock budget (checked between chunks; default 60).
    max_simulations: budget per tree (default: none).
    chunk: simulations per jitted call (default 128).
    max_nodes, num_slots: tree capacity ``N`` (default 100,000) and slots per node ``K``
      (default 64; ``None``: every action; a cutoff ``K < A`` keeps the top-``K`` guesses by
      q̂1 and forgoes the proof at nodes where it cut).
    bound_slots: of the ``K`` slots, how many hold the best action bounds instead of the best
      q̂1 (:class:`jaxsearch.search.SearchConfig`): what a proof through cut nodes needs.
    max_chance: chance records per tree (``C``; default ``max_nodes // 2``, ``// 4`` for
      games with at least 64 outcomes). See :class:`SearchConfig`.
    memory: bytes the run may use (default: the memory available now). A run whose
      estimate (:func:`estimate_memory`) exceeds it raises :class:`MemoryBudgetError`
      before anything is compiled.
    max_depth: the longest path a simulation descends (static ``D``; default the game's
      ``max_length``, else :data:`DEFAULT_MAX_DEPTH`).
    seed: PRNG seed. selection: AVTS selection rule (default Thompson sampling).
    variance: AVTS variance model.
    proof_every: where the game has an optimistic bound, every ``proof_every``-th chunk runs
      the proof-directed rule (:func:`jaxsearch.selection.optimistic`) on the same trees, the
      others ``selection``; 0 never. The default, 1, runs only the proof rule.
    on_chunk: called after every chunk with a dict of progress figures.
    combine: ``(bound f64[B], upper f64[B] | None) -> (bound, upper)`` totals shown to
      ``on_chunk`` and used to stop once proven (default: sums over the batch).
    devices: split the batch of trees over devices (:mod:`jaxsearch.sharding`).
    checkpoint, checkpoint_seconds: a :class:`jaxsearch.solve.checkpoint.Checkpoint` the
      search's state is saved to every ``checkpoint_seconds`` of search (default 10; 0:
      after every chunk) and at the end, and resumed from (see :func:`loop.run`).
  Returns:
    ``(found, trees)``: ``found`` is a dict — ``policies`` (one exported policy node per
    root), ``bound`` and ``upper`` (``f64[B]`` totals per root), ``sizes`` (secrets per
    root), ``proven`` (by ``combine``'s totals), ``simulations``, ``nodes``, ``seconds``,
    ``memory``, ``history``, ``resumed_from``; ``trees`` is the final batch or, where the
    open sub-problems were moved into larger trees, a list with one batch of one tree per
    root (:func:`jaxsearch.solve.loop.run`).
  """
  if roots is None:
    roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  sizes = np.array([len(_remaining(np.asarray(b), len(puzzle.secrets)))
                    for b in np.asarray(roots.remaining)])
  found, trees = loop.run(puzzle, roots, weights=-sizes.astype(np.float64), meets=meets,
                          **options)
  found["sizes"] = sizes
  started = time.perf_counter()
  found["policies"] = ([extract_policy(puzzle, trees, b) for b in range(len(sizes))]
                       if extract else None)
  found["phases"]["extract_s"] = time.perf_counter() - started
  return found, trees


def _solve_from_start(puzzle: Puzzle, kwargs: dict, certify_seconds: float):
  """One tree from the initial state: ``(found, trees, policy, evaluation, bound_total,
  upper_total, proven, subproblems)``."""
  found, trees = solve(puzzle, **kwargs)
  found["history"] = [(sims, secs, float(bound.sum()),
                       None if upper is None else float(upper.sum()))
                      for sims, secs, bound, upper in found["history"]]
  policy = found["policies"][0]
  upper_total = None if found["upper"] is None else float(found["upper"].sum())
  started = time.perf_counter()
  evaluation = evaluate(puzzle, policy)
  found["phases"]["extract_s"] += time.perf_counter() - started
  started = time.perf_counter()
  settled = _settle(puzzle, trees, {0: evaluation.total_guesses},
                    time.monotonic() + certify_seconds, kwargs.get("checkpoint"))[0]
  if settled.policy is not None:  # the exact search found better than the tree
    policy = _named(puzzle, settled.policy)
    evaluation = evaluate(puzzle, policy)
  found["phases"]["certify_s"] = time.perf_counter() - started
  return (found, trees, policy, evaluation, float(found["bound"].sum()), upper_total,
          settled.proven, None)


def _best_opening(puzzle, openings, groups, offsets, found, trees):
  """``(evaluation, policy, index, sub_totals)`` of the best opening by exact evaluation.
  Openings go in order of their achievable bound; one whose optimistic bound cannot beat the
  best policy evaluated so far is proven no better and is not extracted."""
  num_secrets = len(puzzle.secrets)
  opening_bounds = [float(found["bound"][a:b].sum()) for a, b in zip(offsets, offsets[1:])]
  best = None
  for index in np.argsort(opening_bounds, kind="stable"):
    guess, (outcomes, _) = openings[index], groups[index]
    if best is not None and found["upper"] is not None and meets(
        best[0].total_guesses, num_secrets + found["upper"][
            offsets[index]:offsets[index + 1]].sum()):
      continue
    evaluated, candidate, sub_totals = _opening_policy(
        puzzle, guess, outcomes, trees, range(offsets[index], offsets[index + 1]))
    if best is None or evaluated.total_guesses < best[0].total_guesses:
      best = (evaluated, candidate, index, sub_totals)
  return best


def _solved_by_first_guess(puzzle: Puzzle, guess: str):
  """What :func:`_solve_from_start` returns, for a first guess that solves every secret (only
  possible with one secret): no search, no tree; one guess per secret is the least any policy
  needs, so it is optimal."""
  started = time.perf_counter()
  policy = {"guess": guess, "children": {}}
  evaluation = evaluate(puzzle, policy)
  total = float(evaluation.total_guesses)
  found = {"simulations": 0, "nodes": 0, "seconds": 0.0, "history": [], "memory": None,
           "phases": {"extract_s": time.perf_counter() - started, "certify_s": 0.0}}
  return found, None, policy, evaluation, total, total, True, (0, 0)


def _solve_openings(puzzle: Puzzle, openings: Sequence[str], kwargs: dict,
                    certify_seconds: float):
  """Every opening's feedback sub-problems in one batch of trees (see :func:`solve_puzzle`);
  returns what :func:`_solve_from_start` does."""
  num_secrets = len(puzzle.secrets)
  openings = list(openings)
  groups = [opening_roots(puzzle, guess) for guess in openings]
  for guess, (outcomes, _) in zip(openings, groups):
    if not outcomes:  # it solves every secret (a game of one secret): nothing to search
      return _solved_by_first_guess(puzzle, guess)
  states = [state for _, opening_states in groups for state in opening_states]
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  # ``max_nodes`` is the budget of the whole batch, shared out between the trees.
  kwargs["max_nodes"] = max(kwargs.get("max_nodes", 100_000) // len(states),
                            subproblem_min_nodes(puzzle.game.num_outcomes))
  offsets = np.cumsum([0] + [len(outcomes) for outcomes, _ in groups])

  def totals(bound, upper):
    """Per opening: every secret pays the first guess, the sub-problems' totals come on
    top. The achievable bound is the best opening's; the optimistic one too (no policy
    beats every opening's bound)."""
    bounds = [num_secrets + bound[a:b].sum() for a, b in zip(offsets, offsets[1:])]
    uppers = (None if upper is None else
              [num_secrets + upper[a:b].sum() for a, b in zip(offsets, offsets[1:])])
    return float(min(bounds)), None if uppers is None else float(min(uppers))

  found, trees = solve(puzzle, roots, combine=totals, extract=False, **kwargs)
  found["history"] = [(sims, secs) + totals(bound, upper)
                      for sims, secs, bound, upper in found["history"]]
  started = time.perf_counter()
  trees = jax.tree.map(np.asarray, trees)
  evaluation, policy, chosen, sub_totals = _best_opening(puzzle, openings, groups, offsets,
                                                         found, trees)
  found["phases"]["extract_s"] += time.perf_counter() - started
  started = time.perf_counter()
  # Which of the chosen opening's sub-problems are solved optimally (exact certificates, one
  # process per core); where the exact search finds a better policy than the tree's, it
  # replaces it.
  deadline, store = time.monotonic() + certify_seconds, kwargs.get("checkpoint")
  a, b = offsets[chosen], offsets[chosen + 1]
  found["opening_rows"] = (int(a), int(b))
  settled = _settle(puzzle, trees, {row: sub_totals[row - a] for row in range(a, b)},
                    deadline, store)
  policy, evaluation = _corrected(puzzle, policy, evaluation, groups[chosen][0], a, settled)
  certified = {row: one.proven for row, one in settled.items()}
  subproblems = (int(sum(certified.values())), int(b - a))
  bound_total, upper_total = totals(found["bound"], found["upper"])
  # Optimal (given the openings) when no opening can do better than the policy found: the
  # chosen one's sub-problems each at their optimum, and every other one certified.
  proven = all(certified.values()) and all(
      _certified(puzzle, trees, range(a, b), evaluation.total_guesses, num_secrets, deadline,
                 store, f"opening {index}")
      for index, (a, b) in enumerate(zip(offsets, offsets[1:])) if index != chosen)
  found["phases"]["certify_s"] = time.perf_counter() - started
  return (found, trees, policy, evaluation, bound_total, upper_total, proven, subproblems)


def _open_checkpoint(puzzle: Puzzle, openings, directory, resume: bool):
  """The :class:`checkpoint_lib.Checkpoint` of a :func:`solve_puzzle` run (``None``
  without ``directory``), its fingerprint naming the puzzle and the openings."""
  if directory is None:
    if resume:
      raise ValueError("solve_puzzle: resume needs a checkpoint directory")
    return None
  search_secrets = getattr(puzzle.exact, "search_secrets", None)
  identity = {"puzzle": puzzle.name,
              "secrets": checkpoint_lib.digest("\n".join(map(str, puzzle.secrets))),
              "guesses": checkpoint_lib.digest("\n".join(map(str, puzzle.guess_names))),
              "openings": None if openings is None else list(openings),
              "exact_search": None if search_secrets is None else int(search_secrets)}
  return checkpoint_lib.Checkpoint(directory, resume=resume, identity=identity)


def solve_puzzle(puzzle: Puzzle, first: Optional[str] = None,
                 openings: Optional[Sequence[str]] = None, certify_seconds: float = 600.0,
                 checkpoint=None, resume: bool = False, root: Optional[RootOptions] = None,
                 **kwargs) -> SolveResult:
  """Solves the whole puzzle, in one of four ways:

  * default: one tree from the initial state;
  * ``root`` (a :class:`jaxsearch.solve.root.RootOptions`): the first guess is searched
    too, as a decision of its own (AVTS's estimator order, progressive widening, debiasing
    and Thompson sampling) above one batch of trees per visited first guess, each tree one
    of its feedbacks' sub-problems (:mod:`jaxsearch.solve.root`); ``result.root`` says which
    first guesses it visited and how many of the game's first guesses it shows unable to
    beat the policy found;
  * ``first``: the first guess is fixed and every feedback's sub-problem is a tree of one
    batch;
  * ``openings``: the same for several first guesses at once (all their sub-problems in one
    batch of trees, ``max_nodes`` shared out); the best opening by exact evaluation wins.

  What is proven depends on the way. From the initial state, or with openings that cover
  every first guess up to symmetry (``puzzle.openings``, or a list holding them all), the
  certificate is about the game: ``proven_optimal``, and ``upper_total_scope == "game"``.
  With a fixed first guess, or openings that do not cover every first guess, it is only about
  the policies that open that way: ``proven_given_first`` (optimal given the first guess),
  ``upper_total_scope == "given_first"``, and ``proven_optimal`` stays ``False`` — the
  game's optimum may be lower. (A first guess that solves every secret, as in a game of one
  secret, is optimal outright.)

  After the search, the certificates (:func:`certify`) may ask the game's exact search of
  small sets for up to ``certify_seconds``; what they cannot show by then is not claimed.
  ``kwargs`` go to :func:`solve`. Returns a :class:`SolveResult` whose figure is the exact
  evaluation of the exported policy.

  With ``checkpoint`` (a directory), the search's state is saved there as it goes (every
  ``checkpoint_seconds`` of search, default 10, and at its end), then each certificate as it
  completes; with ``resume``, a run killed at any point goes on from what was saved and ends
  as the run never stopped would have (same simulations budget: the same trees and result).
  ``seconds`` and ``max_simulations`` count the search of every run. See
  :mod:`jaxsearch.solve.checkpoint`.

  Raises:
    ValueError: ``openings`` is empty, or ``first`` (an opening) is not an allowed guess;
      ``resume`` without ``checkpoint``; ``checkpoint`` (or ``devices``) with ``root``.
    CheckpointError: ``checkpoint`` holds a run's state and ``resume`` is false
      (:class:`CheckpointExists`), or the state of another problem or other options
      (:class:`CheckpointMismatch`, named), or cannot be read.
  """
  if first is not None:
    openings = [first]
  if openings is not None:
    openings = list(openings)
    if not openings:
      raise ValueError("solve_puzzle: openings is empty; give at least one first guess, or "
                       "openings=None to search from the initial state")
  report = None
  if openings is None and root is not None:
    if checkpoint is not None or resume:
      raise ValueError("solve_puzzle: a checkpoint is not supported by the search over first "
                       "guesses (root=...); fix the first guess (first=...) or search one "
                       "tree (root=None)")
    outcome, report = _solve_root(puzzle, root, kwargs, certify_seconds)
    unconditional = report.open == 0
  else:
    kwargs["checkpoint"] = _open_checkpoint(puzzle, openings, checkpoint, resume)
    if openings is None:
      outcome = _solve_from_start(puzzle, kwargs, certify_seconds)
      unconditional = True
    else:
      outcome = _solve_openings(puzzle, openings, kwargs, certify_seconds)
      unconditional = covers_every_opening(puzzle, openings)
  found, trees, policy, evaluation, bound_total, upper_total, proven, subproblems = outcome
  # Every secret costs at least one guess: a policy whose total is the number of secrets
  # solves each with its first guess, and no policy of the game does better.
  if evaluation.total_guesses == len(puzzle.secrets):
    unconditional = proven = True
  # The achievable bound is the exported policy's exact total where that is better; "proven"
  # comes from the exact certificate, never from comparing the float totals.
  bound_total = min(bound_total, float(evaluation.total_guesses))
  # The certificate shows that no policy within the bound's scope does better: the
  # optimistic bound meets. (The search over first guesses bounds the game, so only a proof
  # for the game moves its bound.)
  if proven and (report is None or unconditional):
    upper_total = float(evaluation.total_guesses)
  return SolveResult(policy=policy, evaluation=evaluation, bound_total=bound_total,
                     upper_total=upper_total, proven_optimal=bool(proven and unconditional),
                     proven_given_first=bool(proven),
                     upper_total_scope=("game" if unconditional or report is not None
                                        else "given_first"),
                     simulations=found["simulations"], nodes=found["nodes"],
                     seconds=found["seconds"], history=found["history"],
                     memory=found.get("memory"), subproblems=subproblems,
                     trees=None if trees is None else jax.tree.map(np.asarray, trees),
                     phases=found["phases"],
                     resumed_from_simulations=int(found.get("resumed_from", 0)),
                     opening_rows=found.get("opening_rows"), root=report)


def covers_every_opening(puzzle: Puzzle, openings: Sequence[str]) -> bool:
  """Whether ``openings`` hold a first guess of every class of first guesses up to the game's
  symmetries (``puzzle.openings``), so that the best of them is the game's best."""
  return puzzle.openings is not None and set(puzzle.openings) <= set(openings)
