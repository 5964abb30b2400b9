"""The search over first guesses (jaxsearch.guessing.root): a root decision above batches of
sub-problem trees, on synthetic Wordles checked against an exhaustive search."""

import json

import numpy as np
import pytest

from jaxsearch import cli
from jaxsearch import guessing as guessing_lib
from jaxsearch.games import wordle
from jaxsearch.guessing.root import RootOptions

from test_wordle import _random_words, _solver  # the brute force lives with the game tests


def _lists(tmp_path, seed: int, num_answers: int, num_extra: int):
  """Synthetic word lists written to ``tmp_path``; returns ``(answers, guesses, paths)``."""
  rng = np.random.default_rng(seed)
  answers = sorted(_random_words(rng, num_answers))
  guesses = sorted(answers + _random_words(rng, num_extra, letters="abcdefg",
                                           exclude=answers))
  (tmp_path / "answers.txt").write_text("\n".join(answers) + "\n")
  (tmp_path / "guesses.txt").write_text("\n".join(guesses) + "\n")
  return answers, guesses, (tmp_path / "answers.txt", tmp_path / "guesses.txt")


def _optimum(answers, guesses) -> int:
  game = wordle.make(answers, guesses)
  return _solver(np.asarray(game.feedback), game.secret_of_guess)(
      frozenset(range(len(answers))))


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
  """A Wordle whose first guesses the one-step bounds do not settle: the root has to visit
  several, with room for only two at a time (so it retires some)."""
  tmp_path = tmp_path_factory.mktemp("wide")
  answers, guesses, paths = _lists(tmp_path, seed=11, num_answers=40, num_extra=30)
  puzzle = wordle.puzzle(*paths, exact_search=False)
  # Every first guess leaves under 32 sub-problems: one padded shape, one compile.
  options = RootOptions(visit_chunks=2, live_openings=2, pad_rows=32)
  run = lambda: guessing_lib.solve_puzzle(  # noqa: E731
      puzzle, root=options, seconds=600, max_simulations=192, chunk=8, max_nodes=8000,
      num_slots=None, certify_seconds=60)
  return answers, guesses, run(), run


def test_root_search_finds_the_optimum_and_reports_every_first_guess(wide):
  answers, guesses, result, _ = wide
  optimum = _optimum(answers, guesses)
  assert result.evaluation.total_guesses == optimum
  root = result.root
  assert root.first_guesses == len(guesses)
  assert 0 <= root.open <= len(guesses) - 1 and root.ruled_out + root.open <= len(guesses)
  visited = [o.guess for o in root.openings]
  assert len(visited) >= 2 and len(set(visited)) == len(visited)
  assert result.policy["guess"] in visited
  assert sum(o.visits for o in root.openings) == root.visits
  # Two live first guesses at a time: every other one visited was retired, the policy's
  # own never.
  live = [o for o in root.openings if not o.retired]
  assert len(live) <= 2 and result.policy["guess"] in [o.guess for o in live]
  # "Proven" only when no first guess is left open, and then it is the optimum.
  assert result.proven_optimal == (root.open == 0 and result.proven_given_first)
  assert result.upper_total_scope == "game"
  assert result.upper_total is None or result.upper_total <= optimum + 1e-6


def test_root_search_is_deterministic_under_a_simulation_budget(wide):
  _, _, result, run = wide
  again = run()
  assert again.policy == result.policy
  assert [(o.guess, o.visits) for o in again.root.openings] == [
      (o.guess, o.visits) for o in result.root.openings]


def test_root_options_and_checkpoint_are_checked():
  with pytest.raises(ValueError, match="live_openings"):
    RootOptions(live_openings=1)
  with pytest.raises(ValueError, match="visit_chunks"):
    RootOptions(visit_chunks=0)


def test_cli_wordle_without_first_searches_the_first_guess_and_proves_a_small_one(tmp_path,
                                                                                  capsys):
  """``jaxsearch solve wordle`` without ``--first``: where the exact one-step bounds rule out
  every other first guess, the root's answer is proven optimal for the game."""
  answers, guesses, paths = _lists(tmp_path, seed=3, num_answers=12, num_extra=8)
  argv = ["solve", "wordle", "--answers", str(paths[0]), "--guesses", str(paths[1]),
          "--exact-search", "0", "--chunk", "8", "--nodes", "3000", "--slots", "0",
          "--simulations", "64", "--json", "--quiet"]
  assert cli.main(argv) == 0
  out = capsys.readouterr().out.strip().splitlines()
  summary = json.loads(out[-1])
  assert summary["total_guesses"] == _optimum(answers, guesses)
  assert summary["proven_optimal"] is True and summary["lower_bound_scope"] == "game"
  assert summary["first_guesses"]["open"] == 0
  assert summary["first_guesses"]["ruled_out"] == len(guesses)
  assert summary["first_guesses"]["count"] == len(guesses)
  assert summary["first_guesses"]["visited"][0]["visits"] >= 1
  assert any(line.startswith("First guesses searched") for line in out)
  # A checkpoint needs a fixed first guess or one tree: refused before any work.
  assert cli.main(argv + ["--checkpoint", str(tmp_path / "ck")]) == 2
  assert "--checkpoint is not supported" in capsys.readouterr().err


def test_live_trees_are_dropped_for_the_extraction_only_where_no_proof_needs_them():
  """``release_unless_provable`` with a lower bound on the policy's total (what the solver
  passes before the extraction, the total unknown then) drops the other live first guesses'
  trees only where the exact total would too: unless every first guess that is not live is
  ruled out by its exact one-step bound."""
  from types import SimpleNamespace
  from jaxsearch.guessing.root import RootSearch

  def search(lower):
    found = object.__new__(RootSearch)  # only what the method reads
    found.q1 = np.zeros(4)
    found.lower = np.asarray(lower, np.int64)
    found.openings = [SimpleNamespace(action=a, loop=object()) for a in (0, 1)]
    return found

  # First guesses 2 and 3 are not live; 3 could beat any total of 100 or more: drop at the
  # lower bound 100 (a policy opening with the best first guess needs at least its
  # optimistic bound).
  found = search([95, 96, 120, 99])
  found.release_unless_provable(found.openings[0], 100.0)
  assert found.openings[0].loop is not None and found.openings[1].loop is None
  # Every first guess not live is ruled out at 100: kept, since a policy of total 100 could
  # be proven optimal with them; the exact total decides later.
  found = search([95, 96, 120, 100])
  found.release_unless_provable(found.openings[0], 100.0)
  assert all(o.loop is not None for o in found.openings)
  found.release_unless_provable(found.openings[0], 100)
  assert all(o.loop is not None for o in found.openings)
  found.release_unless_provable(found.openings[0], 101)
  assert found.openings[1].loop is None
