"""Expansion: writing the expanded edge and its new node(s), stepping every outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch.model import Expansion, Model
from jaxsearch.search.descent import Path
from jaxsearch.search.nodes import NodeRows, node_rows, set_node
from jaxsearch.tree import UNEXPANDED, ChanceRecords, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


def expand_one(tree: Tree, path: Path, expansion: Expansion, rows: NodeRows, probs) -> Tree:
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

  tree = set_node(tree, write_node, expansion, rows, parent, length, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.rows(ChanceRecords, node=parent, prob=probs),
                          drop_chance)
  chance = tree_lib.write(chance, tree_lib.rows(
      ChanceRecords, child=new_node, reward=expansion.reward, discount=expansion.discount),
                          (write_edge, outcome))
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(new_chance, parent, capacity), slot].set(tree.num_chance, mode="drop")),
      chance=chance,
      num_nodes=tree.num_nodes + expand.astype(jnp.int32),
      num_chance=tree.num_chance + new_chance.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + (rows.bad & expand).astype(jnp.int32),
  )


def expand_all_outcomes(tree: Tree, path: Path, expansion: Expansion, rows: NodeRows,
                    probs) -> tuple[Tree, jax.Array]:
  """Bellman mode: creates the expanded slot's chance record with **every** possible outcome's
  node at once (``expansion``/``rows`` are ``[O, ...]``, unbatched tree). Returns the tree and
  ``i32[D]``, each path edge's chance record."""
  capacity = tree.nodes.visits.shape[0]
  depth_limit = path.slots.shape[0]
  last = jnp.maximum(path.length - 1, 0)
  parent, slot = path.nodes[last], path.slots[last]
  expand = path.expand
  possible = probs > 0
  child_ids = tree.num_nodes + jnp.cumsum(possible).astype(jnp.int32) - 1
  children = jnp.where(possible, child_ids, UNEXPANDED)
  tree = set_node(tree, jnp.where(expand & possible, child_ids, capacity), expansion, rows,
                   parent, path.length)
  chance = tree.num_chance
  write_chance = jnp.where(expand, chance, capacity)
  edge_chances = jnp.maximum(jnp.where(
      (jnp.arange(depth_limit) == last) & expand, chance, path.chances), 0)
  # Impossible outcomes hold zeros, however (or whether) they were evaluated.
  record = tree_lib.rows(ChanceRecords, node=parent, prob=probs, child=children,
                         reward=jnp.where(possible, expansion.reward, 0.0),
                         discount=jnp.where(possible, expansion.discount, 0.0))
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[
          jnp.where(expand, parent, capacity), slot].set(chance, mode="drop")),
      chance=tree_lib.write(tree.chance, record, write_chance),
      num_nodes=tree.num_nodes + jnp.where(expand, jnp.sum(possible), 0).astype(jnp.int32),
      num_chance=tree.num_chance + expand.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.where(
          expand, jnp.sum(rows.bad & possible), 0).astype(jnp.int32),
  ), edge_chances


def step_outcomes(model: Model, plan: SearchPlan, params, key, parent_states, actions,
                     wanted, chunk: int) -> tuple[Expansion, NodeRows]:
  """Steps and evaluates every outcome of each tree's expanded action: ``(expansion, rows)``
  with leading ``[B·O]`` (tree-major), of which only ``wanted`` (``bool[B, O]``) matter.

  Where ``B·O <= chunk`` (``AvtsOptions.expand_chunk``): one model call for all ``B·O`` states.
  Otherwise the wanted ones are compacted to the front and done ``chunk`` at a time in a loop that
  runs only as many chunks as there are wanted states; each chunk is reduced to its node rows
  (``K`` slots) before the next, so the estimator's ``[·, A]`` outputs exist for one chunk
  only. The other entries keep zero rows and states (they are never written to the tree).
  The returned ``expansion`` carries ``legal`` and ``estimate`` only on the one-call path
  (``None`` otherwise): the tree reads its rows.
  """
  batch_size, num_outcomes = wanted.shape
  total = batch_size * num_outcomes
  all_outcomes = jnp.tile(jnp.arange(num_outcomes, dtype=jnp.int32), batch_size)
  if total <= chunk:
    def repeat(x):
      return jnp.repeat(x, num_outcomes, axis=0)

    expansion = model.step(params, key, jax.tree.map(repeat, parent_states), repeat(actions),
                           all_outcomes)
    return expansion, node_rows(expansion, plan)
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
    rows = node_rows(expansion, plan)
    return expansion.replace(legal=None, estimate=None), rows

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


def outcome_probs(model: Model, params, states, actions, batch_size: int) -> jax.Array:
  probs = model.outcome_probs(params, states, actions)
  if probs.shape != (batch_size, model.num_outcomes):
    raise ValueError(f"outcome_probs must return [B, O]=({batch_size}, "
                     f"{model.num_outcomes}), got {probs.shape}")
  return probs
