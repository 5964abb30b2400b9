"""UCT: UCB1 applied to trees (Kocsis & Szepesvári 2006; docs/algorithms.md §1)."""

from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import NodeView, QTransform, SelectionRule, q_range


def uct(exploration: float = math.sqrt(2.0), q_transform: Optional[QTransform] = None,
        value_range: tuple[float, float] = (-1.0, 1.0)) -> SelectionRule:
  """``argmax q(a) + c * sqrt(ln N / n(a))`` with unvisited slots first.

  Args:
    exploration: ``c``; the classic ``sqrt(2)`` assumes ``q`` in ``[0, 1]``.
    q_transform: how Q is scaled before the bonus is added; default maps ``value_range`` to
      ``[0, 1]`` so ``c = sqrt(2)`` keeps its textbook meaning.
    value_range: ``(lo, hi)`` of values, used by the default ``q_transform``.
  """
  transform = q_transform if q_transform is not None else q_range(*value_range)

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    n = view.child_visits.astype(jnp.float32)
    total = jnp.maximum(jnp.sum(n), 1.0)
    bonus = exploration * jnp.sqrt(jnp.log(total) / jnp.maximum(n, 1.0))
    return jnp.where(view.child_visits > 0, transform(view) + bonus, jnp.inf)

  return SelectionRule("uct", score)
