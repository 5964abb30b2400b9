"""The search tree: batch-first, fixed-size arrays in small typed parts (docs/architecture.md,
"Data model").

A :class:`Tree` always holds a whole batch: every array has a leading ``[B]`` axis. The
per-tree phase functions in :mod:`jaxsearch.search` are written for one tree and vmapped; they
are private, so the public type never changes meaning between batched and unbatched use.

Sizes (static, checked when a tree is allocated):
  B  batch size, N  decision-node capacity, K  action slots per node,
  C  chance-record capacity: ``N`` by default (with the running-mean backup a record is only
     ever created together with a node); the Bellman backup creates one record per expanded
     slot, holding every possible outcome's node, so it may use far fewer
     (``AvtsOptions.max_chance``),
  O  chance outcomes per action (1 for deterministic games),
  V  visit-count buckets of the AVTS debias statistics.

The tree is made of parts, each a frozen pytree of arrays with the same leading axes:
``nodes`` (:class:`NodeStats`, ``[B, N]``), ``slots`` (:class:`SlotStats`, ``[B, N, K]``),
``chance`` (:class:`ChanceRecords`, ``[B, C, O]``), ``bounds`` (:class:`BoundStats`,
``[B, N]``) and three parts that are ``None`` when the search does not keep them:
``slot_bounds`` (:class:`SlotBounds`, ``[B, N, K]``, Bellman backup), ``entropy``
(:class:`EntropyStats`, ``[B, N]``, ``SearchConfig.entropy``) and ``debias``
(:class:`~jaxsearch.debias.DebiasStats`, ``[B, N, V]``, Bellman backup). Code that moves or
writes whole nodes maps over a part (:func:`write`, ``jax.tree.map``), never over a list of
its fields.

Node 0 is always the root. Children are allocated after their parents, so a parent's index
is always smaller than its children's; :func:`reroot` preserves that order.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.debias import DebiasStats

UNEXPANDED = -1  # sentinel in ``slots.chance`` and ``chance.child``; ``nodes.parent`` of the root
NO_BOUND = -3.0e38  # ``slot_bounds.bound`` of an unexpanded slot: finite, no inf/NaN in trees
NO_UPPER = 3.0e38  # ``bounds.upper`` / ``slot_bounds.upper`` where no optimistic bound is known


@struct.dataclass
class NodeStats:
  """Decision nodes, ``[B, N]``.

  Attributes:
    visits: i32, times the node was on a simulation path (its creation counts as one, so an
      expanded node has ``1 + sum(slots.visits)``).
    value: f32, running mean of the returns through the node (mover's view); with the Bellman
      backup the best debiased value of its active slots.
    raw_value: f32, the estimator's value at creation (0 for terminal states).
    parent: i32, parent node or ``-1``.
    depth: i32, edges from the root.
    terminal: bool, the state is terminal (no legal action).
    state: the game-state pytree, every leaf with leading ``[B, N]``.
    num_active: i32, active slots: slots ``0 .. num_active - 1`` may be selected
      (progressive widening grows it; ``K`` without widening).
  """

  visits: jax.Array
  value: jax.Array
  raw_value: jax.Array
  parent: jax.Array
  depth: jax.Array
  terminal: jax.Array
  state: Any
  num_active: jax.Array


@struct.dataclass
class SlotStats:
  """Action slots, ``[B, N, K]``.

  Attributes:
    action: i32, the action a slot stands for; ``None`` where slot ``k`` is action ``k`` at
      every node (``K = A``, no widening: the search's default), so that the tree does not
      store a copy of ``arange(K)`` per node. Read it through :meth:`actions`.
    legal: bool, the slot holds a legal action the search may use (a candidate; with widening
      only slots ``< nodes.num_active`` are active).
    prior_logits: f32, the estimator's prior logit (unnormalised).
    action_value: f32, the estimator's action value q̂1; ``None`` where the estimator gives
      none (every q̂1 is then 0). Read it through :meth:`action_values`.
    visits: i32, simulations through the slot.
    value: f32, the tree's estimate Q(s, a) (running mean of returns, mover's view); with the
      Bellman backup q̂2, initialised to q̂1.
    chance: i32, the slot's chance record or ``-1`` while unexpanded.
    prior_probs: f32, the softmax of ``prior_logits`` over the legal slots, computed when the
      node is created; ``None`` unless the search keeps it
      (``SearchConfig.keeps_prior_probs``).
  """

  action: Optional[jax.Array]
  legal: jax.Array
  prior_logits: jax.Array
  action_value: Optional[jax.Array]
  visits: jax.Array
  value: jax.Array
  chance: jax.Array
  prior_probs: Optional[jax.Array] = None

  def actions(self) -> jax.Array:
    """``i32[..., K]`` (the shape of ``visits``) the action each slot stands for: the stored
    ``action``, or slot ``k`` → action ``k`` where the tree does not store it."""
    if self.action is not None:
      return self.action
    xp = np if isinstance(self.visits, np.ndarray) else jnp  # a host tree stays on the host
    return xp.broadcast_to(xp.arange(self.visits.shape[-1], dtype=xp.int32), self.visits.shape)

  def action_values(self) -> jax.Array:
    """``f32[..., K]`` the estimator's q̂1 of each slot: the stored ``action_value``, or 0
    where the estimator gives none."""
    if self.action_value is not None:
      return self.action_value
    xp = np if isinstance(self.visits, np.ndarray) else jnp
    return xp.zeros(self.visits.shape, xp.float32)


@struct.dataclass
class ChanceRecords:
  """Chance records, one per expanded slot: ``node`` ``[B, C]``, the rest ``[B, C, O]``.

  Attributes:
    node: i32, the decision node owning the record (``-1`` while unused).
    prob: f32, outcome probabilities.
    reward, discount: f32, of the transition to each expanded outcome.
    child: i32, the outcome's decision node or ``-1``.
    visits: i32, times the outcome was chosen by the outcome rule.
  """

  node: jax.Array
  prob: jax.Array
  reward: jax.Array
  discount: jax.Array
  child: jax.Array
  visits: jax.Array


@struct.dataclass
class BoundStats:
  """Certified bounds of the decision nodes, ``[B, N]``. Every search keeps them (the game's
  bounds at creation); the Bellman backup improves them.

  Attributes:
    solved: bool, the node's value is exact: terminal, or every candidate slot is active and
      solved (Bellman backup only).
    bound: f32, achievable bound: the value of a concrete policy from the node (the game's
      ``pessimistic_value`` improved by the Bellman backup); meaningless without one.
    upper: f32, optimistic bound: no policy does better from the node (the game's
      ``optimistic_value``, tightened by the Bellman backup once every action has one).
    cut_upper: f32, the best optimistic bound among the legal actions left out of the node's
      ``K`` slots: the node's upper bound never drops below it. ``-NO_UPPER`` when no action
      was left out; ``NO_UPPER`` when some were and the estimator gives no ``action_bounds``
      (then the node keeps the game's optimistic value).
  """

  solved: jax.Array
  bound: jax.Array
  upper: jax.Array
  cut_upper: jax.Array


@struct.dataclass
class SlotBounds:
  """Certified bounds of the action slots, ``[B, N, K]`` (Bellman backup only).

  Attributes:
    solved: bool, every possible outcome of the slot leads to a solved node.
    bound: f32, achievable bound of the slot (:data:`NO_BOUND` until expanded).
    upper: f32, optimistic bound of the slot (until expanded, the node's ``optimistic_value``
      or, tighter, the estimator's ``action_bounds`` of its action).
  """

  solved: jax.Array
  bound: jax.Array
  upper: jax.Array


@struct.dataclass
class EntropyStats:
  """Subtree entropy of the decision nodes, ``[B, N]`` (entropy-guided PUCT, docs/algorithms.md §4;
  :mod:`jaxsearch.entropy`).

  Attributes:
    entropy: f32, H(n), entropy (nats) of the frontier leaf a playout from the node reaches.
    leaves: f32, K(n), the number of frontier leaves (unexpanded edges and terminal nodes).
    closed: bool, every frontier leaf below is terminal.
  """

  entropy: jax.Array
  leaves: jax.Array
  closed: jax.Array


@struct.dataclass
class Tree:
  """A batch of search trees.

  Attributes:
    nodes: :class:`NodeStats` ``[B, N]``.
    slots: :class:`SlotStats` ``[B, N, K]``.
    chance: :class:`ChanceRecords` ``[B, C(, O)]``.
    bounds: :class:`BoundStats` ``[B, N]``.
    slot_bounds: :class:`SlotBounds` ``[B, N, K]``; ``None`` unless the Bellman backup.
    entropy: :class:`EntropyStats` ``[B, N]``; ``None`` unless
      ``SearchConfig.entropy``.
    debias: :class:`~jaxsearch.debias.DebiasStats` ``[B, N, V]`` (bias counts, means and
      squared-change sums per visit bucket); ``None`` unless the Bellman backup.
    num_nodes, num_chance: i32 ``[B]``, allocated nodes and chance records.
    nonfinite_estimates: i32 ``[B]``, estimator outputs that were NaN/inf and were replaced
      (values by 0, logits by a uniform prior) — non-zero means the estimator misbehaved for
      that tree.
  """

  nodes: NodeStats
  slots: SlotStats
  chance: ChanceRecords
  bounds: BoundStats
  slot_bounds: Optional[SlotBounds]
  entropy: Optional[EntropyStats]
  debias: Optional[DebiasStats]
  num_nodes: jax.Array
  num_chance: jax.Array
  nonfinite_estimates: jax.Array

  @property
  def batch_size(self) -> int:
    return self.num_nodes.shape[0]

  @property
  def max_nodes(self) -> int:
    return self.nodes.visits.shape[1]

  @property
  def num_slots(self) -> int:
    return self.slots.visits.shape[2]

  @property
  def num_outcomes(self) -> int:
    return self.chance.prob.shape[2]

  @property
  def num_buckets(self) -> Optional[int]:
    """``V``, or ``None`` for a tree without debias statistics."""
    return None if self.debias is None else self.debias.count.shape[2]

  @property
  def max_chance(self) -> int:
    """``C``, the chance-record capacity."""
    return self.chance.node.shape[1]

  def nbytes(self) -> int:
    """Bytes held by the tree's arrays."""
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(self))


# The parts indexed by decision node (leading [B, N] axes); ``chance`` is indexed by record.
NODE_PARTS = ("nodes", "slots", "bounds", "slot_bounds", "entropy", "debias")


def update(cls, **values):
  """A partial update of part ``cls``: the fields given, ``None`` for the others (which
  :func:`write` leaves as they are)."""
  unknown = set(values) - {field.name for field in dataclasses.fields(cls)}
  if unknown:
    raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
  return cls(**{field.name: values.get(field.name) for field in dataclasses.fields(cls)})


def write(part, new, index):
  """``part`` with every non-``None`` field of ``new`` written at ``index``
  (``.at[index].set``, out-of-range entries dropped); a ``None`` part stays ``None``.

  ``index`` is anything ``.at[...]`` takes: a node (``new`` holds one node's rows), ``[M]``
  nodes (rows ``[M, ...]``), or a tuple such as ``(nodes, slots)``."""
  if part is None:
    if new is not None:
      raise ValueError(f"rows for a part the tree does not keep: {type(new).__name__}")
    return None
  updates = {}
  for field in dataclasses.fields(new):
    value = getattr(new, field.name)
    if value is not None and getattr(part, field.name) is None:
      raise ValueError(f"rows for {type(part).__name__}.{field.name}, which the tree does "
                       "not keep")
    if value is not None:
      updates[field.name] = jax.tree.map(
          lambda old, x: old.at[index].set(x, mode="drop"), getattr(part, field.name), value)
  return part.replace(**updates)


def allocate(batch_size: int, max_nodes: int, num_slots: int, num_outcomes: int,
             state_example: Any, num_buckets: Optional[int] = None, slot_bounds: bool = False,
             entropy: bool = False, max_chance: Optional[int] = None,
             prior_probs: bool = False, slot_actions: bool = True,
             action_values: bool = True) -> Tree:
  """An empty batch of trees (``num_nodes == 0``).

  Args:
    batch_size, max_nodes, num_slots, num_outcomes: ``B, N, K, O`` (static Python ints >= 1).
    state_example: one *unbatched* game state; fixes the per-node state structure.
    num_buckets: ``V`` of the debias statistics (``tree.debias``); ``None``: no statistics.
    slot_bounds: keep the per-slot bounds (``tree.slot_bounds``, the Bellman backup's).
    entropy: keep the subtree-entropy statistics (``tree.entropy``).
    max_chance: ``C``, chance records per tree (``None``: ``N``).
    prior_probs: keep each node's prior probabilities (``tree.slots.prior_probs``).
    slot_actions: store which action each slot holds (``tree.slots.action``); ``False``
      where slot ``k`` is always action ``k``.
    action_values: store the estimator's q̂1 (``tree.slots.action_value``); ``False`` where
      it gives none.
  """
  c = max_nodes if max_chance is None else max_chance
  for name, size in (("batch_size", batch_size), ("max_nodes", max_nodes),
                     ("num_slots", num_slots), ("num_outcomes", num_outcomes),
                     ("num_buckets", 1 if num_buckets is None else num_buckets),
                     ("max_chance", c)):
    if not isinstance(size, int) or size < 1:
      raise ValueError(f"{name} must be a positive Python int, got {size!r}")
  b, n, k, o = batch_size, max_nodes, num_slots, num_outcomes
  i32, f32 = jnp.int32, jnp.float32

  def full(shape, value, dtype):
    return jnp.full((b,) + shape, value, dtype)

  return Tree(
      nodes=NodeStats(
          visits=full((n,), 0, i32), value=full((n,), 0, f32), raw_value=full((n,), 0, f32),
          parent=full((n,), UNEXPANDED, i32), depth=full((n,), 0, i32),
          terminal=full((n,), False, bool),
          state=jax.tree.map(lambda x: jnp.zeros((b, n) + jnp.shape(x), jnp.asarray(x).dtype),
                             state_example),
          num_active=full((n,), k, i32)),
      slots=SlotStats(
          action=(jnp.broadcast_to(jnp.arange(k, dtype=i32), (b, n, k)) if slot_actions
                  else None),
          legal=full((n, k), False, bool), prior_logits=full((n, k), 0, f32),
          action_value=full((n, k), 0, f32) if action_values else None,
          visits=full((n, k), 0, i32),
          value=full((n, k), 0, f32), chance=full((n, k), UNEXPANDED, i32),
          prior_probs=full((n, k), 0, f32) if prior_probs else None),
      chance=ChanceRecords(
          node=full((c,), UNEXPANDED, i32), prob=full((c, o), 0, f32),
          reward=full((c, o), 0, f32), discount=full((c, o), 0, f32),
          child=full((c, o), UNEXPANDED, i32), visits=full((c, o), 0, i32)),
      bounds=BoundStats(solved=full((n,), False, bool), bound=full((n,), 0, f32),
                        upper=full((n,), NO_UPPER, f32), cut_upper=full((n,), -NO_UPPER, f32)),
      slot_bounds=SlotBounds(solved=full((n, k), False, bool), bound=full((n, k), NO_BOUND, f32),
                             upper=full((n, k), NO_UPPER, f32)) if slot_bounds else None,
      entropy=EntropyStats(entropy=full((n,), 0, f32), leaves=full((n,), 1, f32),
                           closed=full((n,), False, bool)) if entropy else None,
      debias=DebiasStats(count=full((n, num_buckets), 0, i32),
                         bias_mean=full((n, num_buckets), 0, f32),
                         sq_sum=full((n, num_buckets), 0, f32)) if num_buckets else None,
      num_nodes=full((), 0, i32), num_chance=full((), 0, i32),
      nonfinite_estimates=full((), 0, i32),
  )


def empty_like(tree: Tree, batch_size: Optional[int] = None) -> Tree:
  """An empty batch of trees with ``tree``'s sizes (``batch_size`` trees, default ``B``),
  state structure and kept parts."""
  return allocate(tree.batch_size if batch_size is None else batch_size, tree.max_nodes,
                  tree.num_slots, tree.num_outcomes,
                  jax.tree.map(lambda x: x[0, 0], tree.nodes.state), tree.num_buckets,
                  slot_bounds=tree.slot_bounds is not None, entropy=tree.entropy is not None,
                  max_chance=tree.max_chance, prior_probs=tree.slots.prior_probs is not None,
                  slot_actions=tree.slots.action is not None,
                  action_values=tree.slots.action_value is not None)


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
    slots = tree_row.slots
    root_actions = slots.actions()[0]
    slot = jnp.argmax(root_actions == action)
    has_slot = jnp.any(root_actions == action) & slots.legal[0, slot]
    chance = slots.chance[0, slot]
    child = tree_row.chance.child[jnp.maximum(chance, 0), outcome]
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


def _compaction(keep: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """``(new_index, order, live, count)`` of keeping the entries ``keep`` (``bool[M]``) in
  their order: each entry's new index (or ``-1``), the source entry of each destination,
  which destinations hold a kept entry, and how many are kept."""
  ids = jnp.arange(keep.shape[0], dtype=jnp.int32)
  new_index = jnp.where(keep, jnp.cumsum(keep) - 1, UNEXPANDED).astype(jnp.int32)
  count = jnp.sum(keep).astype(jnp.int32)
  order = jnp.argsort(jnp.where(keep, ids, keep.shape[0] + ids))
  return new_index, order, ids < count, count


def _move(part, fresh_part, order, live):
  """Every field of ``part`` moved to its new places (``order``); the rest cleared to
  ``fresh_part``'s values."""

  def take(field, fresh_field):
    moved = field[order]
    mask = live.reshape(live.shape + (1,) * (moved.ndim - 1))
    return jnp.where(mask, moved, fresh_field)

  return jax.tree.map(take, part, fresh_part)


def _reroot_one(tree: Tree, new_root: jax.Array, fresh: Tree) -> Tree:
  """Keeps ``new_root``'s subtree of one (unbatched) tree, compacted to indices 0.. in order;
  the other entries are cleared to ``fresh``'s (an empty unbatched tree)."""
  nodes = tree.nodes
  n = nodes.visits.shape[0]
  exists = new_root >= 0
  root_depth = nodes.depth[jnp.maximum(new_root, 0)]
  allocated = jnp.arange(n) < tree.num_nodes
  # Kept nodes keep their relative order, so parents stay before children.
  new_index, order, live, num_kept = _compaction(
      exists & allocated &
      (_ancestor_at_depth(nodes.parent, nodes.depth, root_depth) == new_root))

  def remap(index):  # old node index -> new (or -1)
    return jnp.where(index >= 0, new_index[jnp.maximum(index, 0)], UNEXPANDED)

  chance = tree.chance
  chance_keep = ((jnp.arange(chance.node.shape[0]) < tree.num_chance) &
                 (remap(chance.node) >= 0))
  chance_new_index, chance_order, chance_live, num_chance_kept = _compaction(chance_keep)
  moved = tree.replace(
      **{name: _move(getattr(tree, name), getattr(fresh, name), order, live)
         for name in NODE_PARTS},
      chance=_move(chance, fresh.chance, chance_order, chance_live),
      num_nodes=num_kept, num_chance=num_chance_kept)
  # The links between entries are re-mapped to the new indices.
  slot_chance = tree.slots.chance[order]
  slot_chance = jnp.where(slot_chance >= 0,
                          chance_new_index[jnp.maximum(slot_chance, 0)], UNEXPANDED)
  node_ids = jnp.arange(n, dtype=jnp.int32)
  return moved.replace(
      nodes=moved.nodes.replace(
          parent=jnp.where(live & (node_ids > 0), remap(nodes.parent[order]), UNEXPANDED),
          depth=jnp.where(live, nodes.depth[order] - root_depth, 0)),
      slots=moved.slots.replace(chance=jnp.where(live[:, None], slot_chance, UNEXPANDED)),
      chance=moved.chance.replace(
          node=jnp.where(chance_live, remap(chance.node[chance_order]), UNEXPANDED),
          child=jnp.where(chance_live[:, None], remap(chance.child[chance_order]),
                          UNEXPANDED)))


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
  fresh = jax.tree.map(lambda x: x[0], empty_like(tree, batch_size=1))
  return jax.vmap(_reroot_one, in_axes=(0, 0, None))(tree, child, fresh)
