"""The solver's search loop: AVTS in chunks of simulations that continue the same trees.

:func:`run` searches a batch of root states of any :class:`jaxsearch.game.Game` with an
estimator, chunk after chunk, and after every chunk reads each root's two float bounds (the
achievable one, ``PolicyOutput.root_bound``, and the optimistic one, ``root_upper``). It stops
once they meet (a ``meets`` rule given by the caller), out of time, out of simulations, or
when every open tree is full. Proven roots then leave the batch and the open ones go on in
larger trees (:func:`_regrow`). It knows nothing of any particular game: a *problem* is any
object with ``game``, ``estimator``, ``tables`` and ``bind`` (:class:`Problem`, or
:class:`jaxsearch.guessing.Puzzle`). What it searches with is a
:class:`~jaxsearch.solve.options.SolveOptions`; every chunk's program is built from
:meth:`SolveOptions.search_config <jaxsearch.solve.options.SolveOptions.search_config>`.

Its result (:class:`SearchResult`) holds the final trees in one shape whatever happened to
them: a list with one batch of one tree per root (``trees[r]``: root ``r``'s), in numpy.

Memory: the trees stay on the device from chunk to chunk (each chunk's program takes them
over, donated), and the host reads one small record per chunk
(:func:`jaxsearch.solve.records.chunk_record`). A regrowth holds one set of trees, moved
array by array, and the proven roots' trees cut to what they allocated
(:mod:`jaxsearch.solve.regrowth`).

With a checkpoint (:mod:`jaxsearch.solve.checkpoint`) the loop's state is saved as it goes
and a killed run resumes from it: chunk ``i``'s key is ``fold_in(key, simulations before
it)``, so a resumed run draws the same keys and grows the same trees as one never stopped.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.memory import (MemoryEstimate, RUNTIME_BYTES, can_hold, check_memory,
                              working_bytes)
from jaxsearch.solve import checkpoint as checkpoint_lib
from jaxsearch.solve import records, regrowth
from jaxsearch.solve.options import SolveOptions

SLEEP_ENV = "JAXSEARCH_SOLVE_CHUNK_SLEEP"  # tests: seconds to sleep after each chunk


@dataclasses.dataclass(frozen=True)
class Problem:
  """What the loop searches: a game and its estimator.

  Attributes:
    game, estimator: the JAX game and its batched action-value estimator.
    tables: large arrays the game and estimator read (a pytree), or ``None``. With ``bind``
      the compiled programs take them as arguments instead of embedding them as constants.
    bind: ``tables -> (game, estimator)`` built over the given (traced) tables, or ``None``.
  """

  game: Game
  estimator: Estimator
  tables: Any = None
  bind: Optional[Callable[[Any], tuple[Game, Estimator]]] = None


@dataclasses.dataclass
class SearchResult:
  """What :func:`run` found.

  Attributes:
    bound, upper: ``f64[B]`` each root's achievable and optimistic figures (its float
      bounds times its weight); ``upper`` is ``None`` without an optimistic bound.
    proven: the figures meet (by the run's ``combine`` and ``meets``).
    simulations: simulations per tree, every run's (a resumed run's included).
    nodes: nodes of every tree together. seconds: search seconds, every run's.
    memory: the run's memory estimate (:class:`jaxsearch.memory.MemoryEstimate`).
    history: ``(simulations, seconds, bound f64[B], upper f64[B] | None)`` after every chunk.
    phases: this run's seconds: ``setup_s`` (memory estimate, compilation, initial trees),
      ``first_chunk_s`` (the first chunk, its compilation included), ``search_s`` (every
      chunk), ``device_s`` (the later chunks, from dispatch to results), ``host_share`` (the
      rest of the later chunks' time, spent on the host); with a checkpoint,
      ``checkpoint_s`` (the saves, part of ``search_s``).
    resumed_from: the simulations a resumed run went on from (0 for a fresh run).
    trees: the final trees, one batch of one tree per root (``trees[r]`` is root ``r``'s, a
      :class:`jaxsearch.tree.Tree` of numpy arrays with a leading axis of 1), whether or
      not the open roots moved into larger trees; a root that left the batch proven has its
      tree cut to the nodes and chance records it allocated (all that is ever read of it).
  """

  bound: np.ndarray
  upper: Optional[np.ndarray]
  proven: bool
  simulations: int
  nodes: int
  seconds: float
  memory: Optional[MemoryEstimate]
  history: list
  phases: dict
  resumed_from: int
  trees: list


def _program(problem, config, devices=None):
  """``(init, step)``, jitted: ``init(tables, key, roots) -> trees`` and
  ``step(tables, key, roots, trees) -> PolicyOutput`` of one search ``config``
  (a :class:`jaxsearch.search.SearchConfig`). The game and estimator are built inside the
  traced functions from ``tables`` (``problem.bind``), so the programs take the tables as
  inputs instead of embedding them; ``tables`` is ``None`` where the problem has no ``bind``
  (or the batch is split over ``devices``) and the closures are used as they are."""
  from jaxsearch import policies

  def search(tables):
    if tables is None or problem.bind is None:
      return policies.custom(problem.game, problem.estimator, config=config, devices=devices)
    game, estimator = problem.bind(tables)
    return policies.custom(game, estimator, config=config, devices=devices)

  def init(tables, key, roots):
    return search(tables).init_tree(None, key, roots)

  def step(tables, key, roots, trees):
    out = search(tables)(None, key, roots, trees)
    return out.tree, records.chunk_record(out)

  if devices is not None:  # the sharded search jits itself, per device
    return init, step
  # The trees are donated: each chunk writes its result into the previous chunk's buffers
  # instead of holding (and copying into) a second set of trees. Only the trees and the
  # chunk's record leave the program: the decision's other outputs are never computed.
  return jax.jit(init), jax.jit(step, donate_argnums=(3,))


def estimate_memory(problem, init, tables, key, roots) -> MemoryEstimate:
  """What a solve with the initialiser ``init`` (:func:`_program`) will hold, from the shapes
  of the trees it allocates (``jax.eval_shape``: nothing is computed)."""
  shapes = jax.eval_shape(init, tables, key, roots)
  trees = sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(shapes))
  nodes = int(shapes.nodes.visits.shape[0] * shapes.nodes.visits.shape[1])
  table_bytes = sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(problem.tables))
  # The trees are counted once: chunks write into the donated trees, and a regrowth moves
  # them array by array (ChunkedSearch.regrow; what it keeps more is checked then).
  return MemoryEstimate(trees=trees, per_node=trees / max(nodes, 1), tables=2 * table_bytes,
                        working=working_bytes(problem.game.num_actions),
                        runtime=RUNTIME_BYTES, nodes=nodes)


@functools.partial(jax.jit, donate_argnums=(1,))
def _regrow(trees, fresh, keep=None):
  """``trees`` (their rows ``keep``, ``int[B']``; all when ``None``) copied into the larger
  ``fresh`` trees (more nodes and chance records, ``B'`` rows): every index stays valid, the
  new entries are fresh. ``fresh`` is donated, so the result takes its memory; still, it
  holds the old trees and the new ones at once: the solver moves its trees array by array
  instead (:func:`jaxsearch.solve.regrowth.grow_leafwise`) and uses this only where that
  cannot be done."""
  if keep is not None:
    trees = jax.tree.map(lambda x: x[keep], trees)
  return jax.tree.map(
      lambda new, old: new.at[tuple(slice(0, size) for size in old.shape)].set(old),
      fresh, trees)


_PROGRAMS: dict = {}  # the most recent few compiled programs (see _cached_program)
_PROGRAM_CACHE_SIZE = 4


def _cached_program(problem, config, devices):
  """:func:`_program` of ``config``, or the programs built before for the same problem (the
  same game, estimator and binding objects), config and devices."""
  parts = (problem.game, problem.estimator, problem.bind)
  key = tuple(id(p) for p in parts) + (config, devices)
  try:
    found = _PROGRAMS.get(key)
  except TypeError:  # a config that cannot key a cache (an unhashable selection rule)
    return _program(problem, config, devices)
  if found is not None and all(a is b for a, b in zip(found[0], parts)):
    return found[1]
  programs = _program(problem, config, devices)
  if len(_PROGRAMS) >= _PROGRAM_CACHE_SIZE:
    _PROGRAMS.pop(next(iter(_PROGRAMS)))
  _PROGRAMS[key] = (parts, programs)
  return programs


def _sums(bound, upper):
  return float(bound.sum()), None if upper is None else float(upper.sum())


class ChunkedSearch:
  """The state of one :func:`run`: the trees searched now (roots ``rows`` of the batch),
  those of the roots that left the batch (``kept``), the counters and history, and the
  compiled programs (for the trees' current sizes: ``tree_options``, the run's ``options``
  with the larger trees' ``max_nodes`` and ``max_chance`` after a regrowth)."""

  def __init__(self, problem, roots, weights, options: SolveOptions):
    self.problem, self.options = problem, options
    self.devices = options.devices
    self.batch = int(jax.tree.leaves(roots)[0].shape[0])
    self.weights = np.asarray(weights, np.float64).reshape(self.batch)
    self.rows = np.arange(self.batch)
    self.kept: dict[int, Any] = {}
    self.roots, self.nodes_per_tree = roots, options.capacity.max_nodes
    self.bound = np.full(self.batch, np.nan)
    self.upper = None
    self.value = np.full(self.batch, np.nan)  # the roots' backed-up values, weighted
    self.simulations, self.chunks, self.history = 0, 0, []
    self.sizes: dict = {}  # the open trees' sizes after a regrowth ({}: the run's own)
    self.before, self.start = 0.0, time.perf_counter()  # earlier runs' search seconds; ours
    self.memory: Optional[MemoryEstimate] = None  # the run's estimate (regrowth checks it)
    self.init, self.step, self.proof_step = self.programs(options)
    self.tables = problem.tables if problem.bind is not None and self.devices is None else None

  def programs(self, tree_options: SolveOptions):
    """``(init, step, proof_step)`` for trees of ``tree_options``' sizes (compiled once per
    problem, config and devices in a process: a later run on the same problem reuses them)."""
    game = self.problem.game
    init, step = _cached_program(self.problem, tree_options.search_config(game), self.devices)
    proof_step = (_cached_program(self.problem, tree_options.search_config(game, proof=True),
                                  self.devices)[1]
                  if tree_options.proves(game) else None)
    return init, step, proof_step

  def begin(self, tree) -> None:
    """Takes ``tree`` (the open roots' trees, fresh or restored) as the trees to search, and
    reads their allocated nodes and chance records once (each chunk's record updates them
    after)."""
    self.tree, self.max_chance = tree, int(tree.max_chance)
    self.num_nodes = np.asarray(tree.num_nodes).astype(np.int32)
    self.num_chance = np.asarray(tree.num_chance).astype(np.int32)

  def advance(self, key, simulations: int, proof: bool) -> float:
    """One chunk on the current trees, which stay on the device; updates the per-root
    bounds and the trees' sizes from the chunk's record, its one device-to-host transfer
    (:func:`jaxsearch.solve.records.chunk_record`). Returns the seconds from the chunk's
    dispatch to its results (the device's share of a chunk: on a GPU a program with
    data-dependent loops runs within its dispatch, which waits on each loop's condition; the
    rest of a chunk's time is host work, during which the device idles)."""
    run = self.proof_step if proof else self.step
    started = time.perf_counter()
    self.tree, record = run(self.tables, jax.random.fold_in(key, simulations), self.roots,
                            self.tree)
    read = records.read_record(record)
    waited = time.perf_counter() - started
    self.num_nodes, self.num_chance = read["num_nodes"], read["num_chance"]
    weights = self.weights[self.rows]
    self.value[self.rows] = read["value"].astype(np.float64) * weights
    if read["bound"] is not None:
      self.bound[self.rows] = read["bound"].astype(np.float64) * weights
    if read["upper"] is not None:
      self.upper = np.zeros(self.batch) if self.upper is None else self.upper
      self.upper[self.rows] = read["upper"].astype(np.float64) * weights
    return waited

  def nodes(self) -> int:
    """Nodes of every tree, the open ones' and the kept ones' (read on the host)."""
    return int(self.num_nodes.sum()) + sum(
        int(np.asarray(t.num_nodes).sum()) for t in self.kept.values())

  def regrow(self, key, meets) -> bool:
    """Whether the search can go on: some open tree can still grow, or, every open tree
    being full, the proven roots leave the batch and the open ones move into larger trees
    (the node budget ``B × max_nodes`` shared among them; one recompile)."""
    max_nodes = self.options.capacity.max_nodes
    stuck = ((self.num_nodes + self.problem.game.num_outcomes > self.nodes_per_tree)
             | (self.num_chance >= self.max_chance))
    closed = np.array([self.upper is not None and meets(self.bound[r], self.upper[r])
                       for r in self.rows])
    open_stuck = stuck[~closed]
    if open_stuck.size == 0 or not np.all(open_stuck):
      return True
    larger = max_nodes * self.batch // max(int((~closed).sum()), 1)
    if not closed.any() or larger < 2 * self.nodes_per_tree or self.devices is not None:
      return False  # every open tree is full and there is no room to give them
    return self._move(key, closed, larger)

  def _move(self, key, closed: np.ndarray, larger: int) -> bool:
    """The regrowth itself (:meth:`regrow`): the ``closed`` roots' trees kept on the host cut
    to what they allocated, the others moved into trees of ``larger`` nodes array by array
    (:func:`jaxsearch.solve.regrowth.grow_leafwise`; in one program where that cannot be
    done). Only where what it holds beyond the run's estimate fits: the kept trees and, for
    a moment, two arrays (in one program, a second set of trees); else the search ends
    here, trees full."""
    tree, max_nodes = self.tree, self.options.capacity.max_nodes
    keep = np.flatnonzero(~closed)
    ratio = max(max_nodes // self.options.max_chance_for(self.problem.game), 1)
    sizes = dict(max_nodes=larger, max_chance=max(larger // ratio, 1))
    init, step, proof_step = self.programs(self.options.with_capacity(**sizes))
    roots = jax.tree.map(lambda x: x[keep], self.roots)
    spec = regrowth.fresh_spec(tree, jax.eval_shape(init, self.tables, key, roots))
    largest = max(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree))
    closed_rows = np.flatnonzero(closed)
    extra = regrowth.kept_bytes(tree, closed_rows, self.num_nodes, self.num_chance)
    extra += 2 * largest if spec is not None else int(tree.nbytes())
    if not can_hold(extra, self.memory, self.options.capacity.memory):
      return False
    for index, kept in zip(closed_rows, regrowth.kept_rows(tree, closed_rows, self.num_nodes,
                                                           self.num_chance)):
      self.kept[int(self.rows[index])] = kept
    self.rows, self.nodes_per_tree, self.sizes = self.rows[keep], larger, sizes
    self.roots, self.init, self.step, self.proof_step = roots, init, step, proof_step
    self.tree = None
    if spec is not None:
      grown = regrowth.grow_leafwise(tree, spec, jnp.asarray(keep))
    else:
      grown = _regrow(tree, init(self.tables, key, roots), jnp.asarray(keep))
    del tree
    self.begin(grown)
    return True

  def elapsed(self) -> float:
    """Search seconds so far: this run's and, resumed, the earlier runs'."""
    return self.before + time.perf_counter() - self.start

  def figures(self, combine, meets) -> tuple[float, Optional[float], bool]:
    """``(bound, upper, proven)``: the figures shown and whether they meet."""
    bound, upper = (combine or _sums)(self.bound, self.upper)
    return bound, upper, meets(bound, upper)

  def snapshot(self) -> checkpoint_lib.SearchState:
    """The state a checkpoint saves (the trees as they are; saved before the next chunk)."""
    return checkpoint_lib.SearchState(
        simulations=self.simulations, chunks=self.chunks, seconds=self.elapsed(),
        rows=self.rows, nodes_per_tree=self.nodes_per_tree, sizes=self.sizes,
        bound=self.bound, upper=self.upper, history=self.history, tree=self.tree,
        kept=self.kept)

  def restore(self, state: checkpoint_lib.SearchState, key) -> None:
    """Goes on from a saved ``state``: its counters and bounds, and its trees rebuilt on
    fresh ones of the saved sizes (compiled for them, as after the regrowth that made them)."""
    self.simulations, self.chunks, self.history = state.simulations, state.chunks, state.history
    self.before, self.bound, self.upper = state.seconds, state.bound, state.upper
    self.nodes_per_tree, self.sizes = state.nodes_per_tree, state.sizes
    if len(state.rows) != len(self.rows) or np.any(state.rows != self.rows):
      self.rows = np.asarray(state.rows)
      self.roots = jax.tree.map(lambda x: x[self.rows], self.roots)
    if self.sizes:
      self.init, self.step, self.proof_step = self.programs(
          self.options.with_capacity(**self.sizes))
    tree, self.kept = state.trees(self.init(self.tables, key, self.roots))
    self.begin(tree)

  def final_trees(self, release: bool = False) -> list:
    """One batch of one tree per root, in numpy: the kept ones and the open ones' rows.
    ``release``: the search is over, so each array's device buffer is freed as soon as it
    is copied, and the trees are never held twice (the run's memory estimate counts them
    once); the loop holds no trees after."""
    if not release:
      open_trees = jax.tree.map(np.asarray, self.tree)
    else:
      leaves, treedef = jax.tree.flatten(self.tree)
      self.tree = None
      host, copies = [], {}
      for index, leaf in enumerate(leaves):
        if id(leaf) not in copies:  # an array held twice is copied once
          copies[id(leaf)] = np.array(leaf)  # a copy: the buffer can go
          if isinstance(leaf, jax.Array):
            leaf.delete()
        host.append(copies[id(leaf)])
        leaves[index] = None
      open_trees = jax.tree.unflatten(treedef, host)
    final = [self.kept.get(r) for r in range(self.batch)]
    for index, r in enumerate(self.rows):
      final[int(r)] = jax.tree.map(lambda x: x[index:index + 1], open_trees)
    return final


def run(problem, roots, options: SolveOptions, *, weights,
        meets: Callable[[float, Optional[float]], bool],
        combine: Optional[Callable] = None, on_chunk: Optional[Callable[[dict], None]] = None,
        checkpoint: Optional[checkpoint_lib.Checkpoint] = None,
        deadline: Optional[float] = None) -> SearchResult:
  """Searches ``roots`` until ``meets``, out of time, simulations or nodes.

  Args:
    problem: a :class:`Problem` (or any object with its attributes).
    roots: ``[B]`` root states.
    options: the :class:`~jaxsearch.solve.options.SolveOptions` (``budget.seconds`` and
      ``max_simulations``, the trees' ``capacity``, the ``search`` rule, ``devices``;
      ``checkpointing.every_seconds`` with ``checkpoint``).
    weights: ``f64[B]``, each root's figures are its float bounds times its weight (a
      guessing game: minus its number of secrets, so that figures are total guesses).
    meets: ``(bound, upper) -> bool``, whether two figures prove a root (or, with
      ``combine``, the whole batch) solved; ``upper`` may be ``None``.
    combine: ``(bound f64[B], upper f64[B] | None) -> (bound, upper)`` figures shown to
      ``on_chunk`` and used to stop (default: sums over the batch).
    on_chunk: called after every chunk with a dict of progress figures (``simulations``,
      ``seconds``, ``bound``, ``upper``, ``nodes``, ``proven``).
    checkpoint: save the loop's state there (:class:`jaxsearch.solve.checkpoint.Checkpoint`)
      every ``options.checkpointing.every_seconds`` of search (0: after every chunk) and at
      the end; opened with ``resume``, go on from the state it holds (refused, naming what
      differs, if it was saved for other roots or options). The budgets count every run's
      search: ``seconds`` is the total search time, ``max_simulations`` the total
      simulations.
    deadline: the search also stops once ``time.monotonic()`` passes it (checked between
      chunks, like ``seconds``: the whole solve's budget,
      :meth:`~jaxsearch.solve.options.Budget.clock`), or ``None``.
  Returns:
    A :class:`SearchResult`.
  """
  if checkpoint is not None and options.devices is not None:
    raise ValueError("run: a checkpoint cannot be kept of a search split over devices")
  setup = time.perf_counter()
  loop = ChunkedSearch(problem, roots, weights, options)
  key = jax.random.PRNGKey(options.search.seed)
  memory_estimate = estimate_memory(problem, loop.init, loop.tables, key, roots)
  check_memory(memory_estimate, options.capacity.memory)
  loop.memory = memory_estimate
  saver = None if checkpoint is None else checkpoint_lib.SearchSaver(
      checkpoint, fingerprint(problem, roots, weights, options),
      options.checkpointing.every_seconds)
  state = None if saver is None else saver.load()
  if state is None:
    loop.begin(jax.block_until_ready(loop.init(loop.tables, key, roots)))
  else:
    loop.restore(state, key)
  loop.start = time.perf_counter()
  phases = {"setup_s": loop.start - setup, "first_chunk_s": 0.0, "device_s": 0.0}
  budget = options.budget

  def spent(proven: bool) -> bool:  # whether to stop
    return proven or loop.elapsed() >= budget.seconds or (
        budget.max_simulations is not None and loop.simulations >= budget.max_simulations) or (
        deadline is not None and time.monotonic() >= deadline)

  # Resumed: the saved state is that after a chunk; the loop goes on as it would have.
  stop = state is not None and (spent(loop.figures(combine, meets)[2])
                                or not loop.regrow(key, meets))
  while not stop:
    proven = run_chunk(loop, key, phases, on_chunk, combine, meets)
    stop = spent(proven)
    if saver is not None and (stop or saver.due(loop.elapsed())):
      saver.save(loop.snapshot())
    stop = stop or not loop.regrow(key, meets)
  if saver is not None and saver.chunks != loop.chunks:
    saver.save(loop.snapshot())  # the trees were full: the end, not yet saved
  if saver is not None:
    phases["checkpoint_s"] = saver.spent
  return _result(loop, phases, memory_estimate, combine, meets,
                 0 if state is None else state.simulations)


def run_chunk(loop: ChunkedSearch, key, phases: dict, on_chunk, combine, meets) -> bool:
  """One chunk of :func:`run` (the proof rule's where its turn comes): the search, the
  history, the progress; whether proven."""
  loop.chunks += 1
  proof = loop.options.proof_chunk(loop.problem.game, loop.chunks)
  waited = loop.advance(key, loop.simulations, proof)
  loop.simulations += loop.options.search.chunk
  elapsed = loop.elapsed()
  if phases["first_chunk_s"] == 0.0:  # this run's first chunk: its compilation happens here
    phases["first_chunk_s"] = time.perf_counter() - loop.start
  else:
    phases["device_s"] += waited
  upper = None if loop.upper is None else loop.upper.copy()
  loop.history.append((loop.simulations, elapsed, loop.bound.copy(), upper))
  bound, upper, proven = loop.figures(combine, meets)
  if on_chunk is not None:
    on_chunk({"simulations": loop.simulations, "seconds": elapsed, "bound": bound,
              "upper": upper, "nodes": loop.nodes(), "proven": proven})
  time.sleep(float(os.environ.get(SLEEP_ENV) or 0))  # a run slow enough to kill, in tests
  return proven


def _result(loop: ChunkedSearch, phases: dict, memory_estimate, combine, meets,
            resumed_from: int) -> SearchResult:
  """:func:`run`'s result, its phases completed."""
  searched = time.perf_counter() - loop.start
  phases["search_s"] = searched
  # After the first chunk (compilation), the share of the chunk loop spent on the host:
  # reading bounds, checking the budget, regrowing trees, reporting progress (0 where no
  # chunk ran: a resumed run whose budget was spent already).
  later = searched - phases["first_chunk_s"] if phases["first_chunk_s"] else 0.0
  phases["host_share"] = (later - phases["device_s"]) / later if later > 0 else 0.0
  return SearchResult(bound=loop.bound, upper=loop.upper,
                      proven=loop.figures(combine, meets)[2], simulations=loop.simulations,
                      nodes=loop.nodes(), seconds=loop.elapsed(), memory=memory_estimate,
                      history=loop.history, phases=phases, resumed_from=resumed_from,
                      trees=loop.final_trees(release=True))


def fingerprint(problem, roots, weights, options: SolveOptions) -> dict:
  """What a checkpoint of :func:`run` is a state of (JSON-able): the game's type and sizes,
  the roots and weights (digests), the options that shape the trees
  (:meth:`SolveOptions.tree_options`; not the budgets), the seed, the selection rule and
  ``proof_every``. A resumed run must match it."""
  game, selection = problem.game, options.search.selection
  rule = None if selection is None else {
      "name": selection.name, "needs_key": bool(selection.needs_key),
      "sees_inactive": bool(selection.sees_inactive),
      "reads_prior_probs": bool(selection.reads_prior_probs)}
  return {"game": f"{type(game).__module__}.{type(game).__qualname__}",
          "num_actions": int(game.num_actions), "num_outcomes": int(game.num_outcomes),
          "roots": checkpoint_lib.digest(roots),
          "weights": checkpoint_lib.digest(np.asarray(weights, np.float64)),
          "options": options.tree_options(game), "seed": int(options.search.seed),
          "selection": rule, "proof_every": int(options.search.proof_every)}
