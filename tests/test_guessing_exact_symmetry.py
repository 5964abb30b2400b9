"""The exact search's symmetries and bounds, against brute force.

* :class:`games.mastermind_set_symmetry.SetSymmetry` marks redundant exactly the guesses that
  the full stabiliser of a set (every colour and peg permutation mapping it onto itself,
  enumerated) maps to a smaller code, and reads a state's kept permutations as the JAX
  symmetry does;
* the exact search with those symmetries and its stronger floors finds the brute-force
  optimum of every sub-problem of small games, and of the whole game;
* the bounds holding the symmetries can be sent to worker processes.
"""

import functools
import itertools
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.games import mastermind
from jaxsearch.games.mastermind_set_symmetry import SetSymmetry
from jaxsearch.guessing import exact as guessing_exact
from jaxsearch.guessing import feedback_totals
from jaxsearch.guessing.certificates import CertificateGame
from test_guessing_exact import _brute_force


@functools.lru_cache(maxsize=None)
def _game(pegs: int, colours: int):
  return mastermind.make(pegs, colours)


def _stabiliser_redundant(pegs: int, colours: int, secrets: np.ndarray) -> np.ndarray:
  """``bool[N]``: guesses some element of the set's stabiliser maps to a smaller code, the
  stabiliser enumerated over every colour and peg permutation (no code shared with the
  module under test)."""
  codes = list(itertools.product(range(colours), repeat=pegs))
  index = {code: i for i, code in enumerate(codes)}
  wanted = set(secrets.tolist())
  smallest = np.arange(len(codes))
  for tau in itertools.permutations(range(pegs)):
    for sigma in itertools.permutations(range(colours)):
      image = np.array([index[tuple(sigma[code[t]] for t in tau)] for code in codes])
      if set(image[secrets].tolist()) == wanted:
        smallest = np.minimum(smallest, image)
  return smallest < np.arange(len(codes))


def _reachable_sets(pegs: int, colours: int, rng, count: int) -> list:
  """Sets of secrets left after 0-2 random guesses, and random sets (at least 6 secrets)."""
  table = np.asarray(_game(pegs, colours).by_secret)
  n = table.shape[0]
  sets = []
  while len(sets) < count:
    secrets = np.arange(n)
    if len(sets) % 3 == 2:
      secrets = np.sort(rng.choice(n, int(rng.integers(6, min(n, 20) + 1)), replace=False))
    else:
      for _ in range(int(rng.integers(0, 3))):
        guess, secret = rng.integers(n), rng.integers(n)
        secrets = secrets[table[secrets, guess] == table[secret, guess]]
    if len(secrets) >= 6:
      sets.append(secrets)
  return sets


@pytest.mark.parametrize("pegs,colours", [(2, 4), (3, 3), (3, 4), (4, 3), (2, 5)])
def test_set_redundant_is_the_stabilisers_orbit_minimum(pegs, colours):
  symmetry = _game(pegs, colours).exact_bounds.symmetry
  rng = np.random.default_rng(pegs * 10 + colours)
  nontrivial = 0
  for secrets in _reachable_sets(pegs, colours, rng, 25):
    expected = _stabiliser_redundant(pegs, colours, secrets)
    found = symmetry.set_redundant(secrets)
    found = np.zeros_like(expected) if found is None else found
    np.testing.assert_array_equal(found, expected)
    nontrivial += expected.any()
  assert nontrivial >= 5  # the sets have symmetries to find


def test_history_redundant_reads_states_as_the_jax_symmetry():
  game = mastermind.make(3, 4, symmetry=True)
  symmetry = SetSymmetry.build(3, 4, [game.code_index(o) for o in mastermind.openings(3, 4)],
                               with_history=True)
  check = jax.jit(game.symmetry.redundant)
  rng = np.random.default_rng(0)
  state = game.initial_state()
  for _ in range(4):
    expected = np.asarray(check(state.symmetries))
    np.testing.assert_array_equal(symmetry.history_redundant(np.asarray(state.symmetries)),
                                  expected)
    guess = int(rng.choice(np.flatnonzero(~expected)))
    secret = int(rng.integers(game.num_codes))
    outcome = int(game.by_secret[secret, guess])
    state = game.game.step(state, jnp.int32(guess), jnp.int32(outcome)).state
  assert symmetry.history_redundant(None) is None


@pytest.mark.parametrize("pegs,colours", [(2, 4), (3, 3)])
def test_every_subproblem_matches_brute_force(pegs, colours):
  """Every feedback part of every first guess, and every part of a few second guesses
  after it: the exact search's optimum (symmetry and memoised floors on) equals the
  brute-force one."""
  bounds = _game(pegs, colours).exact_bounds
  table, solved = bounds.table, bounds.solved_code
  rng = np.random.default_rng(1)
  solver = guessing_exact.ExactSolver(bounds)
  checked = 0
  for first in range(table.shape[1]):
    for code in np.unique(table[:, first]):
      if code == solved:
        continue
      part = np.flatnonzero(table[:, first] == code)
      sets = [part] + [part[table[part, second] == later]
                       for second in rng.choice(table.shape[1], 3, replace=False)
                       for later in np.unique(table[part, second]) if later != solved]
      for secrets in sets:
        expected = _brute_force(table, solved, tuple(secrets.tolist()))
        assert solver.optimum(secrets) == expected
        checked += 1
  assert checked > 200


@pytest.mark.parametrize("pegs,colours,optimum", [(3, 4, 206), (4, 3, 246), (4, 4, 905)])
def test_the_policy_of_the_whole_game_plays_to_its_optimum(pegs, colours, optimum):
  bounds = _game(pegs, colours).exact_bounds
  everything = np.arange(bounds.table.shape[0])
  total, policy = guessing_exact.ExactSolver(bounds, max_secrets=len(everything)).best_policy(
      everything, below=1 << 40)
  assert total == optimum
  played = 0
  for secret in everything:
    node, guesses = policy, 1
    while bounds.table[secret, node["guess"]] != bounds.solved_code:
      node = node["children"][int(bounds.table[secret, node["guess"]])]
      guesses += 1
    played += guesses
  assert played == optimum


def test_symmetry_changes_no_optimum_of_larger_subproblems():
  """Without symmetry (the search as it was) and with it, the same optima: every part of
  the opening 1123 of Mastermind 4×4."""
  game = _game(4, 4)
  bounds = game.exact_bounds
  plain = guessing_exact.ExactSolver(
      guessing_exact.ExactBounds.build(bounds.table, game.num_outcomes, bounds.solved_code,
                                       guess_of_secret=bounds.guess_of_secret))
  fast = guessing_exact.ExactSolver(bounds)
  column = bounds.table[:, game.code_index("1123")]
  for code in np.unique(column):
    if code != bounds.solved_code:
      part = np.flatnonzero(column == code)
      assert fast.optimum(part) == plain.optimum(part)


def test_the_bounds_with_symmetry_go_to_worker_processes():
  """The bounds pickle (the exact search of whole games sends them to its workers); the
  tree's certificates keep them in process (a function among their fields)."""
  puzzle = mastermind.puzzle(2, 3)
  game = CertificateGame.of(puzzle)
  assert not game.portable
  copy = pickle.loads(pickle.dumps(game.for_workers()))
  secrets = np.arange(9)
  assert copy.exact.optimum_within(secrets) == 21
  np.testing.assert_array_equal(copy.exact.set_redundant(secrets),
                                puzzle.exact.set_redundant(secrets))


@pytest.mark.parametrize("pegs,colours", [(2, 4), (3, 3)])
def test_every_memoised_bound_is_admissible(pegs, colours):
  """After the whole game is solved (and every first guess's parts), each set the exact
  search memoised has its brute-force optimum: its memoised optimum equal to it, and the
  total it is recorded to need (the two-step floors among them) never above it."""
  bounds = _game(pegs, colours).exact_bounds
  assert bounds.lookahead > 0 and bounds.symmetry is not None
  table, solved = bounds.table, bounds.solved_code
  solver = guessing_exact.ExactSolver(bounds, max_secrets=table.shape[0])
  solver.optimum(np.arange(table.shape[0]))
  for first in range(table.shape[1]):
    for code in np.unique(table[:, first]):
      if code != solved:
        solver.optimum(np.flatnonzero(table[:, first] == code))
  assert len(solver._needs) > 0 and len(solver._optimum) > 0
  for key, needs in solver._needs.items():
    secrets = tuple(np.frombuffer(key, np.int64).tolist())
    assert needs <= _brute_force(table, solved, secrets)
  for key, optimum in solver._optimum.items():
    secrets = tuple(np.frombuffer(key, np.int64).tolist())
    assert optimum == _brute_force(table, solved, secrets)


@pytest.mark.parametrize("pegs,colours", [(3, 5), (4, 4)])
def test_merged_guesses_have_a_kept_twin_and_search_totals_agree(pegs, colours):
  """A guess left out for a colour absent from the set gets, from every secret of it, the
  feedback of a guess kept; on the guesses kept, the search's totals are
  ``action_totals``'; the least total over the kept guesses is the least over all."""
  bounds = _game(pegs, colours).exact_bounds
  table = bounds.table
  rng = np.random.default_rng(pegs + colours)
  digits = bounds.symmetry.digits
  merged_some = 0
  sets = _reachable_sets(pegs, colours, rng, 10)
  for _ in range(10):  # codes of some of the colours only, split by one guess
    colours_used = rng.choice(colours, colours - 2, replace=False)
    secrets = np.flatnonzero(np.isin(digits, colours_used).all(axis=1))
    guess = rng.integers(table.shape[1])
    sets.append(secrets[table[secrets, guess] == table[secrets[0], guess]])
  for secrets in sets:
    merged = bounds.symmetry.merged_redundant(secrets)
    if merged is not None:
      merged_some += 1
      kept_columns = {table[secrets, g].tobytes() for g in np.flatnonzero(~merged)}
      assert all(table[secrets, g].tobytes() in kept_columns for g in np.flatnonzero(merged))
    full, considered = bounds.action_totals(secrets)
    totals, searched = bounds.search_totals(secrets)
    assert not (searched & ~considered).any()
    np.testing.assert_array_equal(totals[searched], full[searched])
    assert totals[searched].min() == full[considered].min()
  assert merged_some >= 5


@pytest.mark.parametrize("pegs,colours", [(4, 5), (5, 3)])
def test_histogram_totals_equal_the_sorted_ones(pegs, colours):
  """Mastermind's few feedbacks are counted by histogram: the same totals, candidates and
  single parts as sorting each guess's feedbacks, guess by guess (and on some guesses)."""
  bounds = _game(pegs, colours).exact_bounds
  rng = np.random.default_rng(pegs * colours)
  for size in (15, 50, 200):
    secrets = np.sort(rng.choice(bounds.table.shape[0], size, replace=False))
    every = bounds.table[secrets]
    args = (bounds._node_totals, bounds.solved_code)
    num_codes = int(bounds.table.max()) + 1
    for mine, theirs in zip(feedback_totals.histogram_totals(every, *args, num_codes),
                            feedback_totals.sorted_totals(every, *args)):
      np.testing.assert_array_equal(mine, theirs)
    some = np.sort(rng.choice(bounds.table.shape[1], 40, replace=False))
    rows = bounds.table[np.ix_(secrets, some)]
    for mine, theirs in zip(feedback_totals.histogram_totals(rows, *args, num_codes),
                            feedback_totals.sorted_totals(every, *args)):
      np.testing.assert_array_equal(mine, theirs[some])
