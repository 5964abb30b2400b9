"""Selection: the descent of every tree from its root to the edge its simulation expands."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import entropy as entropy_lib
from jaxsearch.enums import OutcomeRule
from jaxsearch.search import rows
from jaxsearch.selection.base import NodeView, RootContext, masked_argmax, masked_softmax
from jaxsearch.tree import UNEXPANDED, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


class RootPrior(NamedTuple):
  """What never changes at the roots during a search, ``[B, K]``: the prior ``logits`` with any
  root noise mixed in, ``probs``, their softmax over the legal slots (``None`` unless the tree
  keeps prior probabilities), and the ``legal`` mask. The descent reads the roots' data through
  this, from outside the simulation loop, so that XLA can hoist what a root rule computes from
  them alone (a log-softmax, a count of legal slots) out of the loop."""

  logits: jax.Array
  probs: Optional[jax.Array]
  legal: jax.Array


def root_prior(tree: Tree, logits: jax.Array, *, plan: SearchPlan) -> RootPrior:
  """:class:`RootPrior` of ``tree``'s roots for prior ``logits`` ``[B, K]`` (computed once per
  search, not at every root visit)."""
  legal = tree.slots.legal[:, 0]
  probs = None
  if plan.keeps_prior_probs:
    probs = (masked_softmax(logits, legal) if plan.root_noise is not None
             else tree.slots.prior_probs[:, 0])
  return RootPrior(logits, probs, legal)


# One packed step of the descent's step buffer per edge: these columns hold int32 values, the
# last two a value's float32 bits (one scatter per level writes the whole step).
SLOT, OUTCOME, CHILD, CHANCE, NODE_VISITS, SLOT_VISITS, NODE_VALUE, SLOT_VALUE = range(8)
STEP_COLUMNS = 8
# A step no descent wrote: -1 links and counts, 0.0 values (bits 0).
_EMPTY_ROW = (UNEXPANDED,) * 6 + (0, 0)


@struct.dataclass
class Path:
  """One simulation's descent through one tree (``D`` = max depth; batched as ``[B, ...]``).

  The descent records the statistics it read on the way down, so that the backup never reads
  these tree arrays again before writing them: a read of the pre-descent arrays after the
  descent makes XLA copy whole tree arrays every simulation (measured; docs/architecture.md).

  Attributes:
    nodes: ``i32[D + 1]`` decision nodes from the root; ``-1`` past the end and where the leaf
      still has to be created.
    slots, outcomes: ``i32[D]`` the edge taken below each node.
    chances: ``i32[D]`` the chance record of each edge (``-1``: not created yet).
    node_visits, node_values: ``[D]`` visits and value of ``nodes[d]`` before this simulation.
    slot_visits, slot_values: ``[D]`` the same for the slot taken at ``nodes[d]``.
    length: ``i32[]`` number of edges ``L``.
    expand: ``bool[]`` the last edge leads to a node that must be created.
    new_chance: ``bool[]`` ... and its slot has no chance record yet.
    leaf_visits, leaf_value, leaf_terminal: the existing node a simulation ends on when it
      does not expand (a terminal node, the depth limit, or a full tree).
    steps: ``i32[D, 8]`` the descent's packed step buffer as it wrote it (columns
      :data:`SLOT` .. :data:`SLOT_VALUE`): the steps below the descent's depth are this
      simulation's, the others stale. The fields above are unpacked from it with the stale
      steps masked; a loop over the path reads one packed step per level from it instead.
  """

  nodes: jax.Array
  slots: jax.Array
  outcomes: jax.Array
  chances: jax.Array
  node_visits: jax.Array
  node_values: jax.Array
  slot_visits: jax.Array
  slot_values: jax.Array
  length: jax.Array
  expand: jax.Array
  new_chance: jax.Array
  leaf_visits: jax.Array
  leaf_value: jax.Array
  leaf_terminal: jax.Array
  steps: jax.Array

  def node_at(self, depth: jax.Array) -> jax.Array:
    """The decision node at ``depth`` (``i32[]``, or ``[B]`` on a batched path; at most
    ``length``) read from the packed buffer: one gather, where ``nodes[depth]`` would first
    build the ``[B, D + 1]`` array."""
    above = jnp.take_along_axis(self.steps[..., CHILD], jnp.maximum(depth - 1, 0)[..., None],
                                axis=-1)[..., 0]
    return jnp.where(depth == 0, 0, above)

  def step_at(self, depth: jax.Array) -> Step:
    """The edge below the node at ``depth[B]`` of a batched path, as the descent packed it:
    one gather of its whole step (the step is stale where ``depth >= length``)."""
    return unpack_steps(rows.take(self.steps, depth))


class Step(NamedTuple):
  """Rows of the descent's packed step buffer, unpacked (any leading shape: ``[B]`` for one
  level, ``[B, D]`` for whole paths). The statistics are those of before the simulation."""

  slot: jax.Array  # i32 the slot taken below the node
  outcome: jax.Array  # i32 the outcome taken at its chance record
  child: jax.Array  # i32 the decision node reached (-1: not created yet)
  chance: jax.Array  # i32 the slot's chance record (-1: not created yet)
  node_visits: jax.Array  # i32
  slot_visits: jax.Array  # i32
  node_value: jax.Array  # f32
  slot_value: jax.Array  # f32


def pack_step(slot, outcome, child, chance, node_visits, slot_visits, node_value,
              slot_value) -> jax.Array:
  """``i32[..., 8]`` packed steps of the step buffer (columns :data:`SLOT` ..
  :data:`SLOT_VALUE`; the values as their float32 bits): :func:`unpack_steps`' inverse."""
  bits = jax.lax.bitcast_convert_type(jnp.stack([node_value, slot_value], axis=-1), jnp.int32)
  return jnp.concatenate([jnp.stack([slot, outcome, child, chance, node_visits, slot_visits],
                                    axis=-1), bits], axis=-1)


def unpack_steps(steps: jax.Array) -> Step:
  """:class:`Step` of packed steps ``i32[..., 8]`` (the values travel as their float32 bits)."""
  column = lambda index: steps[..., index]  # noqa: E731
  as_float = lambda index: jax.lax.bitcast_convert_type(column(index), jnp.float32)  # noqa: E731
  return Step(slot=column(SLOT), outcome=column(OUTCOME), child=column(CHILD),
              chance=column(CHANCE), node_visits=column(NODE_VISITS),
              slot_visits=column(SLOT_VISITS), node_value=as_float(NODE_VALUE),
              slot_value=as_float(SLOT_VALUE))


def choose_outcome(probs, visits, key, rule, gaps=None):
  """Outcome at a chance record (``probs``/``visits``/``gaps`` ``[O]``); zero-probability
  outcomes are never chosen."""
  rule = OutcomeRule(rule)
  possible = probs > 0
  if rule is OutcomeRule.SAMPLE:
    return jax.random.categorical(key, jnp.where(possible, jnp.log(probs), -jnp.inf)
                                  ).astype(jnp.int32)
  balanced = probs / (visits + 1.0)
  if rule is OutcomeRule.GAP:
    # Lexicographic: the weighted bound gap first, the balanced score among (near-)ties.
    weighted = jnp.where(possible, probs * jnp.minimum(gaps, 1e6), -jnp.inf)
    best = jnp.max(weighted)
    tied = possible & (weighted >= best - 1e-6 * jnp.maximum(1.0, jnp.abs(best)))
    return masked_argmax(balanced, tied)
  return masked_argmax(balanced, possible)


class Cursor(NamedTuple):
  """The descent's loop carry: where each tree's walk stands (all ``[B]`` but the buffers).

  ``node`` and ``at_terminal`` (read when the walk moved onto it; the node's visits and value
  are read at the start of its level: carrying them too costs a select and a copy each per
  level); ``depth`` edges taken so far; ``steps``
  ``i32[B, D, 8]`` one packed step per edge (slot, outcome, child, chance record, node visits,
  slot visits, and the node's and the slot's values as their f32 bits: one scatter per level
  for the whole step); ``go`` the walk continues.
  """

  node: jax.Array
  at_terminal: jax.Array
  depth: jax.Array
  steps: jax.Array
  go: jax.Array


def _exploration(tree: Tree, batch_ids, node) -> jax.Array:
  """``f32[B, K]`` E(s, a) of every slot of ``node[B]`` (subtree-entropy trees)."""
  chance = tree.slots.chance[batch_ids, node]
  safe_chance = jnp.maximum(chance, 0)
  kids = tree.chance.child[batch_ids[:, None], safe_chance]
  safe_kids = jnp.maximum(kids, 0)
  at_kids = jax.tree.map(lambda field: field[batch_ids[:, None, None], safe_kids], tree.entropy)
  return jax.vmap(entropy_lib.edge_exploration)(
      chance >= 0, tree.chance.prob[batch_ids[:, None], safe_chance], kids, at_kids.entropy,
      at_kids.leaves, at_kids.closed)


def _node_view(tree: Tree, node, visits, value, depth, root: RootPrior, *,
               plan: SearchPlan) -> NodeView:
  """``[B]`` batched :class:`NodeView` of ``node[B]``: what the selection rule sees.
  ``node=None`` is the root of every tree, read by static slices (which fuse into their
  readers) rather than by gathers."""
  batch_ids = jnp.arange(tree.batch_size)
  if node is None:
    at = lambda field: field[:, 0]  # noqa: E731
    logits, probs, legal = root
  else:  # a node below the root: no root noise
    at = lambda field: rows.take(field, node)  # noqa: E731
    logits, legal = at(tree.slots.prior_logits), at(tree.slots.legal)
    probs = at(tree.slots.prior_probs) if plan.keeps_prior_probs else None
  child_visits = at(tree.slots.visits)
  child_values = at(tree.slots.value)
  action_values = (jnp.zeros_like(child_values) if tree.slots.action_value is None
                   else at(tree.slots.action_value))
  node_ids = jnp.zeros_like(batch_ids) if node is None else node
  # What differs between backups: the selectable slots, q̂3, its variance, the bounds.
  legal, debiased, variance, upper = plan.backup.view_stats(
      tree, at, batch_ids, node_ids, legal, child_values, child_visits, action_values,
      plan=plan)
  return NodeView(
      visits=visits, value=value, child_visits=child_visits, child_values=child_values,
      prior_logits=logits, action_values=action_values, legal=legal, depth=depth,
      debiased_values=debiased, value_variance=variance, upper_bounds=upper,
      child_exploration=(_exploration(tree, batch_ids, node_ids)
                         if plan.entropy is not None else None),
      prior_probs=probs)


class Virtual(NamedTuple):
  """The other walks of a step of several paths per tree, as one walk sees them at one level
  (``[L, B]`` each: ``L`` walks of ``B`` trees). A walk counts a virtual visit for each earlier
  walk of its step that took an edge from the same node at this level: every path through a
  node passes it at the same level, so these are all the step's earlier paths through it.
  The virtual visits exist only in what the walk's rule sees; the tree never holds them, and
  the backup writes the real visits of all the step's paths (:mod:`jaxsearch.search.walks`).

  Attributes:
    node: the decision node each walk stands on at this level.
    slot, chance, outcome: the edge each earlier walk took there (the slot, its chance record,
      the outcome).
    counted: the walks that count: earlier in the step, and walking at this level.
    slots: the rule sees them (a deterministic rule); a rule that draws makes independent
      draws instead, and sees none.
    outcomes: the outcome rule sees them at a chance record (a rule that does not sample).
  """

  node: jax.Array
  slot: jax.Array
  chance: jax.Array
  outcome: jax.Array
  counted: jax.Array
  slots: bool
  outcomes: bool

  def view(self, view: NodeView, node: jax.Array) -> NodeView:
    """``view`` (``[B]``, of ``node[B]``) with a virtual visit per counted walk that left the
    node: one more visit of the node and of the slot the walk took. The slot's value stays;
    an unvisited slot shows the node's value then (its own would be meaningless)."""
    here = self.counted & (self.node == node[None])
    extra = _count(here, self.slot, view.child_visits.shape[-1])  # [B, K]
    values = jnp.where((view.child_visits == 0) & (extra > 0), view.value[:, None],
                       view.child_values)
    return view.replace(visits=view.visits + jnp.sum(here, axis=0, dtype=view.visits.dtype),
                        child_visits=view.child_visits + extra, child_values=values)

  def outcome_visits(self, chance: jax.Array, num_outcomes: int) -> jax.Array:
    """``i32[B, O]`` the counted walks that took each outcome of chance record
    ``chance[B]`` (none where ``chance < 0``)."""
    here = self.counted & (self.chance == chance[None]) & (chance >= 0)[None]
    return _count(here, self.outcome, num_outcomes)


def _count(counted, index, size: int) -> jax.Array:
  """``i32[B, size]`` how many of the ``[L, B]`` walks with ``counted`` hold each ``index``."""
  batch_ids = jnp.broadcast_to(jnp.arange(index.shape[1]), index.shape)
  return jnp.zeros((index.shape[1], size), jnp.int32).at[batch_ids, jnp.maximum(index, 0)].add(
      counted.astype(jnp.int32), mode="drop")


def _outcomes(tree: Tree, chance, outcome_keys, *, plan: SearchPlan,
              virtual: Optional[Virtual] = None) -> jax.Array:
  """``i32[B]`` the outcome taken at each tree's chance record ``chance[B]`` (``-1``: none
  yet), by the outcome rule over the weights the backup gives it (a backup that keeps bounds
  never descends into a solved child), counting ``virtual``'s visits where it has any."""
  batch_ids = jnp.arange(tree.batch_size)
  safe_chance = jnp.maximum(chance, 0)
  probs, gaps = plan.backup.outcome_weights(
      tree, batch_ids, safe_chance, tree.chance.prob[batch_ids, safe_chance], plan=plan)
  visits = tree.chance.visits[batch_ids, safe_chance]
  if virtual is not None and virtual.outcomes:
    visits = visits + virtual.outcome_visits(chance, tree.num_outcomes)
  return jax.vmap(choose_outcome, in_axes=(0, 0, 0 if outcome_keys is not None else None,
                                            None, 0 if gaps is not None else None))(
      probs, visits, outcome_keys, plan.outcome_rule, gaps)


def _best_slot(view: NodeView, rule_keys, *, plan: SearchPlan, at_root: bool,
               root_context: Optional[RootContext]) -> jax.Array:
  """``i32[B]`` the slot each walk takes: the first legal maximum of the rule's scores (the
  root rule's at the root, where there is one)."""
  if at_root and plan.root_selection is not None:
    scores = jax.vmap(plan.root_selection.score)(view, root_context)
  else:
    scores = jax.vmap(plan.selection.score, in_axes=(0, 0 if rule_keys is not None else None))(
        view, rule_keys)
  return jax.vmap(masked_argmax)(scores, view.legal)


class NodeRead(NamedTuple):
  """What one level of a descent reads at the walks' nodes (``[B]``): the rule's
  :class:`NodeView`, the node's own visits and value (recorded in its step), and the
  level's keys for the rule and the outcome rule (``None`` where nothing draws)."""

  view: NodeView
  visits: jax.Array
  value: jax.Array
  rule_keys: Optional[jax.Array]
  outcome_keys: Optional[jax.Array]


def read_level(cursor: Cursor, tree: Tree, root: RootPrior, keys, *, plan: SearchPlan,
               at_root: bool) -> NodeRead:
  """The :class:`NodeRead` of every walk's node (the roots by static slices ``at_root``)."""
  node, depth = cursor.node, cursor.depth
  if at_root:
    visits, value = tree.nodes.visits[:, 0], tree.nodes.value[:, 0]
  else:
    visits = rows.take(tree.nodes.visits, node)
    value = rows.take(tree.nodes.value, node)
  view = _node_view(tree, None if at_root else node, visits, value, depth, root, plan=plan)
  if keys is not None:
    step_keys = jax.vmap(jax.random.fold_in)(keys, depth)
    rule_keys, outcome_keys = jnp.moveaxis(jax.vmap(jax.random.split)(step_keys), 1, 0)
  else:
    rule_keys = outcome_keys = None
  return NodeRead(view, visits, value, rule_keys, outcome_keys)


def choose_slot(read: NodeRead, node, *, plan: SearchPlan, at_root: bool,
                root_context: Optional[RootContext] = None,
                virtual: Optional[Virtual] = None) -> jax.Array:
  """``i32[B]`` the slot each walk takes at ``node[B]``, seeing ``virtual``'s visits where
  given (:class:`Virtual`)."""
  seen = read.view
  if virtual is not None and virtual.slots:
    seen = virtual.view(read.view, node)
  return _best_slot(seen, read.rule_keys, plan=plan, at_root=at_root, root_context=root_context)


def slot_chance(tree: Tree, node, slot, *, at_root: bool) -> jax.Array:
  """``i32[B]`` the chance record of slot ``slot[B]`` of ``node[B]`` (``-1``: none yet)."""
  slot_chances = (tree.slots.chance[:, 0] if at_root
                  else rows.take(tree.slots.chance, node))
  return rows.take(slot_chances, slot)


def choose_outcome_at(tree: Tree, chance, outcome_keys, *, plan: SearchPlan,
                      virtual: Optional[Virtual] = None) -> jax.Array:
  """``i32[B]`` the outcome each walk takes at chance record ``chance[B]`` (0 with one
  outcome), counting ``virtual``'s visits where given."""
  if tree.num_outcomes == 1:
    return jnp.zeros_like(chance)
  return _outcomes(tree, chance, outcome_keys, plan=plan, virtual=virtual)


def take_edge(cursor: Cursor, tree: Tree, read: NodeRead, slot, chance, outcome, *,
              plan: SearchPlan) -> Cursor:
  """Every walking tree records the edge ``(slot, chance, outcome)`` (``[B]``) in its step
  buffer and moves onto the child if it exists."""
  depth_limit = plan.max_depth
  node, at_terminal, depth, steps, go = cursor
  walk_ids = jnp.arange(node.shape[0])
  safe_chance = jnp.maximum(chance, 0)
  child = jnp.where(chance >= 0,
                    rows.take(tree.chance.child, safe_chance, outcome), UNEXPANDED)
  # One packed step per edge (columns SLOT .. SLOT_VALUE, in that order); finished trees write
  # out of range.
  level_index = jnp.where(go, depth, depth_limit)
  view = read.view
  slot_visits = rows.take(view.child_visits, slot)
  slot_value = rows.take(view.child_values, slot)
  steps = steps.at[walk_ids, level_index].set(
      pack_step(slot, outcome, child, chance, read.visits, slot_visits, read.value, slot_value),
      mode="drop")
  depth = depth + go.astype(jnp.int32)
  safe_child = jnp.maximum(child, 0)
  moving = go & (child >= 0)
  node = jnp.where(moving, child, node)
  at_terminal = jnp.where(moving, rows.take(tree.nodes.terminal, safe_child),
                          at_terminal)
  go = moving & ~at_terminal & (depth < depth_limit)
  return Cursor(node, at_terminal, depth, steps, go)


def descend_one_level(cursor: Cursor, tree: Tree, root: RootPrior, keys, *,
                      plan: SearchPlan, at_root: bool,
                      root_context: Optional[RootContext] = None) -> Cursor:
  """Every walking tree takes one edge: scores its node's slots, picks the slot and the
  outcome, records the edge in the path buffers and moves onto the child if it exists.

  ``at_root`` (static) is the first level, where every walk stands at its root: the root is
  read by static slices, and ``plan.root_selection`` (given ``root_context``), where set,
  scores it instead of the interior rule. The other levels never stand on a root, so they
  neither mix root noise in nor score a root rule. (A step of several walks per tree runs
  the same phases: :mod:`jaxsearch.search.walks`.)"""
  read = read_level(cursor, tree, root, keys, plan=plan, at_root=at_root)
  slot = choose_slot(read, cursor.node, plan=plan, at_root=at_root, root_context=root_context)
  chance = slot_chance(tree, cursor.node, slot, at_root=at_root)
  outcome = choose_outcome_at(tree, chance, read.outcome_keys, plan=plan)
  return take_edge(cursor, tree, read, slot, chance, outcome, plan=plan)


def empty_steps(batch_size: int, depth_limit: int) -> jax.Array:
  """``i32[B, D, 8]`` a step buffer no descent has written. The simulation loop allocates it
  once and passes it from simulation to simulation: a descent overwrites the steps it walks and
  readers mask the rest (:func:`path_of`), so no simulation pays to clear ``B·D`` steps."""
  return jnp.broadcast_to(jnp.array(_EMPTY_ROW, jnp.int32),
                          (batch_size, depth_limit, STEP_COLUMNS))


def open_roots(tree: Tree) -> jax.Array:
  """``bool[B]`` the trees whose root a simulation walks from: not empty, terminal or
  solved."""
  return (tree.num_nodes > 0) & ~tree.nodes.terminal[:, 0] & ~tree.bounds.solved[:, 0]


def root_cursor(tree: Tree, steps: jax.Array, walking: Optional[jax.Array]) -> Cursor:
  """Every walk at its root; a tree whose root is not open (:func:`open_roots`), or that
  ``walking`` (``bool[B]``) leaves out, does not walk."""
  batch_size = tree.batch_size
  root_open = open_roots(tree)
  go = root_open if walking is None else root_open & walking
  return Cursor(jnp.zeros((batch_size,), jnp.int32), ~root_open,
                 jnp.zeros((batch_size,), jnp.int32), steps, go)


def path_of(cursor: Cursor, tree: Tree) -> Path:
  """Unpacks the finished walks into a :class:`Path`; a walk that must expand into a full tree
  ends at its parent instead."""
  node, leaf_terminal, length, raw_steps, _ = cursor
  batch_size = node.shape[0]
  batch_ids = jnp.arange(batch_size)
  leaf_visits = rows.take(tree.nodes.visits, node)
  leaf_value = rows.take(tree.nodes.value, node)
  # Rows below the walk's depth are this descent's; the rest are an earlier one's.
  steps = jnp.where((jnp.arange(raw_steps.shape[1]) < length[:, None])[:, :, None], raw_steps,
                    jnp.array(_EMPTY_ROW, jnp.int32))
  step = unpack_steps(steps)
  nodes = jnp.concatenate([jnp.zeros((batch_size, 1), jnp.int32), step.child], axis=1)
  slots = jnp.maximum(step.slot, 0)
  outcomes = jnp.maximum(step.outcome, 0)
  chances = step.chance

  last = jnp.maximum(length - 1, 0)
  expand = (length > 0) & (nodes[batch_ids, length] < 0)
  # A full tree stops growing: the simulation ends at the parent and re-backs its value.
  full = expand & (tree.num_nodes >= tree.max_nodes)
  length = jnp.where(full, last, length)
  expand = expand & ~full
  # Where the loop did not move onto an existing leaf (expand, full tree) the carried
  # statistics are the last decision node's: the leaf's in the full-tree case.
  leaf_terminal = leaf_terminal & ~expand
  new_chance = expand & (chances[batch_ids, last] < 0)
  return Path(nodes=nodes, slots=slots, outcomes=outcomes, chances=chances,
              node_visits=step.node_visits, node_values=step.node_value,
              slot_visits=step.slot_visits, slot_values=step.slot_value, length=length,
              expand=expand, new_chance=new_chance, leaf_visits=leaf_visits,
              leaf_value=leaf_value, leaf_terminal=leaf_terminal, steps=raw_steps)


def select(tree: Tree, root: RootPrior, keys, steps: jax.Array, *, plan: SearchPlan,
            root_context: Optional[RootContext] = None,
            walking: Optional[jax.Array] = None) -> tuple[Path, Tree]:
  """Descends every tree of the batch from its root to the edge its simulation will expand.

  The descent is batched by hand rather than vmapped: under ``vmap`` a ``while_loop`` with a
  per-tree predicate re-selects its whole carry (the path) every level, which measured as a
  third of the descent's kernels. Here finished trees simply stop writing (their path writes
  go out of range and are dropped). The selection *rule* is still a pure per-node function,
  vmapped over the batch.

  The tree rides through the loop unchanged and is returned, so that later reads and the
  backup's in-place writes are ordered after the descent.

  Args:
    tree: ``[B, ...]`` trees.
    root: the roots' prior (:func:`root_prior`, Dirichlet noise mixed in).
    keys: ``[B]`` keys for rules or outcome rules that draw, else ``None``.
    steps: ``i32[B, D, 8]`` the step buffer (:func:`empty_steps`, or the previous
      simulation's ``path.steps``).
    root_context: ``[B]`` batched :class:`RootContext` for ``plan.root_selection``, which
      scores the roots at the first level instead of the interior rule. That level is peeled
      off the loop (every walk is at its root there), so the loop's levels score the interior
      rule alone and the first reads the roots by static slices.
    walking: ``bool[B]`` the trees that take part in this simulation (``None``: all); the
      others do not walk, as if their root were terminal.
  Returns:
    ``(path, tree)`` with a batched :class:`Path` (``[B, ...]``).
  """
  # The first level is peeled off the loop: every walk stands at its root there.
  with jax.named_scope("root_level"):
    cursor = descend_one_level(root_cursor(tree, steps, walking), tree, root, keys, plan=plan,
                               at_root=True, root_context=root_context)

  def body(carry):
    cursor, tree = carry
    # Several levels a trip where each trip is dear (an accelerator's loop condition goes
    # through the host); a walk that ended stays put, so the result is the same.
    for _ in range(plan.loops.levels_per_trip):
      cursor = descend_one_level(cursor, tree, root, keys, plan=plan, at_root=False)
    return cursor, tree

  with jax.named_scope("interior_levels"):
    cursor, tree = jax.lax.while_loop(lambda carry: jnp.any(carry[0].go), body,
                                      (cursor, tree))
  return path_of(cursor, tree), tree
