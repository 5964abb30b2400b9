"""What a selection rule sees and returns.

A selection rule is a pure function of **one** node's statistics (a :class:`NodeView`, no
batch axis: the engine vmaps it) returning a score per slot; the engine masks illegal slots
and takes the first maximum, so ties break by slot index with no random numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class NodeView:
  """One decision node's statistics, as a selection rule sees them (``K`` slots).

  Attributes:
    visits: ``i32[]`` the node's visit count (``1 + sum(child_visits)`` once expanded).
    value: ``f32[]`` the node's running value (mover's view).
    child_visits: ``i32[K]``.
    child_values: ``f32[K]`` Q(s, a) of each slot (meaningless where ``child_visits == 0``).
    prior_logits: ``f32[K]`` (root Dirichlet noise already mixed in at the root).
    action_values: ``f32[K]`` the estimator's q̂1 (0 when it gives none).
    legal: ``bool[K]`` slots that may be chosen: legal, active (progressive widening) and, with
      the Bellman backup, not yet solved.
    depth: ``i32[]`` 0 at the root.
    debiased_values: ``f32[K]`` AVTS's q̂3: with the Bellman backup, the tree value q̂2 plus the
      node's expected remaining drift (:mod:`jaxsearch.debias`); with the running-mean backup,
      Q where visited and the estimator's q̂1 elsewhere.
    value_variance: ``f32[K]`` σ²(s, n(a)), the variance of the remaining drift of each slot's
      value (zeros without variance statistics).
    upper_bounds: ``f32[K]`` each slot's optimistic bound (Bellman backup with a game that
      has an ``optimistic_value``; ``+3e38`` where there is none).
    child_exploration: ``f32[K]`` E(s, a), the normalised entropy of the frontier-leaf
      distribution below each slot (docs/algorithms.md §4; 1 for a subtree whose leaves are all
      terminal, 0 for an unexpanded slot or a single leaf), or ``None`` when the search keeps
      no subtree entropy (``SearchConfig.entropy=None``).
    prior_probs: ``f32[K]`` ``masked_softmax(prior_logits, legal)`` where the engine keeps it
      per node (a rule with ``reads_prior_probs`` under the running-mean backup, without
      widening: then neither input changes after the node is created), else ``None``. Read it
      through :func:`prior_probabilities`.
  """

  visits: jax.Array
  value: jax.Array
  child_visits: jax.Array
  child_values: jax.Array
  prior_logits: jax.Array
  action_values: jax.Array
  legal: jax.Array
  depth: jax.Array
  debiased_values: jax.Array
  value_variance: jax.Array
  upper_bounds: jax.Array
  child_exploration: Optional[jax.Array] = None
  prior_probs: Optional[jax.Array] = None


def prior_probabilities(view: NodeView) -> jax.Array:
  """``f32[K]`` the softmax of the node's prior logits over its selectable slots: the copy the
  engine kept when the node was created, or computed here."""
  if view.prior_probs is not None:
    return view.prior_probs
  return masked_softmax(view.prior_logits, view.legal)


@struct.dataclass
class RootContext:
  """What a root-only rule sees besides the root's :class:`NodeView` (one tree, no batch).

  Attributes:
    noise: ``f32[K]`` the rule's per-search draw (e.g. Gumbel noise), drawn once per search.
    simulation: ``i32[]`` index of the current simulation within this search (0-based).
    raw_value: ``f32[]`` the estimator's value of the root state.
    reused: static: the search may have started from a kept tree (``run(..., tree=...)``), whose
      root arrives with visits already spent; ``False`` when every search starts from a fresh
      root, where a rule may rely on its own schedule of root visits.
  """

  noise: jax.Array
  simulation: jax.Array
  raw_value: jax.Array
  reused: bool = struct.field(pytree_node=False, default=True)


@dataclasses.dataclass(frozen=True)
class RootRule:
  """A root-only selection rule (``SearchConfig.root_selection``): the engine uses it for the
  first step of every descent and the ordinary :class:`SelectionRule` below the root.

  Attributes:
    name: for display.
    score: ``(view, context) -> f32[K]``; the engine takes the first legal maximum.
    noise: ``(key, shape) -> f32[shape]``, the per-search draw handed to ``score`` as
      ``context.noise`` (shape ``[B, K]``); ``None`` draws nothing (zeros).
    opening: ``(logits f32[K], legal bool[K], noise f32[K], width) -> (slots i32[width],
      count i32[])`` where the rule's first simulations from a fresh root are known before
      any of them runs: simulation ``i < count`` takes root slot ``slots[i]``, a different
      unexpanded slot each time, whatever the earlier ones found (Gumbel MuZero's first
      phase: the Gumbel-top-m of the logits). ``width`` (static) is at least ``count``
      wherever ``count`` can be reached. The engine then evaluates those children in one
      batched step instead of ``count`` simulations (:mod:`jaxsearch.search.opening`);
      ``None``: the rule has no such simulations.
    opening_width: the largest ``count`` ``opening`` returns (static; 0 without one).
  """

  name: str
  score: Callable[[NodeView, RootContext], jax.Array]
  noise: Optional[Callable[[jax.Array, tuple], jax.Array]] = None
  opening: Optional[Callable[..., tuple[jax.Array, jax.Array]]] = None
  opening_width: int = 0


@dataclasses.dataclass(frozen=True)
class SelectionRule:
  """A named scoring function ``(view, key) -> f32[K]``.

  ``needs_key`` says whether the rule draws random numbers; when it is ``False`` the engine
  passes ``None`` and spends no time on keys. ``sees_inactive``: under progressive widening
  the rule may pick any candidate slot, not only the active ones (``view.legal`` includes
  them); picking one activates every slot up to it. A rule that follows bounds needs this:
  a slot widening has not reached yet can hold the node's best optimistic bound.
  ``reads_prior_probs``: the rule reads :func:`prior_probabilities`; where that cannot change
  after a node is created, the engine computes it once per node instead of at every visit (a
  softmax is several kernels of every level of every descent).
  """

  name: str
  score: Callable[[NodeView, Optional[jax.Array]], jax.Array]
  needs_key: bool = False
  sees_inactive: bool = False
  reads_prior_probs: bool = False


def masked_argmax(scores: jax.Array, legal: jax.Array) -> jax.Array:
  """First index of the largest legal score (``i32[]``; 0 if nothing is legal)."""
  return jnp.argmax(jnp.where(legal, scores, -jnp.inf)).astype(jnp.int32)


def masked_softmax(logits: jax.Array, legal: jax.Array) -> jax.Array:
  """Softmax over the legal entries of ``logits`` (``[..., K]``).

  Illegal entries get 0. Where every legal logit is ``-inf`` (or nothing is legal) the result
  is uniform over the legal entries (all zeros when none is legal) instead of NaN.
  """
  masked = jnp.where(legal, logits, -jnp.inf)
  top = jnp.max(masked, axis=-1, keepdims=True)
  finite_top = jnp.isfinite(top)
  weights = jnp.where(legal & finite_top, jnp.exp(masked - jnp.where(finite_top, top, 0.0)),
                      0.0)
  weights = jnp.where(finite_top, weights, legal.astype(weights.dtype))
  total = jnp.sum(weights, axis=-1, keepdims=True)
  return weights / jnp.maximum(total, jnp.finfo(weights.dtype).tiny)


# ---- Q transforms: Q(s, ·) -> comparable scores, one node at a time ------------------------

QTransform = Callable[[NodeView], jax.Array]


def q_minmax(view: NodeView, epsilon: float = 1e-8) -> jax.Array:
  """Normalises Q over the node's value and its visited children (mctx's default).

  ``lo = min(V, min visited Q)``, ``hi = max(...)``, ``(Q - lo) / max(hi - lo, eps)``;
  unvisited slots get 0. Written in mctx's order of operations so that parity runs agree
  bit for bit.
  """
  visited = view.child_visits > 0
  safe_q = jnp.where(visited, view.child_values, view.value)
  lo = jnp.minimum(view.value, jnp.min(safe_q, axis=-1))
  hi = jnp.maximum(view.value, jnp.max(safe_q, axis=-1))
  completed = jnp.where(visited, view.child_values, lo)
  return (completed - lo) / jnp.maximum(hi - lo, epsilon)


def q_range(lo: float, hi: float) -> QTransform:
  """Maps Q from the fixed range ``[lo, hi]`` to ``[0, 1]``; unvisited slots get 0."""
  if not hi > lo:
    raise ValueError(f"q_range needs hi > lo, got ({lo}, {hi})")

  def transform(view: NodeView) -> jax.Array:
    return jnp.where(view.child_visits > 0, (view.child_values - lo) / (hi - lo), 0.0)

  return transform


def q_raw(view: NodeView) -> jax.Array:
  """Q as it is; unvisited slots get 0."""
  return jnp.where(view.child_visits > 0, view.child_values, 0.0)
