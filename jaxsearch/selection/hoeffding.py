"""Hoeffding upper confidence bound (the AVTS article; docs/algorithms.md §1)."""

from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import NodeView, SelectionRule


def hoeffding(value_range: tuple[float, float], p: float = 0.999) -> SelectionRule:
  """``argmax q̂3(a) + (U − L)·sqrt(−ln p / 2)·(n(a) + 1)^(−1/2)``.

  Args:
    value_range: ``(L, U)``, bounds on a value (Wordle: ``(-6, 0)``).
    p: the confidence parameter of the AVTS article (0.999).
  """
  lo, hi = value_range
  if not hi > lo:
    raise ValueError(f"hoeffding: value_range needs hi > lo, got {value_range}")
  if not 0.0 < p < 1.0:
    raise ValueError(f"hoeffding: p must be in (0, 1), got {p}")
  factor = (hi - lo) * math.sqrt(-math.log(p) / 2.0)

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    return view.debiased_values + factor * jax.lax.rsqrt(
        view.child_visits.astype(jnp.float32) + 1.0)

  return SelectionRule("hoeffding", score)
