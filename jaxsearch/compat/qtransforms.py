"""mctx's Q transforms, under mctx's names and signatures: ``f(tree, node_index, **kw)``.

Each maps the Q-values of one node of an *unbatched* :class:`~jaxsearch.compat.Tree` to the
scores a selection rule adds to its prior term (``f32[A]``). They run on the trees the
policies return and, inside a search, on the one-node trees the engine's selection sees
(:func:`jaxsearch.compat.tree.node_tree`). Configure them with ``functools.partial`` as in
mctx. mctx's own functions work here too (they only use ``tree.qvalues`` and the node's
fields).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch.compat.tree import Tree


def qtransform_by_min_max(tree: Tree, node_index, *, min_value, max_value) -> jax.Array:
  """``(Q − min_value) / (max_value − min_value)`` for visited actions, 0 for unvisited
  ones (``f32[A]``)."""
  qvalues = tree.qvalues(node_index)
  visits = tree.children_visits[node_index]
  score = jnp.where(visits > 0, qvalues, min_value)
  return (score - min_value) / (max_value - min_value)


def qtransform_by_parent_and_siblings(tree: Tree, node_index, *, epsilon=1e-8) -> jax.Array:
  """Q normalised to ``[0, 1]`` by the min and max over the node's value and its visited
  children's Q; unvisited actions get 0 (``f32[A]``). mctx's default for MuZero."""
  qvalues = tree.qvalues(node_index)
  visits = tree.children_visits[node_index]
  node_value = tree.node_values[node_index]
  safe = jnp.where(visits > 0, qvalues, node_value)
  lo = jnp.minimum(node_value, jnp.min(safe, axis=-1))
  hi = jnp.maximum(node_value, jnp.max(safe, axis=-1))
  completed = jnp.where(visits > 0, qvalues, lo)
  return (completed - lo) / jnp.maximum(hi - lo, epsilon)


def qtransform_completed_by_mix_value(tree: Tree, node_index, *, value_scale=0.1,
                                      maxvisit_init=50.0, rescale_values=True,
                                      use_mixed_value=True, epsilon=1e-8) -> jax.Array:
  """Gumbel MuZero's completed Q (Danihelka et al. 2022), ``f32[A]``.

  Unvisited actions take the mixed value (:func:`_compute_mixed_value`, or the raw value
  with ``use_mixed_value=False``); the completed Q are min-max rescaled to ``[0, 1]`` over
  all actions (``rescale_values``) and multiplied by ``(maxvisit_init + max n) ·
  value_scale``.
  """
  qvalues = tree.qvalues(node_index)
  visits = tree.children_visits[node_index]
  raw_value = tree.raw_values[node_index]
  probs = jax.nn.softmax(tree.children_prior_logits[node_index])
  value = (_compute_mixed_value(raw_value, qvalues, visits, probs) if use_mixed_value
           else raw_value)
  completed = _complete_qvalues(qvalues, visit_counts=visits, value=value)
  if rescale_values:
    completed = _rescale_qvalues(completed, epsilon)
  return (maxvisit_init + jnp.max(visits, axis=-1)) * value_scale * completed


def _rescale_qvalues(qvalues, epsilon):
  """Min-max rescale over the last axis to ``[0, 1]``."""
  lo = jnp.min(qvalues, axis=-1, keepdims=True)
  hi = jnp.max(qvalues, axis=-1, keepdims=True)
  return (qvalues - lo) / jnp.maximum(hi - lo, epsilon)


def _complete_qvalues(qvalues, *, visit_counts, value):
  """``qvalues`` where visited, ``value`` (a scalar) elsewhere."""
  return jnp.where(visit_counts > 0, qvalues, value)


def _compute_mixed_value(raw_value, qvalues, visit_counts, prior_probs):
  """v_mix = (v̂ + N · Σ_visited π(a) Q(a) / Σ_visited π(a)) / (N + 1), N = Σ n.

  Args:
    raw_value: ``f32[]`` the node's value estimate v̂.
    qvalues: ``f32[A]`` (read only where visited).
    visit_counts: ``[A]``.
    prior_probs: ``f32[A]`` (zeros allowed: they are raised to the smallest normal float so
      that a visited action with zero prior still counts and nothing divides by zero).
  Returns:
    ``f32[]``; v̂ when nothing is visited.
  """
  total = jnp.sum(visit_counts, axis=-1)
  probs = jnp.maximum(jnp.finfo(prior_probs.dtype).tiny, prior_probs)
  visited = visit_counts > 0
  prob_sum = jnp.sum(jnp.where(visited, probs, 0.0), axis=-1)
  weighted_q = jnp.sum(jnp.where(visited, probs * qvalues / jnp.where(visited, prob_sum, 1.0),
                                 0.0), axis=-1)
  return (raw_value + total * weighted_q) / (total + 1)
