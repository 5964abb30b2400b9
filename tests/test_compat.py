"""``jaxsearch.compat`` as mctx: jit and vmap, traced hyperparameters, ``loop_fn``,
``search`` with mctx's selection functions, the tree layout, and bad input.

Parity with the real mctx is in test_mctx_parity.py; mctx's own suite in
test_compat_mctx_suite.py. Small shapes, one compiled function per policy (module fixtures).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch.compat as mctx

B, A, C, S = 4, 5, 3, 12


def _model():
  """A deterministic toy model: the embedding is an int code, everything hashes from it."""

  def unit(code, salt):
    code = (code * 1103515245 + salt * 12345 + 7) % (1 << 24)
    return code.astype(jnp.float32) / (1 << 24)

  def logits_of(code, width, salt):
    return 2.0 * unit(code[:, None] * 31 + jnp.arange(width)[None, :], salt) - 1.0

  def recurrent_fn(params, key, action, code):
    del params, key
    code = (code * 7 + action + 1) % 100003
    return mctx.RecurrentFnOutput(reward=unit(code, 1) - 0.5, discount=jnp.full(code.shape, 0.9),
                                  prior_logits=logits_of(code, A, 2),
                                  value=2.0 * unit(code, 3) - 1.0), code

  def decision_fn(params, key, action, code):
    del params, key
    after = (code * 5 + action + 3) % 100003
    return mctx.DecisionRecurrentFnOutput(chance_logits=logits_of(after, C, 4),
                                          afterstate_value=unit(after, 5) - 0.5), after

  def chance_fn(params, key, outcome, after):
    del params, key
    code = (after * 11 + outcome + 2) % 100003
    return mctx.ChanceRecurrentFnOutput(action_logits=logits_of(code, A, 6),
                                        value=unit(code, 7) - 0.5, reward=unit(code, 8),
                                        discount=jnp.full(code.shape, 0.9)), code

  codes = jnp.arange(B, dtype=jnp.int32) * 17 + 1
  root = mctx.RootFnOutput(prior_logits=logits_of(codes, A, 9), value=unit(codes, 10),
                           embedding=codes)
  invalid = jnp.zeros((B, A), bool).at[0, 1].set(True).at[2, 4].set(True)
  return root, invalid, recurrent_fn, decision_fn, chance_fn


ROOT, INVALID, RECURRENT_FN, DECISION_FN, CHANCE_FN = _model()


@pytest.fixture(scope="module")
def muzero():
  """``(keys[K], temperature, fraction, alpha, pb_c_init) -> PolicyOutput`` vmapped over keys,
  every hyperparameter a traced argument."""

  def run(key, temperature, fraction, alpha, pb_c_init):
    return mctx.muzero_policy((), key, ROOT, RECURRENT_FN, S, INVALID, temperature=temperature,
                              dirichlet_fraction=fraction, dirichlet_alpha=alpha,
                              pb_c_init=pb_c_init)

  return jax.jit(jax.vmap(run, in_axes=(0, None, None, None, None)))


@pytest.fixture(scope="module")
def gumbel():
  def run(key, gumbel_scale, value_scale):
    qtransform = functools.partial(mctx.qtransform_completed_by_mix_value,
                                   value_scale=value_scale)
    return mctx.gumbel_muzero_policy((), key, ROOT, RECURRENT_FN, S, INVALID,
                                     qtransform=qtransform, max_num_considered_actions=4,
                                     gumbel_scale=gumbel_scale)

  return jax.jit(jax.vmap(run, in_axes=(0, None, None)))


def _one(tree):
  """The first of a vmapped batch of outputs."""
  return jax.tree.map(lambda x: x[0], tree)


def _keys(n):
  return jax.random.split(jax.random.PRNGKey(0), n)


def _visits(out):
  """Root visit counts ``[..., B, A]`` (``summary()`` wants one batch axis, as in mctx)."""
  return np.asarray(out.search_tree.children_visits[..., 0, :])


def test_muzero_traced_hyperparameters_under_jit_and_vmap(muzero):
  keys = _keys(6)
  plain = muzero(keys, 0.0, 0.0, 0.3, 1.25)
  visits = _visits(plain)
  assert visits.shape == (6, B, A) and np.all(visits.sum(-1) == S)
  assert np.all(visits[..., 0, 1] == 0) and np.all(visits[..., 2, 4] == 0)
  # No noise: every key searches the same trees; temperature 0 plays the most visited action.
  assert np.all(visits == visits[:1])
  np.testing.assert_array_equal(plain.action, np.argmax(visits, -1))
  # Temperature 1 samples (some key plays another action somewhere).
  assert np.any(np.asarray(muzero(keys, 1.0, 0.0, 0.3, 1.25).action) != np.argmax(visits, -1))
  # Dirichlet noise as a traced fraction: the keys' trees now differ; invalid stays unvisited.
  noisy = _visits(muzero(keys, 0.0, 0.9, 0.3, 1.25))
  assert np.any(noisy != noisy[:1])
  assert np.all(noisy[..., 0, 1] == 0) and np.all(noisy[..., 2, 4] == 0)
  # A traced exploration constant changes the search.
  assert np.any(_visits(muzero(keys, 0.0, 0.0, 0.3, 50.0)) != visits)


def test_gumbel_traced_hyperparameters_under_jit_and_vmap(gumbel):
  keys = _keys(4)
  out = gumbel(keys, 1.0, 0.1)
  visits = _visits(out)
  assert visits.shape == (4, B, A) and np.all(visits.sum(-1) == S)
  assert np.all(visits[:, 0, 1] == 0) and np.all(visits[:, 2, 4] == 0)
  weights = np.asarray(out.action_weights)
  np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
  assert np.all(weights[:, 0, 1] == 0) and np.all(weights[:, 2, 4] == 0)
  # The action is a most visited one.
  chosen = np.take_along_axis(visits, np.asarray(out.action)[..., None], -1)[..., 0]
  assert np.all(chosen == visits.max(-1))
  # A traced gumbel_scale: 0 is deterministic (every key the same search), 1 is not.
  deterministic = _visits(gumbel(keys, 0.0, 0.1))
  assert np.all(deterministic == deterministic[:1])
  assert np.any(visits != deterministic)
  # A traced value scale changes the improved policy.
  assert not np.allclose(gumbel(keys, 1.0, 2.0).action_weights, weights)


def test_stochastic_muzero_under_jit_and_vmap():
  run = jax.jit(jax.vmap(lambda key, temperature: mctx.stochastic_muzero_policy(
      (), key, ROOT, DECISION_FN, CHANCE_FN, 2 * S, INVALID, temperature=temperature,
      dirichlet_fraction=0.0)))
  out = run(_keys(3), jnp.zeros((3,)))
  visits = _visits(out)
  assert visits.shape == (3, B, A) and np.all(visits == visits[:1])
  assert np.all(visits[:, 0, 1] == 0) and np.all(visits[:, 2, 4] == 0)
  tree = out.search_tree
  assert tree.children_index.shape[-1] == A  # the action part, as mctx returns it
  created = np.asarray(tree.node_visits) > 0
  is_decision = np.asarray(tree.embeddings.is_decision_node)
  # Afterstates (chance nodes) hang below the root, decision nodes below them.
  parents = np.asarray(tree.parents)
  chance_nodes = created & ~is_decision
  assert chance_nodes.sum() > 0
  assert np.all(is_decision[np.nonzero(chance_nodes)[:2] + (np.maximum(
      parents[chance_nodes], 0),)])
  np.testing.assert_array_equal(out.action, np.argmax(visits, -1))


def test_tree_layout_is_consistent(gumbel):
  tree = _one(gumbel(_keys(4), 1.0, 0.1).search_tree)
  assert tree.num_simulations == S and tree.num_actions == A
  index = np.asarray(tree.children_index)
  parents, actions = np.asarray(tree.parents), np.asarray(tree.action_from_parent)
  visits, child_visits = np.asarray(tree.node_visits), np.asarray(tree.children_visits)
  for b in range(B):
    for node, action in zip(*np.nonzero(index[b] >= 0)):
      child = index[b, node, action]
      assert parents[b, child] == node and actions[b, child] == action and child > node
      assert visits[b, child] == child_visits[b, node, action]
  summary = tree.summary()
  q = np.asarray(summary.qvalues)
  expected = np.asarray(tree.children_rewards[:, 0] + tree.children_discounts[:, 0] *
                        tree.children_values[:, 0])
  np.testing.assert_allclose(q, expected)
  np.testing.assert_allclose(summary.value, tree.node_values[:, 0])
  assert tree.extra_data.root_gumbel.shape == (B, A)


def test_search_with_mctx_selection_functions_matches_the_policy(gumbel):
  """``compat.search`` driven by mctx's Gumbel selection functions builds the policy's tree."""
  key = _keys(4)[0]
  out = _one(gumbel(_keys(4), 1.0, 0.1))
  qtransform = functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=0.1)
  logits = jnp.where(INVALID, jnp.finfo(jnp.float32).min,
                     ROOT.prior_logits - ROOT.prior_logits.max(-1, keepdims=True))

  @jax.jit
  def run(gumbel_draw):
    return mctx.search(
        (), jax.random.split(key)[0], root=ROOT.replace(prior_logits=logits),
        recurrent_fn=RECURRENT_FN,
        root_action_selection_fn=functools.partial(
            mctx.gumbel_muzero_root_action_selection, num_simulations=S,
            max_num_considered_actions=4, qtransform=qtransform),
        interior_action_selection_fn=functools.partial(
            mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform),
        num_simulations=S, invalid_actions=INVALID,
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel_draw))

  tree = run(out.search_tree.extra_data.root_gumbel)
  for field in ("node_visits", "children_index", "children_visits"):
    np.testing.assert_array_equal(getattr(tree, field), getattr(out.search_tree, field))


def test_a_fori_loop_function_is_honoured(muzero):
  calls = []

  def my_fori_loop(lower, upper, body, init):
    calls.append((lower, upper))
    return jax.lax.fori_loop(lower, upper, body, init)

  out = jax.jit(lambda key: mctx.muzero_policy((), key, ROOT, RECURRENT_FN, S, INVALID,
                                               loop_fn=my_fori_loop, temperature=0.0,
                                               dirichlet_fraction=0.0))(jax.random.PRNGKey(1))
  assert (0, S) in calls  # called as mctx calls it, once for the whole search
  expected = muzero(_keys(1), 0.0, 0.0, 0.3, 1.25)
  np.testing.assert_array_equal(_visits(out), _visits(expected)[0])
  np.testing.assert_array_equal(out.search_tree.children_index,
                                expected.search_tree.children_index[0])


@pytest.mark.parametrize("loop_fn, message", [
    (jax.lax.while_loop, "loop_fn must be a fori-loop"),
    (jax.lax.scan, "loop_fn must be a fori-loop"),
    ("fori", "not callable"),
    (lambda lower, upper, body, init: init, "returned"),
])
def test_a_loop_fn_that_is_not_a_fori_loop_is_named(loop_fn, message):
  with pytest.raises(TypeError, match=message):
    mctx.muzero_policy((), jax.random.PRNGKey(0), ROOT, RECURRENT_FN, S, loop_fn=loop_fn)


@pytest.mark.parametrize("policy, args", [
    (mctx.muzero_policy, (RECURRENT_FN,)),
    (mctx.gumbel_muzero_policy, (RECURRENT_FN,)),
    (mctx.stochastic_muzero_policy, (DECISION_FN, CHANCE_FN)),
])
def test_unknown_keywords_are_named(policy, args):
  with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) 'num_sims'"):
    policy((), jax.random.PRNGKey(0), ROOT, *args, S, num_sims=3)


def test_static_sizes_must_be_python_ints():
  with pytest.raises(ValueError, match="num_simulations"):
    mctx.muzero_policy((), jax.random.PRNGKey(0), ROOT, RECURRENT_FN, jnp.int32(4))
  with pytest.raises(ValueError, match="max_depth"):
    mctx.muzero_policy((), jax.random.PRNGKey(0), ROOT, RECURRENT_FN, S, max_depth=0)
  with pytest.raises(ValueError, match="max_num_considered_actions"):
    mctx.gumbel_muzero_policy((), jax.random.PRNGKey(0), ROOT, RECURRENT_FN, S,
                              max_num_considered_actions=2.5)


def test_selection_functions_cannot_read_other_extra_data():
  """Inside ``search``, a selection function reading extra_data that is not Gumbel MuZero's
  gets an error that says so."""

  def reads_extra(key, tree, node_index, depth=0):
    return jnp.argmax(tree.extra_data.table[node_index]).astype(jnp.int32)

  with pytest.raises(ValueError, match="extra_data"):
    jax.jit(lambda key: mctx.search(
        (), key, root=ROOT, recurrent_fn=RECURRENT_FN, root_action_selection_fn=reads_extra,
        interior_action_selection_fn=reads_extra, num_simulations=2,
        extra_data={"table": jnp.zeros((B, A))}))(jax.random.PRNGKey(0))


def test_mctx_names_are_all_here():
  expected = {"ChanceRecurrentFnOutput", "DecisionRecurrentFnOutput", "GumbelMuZeroExtraData",
              "InteriorActionSelectionFn", "LoopFn", "PolicyOutput", "RecurrentFn",
              "RecurrentFnOutput", "RecurrentState", "RootActionSelectionFn", "RootFnOutput",
              "Tree", "gumbel_muzero_interior_action_selection", "gumbel_muzero_policy",
              "gumbel_muzero_root_action_selection", "muzero_action_selection",
              "muzero_policy", "qtransform_by_min_max", "qtransform_by_parent_and_siblings",
              "qtransform_completed_by_mix_value", "search", "stochastic_muzero_policy"}
  assert expected <= set(mctx.__all__)
  assert all(hasattr(mctx, name) for name in expected)


def test_tie_noise_breaks_ties_at_random_and_an_all_invalid_root_is_not_searched():
  """With ``tie_noise=True`` (mctx's 1e-7 noise) equal scores go to random actions; a root
  whose actions are all invalid is terminal: no visits, uniform weights."""
  zeros = jnp.zeros((B, A))

  def flat(params, key, action, embedding):
    del params, key, action
    return mctx.RecurrentFnOutput(reward=zeros[:, 0], discount=zeros[:, 0], prior_logits=zeros,
                                  value=zeros[:, 0]), embedding

  root = mctx.RootFnOutput(prior_logits=zeros, value=zeros[:, 0], embedding=zeros[:, 0])
  invalid = jnp.zeros((B, A), bool).at[3].set(True)
  run = jax.jit(jax.vmap(lambda key: mctx.muzero_policy(
      (), key, root, flat, 3, invalid, dirichlet_fraction=0.0, tie_noise=True)))
  out = run(_keys(8))
  visits = _visits(out)
  # 3 simulations over 5 tied actions: 3 distinct actions, not always the same ones.
  assert np.all(visits[:, :3].max(-1) == 1) and np.all(visits[:, :3].sum(-1) == 3)
  assert len({tuple(row) for row in visits[:, 0]}) > 1
  assert np.all(visits[:, 3] == 0)
  np.testing.assert_allclose(out.action_weights[:, 3], 1.0 / A)
