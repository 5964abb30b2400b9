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
  """``argmax`` of each slot's optimistic bound; among ties the least visited slots, then the
  better debiased value q̂3 (a breadth-first probe of equally promising guesses finds a better
  policy sooner than deepening the favourite, and a proof must refine all of them anyway).
  Slots that progressive widening has not activated yet are candidates too: their bounds
  count in the node's, so a proof must be able to reach them.

  Needs the Bellman backup and a game with an ``optimistic_value`` (otherwise every bound is
  the same sentinel and the rule is greedy on q̂3).
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    # Lexicographic: the bound first, q̂3 only among (near-)equal bounds.
    best = jnp.max(jnp.where(view.legal, view.upper_bounds, -jnp.inf))
    tied = view.legal & (view.upper_bounds >= best - 1e-6 * jnp.maximum(1.0, jnp.abs(best)))
    fewest = jnp.min(jnp.where(tied, view.child_visits, jnp.iinfo(jnp.int32).max))
    return jnp.where(tied & (view.child_visits == fewest), view.debiased_values, -jnp.inf)

  return SelectionRule("optimistic", score, sees_inactive=True)
