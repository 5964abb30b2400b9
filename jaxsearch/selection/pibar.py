"""The regularised policy π̄ of Grill et al. (2020) and the selection rules built on it.

Grill, Altché, Tang, Hubert, Valko, Antonoglou, Munos, "Monte-Carlo Tree Search as
Regularized Policy Optimization", ICML 2020 (docs/algorithms.md §3). At a node with action values
``q``, prior ``π_θ`` and ``N = Σ_b n(b)`` child visits,

    π̄ = argmax_{y ∈ Δ} qᵀy − λ_N·KL(π_θ ‖ y),        λ_N = c·sqrt(N) / (|A| + N),

has the closed form ``π̄(a) = λ_N·π_θ(a) / (α − q(a))`` where ``α`` is the unique root of
``Σ_a π̄(a) = 1`` in ``[max_b(q_b + λ_N·π_θ(b)), max_b q_b + λ_N]``. PUCT's action is an
approximate step toward π̄; the paper's SEARCH variant samples from π̄ at every node instead.

How α is found (no data-dependent loop, so it jits and vmaps): with the gaps
``d(a) = max q − q(a) ≥ 0`` and ``s = (α − max q) / λ``, the constraint reads
``f(s) = Σ_a π_θ(a) / (s + d(a)/λ) = 1``. ``f`` decreases in ``s``, ``f ≥ 1`` at
``s_lo = max_a(π_θ(a) − d(a)/λ) > 0`` and ``f ≤ 1`` at ``s = 1``, so a fixed number of
bisection steps on ``[s_lo, 1]`` (width ≤ 1: 40 steps reach 2⁻⁴⁰, below float32 resolution)
brackets the root; π̄ is renormalised afterwards. Working with gaps and ``s`` instead of α
keeps precision when ``α − q(a)`` is tiny next to ``|q|``.

Support: π̄ lives on the *valid* slots, legal with ``π_θ(a) > 0`` (the distributions that are
absolutely continuous w.r.t. π_θ, Grill et al.'s setting where π_θ is a softmax); every other
slot gets exactly 0.

``λ = 0`` (and any ``λ < 0``, clamped to 0) is defined as the limit ``λ → 0⁺``: π_θ conditioned
on the set of valid maximisers of q, i.e. the one-hot argmax of q when the maximum is unique
(ties share the mass in proportion to π_θ). The same bisection computes it: ``d(a)/λ`` is
``+inf`` for non-maximisers and 0 for maximisers. ``λ = +inf`` gives π_θ.

Besides SEARCH (:func:`pibar_sample`), :func:`regularized_policy` serves the paper's ACT (play
from π̄ at the root) and LEARN (π̄ as the policy target) variants. It is not meant to be
differentiated (the bisection passes no gradient to α): stop gradients on a target.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.selection.base import (NodeView, QTransform, SelectionRule, prior_probabilities,
                                      q_minmax)
from jaxsearch.selection.puct import MUZERO_C1, MUZERO_C2


def lambda_n(c, visits_total, num_actions) -> jax.Array:
  """``f32[]`` the regularisation weight ``λ_N = c·sqrt(N) / (|A| + N)`` (Grill et al. 2020).

  Args:
    c: the exploration constant (PUCT's ``c``), scalar.
    visits_total: ``N = Σ_b n(b)``, the node's summed child visits.
    num_actions: ``|A|``, the number of selectable actions.
  Returns:
    ``λ_N``; 0 when ``|A| + N = 0``. Broadcasts over batched arguments.
  """
  total = jnp.asarray(visits_total, jnp.float32)
  denom = jnp.asarray(num_actions, jnp.float32) + total
  return jnp.where(denom > 0,
                   jnp.asarray(c, jnp.float32) * jnp.sqrt(jnp.maximum(total, 0.0))
                   / jnp.where(denom > 0, denom, 1.0), 0.0)


def regularized_policy_and_alpha(q: jax.Array, prior_probs: jax.Array, legal: jax.Array,
                                 lam, num_steps: int = 40) -> tuple[jax.Array, jax.Array]:
  """π̄ and its multiplier α for one node (see the module docstring).

  Args:
    q: ``f32[K]`` action values (any finite scale; entries outside the support are ignored,
      even NaN).
    prior_probs: ``f32[K]`` π_θ; it is renormalised over the valid slots (legal, positive),
      so mass on illegal slots is ignored.
    legal: ``bool[K]``.
    lam: ``f32[]`` λ ≥ 0 (negative values are treated as 0).
    num_steps: static number of bisection steps.
  Returns:
    ``(pi_bar f32[K], alpha f32[])``. ``pi_bar`` sums to 1 over the valid slots (legal with a
    positive prior) and is 0 elsewhere; if no slot is valid it is all zeros and ``alpha`` is
    0. ``alpha`` is ``max q + λ·s`` (``max q`` at λ = 0).
  """
  q = jnp.asarray(q, jnp.float32)
  prior = jnp.asarray(prior_probs, jnp.float32)
  lam = jnp.maximum(jnp.asarray(lam, jnp.float32), 0.0)
  valid = jnp.asarray(legal, bool) & (prior > 0)
  any_valid = jnp.any(valid)
  prior = jnp.where(valid, prior, 0.0)
  prior = prior / jnp.maximum(jnp.sum(prior), jnp.finfo(jnp.float32).tiny)
  q_valid = jnp.where(valid, q, -jnp.inf)
  q_max = jnp.max(q_valid)
  q_max = jnp.where(any_valid, q_max, 0.0)
  gap = jnp.where(valid, q_max - jnp.where(valid, q, 0.0), 0.0)
  # d(a)/λ: 0 for the maximisers, +inf for the others when λ = 0 (the λ → 0⁺ limit).
  scaled_gap = jnp.where(gap > 0, gap / lam, 0.0)
  scaled_gap = jnp.where(valid, scaled_gap, jnp.inf)

  def total(s):
    return jnp.sum(jnp.where(valid, prior / (s + scaled_gap), 0.0))

  lo = jnp.max(jnp.where(valid, prior - scaled_gap, -jnp.inf))
  lo = jnp.where(any_valid, lo, 0.5)
  hi = jnp.float32(1.0)

  def step(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    above = total(mid) > 1.0  # f decreasing: the root lies to the right of mid.
    return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

  lo, hi = jax.lax.fori_loop(0, num_steps, step, (lo, hi))
  s = 0.5 * (lo + hi)
  pi_bar = jnp.where(valid, prior / (s + scaled_gap), 0.0)
  pi_bar = pi_bar / jnp.maximum(jnp.sum(pi_bar), jnp.finfo(jnp.float32).tiny)
  alpha = jnp.where(any_valid, q_max + jnp.where(lam > 0, lam * s, 0.0), 0.0)
  return jnp.where(any_valid, pi_bar, 0.0), alpha


def regularized_policy(q: jax.Array, prior_probs: jax.Array, legal: jax.Array, lam,
                       num_steps: int = 40) -> jax.Array:
  """``f32[K]`` π̄ = argmax_y qᵀy − λ·KL(π_θ ‖ y) over the valid slots (Grill et al. 2020).

  See :func:`regularized_policy_and_alpha` for the arguments and the module docstring for the
  method and the conventions (support, ``λ = 0``). ``prior_probs`` is renormalised over the
  valid slots (e.g. pass :func:`masked_softmax` of the logits).
  """
  return regularized_policy_and_alpha(q, prior_probs, legal, lam, num_steps)[0]


def pibar_policy(view: NodeView, c: Optional[float] = 1.25,
                 q_transform: QTransform = q_minmax, num_steps: int = 40) -> jax.Array:
  """``f32[K]`` π̄ of one node from its :class:`NodeView`.

  ``q = q_transform(view)`` (per-node min-max by default: unvisited slots get 0, the node's
  worst), ``π_θ = masked_softmax(prior_logits, legal)``, ``N = Σ child_visits`` over every
  slot (the node's experience, as in :func:`jaxsearch.selection.puct`; slots that are no
  longer selectable still count), ``|A| = Σ legal`` and ``λ = λ_N``. With ``N = 0`` (a fresh
  node, whose q says nothing) the result is π_θ.

  Args:
    view: one node (no batch axis).
    c: PUCT's constant in λ_N; ``None`` uses the MuZero schedule
      ``1.25 + log((N + 19652 + 1) / 19652)`` with ``N = Σ n``.
    q_transform: Q scaling (the scale of q against λ matters: λ_N is built for q in [0, 1]).
    num_steps: bisection steps.
  """
  legal = view.legal
  prior = prior_probabilities(view)
  total = jnp.sum(view.child_visits).astype(jnp.float32)
  if c is None:
    weight = MUZERO_C1 + jnp.log((total + MUZERO_C2 + 1.0) / MUZERO_C2)
  else:
    weight = jnp.float32(c)
  lam = lambda_n(weight, total, jnp.sum(legal))
  pi_bar = regularized_policy(q_transform(view), prior, legal, lam, num_steps)
  return jnp.where(total > 0, pi_bar, prior)


def pibar_sample(c: Optional[float] = 1.25, q_transform: QTransform = q_minmax,
                 num_steps: int = 40) -> SelectionRule:
  """Grill et al.'s SEARCH variant: each node visited draws its slot from π̄.

  Scores are ``log π̄(a) + g(a)`` with ``g`` i.i.d. standard Gumbel (the Gumbel-max trick), so
  the engine's masked argmax returns a sample of π̄; slots with ``π̄ = 0`` score ``-inf``.
  Needs a key.
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    pi_bar = pibar_policy(view, c, q_transform, num_steps)
    gumbel = jax.random.gumbel(key, pi_bar.shape, jnp.float32)
    return jnp.where(pi_bar > 0, jnp.log(jnp.where(pi_bar > 0, pi_bar, 1.0)) + gumbel,
                     -jnp.inf)

  return SelectionRule("pibar_sample", score, needs_key=True, reads_prior_probs=True)


def pibar_argmax_visits(c: Optional[float] = 1.25, q_transform: QTransform = q_minmax,
                        num_steps: int = 40) -> SelectionRule:
  """The deterministic variant: ``argmax_a π̄(a) − n(a) / (1 + N)``, ``N = Σ n`` (all slots).

  Picks the slot whose visit share lags π̄ the most, so the visit distribution tracks π̄
  without random numbers: a deterministic counterpart of SEARCH, the same rule that Gumbel
  MuZero (Danihelka et al. 2022) applies with its π′ at interior nodes
  (:func:`jaxsearch.gumbel.gumbel_interior_rule`). At a fresh node it picks argmax π_θ (first
  index on ties).
  """

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    pi_bar = pibar_policy(view, c, q_transform, num_steps)
    total = jnp.sum(view.child_visits).astype(jnp.float32)
    return pi_bar - view.child_visits.astype(jnp.float32) / (1.0 + total)

  return SelectionRule("pibar_argmax_visits", score, reads_prior_probs=True)
