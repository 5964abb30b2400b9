"""The generic search loop: select -> expand -> evaluate -> backup, in one jitted function.

The simulations are a ``lax.fori_loop`` over the whole batch, so the loop never selects
between whole trees. Within a simulation:

* **select** (:func:`_select`) descends every tree; the selection rule is a pure function of
  one node, vmapped, while the descent loop is batched by hand (a vmapped ``while_loop``
  re-selects its carry every level). It records what it reads on the way down.
* **expand + evaluate**: one batched ``Model.step`` (game step and one estimator call).
* **backup**: :func:`_expand_one` writes the new edge and node, :func:`_returns` computes the
  returns along the paths, :func:`_backup_one` updates the running means — per tree, vmapped.

Loops carry only the ``O(D)`` path, never the tree, and no tree array is read after the descent
before it is written: either would make XLA copy whole tree arrays every simulation
(DESIGN.md, performance rules; measured, see the notes in :class:`Path`).

The engine knows nothing of selection rules, games or networks: it receives a
:class:`~jaxsearch.model.Model` and a :class:`SearchConfig`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import tree as tree_lib
from jaxsearch.game import per_item_keys
from jaxsearch.model import Expansion, Model
from jaxsearch.selection.base import NodeView, SelectionRule, masked_argmax, masked_softmax
from jaxsearch.tree import UNEXPANDED, Tree

OUTCOME_RULES = ("balanced", "sample")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Static settings of one search.

  Attributes:
    num_simulations: ``S``.
    max_nodes: ``N``; at least ``S + 1`` (a fresh root plus one node per simulation).
    max_depth: ``D``, the longest path in edges from the root.
    selection: the rule picking a slot at each decision node.
    outcome_rule: at a chance record, ``"balanced"`` picks ``argmax p(o) / (n(o) + 1)`` (no
      randomness) and ``"sample"`` draws ``o ~ p``.
    dirichlet_fraction, dirichlet_alpha: root noise ``(1 - ε) p + ε η``, ``η ~ Dir(α)`` over
      the legal actions; ``ε = 0`` turns it off.
  """

  num_simulations: int
  max_nodes: int
  max_depth: int
  selection: SelectionRule
  outcome_rule: str = "balanced"
  dirichlet_fraction: float = 0.0
  dirichlet_alpha: float = 0.3

  def __post_init__(self):
    for name in ("num_simulations", "max_nodes", "max_depth"):
      value = getattr(self, name)
      if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if self.max_nodes < self.num_simulations + 1:
      raise ValueError(
          f"max_nodes={self.max_nodes} is smaller than num_simulations + 1 = "
          f"{self.num_simulations + 1}, the nodes one search from a fresh root needs")
    if self.outcome_rule not in OUTCOME_RULES:
      raise ValueError(f"outcome_rule must be one of {OUTCOME_RULES}, got {self.outcome_rule!r}")
    if not 0.0 <= self.dirichlet_fraction <= 1.0:
      raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
    if self.dirichlet_alpha <= 0.0:
      raise ValueError(f"dirichlet_alpha must be > 0, got {self.dirichlet_alpha}")


@struct.dataclass
class Path:
  """One simulation's descent through one tree (``D`` = max depth; batched as ``[B, ...]``).

  The descent records the statistics it read on the way down, so that the backup never reads
  these tree arrays again before writing them: a read of the pre-descent arrays after the
  descent makes XLA copy whole tree arrays every simulation (measured; DESIGN.md rules).

  Attributes:
    nodes: ``i32[D + 1]`` decision nodes from the root; ``-1`` past the end and where the leaf
      still has to be created.
    slots, outcomes: ``i32[D]`` the edge taken below each node.
    chances: ``i32[D]`` the chance record of each edge (``-1``: not created yet).
    node_visits, node_values: ``[D]`` visits and value of ``nodes[d]`` before this simulation.
    slot_visits, slot_values: ``[D]`` the same for the slot taken at ``nodes[d]``.
    length: ``i32[]`` number of edges ``L``.
    expand: ``bool[]`` the last edge leads to a node that must be created.
    new_chance: ``bool[]`` ... and its slot has no chance record yet.
    leaf_visits, leaf_value, leaf_terminal: the existing node a simulation ends on when it
      does not expand (a terminal node, the depth limit, or a full tree).
  """

  nodes: jax.Array
  slots: jax.Array
  outcomes: jax.Array
  chances: jax.Array
  node_visits: jax.Array
  node_values: jax.Array
  slot_visits: jax.Array
  slot_values: jax.Array
  length: jax.Array
  expand: jax.Array
  new_chance: jax.Array
  leaf_visits: jax.Array
  leaf_value: jax.Array
  leaf_terminal: jax.Array


# ---- sanitising estimator output ---------------------------------------------------------

def _sanitise(expansion: Expansion, num_actions: int):
  """Replaces non-finite estimates, returning ``(value, logits, action_values, bad)``.

  NaN/inf values and action values become 0; a row of prior logits holding NaN or ``+inf``
  becomes uniform (``-inf`` is a legitimate zero prior). ``bad`` (``bool[B]``) flags rows that
  needed it, so the tree can count them.
  """
  estimate = expansion.estimate
  batch_size = expansion.legal.shape[0]
  value = jnp.asarray(estimate.value, jnp.float32)
  bad = ~jnp.isfinite(value)
  value = jnp.where(bad, 0.0, value)
  if estimate.prior_logits is None:
    logits = jnp.zeros((batch_size, num_actions), jnp.float32)
  else:
    logits = jnp.asarray(estimate.prior_logits, jnp.float32)
    bad_logits = jnp.any(jnp.isnan(logits) | (logits == jnp.inf), axis=-1)
    bad = bad | bad_logits
    logits = jnp.where(bad_logits[:, None], 0.0, logits)
  if estimate.action_values is None:
    action_values = jnp.zeros((batch_size, num_actions), jnp.float32)
  else:
    action_values = jnp.asarray(estimate.action_values, jnp.float32)
    bad_q = ~jnp.isfinite(action_values)
    bad = bad | jnp.any(bad_q & expansion.legal, axis=-1)
    action_values = jnp.where(bad_q, 0.0, action_values)
  value = jnp.where(expansion.terminal, 0.0, value)
  return value, logits, action_values, bad


# ---- root --------------------------------------------------------------------------------

def _write_root(tree: Tree, expansion: Expansion, value, logits, action_values, bad) -> Tree:
  """Writes node 0 of one empty tree (unbatched)."""
  return tree.replace(
      node_visits=tree.node_visits.at[0].set(1),
      node_value=tree.node_value.at[0].set(value),
      node_raw_value=tree.node_raw_value.at[0].set(value),
      node_terminal=tree.node_terminal.at[0].set(expansion.terminal),
      node_state=jax.tree.map(lambda field, x: field.at[0].set(x), tree.node_state,
                              expansion.state),
      slot_legal=tree.slot_legal.at[0].set(expansion.legal),
      slot_prior_logits=tree.slot_prior_logits.at[0].set(logits),
      slot_action_value=tree.slot_action_value.at[0].set(action_values),
      num_nodes=jnp.int32(1),
      nonfinite_estimates=tree.nonfinite_estimates + bad.astype(jnp.int32),
  )


def _root_noise_logits(key, logits, legal, fraction, alpha):
  """Dirichlet noise over the legal actions of one root, as logits (``-inf`` = illegal)."""
  gammas = jax.random.gamma(key, alpha, logits.shape)
  gammas = jnp.where(legal, gammas, 0.0)
  noise = gammas / jnp.maximum(jnp.sum(gammas), jnp.finfo(jnp.float32).tiny)
  mixed = (1.0 - fraction) * masked_softmax(logits, legal) + fraction * noise
  return jnp.where(legal & (mixed > 0), jnp.log(jnp.maximum(mixed, 1e-30)), -jnp.inf)


# ---- select ------------------------------------------------------------------------------

def _choose_outcome(probs, visits, key, rule):
  """Outcome at a chance record (``probs``/``visits`` ``[O]``); zero-probability outcomes are
  never chosen."""
  possible = probs > 0
  if rule == "sample":
    return jax.random.categorical(key, jnp.where(possible, jnp.log(probs), -jnp.inf)
                                  ).astype(jnp.int32)
  return masked_argmax(probs / (visits + 1.0), possible)


def _select(tree: Tree, root_logits, keys, *, config: SearchConfig) -> tuple[Path, Tree]:
  """Descends every tree of the batch from its root to the edge its simulation will expand.

  The descent is batched by hand rather than vmapped: under ``vmap`` a ``while_loop`` with a
  per-tree predicate re-selects its whole carry (the path) every level, which measured as a
  third of the descent's kernels. Here finished trees simply stop writing (their path writes
  go out of range and are dropped). The selection *rule* is still a pure per-node function,
  vmapped over the batch.

  The tree rides through the loop unchanged and is returned, so that later reads and the
  backup's in-place writes are ordered after the descent.

  Args:
    tree: ``[B, ...]`` trees.
    root_logits: ``f32[B, K]`` root prior logits (Dirichlet noise mixed in).
    keys: ``[B]`` keys for rules or outcome rules that draw, else ``None``.
  Returns:
    ``(path, tree)`` with a batched :class:`Path` (``[B, ...]``).
  """
  depth_limit = config.max_depth
  num_outcomes = tree.num_outcomes
  batch_ids = jnp.arange(tree.batch_size)
  score = jax.vmap(config.selection.score, in_axes=(0, 0 if keys is not None else None))
  noisy_root = config.dirichlet_fraction > 0.0

  def body(carry):
    (node, visits, value, at_terminal, depth, steps, values, go), tree = carry
    logits = tree.slot_prior_logits[batch_ids, node]
    if noisy_root:
      logits = jnp.where((node == 0)[:, None], root_logits, logits)
    child_visits = tree.slot_visits[batch_ids, node]
    child_values = tree.slot_value[batch_ids, node]
    view = NodeView(
        visits=visits, value=value, child_visits=child_visits, child_values=child_values,
        prior_logits=logits, action_values=tree.slot_action_value[batch_ids, node],
        legal=tree.slot_legal[batch_ids, node], depth=depth)
    if keys is not None:
      step_keys = jax.vmap(jax.random.fold_in)(keys, depth)
      rule_keys, outcome_keys = jnp.moveaxis(jax.vmap(jax.random.split)(step_keys), 1, 0)
    else:
      rule_keys = outcome_keys = None
    slot = jax.vmap(masked_argmax)(score(view, rule_keys), view.legal)
    chance = tree.slot_chance[batch_ids, node, slot]
    safe_chance = jnp.maximum(chance, 0)
    if num_outcomes == 1:
      outcome = jnp.zeros_like(slot)
    else:
      outcome = jax.vmap(_choose_outcome, in_axes=(0, 0, 0 if keys is not None else None,
                                                   None))(
          tree.chance_prob[batch_ids, safe_chance], tree.chance_visits[batch_ids, safe_chance],
          outcome_keys, config.outcome_rule)
    child = jnp.where(chance >= 0, tree.chance_child[batch_ids, safe_chance, outcome],
                      UNEXPANDED)
    # One packed int row and one float row per edge; finished trees write out of range.
    row = jnp.where(go, depth, depth_limit)
    slot_visits = jnp.take_along_axis(child_visits, slot[:, None], axis=1)[:, 0]
    slot_value = jnp.take_along_axis(child_values, slot[:, None], axis=1)[:, 0]
    steps = steps.at[batch_ids, row].set(
        jnp.stack([slot, outcome, child, chance, visits, slot_visits], axis=-1), mode="drop")
    values = values.at[batch_ids, row].set(jnp.stack([value, slot_value], axis=-1),
                                           mode="drop")
    depth = depth + go.astype(jnp.int32)
    safe_child = jnp.maximum(child, 0)
    moving = go & (child >= 0)
    # Read the next node's statistics now, so the leaf's are in hand when the loop stops.
    node = jnp.where(moving, child, node)
    visits = jnp.where(moving, tree.node_visits[batch_ids, safe_child], visits)
    value = jnp.where(moving, tree.node_value[batch_ids, safe_child], value)
    at_terminal = jnp.where(moving, tree.node_terminal[batch_ids, safe_child], at_terminal)
    go = moving & ~at_terminal & (depth < depth_limit)
    return (node, visits, value, at_terminal, depth, steps, values, go), tree

  batch_size = tree.batch_size
  root_open = (tree.num_nodes > 0) & ~tree.node_terminal[:, 0]
  init = (jnp.zeros((batch_size,), jnp.int32), tree.node_visits[:, 0], tree.node_value[:, 0],
          ~root_open, jnp.zeros((batch_size,), jnp.int32),
          jnp.full((batch_size, depth_limit, 6), UNEXPANDED, jnp.int32),
          jnp.zeros((batch_size, depth_limit, 2), jnp.float32), root_open)
  (_, leaf_visits, leaf_value, leaf_terminal, length, steps, values, _), tree = jax.lax.while_loop(
      lambda carry: jnp.any(carry[0][-1]), body, (init, tree))
  nodes = jnp.concatenate([jnp.zeros((batch_size, 1), jnp.int32), steps[:, :, 2]], axis=1)
  slots = jnp.maximum(steps[:, :, 0], 0)
  outcomes = jnp.maximum(steps[:, :, 1], 0)
  chances = steps[:, :, 3]

  last = jnp.maximum(length - 1, 0)
  expand = (length > 0) & (nodes[batch_ids, length] < 0)
  # A full tree stops growing: the simulation ends at the parent and re-backs its value.
  full = expand & (tree.num_nodes >= tree.max_nodes)
  length = jnp.where(full, last, length)
  expand = expand & ~full
  # Where the loop did not move onto an existing leaf (expand, full tree) the carried
  # statistics are the last decision node's: the leaf's in the full-tree case.
  leaf_terminal = leaf_terminal & ~expand
  new_chance = expand & (chances[batch_ids, last] < 0)
  return Path(nodes=nodes, slots=slots, outcomes=outcomes, chances=chances,
              node_visits=steps[:, :, 4], node_values=values[:, :, 0],
              slot_visits=steps[:, :, 5], slot_values=values[:, :, 1], length=length,
              expand=expand, new_chance=new_chance, leaf_visits=leaf_visits,
              leaf_value=leaf_value, leaf_terminal=leaf_terminal), tree


# ---- backup ------------------------------------------------------------------------------

def _leaf_value(path: Path, value):
  """``f32[B]`` value of where each simulation ended: the new node's estimate, 0 at a
  terminal node, else the existing leaf's value."""
  return jnp.where(path.expand, value, jnp.where(path.leaf_terminal, 0.0, path.leaf_value))


def _expand_one(tree: Tree, path: Path, expansion: Expansion, value, logits, action_values,
                bad, probs) -> tuple[Tree, jax.Array]:
  """Writes the expanded edge (chance record, reward, discount, child) and the new node of one
  tree; returns it with ``i32[D]``, each path edge's chance record."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  length, expand, new_chance = path.length, path.expand, path.new_chance
  last = jnp.maximum(length - 1, 0)
  parent, slot, outcome = path.nodes[last], path.slots[last], path.outcomes[last]

  # The chance record of the expanded slot (created if new); out-of-range writes are dropped.
  chance_index = jnp.where(new_chance, tree.num_chance, path.chances[last])
  drop_chance = jnp.where(new_chance, tree.num_chance, capacity)
  new_node = tree.num_nodes
  write_node = jnp.where(expand, new_node, capacity)
  write_edge = jnp.where(expand, chance_index, capacity)

  def set_node(field, x):
    return field.at[write_node].set(x, mode="drop")

  edge_chances = jnp.maximum(jnp.where(
      (jnp.arange(depth_limit) == last) & new_chance, tree.num_chance, path.chances), 0)
  return tree.replace(
      node_visits=set_node(tree.node_visits, 1),
      node_value=set_node(tree.node_value, value),
      node_raw_value=set_node(tree.node_raw_value, value),
      node_parent=set_node(tree.node_parent, parent),
      node_depth=set_node(tree.node_depth, length),
      node_terminal=set_node(tree.node_terminal, expansion.terminal),
      node_state=jax.tree.map(set_node, tree.node_state, expansion.state),
      slot_legal=set_node(tree.slot_legal, expansion.legal),
      slot_prior_logits=set_node(tree.slot_prior_logits, logits),
      slot_action_value=set_node(tree.slot_action_value, action_values),
      slot_chance=tree.slot_chance.at[jnp.where(new_chance, parent, capacity), slot].set(
          tree.num_chance, mode="drop"),
      chance_node=tree.chance_node.at[drop_chance].set(parent, mode="drop"),
      chance_prob=tree.chance_prob.at[drop_chance].set(probs, mode="drop"),
      chance_child=tree.chance_child.at[write_edge, outcome].set(new_node, mode="drop"),
      chance_reward=tree.chance_reward.at[write_edge, outcome].set(expansion.reward,
                                                                   mode="drop"),
      chance_discount=tree.chance_discount.at[write_edge, outcome].set(expansion.discount,
                                                                       mode="drop"),
      num_nodes=tree.num_nodes + expand.astype(jnp.int32),
      num_chance=tree.num_chance + new_chance.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + (bad & expand).astype(jnp.int32),
  ), edge_chances


def _returns(tree: Tree, path: Path, edge_chances, leaf_value) -> jax.Array:
  """``f32[B, D]`` returns ``G_d = r_d + γ_d G_{d+1}`` along every path, ``G_L`` = leaf value.

  Batched by hand for the same reason as :func:`_select` (a vmapped loop re-selects its carry
  each step). Reads the chance records after :func:`_expand_one` wrote the new edge (reading
  them before the write would make XLA copy them). mctx's order of operations.
  """
  rows = jnp.arange(tree.batch_size)
  depth_limit = path.slots.shape[1]
  rewards = tree.chance_reward[rows[:, None], edge_chances, path.outcomes]
  discounts = tree.chance_discount[rows[:, None], edge_chances, path.outcomes]

  def recurse(carry):
    d, g, returns = carry
    active = d > 0
    d = jnp.where(active, d - 1, d)
    g = jnp.where(active, rewards[rows, d] + discounts[rows, d] * g, g)
    returns = returns.at[rows, jnp.where(active, d, depth_limit)].set(g, mode="drop")
    return d, g, returns

  _, _, returns = jax.lax.while_loop(
      lambda carry: jnp.any(carry[0] > 0), recurse,
      (path.length, leaf_value, jnp.zeros((tree.batch_size, depth_limit), jnp.float32)))
  return returns


def _backup_one(tree: Tree, path: Path, edge_chances, leaf_value, returns) -> Tree:
  """Running means of the returns for the nodes, slots and outcomes on one tree's path (the
  new node was written whole by :func:`_expand_one`)."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  on_path = jnp.arange(depth_limit) < path.length
  edge_nodes = jnp.maximum(path.nodes[:-1], 0)
  existing_leaf = jnp.where(path.expand, capacity, path.nodes[path.length])
  node_ids = jnp.concatenate([jnp.where(on_path, edge_nodes, capacity), existing_leaf[None]])
  node_returns = jnp.concatenate([returns, leaf_value[None]])
  counts = jnp.concatenate([path.node_visits, path.leaf_visits[None]]).astype(jnp.float32)
  old_values = jnp.concatenate([path.node_values, path.leaf_value[None]])
  means = (old_values * counts + node_returns) / (counts + 1.0)
  slot_rows = jnp.where(on_path, edge_nodes, capacity)
  slot_counts = path.slot_visits.astype(jnp.float32)
  slot_means = (path.slot_values * slot_counts + returns) / (slot_counts + 1.0)
  return tree.replace(
      node_visits=tree.node_visits.at[node_ids].add(1, mode="drop"),
      node_value=tree.node_value.at[node_ids].set(means, mode="drop"),
      slot_visits=tree.slot_visits.at[slot_rows, path.slots].add(1, mode="drop"),
      slot_value=tree.slot_value.at[slot_rows, path.slots].set(slot_means, mode="drop"),
      chance_visits=tree.chance_visits.at[jnp.where(on_path, edge_chances, capacity),
                                          path.outcomes].add(1, mode="drop"),
  )


# ---- the search --------------------------------------------------------------------------

def init_tree(model: Model, config: SearchConfig, params, key, root_input,
              tree: Optional[Tree] = None) -> Tree:
  """A batch of trees whose roots are ``root_input`` (evaluated once).

  Where ``tree`` is given, its non-empty rows are kept (subtree reuse) and only its empty rows
  (``num_nodes == 0``, e.g. after :func:`jaxsearch.tree.reroot` into an unexpanded child) start
  from ``root_input``.
  """
  expansion = model.root(params, key, root_input)
  batch_size, num_actions = expansion.legal.shape
  if num_actions != model.num_actions:
    raise ValueError(f"root legal mask has {num_actions} actions, the model {model.num_actions}")
  state_example = jax.tree.map(lambda x: x[0], expansion.state)
  fresh = tree_lib.allocate(batch_size, config.max_nodes, num_actions, model.num_outcomes,
                            state_example)
  fresh = jax.vmap(_write_root)(fresh, expansion, *_sanitise(expansion, num_actions))
  if tree is None:
    return fresh
  expected = (batch_size, config.max_nodes, num_actions, model.num_outcomes)
  got = (tree.batch_size, tree.max_nodes, tree.num_slots, tree.num_outcomes)
  if got != expected:
    raise ValueError(f"tree has (B, N, K, O) = {got}, this search needs {expected}")
  if jax.tree.structure(tree.node_state) != jax.tree.structure(fresh.node_state):
    raise ValueError("tree.node_state does not match the structure of the root states")
  keep = tree.num_nodes > 0
  return jax.tree.map(
      lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), old, new),
      tree, fresh)


def run(model: Model, config: SearchConfig, params, key, root_input,
        tree: Optional[Tree] = None) -> Tree:
  """Runs ``config.num_simulations`` simulations on a batch of trees and returns them.

  Args:
    model: the batched world (see :mod:`jaxsearch.model`).
    config: static settings.
    params: estimator parameters (any pytree, passed through).
    key: a PRNG key.
    root_input: the root states ``[B, ...]`` (for :func:`jaxsearch.model.from_game`).
    tree: optional trees to continue (subtree reuse).
  Returns:
    The trees, ``[B, N, ...]``.
  """
  root_key, noise_key, loop_key = jax.random.split(key, 3)
  tree = init_tree(model, config, params, root_key, root_input, tree)
  batch_size = tree.batch_size
  batch_ids = jnp.arange(batch_size)
  root_logits = tree.slot_prior_logits[:, 0]
  if config.dirichlet_fraction > 0.0:
    root_logits = jax.vmap(_root_noise_logits, in_axes=(0, 0, 0, None, None))(
        per_item_keys(noise_key, batch_size), root_logits, tree.slot_legal[:, 0],
        config.dirichlet_fraction, config.dirichlet_alpha)
  needs_key = config.selection.needs_key or (
      model.num_outcomes > 1 and config.outcome_rule == "sample")

  def simulate(sim, tree):
    sim_key = jax.random.fold_in(loop_key, sim)
    select_key, outcome_key, estimator_key = jax.random.split(sim_key, 3)
    tree_keys = per_item_keys(select_key, batch_size) if needs_key else None
    path, tree = _select(tree, root_logits, tree_keys, config=config)
    # Ties the tree's later reads and in-place writes to after the descent, so that XLA
    # updates the buffers the descent read instead of copying them (see _select).
    path, tree = jax.lax.optimization_barrier((path, tree))
    last = jnp.maximum(path.length - 1, 0)
    parents = path.nodes[batch_ids, last]
    slots = path.slots[batch_ids, last]
    parent_states = jax.tree.map(lambda x: x[batch_ids, parents], tree.node_state)
    actions = tree.slot_action[batch_ids, parents, slots]
    if model.num_outcomes == 1:
      probs = jnp.ones((batch_size, 1), jnp.float32)
      outcomes = path.outcomes[batch_ids, last]
    else:
      probs = model.outcome_probs(params, parent_states, actions)
      if probs.shape != (batch_size, model.num_outcomes):
        raise ValueError(f"outcome_probs must return [B, O]=({batch_size}, "
                         f"{model.num_outcomes}), got {probs.shape}")
      fresh_outcomes = jax.vmap(_choose_outcome, in_axes=(0, None, 0, None))(
          probs, jnp.zeros((model.num_outcomes,)), per_item_keys(outcome_key, batch_size),
          config.outcome_rule)
      outcomes = jnp.where(path.new_chance, fresh_outcomes, path.outcomes[batch_ids, last])
      path = path.replace(outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
    expansion = model.step(params, estimator_key, parent_states, actions, outcomes)
    sanitised = _sanitise(expansion, model.num_actions)
    tree, edge_chances = jax.vmap(_expand_one)(tree, path, expansion, *sanitised, probs)
    leaf_value = _leaf_value(path, sanitised[0])
    returns = _returns(tree, path, edge_chances, leaf_value)
    return jax.vmap(_backup_one)(tree, path, edge_chances, leaf_value, returns)

  return jax.lax.fori_loop(0, config.num_simulations, simulate, tree)
