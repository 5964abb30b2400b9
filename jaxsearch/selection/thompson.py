"""Thompson sampling on AVTS's debiased values (the AVTS article; docs/algorithms.md §2).

Each selectable slot draws ``q̃(a) ~ N(q̂3(a), σ²(s, n(a)))`` and the largest draw wins: an
action is chosen with the probability that it is the best, with no exploration constant.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import NodeView, SelectionRule


def thompson_draw(view: NodeView, key: jax.Array) -> jax.Array:
  """``f32[K]`` one Gaussian draw per slot around q̂3 with variance σ² (unmasked)."""
  noise = jax.random.normal(key, view.debiased_values.shape, jnp.float32)
  return view.debiased_values + jnp.sqrt(jnp.maximum(view.value_variance, 0.0)) * noise


def thompson() -> SelectionRule:
  """Thompson sampling: ``argmax_a q̃(a)``, ``q̃(a) ~ N(q̂3(a), σ²(s, n(a)))`` independently.

  Needs a key (one draw per node visited by a simulation). With zero variance (no statistics
  yet, or ``variance="off"``) it is greedy on q̂3.
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    return thompson_draw(view, key)

  return SelectionRule("thompson", score, needs_key=True)


def thompson_top_k(view: NodeView, key: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """The ``k`` best slots of **one** draw: ``k`` distinct actions for parallel leaves.

  Args:
    view: one node (no batch axis).
    key: a PRNG key.
    k: static number of slots, ``1 <= k <= K``.
  Returns:
    ``(slots i32[k], valid bool[k])``: slots by decreasing draw; ``valid`` is False for entries
    beyond the number of selectable slots.
  """
  num_slots = view.legal.shape[-1]
  if not 1 <= k <= num_slots:
    raise ValueError(f"thompson_top_k: k must be in [1, K={num_slots}], got {k}")
  draw = jnp.where(view.legal, thompson_draw(view, key), -jnp.inf)
  values, slots = jax.lax.top_k(draw, k)
  return slots.astype(jnp.int32), values > -jnp.inf
