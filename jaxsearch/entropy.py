"""Subtree entropy for entropy-guided PUCT (lc0 issue #780; docs/algorithms.md §4).

A playout from node ``n`` follows a *playout policy* ``π_n`` at every decision node (and the
outcome probabilities at chance records) until it reaches a **frontier leaf**: an unexpanded
legal edge, an unexpanded chance outcome, or a terminal node. ``H(n)`` is the entropy (nats)
of the distribution over those leaves and ``K(n)`` their number. By the chain rule of entropy

    H(n) = H(π_n) + Σ_b π_n(b)·H_edge(b),     K(n) = Σ_legal K_edge(b),
    H_edge(b) = H(p_b) + Σ_o p_b(o)·H(child_o),   K_edge(b) = Σ_possible (K(child_o) or 1),

with an unexpanded edge (or outcome) a single leaf (``H = 0``, ``K = 1``) and a terminal node
``H = 0, K = 1``. The normalised entropy is ``E = H / ln K`` when ``K ≥ 2``, else 0, and
``E = 1`` for a subtree whose frontier leaves are all terminal (``closed``): there is nothing
left to discover, so the edge decays like plain PUCT.

The playout policy must give mass to unexpanded edges: ``π̂(a) = (1 + n(a)) / (|A| + N)``
(``"pi_hat"``, ``N = Σ_legal n``) or π̄ (``"pibar"``, Grill et al. 2020). Raw visit fractions
would give ``E = 0`` to every fresh node.

Only the nodes on a simulated path change (their visits, values and one child), so the engine
recomputes ``H, K, closed`` for those nodes only, leaf to root, in ``O(D·K·O)``
(:func:`jaxsearch.search` keeps them in ``Tree.entropy``, a :class:`jaxsearch.tree.EntropyStats`).
Everything here is one node (no batch axis); the engine vmaps.

The **one-level proxy** (``mode="one_level"``) ignores the subtree: ``H(n) = H(π_n)`` and
``K(n) = |A|``, i.e. ``E`` of a child is the normalised entropy of its own playout policy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch.enums import EntropyPolicy, SubtreeEntropy, coerce
from jaxsearch.selection.base import NodeView, masked_softmax
from jaxsearch.selection.pibar import pibar_policy


def plogp_entropy(p: jax.Array, axis: int = -1) -> jax.Array:
  """``-Σ p log p`` over ``axis`` (0 log 0 = 0), nats."""
  p = jnp.asarray(p, jnp.float32)
  return -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), axis=axis)


def pi_hat(visits: jax.Array, legal: jax.Array) -> jax.Array:
  """``f32[K]`` π̂(a) = (1 + n(a)) / (|A| + N) over the legal slots (0 elsewhere)."""
  legal = jnp.asarray(legal, bool)
  counts = jnp.where(legal, 1.0 + jnp.asarray(visits, jnp.float32), 0.0)
  return counts / jnp.maximum(jnp.sum(counts), 1.0)


def playout_policy(view: NodeView, policy: EntropyPolicy = EntropyPolicy.PI_HAT,
                   pibar_c: float = 1.25) -> jax.Array:
  """``f32[K]`` the playout policy of one node: π̂ or π̄ (see the module docstring)."""
  if coerce(EntropyPolicy, policy, "policy") is EntropyPolicy.PI_HAT:
    return pi_hat(view.child_visits, view.legal)
  return pibar_policy(view, pibar_c)


def fresh_node(legal: jax.Array, prior_logits: jax.Array, terminal: jax.Array,
               policy: EntropyPolicy = EntropyPolicy.PI_HAT
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(H, K, closed)`` of a just-created node, all of whose legal edges are unexpanded:
  ``π̂`` is uniform and π̄ is the prior (``N = 0``). Works on ``[..., K]`` rows."""
  legal = jnp.asarray(legal, bool)
  if coerce(EntropyPolicy, policy, "policy") is EntropyPolicy.PI_HAT:
    probs = legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
  else:
    probs = masked_softmax(prior_logits, legal)
  entropy = jnp.where(terminal, 0.0, plogp_entropy(probs))
  leaves = jnp.where(terminal, 1.0, jnp.maximum(jnp.sum(legal, axis=-1), 1).astype(jnp.float32))
  return entropy, leaves, jnp.asarray(terminal, bool)


def edge_stats(has_chance: jax.Array, probs: jax.Array, children: jax.Array,
               child_entropy: jax.Array, child_leaves: jax.Array, child_closed: jax.Array
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(H_edge f32[K], K_edge f32[K], closed_edge bool[K])`` of one node's slots.

  Args:
    has_chance: ``bool[K]`` the slot was expanded (has a chance record).
    probs: ``f32[K, O]`` outcome probabilities of each slot's record.
    children: ``i32[K, O]`` child nodes (``-1`` unexpanded outcome).
    child_entropy, child_leaves, child_closed: ``[K, O]`` the children's ``H, K, closed``.
  """
  possible = (probs > 0) & has_chance[:, None]
  expanded = possible & (children >= 0)
  entropy = plogp_entropy(jnp.where(possible, probs, 0.0)) + jnp.sum(
      jnp.where(expanded, probs * child_entropy, 0.0), axis=-1)
  leaves = jnp.sum(jnp.where(possible, jnp.where(expanded, child_leaves, 1.0), 0.0), axis=-1)
  closed = has_chance & jnp.all(jnp.where(possible, expanded & child_closed, True), axis=-1)
  return (jnp.where(has_chance, entropy, 0.0), jnp.where(has_chance, leaves, 1.0), closed)


def normalized(entropy: jax.Array, leaves: jax.Array, closed: jax.Array) -> jax.Array:
  """``E = H / ln K`` (``K ≥ 2``), 0 for a single leaf, 1 when every leaf is terminal."""
  many = leaves >= 1.5
  ratio = entropy / jnp.where(many, jnp.log(jnp.maximum(leaves, 2.0)), 1.0)
  return jnp.where(closed, 1.0, jnp.where(many, jnp.clip(ratio, 0.0, 1.0), 0.0))


def edge_exploration(has_chance, probs, children, child_entropy, child_leaves, child_closed
                     ) -> jax.Array:
  """``f32[K]`` E(s, a) of each slot of one node (0 for unexpanded slots)."""
  entropy, leaves, closed = edge_stats(has_chance, probs, children, child_entropy,
                                       child_leaves, child_closed)
  return jnp.where(has_chance, normalized(entropy, leaves, closed), 0.0)


def node_stats(policy_probs: jax.Array, legal: jax.Array, terminal: jax.Array,
               edge_entropy: jax.Array, edge_leaves: jax.Array, edge_closed: jax.Array,
               mode: SubtreeEntropy = SubtreeEntropy.FULL
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(H, K, closed)`` of one node from its playout policy ``f32[K]`` and edge statistics."""
  mode = coerce(SubtreeEntropy, mode, "mode")
  legal = jnp.asarray(legal, bool)
  any_legal = jnp.any(legal)
  own = plogp_entropy(jnp.where(legal, policy_probs, 0.0))
  if mode is SubtreeEntropy.FULL:
    entropy = own + jnp.sum(jnp.where(legal, policy_probs * edge_entropy, 0.0))
    leaves = jnp.sum(jnp.where(legal, edge_leaves, 0.0))
    closed = any_legal & jnp.all(jnp.where(legal, edge_closed, True))
  else:
    entropy = own
    leaves = jnp.sum(legal).astype(jnp.float32)
    closed = jnp.bool_(False)
  entropy = jnp.where(terminal | ~any_legal, 0.0, entropy)
  leaves = jnp.where(terminal | ~any_legal, 1.0, leaves)
  return entropy, leaves, jnp.asarray(terminal, bool) | closed

