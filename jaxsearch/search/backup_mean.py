"""The running-mean backup (AlphaZero, MuZero, UCT, Gumbel): one outcome expanded per
simulation, the returns along its path, and their running means.

One function computes a path's returns (:func:`path_returns`) and one writes them
(:func:`write_returns`; :func:`add_returns` where several paths of one step share entries);
the layouts call both:

* the loop, level by level (:func:`back_up_per_level`, the CPU's default): one level of the
  returns at a time, written as ``[B]`` rows, as many levels as the longest path;
* the whole path at once (:func:`back_up_whole_path`, an accelerator's default): the ``[B, D]``
  returns, written with one scatter per array;
* the Gumbel opening (:func:`expand_root_children`): ``W`` one-edge paths per tree, written
  together, the root's running mean then updated child after child;
* several paths per tree in one step (:func:`mean_walks_simulation`,
  ``SearchConfig.leaves_per_step``): the ``[L, B, D]`` returns of the ``L`` paths, added with
  one scatter per array (:func:`back_up_walks`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch.enums import Backup, OutcomeRule, PathUpdate
from jaxsearch.game import per_item_keys
from jaxsearch.model import Model
from jaxsearch.search import rows as rows_lib
from jaxsearch.search.backup import BackupRule, SimulationKeys
from jaxsearch.search.descent import CHILD, Path, choose_outcome, unpack_steps
from jaxsearch.search.expansion import (expand_leaves, expand_one, last_edge, outcome_probs,
                                        walk_edges)
from jaxsearch.search.nodes import node_update, set_node
from jaxsearch.search.subtree_entropy import entropy_update
from jaxsearch.search.walks import Leaves, end_unreached, last_edges, share_leaves, walk_keys
from jaxsearch.tree import ChanceRecords, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds this rule
  from jaxsearch.search.plan import SearchPlan


def running_mean(value, count, g):
  """The running mean after one more return ``g``, from the mean and count before it."""
  count = count.astype(jnp.float32)
  return (value * count + g) / (count + 1.0)


# Levels of the return recursion between two barriers (see path_returns).
_RETURNS_BLOCK = 8


def path_returns(reward, discount, on_path, leaf_value) -> jax.Array:
  """``f32[B, D]`` the return ``G_d = r_d + γ_d G_{d+1}`` below each node of ``B`` paths
  (``G_L`` = ``leaf_value`` ``f32[B]``), from the edges' ``reward`` and ``discount``
  ``f32[B, D]``; where ``on_path`` (``bool[B, D]``) is false the entry repeats the one below.

  A reverse recursion over the ``D`` columns, unrolled at trace time into elementwise work.
  The loop's layout calls it on one level at a time (``D = 1``, carrying ``G`` up), the
  opening on one-edge paths: the same operations in the same order, so the same values.
  """
  max_depth = reward.shape[1]
  returns, g = [None] * max_depth, leaf_value
  for count, depth in enumerate(reversed(range(max_depth)), start=1):
    g = jnp.where(on_path[:, depth], reward[:, depth] + discount[:, depth] * g, g)
    returns[depth] = g
    if count % _RETURNS_BLOCK == 0:
      # A kernel boundary every few levels rather than one fusion writing every return
      # (measured with the unique indices of write_returns: Connect Four, B = 32768 on an
      # H200, 21 → 86 M simulations/s; neutral on a CPU). The values are the same.
      g = jax.lax.optimization_barrier(g)
  return jnp.stack(returns, axis=1)


class MeanStats(NamedTuple):
  """The arrays the running-mean backup writes: node visits and values (``[..., N]``), slot
  visits and values (``[..., N, K]``) and outcome visits (``[..., C, O]``), or flat views of
  them (:func:`jaxsearch.search.rows.flat_view`)."""

  node_visits: jax.Array
  node_values: jax.Array
  slot_visits: jax.Array
  slot_values: jax.Array
  outcome_visits: jax.Array


def mean_stats(tree: Tree) -> MeanStats:
  """The :class:`MeanStats` of ``tree``."""
  return MeanStats(tree.nodes.visits, tree.nodes.value, tree.slots.visits, tree.slots.value,
                   tree.chance.visits)


def with_mean_stats(tree: Tree, stats: MeanStats) -> Tree:
  """``tree`` holding ``stats``."""
  return tree.replace(
      nodes=tree.nodes.replace(visits=stats.node_visits, value=stats.node_values),
      slots=tree.slots.replace(visits=stats.slot_visits, value=stats.slot_values),
      chance=tree.chance.replace(visits=stats.outcome_visits))


def write_returns(stats: MeanStats, returns=None, before=None, *, node=None, slot=None,
                  outcome=None, leaf=None, leaf_mean=None) -> MeanStats:
  """``stats`` after one more return at each entry: a visit more and the running mean.

  Every part is optional; the indices are tuples into the arrays (any shape matching
  ``returns``), each entry distinct, out-of-range ones dropped (XLA is told the indices are
  unique: a GPU then writes each entry directly).

  Args:
    returns: the return each entry gets (:func:`path_returns`).
    before: the statistics before this simulation (a :class:`~.descent.Step`'s
      ``node_visits``, ``node_value``, ``slot_visits``, ``slot_value``).
    node, slot, outcome: the path's nodes, the slots taken at them and the outcomes taken
      (indices into ``node_*``, ``slot_*`` and ``outcome_visits``).
    leaf, leaf_mean: the node a path ends on, which gets a visit and the mean ``leaf_mean``
      (written first).
  """
  unique = {"mode": "drop", "unique_indices": True}
  node_visits, node_values = stats.node_visits, stats.node_values
  slot_visits, slot_values = stats.slot_visits, stats.slot_values
  outcome_visits = stats.outcome_visits
  if leaf is not None:
    node_visits = node_visits.at[leaf].add(1, **unique)
    node_values = node_values.at[leaf].set(leaf_mean, **unique)
  if node is not None:
    node_visits = node_visits.at[node].add(1, **unique)
    node_values = node_values.at[node].set(
        running_mean(before.node_value, before.node_visits, returns), **unique)
  if slot is not None:
    slot_visits = slot_visits.at[slot].add(1, **unique)
    slot_values = slot_values.at[slot].set(
        running_mean(before.slot_value, before.slot_visits, returns), **unique)
  if outcome is not None:
    outcome_visits = outcome_visits.at[outcome].add(1, **unique)
  return MeanStats(node_visits, node_values, slot_visits, slot_values, outcome_visits)


def add_returns(stats: MeanStats, *, node=None, slot=None, outcome=None) -> MeanStats:
  """``stats`` after several returns at entries that may repeat (the paths of one step that
  pass the same node): ``m`` returns ``g_i`` at an entry of ``n`` visits and mean ``v`` make
  ``n + m`` visits and the mean ``v + Σ_i (g_i − v) / (n + m) = (v·n + Σ_i g_i) / (n + m)``,
  the running mean after all ``m`` in any order (:func:`write_returns` writes ``m = 1`` from
  the statistics a descent read). Sparse: a gather and a scatter-add per array, in place.

  Args:
    node, slot: ``(at, returns)``: the entries' flat indices into the ``[B·N]`` and
      ``[B·N·K]`` views of the node and slot arrays (out of range: dropped) and the return
      each gets, any matching shapes; ``None``: none.
    outcome: flat indices into the ``[B·C·O]`` outcome visits, a visit each (or ``None``).
  """

  def mean_of(visits, values, entries):
    if entries is None:
      return visits, values
    at, returns = entries
    flat_visits, flat_values = visits.reshape(-1), values.reshape(-1)
    at, returns = at.reshape(-1), returns.reshape(-1)
    before = flat_values.at[at].get(mode="clip")
    flat_visits = flat_visits.at[at].add(1, mode="drop")
    after = jnp.maximum(flat_visits.at[at].get(mode="clip"), 1).astype(jnp.float32)  # n + m
    flat_values = flat_values.at[at].add((returns - before) / after, mode="drop")
    return flat_visits.reshape(visits.shape), flat_values.reshape(values.shape)

  node_visits, node_values = mean_of(stats.node_visits, stats.node_values, node)
  slot_visits, slot_values = mean_of(stats.slot_visits, stats.slot_values, slot)
  outcome_visits = stats.outcome_visits
  if outcome is not None:
    outcome_visits = outcome_visits.reshape(-1).at[outcome.reshape(-1)].add(
        1, mode="drop").reshape(outcome_visits.shape)
  return MeanStats(node_visits, node_values, slot_visits, slot_values, outcome_visits)


def leaf_value(path: Path, value):
  """``f32[B]`` value of where each simulation ended: the new node's estimate, 0 at a
  terminal node, else the existing leaf's value."""
  return jnp.where(path.expand, value, jnp.where(path.leaf_terminal, 0.0, path.leaf_value))


def _path_ends(tree: Tree, path: Path, leaf_g):
  """``(leaf, leaf_mean, new_record)`` (``i32[B]``, ``f32[B]``, ``i32[B]``): the node a path
  ends on (the existing leaf, or the node the expansion just created), its running mean
  after this simulation, and the chance record the expansion created on the last edge
  (``-1`` where it created none)."""
  leaf = jnp.where(path.expand, tree.num_nodes - 1, path.node_at(path.length))
  leaf_mean = jnp.where(path.expand, leaf_g,
                        running_mean(path.leaf_value, path.leaf_visits, leaf_g))
  new_record = jnp.where(path.new_chance, tree.num_chance - 1, -1)
  return leaf, leaf_mean, new_record


def back_up_per_level(tree: Tree, path: Path, leaf_g, last_outcome) -> Tree:
  """The running means of every path's returns (``G_L`` = ``leaf_g`` ``f32[B]``), leaf to
  root; ``last_outcome`` ``i32[B]`` is the outcome the expansion took on the last edge.

  One level per step of a batched loop that runs as many steps as the longest path: each
  step reads one packed row of the descent's step buffer and writes one row per tree
  (``[B]`` scatters into flat views, :mod:`jaxsearch.search.rows`), so the work follows the
  paths' lengths rather than the path buffers' size ``D``. Reads the chance records after
  :func:`~jaxsearch.search.expansion.expand_one` wrote the new edge; the statistics before
  this simulation come from the path, never from the arrays being written (which the loop
  carries, and XLA then updates in place). mctx's order of operations.
  """
  chance = tree.chance
  leaf, leaf_mean, new_record = _path_ends(tree, path, leaf_g)
  last = path.length - 1
  depths = (1, 1, 2, 2, 2)  # the indexed dimensions of each MeanStats array

  def flat(stats):
    return MeanStats(*(rows_lib.flat_view(x, d) for x, d in zip(stats, depths)))

  def level(carry):
    depth, g, stats = carry
    active = depth > 0
    depth = jnp.where(active, depth - 1, depth)
    step = path.step_at(depth)  # [B]: one gather for the whole edge
    at_last = depth == last
    record = jnp.where(at_last & (new_record >= 0), new_record, jnp.maximum(step.chance, 0))
    outcome = jnp.where(at_last, last_outcome, jnp.maximum(step.outcome, 0))
    g = path_returns(rows_lib.take(chance.reward, record, outcome)[:, None],
                     rows_lib.take(chance.discount, record, outcome)[:, None],
                     active[:, None], g)[:, 0]
    node = jnp.where(active, path.node_at(depth), tree.max_nodes)
    outcome_record = jnp.where(active, record, tree.max_chance)
    written = write_returns(
        flat(stats), g, step, node=(rows_lib.flat_index(stats.node_visits.shape, node),),
        slot=(rows_lib.flat_index(stats.slot_visits.shape, node, jnp.maximum(step.slot, 0)),),
        outcome=(rows_lib.flat_index(stats.outcome_visits.shape, outcome_record, outcome),))
    return depth, g, MeanStats(*(x.reshape(y.shape) for x, y in zip(written, stats)))

  stats = mean_stats(tree)
  at_leaf = (rows_lib.flat_index(stats.node_visits.shape, leaf),)
  written = write_returns(flat(stats), leaf=at_leaf, leaf_mean=leaf_mean)
  stats = MeanStats(*(x.reshape(y.shape) for x, y in zip(written, stats)))
  _, _, stats = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), level,
                                   (path.length, leaf_g, stats))
  return with_mean_stats(tree, stats)


def back_up_whole_path(tree: Tree, path: Path, leaf_g, last_outcome) -> Tree:
  """:func:`back_up_per_level`'s updates as one ``[B, D]`` write per array, with no loop.

  On a GPU each trip of the per-level loop costs a round trip to the host for its condition,
  more than these writes of the whole path buffer; on a CPU the loop is faster.
  """
  chance = tree.chance
  steps, length = unpack_steps(path.steps), path.length  # [B, D] each, [B]
  max_depth = path.steps.shape[1]
  batch_ids = jnp.arange(tree.batch_size)[:, None]
  depths = jnp.arange(max_depth)[None, :]
  on_path = depths < length[:, None]  # [B, D]
  leaf, leaf_mean, new_record = _path_ends(tree, path, leaf_g)
  at_last = depths == (length - 1)[:, None]
  record = jnp.where(at_last & (new_record >= 0)[:, None], new_record[:, None],
                     jnp.maximum(steps.chance, 0))
  outcome = jnp.where(at_last, last_outcome[:, None], jnp.maximum(steps.outcome, 0))
  reward = chance.reward[batch_ids, record, outcome]  # [B, D]
  discount = chance.discount[batch_ids, record, outcome]
  # The gathers in kernels of their own (see path_returns).
  reward, discount = jax.lax.optimization_barrier((reward, discount))
  returns = path_returns(reward, discount, on_path, leaf_g)
  node = jnp.concatenate([jnp.zeros_like(steps.child[:, :1]), steps.child[:, :-1]], axis=1)
  # Past the end: dropped, each depth at an index of its own. A path visits each node (and
  # so each chance record) once: every entry written is distinct.
  node = jnp.where(on_path, node, tree.max_nodes + depths)
  outcome_record = jnp.where(on_path, record, tree.max_chance + depths)
  stats = write_returns(mean_stats(tree), returns, steps, node=(batch_ids, node),
                        slot=(batch_ids, node, jnp.maximum(steps.slot, 0)),
                        outcome=(batch_ids, outcome_record, outcome),
                        leaf=(batch_ids[:, 0], leaf), leaf_mean=leaf_mean)
  return with_mean_stats(tree, stats)


def _take_outcomes(model: Model, plan: SearchPlan, params, keys: SimulationKeys, tree: Tree,
                   path: Path):
  """``(parent_states, actions, probs f32[B, O], outcomes i32[B], path)``: each path's last
  edge and the outcome it takes (chosen by ``plan.outcome_rule`` where the slot is new)."""
  batch_size = tree.batch_size
  batch_ids = jnp.arange(batch_size)
  last = jnp.maximum(path.length - 1, 0)
  parent_states, actions = last_edge(tree, path, plan)
  if plan.num_outcomes == 1:
    probs = jnp.ones((batch_size, 1), jnp.float32)
    return parent_states, actions, probs, path.outcomes[batch_ids, last], path
  probs = outcome_probs(model, params, parent_states, actions, batch_size)
  fresh_outcomes = jax.vmap(choose_outcome, in_axes=(0, None, 0, None))(
      probs, jnp.zeros((plan.num_outcomes,)), per_item_keys(keys.outcome, batch_size),
      plan.outcome_rule)
  outcomes = jnp.where(path.new_chance, fresh_outcomes, path.outcomes[batch_ids, last])
  path = path.replace(outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
  return parent_states, actions, probs, outcomes, path


def mean_simulation(model: Model, plan: SearchPlan, params, keys: SimulationKeys, tree: Tree,
                    path: Path) -> Tree:
  """Expand one outcome, evaluate it and back up the running means (and the subtree entropy
  where kept): :meth:`MeanBackup.expand_and_backup`."""
  with jax.named_scope("expansion"):  # the last edge, and the outcome it takes
    parent_states, actions, probs, outcomes, path = _take_outcomes(model, plan, params, keys,
                                                                   tree, path)
  with jax.named_scope("estimator"):
    expansion = model.step(params, keys.estimator, parent_states, actions, outcomes)
    # Evaluated once: XLA would otherwise recompute a cheap estimator inside every fusion
    # that reads its output (the sanitising checks, the prior softmax, the writes). XLA's CPU
    # compiler removes barriers before it fuses, so there it is recomputed; forcing it out
    # through a loop of one trip measured 0.95-1.02x the time on a CPU (noise): not done.
    expansion = jax.lax.optimization_barrier(expansion)
  with jax.named_scope("expansion"):
    update = node_update(expansion, plan)
    tree = jax.vmap(expand_one)(tree, path, expansion, update, probs)
  with jax.named_scope("backup"):
    whole = plan.loops.path_update is PathUpdate.WHOLE_PATH
    back_up = back_up_whole_path if whole else back_up_per_level
    tree = back_up(tree, path, leaf_value(path, update.nodes.value), outcomes)
  if plan.entropy is not None:
    tree = entropy_update(tree, path, plan)
  return tree


class WalkEnds(NamedTuple):
  """Where the ``W = L·B`` paths of one step end (``[W]`` each, walk-major: entry ``k·B + b``
  is walk ``k`` of tree ``b``), as their backup reads it."""

  trees: jax.Array  # i32 the path's tree
  length: jax.Array  # i32 edges backed up (0 for a path that sits out)
  reaches: jax.Array  # bool the last edge leads to a leaf created this step
  record: jax.Array  # i32 ... and that edge's chance record
  outcome: jax.Array  # i32 ... and outcome
  at_leaf: jax.Array  # i32 flat index of the leaf in [B·N] (past the end: sits out)
  leaf_g: jax.Array  # f32 G_L, the leaf's value


def _walk_entries(tree: Tree, ends: WalkEnds, depth, step, node):
  """``(on_path, reward, discount, at_node, at_slot, at_outcome)`` of the paths' edges at
  ``depth`` (``[W]``, or ``[W, D]`` with ``ends`` fields ``[W, 1]``): the step rows ``step``
  and nodes ``node`` there, the rewards and discounts of the edges, and the flat indices
  :func:`add_returns` writes (past the end where off the path)."""
  num_nodes, num_slots, num_outcomes = tree.max_nodes, tree.num_slots, tree.num_outcomes
  batch_size = tree.batch_size
  on_path = depth < ends.length
  new_edge = (depth == ends.length - 1) & ends.reaches
  record = jnp.where(new_edge, ends.record, jnp.maximum(step.chance, 0))
  outcome = jnp.where(new_edge, ends.outcome, jnp.maximum(step.outcome, 0))
  reward = tree.chance.reward[ends.trees, record, outcome]
  discount = tree.chance.discount[ends.trees, record, outcome]
  at_node = ends.trees * num_nodes + node
  return (on_path, reward, discount,
          jnp.where(on_path, at_node, batch_size * num_nodes),
          jnp.where(on_path, at_node * num_slots + jnp.maximum(step.slot, 0),
                    batch_size * num_nodes * num_slots),
          jnp.where(on_path, (ends.trees * tree.max_chance + record) * num_outcomes + outcome,
                    batch_size * tree.max_chance * num_outcomes))


def _walks_whole_path(tree: Tree, steps: jax.Array, ends: WalkEnds) -> MeanStats:
  """:func:`back_up_walks` as one ``[W, D]`` write per array (an accelerator's layout)."""
  column = jax.tree.map(lambda x: x[:, None], ends)
  step = unpack_steps(steps)  # [W, D]
  node = jnp.concatenate([jnp.zeros_like(step.child[:, :1]), step.child[:, :-1]], axis=1)
  on_path, reward, discount, at_node, at_slot, at_outcome = _walk_entries(
      tree, column, jnp.arange(steps.shape[1]), step, node)
  returns = path_returns(reward, discount, on_path, ends.leaf_g)
  return add_returns(mean_stats(tree),
                     node=(jnp.concatenate([at_node.reshape(-1), ends.at_leaf]),
                           jnp.concatenate([returns.reshape(-1), ends.leaf_g])),
                     slot=(at_slot, returns), outcome=at_outcome)


def _walks_per_level(tree: Tree, steps: jax.Array, ends: WalkEnds) -> MeanStats:
  """:func:`back_up_walks` level by level, leaf to root, as many levels as the longest path
  (the CPU's layout, as :func:`back_up_per_level`): the leaves first, then one ``[W]`` row of
  each array per level. A node has one depth, so each level writes nodes no other level
  does, but where a path ended on it."""
  stats = add_returns(mean_stats(tree), node=(ends.at_leaf, ends.leaf_g))

  def level(carry):
    depth, g, stats = carry
    active = depth > 0
    depth = jnp.where(active, depth - 1, depth)
    step = unpack_steps(rows_lib.take(steps, depth))  # [W]: one gather for the whole edge
    above = rows_lib.take(steps[..., CHILD], jnp.maximum(depth - 1, 0))
    node = jnp.where(depth == 0, 0, above)
    on_path, reward, discount, at_node, at_slot, at_outcome = _walk_entries(
        tree, ends, depth, step, node)
    on_path = on_path & active
    g = path_returns(reward[:, None], discount[:, None], on_path[:, None], g)[:, 0]
    past_end = lambda at: jnp.where(active, at, jnp.iinfo(jnp.int32).max)  # noqa: E731
    stats = add_returns(stats, node=(past_end(at_node), g), slot=(past_end(at_slot), g),
                        outcome=past_end(at_outcome))
    return depth, g, stats

  _, _, stats = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), level,
                                   (ends.length, ends.leaf_g, stats))
  return stats


def back_up_walks(tree: Tree, paths: Path, leaves: Leaves, leaf_g, last_outcome, taking, *,
                  whole_path: bool) -> Tree:
  """The running means of the returns of ``L`` paths per tree (``paths`` ``[L, B]``, after
  :func:`~jaxsearch.search.walks.end_unreached`; ``G_L`` = ``leaf_g`` ``f32[L, B]``;
  ``last_outcome`` the outcome each new leaf's edge took; ``taking`` ``bool[L, B]`` the paths
  that take part): each path's return counts once at every node, slot and outcome it passes
  and at its leaf (:func:`add_returns`), whichever other paths of the step pass there too.
  ``whole_path``: all levels in one write (else level by level, ``LoopOptions.path_update``);
  the same counts, the means equal up to float rounding."""
  num_walks, batch_size = paths.length.shape
  flat = lambda x: x.reshape((num_walks * batch_size,) + x.shape[2:])  # noqa: E731
  trees = jnp.broadcast_to(jnp.arange(batch_size, dtype=jnp.int32), (num_walks, batch_size))
  leaf = jnp.where(leaves.reaches, leaves.node, paths.node_at(paths.length))
  at_leaf = jnp.where(taking, trees * tree.max_nodes + leaf, batch_size * tree.max_nodes)
  ends = WalkEnds(*map(flat, (trees, jnp.where(taking, paths.length, 0), leaves.reaches,
                              leaves.record, last_outcome, at_leaf, leaf_g)))
  back_up = _walks_whole_path if whole_path else _walks_per_level
  return with_mean_stats(tree, back_up(tree, flat(paths.steps), ends))


def mean_walks_simulation(model: Model, plan: SearchPlan, params, keys: SimulationKeys,
                          tree: Tree, paths: Path, walking) -> Tree:
  """A step of ``L`` paths per tree (``paths`` ``[L, B]``; ``walking`` ``bool[L, B]`` or
  ``None``): the new leaves expanded once each, evaluated in one model call over ``L·B``
  states, and every path backed up (:meth:`MeanBackup.expand_and_back_up_walks`). Where a
  slot is new, each walk draws its outcome with a key of its own; the walks that open the
  same slot in one step take the first one's."""
  num_walks, batch_size = paths.length.shape
  per_walk = lambda x: x.reshape((num_walks, batch_size) + x.shape[1:])  # noqa: E731
  with jax.named_scope("expansion"):
    parent_states, actions, probs = walk_edges(model, plan, params, tree, paths)
    outcomes = last_edges(paths)[2]
    if plan.num_outcomes > 1:
      outcome_keys = walk_keys(keys.outcome, num_walks, batch_size)
      fresh = jax.vmap(choose_outcome, in_axes=(0, None, 0, None))(
          probs, jnp.zeros((plan.num_outcomes,)),
          outcome_keys.reshape((-1,) + outcome_keys.shape[2:]), plan.outcome_rule)
      outcomes = jnp.where(paths.new_chance, per_walk(fresh), outcomes)
    leaves = share_leaves(tree, paths, outcomes, 1)
    outcomes = jnp.take_along_axis(outcomes, leaves.first, axis=0)  # a repeat takes its first's
    paths = end_unreached(paths, leaves)
  with jax.named_scope("estimator"):
    expansion = model.step(params, keys.estimator, parent_states, actions, outcomes.reshape(-1))
    expansion = jax.lax.optimization_barrier(expansion)  # see mean_simulation
  with jax.named_scope("expansion"):
    expansion, update = jax.tree.map(per_walk, (expansion, node_update(expansion, plan)))
    parent, slot, _ = last_edges(paths)
    tree = jax.vmap(expand_leaves, in_axes=(0,) + (1,) * 8)(
        tree, expansion, update, per_walk(probs), parent, slot, outcomes, paths.length, leaves)
  with jax.named_scope("backup"):
    value = jnp.take_along_axis(update.nodes.value, leaves.first, axis=0)
    leaf_g = jnp.where(leaves.reaches, value,
                       jnp.where(paths.leaf_terminal, 0.0, paths.leaf_value))
    taking = jnp.ones(paths.length.shape, bool) if walking is None else walking
    return back_up_walks(tree, paths, leaves, leaf_g, outcomes, taking,
                         whole_path=plan.loops.path_update is PathUpdate.WHOLE_PATH)


def expand_root_children(model: Model, plan: SearchPlan, params, estimator_keys, tree: Tree,
                         slots, count) -> Tree:
  """The first ``count[b]`` simulations of tree ``b``, each expanding root slot ``slots[b, j]``
  (``i32[B, W]``), as one step (:mod:`jaxsearch.search.opening`): what
  :func:`mean_simulation` would write for each path of one edge, in order.

  Args:
    estimator_keys: ``[W]`` the estimator keys of simulations ``0 .. W - 1``.
    tree: fresh trees (root only); one outcome per action, no subtree entropy.
    slots, count: which root slots, and how many of them (``i32[B]``, at most ``W``).
  """
  width = slots.shape[1]
  order = jnp.arange(width, dtype=jnp.int32)
  root_states = jax.tree.map(lambda x: x[:, 0], tree.nodes.state)
  actions = (slots if plan.slots_are_actions
             else jnp.take_along_axis(tree.slots.actions()[:, 0], slots, axis=1))
  outcomes = jnp.zeros((tree.batch_size,), jnp.int32)
  with jax.named_scope("estimator"):
    expansion = jax.vmap(lambda key, action: model.step(params, key, root_states, action,
                                                        outcomes),
                         in_axes=(0, 1), out_axes=1)(estimator_keys, actions)
    expansion = jax.lax.optimization_barrier(expansion)  # see mean_simulation
  with jax.named_scope("expansion"):
    # The node entries of one [B·W] batch, as a simulation builds those of its [B] (XLA may round
    # a reduction over B·W rows differently in the last bit: tests/test_opening.py).
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), expansion)
    update = jax.tree.map(lambda x: x.reshape(slots.shape + x.shape[1:]), node_update(flat, plan))
    tree = jax.vmap(_write_root_children, in_axes=(0, 0, 0, 0, 0, None))(
        tree, expansion, update, slots, order[None, :] < count[:, None], order)
  return tree


def _write_root_children(tree: Tree, expansion, update, slots, valid, order) -> Tree:
  """One tree's part of :func:`expand_root_children`: children ``j`` with ``valid[j]`` become
  nodes ``num_nodes + j`` under chance records ``num_chance + j`` of root slots ``slots[j]``,
  and each one's return is backed up into its slot and, in order, the root's running mean
  (``[W]`` rows; unbatched tree)."""
  capacity, chance_capacity = tree.nodes.visits.shape[0], tree.chance.node.shape[0]
  nodes, records = tree.num_nodes + order, tree.num_chance + order
  # Each dropped entry at an index of its own (write_returns' indices are distinct).
  at_nodes = jnp.where(valid, nodes, capacity + order)
  at_records = jnp.where(valid, records, chance_capacity + order)
  at_root = jnp.where(valid, 0, capacity + order)
  tree = set_node(tree, at_nodes, expansion, update, 0, 1, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.update(
      ChanceRecords, node=jnp.zeros_like(order), prob=jnp.ones((order.shape[0], 1))), at_records)
  chance = tree_lib.write(chance, tree_lib.update(
      ChanceRecords, child=nodes, reward=expansion.reward, discount=expansion.discount),
      (at_records, 0))
  tree = tree.replace(chance=chance)
  # The backup of each one-edge path: leaf, root slot, chance outcome, then the root in order.
  leaf_g = update.nodes.value
  returns = path_returns(expansion.reward[:, None], expansion.discount[:, None],
                         jnp.ones((order.shape[0], 1), bool), leaf_g)[:, 0]
  before = _RootSlots(tree.slots.visits[0, slots], tree.slots.value[0, slots])
  stats = write_returns(mean_stats(tree), returns, before, slot=(at_root, slots),
                        outcome=(at_records, jnp.zeros_like(order)), leaf=(at_nodes,),
                        leaf_mean=leaf_g)
  root_visits, root_value = tree.nodes.visits[0], tree.nodes.value[0]
  for j in range(order.shape[0]):
    root_value = jnp.where(valid[j], running_mean(root_value, root_visits, returns[j]),
                           root_value)
    root_visits = root_visits + valid[j].astype(root_visits.dtype)
  stats = stats._replace(node_visits=stats.node_visits.at[0].set(root_visits),
                         node_values=stats.node_values.at[0].set(root_value))
  added = jnp.sum(valid, dtype=jnp.int32)
  tree = with_mean_stats(tree, stats)
  return tree.replace(
      slots=tree.slots.replace(chance=tree.slots.chance.at[at_root, slots].set(
          records, mode="drop")),
      num_nodes=tree.num_nodes + added,
      num_chance=tree.num_chance + added,
      nonfinite_estimates=tree.nonfinite_estimates + jnp.sum(update.bad & valid,
                                                             dtype=jnp.int32))


class _RootSlots(NamedTuple):
  """The root slots' statistics before the opening (what :func:`write_returns` reads)."""

  slot_visits: jax.Array
  slot_value: jax.Array


@dataclasses.dataclass(frozen=True)
class MeanBackup(BackupRule):
  """The running-mean backup (``backup="mean"``): one outcome expanded per simulation,
  running means of the sampled returns. It keeps no slot bounds or debias statistics, every
  slot is active, Q starts at 0, and a node's priors never change: the defaults of
  :class:`~jaxsearch.search.backup.BackupRule`'s parts."""

  kind: ClassVar[Backup] = Backup.MEAN

  def check(self, config) -> None:
    """The Bellman backup's options and the rules that read the bounds need it."""
    if config.outcome_rule is OutcomeRule.GAP:
      raise ValueError("outcome_rule='gap' needs backup='bellman' (it reads the bounds)")
    avts = config.avts  # the Bellman options, given beside backup="mean"
    if avts is None:
      return
    if avts.widening:
      raise ValueError("widening=True needs backup='bellman' (it orders slots by q̂1)")
    if avts.max_chance is not None and avts.max_chance != config.max_nodes:
      raise ValueError("max_chance needs backup='bellman' (with the running-mean backup "
                       "every new node comes with a chance record)")

  several_leaves: ClassVar[bool] = True

  def expand_and_backup(self, model, plan, params, keys, tree, path):
    return mean_simulation(model, plan, params, keys, tree, path)

  def expand_and_back_up_walks(self, model, plan, params, keys, tree, paths, walking):
    return mean_walks_simulation(model, plan, params, keys, tree, paths, walking)

  def expand_root_children(self, model, plan, params, estimator_keys, tree, slots, count):
    return expand_root_children(model, plan, params, estimator_keys, tree, slots, count)
