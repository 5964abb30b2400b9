"""The solver's ``leaves_per_step``: validated once with the other options, decided by
backend and batch when not given, part of the search config and of a checkpoint's
fingerprint where it changes the trees, and a solve with several leaves per step reaching and
certifying the same optimum as with one."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import guessing as guessing_lib
from jaxsearch.games import mastermind
from jaxsearch.solve import SearchRule, SolveOptions, chunked
from jaxsearch.solve.options import (ACCELERATOR_STEP_WIDTH, MAX_DEFAULT_LEAVES,
                                     default_leaves_per_step)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_leaves_per_step_must_be_a_positive_int(bad):
  with pytest.raises(ValueError, match="leaves_per_step must be an int >= 1"):
    SolveOptions.from_keywords(leaves_per_step=bad)


def test_leaves_per_step_is_at_most_the_chunk():
  assert SearchRule(chunk=8, leaves_per_step=8).leaves_per_step == 8
  with pytest.raises(ValueError, match=r"leaves_per_step must be at most chunk \(8"):
    SolveOptions.from_keywords(chunk=8, leaves_per_step=9)
  # Checked once, where the options are built: a later override is checked again.
  options = SolveOptions.from_keywords(chunk=16, leaves_per_step=16, max_nodes=100)
  with pytest.raises(ValueError, match="at most chunk"):
    options.override(chunk=8)


def test_the_default_follows_the_backend_and_the_batch():
  assert all(default_leaves_per_step("cpu", batch) == 1 for batch in (None, 1, 52, 158))
  assert default_leaves_per_step("gpu", None) == MAX_DEFAULT_LEAVES == 16
  assert default_leaves_per_step("gpu", 1) == 16
  assert default_leaves_per_step("gpu", 52) == 16      # Mastermind 4×6's openings
  assert default_leaves_per_step("gpu", 158) == 4      # Wordle after tarse: 158 × 4 <= 1024
  assert default_leaves_per_step("tpu", 300) == 2
  assert default_leaves_per_step("gpu", ACCELERATOR_STEP_WIDTH + 1) == 1
  for batch in range(1, 3000, 7):  # a power of two that keeps the step within the width
    leaves = default_leaves_per_step("gpu", batch)
    assert leaves & (leaves - 1) == 0
    assert batch * leaves <= ACCELERATOR_STEP_WIDTH or leaves == 1
    assert batch * leaves * 2 > ACCELERATOR_STEP_WIDTH or leaves == MAX_DEFAULT_LEAVES


def test_the_default_is_decided_for_a_batch_and_capped_at_the_chunk(monkeypatch):
  options = SolveOptions.from_keywords(chunk=4, max_nodes=100_000)
  assert options.search.leaves_per_step is None
  assert options.leaves_for(52) == 1 and options.for_trees(52, 57).search.leaves_per_step == 1
  monkeypatch.setattr(SolveOptions, "backend", lambda self: "gpu")
  assert options.leaves_for(158) == 4 and options.leaves_for(52) == 4  # the chunk: 4
  wide = options.override(chunk=32)
  assert wide.leaves_for(52) == 16 and wide.leaves_for(500) == 2
  shared = wide.for_trees(52, 57)
  assert shared.search.leaves_per_step == 16 and shared.capacity.max_nodes == 100_000 // 52
  # Given, it is kept whatever the backend and batch.
  assert wide.override(leaves_per_step=3).for_trees(500, 57).search.leaves_per_step == 3


def test_search_config_and_fingerprint_carry_it_only_where_it_changes_the_trees():
  puzzle = mastermind.puzzle(2, 3, exact_search=False)
  game = puzzle.game
  sizes = dict(chunk=8, max_nodes=400, num_slots=8, bound_slots=2)
  default, one = (SolveOptions.from_keywords(**sizes),
                  SolveOptions.from_keywords(leaves_per_step=1, **sizes))
  four = SolveOptions.from_keywords(leaves_per_step=4, **sizes)
  for proof in (False, True):
    # One leaf: the config of before (equal, so the same compiled program).
    assert default.search_config(game, proof=proof) == one.search_config(game, proof=proof)
    assert one.search_config(game, proof=proof).leaves_per_step == 1
    assert four.search_config(game, proof=proof).leaves_per_step == 4
    assert four.search_config(game, proof=proof).num_simulations == 8
  assert "leaves_per_step" not in one.tree_options(game)
  assert default.tree_options(game) == one.tree_options(game)
  assert four.tree_options(game) == {**one.tree_options(game), "leaves_per_step": 4}
  roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  weights = np.ones(1)
  prints = {k: chunked.fingerprint(puzzle, roots, weights, o)
            for k, o in ((1, one), (4, four))}
  assert prints[1] == chunked.fingerprint(puzzle, roots, weights, default)
  assert prints[1] != prints[4]
  assert prints[4]["options"]["leaves_per_step"] == 4


def test_several_leaves_per_step_certify_the_same_optimum():
  """Mastermind 2×4 (optimum 45) from the start, one tree: with 4 paths per step and with
  one, the solve proves the optimum and its exported policy is evaluated exactly at it."""
  puzzle = mastermind.puzzle(2, 4, exact_search=False)  # the certificate rests on the tree
  options = dict(seconds=300, max_simulations=512, chunk=8, max_nodes=3000, num_slots=None)
  results = {leaves: guessing_lib.solve_puzzle(puzzle, leaves_per_step=leaves, **options)
             for leaves in (1, 4)}
  for leaves, result in results.items():
    assert result.proven_optimal, leaves
    assert result.evaluation.total_guesses == 45, leaves
    assert round(result.bound_total) == round(result.upper_total) == 45, leaves
  assert results[4].evaluation.total_guesses == results[1].evaluation.total_guesses


def test_bench_leaves_compares_the_solvers_chunks_by_leaves(capsys):
  """``jaxsearch bench leaves`` on Mastermind 2×2's openings: one row per ``K``, the first
  the reference of the speedups, every tree proven by the end."""
  from jaxsearch import cli
  assert cli.main(["bench", "leaves", "--mastermind", "2x2", "--chunk", "4", "--chunks", "1",
                   "--leaves-per-step", "1,4", "--nodes", "400", "--slots", "4",
                   "--bound-slots", "2"]) == 0
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["benchmark"] == "leaves" and line["openings"] == ["11", "12"]
  rows = line["by_leaves"]
  assert [row["leaves_per_step"] for row in rows] == [1, 4]
  assert [row["steps_per_chunk"] for row in rows] == [4, 1]
  assert rows[0]["speedup"] == 1.0 and all(row["simulations_per_second"] > 0 for row in rows)
  assert all(row["simulations"] == 8 for row in rows)  # the compiling chunk and one timed
  assert all(row["trees_proven"] == line["trees"] for row in rows)


def test_bench_sample_efficiency_takes_leaves_per_step(capsys):
  """Mastermind 2×2 (optimum 8) by the solver's proof rule, 4 paths per step: proven, and
  the simulations to the optimum counted in paths."""
  from jaxsearch.app.benchmarks import sample_efficiency
  sample_efficiency.main(["--mastermind", "2x2", "--budget", "96", "--repeats", "2",
                          "--only", "optimistic", "--leaves-per-step", "4"])
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  figures = line["rules"]["optimistic"]
  assert line["leaves_per_step"] == 4
  assert figures["solved"] == 1.0 and figures["proven"]["solved"] == 1.0
  assert figures["final_total"] == [8.0, 8.0]
  assert figures["simulations"]["median"] % 4 == 0
  assert figures["proven"]["median"] >= figures["median"]


def test_bench_leaves_refuses_more_leaves_than_the_chunk(capsys):
  from jaxsearch import cli
  with pytest.raises(SystemExit):
    cli.main(["bench", "leaves", "--chunk", "4", "--leaves-per-step", "1,8"])
  assert "--leaves-per-step 8 is larger than --chunk 4" in capsys.readouterr().err


def test_the_command_line_names_the_flag(capsys):
  """``jaxsearch solve --leaves-per-step``: refused before anything is built where it is not
  a positive integer or exceeds ``--chunk``, naming the flag."""
  from jaxsearch import cli
  status = cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "2", "--chunk", "4",
                     "--leaves-per-step", "8", "--quiet"])
  assert status == 2
  assert "--leaves-per-step 8 is larger than --chunk 4" in capsys.readouterr().err
  with pytest.raises(SystemExit) as stop:
    cli.main(["solve", "mastermind", "--leaves-per-step", "0"])
  assert stop.value.code == 2
  assert "--leaves-per-step" in capsys.readouterr().err
