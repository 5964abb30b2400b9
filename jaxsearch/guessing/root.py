"""The first guess searched too: a root decision over openings, above batches of sub-problems.

From the empty board a guessing game has thousands of first guesses (Wordle: 14,855), each
leaving about 150 feedback sub-problems. One tree from the empty board spends a simulation on
a single path through one of them. Here the root is a decision of its own, made the way AVTS
makes one at any node (AVTS; docs/algorithms.md §2), and every first guess it visits is searched
as :func:`jaxsearch.guessing.solve_puzzle` searches a fixed one: its feedbacks' sub-problems as
one batch of trees.

* **Estimator and progressive widening.** The first guesses are activated one at a time in
  the order of the game's estimator (q̂1 at the initial state); whenever the root picks the
  newest one (the only one not yet visited), the next is activated. A first guess whose exact
  one-step bound (``puzzle.exact.action_totals``: integers) shows it cannot beat the best
  policy held is skipped, and counted as ruled out.
* **Values.** A visited first guess's q̂2 is one guess plus its sub-problem trees' root
  values, per secret (minus the expected number of guesses); an unvisited one has q̂1.
* **Debiasing.** The root keeps AVTS's per-visit bias and variance statistics
  (:mod:`jaxsearch.debias`): each visit records how the visited opening's value changed, and
  q̂3 = q̂2 plus the expected drift still to come, so that a visited opening and the
  estimator's optimistic q̂1 of an unvisited one compare fairly.
* **Thompson sampling.** Each root decision draws ``q̃ ~ N(q̂3, σ²(n))`` for every active
  first guess and visits the best draw.
* **A visit** runs ``visit_chunks`` chunks of the sub-problem search (the solver's rule,
  :mod:`jaxsearch.solve.chunked`) on that first guess's trees, going on from where its last visit
  stopped.

Memory: at most ``live_openings`` first guesses hold trees at once, each ``max_nodes //
live_openings`` nodes (:class:`~jaxsearch.solve.options.SolveOptions`) shared out between its
trees (each tree at least :func:`subproblem_min_nodes`); the run's estimate, which counts
``live_openings`` batches of the most feedbacks a first guess can leave
(:meth:`RootOptions.most_trees`, whichever first guesses are visited), is checked before the
first trees are allocated (:func:`jaxsearch.memory.check_memory`). When a new first guess
needs trees, the live one with the worst q̂3 (never the one holding the best policy) is
retired: it keeps its figures and is not visited again. Each batch is padded to a multiple of ``pad_rows`` trees
(repeats of its smallest sub-problem, weight 0), so that first guesses with similar numbers
of feedbacks share one compiled program.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch import debias
from jaxsearch.memory import PuzzleSizes, check_memory, estimate_from_sizes
from jaxsearch.solve import chunked
from jaxsearch.guessing.finish import (Outcome, RunProgress, certify_saved, corrected_policy,
                                    opening_policy, settle_saved)
from jaxsearch.solve.options import SolveOptions
from jaxsearch.guessing.subproblems import meets, opening_roots, subproblem_min_nodes
from jaxsearch.solve.tree_reader import secrets_in


@dataclasses.dataclass(frozen=True)
class RootOptions:
  """How the first guess is searched (see the module docstring).

  Attributes:
    visit_chunks: chunks of the sub-problem search per root visit.
    live_openings: first guesses holding trees at once (at least 2); the node budget is
      shared out between them.
    pad_rows: each first guess's batch of sub-problem trees is padded to a multiple of this.
    num_buckets: the root's debias statistics' visit buckets (the last absorbs the tail).
  """

  visit_chunks: int = 4
  live_openings: int = 2
  pad_rows: int = 32
  num_buckets: int = 16

  def __post_init__(self):
    for name, least in (("visit_chunks", 1), ("live_openings", 2), ("pad_rows", 1),
                        ("num_buckets", 1)):
      value = getattr(self, name)
      if not isinstance(value, int) or value < least:
        raise ValueError(f"RootOptions.{name} must be an int >= {least}, got {value!r}")

  def most_trees(self, outcomes: int, secrets: int) -> int:
    """The most trees the live first guesses hold at once, in a game of ``outcomes``
    feedbacks (the solved one included) and ``secrets`` secrets: ``live_openings`` batches
    of the most feedbacks a first guess can leave, padded to ``pad_rows`` (Wordle: 2 × 256).
    The run's memory estimate counts them, whichever first guesses it visits."""
    rows = -(-max(min(outcomes - 1, secrets), 1) // self.pad_rows) * self.pad_rows
    return rows * self.live_openings


@dataclasses.dataclass(frozen=True)
class OpeningRecord:
  """One first guess the root search visited.

  Attributes:
    guess: its name. visits: root visits. simulations: per sub-problem tree.
    bound_total: the achievable bound of its trees, in total guesses (a concrete policy's).
    upper_total: its optimistic bound in total guesses (no policy opening so does better),
      or ``None``. estimate_total: its last value estimate (q̂2), in total guesses.
    retired: its trees were dropped to make room for another first guess.
  """

  guess: str
  visits: int
  simulations: int
  bound_total: float
  upper_total: Optional[float]
  estimate_total: float
  retired: bool


@dataclasses.dataclass(frozen=True)
class RootReport:
  """What the search over first guesses did (``SolveResult.root``).

  Attributes:
    openings: every first guess it visited, in the order activated.
    visits: root decisions made.
    first_guesses: the game's first guesses (every action).
    ruled_out: of them, how many are shown exactly unable to beat the exported policy: never
      useful (the same feedback for every secret), or an exact one-step bound (integers) at
      least its total, or certified by the search's trees.
    open: the others, apart from the exported policy's own first guess: not shown.
  """

  openings: tuple[OpeningRecord, ...]
  visits: int
  first_guesses: int
  ruled_out: int
  open: int


class _Opening:
  """One activated first guess: its sub-problems, figures and (while live) search loop."""

  def __init__(self, action: int, name: str, outcomes, states, sizes, estimate: float):
    self.action, self.name, self.outcomes = action, name, list(outcomes)
    self.states, self.sizes = states, np.asarray(sizes, np.float64)
    self.estimate = estimate  # q̂2 (q̂1 until visited): minus expected guesses per secret
    self.loop: Optional[chunked.ChunkedSearch] = None
    self.visits, self.seconds, self.retired, self.done = 0, 0.0, False, False
    self.bound_total, self.upper_total = np.inf, None
    self.phases = {"first_chunk_s": 0.0, "device_s": 0.0}
    self.simulations = 0  # per tree
    self.iterations = 0  # simulations summed over its real trees (not the padding)
    self.evaluations = 0  # nodes its real trees hold (each an evaluated state)

  @property
  def rows(self) -> range:
    """The trees' rows that hold real sub-problems (the padding comes after)."""
    return range(len(self.outcomes))

  def count(self) -> None:
    """Updates :attr:`evaluations` from the live trees (the padding's left out)."""
    loop, real = self.loop, len(self.outcomes)
    open_rows = np.asarray(loop.rows) < real
    self.evaluations = int(loop.num_nodes[open_rows].sum()) + sum(
        int(np.asarray(tree.num_nodes).sum()) for row, tree in loop.kept.items() if row < real)

  def record(self, num_secrets: int) -> OpeningRecord:
    return OpeningRecord(guess=self.name, visits=self.visits,
                         simulations=self.simulations,
                         bound_total=float(self.bound_total),
                         upper_total=None if self.upper_total is None
                         else float(self.upper_total),
                         estimate_total=float(-self.estimate * num_secrets),
                         retired=self.retired)


class RootSearch:
  """The search over first guesses (see the module docstring); :meth:`run` searches,
  :attr:`openings` holds what it found.

  Args:
    puzzle: the :class:`jaxsearch.guessing.Puzzle`.
    options: how the first guess is searched (:class:`RootOptions`).
    solve_options: how each first guess's sub-problems are searched
      (:class:`~jaxsearch.solve.options.SolveOptions`: its ``max_nodes`` shared out between
      the live first guesses' trees, its ``memory`` the whole run's).
  """

  def __init__(self, puzzle, options: RootOptions, solve_options: SolveOptions):
    self.puzzle, self.options, self.solve_options = puzzle, options, solve_options
    self.num_secrets = len(puzzle.secrets)
    self.min_nodes = subproblem_min_nodes(puzzle.game.num_outcomes)
    self.key = jax.random.PRNGKey(solve_options.search.seed)
    self.stats = debias.empty(options.num_buckets)
    self.openings: list[_Opening] = []
    self.visits = 0
    self.q1 = root_action_values(puzzle)
    self.lower, useful = _one_step_bounds(puzzle)
    finite = np.isfinite(self.q1) & useful
    self.order = [int(a) for a in np.argsort(-self.q1, kind="stable") if finite[a]]
    self.activated = 0
    self.memory = None  # the run's estimate, made with its first batch of trees

  @property
  def incumbent(self) -> float:
    """The best achievable total held (a concrete policy's), ``inf`` before any."""
    return min((o.bound_total for o in self.openings), default=np.inf)

  def best_live(self) -> Optional[_Opening]:
    live = [o for o in self.openings if o.loop is not None]
    return min(live, key=lambda o: o.bound_total) if live else None

  def game_upper(self) -> float:
    """A lower bound on the game's optimum in total guesses: the least of every first
    guess's (its exact one-step bound, or a visited one's search bound where higher)."""
    lower = self.lower.astype(np.float64)
    for opening in self.openings:
      if opening.upper_total is not None:
        lower[opening.action] = max(lower[opening.action], opening.upper_total)
    return float(lower[np.isfinite(self.q1)].min())

  def _activate(self) -> bool:
    """Activates the next first guess by q̂1 that may still beat the incumbent; whether one
    was left."""
    while self.activated < len(self.order):
      action = self.order[self.activated]
      self.activated += 1
      if meets(self.incumbent, float(self.lower[action])):
        continue  # it can at best tie with the policy held
      name = self.puzzle.guess_names[action]
      outcomes, states = opening_roots(self.puzzle, name)
      sizes = [_size(self.puzzle, s) for s in states]
      self.openings.append(_Opening(action, name, outcomes, states, sizes,
                                    float(self.q1[action])))
      return True
    return False

  def _select(self) -> Optional[_Opening]:
    """Thompson sampling over the active first guesses still searched (``None``: none)."""
    active = [o for o in self.openings if not (o.retired or o.done)]
    if not active:
      return None
    debiased, visits = self._debiased(active)
    spread = jnp.sqrt(debias.variance(self.stats, visits))
    key = jax.random.fold_in(jax.random.fold_in(self.key, 1), self.visits)
    draws = debiased + spread * jax.random.normal(key, (len(active),))
    return active[int(jnp.argmax(draws))]

  def _debiased(self, openings: list) -> tuple[jax.Array, jax.Array]:
    """``(q̂3 f32[n], visits i32[n])`` of ``openings``: q̂2 plus the drift still to come."""
    visits = jnp.asarray([o.visits for o in openings], jnp.int32)
    estimates = jnp.asarray([o.estimate for o in openings], jnp.float32)
    return estimates + debias.correction(self.stats, visits), visits

  def _make_live(self, opening: _Opening) -> None:
    """Gives ``opening`` a batch of trees, retiring another first guess if need be."""
    live = [o for o in self.openings if o.loop is not None]
    if len(live) >= self.options.live_openings:
      best = self.best_live()
      spare = [o for o in live if o is not best]
      worst = spare[int(jnp.argmin(self._debiased(spare)[0]))]
      worst.loop, worst.retired = None, True
    pad = self.options.pad_rows
    rows = -(-len(opening.states) // pad) * pad
    # The padding repeats the smallest sub-problem: its tree is soon solved and stays small.
    smallest = opening.states[int(np.argmin(opening.sizes))]
    states = opening.states + [smallest] * (rows - len(opening.states))
    roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    weights = np.zeros(rows)
    weights[:len(opening.sizes)] = -opening.sizes
    # The node budget shared out between the live first guesses, then between their trees.
    tree_options = self.solve_options.for_trees(rows * self.options.live_openings,
                                                self.min_nodes)
    loop = chunked.ChunkedSearch(self.puzzle, roots, weights, tree_options)
    key = jax.random.fold_in(self.key, opening.action)
    if self.memory is None:  # the first batch: check the whole run's memory up front
      sizes = PuzzleSizes.of(self.puzzle)
      self.memory = estimate_from_sizes(sizes, self.solve_options,
                                        self.options.most_trees(sizes.outcomes, sizes.secrets))
      check_memory(self.memory, self.solve_options.capacity.memory)
    loop.memory = self.memory
    loop.begin(loop.init(loop.tables, key, roots))
    opening.loop = loop

  def _visit(self, opening: _Opening) -> None:
    """One root visit: chunks of ``opening``'s sub-problem search, then its figures and the
    root's debias statistics."""
    if opening.loop is None:
      self._make_live(opening)
    loop, key = opening.loop, jax.random.fold_in(self.key, opening.action)
    loop.before, loop.start = opening.seconds, time.perf_counter()
    for _ in range(self.options.visit_chunks):
      real = np.asarray(loop.rows) < len(opening.outcomes)
      opening.iterations += self.solve_options.search.chunk * int(real.sum())
      proven = chunked.run_chunk(loop, key, opening.phases, None, None, meets)
      if proven or not loop.regrow(key, meets):
        opening.done = True
        break
    opening.seconds, opening.simulations = loop.elapsed(), loop.simulations
    opening.count()
    opening.bound_total = self.num_secrets + float(np.nansum(loop.bound))
    opening.upper_total = (None if loop.upper is None else
                           self.num_secrets + float(np.sum(loop.upper)))
    old = opening.estimate
    opening.estimate = -(self.num_secrets + float(np.nansum(loop.value))) / self.num_secrets
    opening.visits += 1
    self.stats = debias.record(self.stats, jnp.int32(opening.visits),
                               jnp.float32(opening.estimate - old), None, centred=False)
    if opening.upper_total is not None and meets(self.incumbent, opening.upper_total) and (
        opening is not self.best_live()):
      opening.done = True  # its optimistic bound cannot beat the policy held

  def run(self, seconds: float, max_simulations: Optional[int] = None, on_visit=None):
    """Searches for ``seconds`` more, until ``max_simulations`` (:meth:`simulations`) or
    until nothing is left to search; a later call goes on. ``on_visit``
    gets the progress dict after every visit. Returns this call's history ``[(simulations,
    seconds, bound, upper)]``."""
    started, history = time.perf_counter(), []
    if not self.openings:
      self._activate()
    while True:
      opening = self._select()
      if opening is None and not self._activate():
        break
      if opening is None:
        continue
      if opening.visits == 0:
        self._activate()  # progressive widening: the newest was picked
      self._visit(opening)
      self.visits += 1
      simulations = self.simulations()
      elapsed = time.perf_counter() - started
      figures = (simulations, elapsed, self.incumbent, self.game_upper())
      history.append(figures)
      if on_visit is not None:
        on_visit({"simulations": simulations, "seconds": elapsed, "bound": figures[2],
                  "upper": figures[3], "nodes": self.nodes(), "proven": False,
                  "opening": opening.name})
      if elapsed >= seconds or (max_simulations is not None and
                                simulations >= max_simulations):
        break
    return history

  def simulations(self) -> int:
    """Simulations per tree, summed over every first guess visited (retired ones too)."""
    return sum(o.simulations for o in self.openings)

  def nodes(self) -> int:
    """Nodes the live trees hold (the padding included)."""
    return sum(o.loop.nodes() for o in self.openings if o.loop is not None)

  def evaluations(self) -> int:
    """Estimator evaluations so far: nodes of every first guess's real trees, the retired
    ones' included."""
    return sum(o.evaluations for o in self.openings)

  def _ruled_out_by_bounds(self, total: int) -> np.ndarray:
    """``bool[A]``: first guesses shown exactly unable to beat ``total`` — never useful, or
    an exact one-step bound of ``total`` or more."""
    return (~np.isfinite(self.q1)) | (self.lower >= total)

  def release_unless_provable(self, best: _Opening, total: float) -> None:
    """Drops the trees of the live first guesses other than ``best`` (memory for the
    extraction and the certificates) unless certifying them could complete a proof for the
    game: unless every first guess that is not live is shown by its exact one-step bound to
    need ``total`` or more. A ``total`` below the policy's (a lower bound on it) drops them
    only where the policy's own total would too."""
    ruled = self._ruled_out_by_bounds(total)
    for opening in self.openings:
      if opening.loop is not None:
        ruled[opening.action] = True
    if ruled.all():
      return
    for opening in self.openings:
      if opening is not best and opening.loop is not None:
        opening.loop = None  # not retired: it was live at the end, its figures stand

  def report(self, total: int, chosen: int, certified: dict) -> RootReport:
    """The :class:`RootReport` once the exported policy's exact ``total`` is known (its
    first guess ``chosen``); ``certified`` names the visited first guesses (the chosen one
    included) certified unable to do better than ``total``."""
    ruled = self._ruled_out_by_bounds(total)
    for action, shown in certified.items():
      ruled[action] |= shown
    ruled_out = int(ruled.sum())
    return RootReport(openings=tuple(o.record(self.num_secrets) for o in self.openings),
                      visits=self.visits, first_guesses=len(self.q1), ruled_out=ruled_out,
                      open=int(len(self.q1) - ruled_out - (0 if ruled[chosen] else 1)))


def _size(puzzle, state) -> int:
  """The number of secrets a state holds."""
  return len(secrets_in(np.asarray(state.remaining), len(puzzle.secrets)))


def root_action_values(puzzle) -> np.ndarray:
  """``f64[A]`` the estimator's q̂1 of every first guess (minus expected guesses per secret;
  ``-inf`` for guesses it rules out or illegal ones)."""
  state = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  estimate = puzzle.estimator(None, jax.random.PRNGKey(0), state)
  values = np.asarray(estimate.action_values[0], np.float64)
  legal = np.asarray(puzzle.game.legal_actions(puzzle.initial_state), bool)
  return np.where(legal, values, -np.inf)


def _one_step_bounds(puzzle) -> tuple[np.ndarray, np.ndarray]:
  """``(totals int64[A], useful bool[A])``: every first guess's exact one-step bound in total
  guesses, and whether it can ever be optimal (:meth:`ExactBounds.action_totals`); without
  exact bounds, zeros and all True (nothing ruled out)."""
  num_actions = puzzle.game.num_actions
  if puzzle.exact is None:
    return np.zeros(num_actions, np.int64), np.ones(num_actions, bool)
  totals, useful = puzzle.exact.action_totals(np.arange(len(puzzle.secrets)),
                                               puzzle.initial_state)
  return np.asarray(totals, np.int64), np.asarray(useful, bool)


def solve_root(puzzle, root: RootOptions, options: SolveOptions,
                progress: RunProgress) -> Outcome:
  """The first guess searched too (:class:`RootSearch`), for ``options.budget`` and within
  ``progress.clock``; its :class:`RootReport` in ``Outcome.root``. ``progress.on_chunk``
  gets the progress after every root visit."""
  search = RootSearch(puzzle, root, options)
  started = time.perf_counter()
  seconds = min(options.budget.seconds, progress.clock.search_left())
  history = search.run(seconds, options.budget.max_simulations, progress.on_chunk)
  searched = time.perf_counter() - started
  best = search.best_live()
  if best is None:  # nothing could be searched: the game has no first guess worth one
    raise ValueError("solve_puzzle: no first guess left to search")
  # The other live first guesses' trees go before the extraction where no total the policy
  # can have would let them complete a proof (a policy that opens with ``best`` needs at
  # least its optimistic bound, a float sum: one guess of slack), so that they do not add to
  # the extraction's memory.
  search.release_unless_provable(best, search.game_upper() if best.upper_total is None
                                 else best.upper_total - 1.0)
  gc.collect()
  progress.estimate = search.memory
  progress.extracting()
  trees = best.loop.final_trees()
  started = time.perf_counter()
  evaluation, policy, sub_totals = opening_policy(puzzle, best.name, best.outcomes, trees,
                                                   best.rows)
  extract_s = time.perf_counter() - started
  search.release_unless_provable(best, evaluation.total_guesses)
  started = time.perf_counter()
  deadline = progress.clock.certify_deadline()
  settled = settle_saved(puzzle, trees, dict(enumerate(sub_totals)), deadline, None, progress)
  policy, evaluation = corrected_policy(puzzle, policy, evaluation, best.outcomes, 0, settled)
  certified = [one.proven for one in settled.values()]
  total = evaluation.total_guesses
  report = search.report(total, best.action, {
      best.action: all(certified),
      **_others_certified(puzzle, search, best, total, deadline, progress)})
  phases = {"setup_s": 0.0, "search_s": searched, "extract_s": extract_s,
            "certify_s": time.perf_counter() - started,
            "first_chunk_s": sum(o.phases["first_chunk_s"] for o in search.openings),
            "device_s": sum(o.phases["device_s"] for o in search.openings)}
  phases["host_share"] = (max(searched - phases["first_chunk_s"] - phases["device_s"], 0.0)
                          / max(searched - phases["first_chunk_s"], 1e-9))
  # ``proven``: optimal given the first guess; the report says whether for the game too.
  return Outcome(policy=policy, evaluation=evaluation, bound_total=search.incumbent,
                 upper_total=search.game_upper(), proven=all(certified),
                 simulations=search.simulations(), nodes=search.nodes(), seconds=searched,
                 history=history, phases=phases, memory=search.memory, trees=trees,
                 subproblems=(int(sum(certified)), len(certified)),
                 opening_rows=(0, len(best.rows)), root=report)


def _others_certified(puzzle, search: RootSearch, best: _Opening, total: int,
                      deadline: float, progress: RunProgress) -> dict:
  """``{action: bool}``: which live first guesses other than ``best``, not already ruled out
  by their exact one-step bound, are certified on their trees to need ``total`` or more."""
  others = [o for o in search.openings if o is not best and o.loop is not None
            and not search.lower[o.action] >= total]
  progress.certifying(deadline, more=len(others))
  return {o.action: certify_saved(puzzle, o.loop.final_trees(), o.rows, total,
                               len(puzzle.secrets), deadline, None, o.name, progress)
          for o in others}
