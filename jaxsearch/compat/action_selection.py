"""mctx's action selection functions, and the jaxsearch selection rules built from them.

The public functions have mctx's signatures, ``f(rng_key, tree, node_index, depth)`` on an
unbatched :class:`~jaxsearch.compat.Tree`, and return an action. The policies do not call
them node by node: they hand the engine :class:`~jaxsearch.selection.SelectionRule` s built
from the same score functions (``*_scores`` below), which the engine evaluates on one node
at a time (:func:`jaxsearch.compat.tree.node_tree`) and argmaxes over the legal slots, ties
to the lowest action.

Tie-breaking: mctx adds ``1e-7 · U[0, 1)`` noise to the MuZero scores at every step; the
rules here break ties by the lowest action unless built with ``tie_noise=True`` (mctx's
noise, same distribution, not the same draws).
"""

from __future__ import annotations

from typing import Callable, Optional

import chex
import jax
import jax.numpy as jnp

from jaxsearch.compat import qtransforms
from jaxsearch.compat import seq_halving
from jaxsearch.compat.tree import Tree, Unavailable, node_tree
from jaxsearch.gumbel import first_phase_count, top_slots
from jaxsearch.selection.base import NodeView, RootContext, RootRule, SelectionRule

TIE_NOISE = 1e-7


@chex.dataclass(frozen=True)
class GumbelMuZeroExtraData:
  """Gumbel MuZero's ``tree.extra_data``: ``root_gumbel`` ``f32[B, A]``, the search's draw."""

  root_gumbel: chex.Array


def masked_argmax(to_argmax, invalid_actions) -> jax.Array:
  """``i32`` the first maximum of ``to_argmax`` over the valid actions (action 0 if none)."""
  if invalid_actions is not None:
    to_argmax = jnp.where(invalid_actions, -jnp.inf, to_argmax)
  return jnp.argmax(to_argmax, axis=-1).astype(jnp.int32)


def switching_action_selection_wrapper(root_action_selection_fn, interior_action_selection_fn):
  """One function that uses ``root_action_selection_fn`` at depth 0, the other elsewhere."""

  def select(rng_key, tree, node_index, depth):
    return jax.lax.cond(depth == 0,
                        lambda: root_action_selection_fn(rng_key, tree, node_index),
                        lambda: interior_action_selection_fn(rng_key, tree, node_index, depth))

  return select


# ---- MuZero (PUCT) ---------------------------------------------------------------------

def muzero_scores(tree: Tree, node_index, *, pb_c_init=1.25, pb_c_base=19652.0,
                  qtransform=qtransforms.qtransform_by_parent_and_siblings) -> jax.Array:
  """``f32[A]`` MuZero's PUCT scores: ``q̄(a) + c(N) · π(a) · sqrt(N) / (1 + n(a))`` with
  ``N`` the node's visit count, ``c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)``,
  ``π`` the softmax of the prior logits and ``q̄`` the Q transform."""
  visits = tree.children_visits[node_index]
  node_visits = tree.node_visits[node_index]
  pb_c = pb_c_init + jnp.log((node_visits + pb_c_base + 1.0) / pb_c_base)
  probs = jax.nn.softmax(tree.children_prior_logits[node_index])
  policy_score = jnp.sqrt(node_visits) * pb_c * probs / (visits + 1)
  return qtransform(tree, node_index) + policy_score


def muzero_action_selection(rng_key, tree: Tree, node_index, depth, *, pb_c_init=1.25,
                            pb_c_base=19652.0,
                            qtransform=qtransforms.qtransform_by_parent_and_siblings
                            ) -> jax.Array:
  """mctx's MuZero action selection (PUCT with its tie-break noise; root actions masked by
  ``tree.root_invalid_actions`` at depth 0). Returns ``i32[]``."""
  scores = muzero_scores(tree, node_index, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                         qtransform=qtransform)
  scores = scores + TIE_NOISE * jax.random.uniform(rng_key, (tree.num_actions,))
  return masked_argmax(scores, tree.root_invalid_actions * (depth == 0))


def muzero_rule(*, pb_c_init=1.25, pb_c_base=19652.0,
                qtransform=qtransforms.qtransform_by_parent_and_siblings,
                tie_noise: bool = False) -> SelectionRule:
  """The engine rule scoring slots with :func:`muzero_scores` (the engine masks the root's
  invalid actions and takes the first maximum). ``pb_c_init``/``pb_c_base`` may be traced
  arrays. ``tie_noise`` adds mctx's ``1e-7 · U[0, 1)`` noise (one key per node and step)."""

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    scores = muzero_scores(node_tree(view), 0, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                           qtransform=qtransform)
    if tie_noise:
      scores = scores + TIE_NOISE * jax.random.uniform(key, scores.shape)
    return scores

  return SelectionRule("mctx_muzero", score, needs_key=tie_noise)


# ---- Gumbel MuZero ---------------------------------------------------------------------

def gumbel_root_scores(tree: Tree, node_index, *, num_simulations: int,
                       max_num_considered_actions: int,
                       qtransform=qtransforms.qtransform_completed_by_mix_value) -> jax.Array:
  """``f32[A]`` the Sequential Halving scores of the root's next simulation
  (:func:`seq_halving.score_considered` at the considered visit count of simulation
  ``Σ n(a)``; ``tree.extra_data.root_gumbel`` is the Gumbel draw)."""
  visits = tree.children_visits[node_index]
  logits = tree.children_prior_logits[node_index]
  completed = qtransform(tree, node_index)
  table = jnp.array(seq_halving.get_table_of_considered_visits(
      max_num_considered_actions, num_simulations), jnp.int32).reshape(
          max_num_considered_actions + 1, num_simulations)
  num_valid = jnp.sum(1 - tree.root_invalid_actions, axis=-1).astype(jnp.int32)
  num_considered = jnp.minimum(max_num_considered_actions, num_valid)
  considered = table[num_considered, jnp.sum(visits, -1)]
  return seq_halving.score_considered(considered, tree.extra_data.root_gumbel, logits,
                                      completed, visits)


def gumbel_muzero_root_action_selection(rng_key, tree: Tree, node_index, *, num_simulations,
                                        max_num_considered_actions,
                                        qtransform=qtransforms.qtransform_completed_by_mix_value
                                        ) -> jax.Array:
  """mctx's Gumbel MuZero root selection (Sequential Halving with Gumbel). ``i32[]``."""
  del rng_key
  scores = gumbel_root_scores(tree, node_index, num_simulations=num_simulations,
                              max_num_considered_actions=max_num_considered_actions,
                              qtransform=qtransform)
  return masked_argmax(scores, tree.root_invalid_actions)


def gumbel_interior_scores(tree: Tree, node_index,
                           qtransform=qtransforms.qtransform_completed_by_mix_value
                           ) -> jax.Array:
  """``f32[A]`` Gumbel MuZero's deterministic interior scores:
  ``softmax(logits + completedQ)(a) − n(a) / (1 + Σ n)``."""
  visits = tree.children_visits[node_index]
  logits = tree.children_prior_logits[node_index]
  probs = jax.nn.softmax(logits + qtransform(tree, node_index))
  return probs - visits / (1 + jnp.sum(visits, keepdims=True, axis=-1))


def gumbel_muzero_interior_action_selection(
    rng_key, tree: Tree, node_index, depth, *,
    qtransform=qtransforms.qtransform_completed_by_mix_value) -> jax.Array:
  """mctx's Gumbel MuZero interior selection (deterministic). ``i32[]``."""
  del rng_key, depth
  return jnp.argmax(gumbel_interior_scores(tree, node_index, qtransform),
                    axis=-1).astype(jnp.int32)


def gumbel_rules(*, num_simulations: int, max_num_considered_actions: int,
                 qtransform=qtransforms.qtransform_completed_by_mix_value
                 ) -> tuple[RootRule, SelectionRule]:
  """``(root rule, interior rule)`` of Gumbel MuZero for the engine. The root rule reads the
  Gumbel draw from the engine's per-search root draw (``root_noise``) and the root's exact
  value estimate from its context."""
  if not isinstance(max_num_considered_actions, int) or max_num_considered_actions < 0:
    raise ValueError("max_num_considered_actions must be a non-negative Python int (it sizes "
                     f"a static table), got {max_num_considered_actions!r}")

  def root_score(view: NodeView, context: RootContext) -> jax.Array:
    tree = node_tree(view, raw_value=context.raw_value,
                     extra_data=GumbelMuZeroExtraData(root_gumbel=context.noise))
    return gumbel_root_scores(tree, 0, num_simulations=num_simulations,
                              max_num_considered_actions=max_num_considered_actions,
                              qtransform=qtransform)

  def interior_score(view: NodeView, key) -> jax.Array:
    del key
    return gumbel_interior_scores(node_tree(view), 0, qtransform)

  def opening(logits, legal, noise, width):
    # Before a visit every score has q̂ = 0; after, the unvisited share one q̂.
    scores = jnp.maximum(-1e9, noise + (logits - jnp.max(logits)))
    return (top_slots(scores, legal, width),
            first_phase_count(max_num_considered_actions, legal, num_simulations))

  # mctx's Q transforms give every unvisited action one value, so the first phase's order is
  # known up front (jaxsearch.search.opening); a user's transform might not.
  builtin = getattr(qtransform, "func", qtransform) in _SHARED_UNVISITED_Q
  return (RootRule("mctx_gumbel_root", root_score,
                   opening=opening if builtin and max_num_considered_actions > 0 else None,
                   opening_width=min(max_num_considered_actions, num_simulations)),
          SelectionRule("mctx_gumbel_interior", interior_score))


# The Q transforms under which the unvisited actions of a node share one transformed value.
_SHARED_UNVISITED_Q = (qtransforms.qtransform_completed_by_mix_value,
                       qtransforms.qtransform_by_parent_and_siblings,
                       qtransforms.qtransform_by_min_max)


# ---- Stochastic MuZero -------------------------------------------------------------------

def _slice_view(view: NodeView, start: int, stop: int) -> NodeView:
  """The view restricted to slots ``start:stop`` (node statistics unchanged)."""
  return view.replace(
      child_visits=view.child_visits[start:stop], child_values=view.child_values[start:stop],
      prior_logits=view.prior_logits[start:stop], action_values=view.action_values[start:stop],
      legal=view.legal[start:stop], debiased_values=view.debiased_values[start:stop],
      value_variance=view.value_variance[start:stop],
      upper_bounds=view.upper_bounds[start:stop],
      child_exploration=(None if view.child_exploration is None
                         else view.child_exploration[start:stop]))


def stochastic_rule(num_actions: int, decision_scores: Callable[[Tree], jax.Array],
                    tie_noise: bool = False) -> SelectionRule:
  """Stochastic MuZero's selection over ``A`` action slots then ``C`` chance slots.

  Nodes alternate by depth: even depths are decision nodes (``decision_scores`` of the
  one-node tree of the action slots), odd depths are chance nodes (afterstates), where the
  outcome ``argmax p(c) / (1 + n(c))`` is chosen, ``p`` the softmax of the chance logits.
  """

  def score(view: NodeView, key) -> jax.Array:
    width = view.child_visits.shape[-1]
    decision = decision_scores(node_tree(_slice_view(view, 0, num_actions)))
    if tie_noise:
      decision = decision + TIE_NOISE * jax.random.uniform(key, decision.shape)
    chance_view = _slice_view(view, num_actions, width)
    chance = jax.nn.softmax(chance_view.prior_logits) / (chance_view.child_visits + 1)
    minus_inf = jnp.full((width - num_actions,), -jnp.inf)
    return jnp.where(view.depth % 2 == 0,
                     jnp.concatenate([decision, minus_inf]),
                     jnp.concatenate([jnp.full((num_actions,), -jnp.inf), chance]))

  return SelectionRule("mctx_stochastic", score, needs_key=tie_noise)


# ---- any mctx selection function ----------------------------------------------------------

_NO_EXTRA = ("inside a jaxsearch.compat search, selection functions see tree.extra_data only "
             "when it is a GumbelMuZeroExtraData (the root's Gumbel draw)")


def function_rules(root_fn, interior_fn, gumbel: bool
                   ) -> tuple[Optional[RootRule], SelectionRule]:
  """Engine rules from mctx-style selection functions (they see a one-node tree; the action
  they return gets score 1, every other slot 0).

  Without ``gumbel`` one rule serves every depth (``root_fn`` at depth 0) and gets a fresh
  key per node and step. With ``gumbel`` the root function runs as the engine's root rule,
  sees ``extra_data = GumbelMuZeroExtraData(root_gumbel=the search's draw)`` and gets a key
  that depends on the simulation only.
  """

  def one_hot(action, width):
    return jax.nn.one_hot(action, width, dtype=jnp.float32)

  def interior(view: NodeView, key) -> jax.Array:
    width = view.child_visits.shape[-1]
    tree = node_tree(view, extra_data=Unavailable(_NO_EXTRA))
    root_key, interior_key = jax.random.split(key)
    chosen = interior_fn(interior_key, tree, 0, view.depth)
    if not gumbel:
      chosen = jnp.where(view.depth == 0, root_fn(root_key, tree, 0), chosen)
    return one_hot(chosen, width)

  rule = SelectionRule("mctx_function", interior, needs_key=True)
  if not gumbel:
    return None, rule

  def root(view: NodeView, context: RootContext) -> jax.Array:
    tree = node_tree(view, raw_value=context.raw_value,
                     extra_data=GumbelMuZeroExtraData(root_gumbel=context.noise))
    key = jax.random.fold_in(jax.random.PRNGKey(0), context.simulation)
    return one_hot(root_fn(key, tree, 0), view.child_visits.shape[-1])

  return RootRule("mctx_function_root", root), rule
