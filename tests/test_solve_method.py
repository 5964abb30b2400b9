"""How a game whose first guesses are all covered is solved: by default the exact search of
the whole game first (no tree), the trees where it does not prove the optimum in its share of
the time, the trees alone with ``method="tree"`` (or ``--method tree``)."""

import contextlib
import io
import json

import pytest

from jaxsearch import cli
from jaxsearch.games import mastermind
from jaxsearch.guessing import exact_game, solve_puzzle
from jaxsearch.memory import MemoryBudgetError

SMALL = dict(chunk=16, max_nodes=3000, num_slots=32, bound_slots=16, seconds=60,
             certify_seconds=60)


@pytest.fixture(scope="module")
def puzzle():
  return mastermind.puzzle(3, 3)


def test_the_exact_search_solves_the_whole_game_first(puzzle):
  phases = []
  result = solve_puzzle(puzzle, openings=puzzle.openings, on_phase=phases.append, **SMALL)
  assert result.proven_optimal and result.evaluation.total_guesses == 73
  assert result.simulations == 0 and result.trees is None and "exact_s" in result.phases
  exact = [info for info in phases if info["phase"] == "exact"]
  assert exact[0]["done"] == 0 and exact[-1]["done"] == exact[-1]["of"] == len(
      puzzle.openings)
  assert exact[-1]["incumbent"] == 73


def test_the_trees_where_the_exact_search_runs_out_of_time(puzzle, monkeypatch):
  """No time for the exact search (its share is 0): it proves nothing, and the trees solve
  the game as ``method="tree"`` does."""
  monkeypatch.setattr(exact_game, "EXACT_SHARE", 0.0)
  phases = []
  fallback = solve_puzzle(puzzle, openings=puzzle.openings, on_phase=phases.append, **SMALL)
  monkeypatch.undo()
  exact = [info for info in phases if info["phase"] == "exact"]
  assert exact[-1]["stopped"] and not any(info["stopped"] for info in exact[:-1])
  assert phases.index(exact[-1]) < [info["phase"] for info in phases].index("extracting")
  trees = solve_puzzle(puzzle, openings=puzzle.openings, method="tree", **SMALL)
  for result in (fallback, trees):
    assert result.simulations > 0 and "exact_s" not in result.phases
    assert result.proven_optimal and result.evaluation.total_guesses == 73


def test_a_fixed_first_guess_is_searched_by_the_trees(puzzle):
  """One opening does not cover the game: a result would be a claim given that guess, which
  the exact search of the whole game does not make; the trees are searched."""
  result = solve_puzzle(puzzle, first="112", **SMALL)
  assert result.simulations > 0 and result.proven_given_first


def test_an_unknown_method_is_refused_before_any_work(puzzle):
  with pytest.raises(ValueError, match="method must be one of 'auto', 'tree'"):
    solve_puzzle(puzzle, openings=puzzle.openings, method="exhaustive", **SMALL)


def _cli(*argv):
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    status = cli.main(["solve", "mastermind", "--pegs", "3", "--colours", "3", "--json",
                       *argv])
  return status, json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


def test_the_command_says_which_way_it_solved():
  status, summary, err = _cli()
  assert status == 0 and summary["proven_optimal"] and summary["total_guesses"] == 73
  assert summary["simulations"] == 0 and "exact_s" in summary["phases"]
  assert "exact search of the whole game: 0 of 3 first guesses settled" in err
  assert err.rstrip().endswith("proven optimal · no tree searched"), err
  with pytest.raises(SystemExit):
    with contextlib.redirect_stderr(io.StringIO()):
      cli.main(["solve", "mastermind", "--method", "exhaustive"])


@pytest.mark.slow
def test_mastermind_5x5_is_proven_and_its_exported_policy_evaluates(tmp_path):
  """Past the trees' reach: 3,125 codes, proven optimal by the command's default (about 20 s
  on 2 cores), and the exported policy re-evaluated by ``jaxsearch evaluate``."""
  path = tmp_path / "mastermind_5x5.json"
  status, summary, _ = _cli("--pegs", "5", "--colours", "5", "--seconds", "600", "--export",
                            str(path), "--quiet")
  assert status == 0 and summary["proven_optimal"] and summary["total_guesses"] == 13496
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    assert cli.main(["evaluate", str(path), "--json"]) == 0
  assert json.loads(out.getvalue().strip().splitlines()[-1])["total_guesses"] == 13496


def test_where_the_trees_would_not_fit_the_exact_search_alone_solves(puzzle, monkeypatch):
  """A memory budget below the trees' estimate: no refusal where the exact search of the
  whole game may solve it (it alone is tried, with the whole search time, and says so);
  the trees alone are refused before any work; an exact search that finds no policy ends
  in the refusal, saying it was tried."""
  phases = []
  result = solve_puzzle(puzzle, openings=puzzle.openings, memory=1e6, on_phase=phases.append,
                        **SMALL)
  assert result.proven_optimal and result.simulations == 0
  assert phases[0]["phase"] == "exact" and phases[0]["alone"]
  with pytest.raises(MemoryBudgetError, match="more than the budget"):
    solve_puzzle(puzzle, openings=puzzle.openings, memory=1e6, method="tree", **SMALL)
  monkeypatch.setattr(exact_game, "exact_outcome", lambda *args, **kwargs: None)
  with pytest.raises(MemoryBudgetError, match="tried instead, found no policy"):
    solve_puzzle(puzzle, openings=puzzle.openings, memory=1e6, **SMALL)


def test_the_command_solves_in_a_budget_the_trees_exceed():
  status, summary, err = _cli("--memory", "0.01")
  assert status == 0 and summary["proven_optimal"] and summary["simulations"] == 0
  assert "the trees would not fit" in err and "it alone is tried" in err
  assert "(alone: the trees would not fit in memory)" in err
