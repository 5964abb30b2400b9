"""Issue 5 in the engine: the Gumbel MuZero root, entropy-guided PUCT and the π̄ variants.

* Gumbel: against ``mctx.gumbel_muzero_policy`` on the hashed toy MDP with the same Gumbel draw
  (identical trees node by node, final action, action weights), and the Sequential Halving
  schedule read back from the tree (docs/algorithms.md §5).
* Entropy PUCT: the §4 vector; the subtree entropy ``H``, leaf count ``K`` and all-terminal
  flag kept in the tree equal a brute-force enumeration of frontier leaves after random
  simulations (tic-tac-toe: terminals; Garnet: chance outcomes; π̂ and π̄ playouts; after a
  reroot); the forced-move property; the one-level proxy.
* π̄: SEARCH / ACT / LEARN as options of the policies.
Everything runs under ``jax.jit``; the searches also under ``jax.vmap``.
"""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet, hashed, tictactoe
from jaxsearch import entropy as entropy_lib
from jaxsearch import gumbel as gumbel_lib
from jaxsearch.game import Game, StepResult

# ---- entropy: the §4 vector ----------------------------------------------------------------


@jax.jit
def _vector_case():
  # Child a: π = [0.2, 0.3, 0.5] over 3 unexpanded edges.
  legal3 = jnp.ones(3, bool)
  h_a, k_a, c_a = entropy_lib.node_stats(jnp.array([0.2, 0.3, 0.5]), legal3, False,
                                         jnp.zeros(3), jnp.ones(3), jnp.zeros(3, bool))
  # Root: π = [0.5, 0.5], slot a expanded (one outcome, child a), slot b unexpanded.
  edge = entropy_lib.edge_stats(jnp.array([True, False]), jnp.array([[1.0], [0.0]]),
                                jnp.array([[1], [-1]]), jnp.stack([h_a, 0.0])[:, None],
                                jnp.stack([k_a, 1.0])[:, None], jnp.zeros((2, 1), bool))
  h, k, c = entropy_lib.node_stats(jnp.array([0.5, 0.5]), jnp.ones(2, bool), False, *edge)
  return (k_a, c_a, entropy_lib.normalized(h_a, k_a, c_a), h, k, entropy_lib.normalized(h, k, c),
          entropy_lib.normalized(0.0, 1.0, True), entropy_lib.normalized(0.0, 1.0, False))


def test_entropy_vector_of_algorithms_md():
  k_a, c_a, e_a, h, k, e, e_closed, e_single = map(np.asarray, _vector_case())
  assert float(k_a) == 3 and not bool(c_a)
  np.testing.assert_allclose(float(e_a), 0.9372306, rtol=1e-6)
  leaves = np.array([0.5, 0.1, 0.15, 0.25])
  np.testing.assert_allclose(float(h), -(leaves * np.log(leaves)).sum(), rtol=1e-6)
  np.testing.assert_allclose(float(h), 1.2079737, rtol=1e-6)
  assert float(k) == 4
  np.testing.assert_allclose(float(e), 0.8713688, rtol=1e-6)
  # Terminal leaves only: E = 1; a single leaf: E = 0.
  assert float(e_closed) == 1.0 and float(e_single) == 0.0


# ---- entropy: brute force over the tree -----------------------------------------------------

def _pibar_of(t, n):
  """π̄ of node ``n`` of the NumPy tree ``t`` (one tree)."""
  q = t.slots.value[n]
  view = js.selection.NodeView(
      visits=t.nodes.visits[n], value=t.nodes.value[n], child_visits=t.slots.visits[n],
      child_values=q, prior_logits=t.slots.prior_logits[n], action_values=q,
      legal=t.slots.legal[n], depth=np.int32(0), debiased_values=q, value_variance=q,
      upper_bounds=q)
  return np.asarray(_pibar_jit(view), np.float64)


_pibar_jit = jax.jit(lambda view: js.selection.pibar_policy(view, 1.25))


def _numpy_tree(tree, b):
  return jax.tree.map(lambda x: np.asarray(x[b]), tree)


def _enumerate(t, node, playout):
  """Frontier-leaf probabilities below ``node`` of the NumPy tree ``t`` (float64) and whether
  all of them are terminal."""
  leaves, closed = [], [True]

  def visit(n, p):
    legal = t.slots.legal[n]
    if t.nodes.terminal[n] or not legal.any():
      leaves.append(p)
      closed[0] &= bool(t.nodes.terminal[n])
      return
    if playout == "pi_hat":
      pi = np.where(legal, 1.0 + t.slots.visits[n], 0.0)
      pi = pi / pi.sum()
    else:
      pi = _pibar_of(t, n)
    for s in np.nonzero(legal)[0]:
      c = t.slots.chance[n, s]
      if c < 0:
        leaves.append(p * pi[s])
        closed[0] = False
        continue
      for o in np.nonzero(t.chance.prob[c] > 0)[0]:
        q = p * pi[s] * t.chance.prob[c, o]
        child = t.chance.child[c, o]
        if child < 0:
          leaves.append(q)
          closed[0] = False
        else:
          visit(child, q)

  visit(node, 1.0)
  return np.array(leaves), closed[0]


def _check_against_enumeration(tree, playout="pi_hat", nodes_per_tree=None):
  checked = 0
  for b in range(tree.batch_size):
    t = _numpy_tree(tree, b)
    count = int(t.num_nodes)
    for n in range(count if nodes_per_tree is None else min(count, nodes_per_tree)):
      probs, closed = _enumerate(t, n, playout)
      positive = probs[probs > 0]
      entropy = -(positive * np.log(positive)).sum()
      np.testing.assert_allclose(t.entropy.entropy[n], entropy, atol=2e-5,
                                 err_msg=f"tree {b} node {n}")
      assert t.entropy.leaves[n] == len(probs), (b, n)
      assert bool(t.entropy.closed[n]) == closed, (b, n)
      checked += 1
  return checked


TTT_OPENINGS = [[], [4], [0, 4, 8, 2, 6, 3]]


def _ttt_roots():
  return jax.tree.map(lambda *x: jnp.stack(x),
                      *[tictactoe.state_from_moves(m) for m in TTT_OPENINGS])


_random_ttt = js.policies.custom(tictactoe.GAME, js.estimators.uniform(),
                                 selection=js.selection.pibar_sample(), num_simulations=48,
                                 subtree_entropy="full")
_random_ttt_jit = jax.jit(_random_ttt)


@pytest.mark.slow
def test_entropy_equals_enumeration_tictactoe_and_reroot():
  out = _random_ttt_jit(None, jax.random.PRNGKey(0), _ttt_roots())
  assert _check_against_enumeration(out.tree) > 100
  assert not bool(out.tree.entropy.closed[0, 0])
  # Fully expanded subtrees above terminal leaves exist here: they are closed (E = 1).
  assert bool(jnp.any(out.tree.entropy.closed & ~out.tree.nodes.terminal))
  # Subtree reuse keeps the statistics (they depend on the subtree only) and the next search
  # keeps them exact.
  kept = js.tree.reroot(out.tree, out.action)
  next_roots = jax.vmap(lambda s, a: tictactoe.GAME.step(s, a, 0).state)(_ttt_roots(),
                                                                          out.action)
  again = _random_ttt_jit(None, jax.random.PRNGKey(1), next_roots, kept)
  _check_against_enumeration(again.tree)


_garnet_family = garnet.make_family(2, 6, 4, 2, 4, seed=0)
_garnet_estimator = garnet.estimator(_garnet_family, noise=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("playout", ["pi_hat", "pibar"])
def test_entropy_equals_enumeration_with_chance_outcomes(playout):
  search = js.policies.custom(_garnet_family.game, _garnet_estimator,
                              selection=js.selection.pibar_sample(), num_simulations=40,
                              subtree_entropy="full", entropy_policy=playout,
                              outcome_rule="sample")
  out = jax.jit(search)(None, jax.random.PRNGKey(3), _garnet_family.roots())
  assert int(out.tree.num_chance.min()) > 5
  assert (np.asarray(out.tree.chance.child) >= 0).sum(-1).max() == 2  # both outcomes seen
  _check_against_enumeration(out.tree, playout, nodes_per_tree=None if playout == "pi_hat"
                             else 12)


# ---- entropy PUCT: forced moves, the proxy, jit/vmap ----------------------------------------

def _forced_game() -> Game:
  """Root (kind 0): 3 actions. Action 0 leads to a node with a single legal move (kind 1),
  which leads to an open node (kind 2, 3 moves, like the root's other children). Depth 4."""

  def init(key):
    del key
    return jnp.zeros((2,), jnp.int32)  # kind, depth

  def legal_actions(state):
    kind, depth = state[0], state[1]
    live = depth < 4
    return live & jnp.where(kind == 1, jnp.arange(3) == 0, True)

  def step(state, action, outcome):
    del outcome
    kind = jnp.where((state[0] == 0) & (action == 0), 1, 2)
    new = jnp.stack([kind, state[1] + 1]).astype(jnp.int32)
    return StepResult(state=new, reward=jnp.float32(0.0), discount=jnp.float32(1.0),
                      terminal=new[1] >= 4)

  return Game(name="forced", num_actions=3, init=init, legal_actions=legal_actions, step=step,
              max_length=4, value_range=(-1.0, 1.0))


FORCED = _forced_game()


def _two_roots():
  return jnp.zeros((2, 2), jnp.int32)


@pytest.mark.parametrize("entropy", ["full", pytest.param("one_level", marks=pytest.mark.slow)])
def test_forced_move_keeps_its_unvisited_bonus(entropy):
  est = js.estimators.uniform()
  search = js.policies.entropy_puct(FORCED, est, num_simulations=1, c=1.0, entropy=entropy,
                                    max_nodes=8)
  ours = jax.jit(search)
  roots = _two_roots()
  key = jax.random.PRNGKey(0)
  # One simulation at a time (one compiled program): sim 1 visits action 0 (ties by index).
  tree = search.init_tree(None, key, roots)
  history = []
  for _ in range(3):
    out = ours(None, key, roots, tree)
    tree = out.tree
    history.append(np.asarray(out.visit_counts[0]).tolist())
  # PUCT would halve action 0's bonus after its visit and move on ([1, 1, 0]); with a single
  # reply below it E(s, 0) = 0, so entropy PUCT visits it again.
  assert history[1] == [2, 0, 0]
  forced_child = int(tree.chance.child[0, tree.slots.chance[0, 0, 0], 0])
  assert int(tree.nodes.terminal[0, forced_child]) == 0
  # After 2 visits the forced child has its single edge expanded into an open node (3 leaves,
  # uniform): E = 1 for the full rule, which then moves on; the one-level proxy sees one legal
  # move: E = 0 still.
  assert history[2] == ([2, 1, 0] if entropy == "full" else [3, 0, 0])
  e_forced = float(entropy_lib.normalized(tree.entropy.entropy[0, forced_child],
                                          tree.entropy.leaves[0, forced_child],
                                          tree.entropy.closed[0, forced_child]))
  np.testing.assert_allclose(e_forced, 1.0 if entropy == "full" else 0.0, atol=1e-6)


_ttt_entropy = js.policies.entropy_puct(tictactoe.GAME, js.estimators.uniform(),
                                        num_simulations=24)
_ttt_entropy_jit = jax.jit(_ttt_entropy)


@pytest.mark.slow
def test_entropy_puct_enumeration_and_reroot():
  roots = _ttt_roots()
  key = jax.random.PRNGKey(1)
  single = _ttt_entropy_jit(None, key, roots, _ttt_entropy.init_tree(None, key, roots))
  assert np.asarray(single.visit_counts).sum(-1).tolist() == [24, 24, 24]
  # π̂ playouts, checked by enumeration, closed (all-terminal) subtrees included (π̄
  # playouts: the slow Garnet test).
  _check_against_enumeration(single.tree)
  tree = single.tree
  assert bool(jnp.any(tree.entropy.closed & tree.nodes.terminal))
  # Subtree reuse keeps the statistics (they depend on the subtree only) and the next search
  # keeps them exact.
  kept = js.tree.reroot(tree, single.action)
  next_roots = jax.vmap(lambda s, a: tictactoe.GAME.step(s, a, 0).state)(roots, single.action)
  again = _ttt_entropy_jit(None, key, next_roots, kept)
  # Rows 0-1 fill up (the full-tree path re-backs existing nodes); row 2 played the win.
  assert np.asarray(again.tree.num_nodes).tolist() == [25, 25, 1]
  _check_against_enumeration(again.tree)


@pytest.mark.slow
def test_entropy_puct_jit_vmap_and_needs_entropy():
  search = _ttt_entropy
  roots = _ttt_roots()
  keys = jax.random.split(jax.random.PRNGKey(0), 2)
  batched = jax.jit(jax.vmap(lambda k: search(None, k, roots)))(keys)
  single = jax.jit(search)(None, keys[1], roots)
  np.testing.assert_array_equal(np.asarray(batched.visit_counts[1]),
                                np.asarray(single.visit_counts))
  # A rule that reads child_exploration without the statistics fails clearly.
  with pytest.raises(ValueError, match="subtree_entropy"):
    jax.jit(js.policies.custom(tictactoe.GAME, js.estimators.uniform(),
                               selection=js.selection.entropy_puct(),
                               num_simulations=4))(None, keys[0], roots)
  with pytest.raises(ValueError, match="backup='mean'"):
    js.policies.custom(tictactoe.GAME, js.estimators.uniform(), num_simulations=4,
                       selection=js.selection.thompson(), backup="bellman",
                       subtree_entropy="full")
  # Without the option the tree keeps no entropy statistics.
  plain = jax.jit(js.policies.puct(tictactoe.GAME, js.estimators.uniform(),
                                   num_simulations=4))(None, keys[0], roots)
  assert plain.tree.entropy is None


# ---- Gumbel MuZero: parity with mctx and the schedule --------------------------------------

def _root_slots_in_creation_order(tree, b):
  """Root slot whose subtree holds node j + 1, for every simulation j (one node per sim)."""
  t = jax.tree.map(lambda x: np.asarray(x[b]), tree)
  slot_of_child = {}
  for s in range(t.slots.chance.shape[1]):
    c = t.slots.chance[0, s]
    if c >= 0:
      slot_of_child[int(t.chance.child[c, 0])] = s
  result = []
  for j in range(1, int(t.num_nodes)):
    n = j
    while t.nodes.parent[n] != 0:
      n = t.nodes.parent[n]
    result.append(slot_of_child[n])
  return result


def _actions_into_nodes(tree, b):
  t = jax.tree.map(lambda x: np.asarray(x[b]), tree)
  actions = np.full(t.nodes.visits.shape[0], -1)
  for n in range(t.nodes.visits.shape[0]):
    for s in range(t.slots.chance.shape[1]):
      c = t.slots.chance[n, s]
      if c >= 0 and t.chance.child[c, 0] >= 0:
        actions[t.chance.child[c, 0]] = t.slots.actions()[n, s]
  return actions


@pytest.mark.parametrize("scale", [pytest.param(0.0, marks=pytest.mark.slow), 1.0])
def test_gumbel_matches_mctx_tree_action_and_weights(scale, monkeypatch):
  mctx = pytest.importorskip("mctx")
  num_actions, num_simulations, batch_size, considered = 6, 32, 6, 4
  game = hashed.make(num_actions, seed=3)
  estimator = hashed.estimator(num_actions)
  roots = hashed.distinct_roots(game, batch_size)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root_output, _ = root_fn(None, jax.random.PRNGKey(0), roots)
  mctx_key = jax.random.PRNGKey(7)
  theirs = jax.jit(lambda key: mctx.gumbel_muzero_policy(
      None, key, root_output, recurrent_fn, num_simulations,
      max_num_considered_actions=considered, gumbel_scale=scale))(mctx_key)
  # mctx's draw: the second half of split(key), scaled.
  noise = scale * jax.random.gumbel(jax.random.split(mctx_key)[1], (batch_size, num_actions))
  monkeypatch.setattr(js.search, "draw_root_noise", lambda *args: noise)
  ours = js.policies.gumbel(game, estimator, num_simulations=num_simulations,
                            max_num_considered_actions=considered, gumbel_scale=scale,
                            normalize="all")
  out = jax.jit(ours)(None, jax.random.PRNGKey(1), roots)
  summary = theirs.search_tree.summary()
  np.testing.assert_array_equal(np.asarray(out.visit_counts), np.asarray(summary.visit_counts))
  np.testing.assert_array_equal(np.asarray(out.action), np.asarray(theirs.action))
  np.testing.assert_allclose(np.asarray(out.action_weights), np.asarray(theirs.action_weights),
                             atol=1e-5)
  np.testing.assert_allclose(np.asarray(out.root_value), np.asarray(summary.value), atol=1e-5)
  assert out.policy_target is not None
  # The same tree node by node: same parents, same action into every node, so the same
  # sequence of root actions, simulation by simulation.
  tree = theirs.search_tree
  for b in range(batch_size):
    np.testing.assert_array_equal(np.asarray(out.tree.nodes.parent[b]),
                                  np.asarray(tree.parents[b]))
    np.testing.assert_array_equal(_actions_into_nodes(out.tree, b)[1:],
                                  np.asarray(tree.action_from_parent[b])[1:])
  assert int(out.tree.nodes.depth.max()) >= 3  # the interior rule mattered
  # Simulation j visited a root action whose count was the schedule's entry j.
  schedule = gumbel_lib.sequential_halving_visits(considered, num_simulations).tolist()
  for b in range(batch_size):
    slots = _root_slots_in_creation_order(out.tree, b)
    assert [slots[:j].count(slots[j]) for j in range(len(slots))] == schedule


@pytest.mark.slow
def test_gumbel_root_follows_the_sequential_halving_schedule_jit_vmap():
  num_actions, num_simulations = 8, 24
  game = hashed.make(num_actions, seed=5)
  estimator = hashed.estimator(num_actions)
  roots = hashed.distinct_roots(game, 3)
  search = js.policies.gumbel(game, estimator, num_simulations=num_simulations,
                              max_num_considered_actions=8)
  keys = jax.random.split(jax.random.PRNGKey(2), 2)
  batched = jax.jit(jax.vmap(lambda k: search(None, k, roots)))(keys)
  single = jax.jit(search)(None, keys[0], roots)
  np.testing.assert_array_equal(np.asarray(batched.action[0]), np.asarray(single.action))
  schedule = [0] * 8 + [1] * 4 + [2] * 4 + [3, 3, 4, 4, 5, 5, 6, 6]  # docs/algorithms.md §5
  np.testing.assert_array_equal(gumbel_lib.sequential_halving_visits(8, 24), schedule)
  for b in range(3):
    slots = _root_slots_in_creation_order(single.tree, b)
    before = [slots[:j].count(slots[j]) for j in range(len(slots))]
    assert before == schedule
    # The winner is the most visited and the weights are the improved policy.
    visits = np.asarray(single.visit_counts[b])
    assert visits[int(single.action[b])] == visits.max() == 7
    np.testing.assert_allclose(float(single.action_weights[b].sum()), 1.0, rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(single.policy_target),
                                np.asarray(single.action_weights))
  # Different Gumbel draws consider different actions.
  assert not np.array_equal(np.asarray(batched.visit_counts[0]),
                            np.asarray(batched.visit_counts[1]))


@pytest.mark.slow
def test_gumbel_with_illegal_actions_tictactoe():
  search = js.policies.gumbel(tictactoe.GAME, js.estimators.uniform(), num_simulations=16,
                              max_num_considered_actions=4, gumbel_scale=0.0)
  out = jax.jit(search)(None, jax.random.PRNGKey(0), _ttt_roots())
  legal = np.asarray(jax.vmap(tictactoe.GAME.legal_actions)(_ttt_roots()))
  visits = np.asarray(out.visit_counts)
  assert (visits[~legal] == 0).all() and (np.asarray(out.action_weights)[~legal] == 0).all()
  assert legal[np.arange(3), np.asarray(out.action)].all()
  # Row 2 has 3 legal moves, row 0 nine of which m = 4 are considered.
  assert (visits > 0).sum(-1).tolist() == [4, 4, 3]


# ---- π̄: SEARCH, ACT, LEARN ------------------------------------------------------------------

def test_pibar_search_act_learn():
  roots = _ttt_roots()
  est = js.estimators.uniform()
  act = js.policies.pibar(tictactoe.GAME, est, num_simulations=32, root_policy="pibar",
                          pibar_target=True)
  keys = jax.random.split(jax.random.PRNGKey(4), 2)
  out = jax.jit(act)(None, keys[0], roots)
  pibar = np.asarray(out.pibar)
  np.testing.assert_allclose(pibar.sum(-1), 1.0, rtol=1e-5)
  np.testing.assert_array_equal(np.asarray(out.policy_target), pibar)
  # ACT: the action is π̄'s argmax; the weights are its one-hot (τ = 0).
  np.testing.assert_array_equal(np.asarray(out.action), pibar.argmax(-1))
  np.testing.assert_array_equal(np.asarray(out.action_weights),
                                np.eye(9)[pibar.argmax(-1)])
  # π̄ is the regularised policy of the root's own statistics.
  expected = np.zeros((3, 9))
  for b in range(3):
    expected[b, np.asarray(out.tree.slots.actions()[b, 0])] = _pibar_of(
        _numpy_tree(out.tree, b), 0)
  np.testing.assert_allclose(pibar, expected, atol=1e-6)
  # Illegal actions get nothing; visits still follow the sampled π̄ (SEARCH).
  legal = np.asarray(jax.vmap(tictactoe.GAME.legal_actions)(roots))
  assert (pibar[~legal] == 0).all()
  assert np.asarray(out.visit_counts).sum(-1).tolist() == [32, 32, 32]
  with pytest.raises(ValueError):
    js.policies.pibar(tictactoe.GAME, est, num_simulations=8, root_policy="nope")


@pytest.mark.slow
def test_pibar_options_vmap_and_defaults():
  roots = _ttt_roots()
  est = js.estimators.uniform()
  act = js.policies.pibar(tictactoe.GAME, est, num_simulations=32, root_policy="pibar",
                          pibar_target=True)
  keys = jax.random.split(jax.random.PRNGKey(4), 2)
  batched = jax.jit(jax.vmap(lambda k: act(None, k, roots)))(keys)
  out = jax.jit(act)(None, keys[0], roots)
  np.testing.assert_array_equal(np.asarray(batched.action[0]), np.asarray(out.action))
  np.testing.assert_allclose(np.asarray(batched.pibar[0]), np.asarray(out.pibar), atol=1e-6)
  # LEARN alone leaves acting on visit counts; the default search has no target.
  learn = jax.jit(js.policies.puct(tictactoe.GAME, est, num_simulations=8,
                                   pibar_target=True))(None, keys[0], roots)
  assert learn.policy_target is not None
  assert np.asarray(learn.action_weights).max(-1).tolist() == [1.0, 1.0, 1.0]
  plain = jax.jit(js.policies.puct(tictactoe.GAME, est, num_simulations=8))(None, keys[0],
                                                                             roots)
  assert plain.policy_target is None and plain.pibar is None
