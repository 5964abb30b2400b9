"""Proof-directed selection: follow the best optimistic bound (AO*-like best-first search).

Used by the solver (:mod:`jaxsearch.solve`) to close the gap between the achievable and the
optimistic bound: the slot whose admissible bound is highest is the one that must be expanded
(or shown worse) before optimality can be certified.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import NodeView, SelectionRule


def optimistic() -> SelectionRule:
  """``argmax`` of each slot's optimistic bound; ties go to the better debiased value q̂3.

  Needs the Bellman backup and a game with an ``optimistic_value`` (otherwise every bound is
  the same sentinel and the rule is greedy on q̂3).
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    # Lexicographic: the bound first, q̂3 only among (near-)equal bounds.
    best = jnp.max(jnp.where(view.legal, view.upper_bounds, -jnp.inf))
    tied = view.upper_bounds >= best - 1e-6 * jnp.maximum(1.0, jnp.abs(best))
    return jnp.where(tied, view.debiased_values, -jnp.inf)

  return SelectionRule("optimistic", score)
