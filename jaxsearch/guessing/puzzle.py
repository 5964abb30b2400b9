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

from jaxsearch.enums import SolveMethod, coerce
from jaxsearch.game import Estimator, Game
from jaxsearch.guessing import exact_game
from jaxsearch.memory import MemoryBudgetError, PuzzleSizes, check_memory, estimate_from_sizes
from jaxsearch.solve import checkpoint as checkpoint_lib
from jaxsearch.solve import chunked
from jaxsearch.guessing.certificates import CertificateGame, IntegerBounds
from jaxsearch.guessing.extract import extract_policy
from jaxsearch.guessing.finish import (  # noqa: F401  (evaluate: part of this module's interface)
    Outcome, RunProgress, certify_saved, corrected_policy, evaluate, exported_policy,
    opening_policy, quiet_progress, settle_saved)
from jaxsearch.solve.options import Checkpointing, SolveOptions
from jaxsearch.guessing.result import SolveResult, covers_every_opening, result_of
from jaxsearch.guessing.root import RootOptions, solve_root
from jaxsearch.guessing.subproblems import (  # noqa: F401  (part of this module's interface)
    meets, opening_roots, subproblem_min_nodes)
from jaxsearch.solve.tree_reader import secrets_in


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
    header: the export file's header (:mod:`jaxsearch.guessing.policy_file`).
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
    exact: the game's admissible bounds in exact integers
      (:class:`jaxsearch.guessing.certificates.IntegerBounds`: ``node_total(n)`` and
      ``action_totals(secrets, state)``), which :func:`certify` checks a proof of
      optimality with, and optionally an exact search of small sets
      (:class:`jaxsearch.guessing.certificates.ExactSearch`); ``None``: nothing is ever claimed
      proven.
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
  exact: Optional[IntegerBounds] = None


def _options(where: str, options: Optional[SolveOptions], keywords: dict) -> SolveOptions:
  """``options`` (default :class:`SolveOptions`) with the flat ``keywords`` over them."""
  if options is None:
    options = SolveOptions()
  elif not isinstance(options, SolveOptions):
    raise TypeError(f"{where}: options must be a SolveOptions, got {options!r}")
  return options.override(where, **keywords) if keywords else options


@dataclasses.dataclass
class PuzzleSearch(chunked.SearchResult):
  """What :func:`solve` found: the search's figures and trees
  (:class:`jaxsearch.solve.chunked.SearchResult`; figures in total guesses per root), and

  Attributes:
    sizes: ``int[B]`` secrets per root.
    policies: one exported policy per root, or ``None`` (``extract=False``).
  """

  sizes: np.ndarray
  policies: Optional[list]


def solve(puzzle: Puzzle, roots=None, *, options: Optional[SolveOptions] = None,
          extract: bool = True, combine: Optional[Callable] = None,
          on_chunk: Optional[Callable[[dict], None]] = None,
          store: Optional[checkpoint_lib.Checkpoint] = None,
          deadline: Optional[float] = None, **keywords) -> PuzzleSearch:
  """Searches a guessing game until proven optimal, out of time, simulations or nodes.

  Args:
    puzzle: the game (e.g. ``games.mastermind.puzzle(4, 6)``).
    roots: ``[B]`` root states (default: the initial state, ``B = 1``); a batch of
      sub-problems is searched as one batch of trees, ``options.capacity.max_nodes`` nodes
      each.
    options: the :class:`~jaxsearch.solve.options.SolveOptions`; flat ``keywords``
      (``seconds=60``, ``chunk=128``, ``max_nodes=100_000``, ``num_slots=64``,
      ``bound_slots``, ``max_chance``, ``max_depth``, ``memory``, ``seed``, ``selection``,
      ``variance``, ``proof_every``, ``max_simulations``, ``devices``, ``checkpoint``...:
      :meth:`SolveOptions.from_keywords`) replace its fields. A run whose memory estimate
      (:func:`estimate_memory`) exceeds ``memory`` raises :class:`MemoryBudgetError` before
      anything is compiled.
    extract: extract every root's policy (``False``: ``policies`` is ``None``; use
      :func:`extract_policy` on the roots wanted).
    combine: ``(bound f64[B], upper f64[B] | None) -> (bound, upper)`` totals shown to
      ``on_chunk`` and used to stop (default: sums over the batch).
    on_chunk: called after every chunk with a dict of progress figures.
    store: an opened :class:`jaxsearch.solve.checkpoint.Checkpoint` to save the search to
      (:func:`solve_puzzle` passes its own); by default one is opened where
      ``options.checkpointing`` names a directory.
    deadline: the search also stops once ``time.monotonic()`` passes it (``None``: only
      ``options.budget`` stops it).
  Returns:
    A :class:`PuzzleSearch`: per root its ``policies``, ``bound`` and ``upper`` (``f64[B]``
    totals), ``sizes``; ``proven`` (by ``combine``'s totals), the work done, and ``trees``:
    one batch of one tree per root.
  Raises:
    TypeError: an unknown keyword. ValueError: a bad option (before any work).
  """
  options = _options("solve", options, keywords)
  if roots is None:
    roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  sizes = np.array([len(secrets_in(np.asarray(b), len(puzzle.secrets)))
                    for b in np.asarray(roots.remaining)])
  own = store is None and options.checkpointing.directory is not None
  if store is None:
    store = _open_checkpoint(puzzle, None, options.checkpointing)
  try:
    searched = chunked.run(puzzle, roots, options, weights=-sizes.astype(np.float64),
                        meets=meets, combine=combine, on_chunk=on_chunk, checkpoint=store,
                        deadline=deadline)
  finally:
    if own:  # its lock, held for the search
      store.close()
  started = time.perf_counter()
  policies = ([extract_policy(puzzle, searched.trees, b) for b in range(len(sizes))]
              if extract else None)
  searched.phases["extract_s"] = time.perf_counter() - started
  return PuzzleSearch(**vars(searched), sizes=sizes, policies=policies)


def _work(searched: chunked.SearchResult, history: list) -> dict:
  """The work a search did, as :class:`Outcome` holds it (``history`` in total guesses)."""
  return dict(simulations=searched.simulations, nodes=searched.nodes,
              seconds=searched.seconds, history=history, phases=searched.phases,
              memory=searched.memory, resumed_from=searched.resumed_from,
              trees=searched.trees)


def _solve_from_start(puzzle: Puzzle, options: SolveOptions,
                      progress: Optional[RunProgress], store) -> Outcome:
  """One tree from the initial state."""
  progress = progress or quiet_progress()
  searched = solve(puzzle, options=options, on_chunk=progress.on_chunk, store=store,
                   extract=False, deadline=progress.clock.search_ends)
  history = [(sims, secs, float(bound.sum()), None if upper is None else float(upper.sum()))
             for sims, secs, bound, upper in searched.history]
  progress.estimate = searched.memory
  progress.extracting()
  started = time.perf_counter()
  policy = extract_policy(puzzle, searched.trees, 0)
  evaluation = evaluate(puzzle, policy)
  searched.phases["extract_s"] += time.perf_counter() - started
  started = time.perf_counter()
  deadline = progress.clock.certify_deadline()
  settled = settle_saved(puzzle, searched.trees, {0: evaluation.total_guesses}, deadline, store,
                    progress)[0]
  if settled.policy is not None:  # the exact search found better than the tree
    policy = exported_policy(puzzle, settled.policy)
    evaluation = evaluate(puzzle, policy)
  searched.phases["certify_s"] = time.perf_counter() - started
  return Outcome(policy=policy, evaluation=evaluation, bound_total=float(searched.bound.sum()),
                 upper_total=None if searched.upper is None else float(searched.upper.sum()),
                 proven=settled.proven, **_work(searched, history))


def _best_opening(puzzle, openings, groups, offsets, searched: PuzzleSearch):
  """``(evaluation, policy, index, sub_totals)`` of the best opening by exact evaluation.
  Openings go in order of their achievable bound; one whose optimistic bound cannot beat the
  best policy evaluated so far is proven no better and is not extracted."""
  num_secrets = len(puzzle.secrets)
  opening_bounds = [float(searched.bound[a:b].sum()) for a, b in zip(offsets, offsets[1:])]
  best = None
  for index in np.argsort(opening_bounds, kind="stable"):
    guess, (outcomes, _) = openings[index], groups[index]
    if best is not None and searched.upper is not None and meets(
        best[0].total_guesses, num_secrets + searched.upper[
            offsets[index]:offsets[index + 1]].sum()):
      continue
    evaluated, candidate, sub_totals = opening_policy(
        puzzle, guess, outcomes, searched.trees, range(offsets[index], offsets[index + 1]))
    if best is None or evaluated.total_guesses < best[0].total_guesses:
      best = (evaluated, candidate, index, sub_totals)
  return best


def _solved_by_first_guess(puzzle: Puzzle, guess: str) -> Outcome:
  """A first guess that solves every secret (only possible with one secret): no search, no
  tree; one guess per secret is the least any policy needs, so it is optimal."""
  started = time.perf_counter()
  policy = {"guess": guess, "children": {}}
  evaluation = evaluate(puzzle, policy)
  total = float(evaluation.total_guesses)
  return Outcome(policy=policy, evaluation=evaluation, bound_total=total, upper_total=total,
                 proven=True, simulations=0, nodes=0, seconds=0.0, history=[],
                 phases={"extract_s": time.perf_counter() - started, "certify_s": 0.0},
                 subproblems=(0, 0))


def _solve_openings(puzzle: Puzzle, openings: Sequence[str], options: SolveOptions,
                    progress: Optional[RunProgress], store) -> Outcome:
  """Every opening's feedback sub-problems in one batch of trees (see :func:`solve_puzzle`),
  ``options.capacity.max_nodes`` shared out between them."""
  progress = progress or quiet_progress()
  num_secrets = len(puzzle.secrets)
  openings = list(openings)
  groups = [opening_roots(puzzle, guess) for guess in openings]
  for guess, (outcomes, _) in zip(openings, groups):
    if not outcomes:  # it solves every secret (a game of one secret): nothing to search
      return _solved_by_first_guess(puzzle, guess)
  states = [state for _, opening_states in groups for state in opening_states]
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  tree_options = options.for_trees(len(states), subproblem_min_nodes(puzzle.game.num_outcomes))
  offsets = np.cumsum([0] + [len(outcomes) for outcomes, _ in groups])

  def totals(bound, upper):
    """Per opening: every secret pays the first guess, the sub-problems' totals come on
    top. The achievable bound is the best opening's; the optimistic one too (no policy
    beats every opening's bound)."""
    bounds = [num_secrets + bound[a:b].sum() for a, b in zip(offsets, offsets[1:])]
    uppers = (None if upper is None else
              [num_secrets + upper[a:b].sum() for a, b in zip(offsets, offsets[1:])])
    return float(min(bounds)), None if uppers is None else float(min(uppers))

  searched = solve(puzzle, roots, options=tree_options, combine=totals, extract=False,
                   on_chunk=progress.on_chunk, store=store, deadline=progress.clock.search_ends)
  history = [(sims, secs) + totals(bound, upper)
             for sims, secs, bound, upper in searched.history]
  progress.estimate = searched.memory
  progress.extracting()
  started = time.perf_counter()
  evaluation, policy, chosen, sub_totals = _best_opening(puzzle, openings, groups, offsets,
                                                         searched)
  searched.phases["extract_s"] += time.perf_counter() - started
  started = time.perf_counter()
  # Which of the chosen opening's sub-problems are solved optimally (exact certificates, one
  # process per core); where the exact search finds a better policy than the tree's, it
  # replaces it.
  deadline = progress.clock.certify_deadline()
  a, b = offsets[chosen], offsets[chosen + 1]
  progress.certifying(deadline, more=len(openings) - 1, say=False)  # the other openings
  settled = settle_saved(puzzle, searched.trees, {row: sub_totals[row - a] for row in range(a, b)},
                    deadline, store, progress)
  policy, evaluation = corrected_policy(puzzle, policy, evaluation, groups[chosen][0], a, settled)
  certified = {row: one.proven for row, one in settled.items()}
  bound_total, upper_total = totals(searched.bound, searched.upper)
  # Optimal (given the openings) when no opening can do better than the policy found: the
  # chosen one's sub-problems each at their optimum, and every other one certified.
  proven = all(certified.values()) and all(
      certify_saved(puzzle, searched.trees, range(a, b), evaluation.total_guesses, num_secrets,
                 deadline, store, f"opening {index}", progress)
      for index, (a, b) in enumerate(zip(offsets, offsets[1:])) if index != chosen)
  searched.phases["certify_s"] = time.perf_counter() - started
  return Outcome(policy=policy, evaluation=evaluation, bound_total=bound_total,
                 upper_total=upper_total, proven=proven,
                 subproblems=(int(sum(certified.values())), int(b - a)),
                 opening_rows=(int(a), int(b)), **_work(searched, history))


def _open_checkpoint(puzzle: Puzzle, openings, checkpointing: Checkpointing):
  """The :class:`checkpoint_lib.Checkpoint` of a run (``None`` without a directory), its
  fingerprint naming the puzzle and the openings."""
  if checkpointing.directory is None:
    return None
  game = CertificateGame.of(puzzle)
  identity = {"puzzle": puzzle.name,
              "secrets": checkpoint_lib.digest("\n".join(map(str, puzzle.secrets))),
              "guesses": checkpoint_lib.digest("\n".join(map(str, puzzle.guess_names))),
              # The header's sizes (pegs, colours, list lengths; not paths): what a
              # mismatch of the digests above means, in words.
              "rules": {k: v for k, v in puzzle.header.items() if type(v) is int},
              "openings": None if openings is None else list(openings),
              "exact_search": None if game is None else game.search_secrets}
  return checkpoint_lib.Checkpoint(checkpointing.directory, resume=checkpointing.resume,
                                   identity=identity)


def solve_puzzle(puzzle: Puzzle, first: Optional[str] = None,
                 openings: Optional[Sequence[str]] = None, *,
                 root: Optional[RootOptions] = None, options: Optional[SolveOptions] = None,
                 on_chunk: Optional[Callable[[dict], None]] = None,
                 on_phase: Optional[Callable[[dict], None]] = None,
                 started: Optional[float] = None,
                 method: SolveMethod | str = SolveMethod.AUTO, **keywords) -> SolveResult:
  """Solves the whole puzzle, in one of four ways:

  * default: one tree from the initial state;
  * ``root`` (a :class:`jaxsearch.guessing.root.RootOptions`): the first guess is searched
    too, as a decision of its own (AVTS's estimator order, progressive widening, debiasing
    and Thompson sampling) above one batch of trees per visited first guess, each tree one
    of its feedbacks' sub-problems (:mod:`jaxsearch.guessing.root`); ``result.root`` says which
    first guesses it visited and how many of the game's first guesses it shows unable to
    beat the policy found;
  * ``first``: the first guess is fixed and every feedback's sub-problem is a tree of one
    batch;
  * ``openings``: the same for several first guesses at once (all their sub-problems in one
    batch of trees, ``max_nodes`` shared out); the best opening by exact evaluation wins.
    Where they cover every first guess up to symmetry (Mastermind's ``puzzle.openings``),
    ``method`` ``"auto"`` (:class:`jaxsearch.enums.SolveMethod`, the default) first asks the
    game's exact search to solve the whole game (:func:`jaxsearch.guessing.exact_game.exact_first`:
    no tree; three quarters of the search's time at most), and searches the trees only where
    it does not prove the optimum by then (and always with a checkpoint); where the trees
    would not fit in ``memory``, it is given the whole search time and no tree is searched
    (the run is refused only if it finds no policy); ``"tree"``: the trees only.

  What is proven depends on the way. From the initial state, or with openings that cover
  every first guess up to symmetry (``puzzle.openings``, or a list holding them all), the
  certificate is about the game: ``proven_optimal``, and ``upper_total_scope == "game"``.
  With a fixed first guess, or openings that do not cover every first guess, it is only about
  the policies that open that way: ``proven_given_first`` (optimal given the first guess),
  ``upper_total_scope == "given_first"``, and ``proven_optimal`` stays ``False`` — the
  game's optimum may be lower. (A first guess that solves every secret, as in a game of one
  secret, is optimal outright.)

  How it searches is ``options`` (a :class:`~jaxsearch.solve.options.SolveOptions`), or its flat
  keywords (``solve_puzzle(puzzle, first="12", seconds=120, chunk=32, max_nodes=2000)``:
  :meth:`SolveOptions.from_keywords`), which replace the fields of ``options`` where both
  are given; they are validated before any work. After the search, the certificates
  (:func:`certify`) may ask the game's exact search of small sets for up to
  ``certify_seconds``; what they cannot show by then is not claimed. ``on_chunk`` is called
  with the progress after every chunk (after every visit of a first guess with ``root``).
  Returns a :class:`SolveResult` whose figure is the exact evaluation of the exported
  policy.

  With ``checkpoint`` (a directory), the search's state is saved there as it goes (every
  ``checkpoint_seconds`` of search, default 10, and at its end), then each certificate as it
  completes; with ``resume``, a run killed at any point goes on from what was saved and ends
  as the run never stopped would have (same simulations budget: the same trees and result).
  ``seconds`` and ``max_simulations`` count the search of every run. See
  :mod:`jaxsearch.solve.checkpoint`.

  With ``run_seconds`` (:class:`~jaxsearch.solve.options.Budget`) the whole call shares one
  budget, counted from ``started`` (``time.monotonic()``; default: the call): the search
  stops in time to leave the certificates their reserve, and they stop by its end
  (:meth:`Budget.clock <jaxsearch.solve.options.Budget.clock>`). ``on_phase`` is told of each
  phase after the search (:class:`jaxsearch.guessing.finish.RunProgress`). The memory estimate
  is checked (:class:`MemoryBudgetError`) before anything is compiled and before the
  checkpoint directory is made.

  Raises:
    TypeError: an unknown keyword.
    ValueError: a bad option; ``openings`` is empty, or ``first`` (an opening) is not an
      allowed guess; ``resume`` without ``checkpoint``; ``checkpoint`` (or ``devices``) with
      ``root``.
    CheckpointError: ``checkpoint`` holds a run's state and ``resume`` is false
      (:class:`CheckpointExists`), or the state of another problem or other options
      (:class:`CheckpointMismatch`, named), or cannot be read.
  """
  options = _options("solve_puzzle", options, keywords)
  method = coerce(SolveMethod, method, "solve_puzzle: method")
  progress = RunProgress(options.budget.clock(started), on_chunk, on_phase,
                         memory=options.capacity.memory)
  if first is not None:
    openings = [first]
  if openings is not None:
    openings = list(openings)
    if not openings:
      raise ValueError("solve_puzzle: openings is empty; give at least one first guess, or "
                       "openings=None to search from the initial state")
  # The exact search of the whole game may solve it without trees (method AUTO); where the
  # trees would not fit in memory, it is then the only way tried, and the run is refused
  # only if it does not find a policy.
  covers_game = openings is not None and covers_every_opening(puzzle, openings)
  exact_may_solve = (method is SolveMethod.AUTO and covers_game
                     and options.checkpointing.directory is None)
  trees_refused = None
  if root is None or openings is not None:
    try:
      check_memory(estimate_from_sizes(PuzzleSizes.of(puzzle), options,
                                       _batch(puzzle, openings)), options.capacity.memory)
    except MemoryBudgetError as error:
      if not exact_may_solve:
        raise
      trees_refused = error
  if openings is None and root is not None:
    for name, given in (("a checkpoint", options.checkpointing.directory is not None),
                        ("devices", options.devices is not None)):
      if given:
        raise ValueError(f"solve_puzzle: {name} is not supported by the search over first "
                         "guesses (root=...); fix the first guess (first=...) or search one "
                         "tree (root=None)")
    outcome = solve_root(puzzle, root, options, progress)
    unconditional = outcome.root.open == 0
  else:
    store = _open_checkpoint(puzzle, openings, options.checkpointing)
    try:  # the checkpoint's lock is held for the whole run, certificates included
      if openings is None:
        outcome = _solve_from_start(puzzle, options, progress, store)
        unconditional = True
      else:
        unconditional = covers_game
        outcome = None
        if exact_may_solve:
          outcome = exact_game.exact_first(puzzle, openings, options, progress,
                                           alone=trees_refused is not None)
        if outcome is None and trees_refused is not None:
          raise MemoryBudgetError(f"{trees_refused} (The exact search of the whole game, "
                                  "tried instead, found no policy in its time: more "
                                  "seconds may let it.)")
        if outcome is None:
          outcome = _solve_openings(puzzle, openings, options, progress, store)
    finally:
      if store is not None:
        store.close()
  return result_of(puzzle, outcome, unconditional)


def _batch(puzzle: Puzzle, openings) -> Optional[int]:
  """The trees a solve of ``openings`` searches (one per feedback of each but the solved
  one), or ``None`` for one tree from the start."""
  if openings is None:
    return None
  return max(sum(len(opening_roots(puzzle, guess)[0]) for guess in openings), 1)
