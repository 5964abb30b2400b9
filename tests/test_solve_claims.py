"""What ``jaxsearch solve`` claims is proven: the game's optimum (``proven_optimal``) or only
the best total given a fixed first guess (``proven_given_first``), with the optimistic bound
labelled for what it bounds; games too small to search (one secret) solved outright, and
``solve_game`` on a root already finished.

The oracle: Mastermind 2×3's optimum is 21 (docs/algorithms.md §6, re-derived by brute force in
tests/test_mastermind.py); opening with ``11`` costs more (any two-colour code is optimal).
"""

import dataclasses
import json

import pytest

from jaxsearch.games import mastermind
from jaxsearch import cli
from jaxsearch import guessing as guessing_lib

# Small trees, every guess in every node (the sizes of tests/test_solve.py's 2×3 runs).
CLI_OPTIONS = ["--seconds", "60", "--chunk", "32", "--nodes", "2000", "--slots", "0",
               "--bound-slots", "0", "--json", "--quiet"]


def test_a_fixed_first_guess_proves_only_the_best_total_given_it(capsys):
  """2×3 opened with 11: the best policy so opened is certified (``proven_given_first``) but
  its total is above the game's optimum, 21, so ``proven_optimal`` is false and the
  optimistic bound is labelled as given the first guess, in the JSON and the text line.
  (tests/test_solve.py checks the same of the :class:`SolveResult` with the optimal opening
  12: optimal, yet not proven so for the game.)"""
  assert cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "3", "--first", "11",
                   *CLI_OPTIONS]) == 0
  text, line = capsys.readouterr().out.strip().splitlines()[-2:]
  found = json.loads(line)
  total = found["total_guesses"]
  assert total > 21 and found["first_guess"] == "11"
  assert found["proven_optimal"] is False and found["proven_given_first"] is True
  assert found["lower_bound_scope"] == "given_first" and found["lower_bound_total"] == total
  assert f"{total} guesses" in text and "proven optimal given the first guess 11" in text
  assert "not proven optimal for the game" in text


def test_openings_claim_the_game_when_they_cover_every_first_guess():
  """A list of openings claims the game's optimum only when it holds every first guess up to
  symmetry (``puzzle.openings``, in any order, others besides); otherwise it claims as little
  as a fixed first guess. (tests/test_solve.py solves 2×3 from its openings: proven
  outright.)"""
  puzzle = mastermind.puzzle(2, 3)
  assert puzzle.openings == ("11", "12")
  assert not guessing_lib.covers_every_opening(puzzle, ["11"])
  assert not guessing_lib.covers_every_opening(puzzle, ["12", "13"])
  assert guessing_lib.covers_every_opening(puzzle, ["12", "13", "11"])
  assert not guessing_lib.covers_every_opening(
      dataclasses.replace(puzzle, openings=None), ["11", "12"])


@pytest.mark.parametrize("pegs, colours", [(1, 1), (2, 1)])
def test_a_game_of_one_secret_is_solved_by_one_guess(capsys, pegs, colours):
  """One code: the first guess (the only opening) finds it. No sub-problem is left to
  search; total 1, the least any policy needs, so proven outright."""
  assert cli.main(["solve", "mastermind", "--pegs", str(pegs), "--colours", str(colours),
                   "--json", "--quiet"]) == 0
  text, line = capsys.readouterr().out.strip().splitlines()[-2:]
  found = json.loads(line)
  assert found["total_guesses"] == 1 and found["secrets"] == 1
  assert found["proven_optimal"] is True and found["lower_bound_scope"] == "game"
  assert "proven optimal." in text
  result = guessing_lib.solve_puzzle(mastermind.puzzle(pegs, colours), first="1" * pegs)
  assert result.evaluation.total_guesses == 1 and result.proven_optimal
  assert result.policy == {"guess": "1" * pegs, "children": {}}


def test_a_one_word_wordle_with_its_word_first(tmp_path, capsys):
  (tmp_path / "answers.txt").write_text("cigar\n")
  (tmp_path / "guesses.txt").write_text("cigar\nrebut\n")
  assert cli.main(["solve", "wordle", "--answers", str(tmp_path / "answers.txt"),
                   "--guesses", str(tmp_path / "guesses.txt"), "--first", "cigar",
                   "--json", "--quiet"]) == 0
  found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert found["total_guesses"] == 1 and found["proven_optimal"] is True


def test_no_openings_is_a_clear_error():
  with pytest.raises(ValueError, match="openings is empty"):
    guessing_lib.solve_puzzle(mastermind.puzzle(2, 2), openings=[])


def test_solve_game_on_a_finished_root_gives_value_0_and_the_empty_policy():
  """A Garnet root at its horizon is finished: nothing to play, value 0, proven; in a batch
  with a fresh root, that one is solved as usual (to its known optimum V*)."""
  import jax.numpy as jnp

  import jaxsearch as js
  from jaxsearch.games import garnet
  g = garnet.make(num_states=4, num_actions=2, branching=2, horizon=3, seed=0)
  finished = garnet.State(state=jnp.array([0], jnp.int32), time=jnp.array([3], jnp.int32))
  alone = js.solve_game(g.game, garnet.estimator(g), finished, seconds=10)
  root, = alone.roots
  assert root.policy == {} and root.value == 0 and root.upper == 0 and root.proven
  both = garnet.State(state=jnp.array([0, 0], jnp.int32), time=jnp.array([3, 0], jnp.int32))
  solved = js.solve_game(g.game, garnet.estimator(g), both, seconds=30, max_nodes=200,
                         chunk=16)
  done, fresh = solved.roots
  assert done.policy == {} and done.value == 0 and done.proven
  assert fresh.proven and abs(float(fresh.value) - float(g.v_star[0, 0])) < 1e-5
  assert fresh.policy["action"] >= 0
  assert all(bound[0] == 0 and len(bound) == 2 for _, _, bound, _ in solved.history)
