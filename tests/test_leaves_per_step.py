"""Several leaves per tree per step (``SearchConfig.leaves_per_step``, ``L``): valid trees (the
visits add up, no child written twice, the capacity kept), exact values where they are known,
``jit`` and ``vmap``, the capacity rule, the spread of the virtual visits, and ``L = 1`` the
one-path search.

Compiles dominate; every search is built and compiled once (``functools.lru_cache``).
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.game import Game, StepResult
from jaxsearch.games import garnet, stack_states, tictactoe

GAME = tictactoe.GAME
ROOTS = [[], [4], [0, 4], [0, 1, 4], [0, 4, 8, 2]]
# Tic-tac-toe positions one or two moves from the end (no line yet).
ENDINGS = [[0, 1, 2, 4, 3, 5, 7, 6], [0, 1, 2, 4, 3, 5, 7]]
ATOL = 1e-4


def _positions(moves_list):
  return stack_states([tictactoe.state_from_moves(m) for m in moves_list])


@functools.lru_cache(maxsize=None)
def _searched(make, key=0, roots=tuple(map(tuple, ROOTS))):
  """``make()`` (a search) jitted and run once on ``roots`` (tic-tac-toe moves) with ``key``."""
  search = make()
  return jax.tree.map(np.asarray, jax.jit(search)(None, jax.random.PRNGKey(key),
                                                  _positions(roots)))


def _puct(num_simulations=32, leaves=4, **options):
  return js.policies.puct(GAME, js.estimators.uniform(), num_simulations=num_simulations,
                          leaves_per_step=leaves, **options)


def _allocated(tree):
  return np.arange(tree.max_nodes)[None] < tree.num_nodes[:, None]


def _assert_valid(tree, num_simulations, paths_end_once=True):
  """The tree's links and counts: every created node is the child of exactly one outcome of
  one record, whose node is its parent; records belong to one slot each; nothing is written
  past ``num_nodes`` / ``num_chance``; the root has ``1 + S`` visits; and
  (running-mean backup) each path ends at one node: ``Σ (visits − slot visits) = 1 + S``
  (the root's creation counts one), ``visits = 1 + Σ slot visits`` where no path ended."""
  alloc = _allocated(tree)
  assert np.all(tree.num_nodes <= tree.max_nodes)
  assert np.all(tree.slots.visits[~alloc] == 0) and np.all(tree.chance.node[
      np.arange(tree.max_chance)[None] >= tree.num_chance[:, None]] == -1)
  for b in range(tree.batch_size):
    count, records = int(tree.num_nodes[b]), int(tree.num_chance[b])
    children = tree.chance.child[b][:records].reshape(-1)
    children = children[children >= 0]
    np.testing.assert_array_equal(np.sort(children), np.arange(1, count))  # each node once
    assert np.all(tree.chance.child[b][records:] == -1)
    slot_records = tree.slots.chance[b][:count].reshape(-1)
    np.testing.assert_array_equal(np.sort(slot_records[slot_records >= 0]),
                                  np.arange(records))  # each record in one slot
    assert np.all(tree.slots.chance[b][count:] == -1)
    for record in range(records):
      owner = tree.chance.node[b, record]
      for child in tree.chance.child[b, record]:
        if child >= 0:
          assert tree.nodes.parent[b, child] == owner
          assert tree.nodes.depth[b, child] == tree.nodes.depth[b, owner] + 1
  assert np.all(tree.nodes.visits[~alloc] == 0)
  np.testing.assert_array_equal(tree.nodes.visits[:, 0], 1 + num_simulations)
  ended = np.where(alloc, tree.nodes.visits - tree.slots.visits.sum(-1), 0)
  assert np.all(ended[alloc] >= 1)
  if paths_end_once:
    np.testing.assert_array_equal(ended.sum(-1), 1 + num_simulations)
  # Slot visits are those of its record's outcomes.
  for b in range(tree.batch_size):
    for node in range(int(tree.num_nodes[b])):
      for slot in np.flatnonzero(tree.slots.chance[b, node] >= 0):
        record = tree.slots.chance[b, node, slot]
        assert tree.chance.visits[b, record].sum() <= tree.slots.visits[b, node, slot]


# ---- configuration ---------------------------------------------------------------------------

def test_the_option_is_validated_once_and_resolved_in_the_plan():
  rule = js.selection.puct()
  config = js.search.SearchConfig(num_simulations=10, selection=rule, leaves_per_step=4)
  plan = js.search.plan_for(config, js.model.from_game(GAME, js.estimators.uniform()))
  assert (plan.leaves_per_step, plan.num_steps) == (4, 3)
  assert js.search.SearchConfig(num_simulations=10, selection=rule).leaves_per_step == 1
  for bad in (0, -1, 1.5, True):
    with pytest.raises(ValueError, match="leaves_per_step"):
      js.search.SearchConfig(num_simulations=10, selection=rule, leaves_per_step=bad)
  with pytest.raises(ValueError, match="larger than num_simulations"):
    js.search.SearchConfig(num_simulations=3, selection=rule, leaves_per_step=4)
  with pytest.raises(ValueError, match="subtree_entropy"):
    js.policies.entropy_puct(GAME, js.estimators.uniform(), num_simulations=8,
                             leaves_per_step=2)
  # The named constructors take it as a flat keyword, as any SearchConfig field.
  assert _puct(leaves=4).config.leaves_per_step == 4


# ---- valid trees -----------------------------------------------------------------------------

@pytest.mark.parametrize("num_simulations", [32, 30])  # 30: the last step's 2 extra paths sit out
def test_puct_trees_are_valid(num_simulations):
  out = _searched(functools.partial(_puct, num_simulations))
  _assert_valid(out.tree, num_simulations)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), num_simulations)
  assert not np.any(out.tree.slots.visits * ~out.tree.slots.legal)


def test_gumbel_trees_with_their_opening_are_valid():
  """Gumbel MuZero: the batched opening, then steps of 4 paths whose root rule reads each
  path's own simulation index and the earlier paths' virtual visits."""
  def make():
    return js.policies.gumbel(GAME, js.estimators.uniform(), num_simulations=18,
                              max_num_considered_actions=4, leaves_per_step=4)
  out = _searched(make)
  _assert_valid(out.tree, 18)
  # Sequential Halving's counts, whatever the paths' grouping: 4 considered actions, then 2.
  counts = np.sort(out.visit_counts, axis=-1)[:, ::-1]
  assert np.all(counts[:, 4:] == 0) and np.all(counts[:, :4] >= 1)


def _garnet_family():
  return garnet.make_family(3, 4, 3, 2, 2, seed=11)


def test_thompson_with_sampled_outcomes_on_a_chance_game():
  """A rule that draws: independent draws per path; sampled outcomes (O = 2)."""
  family = _garnet_family()

  def make():
    return js.policies.custom(family.game, garnet.estimator(family, bias=0.2, noise=0.3, seed=3),
                              selection=js.selection.thompson(), num_simulations=24,
                              outcome_rule="sample", leaves_per_step=6)
  out = jax.tree.map(np.asarray, jax.jit(make())(None, jax.random.PRNGKey(1), family.roots()))
  _assert_valid(out.tree, 24)


# ---- exact values ----------------------------------------------------------------------------

def _coin_game():
  """One decision, then the end: action 0 pays 1 w.p. 0.3, action 1 pays 0.5 w.p. 0.8."""
  probs = jnp.array([[0.7, 0.3, 0.0], [0.2, 0.0, 0.8]])
  payout = jnp.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
  return Game(name="coin", num_actions=2, init=lambda key: jnp.zeros((), jnp.int32),
              legal_actions=lambda state: jnp.broadcast_to(state == 0, (2,)),
              step=lambda state, action, outcome: StepResult(
                  state=jnp.ones((), jnp.int32), reward=payout[action, outcome],
                  discount=jnp.float32(0.0), terminal=jnp.bool_(True)),
              num_outcomes=3, outcome_probs=lambda s, a: probs[a], max_length=1,
              value_range=(0.0, 1.0))


def test_running_means_are_exact_with_balanced_outcomes():
  """Every Q is exactly the visit-weighted mean of its outcomes' payouts (each path counted
  once, however many of a step share a node), and the balanced outcome rule, which counts the
  step's earlier paths as virtual visits, keeps each outcome's share within a step of p(o)."""
  search = js.policies.uct(_coin_game(), js.estimators.uniform(), num_simulations=400,
                           leaves_per_step=8)
  out = jax.tree.map(np.asarray, jax.jit(search)(None, jax.random.PRNGKey(0),
                                                 jnp.zeros((3,), jnp.int32)))
  tree = out.tree
  _assert_valid(tree, 400)
  payout = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
  probs = np.array([[0.7, 0.3, 0.0], [0.2, 0.0, 0.8]])
  for b in range(3):
    for action in range(2):
      counts = tree.chance.visits[b, tree.slots.chance[b, 0, action]]
      np.testing.assert_allclose(out.q_values[b, action], counts @ payout[action] / counts.sum(),
                                 rtol=1e-5)
      assert np.all(np.abs(counts - probs[action] * counts.sum()) <= 8)
  np.testing.assert_allclose(out.q_values[:, 1], 0.4, atol=0.03)
  np.testing.assert_array_equal(out.action, 1)
  # The root's value is the mean of all 400 returns (and the root's own 0).
  returns = [np.sum(tree.chance.visits[b, tree.slots.chance[b, 0]] * payout) for b in range(3)]
  np.testing.assert_allclose(tree.nodes.value[:, 0], np.asarray(returns) / 401, rtol=1e-5)


@functools.lru_cache(maxsize=None)
def _solved_family():
  return garnet.make_family(3, 3, 3, 2, 2, seed=5)  # 43 nodes, 21 expansions per member


@pytest.mark.parametrize("selection", ["thompson", "hoeffding"])
def test_avts_solves_a_garnet_exactly(selection):
  """The Bellman backup with 4 paths a step: every step expands at least one slot while the
  root is open, so 24 steps solve the whole tree; the root and every node then hold V*."""
  family = _solved_family()
  rule = (js.selection.thompson() if selection == "thompson"
          else js.selection.hoeffding(value_range=(-3.0, 3.0)))
  search = js.policies.avts(family.game, garnet.estimator(family, bias=0.3, noise=0.3, seed=2),
                            selection=rule, num_simulations=96, leaves_per_step=4,
                            widening=False)
  out = jax.tree.map(np.asarray, jax.jit(search)(None, jax.random.PRNGKey(3), family.roots()))
  tree = out.tree
  np.testing.assert_array_equal(out.root_solved, True)
  np.testing.assert_allclose(out.root_value, np.asarray(family.v_star)[:, 0, 0], atol=ATOL)
  np.testing.assert_array_equal(tree.num_nodes, 43)
  alloc = _allocated(tree)
  exact = np.asarray(jax.vmap(jax.vmap(functools.partial(garnet.optimal_value, family)))(
      tree.nodes.state))
  assert np.all(tree.bounds.solved[alloc])
  np.testing.assert_allclose(tree.nodes.value[alloc], exact[alloc], atol=ATOL)
  _assert_valid(tree, 96, paths_end_once=False)


# ---- jit, vmap, L = 1 ------------------------------------------------------------------------

def test_runs_under_vmap_as_separate_calls():
  search = _puct()
  roots = _positions(ROOTS)
  stacked = jax.tree.map(lambda x: jnp.stack([x, x[::-1]]), roots)
  keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(2)])
  both = jax.jit(jax.vmap(search, in_axes=(None, 0, 0)))(None, keys, stacked)
  single = _searched(_puct)
  for x, y in zip(jax.tree.leaves(jax.tree.map(lambda x: x[0], both.tree)),
                  jax.tree.leaves(single.tree)):
    np.testing.assert_array_equal(np.asarray(x), y)


def test_one_leaf_per_step_is_the_default_search():
  """``leaves_per_step=1`` is the default config, so the same program and tree bit for bit
  (the golden trees pin that tree: tests/test_golden_trees.py)."""
  one = _searched(functools.partial(_puct, 32, 1))
  default = _searched(lambda: js.policies.puct(GAME, js.estimators.uniform(),
                                               num_simulations=32))
  for x, y in zip(jax.tree.leaves(one.tree), jax.tree.leaves(default.tree)):
    np.testing.assert_array_equal(x, y)


# ---- spreading, shared leaves, capacity ------------------------------------------------------

def test_puct_spreads_one_step_over_distinct_root_children():
  """A fresh root, one step of 6 paths: the virtual visits send them to 6 different children
  (a uniform prior: without them all 6 would take slot 0)."""
  out = _searched(functools.partial(_puct, 6, 6), roots=((),))
  np.testing.assert_array_equal(out.visit_counts[0], [1] * 6 + [0] * 3)
  np.testing.assert_array_equal(out.tree.num_nodes, 7)


def test_a_leaf_two_paths_reach_is_expanded_once():
  """One legal move: all 4 paths of the first step reach the same new leaf, which is created
  and evaluated once and backed up by each; the later steps revisit it (terminal)."""
  out = _searched(functools.partial(_puct, 8, 4), roots=(tuple(ENDINGS[0]),))
  tree = out.tree
  np.testing.assert_array_equal(tree.num_nodes, 2)
  np.testing.assert_array_equal(tree.num_chance, 1)
  np.testing.assert_array_equal(tree.nodes.visits[0, :2], [9, 8])
  np.testing.assert_array_equal(out.visit_counts[0, 8], 8)
  _assert_valid(tree, 8)


def test_a_tree_with_fewer_free_nodes_than_paths_takes_what_fits():
  """A kept tree with 3 free nodes, a step of 8 paths: the first 3 new leaves (in path order)
  are created; the paths whose leaf does not fit end at its parent and back up its value."""
  small = jax.jit(_puct(5, 1, max_nodes=9))
  wide = jax.jit(_puct(8, 8, max_nodes=9))
  roots = _positions([[]])
  first = small(None, jax.random.PRNGKey(0), roots)
  assert int(first.tree.num_nodes[0]) == 6
  out = jax.tree.map(np.asarray, wide(None, jax.random.PRNGKey(1), roots, first.tree))
  np.testing.assert_array_equal(out.tree.num_nodes, 9)
  _assert_valid(out.tree, 13)  # every path counted once, at the node it ended on


def test_bellman_expansions_that_do_not_fit_stop_the_rest():
  """All outcomes of an expansion (2 here) need room: the 8 paths of one step spread over the
  root's 6 slots (virtual visits: a wide value range makes the bonus dominate), but 9 nodes
  hold the root and four expansions; the paths to the other slots end at the root."""
  family = garnet.make_family(3, 4, 6, 2, 2, seed=11)
  search = js.policies.avts(family.game, garnet.estimator(family, bias=0.2, noise=0.3, seed=3),
                            selection=js.selection.hoeffding(value_range=(-100.0, 100.0)),
                            num_simulations=8, leaves_per_step=8, max_nodes=9, widening=False)
  out = jax.tree.map(np.asarray, jax.jit(search)(None, jax.random.PRNGKey(0), family.roots()))
  tree = out.tree
  np.testing.assert_array_equal(tree.num_nodes, 9)
  np.testing.assert_array_equal(tree.num_chance, 4)
  _assert_valid(tree, 8, paths_end_once=False)
  np.testing.assert_array_equal(np.sum(tree.slots.chance[:, 0] >= 0, axis=-1), 4)
  # At least the paths to the two slots left out ended at the root (no slot visit).
  assert np.all(tree.nodes.visits[:, 0] - tree.slots.visits[:, 0].sum(-1) >= 1 + 2)


def test_both_backup_layouts_write_the_same_step():
  """One step of 4 paths on half-grown trees, backed up level by level (the CPU's layout) and
  as one write of the whole path buffers (an accelerator's): the same counts, the same means
  up to float rounding."""
  from jaxsearch.search import descent, walks
  from jaxsearch.search.backup import SimulationKeys
  search = _puct(16, 4, max_nodes=40)
  roots = _positions(ROOTS)
  tree = jax.jit(search)(None, jax.random.PRNGKey(4), roots).tree
  plan = search.plan
  prior = descent.root_prior(tree, tree.slots.prior_logits[:, 0], plan=plan)
  steps = jnp.broadcast_to(descent.empty_steps(tree.batch_size, plan.max_depth),
                           (4, tree.batch_size, plan.max_depth, descent.STEP_COLUMNS))
  paths, _ = jax.jit(lambda tree: walks.select_walks(tree, prior, None, steps, plan=plan))(tree)
  keys = SimulationKeys(jax.random.PRNGKey(5), jax.random.PRNGKey(6))
  trees = []
  for layout in ("per_level", "whole_path"):
    config = dataclasses.replace(plan.config, loops=js.search.LoopOptions(path_update=layout))
    variant = dataclasses.replace(plan, config=config)
    trees.append(jax.tree.map(np.asarray, jax.jit(
        lambda tree, paths: plan.backup.expand_and_back_up_walks(
            search.model, variant, None, keys, tree, paths, None))(tree, paths)))
  per_level, whole = trees
  assert np.all(per_level.num_nodes > np.asarray(tree.num_nodes))
  for x, y in zip(jax.tree.leaves(per_level), jax.tree.leaves(whole)):
    if np.issubdtype(x.dtype, np.floating):
      np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    else:
      np.testing.assert_array_equal(x, y)
