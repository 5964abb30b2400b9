"""Parity with mctx.muzero_policy: same root visit counts with mctx's visit convention.

(a) The hashed toy MDP (random rewards, priors and values: no ties) against unmodified mctx.
(b) Connect Four from several positions with a uniform prior and zero value. Ties abound
    there, and mctx breaks them with ``1e-7 * uniform`` noise drawn per step; that noise is
    its only nondeterminism, so the test removes it (mctx's own ``argmax`` then breaks ties by
    lowest index, as jaxsearch does) and demands identical visit counts.
"""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from games import connect_four, hashed

mctx = pytest.importorskip("mctx")


def _mctx_visits(root_output, invalid, recurrent_fn, num_simulations, key):
  out = mctx.muzero_policy(None, key, root_output, recurrent_fn, num_simulations,
                           invalid_actions=invalid, dirichlet_fraction=0.0)
  summary = out.search_tree.summary()
  return summary.visit_counts, summary.value


def test_hashed_mdp_matches_mctx_exactly():
  num_actions, num_simulations, batch_size = 6, 40, 12
  game = hashed.make(num_actions, seed=3)
  estimator = hashed.estimator(num_actions)
  roots = hashed.distinct_roots(game, batch_size)
  ours = js.policies.puct(game, estimator, num_simulations=num_simulations)
  out = jax.jit(ours)(None, jax.random.PRNGKey(1), roots)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root_output, _ = root_fn(None, jax.random.PRNGKey(0), roots)
  visits, values = map(np.asarray, jax.jit(_mctx_visits, static_argnums=(2, 3))(
      root_output, None, recurrent_fn, num_simulations, jax.random.PRNGKey(2)))
  np.testing.assert_array_equal(np.asarray(out.visit_counts), visits)
  np.testing.assert_allclose(np.asarray(out.root_value), values, rtol=1e-5, atol=1e-6)
  # The toy must exercise more than the root: several actions visited, depth > 1.
  assert (np.asarray(out.visit_counts) > 0).sum(axis=1).min() >= 2
  assert int(out.tree.node_depth.max()) >= 3


def _without_tie_noise(monkeypatch):
  """Makes mctx's tie-break noise zero (its only source of nondeterminism)."""
  from mctx._src import action_selection
  real_jax = action_selection.jax
  random = types.SimpleNamespace(**{name: getattr(real_jax.random, name)
                                    for name in dir(real_jax.random) if not name.startswith("_")})
  random.uniform = lambda key, shape=(), *args, **kwargs: jnp.zeros(shape, jnp.float32)
  proxy = types.SimpleNamespace(**{name: getattr(real_jax, name) for name in dir(real_jax)
                                   if not name.startswith("_")})
  proxy.random = random
  monkeypatch.setattr(action_selection, "jax", proxy)


def test_connect_four_matches_mctx_without_its_tie_noise(monkeypatch, connect4_data):
  _without_tie_noise(monkeypatch)
  moves, _ = connect_four.load_test_positions(connect4_data / "Test_L2_R1.moves")
  openings = ["", "4", "44", "3453", "1234567"]
  states = connect_four.states_from_moves(openings + moves[:11])
  num_simulations = 64
  estimator = js.estimators.uniform()
  ours = js.policies.puct(connect_four.GAME, estimator, num_simulations=num_simulations)
  out = jax.jit(ours)(None, jax.random.PRNGKey(0), states)
  root_fn, recurrent_fn = js.compat.to_mctx(connect_four.GAME, estimator)
  root_output, invalid = root_fn(None, jax.random.PRNGKey(0), states)
  visits, values = map(np.asarray, jax.jit(_mctx_visits, static_argnums=(2, 3))(
      root_output, invalid, recurrent_fn, num_simulations, jax.random.PRNGKey(5)))
  np.testing.assert_array_equal(np.asarray(out.visit_counts), visits)
  np.testing.assert_allclose(np.asarray(out.root_value), values, atol=1e-6)
  # Endgame positions reach terminal states inside the search, so wins and losses matter.
  assert np.any(np.abs(values) > 0.05)


def test_drop_in_muzero_policy_matches_mctx():
  """``js.compat.muzero_policy`` takes mctx's own arguments and gives mctx's visit counts."""
  num_actions, num_simulations = 5, 24
  game = hashed.make(num_actions, seed=7)
  estimator = hashed.estimator(num_actions)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root_output, _ = root_fn(None, jax.random.PRNGKey(0), hashed.distinct_roots(game, 4))
  out = jax.jit(lambda key: js.compat.muzero_policy(
      None, key, root_output, recurrent_fn, num_simulations, dirichlet_fraction=0.0))(
          jax.random.PRNGKey(3))
  visits, _ = map(np.asarray, jax.jit(_mctx_visits, static_argnums=(2, 3))(
      root_output, None, recurrent_fn, num_simulations, jax.random.PRNGKey(4)))
  np.testing.assert_array_equal(np.asarray(out.visit_counts), visits)
  np.testing.assert_allclose(np.asarray(out.action_weights),
                             visits / visits.sum(axis=1, keepdims=True), rtol=1e-6)
