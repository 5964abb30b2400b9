"""Entropy-guided PUCT (lc0 issue #780; docs/algorithms.md §4).

``argmax q̄(a) + c(N)·π(a)·sqrt(N) / (1 + n(a)·E(s, a))`` with ``E(s, a)`` the normalised
entropy of the frontier-leaf distribution of the subtree below slot ``a``
(``NodeView.child_exploration``, kept by the engine when ``SearchConfig.entropy`` is set;
:mod:`jaxsearch.entropy`). ``E = 0`` for an unvisited slot and for a subtree with a single
leaf (a forced reply): such a move keeps its unvisited-level bonus; ``E ≈ 1`` for uniform
subtrees (plain PUCT) and ``E = 1`` for subtrees whose leaves are all terminal. Same visit
convention and Q transform as :func:`jaxsearch.selection.puct`.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import (NodeView, QTransform, SelectionRule, prior_probabilities,
                                      q_minmax)
from jaxsearch.selection.puct import MUZERO_C1, MUZERO_C2


def exploration_fraction(view: NodeView) -> jax.Array:
  """``view.child_exploration`` or a clear error when the search keeps no subtree entropy."""
  if view.child_exploration is None:
    raise ValueError("entropy_puct reads NodeView.child_exploration: configure the search with "
                     "subtree_entropy='full' or 'one_level' (SearchConfig.entropy="
                     "EntropyOptions(...); jaxsearch.policies.entropy_puct does)")
  return view.child_exploration


def entropy_puct(c: Optional[float] = None, c1: float = MUZERO_C1, c2: float = MUZERO_C2,
                 q_transform: QTransform = q_minmax) -> SelectionRule:
  """The entropy-guided PUCT rule.

  Args:
    c: constant exploration weight; ``None`` (default) uses the MuZero schedule
      ``c1 + log((N + c2 + 1) / c2)``.
    c1, c2: the schedule's constants.
    q_transform: Q scaling (default: per-node min-max, as PUCT).
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    exploration = exploration_fraction(view)
    total = view.visits.astype(jnp.float32)
    if c is None:
      weight = c1 + jnp.log((total + c2 + 1.0) / c2)
    else:
      weight = jnp.float32(c)
    prior = prior_probabilities(view)
    denominator = 1.0 + view.child_visits.astype(jnp.float32) * exploration
    return q_transform(view) + weight * prior * jnp.sqrt(total) / denominator

  return SelectionRule("entropy_puct", score, reads_prior_probs=True)
