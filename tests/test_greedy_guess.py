"""The greedy guess that completes an extracted policy: counting the feedback parts per code
gives the same parts, summed in the same order, as sorting them, so the same guess (ties
included, which Mastermind's symmetries make common)."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsearch.guessing import estimator as guessing_estimator
from jaxsearch.games import mastermind


@pytest.fixture(scope="module")
def small_mastermind():
  puzzle = mastermind.puzzle(4, 4, exact_search=False)
  return np.asarray(puzzle.table), np.asarray(puzzle.guess_of_secret), puzzle.game.num_outcomes


def _subsets(count: int, size: int, rng):
  for n in rng.integers(1, size + 1, count):
    yield np.sort(rng.choice(size, n, replace=False))


def test_counted_parts_are_the_sorted_parts_in_code_order(small_mastermind):
  table, _, num_codes = small_mastermind
  for secrets in _subsets(40, table.shape[0], np.random.default_rng(0)):
    rows = table[secrets]
    codes, sorted_sizes = guessing_estimator.feedback_parts(rows)
    counted = guessing_estimator.part_sizes_by_code(rows, num_codes)
    assert counted.shape == (num_codes, table.shape[1])
    for guess in range(table.shape[1]):
      parts = sorted_sizes[:, guess][sorted_sizes[:, guess] > 0]
      np.testing.assert_array_equal(counted[:, guess][counted[:, guess] > 0], parts)
      # Each part's code, in the order both list them.
      np.testing.assert_array_equal(np.flatnonzero(counted[:, guess]),
                                    codes[:, guess][sorted_sizes[:, guess] > 0])


@pytest.mark.parametrize("game", ["mastermind_4x4", "random_243_codes"])
def test_the_greedy_guess_does_not_depend_on_how_the_parts_are_found(game, small_mastermind):
  rng = np.random.default_rng(1)
  if game == "mastermind_4x4":
    table, guess_of_secret, num_codes = small_mastermind
  else:  # many codes, few secrets: both ways are taken, by the set's size
    num_codes = 243
    table = rng.integers(0, num_codes - 1, (300, 500), dtype=np.uint8)
    table[np.arange(300), np.arange(300)] = num_codes - 1  # guess s solves secret s
    guess_of_secret = np.arange(300)
  for secrets in _subsets(150, table.shape[0], rng):
    sorted_guess = guessing_estimator.greedy_guess(table, guess_of_secret, secrets)
    assert guessing_estimator.greedy_guess(table, guess_of_secret, secrets,
                                           num_codes=num_codes) == sorted_guess, secrets


def test_a_code_beyond_num_codes_is_refused(small_mastermind):
  table, guess_of_secret, num_codes = small_mastermind
  with pytest.raises(ValueError, match="not below num_codes"):
    guessing_estimator.greedy_guess(table, guess_of_secret, np.arange(100),
                                    num_codes=num_codes - 1)
