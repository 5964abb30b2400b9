"""The search tree: batch-first, fixed-size arrays (DESIGN.md, "Core data model").

A :class:`Tree` always holds a whole batch: every field has a leading ``[B]`` axis. The
per-tree phase functions in :mod:`jaxsearch.search` are written for one tree and vmapped; they
are private, so the public type never changes meaning between batched and unbatched use.

Sizes (static, checked when a tree is allocated):
  B  batch size, N  decision-node capacity, K  action slots per node,
  C  chance-record capacity: ``N`` by default (with the running-mean backup a record is only
     ever created together with a node); the Bellman backup creates one record per expanded
     slot, holding every possible outcome's node, so it may use far fewer
     (``SearchConfig.max_chance``),
  O  chance outcomes per action (1 for deterministic games),
  V  visit-count buckets of the AVTS debias statistics (1 when unused).

Node 0 is always the root. Children are allocated after their parents, so a parent's index
is always smaller than its children's; :func:`reroot` preserves that order.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

UNEXPANDED = -1  # sentinel in ``slot_chance`` and ``chance_child``; ``node_parent`` of the root
NO_BOUND = -3.0e38  # ``slot_bound`` of an unexpanded slot: finite, so trees never hold inf/NaN
NO_UPPER = 3.0e38  # ``node_upper`` / ``slot_upper`` where the game gives no optimistic bound


@struct.dataclass
class Tree:
  """A batch of search trees.

  Decision nodes ``[B, N]``:
    node_visits: i32, times the node was on a simulation path (its creation counts as one,
      so an expanded node has ``1 + sum(slot_visits)``).
    node_value: f32, running mean of the returns through the node (mover's view).
    node_raw_value: f32, the estimator's value at creation (0 for terminal states).
    node_parent: i32, parent node or ``-1``.
    node_depth: i32, edges from the root.
    node_terminal: bool, the state is terminal (no legal action).
    node_state: game-state pytree with leading ``[B, N]``.
    node_num_active: i32, active slots: slots ``0 .. num_active - 1`` may be selected
      (progressive widening grows it; ``K`` without widening).
    node_solved: bool, the node's value is exact: terminal, or every candidate slot is active
      and solved (Bellman backup only).
    node_bound: f32, achievable bound: the value of a concrete policy from the node (the
      game's ``pessimistic_value`` improved by the Bellman backup); meaningless without one.
    node_upper: f32, optimistic bound: no policy does better from the node (the game's
      ``optimistic_value``, tightened by the Bellman backup once every action has one).
    node_cut_upper: f32, the best optimistic bound among the legal actions left out of the
      node's ``K`` slots: the node's upper bound never drops below it. ``-NO_UPPER`` when no
      action was left out; ``NO_UPPER`` when some were and the estimator gives no
      ``action_bounds`` (then the node keeps the game's optimistic value).
  Subtree entropy ``[B, N]`` (entropy-guided PUCT, ALGORITHMS.md §4; allocated ``[B, 1]``
  and never touched unless the search keeps it, ``SearchConfig.subtree_entropy``):
    node_entropy: f32, H(n), entropy (nats) of the frontier leaf a playout from the node
      reaches; node_leaves: f32, K(n), the number of frontier leaves (unexpanded edges and
      terminal nodes); node_closed: bool, every frontier leaf below is terminal.
  Debias statistics ``[B, N, V]`` (Bellman backup; :mod:`jaxsearch.debias`):
    node_bias_count: i32, node_bias_mean: f32, node_bias_sq_sum: f32.
  Action slots ``[B, N, K]``:
    slot_action: i32, the action a slot stands for.
    slot_legal: bool, the slot holds a legal action the search may use (a candidate; with
      widening only slots ``< node_num_active`` are active).
    slot_prior_logits: f32, the estimator's prior logit (unnormalised).
    slot_action_value: f32, the estimator's action value q̂1 (0 when it gives none).
    slot_visits: i32, simulations through the slot.
    slot_value: f32, the tree's estimate Q(s, a) (running mean of returns, mover's view);
      with the Bellman backup q̂2, initialised to q̂1.
    slot_solved: bool, every possible outcome of the slot leads to a solved node.
    slot_bound: f32, achievable bound of the slot (:data:`NO_BOUND` until expanded).
    slot_upper: f32, optimistic bound of the slot (until expanded, the node's
      ``optimistic_value`` or, tighter, the estimator's ``action_bounds`` of its action).
    slot_chance: i32, the slot's chance record or ``-1`` while unexpanded.
  Chance records ``[B, C, O]`` (``chance_node`` is ``[B, C]``):
    chance_node: i32, the decision node owning the record.
    chance_prob: f32, outcome probabilities.
    chance_reward, chance_discount: f32, of the transition to each expanded outcome.
    chance_child: i32, the outcome's decision node or ``-1``.
    chance_visits: i32.
  Per tree ``[B]``:
    num_nodes, num_chance: i32, allocated entries.
    nonfinite_estimates: i32, estimator outputs that were NaN/inf and were replaced (values by
      0, logits by a uniform prior) — non-zero means the estimator misbehaved for that tree.
  """

  node_visits: jax.Array
  node_value: jax.Array
  node_raw_value: jax.Array
  node_parent: jax.Array
  node_depth: jax.Array
  node_terminal: jax.Array
  node_state: Any
  node_num_active: jax.Array
  node_solved: jax.Array
  node_bound: jax.Array
  node_upper: jax.Array
  node_cut_upper: jax.Array
  node_entropy: jax.Array
  node_leaves: jax.Array
  node_closed: jax.Array
  node_bias_count: jax.Array
  node_bias_mean: jax.Array
  node_bias_sq_sum: jax.Array
  slot_action: jax.Array
  slot_legal: jax.Array
  slot_prior_logits: jax.Array
  slot_action_value: jax.Array
  slot_visits: jax.Array
  slot_value: jax.Array
  slot_solved: jax.Array
  slot_bound: jax.Array
  slot_upper: jax.Array
  slot_chance: jax.Array
  chance_node: jax.Array
  chance_prob: jax.Array
  chance_reward: jax.Array
  chance_discount: jax.Array
  chance_child: jax.Array
  chance_visits: jax.Array
  num_nodes: jax.Array
  num_chance: jax.Array
  nonfinite_estimates: jax.Array

  @property
  def batch_size(self) -> int:
    return self.node_visits.shape[0]

  @property
  def max_nodes(self) -> int:
    return self.node_visits.shape[1]

  @property
  def num_slots(self) -> int:
    return self.slot_visits.shape[2]

  @property
  def num_outcomes(self) -> int:
    return self.chance_prob.shape[2]

  @property
  def num_buckets(self) -> int:
    return self.node_bias_mean.shape[2]

  @property
  def max_chance(self) -> int:
    """``C``, the chance-record capacity."""
    return self.chance_node.shape[1]

  def nbytes(self) -> int:
    """Bytes held by the tree's arrays."""
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(self))


def allocate(batch_size: int, max_nodes: int, num_slots: int, num_outcomes: int,
             state_example: Any, num_buckets: int = 1, bellman: bool = False,
             entropy: bool = False, max_chance: int | None = None) -> Tree:
  """An empty batch of trees (``num_nodes == 0``).

  Args:
    batch_size, max_nodes, num_slots, num_outcomes, num_buckets: ``B, N, K, O, V`` (static
      Python ints >= 1).
    max_chance: ``C``, chance records per tree (``None``: ``N``).
    state_example: one *unbatched* game state; fixes the per-node state structure.
    bellman: the tree serves the Bellman backup; otherwise the per-slot AVTS fields
      (``slot_solved``, ``slot_bound``, ``slot_upper``) are allocated with one slot only, to
      save memory.
    entropy: allocate the subtree-entropy fields ``[B, N]`` (otherwise ``[B, 1]``).
  """
  for name, size in (("batch_size", batch_size), ("max_nodes", max_nodes),
                     ("num_slots", num_slots), ("num_outcomes", num_outcomes),
                     ("num_buckets", num_buckets),
                     ("max_chance", max_nodes if max_chance is None else max_chance)):
    if not isinstance(size, int) or size < 1:
      raise ValueError(f"{name} must be a positive Python int, got {size!r}")
  b, n, k, o = batch_size, max_nodes, num_slots, num_outcomes
  c = n if max_chance is None else max_chance
  i32, f32 = jnp.int32, jnp.float32
  return Tree(
      node_visits=jnp.zeros((b, n), i32),
      node_value=jnp.zeros((b, n), f32),
      node_raw_value=jnp.zeros((b, n), f32),
      node_parent=jnp.full((b, n), UNEXPANDED, i32),
      node_depth=jnp.zeros((b, n), i32),
      node_terminal=jnp.zeros((b, n), bool),
      node_state=jax.tree.map(
          lambda x: jnp.zeros((b, n) + jnp.shape(x), jnp.asarray(x).dtype), state_example),
      node_num_active=jnp.full((b, n), k, i32),
      node_solved=jnp.zeros((b, n), bool),
      node_bound=jnp.zeros((b, n), f32),
      node_upper=jnp.full((b, n), NO_UPPER, f32),
      node_cut_upper=jnp.full((b, n), -NO_UPPER, f32),
      node_entropy=jnp.zeros((b, n if entropy else 1), f32),
      node_leaves=jnp.ones((b, n if entropy else 1), f32),
      node_closed=jnp.zeros((b, n if entropy else 1), bool),
      node_bias_count=jnp.zeros((b, n, num_buckets), i32),
      node_bias_mean=jnp.zeros((b, n, num_buckets), f32),
      node_bias_sq_sum=jnp.zeros((b, n, num_buckets), f32),
      slot_action=jnp.broadcast_to(jnp.arange(k, dtype=i32), (b, n, k)),
      slot_legal=jnp.zeros((b, n, k), bool),
      slot_prior_logits=jnp.zeros((b, n, k), f32),
      slot_action_value=jnp.zeros((b, n, k), f32),
      slot_visits=jnp.zeros((b, n, k), i32),
      slot_value=jnp.zeros((b, n, k), f32),
      slot_solved=jnp.zeros((b, n, k if bellman else 1), bool),
      slot_bound=jnp.full((b, n, k if bellman else 1), NO_BOUND, f32),
      slot_upper=jnp.full((b, n, k if bellman else 1), NO_UPPER, f32),
      slot_chance=jnp.full((b, n, k), UNEXPANDED, i32),
      chance_node=jnp.full((b, c), UNEXPANDED, i32),
      chance_prob=jnp.zeros((b, c, o), f32),
      chance_reward=jnp.zeros((b, c, o), f32),
      chance_discount=jnp.zeros((b, c, o), f32),
      chance_child=jnp.full((b, c, o), UNEXPANDED, i32),
      chance_visits=jnp.zeros((b, c, o), i32),
      num_nodes=jnp.zeros((b,), i32),
      num_chance=jnp.zeros((b,), i32),
      nonfinite_estimates=jnp.zeros((b,), i32),
  )


def root_child(tree: Tree, action: jax.Array, outcome: jax.Array | int = 0) -> jax.Array:
  """The root's child node reached by ``action`` (and chance ``outcome``), or ``-1``.

  Args:
    tree: a batch of trees.
    action: ``i32[B]`` actions (not slots).
    outcome: ``i32[B]`` or a Python int.
  Returns:
    ``i32[B]``.
  """
  outcome = jnp.broadcast_to(jnp.asarray(outcome, jnp.int32), action.shape)

  def one(tree_row, action, outcome):
    slot = jnp.argmax(tree_row.slot_action[0] == action)
    has_slot = jnp.any(tree_row.slot_action[0] == action) & tree_row.slot_legal[0, slot]
    chance = tree_row.slot_chance[0, slot]
    child = tree_row.chance_child[jnp.maximum(chance, 0), outcome]
    return jnp.where(has_slot & (chance >= 0) & (tree_row.num_nodes > 0), child, UNEXPANDED)

  return jax.vmap(one)(tree, action, outcome)


def _ancestor_at_depth(parent: jax.Array, depth: jax.Array, target_depth: jax.Array) -> jax.Array:
  """Each node's ancestor at ``target_depth`` by binary lifting (``O(N log N)``, no loop carry
  of the tree). Nodes shallower than the target map to ``-1``. Unbatched: ``[N]`` arrays."""
  n = parent.shape[0]
  steps = depth - target_depth
  current = jnp.arange(n, dtype=jnp.int32)
  jump = parent
  for bit in range(max(1, (n - 1).bit_length())):
    take = ((steps >> bit) & 1) == 1
    current = jnp.where(take & (current >= 0), jump[jnp.maximum(current, 0)], current)
    jump = jnp.where(jump >= 0, jump[jnp.maximum(jump, 0)], UNEXPANDED)
  return jnp.where(steps >= 0, current, UNEXPANDED)


def _reroot_one(tree: Tree, new_root: jax.Array) -> Tree:
  """Keeps ``new_root``'s subtree of one (unbatched) tree, compacted to indices 0.. in order."""
  n = tree.node_visits.shape[0]
  node_ids = jnp.arange(n, dtype=jnp.int32)
  exists = new_root >= 0
  safe_root = jnp.maximum(new_root, 0)
  root_depth = tree.node_depth[safe_root]
  allocated = node_ids < tree.num_nodes
  keep = exists & allocated & (
      _ancestor_at_depth(tree.node_parent, tree.node_depth, root_depth) == new_root)
  # Kept nodes keep their relative order, so parents stay before children.
  new_index = jnp.where(keep, jnp.cumsum(keep) - 1, UNEXPANDED).astype(jnp.int32)
  num_kept = jnp.sum(keep).astype(jnp.int32)
  # Source node for each destination position (positions >= num_kept are cleared below).
  order = jnp.argsort(jnp.where(keep, node_ids, n + node_ids))
  live = node_ids < num_kept

  def remap(index):  # old node index -> new (or -1)
    return jnp.where(index >= 0, new_index[jnp.maximum(index, 0)], UNEXPANDED)

  chance_ids = jnp.arange(tree.chance_node.shape[0], dtype=jnp.int32)
  chance_keep = (chance_ids < tree.num_chance) & (remap(tree.chance_node) >= 0)
  chance_new_index = jnp.where(chance_keep, jnp.cumsum(chance_keep) - 1,
                               UNEXPANDED).astype(jnp.int32)
  num_chance_kept = jnp.sum(chance_keep).astype(jnp.int32)
  chance_order = jnp.argsort(jnp.where(chance_keep, chance_ids, n + chance_ids))
  chance_live = chance_ids < num_chance_kept

  fresh = allocate(1, n, tree.slot_visits.shape[1], tree.chance_prob.shape[1],
                   jax.tree.map(lambda x: x[0], tree.node_state), tree.node_bias_mean.shape[1],
                   bellman=tree.slot_bound.shape[1] == tree.slot_visits.shape[1],
                   entropy=tree.node_entropy.shape[0] == n,
                   max_chance=tree.chance_node.shape[0])
  fresh = jax.tree.map(lambda x: x[0], fresh)

  def take(field, fresh_field, order, live):
    moved = field[order]
    mask = live.reshape(live.shape + (1,) * (moved.ndim - 1))
    return jnp.where(mask, moved, fresh_field)

  def nodes(field, fresh_field):
    return take(field, fresh_field, order, live)

  def chances(field, fresh_field):
    return take(field, fresh_field, chance_order, chance_live)

  def sized(field, fresh_field):  # per-node fields allocated [1] when unused stay as they are
    return nodes(field, fresh_field) if field.shape[0] == n else field

  slot_chance = tree.slot_chance[order]
  slot_chance = jnp.where(slot_chance >= 0,
                          chance_new_index[jnp.maximum(slot_chance, 0)], UNEXPANDED)
  parent = remap(tree.node_parent[order])
  return Tree(
      node_visits=nodes(tree.node_visits, fresh.node_visits),
      node_value=nodes(tree.node_value, fresh.node_value),
      node_raw_value=nodes(tree.node_raw_value, fresh.node_raw_value),
      node_parent=jnp.where(live & (node_ids > 0), parent, UNEXPANDED),
      node_depth=jnp.where(live, tree.node_depth[order] - root_depth, 0),
      node_terminal=nodes(tree.node_terminal, fresh.node_terminal),
      node_state=jax.tree.map(nodes, tree.node_state, fresh.node_state),
      node_num_active=nodes(tree.node_num_active, fresh.node_num_active),
      node_solved=nodes(tree.node_solved, fresh.node_solved),
      node_bound=nodes(tree.node_bound, fresh.node_bound),
      node_upper=nodes(tree.node_upper, fresh.node_upper),
      node_cut_upper=nodes(tree.node_cut_upper, fresh.node_cut_upper),
      node_entropy=sized(tree.node_entropy, fresh.node_entropy),
      node_leaves=sized(tree.node_leaves, fresh.node_leaves),
      node_closed=sized(tree.node_closed, fresh.node_closed),
      node_bias_count=nodes(tree.node_bias_count, fresh.node_bias_count),
      node_bias_mean=nodes(tree.node_bias_mean, fresh.node_bias_mean),
      node_bias_sq_sum=nodes(tree.node_bias_sq_sum, fresh.node_bias_sq_sum),
      slot_action=nodes(tree.slot_action, fresh.slot_action),
      slot_legal=nodes(tree.slot_legal, fresh.slot_legal),
      slot_prior_logits=nodes(tree.slot_prior_logits, fresh.slot_prior_logits),
      slot_action_value=nodes(tree.slot_action_value, fresh.slot_action_value),
      slot_visits=nodes(tree.slot_visits, fresh.slot_visits),
      slot_value=nodes(tree.slot_value, fresh.slot_value),
      slot_solved=nodes(tree.slot_solved, fresh.slot_solved),
      slot_bound=nodes(tree.slot_bound, fresh.slot_bound),
      slot_upper=nodes(tree.slot_upper, fresh.slot_upper),
      slot_chance=jnp.where(live[:, None], slot_chance, UNEXPANDED),
      chance_node=jnp.where(chance_live, remap(tree.chance_node[chance_order]), UNEXPANDED),
      chance_prob=chances(tree.chance_prob, fresh.chance_prob),
      chance_reward=chances(tree.chance_reward, fresh.chance_reward),
      chance_discount=chances(tree.chance_discount, fresh.chance_discount),
      chance_child=jnp.where(chance_live[:, None], remap(tree.chance_child[chance_order]),
                             UNEXPANDED),
      chance_visits=chances(tree.chance_visits, fresh.chance_visits),
      num_nodes=num_kept,
      num_chance=num_chance_kept,
      nonfinite_estimates=tree.nonfinite_estimates,
  )


def reroot(tree: Tree, action: jax.Array, outcome: jax.Array | int = 0) -> Tree:
  """Subtree reuse: keeps the subtree under the root's child reached by ``action``.

  The child becomes node 0 with its statistics intact; the kept nodes are re-indexed in their
  old order and every other entry is cleared, so the capacity they used is free again. Where
  the child was never expanded (or ``action`` is ``-1``), the tree comes back empty
  (``num_nodes == 0``) and the next search starts that tree afresh from the state it is given.

  Args:
    tree: a batch of trees ``[B, ...]``.
    action: ``i32[B]`` the action played at the root.
    outcome: ``i32[B]`` (or an int) the chance outcome that followed (0 for deterministic games).
  Returns:
    A tree of the same shapes.
  """
  action = jnp.asarray(action, jnp.int32)
  if action.shape != (tree.batch_size,):
    raise ValueError(
        f"reroot: action must have shape [B]=({tree.batch_size},), got {action.shape}")
  child = root_child(tree, action, outcome)
  return jax.vmap(_reroot_one)(tree, child)
