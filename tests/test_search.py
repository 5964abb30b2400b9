"""The engine: jit/vmap, determinism, batch independence, reuse, chance nodes, bad input."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import connect_four, hashed, stack_states, tictactoe
from jaxsearch.game import Estimate, Game, StepResult

import bit_exact

GAME = tictactoe.GAME
NUM_SIMULATIONS = 48


@functools.lru_cache(maxsize=None)
def _puct():
  search = js.policies.puct(GAME, js.estimators.rollout(GAME, 2), num_simulations=NUM_SIMULATIONS,
                            max_nodes=2 * NUM_SIMULATIONS + 1)
  return search, jax.jit(search)


def _positions(moves_list):
  return stack_states([tictactoe.state_from_moves(m) for m in moves_list])


ROOTS = [[], [4], [0, 4], [0, 1, 4], [0, 4, 8, 2]]


def _roots():
  return _positions(ROOTS)


def _trees_equal(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_jit_runs_and_counts_add_up():
  _, search = _puct()
  out = search(None, jax.random.PRNGKey(0), _roots())
  tree = out.tree
  assert out.action.shape == (5,) and out.visit_counts.shape == (5, 9)
  np.testing.assert_array_equal(np.asarray(out.visit_counts.sum(-1)), NUM_SIMULATIONS)
  # Every expanded non-terminal node has 1 + sum(child visits) visits (creation counts one).
  visits = np.asarray(tree.nodes.visits)
  child_sum = np.asarray(tree.slots.visits.sum(-1))
  allocated = np.arange(tree.max_nodes)[None] < np.asarray(tree.num_nodes)[:, None]
  open_nodes = allocated & ~np.asarray(tree.nodes.terminal)
  np.testing.assert_array_equal(visits[open_nodes], 1 + child_sum[open_nodes])
  # Each simulation either created a node or revisited a terminal one.
  terminal_revisits = np.sum((visits - 1) * (allocated & np.asarray(tree.nodes.terminal)), axis=1)
  np.testing.assert_array_equal(np.asarray(tree.num_nodes) - 1 + terminal_revisits,
                                NUM_SIMULATIONS)
  # Illegal (occupied) cells are never visited, at any depth.
  assert not np.any(np.asarray(tree.slots.visits) * ~np.asarray(tree.slots.legal))
  assert np.all(np.isfinite(np.asarray(out.q_values)))


def test_vmap_over_an_extra_batch_axis_matches_separate_calls():
  search, jitted = _puct()
  roots = _roots()
  stacked = jax.tree.map(lambda x: jnp.stack([x, x[::-1]]), roots)
  keys = jnp.stack([jax.random.PRNGKey(1), jax.random.PRNGKey(2)])
  both = jax.jit(jax.vmap(search, in_axes=(None, 0, 0)))(None, keys, stacked)
  first = jitted(None, keys[0], roots)
  np.testing.assert_array_equal(np.asarray(both.visit_counts[0]), np.asarray(first.visit_counts))
  np.testing.assert_array_equal(np.asarray(both.action[0]), np.asarray(first.action))


def test_same_key_gives_bit_identical_trees():
  _, search = _puct()
  a = search(None, jax.random.PRNGKey(7), _roots())
  b = search(None, jax.random.PRNGKey(7), _roots())
  _trees_equal(a, b)
  c = search(None, jax.random.PRNGKey(8), _roots())
  assert not np.array_equal(np.asarray(a.tree.nodes.value), np.asarray(c.tree.nodes.value))


def test_result_does_not_depend_on_batch_neighbours():
  _, search = _puct()
  roots = _roots()
  base = search(None, jax.random.PRNGKey(3), roots)
  # Same first root, other neighbours (same batch size).
  others = _positions([ROOTS[0], [8], [2, 6], [1], [3, 5]])
  moved = search(None, jax.random.PRNGKey(3), others)
  _trees_equal(jax.tree.map(lambda x: x[0], base.tree), jax.tree.map(lambda x: x[0], moved.tree))
  # And a different batch size: per-root keys are fold_in(key, index), not split(key, B).
  small = js.policies.puct(GAME, js.estimators.rollout(GAME, 2),
                           num_simulations=NUM_SIMULATIONS, max_nodes=2 * NUM_SIMULATIONS + 1)
  two = jax.jit(small)(None, jax.random.PRNGKey(3), jax.tree.map(lambda x: x[:2], roots))
  _trees_equal(jax.tree.map(lambda x: x[:2], base.tree), two.tree)


def test_visit_convention_is_pinned():
  """'node' (N = 1 + sum n, mctx) lets the prior act on a node's first selection;
  'children' (N = sum n) has sqrt(N) = 0 there, so the first pick falls to slot 0."""
  logits = jnp.array([0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0])

  def estimator(params, key, states):
    batch = js.estimators.batch_size_of(states)
    return Estimate(value=jnp.zeros((batch,)), prior_logits=jnp.tile(logits, (batch, 1)))

  roots = connect_four.states_from_moves([""])
  for convention, expected in (("node", 3), ("children", 0)):
    search = js.policies.puct(connect_four.GAME, estimator, num_simulations=1,
                              visit_convention=convention)
    out = jax.jit(search)(None, jax.random.PRNGKey(0), roots)
    assert int(jnp.argmax(out.visit_counts[0])) == expected, convention


def test_uct_visits_every_legal_action_first():
  search = js.policies.uct(GAME, js.estimators.uniform(), num_simulations=7)
  out = jax.jit(search)(None, jax.random.PRNGKey(0), _positions([[0, 4]]))
  np.testing.assert_array_equal(np.asarray(out.visit_counts[0]),
                                [0, 1, 1, 1, 0, 1, 1, 1, 1])


def test_reroot_keeps_the_subtree_and_search_continues():
  search, jitted = _puct()
  roots = _roots()
  out = jitted(None, jax.random.PRNGKey(0), roots)
  tree = out.tree
  child = js.tree.root_child(tree, out.action)
  kept = jax.jit(js.reroot)(tree, out.action)
  for b in range(tree.batch_size):
    c = int(child[b])
    assert c > 0
    assert int(kept.nodes.visits[b, 0]) == int(tree.nodes.visits[b, c])
    assert float(kept.nodes.value[b, 0]) == float(tree.nodes.value[b, c])
    np.testing.assert_array_equal(np.asarray(kept.slots.visits[b, 0]),
                                  np.asarray(tree.slots.visits[b, c]))
    # The subtree's size equals the child's descendants (+ itself), and nothing else is kept.
    descendants = 1
    frontier = [c]
    parents = np.asarray(tree.nodes.parent[b])
    while frontier:
      kids = [n for n in range(int(tree.num_nodes[b])) if parents[n] in frontier]
      descendants += len(kids)
      frontier = kids
    assert int(kept.num_nodes[b]) == descendants
    assert int(kept.nodes.parent[b, 0]) == -1 and int(kept.nodes.depth[b, 0]) == 0
    free = np.arange(tree.max_nodes) >= int(kept.num_nodes[b])
    assert not np.any(np.asarray(kept.nodes.visits[b])[free])
  # Continue searching from the kept subtrees: statistics accumulate.
  next_states = jax.tree.map(lambda x: x[jnp.arange(tree.batch_size), child], tree.nodes.state)
  again = jitted(None, jax.random.PRNGKey(1), next_states, kept)
  np.testing.assert_array_equal(
      np.asarray(again.tree.nodes.visits[:, 0]),
      np.asarray(kept.nodes.visits[:, 0]) + NUM_SIMULATIONS)
  # reroot under vmap (an extra batch axis) agrees.
  stacked = jax.tree.map(lambda x: jnp.stack([x, x]), tree)
  both = jax.jit(jax.vmap(js.reroot))(stacked, jnp.stack([out.action, out.action]))
  _trees_equal(jax.tree.map(lambda x: x[1], both), kept)


def test_reroot_into_unexpanded_child_restarts_from_given_state():
  _, jitted = _puct()
  roots = _roots()
  out = jitted(None, jax.random.PRNGKey(0), roots)
  unvisited = jnp.argmin(jnp.where(out.visit_counts > 0, 10**6, 0) +
                         jnp.where(jax.vmap(GAME.legal_actions)(roots), 0, 10**7), axis=-1)
  empty = js.reroot(out.tree, unvisited)
  has_unvisited = np.asarray(jnp.min(jnp.where(jax.vmap(GAME.legal_actions)(roots),
                                               out.visit_counts, 10**6), axis=-1) == 0)
  assert has_unvisited.any()
  assert np.all(np.asarray(empty.num_nodes)[has_unvisited] == 0)
  fresh = jitted(None, jax.random.PRNGKey(0), roots, empty)
  assert np.all(np.asarray(fresh.tree.nodes.visits[:, 0])[has_unvisited] == NUM_SIMULATIONS + 1)


def test_terminal_root_has_documented_result():
  _, jitted = _puct()
  won = _positions([[0, 3, 1, 4, 2]] * 5)  # X completed the top row
  out = jitted(None, jax.random.PRNGKey(0), won)
  np.testing.assert_array_equal(np.asarray(out.action), -1)
  np.testing.assert_array_equal(np.asarray(out.action_weights), 0.0)
  np.testing.assert_array_equal(np.asarray(out.root_value), 0.0)
  assert np.all(np.isfinite(np.asarray(out.q_values)))


def test_nan_estimates_stay_inside_their_tree():
  """Tree 0's estimator returns NaN: tree 0 counts it, the others are untouched."""
  clean = js.estimators.rollout(GAME, 2)

  def poisoned(params, key, states):
    estimate = clean(params, key, states)
    bad_row = jnp.arange(estimate.value.shape[0]) == 0
    return Estimate(value=jnp.where(bad_row, jnp.nan, estimate.value),
                    prior_logits=jnp.where(bad_row[:, None], jnp.nan, 0.0) * jnp.ones((1, 9)))

  roots = _roots()
  kwargs = dict(num_simulations=NUM_SIMULATIONS, max_nodes=2 * NUM_SIMULATIONS + 1)
  bad = bit_exact.jit(js.policies.puct(GAME, poisoned, **kwargs))(None, jax.random.PRNGKey(0), roots)
  good = bit_exact.jit(js.policies.puct(
      GAME, lambda p, k, s: clean(p, k, s).replace(prior_logits=jnp.zeros(
          (js.estimators.batch_size_of(s), 9))), **kwargs))(None, jax.random.PRNGKey(0), roots)
  for leaf in jax.tree.leaves(bad.tree):
    if jnp.issubdtype(leaf.dtype, jnp.floating):
      assert np.all(np.isfinite(np.asarray(leaf)))
  assert int(bad.tree.nonfinite_estimates[0]) > 0
  np.testing.assert_array_equal(np.asarray(bad.tree.nonfinite_estimates[1:]), 0)
  _trees_equal(jax.tree.map(lambda x: x[1:], bad.tree), jax.tree.map(lambda x: x[1:], good.tree))


def test_bad_sizes_and_shapes_raise_clear_errors():
  with pytest.raises(ValueError, match="max_nodes=10 is smaller than num_simulations"):
    js.policies.puct(GAME, js.estimators.uniform(), num_simulations=10, max_nodes=10)

  def wrong_value(params, key, states):
    return Estimate(value=jnp.zeros((js.estimators.batch_size_of(states), 2)))

  search = js.policies.puct(GAME, wrong_value, num_simulations=4)
  with pytest.raises(ValueError, match="Estimate.value must have shape"):
    search(None, jax.random.PRNGKey(0), _roots())

  def wrong_logits(params, key, states):
    batch = js.estimators.batch_size_of(states)
    return Estimate(value=jnp.zeros((batch,)), prior_logits=jnp.zeros((batch, 8)))

  search = js.policies.puct(GAME, wrong_logits, num_simulations=4)
  with pytest.raises(ValueError, match="Estimate.prior_logits must have shape"):
    search(None, jax.random.PRNGKey(0), _roots())
  search = js.policies.puct(GAME, js.estimators.uniform(), num_simulations=4)
  other = js.policies.puct(GAME, js.estimators.uniform(), num_simulations=4, max_nodes=9)
  tree = search(None, jax.random.PRNGKey(0), _roots()).tree
  with pytest.raises(ValueError, match="this search needs"):
    other(None, jax.random.PRNGKey(0), _roots(), tree)
  with pytest.raises(ValueError, match="reroot: action must have shape"):
    js.reroot(tree, jnp.zeros((3,), jnp.int32))


def test_default_tree_leaves_constant_slot_arrays_out():
  """With K = A and an estimator without action values, a search's tree stores neither the
  slots' actions nor their q̂1; the accessors give what was left out (slot k is action k, q̂1
  0), on the device and on a host copy alike, and a top-K cut stores the actions."""
  _, search = _puct()
  tree = search(None, jax.random.PRNGKey(0), _roots()).tree
  assert tree.slots.action is None and tree.slots.action_value is None
  np.testing.assert_array_equal(tree.slots.actions(),
                                np.broadcast_to(np.arange(9), tree.slots.visits.shape))
  assert tree.slots.action_values().shape == tree.slots.visits.shape
  assert not np.any(tree.slots.action_values())
  host = jax.tree.map(np.asarray, tree)
  assert isinstance(host.slots.actions(), np.ndarray)
  assert isinstance(host.slots.action_values(), np.ndarray)
  cut = js.policies.puct(GAME, js.estimators.uniform(), num_simulations=4, max_nodes=5,
                         num_slots=4)
  cut_tree = jax.eval_shape(cut.init_tree, None, jax.random.PRNGKey(0), _roots())
  assert cut_tree.slots.action is not None and cut_tree.slots.action_value is None


def test_reused_tree_of_other_sizes_raises_with_both_shapes():
  """docs/bad_input.md: a reused tree whose B, N, K, O or V differs from the search's, or made
  for the other backup, or holding another state structure, is refused at trace time (under
  ``jax.eval_shape``: nothing runs) with both shapes in the message."""
  from jaxsearch.games import garnet
  key = jax.random.PRNGKey(0)
  small = garnet.make_family(2, 5, 4, 2, 3, seed=1)  # O = 2
  wide = garnet.make_family(2, 5, 4, 3, 3, seed=1)  # O = 3, same states and actions
  estimator = garnet.estimator(small, bias=0.1, noise=0.1, seed=1)
  roots = jax.tree.map(lambda x: jnp.concatenate([x, x]), small.roots())  # B = 4

  def avts(game=small.game, **options):
    return js.policies.avts(game, estimator, **{"num_simulations": 4, "max_nodes": 16,
                                                 "num_buckets": 4, **options})

  def tree_of(search, tree_roots=roots):
    return jax.eval_shape(search.init_tree, None, key, tree_roots)

  def reuse(search, tree):
    """What ``search(params, key, roots, tree)`` does first (``search.run`` starts with it);
    traced alone, to skip tracing the simulation loop ten times."""
    return jax.eval_shape(lambda t: js.search.init_tree(search.model, search.config, None, key,
                                                        roots, t), tree)

  base = avts()
  assert jax.eval_shape(base, None, key, roots, tree_of(base)).tree.num_nodes.shape == (4,)
  with pytest.raises(ValueError, match=r"this search needs \(4, 16, 4, 2, 4"):  # the whole path
    jax.eval_shape(base, None, key, roots, tree_of(avts(max_nodes=20)))
  cases = [
      (tree_of(base, jax.tree.map(lambda x: x[:3], roots)), "(3, 16, 4, 2, 4"),  # B
      (tree_of(avts(max_nodes=20)), "(4, 20, 4, 2, 4"),  # N
      (tree_of(avts(num_slots=2)), "(4, 16, 2, 2, 4"),  # K
      (tree_of(avts(game=wide.game)), "(4, 16, 4, 3, 4"),  # O
      (tree_of(avts(num_buckets=8)), "(4, 16, 4, 2, 8"),  # V
  ]
  for tree, got in cases:
    with pytest.raises(ValueError, match=r"tree has \(B, N, K, O, V.*\) = " + re.escape(got)
                       + r".*this search needs \(4, 16, 4, 2, 4"):
      reuse(base, tree)
  # The running-mean backup's tree (no slot bounds, no debias statistics) in a Bellman search:
  # the parts it keeps differ.
  mean = js.policies.custom(small.game, estimator, selection=js.selection.uct(),
                            num_simulations=4, max_nodes=16, backup="mean")
  with pytest.raises(ValueError, match="other backup"):
    reuse(avts(num_buckets=1), tree_of(mean))
  # The same running-mean search over an estimator without action values: its trees do not
  # store q̂1, the garnet estimator's do.
  plain = js.policies.custom(small.game, js.estimators.uniform(), selection=js.selection.uct(),
                             num_simulations=4, max_nodes=16, backup="mean")
  assert tree_of(plain).slots.action_value is None
  assert tree_of(mean).slots.action_value is not None
  with pytest.raises(ValueError, match="stores slots.action_value and this one does not"):
    reuse(plain, tree_of(mean))
  with pytest.raises(ValueError, match="does not store slots.action_value and this one does"):
    reuse(mean, tree_of(plain))
  # A state of another structure (the Garnet state inside a tuple), sizes all equal.
  boxed = Game(name="boxed", num_actions=small.game.num_actions,
               init=lambda k: (small.game.init(k),),
               legal_actions=lambda s: small.game.legal_actions(s[0]),
               step=lambda s, a, o: (lambda r: r.replace(state=(r.state,)))(
                   small.game.step(s[0], a, o)),
               num_outcomes=2, outcome_probs=lambda s, a: small.game.outcome_probs(s[0], a),
               max_length=small.game.max_length, value_range=small.game.value_range)
  boxed_search = js.policies.avts(boxed, lambda p, k, s: estimator(p, k, s[0]),
                                  num_simulations=4, max_nodes=16, num_buckets=4)
  with pytest.raises(ValueError, match="nodes.state does not match"):
    reuse(base, tree_of(boxed_search, (roots,)))


def test_full_tree_stops_growing_without_corruption():
  """A reused tree can fill up: simulations then re-back existing leaves, counts stay sane.
  The file's PUCT search (room for 2 S + 1 = 97 nodes) reused twice on the same roots: 144
  simulations; where the tree filled (96 expansions), 48 simulations stopped without
  expanding (a terminal leaf or the full tree), each adding one visit to where it stopped
  beyond 1 + its slots' (late positions, small trees: 144 - expansions)."""
  _, jitted = _puct()
  roots = _roots()
  out = jitted(None, jax.random.PRNGKey(0), roots)
  for key in (1, 2):  # same roots, 48 more simulations each
    out = jitted(None, jax.random.PRNGKey(key), roots, out.tree)
  tree = jax.tree.map(np.asarray, out.tree)
  capacity = 2 * NUM_SIMULATIONS + 1
  np.testing.assert_array_equal(tree.num_nodes[:2], capacity)  # the two early positions fill
  assert np.all(tree.num_nodes <= capacity)
  np.testing.assert_array_equal(tree.nodes.visits[:, 0], 1 + 3 * NUM_SIMULATIONS)
  np.testing.assert_array_equal(np.asarray(out.visit_counts).sum(-1), 3 * NUM_SIMULATIONS)
  allocated = np.arange(capacity)[None] < tree.num_nodes[:, None]
  excess = np.where(allocated, tree.nodes.visits - 1 - tree.slots.visits.sum(-1), 0)
  assert np.all(excess >= 0)
  np.testing.assert_array_equal(excess.sum(-1), 3 * NUM_SIMULATIONS - (tree.num_nodes - 1))


def _coin_game():
  """One decision, then the game ends: action 0 pays 1 with probability 0.3 (expected 0.3);
  action 1 pays 0.5 or 0 with probabilities 0.8 / 0.2 (expected 0.4)."""
  probs = jnp.array([[0.7, 0.3, 0.0], [0.2, 0.0, 0.8]])
  payout = jnp.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])

  def init(key):
    return jnp.zeros((), jnp.int32)

  def legal_actions(state):
    return jnp.broadcast_to(state == 0, (2,))

  def step(state, action, outcome):
    return StepResult(state=jnp.ones((), jnp.int32), reward=payout[action, outcome],
                      discount=jnp.float32(0.0), terminal=jnp.bool_(True))

  return Game(name="coin", num_actions=2, init=init, legal_actions=legal_actions, step=step,
              num_outcomes=3, outcome_probs=lambda s, a: probs[a], max_length=1,
              value_range=(0.0, 1.0))


@pytest.mark.parametrize("outcome_rule", ["balanced", "sample"])
def test_chance_outcomes_average_to_expected_values(outcome_rule):
  game = _coin_game()
  search = js.policies.uct(game, js.estimators.uniform(), num_simulations=400,
                           outcome_rule=outcome_rule)
  out = jax.jit(search)(None, jax.random.PRNGKey(0), jnp.zeros((3,), jnp.int32))
  tree = out.tree
  q = np.asarray(out.q_values)
  payout = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
  for b in range(3):
    for action in range(2):
      # Q is exactly the visit-weighted mean of the outcomes' rewards ...
      counts = np.asarray(tree.chance.visits[b, int(tree.slots.chance[b, 0, action])])
      np.testing.assert_allclose(q[b, action], counts @ payout[action] / counts.sum(),
                                 rtol=1e-5)
  if outcome_rule == "balanced":
    # ... and with balanced outcomes it is the expectation up to one visit's worth.
    np.testing.assert_allclose(q[:, 0], 0.3, atol=0.05)
    np.testing.assert_allclose(q[:, 1], 0.4, atol=0.02)
    np.testing.assert_array_equal(np.asarray(out.action), 1)
  # Zero-probability outcomes are never expanded; records hold the game's probabilities.
  slot_chance = np.asarray(tree.slots.chance[:, 0])
  for b in range(3):
    for action, impossible in ((0, 2), (1, 1)):
      record = slot_chance[b, action]
      assert int(tree.chance.child[b, record, impossible]) == -1
      np.testing.assert_allclose(np.asarray(tree.chance.prob[b, record]),
                                 np.asarray(_coin_game().outcome_probs(0, action)))
  if outcome_rule == "balanced":  # deterministic: outcome counts track p(o) within one visit
    record = slot_chance[0, 1]
    counts = np.asarray(tree.chance.visits[0, record])
    total = counts.sum()
    assert abs(counts[2] - 0.8 * total) <= 1.0


def test_dirichlet_noise_touches_legal_actions_only():
  search = js.policies.alphazero(connect_four.GAME, js.estimators.uniform(),
                                 num_simulations=64, temperature=1.0)
  full_column = "444444"
  roots = connect_four.states_from_moves([full_column] * 4)
  out = jax.jit(search)(None, jax.random.PRNGKey(0), roots)
  assert np.all(np.asarray(out.visit_counts[:, 3]) == 0)
  np.testing.assert_allclose(np.asarray(out.action_weights.sum(-1)), 1.0, rtol=1e-6)
  # Noise makes the four identical roots search differently.
  visits = np.asarray(out.visit_counts)
  assert any(not np.array_equal(visits[0], visits[b]) for b in range(1, 4))
  assert np.all(np.asarray(out.action) != 3)


def test_hashed_game_long_paths_respect_max_depth():
  game = hashed.make(4)
  search = js.policies.puct(game, hashed.estimator(4), num_simulations=30, max_depth=5)
  out = jax.jit(search)(None, jax.random.PRNGKey(0), hashed.distinct_roots(game, 3))
  assert int(out.tree.nodes.depth.max()) <= 5
  assert int(out.visit_counts.sum()) == 90


def test_init_tree_then_reuse_compiles_once():
  search, _ = _puct()
  jitted = jax.jit(search)
  roots = _roots()
  tree = search.init_tree(None, jax.random.PRNGKey(0), roots)
  out = jitted(None, jax.random.PRNGKey(0), roots, tree)
  compiled = jitted._cache_size()
  child_states = jax.tree.map(
      lambda x: x[jnp.arange(5), js.tree.root_child(out.tree, out.action)], out.tree.nodes.state)
  jitted(None, jax.random.PRNGKey(1), child_states, js.reroot(out.tree, out.action))
  assert jitted._cache_size() == compiled  # the reused-tree call compiled nothing new


def test_descent_ignores_what_earlier_descents_left_in_the_step_buffer():
  """The step buffer passes from simulation to simulation uncleared: a descent over a buffer
  full of stale rows must record the same path as one over an empty buffer."""
  from jaxsearch.search.descent import select, empty_steps, root_prior
  search, jitted = _puct()
  tree = jitted(None, jax.random.PRNGKey(3), _roots()).tree
  plan = search.plan
  root = root_prior(tree, tree.slots.prior_logits[:, 0], plan=plan)

  @jax.jit
  def descend(steps):
    return select(tree, root, None, steps, plan=plan)[0]

  empty = empty_steps(tree.batch_size, plan.max_depth)
  stale = jax.random.randint(jax.random.PRNGKey(1), empty.shape, 0, 7, jnp.int32)
  clean, dirty = descend(empty), descend(stale)
  _trees_equal(clean.replace(steps=None), dirty.replace(steps=None))
  lengths = np.asarray(clean.length)
  assert lengths.max() >= 2  # the grown trees give paths several edges long
  for depth in range(int(lengths.max()) + 1):
    reached = depth <= lengths
    np.testing.assert_array_equal(np.asarray(dirty.node_at(jnp.full_like(clean.length, depth)))[reached],
                                  np.asarray(clean.nodes)[reached, depth])
