"""The running-mean backup of a batched stretch (:mod:`jaxsearch.search.phases`): ``W`` walks
per tree evaluated at once, their returns handed to the root rule's replay, and the picked
ones written as the loop's simulations would have written them, in pick order."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch.model import Model
from jaxsearch.search.backup_mean import _leaf_value, _running_mean
from jaxsearch.search.descent import Path, unpack_steps
from jaxsearch.search.nodes import _node_rows, _set_node
from jaxsearch.search.plan import SearchPlan
from jaxsearch.tree import ChanceRecords, Tree


def back_up_stretch(model: Model, plan: SearchPlan, params, estimator_keys, tree: Tree,
                    path: Path, owner: jax.Array, choose) -> Tree:
  """Evaluates the leaves of ``R = B·W`` walks (``path`` ``[R]``, walk ``i`` in tree
  ``owner[i] = i // W``), asks ``choose`` which of them the stretch picks and writes those.

  Args:
    estimator_keys: ``[W]`` one estimator key per candidate.
    tree: ``[B, ...]`` trees, one outcome per action, no subtree entropy, room for a node per
      walk.
    path: the walks' paths; each starts at its tree's root and takes its own root slot.
    choose: ``returns f32[B, W] -> rank i32[B, W]``: each walk's pick in the stretch (``-1``:
      none) given its return at the root (:func:`jaxsearch.search.phases._replay`).
  """
  batch_size, width = tree.batch_size, estimator_keys.shape[0]
  walk_ids = jnp.arange(owner.shape[0])
  last = jnp.maximum(path.length - 1, 0)
  parents, slots = path.node_at(last), path.slots[walk_ids, last]
  parent_states = jax.tree.map(lambda x: x[owner, parents], tree.nodes.state)
  actions = slots if plan.slots_are_actions else tree.slots.actions()[owner, parents, slots]
  by_tree = lambda x: x.reshape((batch_size, width) + x.shape[1:])  # noqa: E731
  outcomes = jnp.zeros((batch_size,), jnp.int32)
  with jax.named_scope("estimator"):
    # One call of B states per candidate, as the loop's simulations and the opening call it.
    expansion = jax.vmap(lambda key, states, action: model.step(params, key, states, action,
                                                                outcomes),
                         in_axes=(0, 1, 1), out_axes=1)(
        estimator_keys, jax.tree.map(by_tree, parent_states), by_tree(actions))
    expansion = jax.lax.optimization_barrier(expansion)  # see backup_mean._mean_simulation
  with jax.named_scope("expansion"):
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), expansion)
    node_rows = _node_rows(flat, plan)
  with jax.named_scope("backup"):
    leaf_value = _leaf_value(path, node_rows.nodes.value)
    returns = _returns(tree, path, owner, flat, leaf_value)
    rank = choose(returns[:, 0].reshape(batch_size, width))
    return jax.vmap(_write_picks)(tree, expansion, jax.tree.map(by_tree, node_rows),
                                  jax.tree.map(by_tree, path), by_tree(returns),
                                  by_tree(leaf_value), rank)


def _returns(tree: Tree, path: Path, owner, expansion, leaf_value) -> jax.Array:
  """``f32[R, D]`` each walk's return ``G_d = r_d + γ_d G_{d+1}`` below each node of its path
  (``G_L`` = ``leaf_value``; entries past the path repeat ``G_L``), in the loop's float
  operations. A new last edge's reward and discount are the expansion's."""
  steps = unpack_steps(path.steps)  # [R, D]
  max_depth = path.steps.shape[1]
  depths = jnp.arange(max_depth)[None, :]
  new_edge = (depths == (path.length - 1)[:, None]) & path.expand[:, None]
  record = jnp.maximum(steps.chance, 0)
  outcome = jnp.maximum(steps.outcome, 0)
  at = (owner[:, None], record, outcome)
  reward = jnp.where(new_edge, expansion.reward[:, None], tree.chance.reward[at])
  discount = jnp.where(new_edge, expansion.discount[:, None], tree.chance.discount[at])
  g, returns = leaf_value, [None] * max_depth
  for depth in reversed(range(max_depth)):
    g = jnp.where(depth < path.length, reward[:, depth] + discount[:, depth] * g, g)
    returns[depth] = g
  return jnp.stack(returns, axis=1)


def _write_picks(tree: Tree, expansion, node_rows, path: Path, returns, leaf_value,
                 rank) -> Tree:
  """One tree's part of :func:`back_up_stretch` (unbatched tree, ``[W]`` walks): the picked
  walks' new nodes and edges at the indices pick order gives them, their paths' running means
  below the root (each walk's own nodes and root slot), and the root's, pick after pick."""
  capacity, chance_capacity = tree.nodes.visits.shape[0], tree.chance.node.shape[0]
  width, max_depth = rank.shape[0], path.steps.shape[1]
  walk_ids = jnp.arange(width)
  picked = rank >= 0
  expand, new_chance = picked & path.expand, picked & path.new_chance
  earlier = picked[None, :] & (rank[None, :] < rank[:, None])  # [w, w']: w' picked before w
  new_node = tree.num_nodes + jnp.sum(earlier & expand[None, :], axis=1, dtype=jnp.int32)
  new_record = tree.num_chance + jnp.sum(earlier & new_chance[None, :], axis=1,
                                         dtype=jnp.int32)
  last = jnp.maximum(path.length - 1, 0)
  parent, slot = path.node_at(last), path.slots[walk_ids, last]
  chance_index = jnp.where(path.new_chance, new_record, path.chances[walk_ids, last])
  tree = _set_node(tree, jnp.where(expand, new_node, capacity), expansion, node_rows, parent,
                   path.length, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.rows(
      ChanceRecords, node=parent, prob=jnp.ones((width, 1))),
      jnp.where(new_chance, new_record, chance_capacity))
  chance = tree_lib.write(chance, tree_lib.rows(
      ChanceRecords, child=new_node, reward=expansion.reward, discount=expansion.discount),
      (jnp.where(expand, chance_index, chance_capacity), jnp.zeros_like(slot)))

  # The running means, as the loop's backup writes them: the leaf, then the path's nodes below
  # the root and its slots (the walks' own), then the root as the replay left it.
  steps = unpack_steps(path.steps)  # [W, D]
  leaf = jnp.where(path.expand, new_node, path.node_at(path.length))
  leaf_mean = jnp.where(path.expand, leaf_value,
                        _running_mean(path.leaf_value, path.leaf_visits, leaf_value))
  at_leaf = jnp.where(picked, leaf, capacity)
  depths = jnp.arange(max_depth)[None, :]
  on_path = picked[:, None] & (depths < path.length[:, None])
  node = jnp.concatenate([jnp.zeros_like(steps.child[:, :1]), steps.child[:, :-1]], axis=1)
  at_node = jnp.where(on_path & (depths >= 1), node, capacity)
  at_slot = jnp.where(on_path, node, capacity)
  slot_column = jnp.maximum(steps.slot, 0)
  at_last = depths == last[:, None]
  record = jnp.where(at_last & path.new_chance[:, None], new_record[:, None],
                     jnp.maximum(steps.chance, 0))
  drop = {"mode": "drop"}
  nodes, slots = tree.nodes, tree.slots
  node_visits = nodes.visits.at[at_leaf].add(1, **drop).at[at_node].add(1, **drop)
  node_values = nodes.value.at[at_leaf].set(leaf_mean, **drop).at[at_node].set(
      _running_mean(steps.node_value, steps.node_visits, returns), **drop)
  # The root's running mean, one pick after the other (the opening's way: the same bits).
  root_visits, root_value = nodes.visits[0], nodes.value[0]
  in_order = jnp.argmax(rank[None, :] == walk_ids[:, None], axis=1)  # [j]: the j-th pick
  for pick in range(width):
    taken = jnp.any(rank == pick)
    root_value = jnp.where(taken, _running_mean(root_value, root_visits,
                                                returns[in_order[pick], 0]), root_value)
    root_visits = root_visits + taken.astype(root_visits.dtype)
  added = jnp.sum(expand, dtype=jnp.int32)
  return tree.replace(
      nodes=nodes.replace(visits=node_visits.at[0].set(root_visits),
                          value=node_values.at[0].set(root_value)),
      slots=slots.replace(
          visits=slots.visits.at[at_slot, slot_column].add(1, **drop),
          value=slots.value.at[at_slot, slot_column].set(
              _running_mean(steps.slot_value, steps.slot_visits, returns), **drop),
          chance=slots.chance.at[jnp.where(new_chance, parent, capacity), slot].set(
              new_record, **drop)),
      chance=chance.replace(visits=chance.visits.at[
          jnp.where(on_path, record, chance_capacity), steps.outcome.clip(0)].add(1, **drop)),
      num_nodes=tree.num_nodes + added,
      num_chance=tree.num_chance + jnp.sum(new_chance, dtype=jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.sum(node_rows.bad & expand,
                                                             dtype=jnp.int32))
