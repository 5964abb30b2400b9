"""PUCT: the prior-weighted rule of AlphaZero and MuZero (ALGORITHMS.md §1).

``argmax q̄(a) + c(N) * π(a) * sqrt(N) / (1 + n(a))`` where ``π`` is the softmax of the prior
logits over legal slots and ``q̄`` is Q after a :data:`QTransform` (per-node min-max by default).

Visit convention, chosen on purpose and pinned by a test: ``N`` is the **node's** visit count,
which is ``1 + sum(n)`` once the node is expanded — the convention of mctx. With ``sum(n)``
instead (``visit_convention="children"``, the AlphaZero paper's ``sum_b N(s, b)``) the prior
has no effect on a node's first selection, which then falls to the lowest slot index.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import (NodeView, QTransform, SelectionRule, masked_softmax,
                                      q_minmax)

MUZERO_C1 = 1.25
MUZERO_C2 = 19652.0


def puct(c: Optional[float] = None, c1: float = MUZERO_C1, c2: float = MUZERO_C2,
         q_transform: QTransform = q_minmax,
         visit_convention: str = "node") -> SelectionRule:
  """The PUCT rule.

  Args:
    c: a constant exploration weight (AlphaZero form). ``None`` (default) uses the MuZero
      schedule ``c1 + log((N + c2 + 1) / c2)``.
    c1, c2: the MuZero schedule's constants.
    q_transform: Q scaling (default: per-node min-max over the node value and visited slots).
    visit_convention: ``"node"`` (``N = 1 + sum(n)``, mctx) or ``"children"`` (``N = sum(n)``).
  """
  if visit_convention not in ("node", "children"):
    raise ValueError(
        f"visit_convention must be 'node' or 'children', got {visit_convention!r}")

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    if visit_convention == "node":
      total = view.visits.astype(jnp.float32)
    else:
      total = jnp.sum(view.child_visits).astype(jnp.float32)
    if c is None:
      weight = c1 + jnp.log((total + c2 + 1.0) / c2)
    else:
      weight = jnp.float32(c)
    prior = masked_softmax(view.prior_logits, view.legal)
    policy_score = jnp.sqrt(total) * weight * prior / (view.child_visits + 1)
    return q_transform(view) + policy_score

  return SelectionRule("puct", score)
