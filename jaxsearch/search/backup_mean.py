"""The running-mean backup (AlphaZero, MuZero, UCT): returns along the path, running means."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch.game import per_item_keys
from jaxsearch.model import Model
from jaxsearch.search.config import SearchConfig
from jaxsearch.search.descent import Path, _choose_outcome
from jaxsearch.search.expansion import _expand_one, _outcome_probs
from jaxsearch.search.nodes import _node_rows
from jaxsearch.search.subtree_entropy import _entropy_update
from jaxsearch.tree import Tree


def _leaf_value(path: Path, value):
  """``f32[B]`` value of where each simulation ended: the new node's estimate, 0 at a
  terminal node, else the existing leaf's value."""
  return jnp.where(path.expand, value, jnp.where(path.leaf_terminal, 0.0, path.leaf_value))


def _returns(tree: Tree, path: Path, edge_chances, leaf_value) -> jax.Array:
  """``f32[B, D]`` returns ``G_d = r_d + γ_d G_{d+1}`` along every path, ``G_L`` = leaf value.

  Batched by hand for the same reason as :func:`_select` (a vmapped loop re-selects its carry
  each step). Reads the chance records after :func:`_expand_one` wrote the new edge (reading
  them before the write would make XLA copy them). mctx's order of operations.
  """
  rows = jnp.arange(tree.batch_size)
  depth_limit = path.slots.shape[1]
  rewards = tree.chance.reward[rows[:, None], edge_chances, path.outcomes]
  discounts = tree.chance.discount[rows[:, None], edge_chances, path.outcomes]

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
  """Running means of the returns for the nodes, slots and outcomes on one tree's path.

  The path's last node is the existing leaf or the node :func:`_expand_one` just created
  (index ``num_nodes - 1``, visits 0 as allocated): that one gets visits 1 and the leaf value
  here, in the same scatters as the path, rather than in writes of its own."""
  capacity = tree.nodes.visits.shape[0]
  depth_limit = path.slots.shape[0]
  on_path = jnp.arange(depth_limit) < path.length
  edge_nodes = jnp.maximum(path.nodes[:-1], 0)
  leaf = jnp.where(path.expand, tree.num_nodes - 1, path.nodes[path.length])
  node_ids = jnp.concatenate([jnp.where(on_path, edge_nodes, capacity), leaf[None]])
  counts = path.node_visits.astype(jnp.float32)
  leaf_count = path.leaf_visits.astype(jnp.float32)
  leaf_mean = jnp.where(path.expand, leaf_value, (path.leaf_value * leaf_count + leaf_value) /
                        (leaf_count + 1.0))
  means = jnp.concatenate([(path.node_values * counts + returns) / (counts + 1.0),
                           leaf_mean[None]])
  slot_rows = jnp.where(on_path, edge_nodes, capacity)
  slot_counts = path.slot_visits.astype(jnp.float32)
  slot_means = (path.slot_values * slot_counts + returns) / (slot_counts + 1.0)
  nodes, slots, chance = tree.nodes, tree.slots, tree.chance
  return tree.replace(
      nodes=nodes.replace(visits=nodes.visits.at[node_ids].add(1, mode="drop"),
                          value=nodes.value.at[node_ids].set(means, mode="drop")),
      slots=slots.replace(
          visits=slots.visits.at[slot_rows, path.slots].add(1, mode="drop"),
          value=slots.value.at[slot_rows, path.slots].set(slot_means, mode="drop")),
      chance=chance.replace(visits=chance.visits.at[
          jnp.where(on_path, edge_chances, capacity), path.outcomes].add(1, mode="drop")),
  )


def _mean_simulation(model: Model, config: SearchConfig, params, outcome_key, estimator_key,
                     tree: Tree, path: Path, parent_states, actions) -> Tree:
  """Expand one outcome (chosen by ``config.outcome_rule`` where the slot is new), evaluate it
  and back up the running means (and the subtree entropy where kept)."""
  batch_size = tree.batch_size
  batch_ids = jnp.arange(batch_size)
  last = jnp.maximum(path.length - 1, 0)
  if model.num_outcomes == 1:
    probs = jnp.ones((batch_size, 1), jnp.float32)
    outcomes = path.outcomes[batch_ids, last]
  else:
    probs = _outcome_probs(model, params, parent_states, actions, batch_size)
    fresh_outcomes = jax.vmap(_choose_outcome, in_axes=(0, None, 0, None))(
        probs, jnp.zeros((model.num_outcomes,)), per_item_keys(outcome_key, batch_size),
        config.outcome_rule)
    outcomes = jnp.where(path.new_chance, fresh_outcomes, path.outcomes[batch_ids, last])
    path = path.replace(outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
  expansion = model.step(params, estimator_key, parent_states, actions, outcomes)
  rows = _node_rows(expansion, config, model.num_actions)
  tree, edge_chances = jax.vmap(_expand_one)(tree, path, expansion, rows, probs)
  leaf_value = _leaf_value(path, rows.nodes.value)
  returns = _returns(tree, path, edge_chances, leaf_value)
  tree = jax.vmap(_backup_one)(tree, path, edge_chances, leaf_value, returns)
  if config.entropy is not None:
    tree = _entropy_update(tree, path, config)
  return tree
