"""Every bound :func:`jaxsearch.solve.solve_game` takes from a game is checked: NaN is refused
with an error naming the function and the state (at the roots before any search, deeper where
the exact side meets it), an infinity that cannot hold is refused, and an optimistic bound of
``+inf`` — admissible, it says nothing — is carried exactly: the exact completion opens the
game below it and proves the optimum, or the upper bound stays unknown (``None``)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import solve as solve_lib
from jaxsearch.games import garnet
from jaxsearch.solve.game_numbers import BadGameNumber

SHAPE = dict(num_states=3, num_actions=2, branching=2, horizon=3)
OPTIONS = dict(chunk=8, max_nodes=200, seconds=120)


@pytest.fixture(scope="module")
def mdp():
  return garnet.make(seed=3, **SHAPE)


def _root(g):
  return jax.tree.map(lambda x: x[None], g.game.init(jax.random.PRNGKey(0)))


def _with(g, **bounds):
  """``g``'s game with its bounds replaced: ``bound(state) -> f32[]`` where moves are left
  (0 at the end, as a bound must be)."""
  horizon = g.horizon
  return dataclasses.replace(g.game, **{
      name: (lambda value: lambda s: jnp.where(s.time < horizon, value(s), 0.0))(value)
      for name, value in bounds.items()})


def _never(progress):
  raise AssertionError("the search ran")


def test_an_infinite_optimistic_bound_means_no_information(mdp):
  game = _with(mdp, optimistic_value=lambda s: jnp.float32(jnp.inf))
  estimator = garnet.estimator(mdp)
  solved = solve_lib.solve_game(game, estimator, _root(mdp), max_simulations=8, **OPTIONS)
  root = solved.roots[0]
  # The completion opened the game below the uninformative bound, and proved the optimum.
  assert root.proven and root.upper == root.value == root.lower
  assert abs(float(root.value) - float(mdp.v_star[0, 0])) < 1e-5
  assert root.completion > 0
  # Without the completion the searched tree alone bounds nothing: no upper bound, no proof,
  # and the policy found is still evaluated exactly.
  cut = solve_lib.solve_game(game, estimator, _root(mdp), max_simulations=8, completion=0,
                             **OPTIONS)
  assert cut.roots[0].upper is None and not cut.roots[0].proven
  assert cut.roots[0].value <= root.value


@pytest.mark.parametrize("name,value,phrase", [
    ("optimistic_value", np.nan, "optimistic_value is nan"),
    ("pessimistic_value", np.nan, "pessimistic_value is nan"),
    ("optimistic_value", -np.inf, "optimistic_value is -inf"),
    ("pessimistic_value", np.inf, "pessimistic_value is inf"),
])
def test_a_bad_bound_at_the_roots_is_refused_before_the_search(mdp, name, value, phrase):
  game = _with(mdp, **{name: lambda s: jnp.float32(value)})
  with pytest.raises(BadGameNumber, match=phrase) as refused:
    solve_lib.solve_game(game, garnet.estimator(mdp), _root(mdp), max_simulations=8,
                         on_chunk=_never, **OPTIONS)
  assert ".time=0" in str(refused.value)  # the state, named
  assert isinstance(refused.value, ValueError)


def test_a_nan_bound_below_the_roots_is_refused_where_it_is_met(mdp):
  optimistic = mdp.game.optimistic_value
  game = _with(mdp, optimistic_value=lambda s: jnp.where(s.time == 1, jnp.nan,
                                                         optimistic(s)))
  with pytest.raises(BadGameNumber, match=r"optimistic_value is nan at the state .*\.time=1"):
    solve_lib.solve_game(game, garnet.estimator(mdp), _root(mdp), max_simulations=8,
                         **OPTIONS)


def test_an_infinite_reward_is_refused_by_the_exact_side(mdp):
  """A float32 reward that overflowed: exact rationals cannot hold it."""
  rewards = np.array(mdp.rewards, np.float64)
  rewards[0, 0, :] = 1e39  # inf in float32
  with np.errstate(invalid="ignore", over="ignore"):
    big = garnet.from_tables(np.array(mdp.next_state), np.array(mdp.probs), rewards,
                             mdp.horizon)
  game = dataclasses.replace(big.game, pessimistic_value=None)
  state = jax.tree.map(lambda x: np.asarray(x)[0], _root(mdp))
  with pytest.raises(BadGameNumber, match="reward is inf for action 0"):
    solve_lib.exact_value(game, state, {"action": 0, "children": {}})


def test_nan_action_bounds_at_the_roots_are_refused_before_the_search(mdp):
  exact = garnet.estimator(mdp)

  def estimator(params, key, states):
    estimate = exact(params, key, states)
    return estimate.replace(action_bounds=jnp.full_like(estimate.action_values, jnp.nan))

  with pytest.raises(BadGameNumber, match="action_bounds is nan for action 0 at the root"):
    solve_lib.solve_game(mdp.game, estimator, _root(mdp), max_simulations=8,
                         on_chunk=_never, **OPTIONS)
