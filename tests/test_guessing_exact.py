"""The exact small-set solver behind certificates, against brute force."""

import functools

import numpy as np
import pytest

from jaxsearch.games import mastermind
from jaxsearch.guessing import exact as guessing_exact
from jaxsearch.guessing import feedback_totals


@functools.lru_cache(maxsize=None)
def _bounds(pegs: int, colours: int):
  return mastermind.make(pegs, colours).exact_bounds


def _brute_force(table: np.ndarray, solved: int, secrets: tuple[int, ...]) -> int:
  """Optimal total guesses for ``secrets``: every guess that teaches something or may win,
  every part recursively — no bound, no pruning (an oracle sharing no code with the solver)."""
  memo: dict[tuple[int, ...], int] = {}

  def optimum(group: tuple[int, ...]) -> int:
    if group in memo:
      return memo[group]
    best = None
    for guess in range(table.shape[1]):
      parts: dict[int, list[int]] = {}
      for secret in group:
        parts.setdefault(int(table[secret, guess]), []).append(secret)
      if len(parts) == 1 and solved not in parts:
        continue  # teaches nothing and cannot win
      total = len(group) + sum(optimum(tuple(part)) for code, part in parts.items()
                               if code != solved)
      best = total if best is None else min(best, total)
    memo[group] = best
    return best

  return optimum(tuple(secrets))


@pytest.mark.parametrize("pegs,colours", [(2, 3), (3, 3)])
def test_optimum_matches_brute_force_on_random_sets(pegs, colours):
  bounds = _bounds(pegs, colours)
  rng = np.random.default_rng(pegs * 10 + colours)
  solver = guessing_exact.ExactSolver(bounds)
  num_secrets = bounds.table.shape[0]
  for _ in range(12):
    size = int(rng.integers(1, min(num_secrets, 7) + 1))
    secrets = np.sort(rng.choice(num_secrets, size, replace=False))
    expected = _brute_force(bounds.table, bounds.solved_code, tuple(secrets.tolist()))
    assert solver.optimum(secrets) == expected
    # The decision at the optimum and one above: exact, whatever was memoised before.
    fresh = guessing_exact.ExactSolver(bounds)
    assert fresh.at_least(secrets, expected)
    assert not fresh.at_least(secrets, expected + 1)
    assert solver.at_least(secrets, expected) and not solver.at_least(secrets, expected + 1)


@pytest.mark.parametrize("pegs,colours", [(2, 3), (2, 4), (3, 3)])
def test_whole_small_games_match_brute_force(pegs, colours):
  # 21, 45 and 73 guesses in total (9, 16 and 27 codes), from the start of the game.
  bounds = _bounds(pegs, colours)
  everything = np.arange(bounds.table.shape[0])
  expected = _brute_force(bounds.table, bounds.solved_code, tuple(everything.tolist()))
  assert guessing_exact.ExactSolver(bounds).optimum(everything) == expected


@pytest.mark.parametrize("pegs,colours,published", [(3, 4, 206), (4, 3, 246)])
def test_whole_games_match_the_published_optima(pegs, colours, published):
  bounds = _bounds(pegs, colours)
  assert guessing_exact.ExactSolver(bounds).optimum(np.arange(bounds.table.shape[0])) == published


def test_a_work_cap_never_proves_a_false_bound():
  bounds = _bounds(3, 3)
  everything = np.arange(bounds.table.shape[0])
  optimum = guessing_exact.ExactSolver(bounds).optimum(everything)
  for cap in (0, 100, 1_000, 10_000, 100_000):
    solver = guessing_exact.ExactSolver(bounds, max_work=cap)
    assert not solver.at_least(everything, optimum + 1)  # false: never shown
    shown = solver.at_least(everything, optimum)  # true: shown when the cap allows
    assert shown == guessing_exact.ExactSolver(bounds, max_work=cap).at_least(
        everything, optimum)
  # A set above ``max_secrets`` only gets its counting bound.
  small = guessing_exact.ExactSolver(bounds, max_secrets=4)
  assert small.at_least(everything, bounds.node_total(27))
  assert not small.at_least(everything, optimum)


def test_optimum_within_a_cap_is_exact_or_none():
  bounds = _bounds(3, 3)
  everything = np.arange(bounds.table.shape[0])
  optimum = guessing_exact.ExactSolver(bounds).optimum(everything)
  answers = {guessing_exact.ExactSolver(bounds, max_work=cap).optimum_within(everything)
             for cap in (0, 200, 10**7)}
  assert answers <= {None, optimum} and optimum in answers and None in answers


def test_wordle_sets_match_brute_force():
  # Guesses are not all secrets here (answers ⊂ guesses): the shortcut for sets that one of
  # their own words tells apart must map each secret to its guess.
  from jaxsearch.games import wordle

  answers = ["cigar", "rebut", "sissy", "humph", "awake", "blush", "focal", "evade", "naval",
             "serve", "heath", "dwarf", "model", "karma", "stink", "grade", "quiet", "bench"]
  game = wordle.make(answers, ["tarse", "crane", "lymph"] + answers)
  bounds = game.exact_bounds
  assert bounds.guess_of_secret is not None
  rng = np.random.default_rng(7)
  solver = guessing_exact.ExactSolver(bounds)
  for size in (3, 4, 5, 6, 8, 18):
    secrets = np.sort(rng.choice(len(answers), size, replace=False))
    expected = _brute_force(bounds.table, bounds.solved_code, tuple(secrets.tolist()))
    assert solver.optimum(secrets) == expected


def _walk_total(table: np.ndarray, solved: int, policy: dict, secrets) -> int:
  """Guesses the exported ``policy`` (guess indices, feedback codes) takes over ``secrets``,
  played out secret by secret (shares no code with the solver)."""
  total = 0
  for secret in secrets:
    node, guesses = policy, 1
    while table[secret, node["guess"]] != solved:
      node = node["children"][int(table[secret, node["guess"]])]
      guesses += 1
    total += guesses
  return total


@pytest.mark.parametrize("game", ["mastermind", "wordle"])
def test_best_policy_plays_to_its_optimum_and_proves_below_it(game):
  if game == "mastermind":
    bounds, sizes = _bounds(3, 3), (3, 5, 8, 27)
  else:
    from jaxsearch.games import wordle
    answers = ["cigar", "rebut", "sissy", "humph", "awake", "blush", "focal", "evade",
               "naval", "serve", "heath", "dwarf", "model", "karma", "stink", "grade"]
    bounds, sizes = wordle.make(answers, ["tarse", "lymph"] + answers).exact_bounds, (3, 7, 16)
  rng = np.random.default_rng(3)
  for size in sizes:
    secrets = np.sort(rng.choice(bounds.table.shape[0], size, replace=False))
    expected = _brute_force(bounds.table, bounds.solved_code, tuple(secrets.tolist()))
    solver = guessing_exact.ExactSolver(bounds)
    total, policy = solver.best_policy(secrets, below=expected + 1)
    assert total == expected
    assert _walk_total(bounds.table, bounds.solved_code, policy, secrets) == expected
    # Nothing below the optimum: answered None, and proven so.
    assert solver.best_policy(secrets, below=expected) == (expected, None)
  # Out of time: no answer, and no proof either.
  late = guessing_exact.ExactSolver(_bounds(3, 3))
  assert late.best_policy(np.arange(27), below=1 << 40, deadline=0.0) is None


@pytest.mark.parametrize("pegs,colours", [(3, 4), (4, 6)])
def test_small_sets_pairwise_totals_equal_the_sorted_ones(pegs, colours):
  """``action_totals`` counts distinct feedbacks pairwise (no sort) where the counting bound
  is ``2n - 1``; both ways agree on every guess, up to the largest such set."""
  bounds = _bounds(pegs, colours)
  largest = bounds._linear_up_to
  assert largest < bounds.table.shape[0]  # the sorted way takes over above it
  rng = np.random.default_rng(pegs * colours)
  for size in sorted({1, 2, 3, largest // 2, largest}):
    secrets = np.sort(rng.choice(bounds.table.shape[0], size, replace=False))
    rows = bounds.table[secrets]
    small = feedback_totals.pairwise_totals(rows, bounds.solved_code)
    sorted_ = feedback_totals.sorted_totals(rows, bounds._node_totals, bounds.solved_code)
    for mine, theirs in zip(small, sorted_):
      np.testing.assert_array_equal(mine, theirs)
