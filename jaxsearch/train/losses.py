"""The AlphaZero loss, the optimiser and the jitted update.

``loss = (v − z)² − πᵀ log p + λ‖θ‖²  (+ w · mean over searched a of (q(a) − q̂3(a))²)``

with ``p`` the network's softmax over the legal actions, ``π`` the search's policy target,
``z`` the value target and ``q̂3`` the search's (debiased) root action values when the network
has an action-value head — only for the actions the search visited: the others' targets are
NaN in the buffer (an unvisited action's q̂3 is the network's own guess, or with progressive
widening not even that), and they are left out of the mean. ``z`` and ``q̂3`` are in the
game's units; with a :class:`~jaxsearch.train.value_scale.ValueScale` they are encoded into
the heads' ``[-1, 1]`` first (2048's returns, backgammon's gammons).
"""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxsearch.train import networks, replay
from jaxsearch.train.value_scale import ValueScale


def loss_fn(params: nnx.State, graphdef: nnx.GraphDef, batch: replay.Sample, *,
            l2: float = 1e-4, action_value_weight: float = 1.0,
            value_scale: Optional[ValueScale] = None):
  """``(loss f32[], metrics dict)`` of a batch (``replay.Sample`` with leading ``[M]``).

  ``value_scale``: the batch's value and action-value targets are in the game's units; they
  are encoded with it into the heads' ``[-1, 1]`` (:mod:`jaxsearch.train.value_scale`)
  before the squared errors (``None`` or the identity: used as they are).
  """
  out = networks.apply(graphdef, params, batch.obs)
  encode = None if value_scale is None or value_scale.is_identity else value_scale.encode
  legal = batch.legal | ~jnp.any(batch.legal, axis=-1, keepdims=True)  # never an empty softmax
  log_p = jax.nn.log_softmax(jnp.where(legal, out.logits, -1e9), axis=-1)
  policy_loss = -jnp.mean(jnp.sum(jnp.where(legal, batch.policy * log_p, 0.0), axis=-1))
  # Entropy of the target: policy_loss − entropy is the KL divergence to the target.
  entropy = -jnp.mean(jnp.sum(jnp.where(batch.policy > 0,
                                        batch.policy * jnp.log(jnp.maximum(batch.policy,
                                                                           1e-30)), 0.0),
                              axis=-1))
  value_target = batch.value if encode is None else encode(batch.value)
  value_loss = jnp.mean((out.value - value_target) ** 2)
  weights = sum(jnp.sum(x.astype(jnp.float32) ** 2) for x in jax.tree.leaves(params))
  loss = value_loss + policy_loss + l2 * weights
  metrics = dict(value_loss=value_loss, policy_loss=policy_loss, policy_kl=policy_loss - entropy,
                 l2=weights)
  if out.action_values is not None and batch.action_values is not None:
    searched = batch.legal & jnp.isfinite(batch.action_values)
    # The target is cleaned before the difference: a NaN in where's other branch would still
    # poison the gradient.
    target = jnp.where(searched, batch.action_values, 0.0)
    if encode is not None:
      target = jnp.where(searched, encode(target), 0.0)
    sq = jnp.where(searched, (out.action_values - target) ** 2, 0.0)
    av_loss = jnp.mean(jnp.sum(sq, -1) / jnp.maximum(jnp.sum(searched, -1), 1))
    loss = loss + action_value_weight * av_loss
    metrics["action_value_loss"] = av_loss
  metrics["loss"] = loss
  return loss, metrics


def make_optimizer(learning_rate: float = 1e-3, *, warmup_steps: int = 50,
                   decay_steps: int = 5000, final_fraction: float = 0.1,
                   weight_decay: float = 1e-4, clip_norm: Optional[float] = 1.0
                   ) -> optax.GradientTransformation:
  """AdamW on a warm-up + cosine schedule (to ``final_fraction`` of the peak after
  ``decay_steps`` updates, constant after), with global-norm gradient clipping."""
  schedule = optax.warmup_cosine_decay_schedule(
      init_value=0.0, peak_value=learning_rate, warmup_steps=max(1, warmup_steps),
      decay_steps=max(warmup_steps + 1, decay_steps), end_value=learning_rate * final_fraction)
  parts = [optax.clip_by_global_norm(clip_norm)] if clip_norm else []
  parts.append(optax.adamw(schedule, weight_decay=weight_decay))
  return optax.chain(*parts)


def make_train_step(graphdef: nnx.GraphDef, optimizer: optax.GradientTransformation, *,
                    l2: float = 1e-4, action_value_weight: float = 1.0,
                    value_scale: Optional[ValueScale] = None) -> Callable:
  """``(params, opt_state, batch) -> (params, opt_state, metrics)``: one gradient update
  (pure; jit it, or call it inside a jitted loop); ``value_scale`` as in :func:`loss_fn`."""

  def train_step(params, opt_state, batch):
    grads, metrics = jax.grad(loss_fn, has_aux=True)(
        params, graphdef, batch, l2=l2, action_value_weight=action_value_weight,
        value_scale=value_scale)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, metrics

  return train_step
