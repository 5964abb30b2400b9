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
from jaxsearch.solve import chunked


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
  assert chunked.read_record(record)["num_nodes"].tolist() == [int(grown.num_nodes[0])]
