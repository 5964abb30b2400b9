"""mctx interoperability, both ways.

* :func:`muzero_policy` — a drop-in for ``mctx.muzero_policy``: same arguments, same
  ``recurrent_fn``/``RootFnOutput``; porting is changing ``mctx.`` to ``jaxsearch.compat.``.
  It returns a :class:`jaxsearch.PolicyOutput` (``action``, ``action_weights``, ``tree``...).
* :func:`to_mctx` — a jaxsearch Game + Estimator as an mctx ``RootFnOutput`` and
  ``recurrent_fn``, for side-by-side tests and benchmarks.

mctx itself is only needed by :func:`to_mctx` (an optional dependency).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from jaxsearch import policies
from jaxsearch.game import Estimator, Game
from jaxsearch.model import from_mctx
from jaxsearch.selection.base import QTransform, q_minmax


def muzero_policy(params: Any, rng_key: jax.Array, root: Any, recurrent_fn: Callable,
                  num_simulations: int, invalid_actions: Optional[jax.Array] = None,
                  max_depth: Optional[int] = None, *, qtransform: QTransform = q_minmax,
                  dirichlet_fraction: float = 0.25, dirichlet_alpha: float = 0.3,
                  pb_c_init: float = 1.25, pb_c_base: float = 19652.0,
                  temperature: float = 1.0, max_nodes: Optional[int] = None
                  ) -> policies.PolicyOutput:
  """``mctx.muzero_policy`` on the jaxsearch engine (same defaults, same visit convention).

  Args:
    params, rng_key, root, recurrent_fn, num_simulations, invalid_actions, max_depth: as in
      mctx (``root`` is an ``mctx.RootFnOutput``, ``invalid_actions`` ``bool[B, A]``).
    qtransform: a jaxsearch Q transform (default: mctx's parent-and-siblings min-max).
    dirichlet_fraction, dirichlet_alpha, pb_c_init, pb_c_base, temperature: as in mctx.
    max_nodes: tree capacity, default ``num_simulations + 1``.
  Returns:
    A :class:`jaxsearch.PolicyOutput`; ``action_weights`` are the visit probabilities as in
    mctx, and ``action`` is sampled from them at ``temperature`` (argmax at 0).
  """
  num_actions = root.prior_logits.shape[-1]
  search = policies.puct(
      model=from_mctx(recurrent_fn, num_actions), num_simulations=num_simulations,
      c1=pb_c_init, c2=pb_c_base, q_transform=qtransform, visit_convention="node",
      dirichlet_fraction=dirichlet_fraction, dirichlet_alpha=dirichlet_alpha,
      temperature=temperature, max_nodes=max_nodes,
      max_depth=max_depth if max_depth is not None else num_simulations)
  out = search(params, rng_key, (root, invalid_actions))
  # mctx reports the visit probabilities as action_weights, whatever the temperature.
  visits = out.visit_counts.astype(jnp.float32)
  return out.replace(
      action_weights=visits / jnp.maximum(jnp.sum(visits, axis=-1, keepdims=True), 1.0))


def to_mctx(game: Game, estimator: Estimator):
  """``(root_fn, recurrent_fn)`` running ``game`` and ``estimator`` under mctx.

  ``root_fn(params, key, states[B]) -> (mctx.RootFnOutput, invalid_actions bool[B, A])`` and
  ``recurrent_fn(params, key, action[B], states[B]) -> (mctx.RecurrentFnOutput, states)``.
  Illegal actions get the most negative finite logit, as in mctx's examples, so mctx never
  picks them below the root; terminal states keep returning reward 0 and discount 0.
  """
  import mctx  # optional dependency

  legal_fn = jax.vmap(game.legal_actions)
  step_fn = jax.vmap(game.step)
  lowest = jnp.finfo(jnp.float32).min

  def logits_of(estimate, legal):
    logits = (jnp.zeros(legal.shape, jnp.float32) if estimate.prior_logits is None
              else estimate.prior_logits)
    return jnp.where(legal, logits, lowest)

  def root_fn(params, key, states):
    legal = legal_fn(states)
    estimate = estimator(params, key, states)
    return mctx.RootFnOutput(prior_logits=logits_of(estimate, legal), value=estimate.value,
                             embedding=states), ~legal

  def recurrent_fn(params, key, action, states):
    result = step_fn(states, action, jnp.zeros_like(action))
    legal = legal_fn(result.state)
    estimate = estimator(params, key, result.state)
    value = jnp.where(jnp.any(legal, axis=-1), estimate.value, 0.0)
    return mctx.RecurrentFnOutput(reward=result.reward, discount=result.discount,
                                  prior_logits=logits_of(estimate, legal),
                                  value=value), result.state

  return root_fn, recurrent_fn
