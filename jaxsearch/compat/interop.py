"""The other direction: a jaxsearch Game + Estimator as an mctx ``(root_fn, recurrent_fn)``,
for side-by-side tests and benchmarks against the real mctx (which it imports: an optional
dependency)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch.game import Estimator, Game


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
