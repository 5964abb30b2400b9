"""Subtree-entropy statistics along the backup path (entropy-guided PUCT,
``docs/algorithms.md`` §4)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from jaxsearch import entropy as entropy_lib
from jaxsearch import tree as tree_lib
from jaxsearch.search.descent import Path
from jaxsearch.selection.base import NodeView
from jaxsearch.tree import UNEXPANDED, EntropyStats, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


def _node_entropy(legal, visits, values, logits, node_visits, node_value, terminal, has_chance,
                  probs, kids, kid_entropy, kid_leaves, kid_closed, *, plan: SearchPlan):
  """``(H, K, closed)`` of one node from its ``[K]`` slot entries and its children's ``[K, O]``
  statistics, under ``plan.entropy.policy``'s playout policy."""
  view = NodeView(visits=node_visits, value=node_value, child_visits=visits,
                  child_values=values, prior_logits=logits, action_values=values,
                  legal=legal, depth=jnp.int32(0), debiased_values=values,
                  value_variance=values, upper_bounds=values)
  options = plan.entropy
  probs_policy = entropy_lib.playout_policy(view, options.policy, options.pibar_c)
  edge = entropy_lib.edge_stats(has_chance, probs, kids, kid_entropy, kid_leaves, kid_closed)
  return entropy_lib.node_stats(probs_policy, legal, terminal, *edge,
                                mode=options.kind)


def _level_entropy(tree: Tree, path: Path, node, level, depth, child_h, child_k, child_c, *,
                   plan: SearchPlan):
  """``(H, K, closed)`` ``[B]`` of the path nodes ``node[B]`` at ``level[B]``: the path child
  (below every level but the deepest) takes the carried statistics ``child_*``."""
  rows = jnp.arange(tree.batch_size)
  slots, nodes = tree.slots, tree.nodes
  chance = slots.chance[rows, node]
  safe_chance = jnp.maximum(chance, 0)
  kids = jnp.where((chance >= 0)[:, :, None], tree.chance.child[rows[:, None], safe_chance],
                   UNEXPANDED)
  safe_kids = jnp.maximum(kids, 0)
  carried = ((jnp.arange(tree.num_slots) == path.slots[rows, level][:, None])[:, :, None] &
             (jnp.arange(tree.num_outcomes) == path.outcomes[rows, level][:, None])[:, None, :] &
             (depth < path.length)[:, None, None])

  def kid(field, value):
    return jnp.where(carried, value[:, None, None], field[rows[:, None, None], safe_kids])

  return jax.vmap(functools.partial(_node_entropy, plan=plan))(
      slots.legal[rows, node], slots.visits[rows, node], slots.value[rows, node],
      slots.prior_logits[rows, node], nodes.visits[rows, node], nodes.value[rows, node],
      nodes.terminal[rows, node], chance >= 0, tree.chance.prob[rows[:, None], safe_chance],
      kids, kid(tree.entropy.entropy, child_h), kid(tree.entropy.leaves, child_k),
      kid(tree.entropy.closed, child_c))


def entropy_update(tree: Tree, path: Path, plan: SearchPlan) -> Tree:
  """Recomputes the subtree entropy ``H``, leaf count ``K`` and all-terminal flag of the
  nodes on every path, leaf to root, by the chain rule (:mod:`jaxsearch.entropy`).

  Runs after the running-mean backup (the playout policy reads the new visit counts and
  values). Only path nodes change: each level reads one node's ``[K]`` slot entries and its
  children's ``[K, O]`` statistics from the tree, replaces the path child's by the value the
  loop carries up, and the results are written once per field after the loop — the loop
  carries ``O(B)`` values, never the tree (docs/architecture.md). ``O(D·K·O)``.
  """
  batch_size, depth_limit = path.slots.shape
  rows = jnp.arange(batch_size)
  # The path's nodes with the new node (index num_nodes - 1 after the expansion) at the end.
  new_node = jnp.where(path.expand, tree.num_nodes - 1, path.nodes[rows, path.length])
  nodes = path.nodes.at[rows, path.length].set(new_node)

  def body(carry):
    depth, child_h, child_k, child_c, out_h, out_k, out_c = carry
    depth = depth - 1
    live = depth >= 0
    level = jnp.maximum(depth, 0)
    node = jnp.maximum(nodes[rows, level], 0)
    h, k, c = _level_entropy(tree, path, node, level, depth, child_h, child_k, child_c,
                             plan=plan)
    out_level = jnp.where(live, depth, depth_limit + 1)
    out_h = out_h.at[rows, out_level].set(h, mode="drop")
    out_k = out_k.at[rows, out_level].set(k, mode="drop")
    out_c = out_c.at[rows, out_level].set(c, mode="drop")
    return (level, jnp.where(live, h, child_h), jnp.where(live, k, child_k),
            jnp.where(live, c, child_c), out_h, out_k, out_c)

  zeros = jnp.zeros((batch_size,), jnp.float32)
  levels = (batch_size, depth_limit + 1)
  init = (path.length + 1, zeros, zeros + 1.0, jnp.zeros((batch_size,), bool),
          jnp.zeros(levels, jnp.float32), jnp.ones(levels, jnp.float32),
          jnp.zeros(levels, bool))
  *_, out_h, out_k, out_c = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), body, init)
  on_path = jnp.arange(depth_limit + 1)[None, :] <= path.length[:, None]
  ids = jnp.where(on_path & (nodes >= 0), nodes, tree.max_nodes)
  return tree.replace(entropy=tree_lib.write(
      tree.entropy, EntropyStats(entropy=out_h, leaves=out_k, closed=out_c), (rows[:, None], ids)))
