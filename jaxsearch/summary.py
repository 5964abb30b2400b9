"""What a search returns: :class:`PolicyOutput`, made from the roots of the searched trees
(:func:`root_summary`), and π̄ at the roots (:func:`root_pibar`)."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import search as search_lib
from jaxsearch import selection as selection_lib
from jaxsearch.game import per_item_keys
from jaxsearch.selection.base import QTransform, masked_argmax, q_minmax
from jaxsearch.tree import Tree


@struct.dataclass
class PolicyOutput:
  """What a search returns (``B`` searches, ``A`` actions).

  Attributes:
    action: ``i32[B]`` the chosen action; ``-1`` where the root has no legal action.
    action_weights: ``f32[B, A]`` visit counts to the power ``1/τ``, normalised (one-hot of
      the most visited action at ``τ = 0``; all zeros without a legal action).
    visit_counts: ``i32[B, A]`` root visit counts (with a reused tree they include the
      visits of earlier searches, so they can add up to more than ``num_simulations``).
    root_value: ``f32[B]`` the root's backed-up value (mover's view; 0 if terminal).
    q_values: ``f32[B, A]`` Q at the root; unvisited or illegal actions get ``root_value``.
      With the Bellman backup (AVTS): the debiased q̂3 of every active slot. Both are
      clipped to the game's ``value_bounds`` when :func:`root_summary` is given them
      (debiased values extrapolate the drift and may leave them; the tree keeps them
      unclipped).
    tree: the searched trees (pass to :func:`jaxsearch.tree.reroot` to reuse them).
    root_bound: ``f32[B]`` the achievable bound at the root — the exact value of a concrete
      policy the tree holds, a certified lower bound on the optimal value (upper bound on
      cost) that never decreases as the search goes on — or ``None`` when the game supplies
      no ``pessimistic_value``.
    root_solved: ``bool[B]`` the root's value is exact (Bellman backup: every reachable
      state below it was expanded to the end) — within the searched actions: with a cutoff
      ``K < A``, or actions the estimator declared never optimal (q̂1 = ``-inf``), exact over
      those kept; always False with the running-mean backup.
    root_upper: ``f32[B]`` the optimistic bound at the root (Bellman backup, games with an
      ``optimistic_value``): no policy does better. ``root_upper - root_bound <= tolerance``
      certifies that the achievable policy is optimal. ``None`` without one.
    policy_target: ``f32[B, A]`` the policy a learner should regress to when it differs from
      ``action_weights``' visit distribution — π̄ at the root (``Search(pibar_target=True)``,
      Grill et al.'s LEARN variant) or Gumbel MuZero's improved policy π′ — else ``None``
      (then train on ``action_weights``).
    pibar: ``f32[B, A]`` π̄ at the root (ACT or LEARN variants), else ``None``.
  """

  action: jax.Array
  action_weights: jax.Array
  visit_counts: jax.Array
  root_value: jax.Array
  q_values: jax.Array
  tree: Tree
  root_bound: Optional[jax.Array] = None
  root_solved: Optional[jax.Array] = None
  root_upper: Optional[jax.Array] = None
  policy_target: Optional[jax.Array] = None
  pibar: Optional[jax.Array] = None


def slots_to_actions(tree: Tree, slot_values, num_actions: int, fill=0.0) -> jax.Array:
  """``[B, A]`` per-action values from ``[B, K]`` root-slot values (legal slots only)."""
  batch_ids = jnp.arange(tree.batch_size)[:, None]
  legal = tree.slots.legal[:, 0]
  return jnp.full((tree.batch_size, num_actions), fill, slot_values.dtype).at[
      batch_ids, tree.slots.actions()[:, 0]].set(jnp.where(legal, slot_values, fill))


def root_view(tree: Tree) -> selection_lib.NodeView:
  """``[B]`` batched :class:`~jaxsearch.selection.NodeView` of the roots (stored prior logits,
  no root noise; running-mean statistics)."""
  root = jax.tree.map(lambda x: x[:, 0], tree.slots)
  child_values = root.value
  zeros = jnp.zeros_like(child_values)
  return selection_lib.NodeView(
      visits=tree.nodes.visits[:, 0], value=tree.nodes.value[:, 0],
      child_visits=root.visits, child_values=child_values,
      prior_logits=root.prior_logits, action_values=root.action_values(),
      legal=root.legal, depth=jnp.zeros((tree.batch_size,), jnp.int32),
      debiased_values=jnp.where(root.visits > 0, child_values, root.action_values()),
      value_variance=zeros, upper_bounds=zeros + jnp.float32(3.0e38))


def root_pibar(tree: Tree, num_actions: int, c: Optional[float] = 1.25,
               q_transform: QTransform = q_minmax) -> jax.Array:
  """``f32[B, A]`` π̄ (Grill et al. 2020) at the roots of ``tree``
  (:func:`jaxsearch.selection.pibar_policy`; the prior where the root has no visits)."""
  pibar = jax.vmap(lambda view: selection_lib.pibar_policy(view, c, q_transform))(
      root_view(tree))
  return slots_to_actions(tree, pibar, num_actions)


def _to_actions(tree: Tree, num_actions: int, slot_values, how: str) -> jax.Array:
  """``[B, A]`` from the roots' ``[B, K]`` slot values by ``.at[...].add`` or ``.max``."""
  batch_ids = jnp.arange(tree.batch_size)[:, None]
  zeros = jnp.zeros((tree.batch_size, num_actions), slot_values.dtype)
  return getattr(zeros.at[batch_ids, tree.slots.actions()[:, 0]], how)(slot_values)


def _from_visits(visits, legal, most, greedy, temperature: float, key):
  """``(action i32[B], weights f32[B, A])``: the greedy action at ``τ = 0``, else one drawn
  from the visit counts to the power ``1/τ``."""
  if temperature == 0.0:
    return greedy, jax.nn.one_hot(greedy, visits.shape[-1], dtype=jnp.float32)
  counts = visits.astype(jnp.float32)
  scaled = jnp.where(legal & (counts > 0),
                     jnp.exp((jnp.log(jnp.maximum(counts, 1.0)) -
                              jnp.log(jnp.maximum(most, 1)).astype(jnp.float32)) / temperature),
                     0.0)
  weights = scaled / jnp.maximum(jnp.sum(scaled, axis=-1, keepdims=True), 1e-30)
  sampled = jax.vmap(jax.random.categorical)(
      per_item_keys(key, visits.shape[0]), jnp.where(weights > 0, jnp.log(weights), -jnp.inf))
  return jnp.where(jnp.any(weights > 0, axis=-1), sampled, greedy), weights


def root_summary(tree: Tree, num_actions: int, temperature: float, key,
                 config: Optional[search_lib.SearchConfig] = None,
                 has_bound: bool = False, has_upper: bool = False,
                 value_bounds: Optional[tuple[float, float]] = None) -> PolicyOutput:
  """Turns the roots of ``tree`` into a :class:`PolicyOutput`.

  ``value_bounds`` (the game's :attr:`~jaxsearch.game.Game.value_bounds`, ``(lo, hi)`` or
  ``None``) clips the reported ``root_value`` and ``q_values``, after the action is chosen
  from the unclipped ones: values the game cannot take are never reported, and the choice
  (and every statistic of the tree, the certified bounds included) is the same with or
  without them.

  The greedy action is the most visited, ties broken by Q — with the Bellman backup
  (``config.backup``) by the debiased q̂3, which ``q_values`` then reports for every active
  slot, and solved slots (exact values, no more visits) compete too. Measured on Garnet MDPs
  (``jaxsearch bench sample-efficiency``): under Thompson sampling the argmax of q̂3 flips
  between lightly visited actions and recommends worse actions than the visit counts, which
  estimate each action's chance of being the best.
  """
  rule = search_lib.MeanBackup() if config is None else config.backup
  root = jax.tree.map(lambda x: x[:, 0], tree.slots)
  visits = _to_actions(tree, num_actions, jnp.where(root.legal, root.visits, 0), "add")
  legal = _to_actions(tree, num_actions, root.legal, "max")
  root_value = tree.nodes.value[:, 0]
  most = jnp.max(jnp.where(legal, visits, -1), axis=-1, keepdims=True)
  # The backup says which root slots report their own Q (q̂3 with the Bellman backup).
  shown, slot_q, exact = rule.root_slots(tree)
  q_values = jnp.where(_to_actions(tree, num_actions, shown, "max"),
                       _to_actions(tree, num_actions, slot_q, "add"), root_value[:, None])
  if exact is None:
    candidates = legal & (visits == most)
  else:
    # An exact (solved) slot gets no more visits (the descent skips it), so it competes on
    # value with the most visited ones.
    candidates = legal & ((visits == most) | _to_actions(tree, num_actions, exact, "max"))
  # Most visited, ties broken by Q (q̂3 with the Bellman backup), then by index.
  greedy = jax.vmap(masked_argmax)(q_values, candidates)
  has_action = jnp.any(legal, axis=-1)
  action, weights = _from_visits(visits, legal, most, greedy, temperature, key)
  if value_bounds is not None:
    lo, hi = (jnp.float32(v) for v in value_bounds)
    root_value, q_values = jnp.clip(root_value, lo, hi), jnp.clip(q_values, lo, hi)
  return PolicyOutput(action=jnp.where(has_action, action, -1).astype(jnp.int32),
                      action_weights=jnp.where(has_action[:, None], weights, 0.0),
                      visit_counts=visits, root_value=root_value, q_values=q_values, tree=tree,
                      root_bound=tree.bounds.bound[:, 0] if has_bound else None,
                      root_solved=tree.bounds.solved[:, 0],
                      root_upper=(tree.bounds.upper[:, 0] if has_upper and rule.keeps_bounds
                                  else None))
