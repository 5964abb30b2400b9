"""AVTS (Bellman backup, docs/algorithms.md §2) on small enumerable Garnets against exact values.

Convergence to V* once the whole tree is expanded, progressive widening, the achievable bound,
Bellman consistency of q̂2, the debias statistics stored in the tree, bad estimator output,
the selection rules as pure functions, and every rule inside a jitted (and vmapped) search.

Compiles dominate (several seconds per search configuration on the CPU), so every search is
built once (``functools.lru_cache``) and run on a whole :class:`garnet.GarnetFamily` at once
(one root per member), and each compiled search serves several checks. Whole-tree
convergence is rule independent (a solved slot is never selected again, so the search goes on
until everything is expanded), which is why each selection rule's search is also a
convergence check.
"""

import dataclasses
import functools
import math
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet
from jaxsearch import debias
from jaxsearch import search as search_lib
from jaxsearch.search import backup_bellman
from jaxsearch.game import Estimate
from jaxsearch.selection import NodeView
from jaxsearch.tree import NO_BOUND

BIAS, NOISE = 0.3, 0.3  # the noisy, biased estimator of every search here
ATOL = 1e-4  # float32 values summed over <= 3 moves


# ---- reference values -----------------------------------------------------------------------

def _family(count, num_states, num_actions, branching, seed, horizon=3):
  return garnet.make_family(count, num_states, num_actions, branching, horizon, seed=seed)


def _all_states(f):
  """Every live ``(mdp, time, state)``, batched ``[M * H * S]`` in that order."""
  m, t, s = np.meshgrid(np.arange(f.num_members), np.arange(f.horizon),
                        np.arange(f.num_states), indexing="ij")
  return garnet.State(state=jnp.asarray(s.ravel(), jnp.int32),
                      time=jnp.asarray(t.ravel(), jnp.int32), mdp=jnp.asarray(m.ravel(), jnp.int32))


@functools.lru_cache(maxsize=None)
def _q1_table(f, estimator):
  """``[M, H, S, A]`` the estimator's raw action values of every live state."""
  estimate = jax.jit(estimator)(None, jax.random.PRNGKey(0), _all_states(f))
  return np.asarray(estimate.action_values).reshape(
      f.num_members, f.horizon, f.num_states, f.num_actions)


def _searched_actions(q1, num_slots=None):
  """``bool[M, H, S, A]`` the actions AVTS may search at each state: the legal actions with a
  finite q̂1 (all of them when none is finite), cut to the top ``num_slots`` by q̂1 (ties by
  index), as documented in ``search.node_update``."""
  usable = np.isfinite(q1)
  usable = np.where(usable.any(-1, keepdims=True), usable, True)
  if num_slots is None or num_slots >= q1.shape[-1]:
    return usable
  keys = np.where(usable, np.where(np.isfinite(q1), q1, 0.0), -np.inf)
  order = np.argsort(-keys, axis=-1, kind="stable")[..., :num_slots]
  allowed = np.zeros_like(usable)
  np.put_along_axis(allowed, order, True, axis=-1)
  return allowed & usable


def _exact_values(f, allowed=None):
  """``(q [M, H, S, A], v [M, H + 1, S])``: backward induction (float64) where only
  ``allowed[m, t, s, a]`` actions may be played (``None``: all, i.e. Q* and V*)."""
  nxt = np.asarray(f.next_state)
  probs, rewards = np.asarray(f.probs, np.float64), np.asarray(f.rewards, np.float64)
  members = np.arange(f.num_members)[:, None, None, None]
  q = np.zeros((f.num_members, f.horizon, f.num_states, f.num_actions))
  v = np.zeros((f.num_members, f.horizon + 1, f.num_states))
  for t in range(f.horizon - 1, -1, -1):
    q[:, t] = np.sum(probs * (rewards + f.discount * v[:, t + 1][members, nxt]), axis=-1)
    ok = np.ones_like(q[:, t], bool) if allowed is None else allowed[:, t]
    v[:, t] = np.where(ok, q[:, t], -np.inf).max(-1)
  return q, v


def _full_tree_size(f):
  """``(nodes, expansions)`` of the complete AVTS tree of one member (every slot expanded)."""
  a, o = f.num_actions, f.branching
  nodes = sum((a * o) ** d for d in range(f.horizon + 1))
  return nodes, sum(a * (a * o) ** d for d in range(f.horizon))


def _np_tree(tree):
  return jax.tree.map(np.asarray, jax.device_get(tree))


def _allocated(tree):
  return np.arange(tree.max_nodes)[None] < np.asarray(tree.num_nodes)[:, None]


def _node_lookup(tree, table):
  """``table[mdp, time, state]`` (``[M, H, S, ...]``) for every node of ``tree``; zeros for
  terminal times."""
  state = tree.nodes.state
  live = np.asarray(state.time) < table.shape[1]
  row = table[np.asarray(state.mdp), np.minimum(np.asarray(state.time), table.shape[1] - 1),
              np.asarray(state.state)]
  return np.where(live.reshape(live.shape + (1,) * (row.ndim - live.ndim)), row, 0.0)


def _v_star_of_nodes(f, tree):
  """V* of every node's state by :func:`garnet.optimal_value` (``[B, N]``)."""
  return np.asarray(jax.vmap(jax.vmap(functools.partial(garnet.optimal_value, f)))(
      tree.nodes.state))


def _correction(bias_mean, visits):
  """docs/algorithms.md §2: ``sum_{j = n+1}^{V} bias_mean[j]`` (numpy; ``bias_mean[..., V]``,
  ``visits[..., K]``)."""
  num_buckets = bias_mean.shape[-1]
  suffix = np.concatenate([np.cumsum(bias_mean[..., ::-1], -1)[..., ::-1],
                           np.zeros(bias_mean.shape[:-1] + (1,))], -1)
  return np.take_along_axis(suffix, np.clip(visits, 0, num_buckets), -1)


def _assert_finite_tree(tree):
  for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
    leaf = np.asarray(leaf)
    if np.issubdtype(leaf.dtype, np.floating):
      assert np.all(np.isfinite(leaf)), jax.tree_util.keystr(path)
  # NO_BOUND is the finite sentinel of unexpanded slots, not an infinity.
  bound = np.asarray(tree.slot_bounds.bound)
  assert np.all((np.asarray(tree.slots.chance) >= 0) | (bound == NO_BOUND))


def _assert_solved_exactly(f, out, num_slots=None, estimator=None, members=None):
  """The search expanded everything it may search: solved roots whose value, q̂ and action are
  the exact ones of that problem (V*, Q* with ``K = A`` and a clean estimator), and every
  node solved with its exact value. ``members``: check only these roots (default: all)."""
  allowed = None
  if estimator is not None:
    allowed = _searched_actions(_q1_table(f, estimator), num_slots)
  q, v = _exact_values(f, allowed)
  members = np.arange(f.num_members) if members is None else np.asarray(members)
  out = jax.tree.map(lambda x: np.asarray(x)[members], out)
  root_q, root_v = q[members, 0, 0], v[members, 0, 0]
  root_allowed = (np.ones_like(root_q, bool) if allowed is None else allowed[members, 0, 0])
  np.testing.assert_array_equal(out.root_solved, True)
  np.testing.assert_allclose(out.root_value, root_v, atol=ATOL)
  np.testing.assert_allclose(out.q_values, np.where(root_allowed, root_q, root_v[:, None]),
                             atol=ATOL)
  rows = np.arange(len(members))
  assert np.all(root_allowed[rows, out.action])
  np.testing.assert_allclose(root_q[rows, out.action], root_v, atol=ATOL)
  if out.root_bound is not None:  # the achievable bound is exact once everything is expanded
    np.testing.assert_allclose(out.root_bound, root_v, atol=ATOL)
  tree = out.tree
  alloc = _allocated(tree)
  assert np.all(tree.bounds.solved[alloc])
  exact = _node_lookup(tree, v[:, :f.horizon])  # node states name their member
  np.testing.assert_allclose(tree.nodes.value[alloc], exact[alloc], atol=ATOL)
  _assert_finite_tree(tree)


# ---- the searches (built once) --------------------------------------------------------------

# The workhorse, stochastic (O = 2) with A = 5 so that widening has room; searched one
# simulation per call, so the tree can be inspected after every simulation (the full tree:
# 555 expansions, 1111 nodes per member).
WIDE = _family(3, 6, 5, 2, seed=20)
WIDE_BUCKETS = 4  # few buckets, so that the root's slots reach the tail bucket
# Deterministic (O = 1), A = 4: members 0-2 get misbehaving estimates (see _det_estimator),
# members 3-5 the clean noisy estimator.
DET = _family(6, 5, 4, 1, seed=10)
# Stochastic, A = 3: the option variants, and one selection rule per member.
SMALL = _family(6, 5, 3, 2, seed=0)


@functools.lru_cache(maxsize=None)
def _estimator(f):
  return garnet.estimator(f, bias=BIAS, noise=NOISE, seed=1)


def _det_estimator(params, key, states):
  """DET's estimator. Member 0: NaN for action 1 and +inf for action 2 (misbehaviour);
  member 1: -inf for action 1 (a deliberate mask); member 2: every action value NaN, the
  value finite (so that "q̂1 = the value" can be told from 0); members 3-5: clean."""
  clean = _estimator(DET)(params, key, states)
  q = clean.action_values
  m = states.mdp[:, None]
  action = jnp.arange(DET.num_actions)[None]
  q = jnp.where((m == 0) & (action == 1), jnp.nan, q)
  q = jnp.where((m == 0) & (action == 2), jnp.inf, q)
  q = jnp.where((m == 1) & (action == 1), -jnp.inf, q)
  q = jnp.where(m == 2, jnp.nan, q)
  return Estimate(value=clean.value, action_values=q)


def _simulations(f):
  return _full_tree_size(f)[1]


@functools.lru_cache(maxsize=None)
def _search(f, estimator=None, **kwargs):
  """``(search, jitted)``: AVTS on family ``f`` with just enough simulations to expand
  everything."""
  game = kwargs.pop("game", f.game)
  search = js.policies.avts(game, estimator or _estimator(f), num_simulations=_simulations(f),
                            **kwargs)
  return search, jax.jit(search)


@functools.lru_cache(maxsize=None)
def _run(f, key=0, **kwargs):
  _, jitted = _search(f, **kwargs)
  return jitted(None, jax.random.PRNGKey(key), f.roots())


def _det_output(key=0):
  return _run(DET, key=key, estimator=_det_estimator)


# Without widening, num_slots above A (clamped to A), greedy Thompson (no variance, no debias).
GREEDY = dict(widening=False, num_slots=SMALL.num_actions + 5, variance="off", debias=False)

NUM_RECORDED = 40  # simulations whose whole tree is kept for the invariant checks


@functools.lru_cache(maxsize=None)
def _stepwise():
  """WIDE searched one simulation per call until every root is solved.

  Returns ``(trees, history, last)``: the trees before the first and after each of the first
  ``NUM_RECORDED`` simulations (numpy), per-simulation root and bound data for the whole run,
  and the final :class:`PolicyOutput`.
  """
  nodes, expansions = _full_tree_size(WIDE)
  search = js.policies.avts(WIDE.game, _estimator(WIDE), num_simulations=1, max_nodes=nodes + 9,
                            num_buckets=WIDE_BUCKETS)
  step = jax.jit(search)
  roots = WIDE.roots()
  tree = search.init_tree(None, jax.random.PRNGKey(0), roots)
  trees = [_np_tree(tree)]
  history = dict(root_bound=[np.asarray(tree.bounds.bound[:, 0])],
                 root_solved=[np.asarray(tree.bounds.solved[:, 0])],
                 node_bound=[np.asarray(tree.bounds.bound)], num_nodes=[np.asarray(tree.num_nodes)])
  out = None
  for sim in range(expansions + 5):
    out = step(None, jax.random.PRNGKey(100 + sim), roots, tree)
    tree = out.tree
    if sim < NUM_RECORDED:
      trees.append(_np_tree(tree))
    history["root_bound"].append(np.asarray(out.root_bound))
    history["root_solved"].append(np.asarray(out.root_solved))
    history["node_bound"].append(np.asarray(tree.bounds.bound))
    history["num_nodes"].append(np.asarray(tree.num_nodes))
    if history["root_solved"][-1].all():
      break
  return trees, {k: np.stack(v) for k, v in history.items()}, out


# ---- 1. convergence -------------------------------------------------------------------------

def test_estimator_is_wrong_enough_to_need_the_search():
  """The noisy, biased q̂1 is far from Q* at the roots, and its greedy root action is
  suboptimal somewhere: solving the trees below is not the estimator's doing."""
  suboptimal = []
  for f in (WIDE, DET, SMALL):
    q1 = _q1_table(f, _estimator(f))[:, 0, 0]
    q_star = np.asarray(f.q_star)[:, 0, 0]
    assert np.mean(np.abs(q1 - q_star)) > 0.2
    suboptimal.append(q_star[np.arange(f.num_members), q1.argmax(-1)] < q_star.max(-1) - 1e-3)
  assert np.concatenate(suboptimal).sum() >= 2


def test_stochastic_avts_solves_exactly_at_the_last_expansion():
  """O = 2, widening, Thompson: the root is solved by the simulation that expands the last
  slot of the full tree, no sooner, and then holds V*, Q* and an optimal action."""
  _, history, out = _stepwise()
  nodes, expansions = _full_tree_size(WIDE)
  _assert_solved_exactly(WIDE, out)
  np.testing.assert_array_equal(history["root_solved"].argmax(0), expansions)
  np.testing.assert_array_equal(history["num_nodes"][-1], nodes)


def test_deterministic_avts_solves_the_whole_tree_exactly():
  """O = 1: every member converges to the exact value of the actions it may search (V* for
  the clean members 3-5)."""
  out = _det_output()
  _assert_solved_exactly(DET, out, estimator=_det_estimator)
  clean = slice(3, 6)
  np.testing.assert_allclose(np.asarray(out.root_value)[clean],
                             np.asarray(DET.v_star)[clean, 0, 0], atol=ATOL)
  nodes, expansions = _full_tree_size(DET)
  np.testing.assert_array_equal(np.asarray(out.tree.num_nodes)[clean], nodes)
  # Every simulation expanded one slot, through the root.
  np.testing.assert_array_equal(np.asarray(out.tree.slots.visits[clean, 0].sum(-1)), expansions)


def test_avts_without_widening_solves_exactly_and_clamps_num_slots():
  """``widening=False`` (all slots active from the start; here with greedy Thompson: no
  variance, no debias); ``num_slots`` above ``A`` is clamped to ``A``."""
  out = _run(SMALL, **GREEDY)
  assert out.tree.num_slots == SMALL.num_actions
  tree = _np_tree(out.tree)
  alloc = _allocated(tree)
  np.testing.assert_array_equal(tree.nodes.num_active[alloc], SMALL.num_actions)
  # K = A without widening: slot k is action k.
  np.testing.assert_array_equal(tree.slots.actions()[alloc],
                                np.broadcast_to(np.arange(3), tree.slots.actions()[alloc].shape))
  _assert_solved_exactly(SMALL, out)
  np.testing.assert_array_equal(np.asarray(out.tree.num_nodes), _full_tree_size(SMALL)[0])


# ---- 2. progressive widening ----------------------------------------------------------------

def test_widening_invariants_after_every_simulation():
  trees, _, _ = _stepwise()
  q1 = _q1_table(WIDE, _estimator(WIDE))
  num_slots = WIDE.num_actions
  slots = np.arange(num_slots)
  previous_active = previous_alloc = None
  widened = 0
  for sim, tree in enumerate(trees):
    alloc = _allocated(tree)
    live = alloc & ~tree.nodes.terminal  # solved ones included: they obey the same rules
    num_active = tree.nodes.num_active
    active = slots < num_active[..., None]
    legal = tree.slots.legal
    candidates = legal.sum(-1)
    visits = tree.slots.visits
    where = f"after {sim} simulations"
    np.testing.assert_array_equal(candidates[live], num_slots, err_msg=where)
    assert np.all((num_active[live] >= 1) & (num_active[live] <= candidates[live])), where
    # Slots hold distinct actions, ordered by decreasing q̂1, and their q̂1 is the estimator's.
    np.testing.assert_array_equal(np.sort(tree.slots.actions()[live], -1),
                                  np.broadcast_to(slots, tree.slots.actions()[live].shape), where)
    node_q1 = _node_lookup(tree, q1)
    expected_q1 = np.take_along_axis(node_q1, tree.slots.actions(), -1)
    np.testing.assert_allclose(tree.slots.action_values()[live], expected_q1[live], rtol=1e-6,
                               err_msg=where)
    assert np.all(np.diff(tree.slots.action_values()[live], axis=-1) <= 0), where
    # Only slots 0 .. num_active - 1 were ever visited or expanded.
    inactive = live[..., None] & ~active
    assert not np.any(visits[inactive]) and np.all(tree.slots.chance[inactive] < 0), where
    # Every active slot but the newest has been visited; while candidates remain, the newest
    # is the one zero-visit slot.
    unvisited = live[..., None] & active & (visits == 0)
    newest = slots == (num_active[..., None] - 1)
    assert not np.any(unvisited & ~newest), where
    growing = live & (num_active < candidates)
    np.testing.assert_array_equal(unvisited.sum(-1)[growing], 1, err_msg=where)
    # A node's visits: its creation plus one per simulation through one of its slots.
    np.testing.assert_array_equal(tree.nodes.visits[live], 1 + visits.sum(-1)[live], where)
    # num_active never shrinks and grows by at most one per simulation.
    if previous_active is not None:
      grew = (num_active - previous_active)[previous_alloc & live]
      assert np.all((grew >= 0) & (grew <= 1)), where
      widened += int(grew.sum())
    previous_active, previous_alloc = num_active, alloc
  assert widened >= NUM_RECORDED // 2  # the checks above saw plenty of widening
  assert trees[-1].nodes.num_active[:, 0].min() >= 3


# ---- 3. achievable bound --------------------------------------------------------------------

def test_achievable_bound_is_monotone_admissible_and_above_the_pessimistic_value():
  trees, history, out = _stepwise()
  v_star_root = np.asarray(WIDE.v_star)[:, 0, 0]
  pessimistic = np.asarray(WIDE.v_pessimistic)[:, 0, 0]
  root_bound = history["root_bound"]
  assert np.all(np.diff(root_bound, axis=0) >= 0)
  assert np.all(root_bound <= v_star_root + 1e-5)
  assert np.all(root_bound >= pessimistic - 1e-6)
  np.testing.assert_array_equal(root_bound[0], pessimistic)
  assert np.all(root_bound[-1] > pessimistic + 1e-3)  # it did improve (exact at the end)
  # Every node: the bound never decreases and never exceeds the V* of the node's state.
  v_star_nodes = _v_star_of_nodes(WIDE, out.tree)  # node indices never move
  node_bound = history["node_bound"]
  for sim in range(len(node_bound)):
    alloc = np.arange(node_bound.shape[-1])[None] < history["num_nodes"][sim][:, None]
    assert np.all(node_bound[sim][alloc] <= v_star_nodes[alloc] + 1e-5), sim
    if sim:
      was = np.arange(node_bound.shape[-1])[None] < history["num_nodes"][sim - 1][:, None]
      assert np.all(node_bound[sim][was] >= node_bound[sim - 1][was]), sim
  # Slot bounds: NO_BOUND until expanded, then at most Q* of the slot's action.
  q_star = np.asarray(WIDE.q_star)
  for tree in trees[::8] + [_np_tree(out.tree)]:
    expanded = _allocated(tree)[..., None] & (tree.slots.chance >= 0)
    assert np.all(tree.slot_bounds.bound[~expanded] == NO_BOUND)
    slot_q_star = np.take_along_axis(_node_lookup(tree, q_star), tree.slots.actions(), -1)
    assert np.all(tree.slot_bounds.bound[expanded] <= slot_q_star[expanded] + 1e-5)


def test_no_pessimistic_value_means_no_root_bound():
  assert _rules_output().root_bound is None  # searched on SMALL's game without one
  assert _run(SMALL, **GREEDY).root_bound is not None


def test_a_solved_slot_competes_on_value_with_the_most_visited():
  """The descent skips solved slots, so their visits stop growing; the recommendation must
  still pick a solved slot whose exact value beats the most visited one's q̂3."""
  search, _ = _search(SMALL, **GREEDY)
  tree = _run(SMALL, **GREEDY).tree
  # Root of tree 0: make the least visited active slot solved and clearly the best.
  slot = 0
  assert bool(tree.slots.legal[0, 0, slot]) and int(tree.slots.visits[0, 0, 1]) > 1
  best = float(np.max(np.asarray(tree.slots.value[0, 0]))) + 1.0
  tree = tree.replace(
      slot_bounds=tree.slot_bounds.replace(solved=tree.slot_bounds.solved.at[0, 0].set(False)),
      slots=tree.slots.replace(visits=tree.slots.visits.at[0, 0, slot].set(1),
                               value=tree.slots.value.at[0, 0, slot].set(best)))
  patched = tree.replace(slot_bounds=tree.slot_bounds.replace(
      solved=tree.slot_bounds.solved.at[0, 0, slot].set(True)))
  out = js.policies.root_summary(patched, SMALL.num_actions, 0.0, jax.random.PRNGKey(0),
                                 search.config)
  assert int(out.action[0]) == int(tree.slots.actions()[0, 0, slot])
  unsolved = js.policies.root_summary(tree, SMALL.num_actions, 0.0, jax.random.PRNGKey(0),
                                      search.config)
  assert int(unsolved.action[0]) != int(tree.slots.actions()[0, 0, slot])


# ---- 4. Bellman consistency -----------------------------------------------------------------

def _check_bellman(f, tree):
  """q̂2 of every expanded slot = Σ_o p(o)(r_o + γ_o V(child_o)), V = max active q̂3."""
  alloc = _allocated(tree)
  batch = np.arange(tree.batch_size)[:, None, None]
  expanded = alloc[..., None] & (tree.slots.chance >= 0)
  chance = np.maximum(tree.slots.chance, 0)
  probs = tree.chance.prob[batch, chance]  # [B, N, K, O]
  kids = tree.chance.child[batch, chance]
  kid_values = tree.nodes.value[batch[..., None], np.maximum(kids, 0)]
  possible = probs > 0
  assert np.all(kids[expanded][possible[expanded]] >= 0)
  backed_up = np.sum(np.where(possible, probs * (tree.chance.reward[batch, chance] +
                                                 tree.chance.discount[batch, chance] *
                                                 kid_values), 0.0), -1)
  np.testing.assert_allclose(tree.slots.value[expanded], backed_up[expanded], atol=1e-5)
  # The chance records are the game's: outcome probabilities of the slot's action.
  state = tree.nodes.state
  game_probs = np.asarray(f.probs)[np.asarray(state.mdp)[..., None],
                                   np.asarray(state.state)[..., None], tree.slots.actions()]
  np.testing.assert_allclose(probs[expanded], game_probs[expanded], rtol=1e-6)
  # V(s) = the best debiased value q̂3 of the active slots (no correction once solved).
  live = alloc & ~tree.nodes.terminal
  active = tree.slots.legal & (np.arange(tree.num_slots) < tree.nodes.num_active[..., None])
  q3 = tree.slots.value + np.where(tree.slot_bounds.solved, 0.0,
                                  _correction(tree.debias.bias_mean, tree.slots.visits))
  best = np.max(np.where(active, q3, -np.inf), -1)
  np.testing.assert_allclose(tree.nodes.value[live], best[live], atol=1e-5)
  np.testing.assert_array_equal(tree.nodes.value[alloc & tree.nodes.terminal], 0.0)
  return int(expanded.sum())


def test_bellman_backup_is_consistent_with_the_children_after_every_simulation():
  trees, _, out = _stepwise()
  checked = sum(_check_bellman(WIDE, tree) for tree in trees)
  assert checked > 3 * NUM_RECORDED
  _check_bellman(WIDE, _np_tree(out.tree))
  for f, other in ((SMALL, _run(SMALL, **GREEDY)), (DET, _det_output()),
                   (SMALL, _rules_output())):
    _check_bellman(f, _np_tree(other.tree))


# ---- 5. debias statistics -------------------------------------------------------------------

def test_debias_statistics_follow_every_visit():
  """Replays every simulation: the slot that went from n to n + 1 visits records the change
  of its q̂2 in bucket min(n + 1, V) (count, Welford mean) and the square of the change of its
  q̂3 (docs/algorithms.md §2), exactly as a plain-numpy tracker of the same visits."""
  trees, _, _ = _stepwise()
  first = trees[0]
  shape = first.debias.count.shape  # [B, N, V]
  count = np.zeros(shape, np.int64)
  mean = np.zeros(shape)
  sq_sum = np.zeros(shape)
  recorded = 0
  for before, after in zip(trees[:-1], trees[1:]):
    grew = after.slots.visits - before.slots.visits
    assert np.all((grew >= 0) & (grew <= 1)) and np.all(grew.sum(-1) <= 1)
    b, n, k = np.nonzero(grew)
    visits_after = after.slots.visits[b, n, k]
    bucket = np.minimum(visits_after, WIDE_BUCKETS) - 1
    change = after.slots.value[b, n, k].astype(np.float64) - before.slots.value[b, n, k]
    # q̂3 before = q̂2 + correction(n); after = q̂2' + correction(n + 1), or q̂2' alone if this
    # visit solved the slot (same statistics: recording bucket n + 1 leaves the suffix above
    # it alone).
    correction_after = np.where(after.slot_bounds.solved[b, n, k], 0.0,
                                _correction(mean[b, n], visits_after[:, None])[:, 0])
    drift = correction_after - _correction(mean[b, n], visits_after[:, None] - 1)[:, 0]
    count[b, n, bucket] += 1
    mean[b, n, bucket] += (change - mean[b, n, bucket]) / count[b, n, bucket]
    sq_sum[b, n, bucket] += (change + drift) ** 2
    recorded += len(b)
  last = trees[-1]
  assert recorded > 2 * NUM_RECORDED
  np.testing.assert_array_equal(last.debias.count, count)
  np.testing.assert_allclose(last.debias.bias_mean, mean, atol=1e-5)
  np.testing.assert_allclose(last.debias.sq_sum, sq_sum, rtol=1e-4, atol=1e-6)
  # count[v] = the slots that reached v visits (v < V); the last bucket absorbs the tail.
  visits = last.slots.visits
  for v in range(1, WIDE_BUCKETS):
    np.testing.assert_array_equal(last.debias.count[..., v - 1], np.sum(visits >= v, -1))
  np.testing.assert_array_equal(last.debias.count[..., -1],
                                np.sum(np.maximum(visits - (WIDE_BUCKETS - 1), 0), -1))
  assert last.debias.count[:, 0, -1].min() > WIDE.num_actions  # the tail was exercised
  assert np.any(np.abs(last.debias.bias_mean) > 1e-3)


def test_debias_counts_in_solved_trees():
  """With the default 32 buckets: count[v - 1] = the node's slots with at least v visits."""
  for out in (_run(SMALL, **GREEDY), _det_output(), _rules_output()):
    tree = _np_tree(out.tree)
    assert tree.num_buckets == 32
    alloc = _allocated(tree)
    for v in range(1, tree.num_buckets):
      np.testing.assert_array_equal(tree.debias.count[..., v - 1][alloc],
                                    np.sum(tree.slots.visits >= v, -1)[alloc])


# ---- 6. bad input ---------------------------------------------------------------------------

def test_nonfinite_action_values_are_masked_and_counted():
  out = _det_output()
  tree = _np_tree(out.tree)
  _assert_finite_tree(tree)
  assert np.all(np.isfinite(np.asarray(out.q_values)))
  bad_count = tree.nonfinite_estimates
  assert bad_count[0] > 0 and bad_count[2] > 0  # NaN / +inf count as misbehaviour
  np.testing.assert_array_equal(bad_count[[1, 3, 4, 5]], 0)  # -inf is a deliberate mask
  live = _allocated(tree) & ~tree.nodes.terminal
  member = np.arange(DET.num_members)[:, None, None]
  masked = (((member == 0) & np.isin(tree.slots.actions(), [1, 2])) |
            ((member == 1) & (tree.slots.actions() == 1)))
  active = np.arange(tree.num_slots) < tree.nodes.num_active[..., None]
  assert np.any(masked & live[..., None])
  assert not np.any((tree.slots.legal | active | (tree.slots.visits > 0))[live[..., None] &
                                                                          masked])
  visits = np.asarray(out.visit_counts)
  assert not np.any(visits[0, [1, 2]]) and not np.any(visits[1, 1])
  assert np.all(visits[0, [0, 3]] > 0) and np.all(visits[1, [0, 2, 3]] > 0)
  # Member 2 has no usable q̂1 at all: every action stays searchable, with q̂1 = the node's
  # value (the estimator's own, finite and non-zero here: not a fallback to 0).
  np.testing.assert_array_equal(tree.slots.legal[2][live[2]], True)
  raw = tree.nodes.raw_value[2][live[2]]
  assert np.all(raw != 0.0)
  np.testing.assert_array_equal(tree.slots.action_values()[2][live[2]],
                                np.broadcast_to(raw[:, None], (len(raw), DET.num_actions)))
  assert np.all(visits[2] > 0)


def test_avts_needs_action_values():
  def values_only(params, key, states):
    return Estimate(value=jnp.zeros(states.state.shape, jnp.float32))

  search = js.policies.avts(DET.game, values_only, num_simulations=4)
  with pytest.raises(ValueError, match="action_values"):
    jax.eval_shape(search, None, jax.random.PRNGKey(0), DET.roots())


def test_bad_options_raise():
  with pytest.raises(ValueError, match="widening"):
    js.policies.custom(DET.game, _estimator(DET), selection=js.selection.laplace(),
                       num_simulations=4, backup="mean", widening=True)
  with pytest.raises(ValueError, match="num_slots"):
    js.policies.avts(DET.game, _estimator(DET), num_simulations=4, num_slots=0)
  with pytest.raises(ValueError, match="variance"):
    js.policies.avts(DET.game, _estimator(DET), num_simulations=4, variance="bogus")
  # docs/bad_input.md: an unknown outcome rule or backup names the option and the choices.
  with pytest.raises(ValueError, match="outcome_rule.*'bogus'|'bogus'.*outcome_rule"):
    js.policies.avts(DET.game, _estimator(DET), num_simulations=4, outcome_rule="bogus")
  with pytest.raises(ValueError, match="backup.*'bogus'|'bogus'.*backup"):
    js.policies.custom(DET.game, _estimator(DET), selection=js.selection.laplace(),
                       num_simulations=4, backup="bogus")


def test_fewer_slots_than_actions_keeps_the_top_k_by_q1():
  """``num_slots=2 < A`` (the rule search of section 8): every node's slots are its two best
  actions by q̂1, and only those are ever visited (each rule's search then solves the problem
  restricted to them exactly, section 8)."""
  out = _rules_output()
  tree = _np_tree(out.tree)
  assert tree.num_slots == 2
  allowed = _searched_actions(_q1_table(SMALL, _estimator(SMALL)), 2)
  live = _allocated(tree) & ~tree.nodes.terminal
  node_allowed = _node_lookup(tree, allowed.astype(np.float64)) > 0
  slot_allowed = np.take_along_axis(node_allowed, tree.slots.actions(), -1)
  assert np.all(slot_allowed[live] & tree.slots.legal[live])
  assert np.all(tree.slots.actions()[live][:, 0] != tree.slots.actions()[live][:, 1])
  visits = np.asarray(out.visit_counts)
  assert not np.any(visits[~allowed[:, 0, 0]]) and np.all(visits[allowed[:, 0, 0]] > 0)
  # The cut matters here: somewhere the best action is outside the top 2 by q̂1.
  q_star = np.asarray(SMALL.q_star)
  assert np.any(~np.take_along_axis(allowed, q_star.argmax(-1)[..., None], -1))


# ---- 7. selection rules as pure functions ---------------------------------------------------

def _view(q3, visits, legal, q1=None, variance=None, upper=None):
  k = len(q3)
  f32 = lambda x: jnp.asarray(x, jnp.float32)
  visits = jnp.asarray(visits, jnp.int32)
  return NodeView(visits=1 + jnp.sum(visits), value=f32(0.5), child_visits=visits,
                  child_values=f32(q3) - 7.0,  # the rules must read q̂3, not this
                  prior_logits=jnp.zeros((k,), jnp.float32),
                  action_values=f32(np.zeros(k) if q1 is None else q1),
                  legal=jnp.asarray(legal, bool), depth=jnp.int32(1), debiased_values=f32(q3),
                  value_variance=f32(np.zeros(k) if variance is None else variance),
                  upper_bounds=f32(np.zeros(k) if upper is None else upper))


Q3 = np.array([0.2, -0.5, 0.4, 0.35, 0.1], np.float32)
VISITS = np.array([3, 0, 8, 1, 0])
LEGAL = np.array([True, True, True, True, False])
Q1 = np.array([0.1, 0.9, -0.3, 0.5, 2.0], np.float32)


def test_laplace_and_hoeffding_scores():
  view = _view(Q3, VISITS, LEGAL)
  np.testing.assert_allclose(np.asarray(js.selection.laplace().score(view, None)),
                             Q3 + 0.1 / (VISITS + 1), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(js.selection.laplace(0.5).score(view, None)),
                             Q3 + 0.5 / (VISITS + 1), rtol=1e-6)
  bonus = 6.0 * math.sqrt(-math.log(0.999) / 2.0) / np.sqrt(VISITS + 1.0)
  np.testing.assert_allclose(np.asarray(js.selection.hoeffding((-6.0, 0.0)).score(view, None)),
                             Q3 + bonus, rtol=1e-5)
  bonus = 2.0 * math.sqrt(-math.log(0.9) / 2.0) / np.sqrt(VISITS + 1.0)
  np.testing.assert_allclose(
      np.asarray(js.selection.hoeffding((1.0, 3.0), p=0.9).score(view, None)), Q3 + bonus,
      rtol=1e-5)
  with pytest.raises(ValueError):
    js.selection.hoeffding((0.0, 0.0))
  with pytest.raises(ValueError):
    js.selection.hoeffding((0.0, 1.0), p=1.0)


def test_value_prior_puct_score():
  view = _view(Q3, VISITS, LEGAL, q1=Q1)
  prior = np.exp(Q1[LEGAL] - Q1[LEGAL].max())
  prior = prior / prior.sum()
  expected = Q3[LEGAL] + prior * np.sqrt(VISITS.sum()) / (1 + VISITS[LEGAL])
  score = np.asarray(js.selection.value_prior_puct().score(view, None))
  np.testing.assert_allclose(score[LEGAL], expected, rtol=1e-5)
  # The illegal slot's big q̂1 takes no prior mass from the legal ones.
  assert score[4] <= Q3[4] + 1e-6


def _pick(rule, view, key):
  return js.selection.masked_argmax(rule.score(view, key), view.legal)


def test_thompson_without_variance_is_greedy_on_q3():
  rule = js.selection.thompson()
  assert rule.needs_key
  view = _view(Q3, VISITS, LEGAL)
  keys = jax.random.split(jax.random.PRNGKey(0), 16)
  picks = jax.vmap(lambda k: _pick(rule, view, k))(keys)
  np.testing.assert_array_equal(np.asarray(picks), 2)
  # The illegal slot never wins, whatever its value.
  view = _view(np.array([0.0, 0.1, 0.2, 0.3, 9.0]), VISITS, LEGAL)
  np.testing.assert_array_equal(np.asarray(jax.vmap(lambda k: _pick(rule, view, k))(keys)), 3)


def _normal_cdf(x):
  return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_thompson_picks_each_arm_with_the_probability_that_it_is_best():
  means = np.array([0.0, 0.3, 0.1, 5.0], np.float32)
  variances = np.array([0.25, 0.04, 0.5, 1.0], np.float32)
  legal = np.array([True, True, True, False])
  view = _view(means, [2, 5, 1, 0], legal, variance=variances)
  num_draws = 20000
  keys = jax.random.split(jax.random.PRNGKey(1), num_draws)
  picks = np.asarray(jax.jit(jax.vmap(lambda k: _pick(js.selection.thompson(), view, k)))(keys))
  frequencies = np.bincount(picks, minlength=4) / num_draws
  # P(arm i is the largest) = ∫ φ_i(x) Π_{j≠i} Φ_j(x) dx, on a fine grid.
  x = np.linspace(-6.0, 7.0, 26001)
  sd = np.sqrt(variances[:3].astype(np.float64))
  cdf = np.stack([_normal_cdf((x - m) / s) for m, s in zip(means[:3], sd)])
  pdf = np.stack([np.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))
                  for m, s in zip(means[:3], sd)])
  exact = [np.sum(pdf[i] * np.prod(np.delete(cdf, i, 0), 0)) * (x[1] - x[0]) for i in range(3)]
  np.testing.assert_allclose(sum(exact), 1.0, atol=1e-4)
  assert frequencies[3] == 0.0
  np.testing.assert_allclose(frequencies[:3], exact, atol=0.015)  # 4+ standard errors


def test_optimistic_rule_follows_the_upper_bound_then_q3():
  """Proof search: the highest optimistic bound wins; among equal bounds, the best q̂3."""
  rule = js.selection.optimistic()
  view = _view([0.1, 0.9, 0.5, 0.7], [1, 1, 1, 1], [True, True, True, True],
               upper=[2.0, 1.0, 2.0, 2.0])
  assert int(js.selection.masked_argmax(rule.score(view, None), view.legal)) == 3
  view = _view([0.1, 0.9, 0.5, 0.7], [1, 1, 1, 1], [True, True, True, False],
               upper=[2.0, 1.0, 2.0, 3.0])
  assert int(js.selection.masked_argmax(rule.score(view, None), view.legal)) == 2


def test_thompson_top_k_gives_distinct_legal_slots():
  view = _view(Q3, VISITS, LEGAL, variance=np.full(5, 0.3))
  top = jax.jit(functools.partial(js.selection.thompson_top_k, k=5))
  keys = jax.random.split(jax.random.PRNGKey(2), 64)
  slots, valid = (np.asarray(x) for x in jax.vmap(lambda k: top(view, k))(keys))
  assert slots.shape == valid.shape == (64, 5)
  np.testing.assert_array_equal(valid, [[True] * 4 + [False]] * 64)
  np.testing.assert_array_equal(np.sort(slots[:, :4], -1), [[0, 1, 2, 3]] * 64)
  assert len({tuple(row) for row in slots[:, :4]}) > 4  # the order follows the draws
  # Its first slot is Thompson's pick for the same key (one draw).
  picks = jax.vmap(lambda k: _pick(js.selection.thompson(), view, k))(keys)
  np.testing.assert_array_equal(slots[:, 0], np.asarray(picks))
  slots, valid = js.selection.thompson_top_k(view, jax.random.PRNGKey(3), 2)
  assert slots.shape == (2,) and np.all(np.asarray(valid))
  assert len(set(np.asarray(slots).tolist())) == 2 and np.all(LEGAL[np.asarray(slots)])
  for k in (0, 6):
    with pytest.raises(ValueError, match="k"):
      js.selection.thompson_top_k(view, jax.random.PRNGKey(0), k)


# ---- 8. every rule inside a search ----------------------------------------------------------

# One search, one compile, one rule per tree: member m of SMALL is searched with RULES[m]. The
# estimator's prior logits carry the member index (a constant row, so the prior stays
# uniform) and the rule below dispatches on it; rules that draw no random numbers get no key,
# as the engine would give them. The same search also has the reference variance (section 9),
# num_slots=2 < A (section 6) and a game without pessimistic_value (section 3).
RULES = (("thompson", js.selection.thompson()), ("laplace", js.selection.laplace()),
         ("hoeffding", js.selection.hoeffding(SMALL.game.value_range)),
         ("value_prior_puct", js.selection.value_prior_puct()),
         ("uct", js.selection.uct(value_range=SMALL.game.value_range)),
         ("puct", js.selection.puct()))
assert len(RULES) == SMALL.num_members


def _per_tree_rule():
  def branch(rule):
    return lambda view, key: rule.score(view, key if rule.needs_key else None)

  def score(view, key):
    index = jnp.clip(view.prior_logits[0].astype(jnp.int32), 0, len(RULES) - 1)
    return jax.lax.switch(index, [branch(rule) for _, rule in RULES], view, key)

  return js.selection.SelectionRule("per_tree", score, needs_key=True)


def _member_logits_estimator(params, key, states):
  estimate = _estimator(SMALL)(params, key, states)
  logits = jnp.broadcast_to(states.mdp[:, None].astype(jnp.float32), (states.mdp.shape[0],
                                                                       SMALL.num_actions))
  return estimate.replace(prior_logits=logits)


RULE_SEARCH = dict(estimator=_member_logits_estimator, selection=_per_tree_rule(),
                   game=dataclasses.replace(SMALL.game, pessimistic_value=None),
                   num_slots=2, variance="reference")


def _rules_output(key=0):
  return _run(SMALL, key=key, **RULE_SEARCH)


@pytest.mark.parametrize("member", range(len(RULES)), ids=[name for name, _ in RULES])
def test_every_rule_drives_a_jitted_avts_search_to_the_exact_solution(member):
  out = _rules_output()
  _assert_solved_exactly(SMALL, out, num_slots=2, estimator=_estimator(SMALL), members=[member])
  # The dispatch saw this member's index: every node's prior logits hold it.
  tree = _np_tree(jax.tree.map(lambda x: x[member:member + 1], out.tree))
  np.testing.assert_array_equal(tree.slots.prior_logits[_allocated(tree)], float(member))


def test_vmapped_search_matches_separate_calls():
  """The search under ``jax.vmap`` over an extra leading axis (keys), against separate
  jitted calls with the same keys: the same trees."""
  search, _ = _search(DET, estimator=_det_estimator)
  roots = DET.roots()
  keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
  both = jax.jit(jax.vmap(lambda k: search(None, k, roots)))(keys)
  for i in range(len(keys)):
    alone = _det_output(i)
    flat_both = jax.tree_util.tree_leaves_with_path(jax.tree.map(lambda z: z[i], both))
    for (path, x), y in zip(flat_both, jax.tree.leaves(alone), strict=True):
      x, y = np.asarray(x), np.asarray(y)
      if np.issubdtype(x.dtype, np.floating):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6,
                                   err_msg=jax.tree_util.keystr(path))
      else:
        np.testing.assert_array_equal(x, y, err_msg=jax.tree_util.keystr(path))
  # Thompson draws differ between the keys, and so do the trees (their allocation order).
  assert not np.array_equal(np.asarray(both.tree.slots.chance[0]),
                            np.asarray(both.tree.slots.chance[1]))


# ---- 9. variance and debias options ---------------------------------------------------------

def test_reference_variance_collects_statistics():
  out = _rules_output()  # variance="reference"; member 0 is searched by Thompson sampling
  _assert_finite_tree(out.tree)
  assert np.any(np.asarray(out.tree.debias.sq_sum[0, 0]) > 0)
  _assert_solved_exactly(SMALL, out, num_slots=2, estimator=_estimator(SMALL), members=[0])


def test_without_variance_and_debias_thompson_is_greedy_and_deterministic():
  first = _run(SMALL, key=0, **GREEDY)
  _assert_finite_tree(first.tree)
  second = _run(SMALL, key=1, **GREEDY)
  for x, y in zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  # With the default variance, another key gives another tree.
  assert not np.array_equal(np.asarray(_det_output(0).tree.slots.chance),
                            np.asarray(_det_output(1).tree.slots.chance))


def _level(slot_solved_after, config):
  """One node's Bellman update (``backup_bellman.bellman_update``) of slot 0 (q̂1 = 0.5,
  unvisited) at a node whose statistics hold a drift of -0.2 at visit 2 (bucket 1), after a
  transition with reward 0.2 into a child of value 0 (solved or not)."""
  stats = debias.DebiasStats(count=jnp.array([2, 1, 0, 0], jnp.int32),
                             bias_mean=jnp.array([0.0, -0.2, 0.0, 0.0], jnp.float32),
                             sq_sum=jnp.zeros((4,), jnp.float32))
  f32 = lambda x: jnp.asarray(x, jnp.float32)
  node = backup_bellman.BellmanNode(
      f32([0.5, 0.3]), jnp.array([0, 2], jnp.int32), jnp.array([True, True]),
      jnp.array([False, False]), jnp.int32(2), stats, f32([NO_BOUND, 0.1]), f32(0.1),
      f32([1.0, 0.6]), f32(1.0), jnp.array(False))
  edge = backup_bellman.BellmanEdge(
      jnp.int32(0), f32([1.0]), f32([0.2]), f32([0.0]), f32([0.0]), f32([0.0]), f32([0.1]),
      jnp.array([slot_solved_after]))
  return jax.jit(functools.partial(backup_bellman.bellman_update, plan=config))(node, edge)


def _level_config():
  """The plan of a one-simulation Bellman search over two actions."""
  config = search_lib.SearchConfig(num_simulations=1, max_nodes=2, max_depth=1,
                                   selection=js.selection.thompson(), backup="bellman",
                                   avts=search_lib.AvtsOptions(widening=True, num_buckets=4))
  model = types.SimpleNamespace(num_actions=2, num_outcomes=1, has_bound=True, has_upper=True,
                                value_bounds=None)
  return search_lib.plan_for(config, model)


def test_bellman_level_records_the_change_of_q2_and_q3():
  """An unsolved slot: q̂2 0.5 -> 0.2 (bias bucket 1 records -0.3), q̂3 before = 0.5 - 0.2,
  after = 0.2 + correction(1) = 0.2 - 0.2: the squared change of q̂3 is 0.3²; the newest slot
  was chosen, so a third candidate would be activated (here there are only two)."""
  level = _level(False, _level_config())
  np.testing.assert_allclose(float(level.slot_value), 0.2, rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(level.stats.count), [3, 1, 0, 0])
  np.testing.assert_allclose(np.asarray(level.stats.bias_mean), [-0.1, -0.2, 0, 0], atol=1e-6)
  np.testing.assert_allclose(np.asarray(level.stats.sq_sum), [0.09, 0, 0, 0], atol=1e-6)
  assert not bool(level.slot_solved) and not bool(level.solved)
  np.testing.assert_allclose(float(level.slot_bound), 0.2, rtol=1e-6)
  np.testing.assert_allclose(float(level.bound), 0.2, rtol=1e-6)
  # Optimistic bound: the slot's drops to 0.2 + 0·0.1; the node's to the best slot's, 0.6.
  np.testing.assert_allclose(float(level.slot_upper), 0.2, rtol=1e-6)
  np.testing.assert_allclose(float(level.upper), 0.6, rtol=1e-6)
  assert int(level.num_active) == 2


def test_bellman_level_squares_the_change_of_q3_when_the_visit_solves_the_slot():
  """As above, but the child is solved, so the slot is too: q̂3 after = q̂2 = 0.2, before
  0.5 - 0.2 = 0.3, a change of -0.1 (squared 0.01), not -0.3."""
  level = _level(True, _level_config())
  assert bool(level.slot_solved)
  np.testing.assert_allclose(np.asarray(level.stats.sq_sum), [0.01, 0, 0, 0], atol=1e-6)

