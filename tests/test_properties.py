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

The default suite runs 8 cases of two configurations; ``pytest -m slow`` runs 1,200
cases over all of them.
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
from games import garnet
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
DEFAULT = ("bellman-thompson-widening", "mean-puct-sampled")


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
  """``(family, jitted run)``: ``run(params, key, roots) -> trees [T + 1, B, ...]`` (before
  the first and after every simulation)."""
  cfg = CONFIGS[name]
  f = _family(cfg.states, cfg.actions, cfg.outcomes, cfg.horizon)
  per_simulation = cfg.outcomes if cfg.backup == "bellman" else 1
  nodes = cfg.nodes or cfg.simulations * per_simulation + 1
  search = js.policies.custom(
      f.game, _estimator(f), selection=_rule(cfg.rule, f.game), num_simulations=1,
      max_nodes=nodes, backup=cfg.backup, widening=cfg.widening, debias=cfg.debias,
      num_slots=cfg.slots, outcome_rule=cfg.outcome_rule, num_buckets=4)

  def run(params, key, roots):
    init_key, loop_key = jax.random.split(key)
    tree = search.init_tree(params, init_key, roots)

    def body(tree, sim_key):
      tree = search(params, sim_key, roots, tree).tree
      return tree, tree

    _, trees = jax.lax.scan(body, tree, jax.random.split(loop_key, cfg.simulations))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), tree, trees)

  return f, jax.jit(run)


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


def _check_trees(cfg, f, trees):
  bellman = cfg.backup == "bellman"
  steps, batch, capacity = trees.node_visits.shape
  num_slots = trees.slot_visits.shape[-1]
  rows = np.arange(batch)[:, None]
  st_ = trees.node_state
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
    terminal = tree.node_terminal
    live = alloc & ~terminal
    np.testing.assert_array_equal(terminal[alloc], (st_.time[t] >= horizon)[alloc], where)
    slot_visits = tree.slot_visits
    assert not np.any(slot_visits[~alloc]) and not np.any(tree.node_visits[~alloc]), where
    assert not np.any(slot_visits * ~tree.slot_legal), where
    # Visits: creation + one per simulation through a slot (+ stops at the node).
    child_sum = slot_visits.sum(-1)
    assert np.all(tree.node_visits[alloc] >= 1 + child_sum[alloc]), where
    never_full = (trees.num_nodes[t] + (cfg.outcomes if bellman else 1) <= capacity)
    exact = live & never_full[:, None] & ~tree.node_solved
    np.testing.assert_array_equal(tree.node_visits[exact], 1 + child_sum[exact], where)
    np.testing.assert_array_equal(tree.node_visits[:, 0], 1 + t, where)
    # Chance records: probabilities of the game, summing to 1; visit counts.
    chance = tree.slot_chance
    expanded = alloc[..., None] & (chance >= 0)
    safe = np.maximum(chance, 0)
    probs = tree.chance_prob[rows[..., None], safe]  # [B, N, K, O]
    created = np.arange(capacity)[None] < tree.num_chance[:, None]
    np.testing.assert_allclose(tree.chance_prob[created].sum(-1), 1.0, atol=1e-5, err_msg=where)
    assert np.all(tree.chance_prob >= 0), where
    game_probs = np.asarray(f.probs)[st_.mdp[t][..., None], st_.state[t][..., None],
                                     tree.slot_action]
    np.testing.assert_allclose(probs[expanded], game_probs[expanded], atol=1e-6, err_msg=where)
    chance_total = tree.chance_visits[rows[..., None], safe].sum(-1)
    np.testing.assert_array_equal(chance_total[expanded],
                                  slot_visits[expanded] - (1 if bellman else 0), where)
    kids = tree.chance_child[rows[..., None], safe]  # [B, N, K, O]
    has_kid = expanded[..., None] & (kids >= 0)
    kid_visits = tree.node_visits[rows[..., None, None], np.maximum(kids, 0)]
    outcome_visits = tree.chance_visits[rows[..., None], safe]
    np.testing.assert_array_equal(kid_visits[has_kid],
                                  outcome_visits[has_kid] + (1 if bellman else 0), where)
    if bellman:  # every possible outcome of an expanded slot has its node
      np.testing.assert_array_equal(has_kid[expanded], (probs > 0)[expanded], where)
    # Values inside the value range, per node [0, moves left].
    left = moves_left[t]
    inside = lambda x, hi: np.all((x >= -EPS) & (x <= hi + EPS))
    assert inside(tree.node_raw_value[alloc], left[alloc]), where
    legal = tree.slot_legal & alloc[..., None]
    assert inside(tree.slot_action_value[legal], np.broadcast_to(left[..., None], legal.shape)[legal]), where
    rewards = tree.chance_reward[created]
    assert np.all((rewards >= -EPS) & (rewards <= 1 + EPS)), where
    lo, hi = f.game.value_range
    assert lo <= 0.0 and hi >= horizon - EPS
    if not (bellman and cfg.debias):
      assert inside(tree.node_value[alloc], left[alloc]), where
      assert inside(tree.slot_value[legal],
                    np.broadcast_to(left[..., None], legal.shape)[legal]), where
    # Achievable bound: from the pessimistic value up, never above V*; monotone.
    bound = tree.node_bound
    assert np.all(bound[alloc] <= v_star[t][alloc] + EPS), where
    assert np.all(bound[alloc] >= v_pess[t][alloc] - EPS), where
    if bellman:
      upper = tree.node_upper
      assert np.all(upper[alloc] >= v_star[t][alloc] - EPS), where
      if cfg.slots is None:  # full width: a solved node's value is exact
        solved = alloc & tree.node_solved
        np.testing.assert_allclose(tree.node_value[solved], v_star[t][solved], atol=EPS,
                                   err_msg=where)
    if previous is not None:
      was = np.arange(capacity)[None] < previous.num_nodes[:, None]
      assert np.all(bound[was] >= previous.node_bound[was]), where
      if bellman:
        assert np.all(tree.node_upper[was] <= previous.node_upper[was]), where
      assert np.all(num_nodes >= previous.num_nodes), where
    # Progressive widening.
    if cfg.widening:
      num_active = tree.node_num_active
      slot_ids = np.arange(num_slots)
      active = slot_ids < num_active[..., None]
      candidates = tree.slot_legal.sum(-1)
      assert np.all((num_active[live] >= 1) & (num_active[live] <= candidates[live])), where
      inactive = live[..., None] & ~active
      assert not np.any(slot_visits[inactive]) and np.all(chance[inactive] < 0), where
      unvisited = live[..., None] & active & (slot_visits == 0)
      newest = slot_ids == (num_active[..., None] - 1)
      assert not np.any(unvisited & ~newest), where
      growing = live & (num_active < candidates)
      np.testing.assert_array_equal(unvisited.sum(-1)[growing], 1, where)
      if previous is not None:
        grew = (num_active - previous.node_num_active)[was & live]
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


def test_the_invariant_checks_can_fail():
  """A corrupted tree (one extra visit, a probability off, a NaN) fails the checks."""
  name = DEFAULT[0]
  cfg = CONFIGS[name]
  f, run = _runner(name)
  roots = garnet.State(state=jnp.zeros((cfg.batch,), jnp.int32),
                       time=jnp.zeros((cfg.batch,), jnp.int32),
                       mdp=jnp.arange(cfg.batch, dtype=jnp.int32))
  trees = _np(run((jnp.float32(0.3), jnp.float32(0.3)), jax.random.PRNGKey(0), roots))
  _check_trees(cfg, f, trees)
  corruptions = [
      lambda t: t.replace(slot_visits=_bump(t.slot_visits, (-1, 0, 0, 0), 1)),
      lambda t: t.replace(chance_prob=_bump(t.chance_prob, (-1, 0, 0, 0), 0.01)),
      lambda t: t.replace(node_value=_bump(t.node_value, (-1, 0, 1), np.nan)),
      lambda t: t.replace(node_bound=_bump(t.node_bound, (-1, 0, 0), 5.0)),
      lambda t: t.replace(node_num_active=_bump(t.node_num_active, (-1, 0, 0), 1)),
  ]
  for corrupt in corruptions:
    with pytest.raises(AssertionError):
      _check_trees(cfg, f, corrupt(trees))


def _bump(array, index, amount):
  array = np.array(array)
  if np.isnan(amount):
    array[index] = np.nan
  else:
    array[index] += amount
  return array
