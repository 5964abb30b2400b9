"""The running-mean backup (AlphaZero, MuZero, UCT): returns along the path, running means."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch.enums import Backup, OutcomeRule, PathUpdate
from jaxsearch.game import per_item_keys
from jaxsearch.model import Model
from jaxsearch.search.plan import SearchPlan
from jaxsearch.search.descent import Path, _choose_outcome, unpack_steps
from jaxsearch.search import rows as rows_lib
from jaxsearch.search.backup import SimulationKeys
from jaxsearch.search.expansion import _expand_one, _outcome_probs, last_edge
from jaxsearch.search.nodes import _node_rows, _set_node
from jaxsearch.search.subtree_entropy import _entropy_update
from jaxsearch.tree import ChanceRecords, Tree


def _leaf_value(path: Path, value):
  """``f32[B]`` value of where each simulation ended: the new node's estimate, 0 at a
  terminal node, else the existing leaf's value."""
  return jnp.where(path.expand, value, jnp.where(path.leaf_terminal, 0.0, path.leaf_value))


def _path_ends(tree: Tree, path: Path, leaf_value):
  """``(leaf, leaf_mean, new_record)`` (``i32[B]``, ``f32[B]``, ``i32[B]``): the node a path
  ends on (the existing leaf, or the node the expansion just created), its running mean
  after this simulation, and the chance record the expansion created on the last edge
  (``-1`` where it created none)."""
  leaf = jnp.where(path.expand, tree.num_nodes - 1, path.node_at(path.length))
  leaf_mean = jnp.where(path.expand, leaf_value,
                        _running_mean(path.leaf_value, path.leaf_visits, leaf_value))
  new_record = jnp.where(path.new_chance, tree.num_chance - 1, -1)
  return leaf, leaf_mean, new_record


def _backup(tree: Tree, path: Path, leaf_value, last_outcome) -> Tree:
  """Running means of the returns ``G_d = r_d + γ_d G_{d+1}`` (``G_L`` = leaf value) for the
  nodes, slots and outcomes on every path, leaf to root; ``last_outcome`` ``i32[B]`` is the
  outcome the expansion took on the last edge.

  One level per step of a batched loop that runs as many steps as the longest path: each
  step reads one packed row of the descent's step buffer and writes one row per tree
  (``[B]`` scatters), so the work follows the paths' lengths rather than the path buffers'
  size ``D`` (``[B, D]`` arrays and scatters, mostly of dropped rows, cost their full size on
  every simulation). Reads the chance records after :func:`_expand_one` wrote the new edge;
  the statistics before this simulation come from the path, never from the arrays being
  written. mctx's order of operations.

  The path's last node is the existing leaf or the node :func:`_expand_one` just created
  (index ``num_nodes - 1``, visits 0 as allocated): it gets visits 1 and the leaf value.
  """
  nodes, slots, chance = tree.nodes, tree.slots, tree.chance
  leaf, leaf_mean, new_record = _path_ends(tree, path, leaf_value)
  last = path.length - 1

  def level(carry):
    depth, g, node_visits, node_values, slot_visits, slot_values, outcome_visits = carry
    active = depth > 0
    depth = jnp.where(active, depth - 1, depth)
    step = path.step_at(depth)  # [B]: one gather for the whole edge
    at_last = depth == last
    record = jnp.where(at_last & (new_record >= 0), new_record, jnp.maximum(step.chance, 0))
    outcome = jnp.where(at_last, last_outcome, jnp.maximum(step.outcome, 0))
    g = jnp.where(active, rows_lib.take(chance.reward, record, outcome) +
                  rows_lib.take(chance.discount, record, outcome) * g, g)
    node = jnp.where(active, path.node_at(depth), tree.max_nodes)
    slot = jnp.maximum(step.slot, 0)
    # One flat index per array shape, shared by the visits and the value written there.
    at_node = rows_lib.flat_index(node_visits.shape, node)
    at_slot = rows_lib.flat_index(slot_visits.shape, node, slot)
    return (depth, g,
            rows_lib.put_flat(node_visits, at_node, 1, depth=1, add=True),
            rows_lib.put_flat(node_values, at_node,
                              _running_mean(step.node_value, step.node_visits, g),
                              depth=1),
            rows_lib.put_flat(slot_visits, at_slot, 1, depth=2, add=True),
            rows_lib.put_flat(slot_values, at_slot,
                              _running_mean(step.slot_value, step.slot_visits, g),
                              depth=2),
            rows_lib.put(outcome_visits, (jnp.where(active, record, tree.max_chance), outcome),
                         1, add=True))

  init = (path.length, leaf_value, rows_lib.put(nodes.visits, (leaf,), 1, add=True),
          rows_lib.put(nodes.value, (leaf,), leaf_mean), slots.visits, slots.value,
          chance.visits)
  _, _, node_visits, node_values, slot_visits, slot_values, outcome_visits = jax.lax.while_loop(
      lambda carry: jnp.any(carry[0] > 0), level, init)
  return tree.replace(nodes=nodes.replace(visits=node_visits, value=node_values),
                      slots=slots.replace(visits=slot_visits, value=slot_values),
                      chance=chance.replace(visits=outcome_visits))


def _running_mean(value, count, g):
  """The running mean after one more return ``g``, from the mean and count before it."""
  count = count.astype(jnp.float32)
  return (value * count + g) / (count + 1.0)


# Levels of the whole-path return recursion between two barriers (see _backup_whole_path).
_RETURNS_BLOCK = 8


def _backup_whole_path(tree: Tree, path: Path, leaf_value, last_outcome) -> Tree:
  """:func:`_backup`'s updates as one ``[B, D]`` write per array, with no loop.

  The returns ``G_d`` come from a reverse recursion over the path buffer's ``D`` columns,
  unrolled at trace time into one elementwise kernel (the same operations in the same order
  as the loop's, so the same values); entries past a path's length are dropped by the
  writes. On a GPU each trip of :func:`_backup`'s loop costs a round trip to the host for
  its condition, more than these writes of the whole buffer; on a CPU the loop is faster.
  """
  nodes, slots, chance = tree.nodes, tree.slots, tree.chance
  steps, length = unpack_steps(path.steps), path.length  # [B, D] each, [B]
  max_depth = path.steps.shape[1]
  batch_ids = jnp.arange(tree.batch_size)[:, None]
  depths = jnp.arange(max_depth)[None, :]
  on_path = depths < length[:, None]  # [B, D]
  leaf, leaf_mean, new_record = _path_ends(tree, path, leaf_value)
  at_last = depths == (length - 1)[:, None]
  record = jnp.where(at_last & (new_record >= 0)[:, None], new_record[:, None],
                     jnp.maximum(steps.chance, 0))
  outcome = jnp.where(at_last, last_outcome[:, None], jnp.maximum(steps.outcome, 0))
  reward = chance.reward[batch_ids, record, outcome]  # [B, D]
  discount = chance.discount[batch_ids, record, outcome]
  # Barriers: the gathers, and the recursion every few levels, each in kernels of their own
  # rather than fused whole into the kernel writing ``returns``. Measured only together with
  # the unique indices below (Connect Four, B = 32768 on an H200: 21 → 86 M simulations/s);
  # neutral on a CPU. The values are the same either way.
  reward, discount = jax.lax.optimization_barrier((reward, discount))
  returns, g = [None] * max_depth, leaf_value
  for count, depth in enumerate(reversed(range(max_depth)), start=1):
    g = jnp.where(on_path[:, depth], reward[:, depth] + discount[:, depth] * g, g)
    returns[depth] = g
    if count % _RETURNS_BLOCK == 0:
      g = jax.lax.optimization_barrier(g)
  returns = jnp.stack(returns, axis=1)
  node = jnp.concatenate([jnp.zeros_like(steps.child[:, :1]), steps.child[:, :-1]], axis=1)
  # Past the end: dropped, each depth at an index of its own. A path visits each node once,
  # so every write below is at distinct indices, and XLA is told so (no atomics or sorting
  # for repeated indices on a GPU).
  node = jnp.where(on_path, node, tree.max_nodes + depths)
  slot = jnp.maximum(steps.slot, 0)
  unique = {"mode": "drop", "unique_indices": True}
  node_visits = nodes.visits.at[batch_ids[:, 0], leaf].add(1, **unique)
  node_values = nodes.value.at[batch_ids[:, 0], leaf].set(leaf_mean, **unique)
  outcome_record = jnp.where(on_path, record, tree.max_chance)
  return tree.replace(
      nodes=nodes.replace(
          visits=node_visits.at[batch_ids, node].add(1, **unique),
          value=node_values.at[batch_ids, node].set(
              _running_mean(steps.node_value, steps.node_visits, returns), **unique)),
      slots=slots.replace(
          visits=slots.visits.at[batch_ids, node, slot].add(1, **unique),
          value=slots.value.at[batch_ids, node, slot].set(
              _running_mean(steps.slot_value, steps.slot_visits, returns), **unique)),
      chance=chance.replace(
          visits=chance.visits.at[batch_ids, outcome_record, outcome].add(1, mode="drop")))


def _mean_simulation(model: Model, plan: SearchPlan, params, keys: SimulationKeys, tree: Tree,
                     path: Path) -> Tree:
  """Expand one outcome (chosen by ``plan.outcome_rule`` where the slot is new), evaluate it
  and back up the running means (and the subtree entropy where kept)."""
  batch_size = tree.batch_size
  batch_ids = jnp.arange(batch_size)
  last = jnp.maximum(path.length - 1, 0)
  with jax.named_scope("expansion"):  # the last edge, and the outcome it takes
    parent_states, actions = last_edge(tree, path, plan)
    if plan.num_outcomes == 1:
      probs = jnp.ones((batch_size, 1), jnp.float32)
      outcomes = path.outcomes[batch_ids, last]
    else:
      probs = _outcome_probs(model, params, parent_states, actions, batch_size)
      fresh_outcomes = jax.vmap(_choose_outcome, in_axes=(0, None, 0, None))(
          probs, jnp.zeros((plan.num_outcomes,)), per_item_keys(keys.outcome, batch_size),
          plan.outcome_rule)
      outcomes = jnp.where(path.new_chance, fresh_outcomes, path.outcomes[batch_ids, last])
      path = path.replace(outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
  with jax.named_scope("estimator"):
    expansion = model.step(params, keys.estimator, parent_states, actions, outcomes)
    # Evaluated once: XLA would otherwise recompute a cheap estimator inside every fusion
    # that reads its output (the sanitising checks, the prior softmax, the writes). XLA's CPU
    # compiler removes barriers before it fuses, so there it is recomputed; forcing it out
    # through a loop of one trip measured 0.95-1.02x the time on a CPU (noise): not done.
    expansion = jax.lax.optimization_barrier(expansion)
  with jax.named_scope("expansion"):
    rows = _node_rows(expansion, plan)
    tree = jax.vmap(_expand_one)(tree, path, expansion, rows, probs)
  with jax.named_scope("backup"):
    whole = plan.loops.path_update is PathUpdate.WHOLE_PATH
    backup = _backup_whole_path if whole else _backup
    tree = backup(tree, path, _leaf_value(path, rows.nodes.value), outcomes)
  if plan.entropy is not None:
    tree = _entropy_update(tree, path, plan)
  return tree


def _expand_root_children(model: Model, plan: SearchPlan, params, estimator_keys, tree: Tree,
                          slots, count) -> Tree:
  """The first ``count[b]`` simulations of tree ``b``, each expanding root slot ``slots[b, j]``
  (``i32[B, W]``), as one step (:mod:`jaxsearch.search.opening`): what
  :func:`_mean_simulation` would write for each path of one edge, in order.

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
    expansion = jax.lax.optimization_barrier(expansion)  # see _mean_simulation
  with jax.named_scope("expansion"):
    # The node rows of one [B·W] batch, as a simulation builds those of its [B] (XLA may round
    # a reduction over B·W rows differently in the last bit: tests/test_opening.py).
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), expansion)
    rows = jax.tree.map(lambda x: x.reshape(slots.shape + x.shape[1:]), _node_rows(flat, plan))
    tree = jax.vmap(_write_root_children, in_axes=(0, 0, 0, 0, 0, None))(
        tree, expansion, rows, slots, order[None, :] < count[:, None], order)
  return tree


def _write_root_children(tree: Tree, expansion, rows, slots, valid, order) -> Tree:
  """One tree's part of :func:`_expand_root_children`: children ``j`` with ``valid[j]`` become
  nodes ``num_nodes + j`` under chance records ``num_chance + j`` of root slots ``slots[j]``,
  and each one's return is backed up into its slot and, in order, the root's running mean
  (``[W]`` rows; unbatched tree)."""
  capacity, chance_capacity = tree.nodes.visits.shape[0], tree.chance.node.shape[0]
  nodes, records = tree.num_nodes + order, tree.num_chance + order
  at_nodes = jnp.where(valid, nodes, capacity)
  at_records = jnp.where(valid, records, chance_capacity)
  at_root = jnp.where(valid, 0, capacity)
  tree = _set_node(tree, at_nodes, expansion, rows, 0, 1, stats=False)
  chance = tree_lib.write(tree.chance, tree_lib.rows(
      ChanceRecords, node=jnp.zeros_like(order), prob=jnp.ones((order.shape[0], 1))), at_records)
  chance = tree_lib.write(chance, tree_lib.rows(
      ChanceRecords, child=nodes, reward=expansion.reward, discount=expansion.discount),
      (at_records, 0))
  # The backup of each one-edge path: leaf, root slot, chance outcome, then the root in order.
  leaf_value = rows.nodes.value
  returns = expansion.reward + expansion.discount * leaf_value
  slot_visits, slot_values = tree.slots.visits[0, slots], tree.slots.value[0, slots]
  root_visits, root_value = tree.nodes.visits[0], tree.nodes.value[0]
  for j in range(order.shape[0]):
    root_value = jnp.where(valid[j], _running_mean(root_value, root_visits, returns[j]),
                           root_value)
    root_visits = root_visits + valid[j].astype(root_visits.dtype)
  node_stats, slot_stats = tree.nodes, tree.slots
  added = jnp.sum(valid, dtype=jnp.int32)
  return tree.replace(
      nodes=node_stats.replace(
          visits=node_stats.visits.at[at_nodes].add(1, mode="drop").at[0].set(root_visits),
          value=node_stats.value.at[at_nodes].set(leaf_value, mode="drop").at[0].set(root_value)),
      slots=slot_stats.replace(
          visits=slot_stats.visits.at[at_root, slots].add(1, mode="drop"),
          value=slot_stats.value.at[at_root, slots].set(
              _running_mean(slot_values, slot_visits, returns), mode="drop"),
          chance=slot_stats.chance.at[at_root, slots].set(records, mode="drop")),
      chance=chance.replace(visits=chance.visits.at[at_records, 0].add(1, mode="drop")),
      num_nodes=tree.num_nodes + added,
      num_chance=tree.num_chance + added,
      nonfinite_estimates=tree.nonfinite_estimates + jnp.sum(rows.bad & valid,
                                                             dtype=jnp.int32))


@dataclasses.dataclass(frozen=True)
class MeanBackup:
  """The running-mean backup (``backup="mean"``; :class:`~jaxsearch.search.backup.BackupRule`):
  one outcome expanded per simulation, running means of the sampled returns. It keeps no
  slot bounds or debias statistics, every slot is active, Q starts at 0, and a node's priors
  never change."""

  kind: ClassVar[Backup] = Backup.MEAN
  widening: ClassVar[bool] = False
  keeps_bounds: ClassVar[bool] = False
  static_priors: ClassVar[bool] = True

  def check(self, config) -> None:
    """The AVTS options and rules that read the bounds need the Bellman backup."""
    avts = config.avts
    if config.outcome_rule is OutcomeRule.GAP:
      raise ValueError("outcome_rule='gap' needs backup='bellman' (it reads the bounds)")
    if avts.widening:
      raise ValueError("widening=True needs backup='bellman' (it orders slots by q̂1)")
    if avts.max_chance is not None and avts.max_chance != config.max_nodes:
      raise ValueError("max_chance needs backup='bellman' (with the running-mean backup "
                       "every new node comes with a chance record)")

  def nodes_per_expansion(self, num_outcomes: int) -> int:
    del num_outcomes  # one outcome per simulation
    return 1

  def tree_parts(self) -> dict:
    return {"num_buckets": None, "slot_bounds": False}

  def missing_action_values(self, batch_size: int, num_actions: int) -> jax.Array:
    return jnp.zeros((batch_size, num_actions), jnp.float32)

  def usable_action_values(self, legal, action_values, finite, value):
    del value  # q̂1 only informs the rule here: a non-finite one is 0, the action stays
    return legal, jnp.where(finite, action_values, 0.0)

  def slot_ranking(self, logits, action_values) -> tuple[jax.Array, int]:
    del action_values
    return logits, 0  # by prior logit; no bound slots (nothing reads the bounds)

  def node_values(self, terminal, value, slot_legal, slot_action_value, num_active):
    del terminal, slot_legal, num_active  # V: the estimator's value; Q: running means from 0
    return value, jnp.zeros_like(slot_action_value)

  def fixed_fields(self, slots_are_actions: bool) -> frozenset:
    # Q starts at 0; with K = A every legal action has a slot: nothing is ever cut.
    return frozenset({"slot_value"} | ({"cut_upper"} if slots_are_actions else set()))

  def view_stats(self, tree, at, batch_ids, node_ids, legal, child_values, child_visits,
                 action_values, *, plan):
    del tree, at, batch_ids, node_ids, plan
    debiased = jnp.where(child_visits > 0, child_values, action_values)
    return (legal, debiased, jnp.zeros_like(child_values),
            jnp.full_like(child_values, tree_lib.NO_UPPER))

  def outcome_weights(self, tree, batch_ids, safe_chance, probs, *, plan):
    del tree, batch_ids, safe_chance, plan
    return probs, None

  def expand_and_backup(self, model, plan, params, keys, tree, path):
    return _mean_simulation(model, plan, params, keys, tree, path)

  def expand_root_children(self, model, plan, params, estimator_keys, tree, slots, count):
    return _expand_root_children(model, plan, params, estimator_keys, tree, slots, count)

  def back_up_stretch(self, model, plan, params, estimator_keys, tree, path, owner, choose):
    from jaxsearch.search.backup_mean_stretch import back_up_stretch  # it imports this module
    return back_up_stretch(model, plan, params, estimator_keys, tree, path, owner, choose)

  def root_slots(self, tree, config):
    del config
    legal, visits, values = tree.slots.legal[:, 0], tree.slots.visits[:, 0], tree.slots.value[:, 0]
    return legal & (visits > 0), jnp.where(legal, values, 0.0), None
