"""Reported values stay within the values a game can take (``Game.value_bounds``).

AVTS's debiased values q̂3 = q̂2 + the expected remaining drift (algorithms §2) extrapolate:
with a noisy estimator they leave a two-player game's ``[-1, 1]``, and the Bellman backup
carries them up the tree. That is the estimator at work, not a defect, so the tree keeps
them; what a search *reports* (``root_value``, ``q_values``) is clipped to the game's
declared bounds, after the action is chosen, so the choice and the tree are the same.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxsearch as js
from jaxsearch.games import connect_four, tictactoe
from jaxsearch.game import Estimate, Game
from jaxsearch.summary import root_summary

GAME = tictactoe.GAME
BATCH = 8


def _noisy_estimator(params, key, states):
  """Action values uniform in [-1, 1] (inside the game's bounds), fresh on every call."""
  del params
  legal = jax.vmap(GAME.legal_actions)(states)
  q = jnp.where(legal, jax.random.uniform(key, legal.shape, minval=-1.0, maxval=1.0), -jnp.inf)
  return Estimate(value=jnp.where(legal.any(-1), q.max(-1), 0.0), action_values=q)


@functools.lru_cache(maxsize=None)
def _searches():
  """The README's AVTS configuration on tic-tac-toe, compiled once: the public search's output
  and the same roots summarised with the game's value bounds."""
  config = js.SearchConfig(num_simulations=48, selection=js.selection.thompson(),
                           backup=js.Backup.BELLMAN, avts=js.AvtsOptions(widening=True),
                           outcome_rule=js.OutcomeRule.BALANCED)
  search = js.policies.custom(GAME, _noisy_estimator, config=config, temperature=0.0)

  @jax.jit
  def run(key, roots):
    """``(raw, bounded)``: the roots' summary without the game's bounds and with them (the
    search's own output, which the model gives the game's bounds)."""
    bounded = search(None, key, roots)
    raw = root_summary(bounded.tree, GAME.num_actions, 0.0, key, search.config,
                       search.model.has_bound, search.model.has_upper, value_bounds=None)
    return raw, bounded

  return run


@functools.lru_cache(maxsize=None)
def _positions():
  return jax.tree.map(np.asarray, tictactoe.reachable_states())


def _roots(indices):
  return jax.tree.map(lambda x: jnp.asarray(x[np.asarray(indices)]), _positions())


def _check(out, bounded, lo, hi):
  root_value, q_values = np.asarray(bounded.root_value), np.asarray(bounded.q_values)
  assert np.all((lo <= root_value) & (root_value <= hi))
  assert np.all((lo <= q_values) & (q_values <= hi))
  # Clipped, nothing else: the same numbers inside the bounds, the same choice and tree.
  np.testing.assert_array_equal(root_value, np.clip(np.asarray(out.root_value), lo, hi))
  np.testing.assert_array_equal(q_values, np.clip(np.asarray(out.q_values), lo, hi))
  np.testing.assert_array_equal(np.asarray(bounded.action), np.asarray(out.action))
  np.testing.assert_array_equal(np.asarray(bounded.action_weights),
                                np.asarray(out.action_weights))
  np.testing.assert_array_equal(np.asarray(bounded.visit_counts), np.asarray(out.visit_counts))
  for mine, theirs in zip(jax.tree.leaves(bounded.tree), jax.tree.leaves(out.tree)):
    np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


@settings(max_examples=6, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1),
       indices=st.lists(st.integers(0, 4519), min_size=BATCH, max_size=BATCH))
def test_reported_values_stay_within_the_declared_bounds(seed, indices):
  out, bounded = _searches()(jax.random.PRNGKey(seed), _roots(indices))
  _check(out, bounded, *GAME.value_bounds)


def test_debiased_values_do_leave_the_game_and_are_clipped():
  # Not a vacuous property: from the empty board, the unclipped debiased values leave [-1, 1].
  roots = jax.vmap(GAME.init)(jax.random.split(jax.random.PRNGKey(0), BATCH))
  out, bounded = _searches()(jax.random.PRNGKey(1), roots)
  assert np.abs(np.asarray(out.q_values)).max() > 1.0
  _check(out, bounded, -1.0, 1.0)
  # The tree keeps its statistics unclipped (the Bellman backup and the proofs read them).
  assert np.abs(np.asarray(out.tree.nodes.value)).max() > 1.0


def test_games_declare_their_value_bounds():
  assert tictactoe.GAME.value_bounds == connect_four.GAME.value_bounds == (-1.0, 1.0)
  plain = Game(name="g", num_actions=2, init=GAME.init, legal_actions=GAME.legal_actions,
               step=GAME.step)
  assert plain.value_bounds is None  # optional: nothing declared, nothing clipped
  assert Game(name="g", num_actions=2, init=GAME.init, legal_actions=GAME.legal_actions,
              step=GAME.step, value_bounds=(0, 3)).value_bounds == (0.0, 3.0)
  for bad in ((1.0, -1.0), (0.0, float("inf")), (0.0,), "ab", (float("nan"), 1.0)):
    with pytest.raises(ValueError, match="value_bounds"):
      Game(name="g", num_actions=2, init=GAME.init, legal_actions=GAME.legal_actions,
           step=GAME.step, value_bounds=bad)


def test_a_search_reports_values_within_the_games_bounds():
  """End to end: a two-player game's declared bounds reach the search's output."""
  import jax
  import numpy as np

  import jaxsearch as js
  from jaxsearch.games import connect_four
  search = js.policies.puct(connect_four.GAME, js.estimators.uniform(), num_simulations=8)
  assert search.model.value_bounds == (-1.0, 1.0)
  out = jax.jit(search)(None, jax.random.PRNGKey(0),
                        connect_four.states_from_moves(["", "4"]))
  assert np.all(np.abs(np.asarray(out.root_value)) <= 1.0)
  assert np.all(np.abs(np.asarray(out.q_values)) <= 1.0)
