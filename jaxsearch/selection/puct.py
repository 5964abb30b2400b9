"""PUCT: the prior-weighted rule of AlphaZero and MuZero (Silver et al. 2017; Schrittwieser et
al. 2020).

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

from jaxsearch.enums import PriorSource, VisitConvention, coerce
from jaxsearch.selection.base import (NodeView, QTransform, SelectionRule, masked_softmax,
                                      prior_probabilities, q_minmax)

MUZERO_C1 = 1.25
MUZERO_C2 = 19652.0


def q_debiased(view: NodeView) -> jax.Array:
  """AVTS's debiased values q̂3 as they are (every active slot has one)."""
  return view.debiased_values


def puct(c: Optional[float] = None, c1: float = MUZERO_C1, c2: float = MUZERO_C2,
         q_transform: QTransform = q_minmax,
         visit_convention: VisitConvention | str = VisitConvention.NODE,
         prior: PriorSource | str = PriorSource.LOGITS) -> SelectionRule:
  """The PUCT rule.

  Args:
    c: a constant exploration weight (AlphaZero form). ``None`` (default) uses the MuZero
      schedule ``c1 + log((N + c2 + 1) / c2)``.
    c1, c2: the MuZero schedule's constants.
    q_transform: Q scaling (default: per-node min-max over the node value and visited slots).
    visit_convention: :class:`~jaxsearch.enums.VisitConvention`: ``"node"``
      (``N = 1 + sum(n)``, mctx) or ``"children"`` (``N = sum(n)``).
    prior: :class:`~jaxsearch.enums.PriorSource`: ``"logits"`` (softmax of the estimator's
      prior logits) or ``"action_values"`` (softmax of its q̂1 over the selectable slots: PUCT
      without a policy head, as in T. Tyl, *Wordle Perfect Play with Generic Methods*, 2024;
      docs/algorithms.md).
  """
  visit_convention = coerce(VisitConvention, visit_convention, "visit_convention")
  prior = coerce(PriorSource, prior, "prior")

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    if visit_convention is VisitConvention.NODE:
      total = view.visits.astype(jnp.float32)
    else:
      total = jnp.sum(view.child_visits).astype(jnp.float32)
    if c is None:
      weight = c1 + jnp.log((total + c2 + 1.0) / c2)
    else:
      weight = jnp.float32(c)
    if prior is PriorSource.LOGITS:
      prior_probs = prior_probabilities(view)
    else:
      prior_probs = masked_softmax(view.action_values, view.legal)
    policy_score = jnp.sqrt(total) * weight * prior_probs / (view.child_visits + 1)
    return q_transform(view) + policy_score

  return SelectionRule("puct", score, reads_prior_probs=prior is PriorSource.LOGITS)


def value_prior_puct(c: float = 1.0) -> SelectionRule:
  """Seed 000's PUCT for action-value estimators: ``q̂3(a) + c·π(a)·sqrt(N)/(1 + n(a))`` with
  ``π`` = softmax of q̂1 over the selectable slots, ``N = sum(n)``, raw (unnormalised) q̂3."""
  return puct(c=c, q_transform=q_debiased, visit_convention="children", prior="action_values")
