"""Whole games solved by the exact search alone
(:func:`jaxsearch.guessing.exact_game.solve_exactly`)."""

import time

import numpy as np
import pytest

from jaxsearch.games import mastermind
from jaxsearch.guessing import exact_game, finish


def _openings(game, pegs, colours):
  return [game.code_index(code) for code in mastermind.openings(pegs, colours)]


@pytest.mark.parametrize("pegs,colours,optimum", [(3, 3, 73), (3, 4, 206), (4, 3, 246),
                                                  (4, 4, 905)])
def test_the_optimum_is_found_proven_and_played(pegs, colours, optimum):
  game = mastermind.make(pegs, colours)
  found = exact_game.solve_exactly(game.exact_bounds, _openings(game, pegs, colours),
                                   workers=1)
  assert found.proven and found.total == found.lower_bound == optimum
  # The policy, exported and evaluated over every secret (not by the solver), takes it.
  puzzle = mastermind.puzzle(pegs, colours)
  evaluation = finish.evaluate(puzzle, finish.exported_policy(puzzle, found.policy))
  assert evaluation.total_guesses == optimum
  assert puzzle.guess_names[found.first_guess] in mastermind.openings(pegs, colours)
  # Every other first guess was shown to need at least the optimum.
  for guess, (lower, total) in found.first_guesses.items():
    assert lower >= optimum and (total is None or total >= optimum)


def test_out_of_time_nothing_is_claimed():
  game = mastermind.make(3, 4)
  found = exact_game.solve_exactly(game.exact_bounds, _openings(game, 3, 4),
                                   deadline=time.monotonic() - 1, workers=1)
  assert not found.proven and found.total is None and found.policy is None
  assert found.lower_bound <= 206  # still admissible: the one-step bounds


def test_worker_processes_find_the_same():
  game = mastermind.make(3, 3)
  found = exact_game.solve_exactly(game.exact_bounds, _openings(game, 3, 3), workers=2)
  assert found.proven and found.total == 73


def test_an_incomplete_set_of_first_guesses_is_still_exact_for_them():
  """Given only the first guess 111 (not every first guess), the result is the best total
  among policies opening with it: 86 (the game's optimum, 73, opens with 112)."""
  game = mastermind.make(3, 3)
  found = exact_game.solve_exactly(game.exact_bounds, [game.code_index("111")], workers=1)
  assert found.total == 86 and found.first_guess == game.code_index("111")
  np.testing.assert_equal(found.first_guesses[game.code_index("111")], (86, 86))


def test_the_outcome_of_a_puzzle_is_what_a_solve_reports():
  from jaxsearch.guessing.result import result_of
  puzzle = mastermind.puzzle(3, 3)
  outcome = exact_game.exact_outcome(puzzle, puzzle.openings, workers=1)
  result = result_of(puzzle, outcome, unconditional=True)
  assert result.proven_optimal and result.evaluation.total_guesses == 73
  assert result.upper_total == 73.0 and result.policy["guess"] == "112"
  # Without the exact search of small sets there is nothing to ask.
  assert exact_game.exact_outcome(mastermind.puzzle(3, 3, exact_search=False),
                                  ["112"], workers=1) is None
