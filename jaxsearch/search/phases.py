"""Batched phases: a root rule's later simulations, a stretch at a time, as one step each.

After Gumbel MuZero's first phase (:mod:`jaxsearch.search.opening`), Sequential Halving
(Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by planning with Gumbel", ICLR
2022) gives every root simulation a visit level: simulation ``i`` picks, by the root's scores,
one of the slots visited exactly ``schedule[i]`` times (``RootRule.schedule``). A stretch of
simulations at one level picks a different slot each time (a pick lifts its slot off the
level), so their walks part at the root and never meet below it: what each finds depends on
its slot's subtree alone, not on the order of the picks. mctx runs them as one simulation of
its loop each. Here every candidate of a stretch walks at once (``R = B·W`` walks for ``W``
candidates, :func:`_walk`), all the leaves are evaluated in one model call, and the root rule
then replays the stretch's picks with the returns known (:func:`_replay`); the backup writes
the picked walks' nodes in pick order (``BackupRule.back_up_stretch``). The tree is the one the
loop builds: the same picks, nodes, values and float operations in the same order, but for
the last bit of the children's prior probabilities, a softmax XLA may round differently over
``B·W`` rows than over ``B`` (as with the opening). An estimator that draws gets a stretch's
keys by candidate (those of simulations ``start .. start + W - 1``), not by pick.

Off by default (``LoopOptions.batched_phases``): a stretch walks and evaluates all ``W``
candidates for its ``L <= W`` picks and still scores the root once per pick, which on a CPU,
where the search is bound by its arithmetic, costs more than the loop's trips it saves.

A tree whose root did not open with the full ``m`` slots, or whose root does not walk, sits
the stretches out and runs its simulations in the loop
(:func:`jaxsearch.search.opening.restore_idle_roots`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.search import rows
from jaxsearch.search.backup import simulation_keys
from jaxsearch.search.backup_mean import _running_mean
from jaxsearch.search.descent import (Path, RootPrior, _Cursor, _descend_one_level, _node_view,
                                      _path_of, empty_steps, pack_step)
from jaxsearch.search.plan import SearchPlan
from jaxsearch.selection.base import RootContext, masked_argmax
from jaxsearch.tree import Tree


# Stretches batched at most: each is a program of its own (its walk, its replay unrolled pick
# by pick), about 1.4 s of compilation on a CPU; the later, shorter ones run in the loop.
MAX_STRETCHES = 4


@dataclasses.dataclass(frozen=True)
class Stretch:
  """Simulations ``start .. start + length - 1`` of the schedule, all at visit level ``level``,
  choosing among the ``width`` slots at that level (static)."""

  start: int
  length: int
  level: int
  width: int


def stretches(plan: SearchPlan, opening_width: int) -> tuple[Stretch, ...]:
  """The stretches after an opening of ``opening_width`` simulations that run batched (static;
  empty where none do). Only after a full opening (``m`` slots, none cut by the tree's
  capacity), where the tree cannot fill up, the interior rule draws nothing, one outcome
  follows each action, nothing else is kept per node, the backup has a batched stretch, and
  ``LoopOptions.batched_phases`` is on. At most :data:`MAX_STRETCHES`, from the first; the
  simulations after them, or after a stretch that is not a level's whole run (or a schedule
  that is not non-decreasing), go to the loop."""
  rule = plan.root_selection
  if (not opening_width or rule.schedule is None or not plan.loops.batched_phases or
      plan.backup.back_up_stretch is None or plan.selection.needs_key or
      plan.num_outcomes != 1 or plan.entropy is not None or
      plan.max_nodes < plan.num_simulations + 1 or
      opening_width != min(rule.opening_width, plan.num_slots)):
    return ()
  schedule = np.asarray(rule.schedule(opening_width, plan.num_simulations), np.int64)
  if np.any(np.diff(schedule) < 0) or np.any(schedule[:opening_width] != 0):
    return ()
  found, start = [], opening_width
  while start < len(schedule) and len(found) < MAX_STRETCHES:
    level = int(schedule[start])
    end = start + int(np.sum(schedule[start:] == level))
    width = int(np.sum(schedule == level - 1))
    if level < 1 or end - start > width or np.any(schedule[start:end] != level):
      break
    found.append(Stretch(start, end - start, level, width))
    start = end
  return tuple(found)


def run(model, plan: SearchPlan, params, loop_key: jax.Array, tree: Tree, root: RootPrior,
        context: RootContext, done: jax.Array, opening_width: int) -> tuple[Tree, jax.Array]:
  """Runs every batched stretch (:func:`stretches`): ``(tree, done i32[B])``, ``done`` the
  simulations each tree has had.

  Args:
    tree: the trees after the opening; ``done``: the opening's simulations per tree.
    root: the roots' prior; ``context``: ``[B]`` the root rule's context (its ``simulation``
      is replaced by each pick's).
  """
  for stretch in stretches(plan, opening_width):
    with jax.named_scope("phase"):
      active = done == stretch.start
      tree = _run_stretch(model, plan, params, loop_key, tree, root, context, active, stretch)
      done = jnp.where(active, done + stretch.length, done)
  return tree, done


def _run_stretch(model, plan: SearchPlan, params, loop_key, tree: Tree, root: RootPrior,
                 context: RootContext, active: jax.Array, stretch: Stretch) -> Tree:
  """One stretch of the trees ``active`` (``bool[B]``) marks; the others are left as they are."""
  width, batch_size = stretch.width, tree.batch_size
  at_level = root.legal & (tree.slots.visits[:, 0] == stretch.level)
  # The slots at the level, in slot order, as [B, W] (a [B, K, W] comparison, not a sort); a
  # tree with another count sits the stretch out.
  position = jnp.cumsum(at_level, axis=1, dtype=jnp.int32) - 1
  is_candidate = at_level[:, :, None] & (position[:, :, None] == jnp.arange(width))
  candidates = jnp.argmax(is_candidate, axis=1).astype(jnp.int32)
  active = active & (jnp.sum(at_level, axis=1) == width)
  owner = jnp.repeat(jnp.arange(batch_size, dtype=jnp.int32), width)
  # A walk at level t has t nodes below its root slot to walk through and one edge to add.
  max_length = min(plan.max_depth, stretch.level + 1)
  with jax.named_scope("descent"):
    path, tree = _walk(plan, tree, root, candidates.reshape(-1), owner,
                       jnp.repeat(active, width), max_length)
    # As in the loop: the backup's in-place writes come after the walks' reads.
    path, tree = jax.lax.optimization_barrier((path, tree))
  estimator_keys = jax.vmap(lambda index: simulation_keys(loop_key, index)[2])(
      stretch.start + jnp.arange(width))

  def choose(returns):
    return _replay(plan, tree, root, context, candidates, returns, active, stretch)

  return plan.backup.back_up_stretch(model, plan, params, estimator_keys, tree, path, owner,
                                     choose)


def _walk(plan: SearchPlan, tree: Tree, root: RootPrior, slots: jax.Array, owner: jax.Array,
          walking: jax.Array, max_length: int) -> tuple[Path, Tree]:
  """``([R] paths, tree)`` of walks that start by taking root slot ``slots[i]`` of tree
  ``owner[i]`` and go on by the interior rule (the descent's levels, shared trees); ``walking``
  (``bool[R]``): the others do not walk. Each root slot has its child already, and no walk
  is longer than ``max_length`` edges (static: the paths' buffers have that many rows). The
  tree rides through the loop, as in :func:`~jaxsearch.search.descent._select`."""
  num_walks = slots.shape[0]
  at_root = lambda field: rows.take(field[:, 0], slots, owner=owner)  # noqa: E731
  chance = at_root(tree.slots.chance)
  outcome = jnp.zeros_like(chance)
  child = rows.take(tree.chance.child, jnp.maximum(chance, 0), outcome, owner=owner)
  first = pack_step(slots, outcome, child, chance, tree.nodes.visits[owner, 0],
                    at_root(tree.slots.visits), tree.nodes.value[owner, 0],
                    at_root(tree.slots.value))
  steps = empty_steps(num_walks, max_length).at[:, 0].set(first)
  terminal = rows.take(tree.nodes.terminal, jnp.maximum(child, 0), owner=owner)
  depth = walking.astype(jnp.int32)
  go = walking & (child >= 0) & ~terminal & (depth < plan.max_depth)
  cursor = _Cursor(jnp.where(walking, child, 0), terminal & walking, depth, steps, go)

  def body(carry):
    cursor, tree = carry
    for _ in range(plan.loops.levels_per_trip):
      cursor = _descend_one_level(cursor, tree, root, None, plan=plan, at_root=False,
                                  owner=owner)
    return cursor, tree

  with jax.named_scope("interior_levels"):
    cursor, tree = jax.lax.while_loop(lambda carry: jnp.any(carry[0].go), body, (cursor, tree))
  return _path_of(cursor, tree, owner), tree


def _replay(plan: SearchPlan, tree: Tree, root: RootPrior, context: RootContext,
            candidates: jax.Array, returns: jax.Array, active: jax.Array,
            stretch: Stretch) -> jax.Array:
  """``i32[B, W]`` each candidate's pick in the stretch (``-1``: not picked; none where not
  ``active``): the picks one simulation at a time, as the loop's root level makes them, with
  each candidate's return at the root known (``returns`` ``f32[B, W]``, the walk's ``G_0``),
  the root's running means updated after each."""
  batch_ids = jnp.arange(tree.batch_size)
  visits, value = tree.nodes.visits[:, 0], tree.nodes.value[:, 0]
  slot_visits, slot_values = tree.slots.visits[:, 0], tree.slots.value[:, 0]
  rank = jnp.full(candidates.shape, -1, jnp.int32)
  for pick in range(stretch.length):
    now = tree.replace(slots=tree.slots.replace(visits=slot_visits[:, None],
                                                value=slot_values[:, None]))
    view = _node_view(now, None, visits, value, jnp.zeros_like(visits), root, plan=plan)
    scores = jax.vmap(plan.root_selection.score)(
        view, context.replace(simulation=jnp.full_like(visits, stretch.start + pick)))
    slot = jax.vmap(masked_argmax)(scores, view.legal)
    hit = candidates == slot[:, None]
    which = jnp.argmax(hit, axis=1)
    g = returns[batch_ids, which]
    picked = active & jnp.any(hit, axis=1)
    rank = rank.at[batch_ids, which].set(jnp.where(picked, pick, rank[batch_ids, which]))
    mean = _running_mean(slot_values[batch_ids, slot], slot_visits[batch_ids, slot], g)
    slot_values = slot_values.at[batch_ids, slot].set(
        jnp.where(picked, mean, slot_values[batch_ids, slot]))
    slot_visits = slot_visits.at[batch_ids, slot].add(picked.astype(jnp.int32))
    value = jnp.where(picked, _running_mean(value, visits, g), value)
    visits = visits + picked.astype(jnp.int32)
  return rank
