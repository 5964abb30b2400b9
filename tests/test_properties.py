"""Property tests (hypothesis): invariants of the tree after EVERY simulation, over random
Garnet MDPs, roots, estimator errors, keys and search configurations.

Compiles are the cost, so the static part of a case (B, S, A, K slots, O outcomes, horizon =
depth D, selection rule, backup, widening, debias, capacity) comes from a small fixed set
:data:`CONFIGS`, each compiled once (``functools.lru_cache``) as one jitted ``lax.scan`` of
single-simulation searches that returns the tree after every simulation. Hypothesis varies
the data: which member of a 32-MDP Garnet family each root plays (the family is one game, so
this needs no recompile), the root states and times, the estimator's bias and noise (passed
as ``params``), and the search key.

Invariants checked after every simulation (``_check_case``):

* no NaN/inf in any float array of the tree;
* visits: a node's visits are its creation plus one per simulation through one of its slots,
  plus simulations that stopped at it (terminal, solved root, full tree) — equality for
  unsolved non-terminal nodes of trees that never filled; the root gains exactly one visit
  per simulation; chance records count the visits of their slot (Bellman backup: minus the
  expansion itself) and each child node the visits of its outcome (plus its creation);
* chance records' probabilities sum to 1 and equal the game's;
* values inside the game's value range, per node ``[0, moves left]`` (raw estimates, q̂1,
  rewards; backed-up values too, except debiased Bellman values, which may leave it);
* the achievable bound never decreases, never exceeds V* (exact optimum) and starts at the
  game's pessimistic value; Bellman: the optimistic bound never increases and never drops
  below V*; solved nodes hold V* (full width);
* progressive widening: only active slots are visited or expanded, every active slot but the
  newest has been visited, and while candidates remain exactly one active slot is unvisited.

The default suite runs 8 cases of two configurations — AVTS with the ``gap`` outcome rule and a
top-K cut (what every proof runs) and PUCT with sampled outcomes, both with trees that fill up
— plus the reroot of AVTS trees; ``pytest -m slow`` runs 1,200 cases over all of them.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxsearch as js
from jaxsearch.games import garnet
from jaxsearch.game import Estimate

MEMBERS = 32
EPS = 1e-4


@dataclasses.dataclass(frozen=True)
class Config:
  backup: str
  rule: str
  batch: int = 4
  states: int = 5
  actions: int = 4
  outcomes: int = 2
  horizon: int = 3
  slots: int | None = None
  widening: bool = False
  debias: bool = True
  simulations: int = 12
  nodes: int | None = None  # None: room for every simulation (no overflow)
  outcome_rule: str = "balanced"


CONFIGS = {
    # The default suite's two: capacity for about 2/3 of the simulations, so trees fill up.
    "bellman-thompson-widening": Config("bellman", "thompson", widening=True, outcomes=2,
                                        nodes=17),
    "mean-puct-sampled": Config("mean", "puct", outcomes=2, outcome_rule="sample", batch=3,
                                nodes=9),
    # What every proof runs: the `gap` outcome rule and a top-K cut (3 of 4 actions).
    "bellman-thompson-gap-top3": Config("bellman", "thompson", widening=True, outcomes=2,
                                        slots=3, outcome_rule="gap", nodes=17),
    "bellman-thompson-roomy": Config("bellman", "thompson", widening=True, outcomes=2),
    "mean-puct-roomy": Config("mean", "puct", outcomes=3, outcome_rule="sample", batch=3),
    "bellman-hoeffding-full": Config("bellman", "hoeffding", outcomes=3, states=6, nodes=14,
                                     debias=False, widening=True),
    "bellman-laplace-top2": Config("bellman", "laplace", outcomes=1, horizon=4, slots=2,
                                   batch=5),
    "bellman-uct-gap": Config("bellman", "uct", outcomes=2, outcome_rule="gap",
                              debias=False, actions=3),
    "mean-uct-deterministic": Config("mean", "uct", outcomes=1, horizon=4, actions=3),
    "mean-thompson-full": Config("mean", "thompson", outcomes=2, nodes=7, batch=2),
    "mean-laplace-top3": Config("mean", "laplace", outcomes=3, states=6, slots=3),
    "bellman-puct-widening": Config("bellman", "puct", outcomes=2, horizon=2, widening=True,
                                    simulations=16),
}
DEFAULT = ("bellman-thompson-gap-top3", "mean-puct-sampled")


@functools.lru_cache(maxsize=None)
def _family(states, actions, outcomes, horizon):
  return garnet.make_family(MEMBERS, states, actions, outcomes, horizon, seed=1000 * outcomes)


def _lookup(table, state, horizon):
  """``table[mdp, time, state]`` (``[M, H, S, ...]``), zeros at the end of the episode."""
  row = table[state.mdp, jnp.minimum(state.time, horizon - 1), state.state]
  live = (state.time < horizon).reshape(state.time.shape + (1,) * (row.ndim - state.time.ndim))
  return jnp.where(live, row, 0.0)


def _estimator(f):
  """``clip(Q* + bias · moves left + noise · z, 0, moves left)``: wrong, but inside the value
  range; ``params = (bias, noise)``; prior logits ``2 q̂1``."""
  z = np.random.default_rng(7).standard_normal(f.q_star.shape).astype(np.float32)
  q_star, z = np.asarray(f.q_star), z

  def estimate(params, key, states):
    del key
    bias, noise = params
    left = (f.horizon - states.time).astype(jnp.float32)[:, None]
    q = (_lookup(jnp.asarray(q_star), states, f.horizon) + bias * left +
         noise * _lookup(jnp.asarray(z), states, f.horizon))
    q = jnp.clip(q, 0.0, jnp.maximum(left, 0.0))
    value = jnp.where(states.time < f.horizon, jnp.max(q, axis=-1), 0.0)
    return Estimate(value=value, action_values=q, prior_logits=2.0 * q)

  return estimate


def _rule(name, game):
  return {"uct": lambda: js.selection.uct(value_range=game.value_range),
          "puct": lambda: js.selection.puct(c=1.25),
          "thompson": js.selection.thompson, "laplace": js.selection.laplace,
          "hoeffding": lambda: js.selection.hoeffding(game.value_range)}[name]()


@functools.lru_cache(maxsize=None)
def _runner(name):
  """``(family, run)``: ``run(params, key, roots, tree=None) -> trees [T + 1, B, ...]``
  (before the first and after every simulation), from fresh trees or from ``tree`` (a
  reused, e.g. rerooted, one: the same compiled program)."""
  cfg = CONFIGS[name]
  f = _family(cfg.states, cfg.actions, cfg.outcomes, cfg.horizon)
  per_simulation = cfg.outcomes if cfg.backup == "bellman" else 1
  nodes = cfg.nodes or cfg.simulations * per_simulation + 1
  search = js.policies.custom(
      f.game, _estimator(f), selection=_rule(cfg.rule, f.game), num_simulations=1,
      max_nodes=nodes, backup=cfg.backup, widening=cfg.widening, debias=cfg.debias,
      num_slots=cfg.slots, outcome_rule=cfg.outcome_rule, num_buckets=4)

  def scan(params, key, roots, tree):
    def body(tree, sim_key):
      tree = search(params, sim_key, roots, tree).tree
      return tree, tree

    _, trees = jax.lax.scan(body, tree, jax.random.split(key, cfg.simulations))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), tree, trees)

  init, scan = jax.jit(search.init_tree), jax.jit(scan)

  def run(params, key, roots, tree=None):
    init_key, loop_key = jax.random.split(key)
    if tree is None:
      tree = init(params, init_key, roots)
    return scan(params, loop_key, roots, tree)

  return f, run


@st.composite
def cases(draw, names):
  name = draw(st.sampled_from(names))
  cfg = CONFIGS[name]
  ints = lambda hi: st.lists(st.integers(0, hi - 1), min_size=cfg.batch, max_size=cfg.batch)
  roots = (draw(ints(MEMBERS)), draw(ints(cfg.states)), draw(ints(cfg.horizon)))
  bias = draw(st.floats(0.0, 1.0, width=32))
  noise = draw(st.floats(0.0, 1.0, width=32))
  seed = draw(st.integers(0, 2**31 - 1))
  return name, roots, bias, noise, seed


def _np(tree):
  return jax.tree.map(np.asarray, jax.device_get(tree))


def _check_case(case):
  name, (mdp, state, time), bias, noise, seed = case
  cfg = CONFIGS[name]
  f, run = _runner(name)
  roots = garnet.State(state=jnp.asarray(state, jnp.int32), time=jnp.asarray(time, jnp.int32),
                       mdp=jnp.asarray(mdp, jnp.int32))
  params = (jnp.float32(bias), jnp.float32(noise))
  trees = _np(run(params, jax.random.PRNGKey(seed), roots))
  _check_trees(cfg, f, trees)


def _check_trees(cfg, f, trees, filled=False):
  """Every invariant of the module docstring, on ``trees [T + 1, B, ...]``: the trees before
  and after each of ``T`` simulations (from fresh or reused trees). ``filled`` (``bool[B]``):
  the trees were full before (a rerooted tree keeps the extra visits of its full past)."""
  bellman = cfg.backup == "bellman"
  filled = np.asarray(filled, bool)
  steps, batch, capacity = trees.nodes.visits.shape
  num_slots = trees.slots.visits.shape[-1]
  rows = np.arange(batch)[:, None]
  st_ = trees.nodes.state
  # Exact values of every node's state (the node's state never changes once written).
  horizon = f.horizon
  live_time = st_.time < horizon
  t_index = np.minimum(st_.time, horizon - 1)
  v_star = np.where(live_time, np.asarray(f.v_star)[st_.mdp, t_index, st_.state], 0.0)
  v_pess = np.where(live_time, np.asarray(f.v_pessimistic)[st_.mdp, t_index, st_.state], 0.0)
  moves_left = np.maximum(horizon - st_.time, 0).astype(np.float64)
  previous = None
  for t in range(steps):
    tree = jax.tree.map(lambda x: x[t], trees)
    where = f"{cfg} after {t} simulations"
    # No NaN/inf anywhere.
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
      if np.issubdtype(leaf.dtype, np.floating):
        assert np.all(np.isfinite(leaf)), f"{jax.tree_util.keystr(path)} {where}"
    num_nodes = tree.num_nodes
    assert np.all((num_nodes >= 1) & (num_nodes <= capacity)), where
    alloc = np.arange(capacity)[None] < num_nodes[:, None]
    terminal = tree.nodes.terminal
    live = alloc & ~terminal
    np.testing.assert_array_equal(terminal[alloc], (st_.time[t] >= horizon)[alloc], where)
    slot_visits = tree.slots.visits
    assert not np.any(slot_visits[~alloc]) and not np.any(tree.nodes.visits[~alloc]), where
    assert not np.any(slot_visits * ~tree.slots.legal), where
    # Visits: creation + one per simulation through a slot (+ stops at the node).
    child_sum = slot_visits.sum(-1)
    assert np.all(tree.nodes.visits[alloc] >= 1 + child_sum[alloc]), where
    never_full = (trees.num_nodes[t] + (cfg.outcomes if bellman else 1) <= capacity) & ~filled
    exact = live & never_full[:, None] & ~tree.bounds.solved
    np.testing.assert_array_equal(tree.nodes.visits[exact], 1 + child_sum[exact], where)
    np.testing.assert_array_equal(tree.nodes.visits[:, 0], trees.nodes.visits[0, :, 0] + t, where)
    if previous is not None and not bellman:
      # Running-mean backup: a simulation that does not expand (a full tree; or a terminal
      # leaf) re-backs the deepest node of its path, whose visits then exceed 1 + its
      # slots' visits by one more; otherwise no node's excess changes.
      excess = np.where(alloc, tree.nodes.visits - 1 - child_sum, 0)
      before = np.where(np.arange(capacity)[None] < previous.num_nodes[:, None],
                        previous.nodes.visits - 1 - previous.slots.visits.sum(-1), 0)
      grown = excess - before
      expanded = num_nodes - previous.num_nodes
      assert np.all((grown >= 0) & (grown <= 1)), where
      np.testing.assert_array_equal(grown.sum(-1), 1 - expanded, where)
      on_path = (tree.nodes.visits - np.where(alloc, previous.nodes.visits, 0)) > 0
      for b, node in zip(*np.nonzero(grown)):
        deepest = tree.nodes.depth[b][on_path[b] & alloc[b]].max()
        assert tree.nodes.depth[b, node] == deepest, where
        if not terminal[b, node]:  # the full-tree case: it had an unexpanded slot to take
          assert num_nodes[b] + 1 > capacity, where
    # Chance records: probabilities of the game, summing to 1; visit counts.
    chance = tree.slots.chance
    expanded = alloc[..., None] & (chance >= 0)
    safe = np.maximum(chance, 0)
    probs = tree.chance.prob[rows[..., None], safe]  # [B, N, K, O]
    created = np.arange(capacity)[None] < tree.num_chance[:, None]
    np.testing.assert_allclose(tree.chance.prob[created].sum(-1), 1.0, atol=1e-5, err_msg=where)
    assert np.all(tree.chance.prob >= 0), where
    game_probs = np.asarray(f.probs)[st_.mdp[t][..., None], st_.state[t][..., None],
                                     tree.slots.actions()]
    np.testing.assert_allclose(probs[expanded], game_probs[expanded], atol=1e-6, err_msg=where)
    chance_total = tree.chance.visits[rows[..., None], safe].sum(-1)
    np.testing.assert_array_equal(chance_total[expanded],
                                  slot_visits[expanded] - (1 if bellman else 0), where)
    kids = tree.chance.child[rows[..., None], safe]  # [B, N, K, O]
    has_kid = expanded[..., None] & (kids >= 0)
    kid_visits = tree.nodes.visits[rows[..., None, None], np.maximum(kids, 0)]
    outcome_visits = tree.chance.visits[rows[..., None], safe]
    np.testing.assert_array_equal(kid_visits[has_kid],
                                  outcome_visits[has_kid] + (1 if bellman else 0), where)
    if bellman:  # every possible outcome of an expanded slot has its node
      np.testing.assert_array_equal(has_kid[expanded], (probs > 0)[expanded], where)
    # Values inside the value range, per node [0, moves left].
    left = moves_left[t]
    inside = lambda x, hi: np.all((x >= -EPS) & (x <= hi + EPS))
    assert inside(tree.nodes.raw_value[alloc], left[alloc]), where
    legal = tree.slots.legal & alloc[..., None]
    assert inside(tree.slots.action_values()[legal],
                  np.broadcast_to(left[..., None], legal.shape)[legal]), where
    rewards = tree.chance.reward[created]
    assert np.all((rewards >= -EPS) & (rewards <= 1 + EPS)), where
    lo, hi = f.game.value_range
    assert lo <= 0.0 and hi >= horizon - EPS
    if not (bellman and cfg.debias):
      assert inside(tree.nodes.value[alloc], left[alloc]), where
      assert inside(tree.slots.value[legal],
                    np.broadcast_to(left[..., None], legal.shape)[legal]), where
    # Achievable bound: from the pessimistic value up, never above V*; monotone.
    bound = tree.bounds.bound
    assert np.all(bound[alloc] <= v_star[t][alloc] + EPS), where
    assert np.all(bound[alloc] >= v_pess[t][alloc] - EPS), where
    if bellman:
      upper = tree.bounds.upper
      assert np.all(upper[alloc] >= v_star[t][alloc] - EPS), where
      if cfg.slots is None:  # full width: a solved node's value is exact
        solved = alloc & tree.bounds.solved
        np.testing.assert_allclose(tree.nodes.value[solved], v_star[t][solved], atol=EPS,
                                   err_msg=where)
    if previous is not None:
      was = np.arange(capacity)[None] < previous.num_nodes[:, None]
      assert np.all(bound[was] >= previous.bounds.bound[was]), where
      if bellman:
        assert np.all(tree.bounds.upper[was] <= previous.bounds.upper[was]), where
      assert np.all(num_nodes >= previous.num_nodes), where
    # Progressive widening.
    if cfg.widening:
      num_active = tree.nodes.num_active
      slot_ids = np.arange(num_slots)
      active = slot_ids < num_active[..., None]
      candidates = tree.slots.legal.sum(-1)
      assert np.all((num_active[live] >= 1) & (num_active[live] <= candidates[live])), where
      inactive = live[..., None] & ~active
      assert not np.any(slot_visits[inactive]) and np.all(chance[inactive] < 0), where
      unvisited = live[..., None] & active & (slot_visits == 0)
      newest = slot_ids == (num_active[..., None] - 1)
      assert not np.any(unvisited & ~newest), where
      growing = live & (num_active < candidates)
      np.testing.assert_array_equal(unvisited.sum(-1)[growing], 1, where)
      if previous is not None:
        grew = (num_active - previous.nodes.num_active)[was & live]
        assert np.all((grew >= 0) & (grew <= 1)), where
    previous = tree


_SETTINGS = dict(deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=8, derandomize=True, **_SETTINGS)
@given(case=cases(DEFAULT))
def test_tree_invariants_after_every_simulation(case):
  _check_case(case)


@pytest.mark.slow
@settings(max_examples=1200, **_SETTINGS)
@given(case=cases(tuple(CONFIGS)))
def test_tree_invariants_after_every_simulation_many_cases(case):
  _check_case(case)


def _checked_default_trees(name):
  """``(config, family, trees)`` of one default configuration's run, invariants checked."""
  cfg = CONFIGS[name]
  f, run = _runner(name)
  roots = garnet.State(state=jnp.zeros((cfg.batch,), jnp.int32),
                       time=jnp.zeros((cfg.batch,), jnp.int32),
                       mdp=jnp.arange(cfg.batch, dtype=jnp.int32))
  trees = _np(run((jnp.float32(0.3), jnp.float32(0.3)), jax.random.PRNGKey(0), roots))
  _check_trees(cfg, f, trees)
  return cfg, f, trees


def test_the_invariant_checks_can_fail():
  """A corrupted tree (one extra visit, a probability off, a NaN) fails the checks."""
  cfg, f, trees = _checked_default_trees(DEFAULT[0])
  corruptions = [
      lambda t: t.replace(slots=t.slots.replace(visits=_bump(t.slots.visits, (-1, 0, 0, 0), 1))),
      lambda t: t.replace(chance=t.chance.replace(prob=_bump(t.chance.prob, (-1, 0, 0, 0), 0.01))),
      lambda t: t.replace(nodes=t.nodes.replace(value=_bump(t.nodes.value, (-1, 0, 1), np.nan))),
      lambda t: t.replace(bounds=t.bounds.replace(bound=_bump(t.bounds.bound, (-1, 0, 0), 5.0))),
      lambda t: t.replace(nodes=t.nodes.replace(
          num_active=_bump(t.nodes.num_active, (-1, 0, 0), 1))),
  ]
  for corrupt in corruptions:
    with pytest.raises(AssertionError):
      _check_trees(cfg, f, corrupt(trees))
  # The running-mean case: a full tree whose re-backed node gains no visit (the missing "+1"
  # of the full-tree re-back) fails too.
  cfg, f, trees = _checked_default_trees(DEFAULT[1])
  full = np.nonzero(trees.num_nodes[:, 0] == trees.nodes.visits.shape[-1])[0]
  assert len(full) >= 2  # the tree fills up, then re-backs
  t = full[-1]
  excess = trees.nodes.visits[t, 0] - 1 - trees.slots.visits[t, 0].sum(-1)
  node = int(np.argmax(excess))
  assert excess[node] > 0 and node > 0
  corrupted = trees.replace(nodes=trees.nodes.replace(
      visits=_bump(trees.nodes.visits, (slice(t, None), 0, node), -1)))
  with pytest.raises(AssertionError):
    _check_trees(cfg, f, corrupted)


def _bump(array, index, amount):
  array = np.array(array)
  if np.isnan(amount):
    array[index] = np.nan
  else:
    array[index] += amount
  return array


def _kept_subtree(tree, b, child):
  """Old node and chance-record indices of ``child``'s subtree in row ``b``, in index order
  (found by walking the parent links: an oracle independent of ``reroot``'s binary lifting)."""
  nodes = []
  for node in range(int(tree.num_nodes[b])):
    walk = node
    while walk > child:
      walk = int(tree.nodes.parent[b, walk])
    if walk == child:
      nodes.append(node)
  chances = [c for c in range(int(tree.num_chance[b])) if int(tree.chance.node[b, c]) in nodes]
  return np.array(nodes, int), np.array(chances, int)


def _assert_rerooted(old, new, child):
  """``new`` holds exactly ``child``'s subtree of ``old``, every field moved with its node or
  chance record and every index re-mapped; the rest is cleared."""
  fresh = jax.tree.map(np.asarray, js.tree.empty_like(old, batch_size=1))
  index_fields = {"nodes.parent", "nodes.depth", "slots.chance", "chance.node", "chance.child"}
  for b in range(old.nodes.visits.shape[0]):
    nodes, chances = _kept_subtree(old, b, int(child[b]))
    assert new.num_nodes[b] == len(nodes) and new.num_chance[b] == len(chances)
    node_map = np.full(old.nodes.visits.shape[1] + 1, -1)
    node_map[nodes] = np.arange(len(nodes))
    chance_map = np.full(old.chance.prob.shape[1] + 1, -1)
    chance_map[chances] = np.arange(len(chances))
    for part in js.tree.NODE_PARTS + ("chance",):
      kept = chances if part == "chance" else nodes
      for (path, leaf), old_leaf, fresh_leaf in zip(
          jax.tree_util.tree_leaves_with_path(getattr(new, part)),
          jax.tree.leaves(getattr(old, part)), jax.tree.leaves(getattr(fresh, part)),
          strict=True):
        name = part + jax.tree_util.keystr(path)
        if name in index_fields:
          continue
        np.testing.assert_array_equal(leaf[b, :len(kept)], old_leaf[b, kept], name)
        np.testing.assert_array_equal(leaf[b, len(kept):],
                                      np.broadcast_to(fresh_leaf[0, len(kept):],
                                                      leaf[b, len(kept):].shape), name)
    k = len(nodes)
    np.testing.assert_array_equal(new.nodes.parent[b, :k],
                                  np.r_[-1, node_map[old.nodes.parent[b, nodes[1:]]]])
    np.testing.assert_array_equal(new.nodes.depth[b, :k],
                                  old.nodes.depth[b, nodes] - old.nodes.depth[b, child[b]])
    np.testing.assert_array_equal(new.slots.chance[b, :k], chance_map[old.slots.chance[b, nodes]])
    np.testing.assert_array_equal(new.chance.node[b, :len(chances)],
                                  node_map[old.chance.node[b, chances]])
    np.testing.assert_array_equal(new.chance.child[b, :len(chances)],
                                  node_map[old.chance.child[b, chances]])
    assert np.all(new.nodes.parent[b, k:] == -1) and np.all(new.slots.chance[b, k:] == -1)


@pytest.mark.parametrize("name", [DEFAULT[0]])
def test_reroot_of_avts_trees_keeps_every_invariant(name):
  """Subtree reuse on AVTS trees (O = 2, the gap rule and a top-3 cut, trees that fill up):
  rerooting into the most visited root action's outcome 1 keeps exactly that subtree — its
  bounds, debias statistics, cut bounds, active-slot counts and chance records, re-indexed —
  and every invariant of this module holds on the rerooted trees and after continuing the
  search from them (visits, probabilities, bounds monotone and bracketing V*, widening)."""
  cfg = CONFIGS[name]
  assert cfg.backup == "bellman" and cfg.outcomes == 2
  f, run = _runner(name)
  roots = garnet.State(state=jnp.asarray([0, 1, 2, 3][:cfg.batch], jnp.int32),
                       time=jnp.zeros((cfg.batch,), jnp.int32),
                       mdp=jnp.arange(cfg.batch, dtype=jnp.int32) + 5)
  params = (jnp.float32(0.4), jnp.float32(0.3))
  trees = _np(run(params, jax.random.PRNGKey(3), roots))
  _check_trees(cfg, f, trees)
  last = jax.tree.map(lambda x: x[-1], trees)
  # The most visited root slot is expanded (Bellman: all its outcomes have their node).
  slot = last.slots.visits[:, 0].argmax(-1)
  rows = np.arange(cfg.batch)
  action = last.slots.actions()[rows, 0, slot]
  chance = last.slots.chance[rows, 0, slot]
  assert np.all(chance >= 0)
  outcome = np.ones(cfg.batch, np.int32)
  child = last.chance.child[rows, chance, outcome]
  assert np.all(child > 0)
  new = _np(jax.jit(js.reroot)(jax.device_get(last), jnp.asarray(action), jnp.asarray(outcome)))
  _assert_rerooted(last, new, child)
  # The statistics the reroot must carry are there to carry.
  assert new.debias.count.sum() > 0 and np.any(new.nodes.num_active[:, 0] > 1)
  assert np.any(new.bounds.cut_upper[new.bounds.cut_upper > -1e30]) or cfg.slots is None
  next_roots = jax.vmap(f.game.step)(roots, jnp.asarray(action), jnp.asarray(outcome)).state
  for field in ("state", "time", "mdp"):
    np.testing.assert_array_equal(getattr(new.nodes.state, field)[:, 0],
                                  np.asarray(getattr(next_roots, field)))
  # The search goes on from the rerooted trees: one program with the fresh-tree run.
  more = _np(run(params, jax.random.PRNGKey(4), next_roots, jax.device_put(new)))
  jax.tree.map(np.testing.assert_array_equal, jax.tree.map(lambda x: x[0], more), new)
  _check_trees(cfg, f, more, filled=last.num_nodes + cfg.outcomes > last.nodes.visits.shape[1])
  assert np.all(more.num_nodes[-1] >= new.num_nodes)


def test_avts_rows_do_not_depend_on_the_batch():
  """Thompson-AVTS with the proof's outcome rule and cut (the default configuration above) on
  B = 4 roots and on B = 16 roots whose first four are the same: after every simulation,
  those four trees are bit-identical (per-root keys are ``fold_in(key, index)``; no
  statistic mixes rows). Same program as the property cases, traced at B = 16 once more."""
  name = DEFAULT[0]
  cfg = CONFIGS[name]
  assert cfg.batch == 4 and cfg.rule == "thompson"
  f, run = _runner(name)
  b16 = np.arange(16)
  roots = garnet.State(state=jnp.asarray((3 * b16) % cfg.states, jnp.int32),
                       time=jnp.asarray(b16 % 2, jnp.int32),
                       mdp=jnp.asarray((7 * b16) % MEMBERS, jnp.int32))
  params = (jnp.float32(0.5), jnp.float32(0.4))
  wide = _np(run(params, jax.random.PRNGKey(9), roots))
  narrow = _np(run(params, jax.random.PRNGKey(9), jax.tree.map(lambda x: x[:4], roots)))
  _check_trees(cfg, f, narrow)
  for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(narrow), jax.tree.leaves(wide),
                          strict=True):
    np.testing.assert_array_equal(x, y[:, :4], err_msg=jax.tree_util.keystr(path))
  # Not vacuous: Thompson draws and debias statistics were used, and the rows differ.
  assert narrow.debias.count[-1].sum() > 0 and np.all(narrow.num_nodes[-1] > 5)
  assert not np.array_equal(narrow.nodes.visits[-1, 0], narrow.nodes.visits[-1, 1])
