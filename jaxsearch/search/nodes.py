"""New decision nodes: sanitising estimator output, slot entries, writing nodes and the root."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import entropy as entropy_lib
from jaxsearch import tree as tree_lib
from jaxsearch.model import Expansion
from jaxsearch.selection.base import masked_softmax
from jaxsearch.tree import UNEXPANDED, Tree

if TYPE_CHECKING:  # the plan holds the config, which holds the backup rules that import this
  from jaxsearch.search.plan import SearchPlan


@struct.dataclass
class NodeUpdate:
  """Everything a new decision node stores (leading ``[B]``; ``K`` slots), as partial updates
  of the tree's parts (:func:`jaxsearch.tree.update`): :func:`set_node` adds what comes from the
  expansion and the path (visits, parent, depth, terminal, state, solved) and leaves the
  ``None`` fields as allocated (slot visits and chance links).

  Attributes:
    nodes: ``value``, ``raw_value`` ``f32[B]``, ``num_active`` ``i32[B]``.
    slots: ``action``, ``legal``, ``prior_logits``, ``action_value``, ``value``,
      ``prior_probs`` (where kept) ``[B, K]``.
    bounds: ``bound``, ``upper``, ``cut_upper`` ``f32[B]`` (``cut_upper``: the best
      optimistic bound among legal actions that have no slot, ``BoundStats.cut_upper``).
    bad: ``bool[B]`` flags estimator output that was NaN/inf and was replaced.
    slot_bounds: ``upper`` ``f32[B, K]`` (Bellman backup), else ``None``.
    entropy: the new node's subtree-entropy statistics ``[B]``, ``None`` unless
      ``plan.entropy``.
  """

  nodes: tree_lib.NodeStats
  slots: tree_lib.SlotStats
  bounds: tree_lib.BoundStats
  bad: jax.Array
  slot_bounds: Optional[tree_lib.SlotBounds] = None
  entropy: Optional[tree_lib.EntropyStats] = None


class _Sanitised(NamedTuple):
  """Estimator output after :func:`_sanitise` (``[B]`` / ``[B, A]``)."""

  legal: jax.Array  # bool[B, A] the actions the search may use
  value: jax.Array  # f32[B]
  logits: jax.Array  # f32[B, A]
  action_values: jax.Array  # f32[B, A] q̂1
  declared_useless: jax.Array  # bool[B, A] legal actions with q̂1 = -inf
  bad: jax.Array  # bool[B] misbehaving rows


def _sanitise(expansion: Expansion, plan: SearchPlan) -> _Sanitised:
  """Replaces non-finite values, prior logits and action values (see :func:`node_update`)."""
  estimate = expansion.estimate
  legal = expansion.legal
  declared_useless = jnp.zeros_like(legal)
  batch_size = legal.shape[0]
  value = jnp.asarray(estimate.value, jnp.float32)
  bad = ~jnp.isfinite(value)
  value = jnp.where(bad | expansion.terminal, 0.0, value)
  if estimate.prior_logits is None:
    logits = jnp.zeros((batch_size, plan.num_actions), jnp.float32)
  else:
    logits = jnp.asarray(estimate.prior_logits, jnp.float32)
    bad_logits = jnp.any(jnp.isnan(logits) | (logits == jnp.inf), axis=-1)
    bad = bad | bad_logits
    logits = jnp.where(bad_logits[:, None], 0.0, logits)
  if estimate.action_values is None:
    action_values = plan.backup.missing_action_values(batch_size, plan.num_actions)
  else:
    action_values = jnp.asarray(estimate.action_values, jnp.float32)
    finite = jnp.isfinite(action_values)
    declared_useless = legal & (action_values == -jnp.inf)
    bad = bad | jnp.any(legal & (jnp.isnan(action_values) | (action_values == jnp.inf)),
                        axis=-1)
    legal, action_values = plan.backup.usable_action_values(legal, action_values, finite,
                                                            value)
  return _Sanitised(legal=legal, value=value, logits=logits, action_values=action_values,
                    declared_useless=declared_useless, bad=bad)


def _slot_layout(clean: _Sanitised, action_bounds,
                 plan: SearchPlan) -> tuple[jax.Array, Optional[jax.Array]]:
  """``(slot_action i32[B, K], slot_valid bool[B, K] or None)``: which action each slot holds
  (see :func:`node_update`); ``slot_valid`` marks the bound slots that found an action."""
  legal = clean.legal
  batch_size = legal.shape[0]
  num_slots, num_actions = plan.num_slots, plan.num_actions
  slot_valid = None
  if plan.slots_are_actions:
    slot_action = jnp.broadcast_to(jnp.arange(num_actions, dtype=jnp.int32),
                                   (batch_size, num_actions))
  else:
    ranking, bound_slots = plan.backup.slot_ranking(clean.logits, clean.action_values)
    # Legal actions first, best first; ties by index (top_k is stable).
    keys = jnp.where(legal, ranking, -jnp.inf)
    # Only a real cut (K < A) needs them; without one every action has a slot anyway.
    reserve = min(bound_slots, num_slots - 1) if num_slots < num_actions else 0
    if reserve and action_bounds is not None:
      _, first = jax.lax.top_k(keys, num_slots - reserve)
      taken = jnp.zeros(keys.shape, bool).at[jnp.arange(batch_size)[:, None], first].set(True)
      bound_keys = jnp.where(legal & ~taken & jnp.isfinite(clean.action_values),
                             jnp.asarray(action_bounds, jnp.float32), -jnp.inf)
      bound_keys = jnp.where(jnp.isnan(bound_keys), -jnp.inf, bound_keys)
      second_keys, second = jax.lax.top_k(bound_keys, reserve)
      slot_action = jnp.concatenate([first, second], axis=1)
      slot_valid = jnp.concatenate([jnp.ones(first.shape, bool), second_keys > -jnp.inf], axis=1)
    else:
      _, slot_action = jax.lax.top_k(keys, num_slots)
    slot_action = slot_action.astype(jnp.int32)
  return slot_action, slot_valid


def _optimistic_bounds(expansion: Expansion, plan: SearchPlan, wanted, cut, slot_action,
                       slot_legal, bad):
  """``(upper f32[B], cut_upper f32[B], slot_upper f32[B, K] or None, bad)``: the node's
  optimistic bound, the best bound among the wanted actions left out of its slots, and the
  slots' (from ``Estimate.action_bounds``, where the backup keeps bounds)."""
  estimate = expansion.estimate
  batch_size = wanted.shape[0]
  no_upper = jnp.float32(tree_lib.NO_UPPER)
  slot_upper = None
  if expansion.optimistic is None:
    upper = jnp.full((batch_size,), no_upper, jnp.float32)
  else:
    upper = jnp.where(expansion.terminal, 0.0, jnp.asarray(expansion.optimistic, jnp.float32))
    bad = bad | ~jnp.isfinite(upper)
    upper = jnp.where(jnp.isfinite(upper), upper, no_upper)
  if (expansion.optimistic is not None and estimate.action_bounds is not None and
      plan.backup.keeps_bounds):
    # Per-action admissible bounds: NaN or +inf is misbehaviour (no bound), -inf is fine
    # where the action is declared useless.
    action_bounds = jnp.asarray(estimate.action_bounds, jnp.float32)
    broken = wanted & ~jnp.isfinite(action_bounds)
    bad = bad | jnp.any(broken, axis=-1)
    action_bounds = jnp.where(broken, no_upper, action_bounds)
    best_action = jnp.max(jnp.where(wanted, action_bounds, -no_upper), axis=-1)
    upper = jnp.where(expansion.terminal | ~jnp.any(wanted, axis=-1), upper,
                      jnp.minimum(upper, best_action))
    # Which wanted actions have no slot (a scatter only this branch needs).
    in_slots = jnp.zeros(wanted.shape, jnp.int32).at[
        jnp.arange(batch_size)[:, None], slot_action].max(slot_legal.astype(jnp.int32)) > 0
    cut_upper = jnp.max(jnp.where(wanted & ~in_slots, action_bounds, -no_upper), axis=-1)
    slot_upper = jnp.minimum(upper[:, None],
                             jnp.take_along_axis(action_bounds, slot_action, axis=1))
  else:
    cut_upper = jnp.where(cut, no_upper, -no_upper)
  return upper, cut_upper, slot_upper, bad


def _achievable_bound(expansion: Expansion, bad) -> tuple[jax.Array, jax.Array]:
  """``(bound f32[B], bad)``: the game's pessimistic value (0 without one or when terminal)."""
  if expansion.pessimistic is None:
    return jnp.zeros((expansion.legal.shape[0],), jnp.float32), bad
  bound = jnp.where(expansion.terminal, 0.0, jnp.asarray(expansion.pessimistic, jnp.float32))
  bad = bad | ~jnp.isfinite(bound)
  return jnp.where(jnp.isfinite(bound), bound, -1.0e30), bad


def _initial_values(plan: SearchPlan, terminal, value, slot_legal, slot_action_value):
  """``(num_active i32[B], V f32[B], Q f32[B, K])`` of new nodes: one active slot with
  widening, else all; ``V`` and ``Q`` as the backup starts them
  (:meth:`~jaxsearch.search.backup.BackupRule.node_values`)."""
  batch_size, num_slots = slot_legal.shape
  rule = plan.backup
  if rule.widening:
    num_active = jnp.minimum(jnp.sum(slot_legal, axis=-1).astype(jnp.int32), 1)
  else:
    num_active = jnp.full((batch_size,), num_slots, jnp.int32)
  node_value, slot_value = rule.node_values(terminal, value, slot_legal, slot_action_value,
                                            num_active)
  return num_active, node_value, slot_value


def node_update(expansion: Expansion, plan: SearchPlan) -> NodeUpdate:
  """Sanitises a batch of estimates and lays them out as slot entries.

  Non-finite output never reaches the tree. Values that are NaN/inf become 0; a row of prior
  logits holding NaN or ``+inf`` becomes uniform (``-inf`` is a legitimate zero prior). Action
  values: ``-inf`` masks an action on purpose — the estimator declares it never optimal (e.g. a
  useless Wordle guess), and certification trusts that; NaN and ``+inf`` mask it too, count as
  misbehaviour and leave the node's optimistic bound uncertifiable. If that masks every legal
  action of a live state, they all stay selectable with q̂1 = the (sanitised) value. ``bad``
  flags misbehaving rows.

  Slots: with ``K = A`` and no widening, slot ``k`` is action ``k``; otherwise the slots hold
  the top-``K`` actions by the backup's ranking (q̂1 with the Bellman backup, else the prior
  logit), best first, so that widening activates them in order and illegal ones come last;
  with ``AvtsOptions.bound_slots`` the last ones are instead the best action bounds among the
  rest.
  """
  clean = _sanitise(expansion, plan)
  slot_action, slot_valid = _slot_layout(clean, expansion.estimate.action_bounds, plan)

  gather = ((lambda x: x) if plan.slots_are_actions  # slot k holds action k
            else lambda x: jnp.take_along_axis(x, slot_action, axis=1))

  slot_legal = gather(clean.legal)
  slot_logits = gather(clean.logits)
  if slot_valid is not None:
    slot_legal = slot_legal & slot_valid
  slot_action_value = jnp.where(slot_legal, gather(clean.action_values), 0.0)
  num_active, node_value, slot_value = _initial_values(
      plan, expansion.terminal, clean.value, slot_legal, slot_action_value)
  wanted = expansion.legal & ~clean.declared_useless
  cut = jnp.sum(wanted, axis=-1) > jnp.sum(slot_legal, axis=-1)
  upper, cut_upper, slot_upper, bad = _optimistic_bounds(expansion, plan, wanted, cut,
                                                         slot_action, slot_legal, clean.bad)
  bound, bad = _achievable_bound(expansion, bad)
  slot_bounds = entropy = None
  if plan.backup.keeps_bounds:
    slot_bounds = tree_lib.update(tree_lib.SlotBounds, upper=jnp.broadcast_to(
        upper[:, None], slot_action.shape) if slot_upper is None else slot_upper)
  if plan.entropy is not None:
    entropy = tree_lib.EntropyStats(*entropy_lib.fresh_node(
        slot_legal, slot_logits, expansion.terminal, plan.entropy.policy))
  # Fields that always hold their allocated value under this config and model are left
  # ``None`` (not written): each write is a kernel per simulation.
  fixed = fixed_node_fields(expansion, plan)
  keep = lambda name, value: None if name in fixed else value  # noqa: E731
  return NodeUpdate(
      nodes=tree_lib.update(tree_lib.NodeStats, value=node_value, raw_value=clean.value,
                          num_active=keep("num_active", num_active)),
      slots=tree_lib.update(tree_lib.SlotStats, action=keep("action", slot_action),
                          legal=slot_legal,
                          prior_logits=keep("prior_logits", slot_logits),
                          action_value=keep("action_value", slot_action_value),
                          value=keep("slot_value", slot_value),
                          prior_probs=(masked_softmax(slot_logits, slot_legal)
                                       if plan.keeps_prior_probs else None)),
      bounds=tree_lib.update(tree_lib.BoundStats, bound=keep("bound", bound),
                           upper=keep("upper", upper), cut_upper=keep("cut_upper", cut_upper)),
      bad=bad, slot_bounds=slot_bounds, entropy=entropy)


def fixed_node_fields(expansion: Expansion, plan: SearchPlan) -> frozenset:
  """Names of the :class:`NodeUpdate` fields that equal what :func:`jaxsearch.tree.allocate`
  put there, for every node, whatever the estimates (known at trace time). A node is only ever
  written where nothing was (the tree's entries past ``num_nodes`` are as allocated: ``reroot``
  clears them), so these writes can be skipped."""
  slots_are_actions = plan.slots_are_actions
  fixed = set(plan.backup.fixed_fields(slots_are_actions))
  if slots_are_actions:
    fixed.add("action")  # slot k is action k, as allocated
  if not plan.backup.widening:
    fixed.add("num_active")  # K
  if expansion.estimate.prior_logits is None:
    fixed.add("prior_logits")  # 0
  if expansion.estimate.action_values is None:
    fixed.add("action_value")  # 0
  if expansion.pessimistic is None:
    fixed.add("bound")  # 0
  if expansion.optimistic is None:
    fixed.add("upper")  # NO_UPPER
  return frozenset(fixed)


def set_node(tree: Tree, index, expansion: Expansion, update: NodeUpdate, parent, depth,
              stats: bool = True) -> Tree:
  """Writes decision node(s) ``index`` of one (unbatched) tree from an unbatched ``update``:
  ``index`` is a scalar (``update`` unbatched) or ``[M]`` (``update`` ``[M, ...]``);
  out-of-range indices are dropped. ``stats=False`` leaves the node's visits and value to the caller (the
  running-mean backup writes them in the scatters that update the path)."""
  nodes = update.nodes.replace(visits=1 if stats else None,
                             value=update.nodes.value if stats else None, parent=parent,
                             depth=depth, terminal=expansion.terminal, state=expansion.state)
  return tree.replace(
      nodes=tree_lib.write(tree.nodes, nodes, index),
      slots=tree_lib.write(tree.slots, update.slots, index),
      bounds=tree_lib.write(tree.bounds, update.bounds.replace(solved=expansion.terminal), index),
      slot_bounds=tree_lib.write(tree.slot_bounds, update.slot_bounds, index),
      entropy=tree_lib.write(tree.entropy, update.entropy, index))


def write_root(tree: Tree, expansion: Expansion, update: NodeUpdate) -> Tree:
  """Writes node 0 of one empty tree (unbatched)."""
  tree = set_node(tree, 0, expansion, update, UNEXPANDED, 0)
  return tree.replace(num_nodes=jnp.int32(1),
                      nonfinite_estimates=tree.nonfinite_estimates + update.bad.astype(jnp.int32))


def root_noise_logits(key, logits, legal, fraction, alpha):
  """Dirichlet noise over the legal actions of one root, as logits (``-inf`` = illegal)."""
  gammas = jax.random.gamma(key, alpha, logits.shape)
  gammas = jnp.where(legal, gammas, 0.0)
  noise = gammas / jnp.maximum(jnp.sum(gammas), jnp.finfo(jnp.float32).tiny)
  mixed = (1.0 - fraction) * masked_softmax(logits, legal) + fraction * noise
  return jnp.where(legal & (mixed > 0), jnp.log(jnp.maximum(mixed, 1e-30)), -jnp.inf)
