"""The Bellman backup (AVTS, ``docs/algorithms.md`` §2): q̂2, debias statistics, bounds, solved
flags, widening.

:class:`BellmanBackup` is the rule (``SearchConfig(backup=BellmanBackup(widening=True))``); its
options are its fields. ``AvtsOptions`` is the same class under its former name
(``SearchConfig(backup="bellman", avts=AvtsOptions(...))`` still builds it)."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import debias as debias_lib
from jaxsearch import tree as tree_lib
from jaxsearch.model import Model
from jaxsearch.enums import Backup, OutcomeRule, Variance, coerce
from jaxsearch.search.backup import BackupRule
from jaxsearch.search.descent import Path
from jaxsearch.search.estimates import node_stats, slot_estimates
from jaxsearch.search.expansion import (expand_all_leaves, expand_all_outcomes, step_outcomes,
                                        outcome_probs, last_edge, walk_edges)
from jaxsearch.search.walks import end_unreached, last_edges, share_leaves
from jaxsearch.tree import BoundStats, NodeStats, SlotBounds, SlotStats, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds this rule
  from jaxsearch.search.plan import SearchPlan


@struct.dataclass
class _Level:
  """What the Bellman backup changes at one node of a path (one tree, one level)."""

  slot_value: jax.Array  # f32[], the taken slot's new q̂2
  slot_solved: jax.Array  # bool[]
  slot_bound: jax.Array  # f32[]
  stats: debias_lib.DebiasStats  # [V]
  num_active: jax.Array  # i32[]
  value: jax.Array  # f32[], V(s) = max over active slots of q̂3
  solved: jax.Array  # bool[]
  bound: jax.Array  # f32[]
  slot_upper: jax.Array  # f32[]
  upper: jax.Array  # f32[]


class BellmanNode(NamedTuple):
  """One node's ``[K]`` slot entries and scalars, as the Bellman update reads them."""

  tree_values: jax.Array  # f32[K] q̂2
  visits: jax.Array  # i32[K]
  legal: jax.Array  # bool[K]
  solved: jax.Array  # bool[K]
  num_active: jax.Array  # i32[]
  stats: debias_lib.DebiasStats  # [V]
  slot_bounds: jax.Array  # f32[K]
  node_bound: jax.Array  # f32[]
  slot_uppers: jax.Array  # f32[K]
  node_upper: jax.Array  # f32[]
  node_cut_upper: jax.Array  # f32[]


class BellmanEdge(NamedTuple):
  """The simulated slot and its chance record's ``[O]`` outcome entries, with the children's
  current values, bounds and solved flags."""

  slot: jax.Array  # i32[]
  probs: jax.Array  # f32[O]
  rewards: jax.Array  # f32[O]
  discounts: jax.Array  # f32[O]
  child_values: jax.Array  # f32[O]
  child_bounds: jax.Array  # f32[O]
  child_uppers: jax.Array  # f32[O]
  child_solved: jax.Array  # bool[O]


def _expected(edge: BellmanEdge, child_values) -> jax.Array:
  """``Σ_o p(o) (r + γ·x_o)`` over the possible outcomes."""
  possible = edge.probs > 0
  return jnp.sum(jnp.where(possible, edge.probs * (edge.rewards + edge.discounts * child_values),
                           0.0))


def _record_change(node: BellmanNode, slot, q2_new, slot_solved, *,
                   plan: SearchPlan) -> debias_lib.DebiasStats:
  """The debias statistics after the slot's q̂2 moved to ``q2_new`` (its visit bucket)."""
  stats = node.stats
  visits_before = node.visits[slot]
  change = q2_new - node.tree_values[slot]
  options = plan.backup
  if options.variance is Variance.CENTRED:
    debiased_change = None  # Welford's centred squares of the changes
  elif options.debias and options.variance is Variance.AVTS:
    # q̂3 after minus q̂3 before; a slot this visit solves is exact: q̂3 = q̂2, no correction.
    correction_after = jnp.where(slot_solved, 0.0,
                                 debias_lib.correction(stats, visits_before + 1))
    debiased_change = change + correction_after - debias_lib.correction(stats, visits_before)
  else:
    debiased_change = change  # q̂3 = q̂2 (no debias), or the reference code's raw change
  return debias_lib.record(stats, visits_before + 1, change, debiased_change)


def _without_variance(plan: SearchPlan) -> BellmanBackup:
  """The plan's rule with ``variance="off"`` (V(s) needs q̂3, not its variance)."""
  return dataclasses.replace(plan.backup, variance=Variance.OFF)


def _widen(num_active, slot, num_candidates):
  """Progressive widening: choosing the newest slot activates the next candidate."""
  num_active = jnp.where((slot == num_active - 1) & (num_active < num_candidates),
                         num_active + 1, num_active)
  # A rule that sees inactive slots activates every slot up to the one it chose.
  return jnp.maximum(num_active, jnp.minimum(slot + 1, num_candidates))


def bellman_update(node: BellmanNode, edge: BellmanEdge, *, plan: SearchPlan) -> _Level:
  """One node's Bellman update after its slot ``edge.slot`` was simulated (one tree)."""
  slot = edge.slot
  possible = edge.probs > 0
  q2_new = _expected(edge, edge.child_values)
  slot_solved = jnp.all(jnp.where(possible, edge.child_solved, True))
  stats = _record_change(node, slot, q2_new, slot_solved, plan=plan)
  tree_values = node.tree_values.at[slot].set(q2_new)
  visits = node.visits.at[slot].add(1)
  solved = node.solved.at[slot].set(slot_solved)
  legal = node.legal
  num_candidates = jnp.sum(legal).astype(jnp.int32)
  num_active = node.num_active
  if plan.backup.widening:
    num_active = _widen(num_active, slot, num_candidates)
  active = legal & (jnp.arange(legal.shape[0]) < num_active)
  debiased, _ = slot_estimates(stats, tree_values, visits, solved, num_active,
                               options=_without_variance(plan))
  value = jnp.max(jnp.where(active, debiased, -jnp.inf))
  value = jnp.where(jnp.any(active), value, 0.0)
  node_solved = (jnp.sum(active) >= num_candidates) & jnp.all(jnp.where(active, solved, True))
  # With a negative discount (zero-sum games) a child's lower bound bounds the parent from
  # above and vice versa.
  flip = edge.discounts < 0
  child_bounds = jnp.where(flip, edge.child_uppers, edge.child_bounds)
  child_uppers = jnp.where(flip, edge.child_bounds, edge.child_uppers)
  slot_bound = jnp.maximum(node.slot_bounds[slot], _expected(edge, child_bounds))
  # Optimistic bound: a slot's is the expectation of its children's; the node's is the best of
  # its slots' (each starts at the game's optimistic value or its action's bound) and of the
  # actions left out of the slots.
  slot_upper = jnp.minimum(node.slot_uppers[slot], _expected(edge, child_uppers))
  best_upper = jnp.max(jnp.where(legal, node.slot_uppers.at[slot].set(slot_upper), -jnp.inf))
  upper = jnp.minimum(node.node_upper, jnp.maximum(best_upper, node.node_cut_upper))
  return _Level(slot_value=q2_new, slot_solved=slot_solved, slot_bound=slot_bound, stats=stats,
                num_active=num_active, value=value, solved=node_solved,
                bound=jnp.maximum(node.node_bound, slot_bound), slot_upper=slot_upper,
                upper=upper)


def _bellman_node(tree: Tree, rows, node) -> BellmanNode:
  """``[B]`` batched :class:`BellmanNode` of ``node[B]``."""
  slots, slot_bounds, bounds = tree.slots, tree.slot_bounds, tree.bounds
  return BellmanNode(
      slots.value[rows, node], slots.visits[rows, node], slots.legal[rows, node],
      slot_bounds.solved[rows, node], tree.nodes.num_active[rows, node],
      node_stats(tree, rows, node), slot_bounds.bound[rows, node], bounds.bound[rows, node],
      slot_bounds.upper[rows, node], bounds.upper[rows, node], bounds.cut_upper[rows, node])


class _Carried(NamedTuple):
  """What the leaf-to-root loop carries up: the path child's new statistics (``[B]``)."""

  value: jax.Array
  bound: jax.Array
  upper: jax.Array
  solved: jax.Array


def _bellman_edge(tree: Tree, path: Path, edge_chances, depth, level_index,
                  child: _Carried) -> BellmanEdge:
  """``[B]`` batched :class:`BellmanEdge` of the path edge at ``level[B]``: below the deepest edge
  the tree holds the children's statistics; above it, the path child's are ``child``'s."""
  rows = jnp.arange(tree.batch_size)
  chance = edge_chances[rows, level_index]
  records, nodes, bounds = tree.chance, tree.nodes, tree.bounds
  kids = records.child[rows, chance]
  safe_kids = jnp.maximum(kids, 0)
  carried = ((jnp.arange(tree.num_outcomes) == path.outcomes[rows, level_index][:, None]) &
             (depth < path.length - 1)[:, None])

  def kid(carried_value, field):
    return jnp.where(carried, carried_value[:, None], field[rows[:, None], safe_kids])

  return BellmanEdge(
      path.slots[rows, level_index], records.prob[rows, chance], records.reward[rows, chance],
      records.discount[rows, chance], kid(child.value, nodes.value),
      kid(child.bound, bounds.bound), kid(child.upper, bounds.upper),
      kid(child.solved, bounds.solved) & (kids >= 0))


def _bellman_levels(tree: Tree, path: Path, edge_chances, plan: SearchPlan) -> _Level:
  """``[B, D]`` Bellman updates along every path, leaf to root.

  Batched by hand like the descent: the loop carries the child's new value, bound and
  solved flag up the path and collects per-level results; the tree is only read (it already
  holds the new nodes), and written once afterwards by :func:`_bellman_write_one`.
  """
  batch_size, depth_limit = path.slots.shape
  rows = jnp.arange(batch_size)
  level_fn = jax.vmap(functools.partial(bellman_update, plan=plan))
  zeros = jnp.zeros((batch_size,), jnp.int32)
  empty = jax.tree.map(
      lambda x: jnp.zeros((batch_size, depth_limit) + x.shape[1:], x.dtype),
      jax.eval_shape(level_fn, _bellman_node(tree, rows, zeros),
                     BellmanEdge(path.slots[:, 0], *[tree.chance.prob[:, 0]] * 6,
                              tree.chance.child[:, 0] >= 0)))

  def body(carry):
    depth, child, levels = carry
    depth = depth - 1
    live = depth >= 0
    level_index = jnp.maximum(depth, 0)
    node = jnp.maximum(path.nodes[rows, level_index], 0)
    level = level_fn(_bellman_node(tree, rows, node),
                     _bellman_edge(tree, path, edge_chances, depth, level_index, child))
    out_level = jnp.where(live, depth, depth_limit)
    levels = jax.tree.map(lambda buf, x: buf.at[rows, out_level].set(x, mode="drop"), levels,
                          level)
    new = _Carried(level.value, level.bound, level.upper, level.solved)
    return (jnp.maximum(depth, 0), jax.tree.map(functools.partial(jnp.where, live), new, child),
            levels)

  zeros = jnp.zeros((batch_size,), jnp.float32)
  init = (path.length, _Carried(zeros, zeros, zeros, jnp.zeros((batch_size,), bool)), empty)
  *_, levels = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), body, init)
  return levels


def _bellman_write_one(tree: Tree, path: Path, edge_chances, levels: _Level) -> Tree:
  """Writes one tree's ``[D]`` level updates and visit counts."""
  capacity = tree.nodes.visits.shape[0]
  depth_limit = path.slots.shape[0]
  on_path = jnp.arange(depth_limit) < path.length
  node_ids = jnp.where(on_path, jnp.maximum(path.nodes[:-1], 0), capacity)
  existing_leaf = jnp.where(path.expand, capacity, path.nodes[path.length])
  at_slots = (node_ids, path.slots)
  nodes = tree_lib.write(tree.nodes, tree_lib.update(
      NodeStats, value=levels.value, num_active=levels.num_active), node_ids)
  slots = tree_lib.write(tree.slots, tree_lib.update(SlotStats, value=levels.slot_value), at_slots)
  # A fresh expansion's outcomes were not chosen by the outcome rule: no visit to count.
  counted = on_path & ~((jnp.arange(depth_limit) == path.length - 1) & path.expand)
  return tree.replace(
      nodes=nodes.replace(visits=nodes.visits.at[
          jnp.concatenate([node_ids, existing_leaf[None]])].add(1, mode="drop")),
      bounds=tree_lib.write(tree.bounds, tree_lib.update(
          BoundStats, solved=levels.solved, bound=levels.bound, upper=levels.upper), node_ids),
      debias=tree_lib.write(tree.debias, levels.stats, node_ids),
      slots=slots.replace(visits=slots.visits.at[at_slots].add(1, mode="drop")),
      slot_bounds=tree_lib.write(tree.slot_bounds, SlotBounds(
          solved=levels.slot_solved, bound=levels.slot_bound, upper=levels.slot_upper),
                                 at_slots),
      chance=tree.chance.replace(visits=tree.chance.visits.at[
          jnp.where(counted, edge_chances, capacity), path.outcomes].add(1, mode="drop")),
  )


def bellman_simulation(model: Model, plan: SearchPlan, params, estimator_key, tree: Tree,
                        path: Path) -> Tree:
  """Expand (all outcomes, one estimator call for ``B·O`` states) and Bellman-backup. Every
  possible outcome is expanded at once: no key picks one."""
  batch_size = tree.batch_size
  num_outcomes = plan.num_outcomes
  batch_ids = jnp.arange(batch_size)
  last = jnp.maximum(path.length - 1, 0)
  with jax.named_scope("expansion"):
    parent_states, actions = last_edge(tree, path, plan)
    if num_outcomes == 1:
      probs = jnp.ones((batch_size, 1), jnp.float32)
    else:
      probs = outcome_probs(model, params, parent_states, actions, batch_size)
    possible = probs > 0
    # All possible outcomes get a node now; where they (or their chance record) do not fit,
    # the tree stops growing.
    fits = ((tree.num_nodes + jnp.sum(possible, axis=-1) <= tree.max_nodes)
            & (tree.num_chance < tree.max_chance))
    full = path.expand & ~fits
    first_outcome = jnp.argmax(possible, axis=-1).astype(jnp.int32)
    outcomes = jnp.where(path.expand, first_outcome, path.outcomes[batch_ids, last])
    path = path.replace(length=jnp.where(full, last, path.length), expand=path.expand & fits,
                        new_chance=path.new_chance & fits,
                        outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
    expansion, update = step_outcomes(model, plan, params, estimator_key, parent_states,
                                       actions, possible & path.expand[:, None],
                                       plan.backup.expand_chunk)

    def per_tree(x):
      return x.reshape((batch_size, num_outcomes) + x.shape[1:])

    tree, edge_chances = jax.vmap(expand_all_outcomes)(
        tree, path, jax.tree.map(per_tree, expansion), jax.tree.map(per_tree, update), probs)
  with jax.named_scope("backup"):
    levels = _bellman_levels(tree, path, edge_chances, plan)
    return jax.vmap(_bellman_write_one)(tree, path, edge_chances, levels)


def _expand_walks(model: Model, plan: SearchPlan, params, estimator_key, tree: Tree,
                  paths: Path):
  """``(tree, paths, edge_chances i32[L, B, D])``: every new leaf of a step's ``L`` walks
  (``paths`` ``[L, B]``) expanded once with all its outcomes (one :func:`step_outcomes` over
  the ``L·B`` slots), in walk order while they fit; a walk that reaches a leaf an earlier one
  expands keeps ``expand`` and backs up through that leaf's record."""
  num_walks, batch_size = paths.length.shape
  flat = lambda x: x.reshape((num_walks * batch_size,) + x.shape[2:])  # noqa: E731
  parent_states, actions, probs = walk_edges(model, plan, params, tree, paths)
  possible = (probs > 0).reshape(num_walks, batch_size, -1)
  first_outcome = jnp.argmax(possible, axis=-1).astype(jnp.int32)
  leaves = share_leaves(tree, paths, first_outcome, jnp.sum(possible, axis=-1))
  paths = end_unreached(paths, leaves)
  last = jnp.maximum(paths.length - 1, 0)
  outcomes = jnp.where(leaves.reaches, first_outcome, last_edges(paths)[2])
  paths = paths.replace(outcomes=jnp.where(jnp.arange(plan.max_depth) == last[..., None],
                                           outcomes[..., None], paths.outcomes))
  expansion, update = step_outcomes(model, plan, params, estimator_key, parent_states, actions,
                                  flat(possible & leaves.creates[..., None]),
                                  plan.backup.expand_chunk)
  # [L·B·O, ...] walk-major to [B, L, O, ...], and [L, B, ...] to [B, L, ...].
  per_tree = lambda x: jnp.swapaxes(x.reshape(  # noqa: E731
      (num_walks, batch_size, plan.num_outcomes) + x.shape[1:]), 0, 1)
  by_tree = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
  parent, slot, _ = last_edges(paths)
  tree = jax.vmap(expand_all_leaves)(
      tree, *jax.tree.map(per_tree, (expansion, update)),
      by_tree(probs.reshape(num_walks, batch_size, -1)),
      by_tree(parent), by_tree(slot), by_tree(paths.length), jax.tree.map(by_tree, leaves))
  new_edge = (jnp.arange(plan.max_depth) == last[..., None]) & leaves.reaches[..., None]
  edge_chances = jnp.maximum(jnp.where(new_edge, leaves.record[..., None], paths.chances), 0)
  return tree, paths, edge_chances


def bellman_walks_simulation(model: Model, plan: SearchPlan, params, estimator_key, tree: Tree,
                             paths: Path, walking) -> Tree:
  """A step of ``L`` paths per tree (``paths`` ``[L, B]``; ``walking`` ``bool[L, B]`` or
  ``None``): the new leaves expanded with all their outcomes (:func:`_expand_walks`), then the
  Bellman backup of each path in walk order, each reading the tree the earlier ones left
  (:meth:`BellmanBackup.expand_and_back_up_walks`)."""
  with jax.named_scope("expansion"):
    tree, paths, edge_chances = _expand_walks(model, plan, params, estimator_key, tree, paths)
  if walking is not None:
    # A path of no edge whose leaf is new writes nothing: the walks that sit out.
    paths = paths.replace(length=jnp.where(walking, paths.length, 0),
                          expand=paths.expand | ~walking)

  def back_up(walk, tree):
    path = jax.tree.map(lambda x: x[walk], paths)
    levels = _bellman_levels(tree, path, edge_chances[walk], plan)
    return jax.vmap(_bellman_write_one)(tree, path, edge_chances[walk], levels)

  with jax.named_scope("backup"):
    return jax.lax.fori_loop(0, paths.length.shape[0], back_up, tree)


def _positive_int(value, name: str) -> None:
  if not isinstance(value, int) or isinstance(value, bool) or value < 1:
    raise ValueError(f"{name} must be a positive int, got {value!r}")


@dataclasses.dataclass(frozen=True)
class BellmanBackup(BackupRule):
  """The Bellman backup (``backup="bellman"``, AVTS): every outcome of an expanded slot at
  once, ``q̂2(s,a) = Σ_o p(o)(r + γ V(s_o))`` recomputed leaf to root with ``V`` the best
  debiased value of the active slots, debias statistics, bounds and solved flags, widening.
  Needs estimators that return ``action_values``.

  Attributes:
    widening: progressive widening: a node starts with its best slot by q̂1 and activates
      the next whenever the newest (unvisited) one is chosen.
    debias: subtract the expected remaining drift (off: q̂3 is q̂2).
    variance: :class:`~jaxsearch.enums.Variance`: ``"avts"`` (the default: squared changes
      of q̂3 after subtracting the bucket's bias mean from *before* the record, so a bucket's
      first record adds the whole drift — inflated, and measured better for Thompson on
      Wordle and Mastermind), ``"centred"`` (the AVTS article's: changes centred on the
      updated bias, Welford, with a cold start), ``"reference"`` (the reference code's
      quirks, :mod:`jaxsearch.debias`) or ``"off"`` (σ² = 0: Thompson becomes greedy).
    num_buckets: ``V``, visit-count buckets of the debias statistics (the last absorbs the
      tail).
    bound_slots: of the ``K`` slots, how many go to the best admissible action bounds
      (``Estimate.action_bounds``) among the actions q̂1 did not place (none without bounds).
      A cut action's bound floors its node's optimistic bound, so a proof needs the actions
      whose bounds beat the optimum in slots, and q̂1 ranks some of them low (Mastermind 4×6
      after ``1123``: 96 of 128 slots close every sub-problem's proof).
    max_chance: ``C``, chance records per tree (``None``: ``max_nodes``). Expanding a slot
      creates one record holding all its possible outcomes' nodes, so a tree of ``N`` nodes
      holds about ``N / (outcomes per expansion)`` records: with many outcomes (Wordle's 243
      feedbacks, 4.9 KB a record) a smaller ``C`` saves most of the tree's memory. A tree
      whose records run out stops growing, as when its nodes do.
    expand_chunk: the outcome states of one expansion step (``B·O`` of them) are stepped and
      evaluated ``expand_chunk`` at a time, and only the possible outcomes of the trees that
      expand (``p > 0``), each chunk reduced to its ``K`` slots before the next: the
      estimator's ``[·, A]`` outputs never exist for all ``B·O`` states at once. Where
      ``B·O <= expand_chunk`` all are evaluated in one call.
  """

  widening: bool = False
  debias: bool = True
  variance: Variance = Variance.AVTS
  num_buckets: int = 32
  bound_slots: int = 0
  max_chance: Optional[int] = None
  expand_chunk: int = 256
  kind: ClassVar[Backup] = Backup.BELLMAN
  keeps_bounds: ClassVar[bool] = True
  static_priors: ClassVar[bool] = False  # solved slots leave the legal set; widening adds

  def __post_init__(self):
    object.__setattr__(self, "variance", coerce(Variance, self.variance, "variance"))
    _positive_int(self.num_buckets, "num_buckets")
    _positive_int(self.expand_chunk, "expand_chunk")
    if not isinstance(self.bound_slots, int) or self.bound_slots < 0:
      raise ValueError(f"bound_slots must be an int in [0, num_slots), got {self.bound_slots!r}")

  def check(self, config) -> None:
    if config.entropy is not None:
      raise ValueError("subtree_entropy needs backup='mean' (it is updated on the mean path)")

  def nodes_per_expansion(self, num_outcomes: int) -> int:
    return num_outcomes  # all outcomes of a slot at once

  def chance_capacity(self, max_nodes: int) -> int:
    return max_nodes if self.max_chance is None else self.max_chance

  def tree_parts(self) -> dict:
    return {"num_buckets": self.num_buckets, "slot_bounds": True}

  def missing_action_values(self, batch_size: int, num_actions: int) -> jax.Array:
    raise ValueError(
        "backup='bellman' (AVTS) needs an estimator that returns Estimate.action_values "
        "(q̂1 for every action), got action_values=None")

  def usable_action_values(self, legal, action_values, finite, value):
    # A non-finite q̂1 masks its action, unless that masks them all: then all stay, at V.
    usable = legal & finite
    none_left = ~jnp.any(usable, axis=-1, keepdims=True)
    legal = jnp.where(none_left, legal, usable)
    return legal, jnp.where(finite, action_values, value[:, None])

  def slot_ranking(self, logits, action_values) -> tuple[jax.Array, int]:
    del logits
    return action_values, self.bound_slots

  def node_values(self, terminal, value, slot_legal, slot_action_value, num_active):
    del value
    # V = best q̂1 among the active slots (the debias statistics are empty in a new node).
    active = slot_legal & (jnp.arange(slot_legal.shape[1]) < num_active[:, None])
    node_value = jnp.max(jnp.where(active, slot_action_value, -jnp.inf), axis=-1)
    node_value = jnp.where(jnp.any(active, axis=-1) & ~terminal, node_value, 0.0)
    return node_value, slot_action_value

  def fixed_fields(self, slots_are_actions: bool) -> frozenset:
    del slots_are_actions  # masked q̂1 can cut a legal action even with K = A
    return frozenset()

  def view_stats(self, tree, at, batch_ids, node_ids, legal, child_values, child_visits,
                 action_values, *, plan):
    del action_values
    if self.widening and not plan.selection.sees_inactive:
      legal = legal & (jnp.arange(tree.num_slots) < at(tree.nodes.num_active)[:, None])
    solved = at(tree.slot_bounds.solved)
    legal = legal & ~solved
    debiased, variance = jax.vmap(functools.partial(slot_estimates, options=self))(
        node_stats(tree, batch_ids, node_ids), child_values, child_visits, solved,
        at(tree.nodes.num_active))
    return legal, debiased, variance, at(tree.slot_bounds.upper)

  def outcome_weights(self, tree, batch_ids, safe_chance, probs, *, plan):
    # Never descend into a solved child.
    children = tree.chance.child[batch_ids, safe_chance]
    safe_children = jnp.maximum(children, 0)
    open_child = ~tree.bounds.solved[batch_ids[:, None], safe_children]
    probs = jnp.where(open_child & (children >= 0), probs, 0.0)
    gaps = None
    if plan.outcome_rule is OutcomeRule.GAP:
      gaps = (tree.bounds.upper[batch_ids[:, None], safe_children] -
              tree.bounds.bound[batch_ids[:, None], safe_children])
    return probs, gaps

  several_leaves: ClassVar[bool] = True

  def expand_and_backup(self, model, plan, params, keys, tree, path):
    return bellman_simulation(model, plan, params, keys.estimator, tree, path)

  def expand_and_back_up_walks(self, model, plan, params, keys, tree, paths, walking):
    return bellman_walks_simulation(model, plan, params, keys.estimator, tree, paths, walking)

  def root_slots(self, tree):
    """Active root slots report q̂3; active solved ones compete for the greedy action."""
    root = jax.tree.map(lambda x: x[:, 0], tree.slots)
    root_solved = tree.slot_bounds.solved[:, 0]
    active_slots = root.legal & (jnp.arange(tree.num_slots) < tree.nodes.num_active[:, [0]])
    debiased, _ = jax.vmap(functools.partial(slot_estimates, options=self))(
        node_stats(tree, jnp.arange(tree.batch_size), 0), root.value, root.visits, root_solved,
        tree.nodes.num_active[:, 0])
    return active_slots, jnp.where(active_slots, debiased, 0.0), active_slots & root_solved


# The former name of the Bellman backup's options, now the rule itself:
# ``SearchConfig(backup="bellman", avts=AvtsOptions(widening=True))`` builds
# ``BellmanBackup(widening=True)``.
AvtsOptions = BellmanBackup
