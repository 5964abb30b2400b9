"""Parity with mctx: same visit counts (and trees) on fixed inputs.

(a) ``js.policies.puct`` on the hashed toy MDP (random rewards, priors and values: no ties)
    against unmodified ``mctx.muzero_policy``.
(b) Connect Four from several positions with a uniform prior and zero value. Ties abound
    there, and mctx breaks them with ``1e-7 * uniform`` noise drawn per step; that noise is
    its only nondeterminism, so the test removes it (mctx's own ``argmax`` then breaks ties by
    lowest index, as jaxsearch does) and demands identical visit counts.
(c) The drop-in ``jaxsearch.compat``: its three policies against mctx's on the same inputs
    and functions, with mctx's tie noise removed — visit counts, actions, action weights and
    the whole trees node by node.
"""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import connect_four, hashed

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
  assert int(out.tree.nodes.depth.max()) >= 3


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


def _jit_policy(policy, **kwargs):
  return jax.jit(lambda key, root, invalid: policy(None, key, root, invalid_actions=invalid,
                                                   **kwargs))


def _assert_same_trees(ours, theirs, values_atol=1e-5):
  """Node-by-node equality of two mctx-layout trees (ours from compat, theirs from mctx)."""
  for field in ("node_visits", "parents", "action_from_parent", "children_index",
                "children_visits"):
    np.testing.assert_array_equal(np.asarray(getattr(ours, field)),
                                  np.asarray(getattr(theirs, field)), err_msg=field)
  for field in ("node_values", "raw_values", "children_values", "children_rewards",
                "children_discounts"):
    np.testing.assert_allclose(np.asarray(getattr(ours, field)),
                               np.asarray(getattr(theirs, field)), atol=values_atol,
                               err_msg=field)


@pytest.fixture(scope="module")
def hashed_inputs():
  num_actions = 5
  game = hashed.make(num_actions, seed=7)
  root_fn, recurrent_fn = js.compat.to_mctx(game, hashed.estimator(num_actions))
  root_output, _ = root_fn(None, jax.random.PRNGKey(0), hashed.distinct_roots(game, 6))
  invalid = jnp.zeros((6, num_actions), bool).at[1, 1:3].set(True).at[4, 0].set(True)
  return root_output, invalid, recurrent_fn


def test_compat_muzero_policy_matches_mctx(hashed_inputs, monkeypatch):
  """``compat.muzero_policy`` (Dirichlet noise on: the same draw as mctx's) gives mctx's
  trees, visit probabilities and sampled actions."""
  _without_tie_noise(monkeypatch)
  root_output, invalid, recurrent_fn = hashed_inputs
  kwargs = dict(recurrent_fn=recurrent_fn, num_simulations=24, dirichlet_fraction=0.25)
  ours = _jit_policy(js.compat.muzero_policy, **kwargs)(jax.random.PRNGKey(3), root_output,
                                                        invalid)
  theirs = _jit_policy(mctx.muzero_policy, **kwargs)(jax.random.PRNGKey(3), root_output,
                                                     invalid)
  _assert_same_trees(ours.search_tree, theirs.search_tree)
  np.testing.assert_allclose(ours.action_weights, theirs.action_weights, rtol=1e-6)
  np.testing.assert_array_equal(ours.action, theirs.action)
  visits = np.asarray(ours.search_tree.summary().visit_counts)
  assert visits[1, 1:3].sum() == 0 and visits[4, 0] == 0  # invalid root actions unvisited
  assert (visits > 0).sum(axis=1).min() >= 2


def test_compat_gumbel_muzero_policy_matches_mctx(hashed_inputs):
  """Gumbel MuZero has no tie noise in mctx: unmodified mctx, identical trees."""
  root_output, invalid, recurrent_fn = hashed_inputs
  kwargs = dict(recurrent_fn=recurrent_fn, num_simulations=20, max_num_considered_actions=4,
                max_depth=4)
  ours = _jit_policy(js.compat.gumbel_muzero_policy, **kwargs)(jax.random.PRNGKey(5),
                                                               root_output, invalid)
  theirs = _jit_policy(mctx.gumbel_muzero_policy, **kwargs)(jax.random.PRNGKey(5),
                                                            root_output, invalid)
  np.testing.assert_array_equal(ours.search_tree.summary().visit_counts,
                                theirs.search_tree.summary().visit_counts)
  np.testing.assert_array_equal(ours.action, theirs.action)
  np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-6)
  np.testing.assert_array_equal(ours.search_tree.extra_data.root_gumbel,
                                theirs.search_tree.extra_data.root_gumbel)
  # max_depth=4 cuts simulations here, so mctx leaves nodes unused and the node numbering
  # differs (docs/mctx.md); the root statistics above must still agree exactly.
  assert int(jnp.max(jnp.sum(theirs.search_tree.node_visits == 0, axis=1))) > 0


def _stochastic_model():
  """A hashed stochastic MDP: decision and chance functions for mctx's Stochastic MuZero
  (3 chance outcomes, random afterstate values, rewards, priors; discount 0.9)."""
  num_actions, num_chance = 4, 3

  def unit(code, salt):
    return hashed._unit(hashed._mix(code ^ jnp.uint32(salt)))

  def decision_fn(params, key, action, state):
    del params, key
    code = hashed._mix(state ^ hashed._mix(action.astype(jnp.uint32) + jnp.uint32(17)))
    salts = jnp.arange(num_chance, dtype=jnp.uint32) * jnp.uint32(0x27D4EB2F)
    logits = 2.0 * hashed._unit(hashed._mix(code[:, None] ^ salts)) - 1.0
    return mctx.DecisionRecurrentFnOutput(chance_logits=logits,
                                          afterstate_value=2.0 * unit(code, 5) - 1.0), code

  def chance_fn(params, key, outcome, afterstate):
    del params, key
    code = hashed._mix(afterstate ^ hashed._mix(outcome.astype(jnp.uint32) + jnp.uint32(99)))
    salts = jnp.arange(num_actions, dtype=jnp.uint32) * jnp.uint32(0x165667B1)
    logits = 2.0 * hashed._unit(hashed._mix(code[:, None] ^ salts)) - 1.0
    return mctx.ChanceRecurrentFnOutput(
        action_logits=logits, value=2.0 * unit(code, 7) - 1.0, reward=unit(code, 11) - 0.5,
        discount=jnp.full(code.shape, 0.9)), code

  batch_size = 5
  codes = hashed._mix(jnp.arange(batch_size, dtype=jnp.uint32) + jnp.uint32(3))
  root = mctx.RootFnOutput(
      prior_logits=2.0 * hashed._unit(hashed._mix(
          codes[:, None] ^ jnp.arange(num_actions, dtype=jnp.uint32))) - 1.0,
      value=2.0 * unit(codes, 1) - 1.0, embedding=codes)
  invalid = jnp.zeros((batch_size, num_actions), bool).at[2, 3].set(True)
  return root, invalid, decision_fn, chance_fn


def test_compat_stochastic_muzero_policy_matches_mctx(monkeypatch):
  """Also: mctx's own Q transform function (and mctx's output types, all through) plug into
  compat unchanged."""
  _without_tie_noise(monkeypatch)
  root, invalid, decision_fn, chance_fn = _stochastic_model()
  kwargs = dict(decision_recurrent_fn=decision_fn, chance_recurrent_fn=chance_fn,
                num_simulations=40, dirichlet_fraction=0.0)
  ours = _jit_policy(js.compat.stochastic_muzero_policy,
                     qtransform=mctx.qtransform_by_parent_and_siblings,
                     **kwargs)(jax.random.PRNGKey(2), root, invalid)
  theirs = _jit_policy(mctx.stochastic_muzero_policy, **kwargs)(jax.random.PRNGKey(2), root,
                                                                invalid)
  _assert_same_trees(ours.search_tree, theirs.search_tree)
  np.testing.assert_allclose(ours.action_weights, theirs.action_weights, rtol=1e-6)
  np.testing.assert_array_equal(ours.action, theirs.action)
  np.testing.assert_array_equal(ours.search_tree.embeddings.is_decision_node,
                                theirs.search_tree.embeddings.is_decision_node)
  visits = np.asarray(ours.search_tree.summary().visit_counts)
  assert visits[2, 3] == 0 and visits.sum(axis=1).min() >= 10
  # The search went through chance nodes (afterstates) to the states below them.
  tree = ours.search_tree
  created = np.asarray(tree.node_visits) > 0
  is_decision = np.asarray(tree.embeddings.is_decision_node)
  assert (created & ~is_decision).sum() > 0 and (created[:, 1:] & is_decision[:, 1:]).sum() > 0
