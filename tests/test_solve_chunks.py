"""The solver's chunk loop as an accelerator sees it: one compiled program reused for every
chunk (no recompilation between chunks), the trees donated from chunk to chunk, and the phases
of a run (compilation, search, extraction, certificates, the host's share) reported."""

from __future__ import annotations

import math

import numpy as np

from jaxsearch.games import mastermind
from jaxsearch import guessing as guessing_lib
from jaxsearch import solve as solve_lib
from jaxsearch.guessing import report
from jaxsearch.solve import chunked, records


def test_chunks_reuse_one_compiled_program_and_report_their_phases():
  chunked._PROGRAMS.clear()
  puzzle = mastermind.puzzle(3, 3)
  result = guessing_lib.solve_puzzle(puzzle, chunk=1, max_simulations=6, seconds=60.0,
                                  max_nodes=2000, num_slots=None)
  assert result.simulations >= 3  # chunks of one simulation, until proven or six
  # One cache entry per compiled variant: a recompilation between chunks (a shape, dtype or
  # weak type that changes, a static argument rebuilt) would add one. The proof rule's step
  # runs every chunk by default; the selection rule's is built but not called.
  sizes = [programs[1]._cache_size() for _, programs in chunked._PROGRAMS.values()]
  assert max(sizes) == 1 and min(sizes) >= 0, sizes
  phases = result.phases
  assert set(phases) == {"setup_s", "first_chunk_s", "device_s", "search_s", "host_share",
                         "extract_s", "certify_s"}
  assert all(value >= 0 for value in phases.values())
  assert phases["search_s"] >= phases["first_chunk_s"] + phases["device_s"] - 1e-9
  assert 0.0 <= phases["host_share"] <= 1.0
  summary = report.summary(puzzle, result)
  assert summary["phases"].keys() == phases.keys()
  assert len(summary["history"]) == len(result.history) == result.simulations


def test_history_is_thinned_for_the_json_and_keeps_the_last_entry():
  history = [(s, s / 10, float(100 - s), None if s < 3 else float(50 + s))
             for s in range(1, 251)]
  history[0] = (1, 0.1, math.nan, None)  # no bound yet
  thinned = report._thinned(history, points=100)
  assert len(thinned) <= 101
  assert thinned[0] == [1, 0.1, None, None]
  assert thinned[-1] == [250, 25.0, -150.0, 300.0]
  sims = [entry[0] for entry in thinned]
  assert sims == sorted(sims) and np.all(np.diff(sims) > 0)


def test_a_chunk_takes_over_the_previous_trees_buffers():
  """The step donates its input trees: after a chunk the old trees' buffers are gone, so a
  run holds one set of trees, not two (Mastermind 4×6 peak memory 3.87 GB → 2.27 GB)."""
  import jax
  puzzle = mastermind.puzzle(2, 3)
  options = solve_lib.SolveOptions.from_keywords(chunk=2, max_nodes=200, num_slots=None)
  init, step = chunked._program(puzzle, options.search_config(puzzle.game))
  roots = jax.tree.map(lambda x: x[None], puzzle.initial_state)
  key = jax.random.PRNGKey(0)
  tables = puzzle.tables if puzzle.bind is not None else None
  trees = init(tables, key, roots)
  grown, record = step(tables, key, roots, trees)
  jax.block_until_ready(grown)
  assert all(leaf.is_deleted() for leaf in jax.tree.leaves(trees))
  assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(grown))
  assert int(grown.num_nodes[0]) > 1
  assert records.read_record(record)["num_nodes"].tolist() == [int(grown.num_nodes[0])]


class _OnTheDevice:
  """Stands for the trees between chunks: the host touching them fails the test."""

  def __getattr__(self, name):
    raise AssertionError(f"the host read the trees ({name}) between chunks")


def _counting_estimator(estimator, calls: list):
  """``estimator``, each call's states' ``remaining`` bitsets recorded as it runs (a
  callback: only the calls the compiled program makes, a branch not taken records none)."""
  import jax

  def estimate(params, key, states):
    jax.debug.callback(lambda remaining: calls.append(np.asarray(remaining)), states.remaining)
    return estimator(params, key, states)

  return estimate


def test_a_chunk_reads_one_small_record_and_leaves_the_trees_on_the_device(monkeypatch):
  """Between chunks the trees stay on the device: the host reads the chunk's record (one
  ``i32[6, B]`` array: bounds, values, nodes) and nothing of the trees, which each chunk
  passes to the next (a stand-in that fails when touched replaces them between chunks). No
  chunk evaluates the roots again (only the initialiser does), and no chunk recompiles."""
  import dataclasses
  import jax
  import jax.numpy as jnp
  from jaxsearch.guessing.subproblems import meets, opening_roots
  base = mastermind.puzzle(3, 3)
  calls = []
  puzzle = dataclasses.replace(
      base, estimator=_counting_estimator(base.estimator, calls),
      bind=lambda tables: (lambda game, estimator: (
          game, _counting_estimator(estimator, calls)))(*base.bind(tables)))
  _, states = opening_roots(puzzle, puzzle.openings[0])
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  batch = len(states)
  options = solve_lib.SolveOptions.from_keywords(chunk=1, max_nodes=400 * batch,
                                                 num_slots=None).for_trees(batch, 41)
  loop = chunked.ChunkedSearch(puzzle, roots, -np.ones(batch), options)
  key = jax.random.PRNGKey(0)
  loop.begin(loop.init(loop.tables, key, roots))
  held, compiled = {}, (loop.step, loop.proof_step)

  def guarded(program):
    def run(tables, key, roots, trees):
      if isinstance(trees, _OnTheDevice):
        trees = held.pop("trees")
      trees, record = program(tables, key, roots, trees)
      assert record.shape == (len(records.RECORD_ROWS), batch)
      held["trees"] = trees
      return _OnTheDevice(), record
    return run

  loop.step, loop.proof_step = guarded(loop.step), guarded(loop.proof_step)
  reads = []
  real_read = records.read_record
  monkeypatch.setattr(records, "read_record", lambda record: reads.append(1) or
                      real_read(record))
  phases = {"first_chunk_s": 0.0, "device_s": 0.0}
  for chunk in range(1, 4):
    chunked.run_chunk(loop, key, phases, lambda progress: None, None, meets)
    assert loop.regrow(key, meets)  # nothing full: the search goes on, the trees untouched
    assert len(reads) == chunk  # one record a chunk
  assert loop.simulations == 3 and loop.nodes() > batch
  # Each program compiled at most once (the proof rule's runs every chunk by default).
  assert max(program._cache_size() for program in compiled if program is not None) == 1
  jax.effects_barrier()
  roots_remaining = np.asarray(roots.remaining)
  evaluated = [c for c in calls if c.shape == roots_remaining.shape and
               np.array_equal(c, roots_remaining)]
  assert len(evaluated) == 1, "the roots were evaluated again"
  assert len(calls) > 1  # the chunks did evaluate their leaves
