"""Expansion: writing the expanded edge and its new node(s), stepping every outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch.model import Expansion, Model
from jaxsearch.search.descent import Path
from jaxsearch.search.nodes import NodeUpdate, node_update, set_node
from jaxsearch.search.walks import Leaves
from jaxsearch.tree import UNEXPANDED, ChanceRecords, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


def expand_one(tree: Tree, path: Path, expansion: Expansion, update: NodeUpdate, probs) -> Tree:
  """Writes the expanded edge (chance record, reward, discount, child) and the new node of one
  tree, but for its visits and value (:func:`~jaxsearch.search.backup_mean.write_returns`
  writes those)."""
  capacity = tree.nodes.visits.shape[0]
  length, expand, new_chance = path.length, path.expand, path.new_chance
  last = jnp.maximum(length - 1, 0)
  parent, slot, outcome = path.node_at(last), path.slots[last], path.outcomes[last]

  # The chance record of the expanded slot (created if new); out-of-range writes are dropped.
  chance_index = jnp.where(new_chance, tree.num_chance, path.chances[last])
  drop_chance = jnp.where(new_chance, tree.num_chance, capacity)
  new_node = tree.num_nodes
  write_node = jnp.where(expand, new_node, capacity)
  write_edge = jnp.where(expand, chance_index, capacity)

  tree = set_node(tree, write_node, expansion, update, parent, length, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.update(ChanceRecords, node=parent, prob=probs),
                          drop_chance)
  chance = tree_lib.write(chance, tree_lib.update(
      ChanceRecords, child=new_node, reward=expansion.reward, discount=expansion.discount),
                          (write_edge, outcome))
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(new_chance, parent, capacity), slot].set(tree.num_chance, mode="drop")),
      chance=chance,
      num_nodes=tree.num_nodes + expand.astype(jnp.int32),
      num_chance=tree.num_chance + new_chance.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + (update.bad & expand).astype(jnp.int32),
  )


def expand_leaves(tree: Tree, expansion: Expansion, update: NodeUpdate, probs, parent, slot,
                  outcome, length, leaves: Leaves) -> Tree:
  """Writes the leaves one tree's walks create in a step of several paths
  (:func:`~jaxsearch.search.walks.share_leaves`): :func:`expand_one` for ``L`` walks at once
  (unbatched tree; ``expansion``, ``update``, ``probs`` and the last edges' ``parent``,
  ``slot``, ``outcome`` and ``length`` are ``[L]``, one per walk). Only the walks that create a leaf
  write, each to nodes and records of its own; visits and values are the backup's."""
  capacity, chance_capacity = tree.nodes.visits.shape[0], tree.chance.node.shape[0]
  order = jnp.arange(parent.shape[0])
  # Each entry not written at an index of its own past the end (dropped).
  at_node = jnp.where(leaves.creates, leaves.node, capacity + order)
  at_record = jnp.where(leaves.new_record, leaves.record, chance_capacity + order)
  at_edge = jnp.where(leaves.creates, leaves.record, chance_capacity + order)
  tree = set_node(tree, at_node, expansion, update, parent, length, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.update(ChanceRecords, node=parent, prob=probs),
                          at_record)
  chance = tree_lib.write(chance, tree_lib.update(
      ChanceRecords, child=leaves.node, reward=expansion.reward, discount=expansion.discount),
                          (at_edge, outcome))
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(leaves.new_record, parent, capacity + order), slot].set(leaves.record,
                                                                             mode="drop")),
      chance=chance,
      num_nodes=tree.num_nodes + jnp.sum(leaves.creates, dtype=jnp.int32),
      num_chance=tree.num_chance + jnp.sum(leaves.new_record, dtype=jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.sum(update.bad & leaves.creates,
                                                             dtype=jnp.int32),
  )


def expand_all_outcomes(tree: Tree, path: Path, expansion: Expansion, update: NodeUpdate,
                    probs) -> tuple[Tree, jax.Array]:
  """Bellman mode: creates the expanded slot's chance record with **every** possible outcome's
  node at once (``expansion``/``update`` are ``[O, ...]``, unbatched tree). Returns the tree and
  ``i32[D]``, each path edge's chance record."""
  capacity = tree.nodes.visits.shape[0]
  depth_limit = path.slots.shape[0]
  last = jnp.maximum(path.length - 1, 0)
  parent, slot = path.nodes[last], path.slots[last]
  expand = path.expand
  possible = probs > 0
  child_ids = tree.num_nodes + jnp.cumsum(possible).astype(jnp.int32) - 1
  children = jnp.where(possible, child_ids, UNEXPANDED)
  tree = set_node(tree, jnp.where(expand & possible, child_ids, capacity), expansion, update,
                   parent, path.length)
  chance = tree.num_chance
  write_chance = jnp.where(expand, chance, capacity)
  edge_chances = jnp.maximum(jnp.where(
      (jnp.arange(depth_limit) == last) & expand, chance, path.chances), 0)
  # Impossible outcomes hold zeros, however (or whether) they were evaluated.
  record = tree_lib.update(ChanceRecords, node=parent, prob=probs, child=children,
                         reward=jnp.where(possible, expansion.reward, 0.0),
                         discount=jnp.where(possible, expansion.discount, 0.0))
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(expand, parent, capacity), slot].set(chance, mode="drop")),
      chance=tree_lib.write(tree.chance, record, write_chance),
      num_nodes=tree.num_nodes + jnp.where(expand, jnp.sum(possible), 0).astype(jnp.int32),
      num_chance=tree.num_chance + expand.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.where(
          expand, jnp.sum(update.bad & possible), 0).astype(jnp.int32),
  ), edge_chances


def expand_all_leaves(tree: Tree, expansion: Expansion, update: NodeUpdate, probs, parent, slot,
                      length, leaves: Leaves) -> Tree:
  """:func:`expand_all_outcomes` for the ``L`` walks of one tree in a step of several paths
  (unbatched tree; ``expansion`` and ``update`` ``[L, O, ...]``, ``probs`` ``[L, O]``, the last
  edges' ``parent``, ``slot`` and ``length`` ``[L]``): each walk that creates its leaf
  (:func:`~jaxsearch.search.walks.share_leaves`) writes its slot's chance record and every
  possible outcome's node, from ``leaves.node`` on."""
  capacity, chance_capacity = tree.nodes.visits.shape[0], tree.chance.node.shape[0]
  num_walks, num_outcomes = probs.shape
  order = jnp.arange(num_walks)
  possible = probs > 0
  child_ids = leaves.node[:, None] + jnp.cumsum(possible, axis=1).astype(jnp.int32) - 1
  children = jnp.where(possible, child_ids, UNEXPANDED)
  # Each entry not written at an index of its own past the end (dropped).
  at_nodes = jnp.where(leaves.creates[:, None] & possible, child_ids,
                       capacity + jnp.arange(num_walks * num_outcomes).reshape(probs.shape))
  flat = lambda x: x.reshape((num_walks * num_outcomes,) + x.shape[2:])  # noqa: E731
  each = lambda x: jnp.repeat(x, num_outcomes)  # noqa: E731
  tree = set_node(tree, flat(at_nodes), jax.tree.map(flat, expansion), jax.tree.map(flat, update),
                  each(parent), each(length))
  record = tree_lib.update(ChanceRecords, node=parent, prob=probs, child=children,
                         reward=jnp.where(possible, expansion.reward, 0.0),
                         discount=jnp.where(possible, expansion.discount, 0.0))
  written = leaves.creates[:, None] & possible
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(leaves.creates, parent, capacity + order), slot].set(leaves.record,
                                                                          mode="drop")),
      chance=tree_lib.write(tree.chance, record, jnp.where(leaves.creates, leaves.record,
                                                           chance_capacity + order)),
      num_nodes=tree.num_nodes + jnp.sum(written, dtype=jnp.int32),
      num_chance=tree.num_chance + jnp.sum(leaves.creates, dtype=jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.sum(update.bad & written,
                                                             dtype=jnp.int32),
  )


def step_outcomes(model: Model, plan: SearchPlan, params, key, parent_states, actions,
                     wanted, chunk: int) -> tuple[Expansion, NodeUpdate]:
  """Steps and evaluates every outcome of each tree's expanded action: ``(expansion, update)``
  with leading ``[B·O]`` (tree-major), of which only ``wanted`` (``bool[B, O]``) matter.

  Where ``B·O <= chunk`` (``AvtsOptions.expand_chunk``): one model call for all ``B·O`` states.
  Otherwise the wanted ones are compacted to the front and done ``chunk`` at a time in a loop that
  runs only as many chunks as there are wanted states; each chunk is reduced to its node entries
  (``K`` slots) before the next, so the estimator's ``[·, A]`` outputs exist for one chunk
  only. The other entries keep zero updates and states (they are never written to the tree).
  The returned ``expansion`` carries ``legal`` and ``estimate`` only on the one-call path
  (``None`` otherwise): the tree reads its entries.
  """
  batch_size, num_outcomes = wanted.shape
  total = batch_size * num_outcomes
  all_outcomes = jnp.tile(jnp.arange(num_outcomes, dtype=jnp.int32), batch_size)
  if total <= chunk:
    def repeat(x):
      return jnp.repeat(x, num_outcomes, axis=0)

    expansion = model.step(params, key, jax.tree.map(repeat, parent_states), repeat(actions),
                           all_outcomes)
    return expansion, node_update(expansion, plan)
  num_chunks = -(-total // chunk)
  flat = wanted.reshape(-1)
  count = jnp.sum(flat, dtype=jnp.int32)
  # Wanted entries first, in order; the padding repeats entry 0 and is never written.
  order = jnp.argsort(~flat, stable=True).astype(jnp.int32)
  order = jnp.concatenate([order, jnp.zeros((num_chunks * chunk - total,), jnp.int32)])

  def light(entries, chunk_key):
    """Steps and evaluates flat entries ``i32[c]``; keeps what the tree stores."""
    tree_ids = entries // num_outcomes
    expansion = model.step(params, chunk_key,
                           jax.tree.map(lambda x: x[tree_ids], parent_states),
                           actions[tree_ids], entries % num_outcomes)
    update = node_update(expansion, plan)
    return expansion.replace(legal=None, estimate=None), update

  shapes = jax.eval_shape(light, order[:chunk], key)
  buffers = jax.tree.map(lambda x: jnp.zeros((total,) + x.shape[1:], x.dtype), shapes)

  def body(index, buffers):
    start = index * chunk
    entries = jax.lax.dynamic_slice_in_dim(order, start, chunk)
    targets = jnp.where(start + jnp.arange(chunk) < count, entries, total)  # total: dropped
    # A key per chunk: a stochastic estimator's draws are not repeated from chunk to chunk.
    return jax.tree.map(lambda buffer, x: buffer.at[targets].set(x, mode="drop"), buffers,
                        light(entries, jax.random.fold_in(key, index)))

  return jax.lax.fori_loop(0, (count + chunk - 1) // chunk, body, buffers)


def last_edge(tree: Tree, path: Path, plan: SearchPlan):
  """``(parent states [B, ...], actions i32[B])`` of each path's last edge, the one the
  simulation expands."""
  batch_ids = jnp.arange(tree.batch_size)
  last = jnp.maximum(path.length - 1, 0)
  parents = path.node_at(last)
  slots = path.slots[batch_ids, last]
  parent_states = jax.tree.map(lambda x: x[batch_ids, parents], tree.nodes.state)
  if plan.slots_are_actions:
    return parent_states, slots  # slot k holds action k: no gather
  return parent_states, tree.slots.actions()[batch_ids, parents, slots]


def walk_edges(model: Model, plan: SearchPlan, params, tree: Tree, paths: Path):
  """``(parent states [L·B, ...], actions i32[L·B], probs f32[L·B, O])``: the last edge of each
  of a step's walks (``paths`` ``[L, B]``, flattened walk-major: entry ``k·B + b`` is walk
  ``k`` of tree ``b``) and its outcome probabilities (ones where ``O = 1``)."""
  num_walks, batch_size = paths.length.shape
  flat = lambda x: x.reshape((num_walks * batch_size,) + x.shape[2:])  # noqa: E731
  parent_states, actions = jax.vmap(lambda path: last_edge(tree, path, plan))(paths)
  parent_states, actions = jax.tree.map(flat, parent_states), flat(actions)
  if plan.num_outcomes == 1:
    return parent_states, actions, jnp.ones((num_walks * batch_size, 1), jnp.float32)
  return parent_states, actions, outcome_probs(model, params, parent_states, actions,
                                               num_walks * batch_size)


def outcome_probs(model: Model, params, states, actions, batch_size: int) -> jax.Array:
  probs = model.outcome_probs(params, states, actions)
  if probs.shape != (batch_size, model.num_outcomes):
    raise ValueError(f"outcome_probs must return [B, O]=({batch_size}, "
                     f"{model.num_outcomes}), got {probs.shape}")
  return probs
