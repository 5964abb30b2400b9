"""The Laplace sampler of the AVTS article (docs/algorithms.md §1): a rule-of-succession
optimism bonus."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import NodeView, SelectionRule


def laplace(delta: float = 0.1) -> SelectionRule:
  """``argmax (q̂3·n + (q̂3 + δ)) / (n + 1) = q̂3 + δ / (n + 1)``.

  Args:
    delta: the optimistic offset δ of one imagined extra sample (the AVTS article: 0.1, in units of
      the game's values).
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    return view.debiased_values + delta / (view.child_visits.astype(jnp.float32) + 1.0)

  return SelectionRule("laplace", score)
