"""Several paths per tree in one step (``SearchConfig.leaves_per_step``, ``L``): the descent of
``L`` walks per tree, and how their leaves are shared out before the backup expands them.

The ``L`` walks of a tree descend together, level by level, in one loop (``[L, B]`` cursors).
A node has one depth, so every path of the step through a node passes it at the same level:
within a level the walks choose one after the other (a ``scan`` over the ``L`` walks, each a
``[B]`` batch as in a one-path descent), and walk ``k`` sees a virtual visit for each earlier
walk that left its node (:class:`~jaxsearch.search.descent.Virtual`). That is the tree a
sequence of ``L`` descents would see with a virtual visit added along each path already
chosen, without ever writing one: the tree holds real statistics only, and the backup writes
the ``L`` paths' real visits. A rule that draws (Thompson) sees no virtual visits: its walks
take independent draws (keys split per walk); an outcome rule that does not sample counts
the virtual visits of the outcomes taken at a chance record, so that walks down one slot
spread over its outcomes. Where nothing is virtual, the walks are one vmapped batch.

After the descent, :func:`share_leaves` finds the walks that reach the same new leaf (the
same unexpanded edge: its first walk expands it, the others back up through it) and the
expansions that fit in the tree's free nodes and chance records, in walk order; a walk whose
expansion does not fit ends at its parent, as a one-path simulation does in a full tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsearch.enums import OutcomeRule
from jaxsearch.game import per_item_keys
from jaxsearch.search.descent import (Cursor, Path, RootPrior, Virtual, choose_outcome_at,
                                      choose_slot, path_of, read_level, root_cursor,
                                      slot_chance, take_edge)
from jaxsearch.selection.base import RootContext
from jaxsearch.tree import Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


def walk_keys(key: jax.Array, num_walks: int, batch_size: int) -> jax.Array:
  """``[L, B]`` keys: walk ``k`` of tree ``b`` gets ``fold_in(fold_in(key, k), b)``."""
  return jax.vmap(lambda walk: per_item_keys(jax.random.fold_in(key, walk), batch_size))(
      jnp.arange(num_walks))


def _spreads(plan: SearchPlan, at_root: bool) -> tuple[bool, bool]:
  """``(slots, outcomes)``: whether the walks of one level choose one after the other with
  virtual visits, at the slots (a deterministic rule: the root rule at the root, where there
  is one) and at the outcomes (more than one, a rule that does not sample)."""
  rule_draws = (plan.selection.needs_key and
                not (at_root and plan.root_selection is not None))
  outcomes = plan.num_outcomes > 1 and plan.outcome_rule is not OutcomeRule.SAMPLE
  return not rule_draws, outcomes


def _in_walk_order(choose, cursor: Cursor, inputs, virtual_of) -> jax.Array:
  """``i32[L, B]`` one choice per walk, made in walk order: walk ``k``'s is
  ``choose(its inputs, virtual)`` with ``virtual_of(earlier choices, counted)`` the
  :class:`Virtual` of the walks before it that walk at this level (``inputs``: ``[L, ...]``
  pytrees, one row per walk)."""
  order = jnp.arange(cursor.node.shape[0])

  def one_walk(taken, walk_inputs):
    index, rest = walk_inputs
    counted = cursor.go & (order < index)[:, None]
    return taken.at[index].set(choose(rest, virtual_of(taken, counted))), None

  taken, _ = jax.lax.scan(one_walk, jnp.full(cursor.node.shape, -1, jnp.int32),
                          (order, inputs))
  return taken


def _descend_walks(cursor: Cursor, tree: Tree, root: RootPrior, keys, *, plan: SearchPlan,
                   at_root: bool, root_contexts: Optional[RootContext]) -> Cursor:
  """Every walk (``[L, B]`` cursor, keys and root contexts) takes one edge. The walks read
  their nodes at once; where the level spreads them (:func:`_spreads`) they choose their
  slots, then their outcomes, in walk order, each seeing the earlier walks' edges from its
  node as virtual visits; they record their edges and move at once."""
  spread_slots, spread_outcomes = _spreads(plan, at_root)
  per_walk = jax.vmap  # over the leading [L] axis; the tree is shared
  reads = per_walk(lambda walk, walk_keys: read_level(walk, tree, root, walk_keys, plan=plan,
                                                      at_root=at_root))(cursor, keys)

  def slot_of(inputs, virtual):
    read, node, context = inputs
    return choose_slot(read, node, plan=plan, at_root=at_root, root_context=context,
                       virtual=virtual)

  inputs = (reads, cursor.node, root_contexts)
  if spread_slots:
    slot = _in_walk_order(slot_of, cursor, inputs, lambda taken, counted: Virtual(
        cursor.node, taken, taken, taken, counted, slots=True, outcomes=False))
  else:
    slot = per_walk(lambda *walk_inputs: slot_of(walk_inputs, None))(*inputs)
  chance = per_walk(lambda node, slot: slot_chance(tree, node, slot, at_root=at_root))(
      cursor.node, slot)

  def outcome_of(inputs, virtual):
    walk_chance, outcome_keys = inputs
    return choose_outcome_at(tree, walk_chance, outcome_keys, plan=plan, virtual=virtual)

  if spread_outcomes:
    outcome = _in_walk_order(outcome_of, cursor, (chance, reads.outcome_keys),
                             lambda taken, counted: Virtual(cursor.node, slot, chance, taken,
                                                            counted, slots=False,
                                                            outcomes=True))
  else:
    outcome = per_walk(lambda *walk_inputs: outcome_of(walk_inputs, None))(
        chance, reads.outcome_keys)
  return per_walk(lambda walk, read, slot, chance, outcome: take_edge(
      walk, tree, read, slot, chance, outcome, plan=plan))(cursor, reads, slot, chance, outcome)


def select_walks(tree: Tree, root: RootPrior, keys, steps: jax.Array, *, plan: SearchPlan,
                 root_contexts: Optional[RootContext] = None,
                 walking: Optional[jax.Array] = None) -> tuple[Path, Tree]:
  """Descends ``L`` walks in every tree of the batch: :func:`~.descent.select` for several
  paths per tree.

  Args:
    tree: ``[B, ...]`` trees.
    root: the roots' prior (:func:`~.descent.root_prior`).
    keys: ``[L, B]`` keys for rules or outcome rules that draw (:func:`walk_keys`), else
      ``None``.
    steps: ``i32[L, B, D, 8]`` the step buffers (the previous step's ``paths.steps``).
    root_contexts: ``[L, B]`` batched :class:`RootContext` for ``plan.root_selection``
      (walk ``k``'s simulation index is its own).
    walking: ``bool[L, B]`` the walks that take part in this step (``None``: all).
  Returns:
    ``(paths, tree)``: the walks' :class:`Path`, ``[L, B, ...]``, and the tree.
  """
  cursor = jax.vmap(root_cursor, in_axes=(None, 0, None if walking is None else 0))(
      tree, steps, walking)
  with jax.named_scope("root_level"):
    cursor = _descend_walks(cursor, tree, root, keys, plan=plan, at_root=True,
                            root_contexts=root_contexts)

  def body(carry):
    cursor, tree = carry
    for _ in range(plan.loops.levels_per_trip):
      cursor = _descend_walks(cursor, tree, root, keys, plan=plan, at_root=False,
                              root_contexts=None)
    return cursor, tree

  with jax.named_scope("interior_levels"):
    cursor, tree = jax.lax.while_loop(lambda carry: jnp.any(carry[0].go), body,
                                      (cursor, tree))
  return jax.vmap(path_of, in_axes=(0, None))(cursor, tree), tree


def last_edges(paths: Path) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(parent, slot, outcome)`` ``i32[L, B]`` of each walk's last edge (the one it expands)."""
  last = jnp.maximum(paths.length - 1, 0)
  at_last = lambda x: jnp.take_along_axis(x, last[..., None], axis=-1)[..., 0]  # noqa: E731
  return paths.node_at(last), at_last(paths.slots), at_last(paths.outcomes)


class Leaves(NamedTuple):
  """How the walks of one step share their leaves out (``[L, B]`` each).

  Attributes:
    first: the walk that expands the walk's new leaf: itself, or an earlier walk that reached
      the same unexpanded edge (a new slot's chance record counts as one edge: the walks that
      open it take its first walk's outcome).
    creates: the walk expands its leaf (it is the first there, and its nodes fit).
    reaches: the walk's leaf is one a walk creates this step (``creates`` of ``first``).
    node: the first node the ``first`` walk's expansion creates.
    record: the chance record of the last edge where ``reaches``: the one ``first`` creates
      for a new slot, else the slot's.
    new_record: ``creates`` and the record is new.
  """

  first: jax.Array
  creates: jax.Array
  reaches: jax.Array
  node: jax.Array
  record: jax.Array
  new_record: jax.Array


def share_leaves(tree: Tree, paths: Path, outcomes: jax.Array, nodes_needed) -> Leaves:
  """Which walks (``paths`` ``[L, B]``) expand which leaves, in walk order, and where the new
  nodes and records go. ``outcomes`` ``i32[L, B]``: the outcome each walk's last edge takes
  (compared only where the slot's record exists); ``nodes_needed``: the nodes one expansion
  creates (``i32[L, B]`` or an int). An expansion fits where every earlier one and its own
  find room (``tree.max_nodes``, ``tree.max_chance``); from the first that does not, none
  does."""
  parent, slot, _ = last_edges(paths)
  expand, new_chance = paths.expand, paths.new_chance
  order = jnp.arange(expand.shape[0])
  earlier = (order[None, :] < order[:, None])[..., None]  # [k, j, 1]: j < k
  same = (earlier & expand[:, None] & expand[None, :] & (parent[:, None] == parent[None, :]) &
          (slot[:, None] == slot[None, :]) &
          (new_chance[:, None] | (outcomes[:, None] == outcomes[None, :])))  # [L, L, B]
  repeat = jnp.any(same, axis=1)
  first = jnp.where(repeat, jnp.argmax(same, axis=1), order[:, None]).astype(jnp.int32)
  unique = expand & ~repeat
  need = jnp.where(unique, jnp.asarray(nodes_needed, jnp.int32), 0)
  nodes_before = jnp.cumsum(need, axis=0) - need
  opens = unique & new_chance
  records_before = jnp.cumsum(opens, axis=0, dtype=jnp.int32) - opens
  room = ((tree.num_nodes + nodes_before + need <= tree.max_nodes) &
          (~opens | (tree.num_chance + records_before < tree.max_chance)))
  creates = unique & (jnp.cumsum(unique & ~room, axis=0) == 0)
  of_first = lambda x: jnp.take_along_axis(x, first, axis=0)  # noqa: E731
  last = jnp.maximum(paths.length - 1, 0)
  record = jnp.where(new_chance, of_first(tree.num_chance + records_before),
                     jnp.take_along_axis(paths.chances, last[..., None], axis=-1)[..., 0])
  return Leaves(first=first, creates=creates, reaches=expand & of_first(creates),
                node=of_first(tree.num_nodes + nodes_before), record=record,
                new_record=creates & new_chance)


def end_unreached(paths: Path, leaves: Leaves) -> Path:
  """``paths`` where a walk whose expansion did not fit ends at its parent and backs up its
  value (as a one-path simulation in a full tree, :func:`~.descent.path_of`)."""
  missed = paths.expand & ~leaves.reaches
  last = jnp.maximum(paths.length - 1, 0)
  parent_visits = jnp.take_along_axis(paths.node_visits, last[..., None], axis=-1)[..., 0]
  parent_value = jnp.take_along_axis(paths.node_values, last[..., None], axis=-1)[..., 0]
  return paths.replace(
      length=jnp.where(missed, last, paths.length), expand=paths.expand & ~missed,
      new_chance=paths.new_chance & ~missed,
      leaf_visits=jnp.where(missed, parent_visits, paths.leaf_visits),
      leaf_value=jnp.where(missed, parent_value, paths.leaf_value),
      leaf_terminal=paths.leaf_terminal & ~missed)
