"""Ready-made estimators: ``(params, key, states[B]) -> Estimate``.

* :func:`uniform` — zero value, uniform prior (the "no knowledge" baseline);
* :func:`rollout` — the average return of random legal play to the end (a rollout,
  Tesauro & Galperin 1996);
* :func:`from_unbatched` — lift a per-state function to the batched protocol.
"""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from jaxsearch.game import Estimate, Estimator, Game, per_item_keys


def batch_size_of(states) -> int:
  """The leading dimension shared by every leaf of a batched state pytree."""
  leaves = jax.tree.leaves(states)
  if not leaves:
    raise ValueError("states has no array leaves")
  sizes = {jnp.shape(x)[0] if jnp.ndim(x) else None for x in leaves}
  if len(sizes) != 1 or None in sizes:
    raise ValueError(f"states must share one leading batch dimension, got sizes {sizes}")
  return sizes.pop()


def uniform() -> Estimator:
  """Value 0 and a uniform prior for every state."""

  def estimate(params, key, states) -> Estimate:
    del params, key
    return Estimate(value=jnp.zeros((batch_size_of(states),), jnp.float32))

  return estimate


def from_unbatched(fn: Callable[..., Estimate]) -> Estimator:
  """Batches ``fn(params, key, state) -> Estimate`` (unbatched fields) with ``jax.vmap``;
  each state gets its own key."""

  def estimate(params, key, states) -> Estimate:
    keys = per_item_keys(key, batch_size_of(states))
    return jax.vmap(fn, in_axes=(None, 0, 0))(params, keys, states)

  return estimate


def random_playout(game: Game, key: jax.Array, state, max_steps: int) -> jax.Array:
  """Return of one uniformly random legal playout from ``state`` (unbatched), mover's view.

  ``G = sum_k (prod_{j<k} discount_j) reward_k``; chance outcomes are drawn from
  ``outcome_probs``. Stops at a terminal state or after ``max_steps`` moves.
  """

  def cond(carry):
    _, _, _, scale, steps, done = carry
    return ~done & (steps < max_steps)

  def body(carry):
    key, state, total, scale, steps, _ = carry
    key, action_key, outcome_key = jax.random.split(key, 3)
    legal = game.legal_actions(state)
    action = jax.random.categorical(action_key, jnp.where(legal, 0.0, -jnp.inf))
    if game.num_outcomes == 1:
      outcome = jnp.int32(0)
    else:
      probs = game.outcome_probs(state, action)
      outcome = jax.random.categorical(outcome_key, jnp.log(probs))
    result = game.step(state, action, outcome)
    total = total + scale * result.reward
    scale = scale * result.discount
    return key, result.state, total, scale, steps + 1, result.terminal | (scale == 0.0)

  done = ~jnp.any(game.legal_actions(state))
  init = (key, state, jnp.float32(0.0), jnp.float32(1.0), jnp.int32(0), done)
  return jax.lax.while_loop(cond, body, init)[2]


def rollout(game: Game, num_rollouts: int = 1, max_steps: Optional[int] = None,
            action_values: bool = False) -> Estimator:
  """The random-rollout estimator (Tesauro & Galperin 1996): value = mean return of
  ``num_rollouts`` random
  legal playouts to the end; uniform prior.

  Args:
    game: the game to play out.
    num_rollouts: ``R`` playouts per state, run in parallel (vmapped).
    max_steps: playout length cap; defaults to ``game.max_length`` (required if that is None).
    action_values: also estimate q̂1 for AVTS: for every legal action ``a``,
      ``q̂1(a) = E_o[r + γ·(mean of R playouts from the successor)]`` over the exact outcome
      distribution (``A·O·R`` playouts per state); illegal actions get ``-inf`` and the value
      becomes ``max_a q̂1(a)``.
  """
  if num_rollouts < 1:
    raise ValueError(f"num_rollouts must be >= 1, got {num_rollouts}")
  steps = max_steps if max_steps is not None else game.max_length
  if steps is None:
    raise ValueError(f"game {game.name!r} has no max_length; pass max_steps to rollout()")

  def one_state(key, state):
    keys = jax.random.split(key, num_rollouts)
    returns = jax.vmap(lambda k: random_playout(game, k, state, steps))(keys)
    return jnp.mean(returns)

  def one_action(key, state, action):
    def one_outcome(outcome_key, outcome):
      result = game.step(state, action, outcome)
      follow = jnp.where(result.terminal, 0.0, one_state(outcome_key, result.state))
      return result.reward + result.discount * follow

    outcomes = jnp.arange(game.num_outcomes)
    returns = jax.vmap(one_outcome)(jax.random.split(key, game.num_outcomes), outcomes)
    return jnp.sum(game.outcome_probs(state, action) * returns)

  def state_action_values(key, state):
    legal = game.legal_actions(state)
    actions = jnp.arange(game.num_actions)
    q = jax.vmap(one_action, in_axes=(0, None, 0))(
        jax.random.split(key, game.num_actions), state, actions)
    q = jnp.where(legal, q, -jnp.inf)
    return jnp.where(jnp.any(legal), jnp.max(q), 0.0), q

  def estimate(params, key, states) -> Estimate:
    del params
    keys = per_item_keys(key, batch_size_of(states))
    if action_values:
      value, q = jax.vmap(state_action_values)(keys, states)
      return Estimate(value=value, action_values=q)
    return Estimate(value=jax.vmap(one_state)(keys, states))

  return estimate
