"""The engine's view of the world: batched ``root`` and ``step`` that also evaluate.

The search engine knows neither games nor networks. It talks to a :class:`Model`, which turns
"expand these B leaves" into one batched transition plus **one** estimator call. Two builders:

* :func:`from_game` — a :class:`jaxsearch.game.Game` (unbatched pure functions, vmapped here)
  and an :data:`jaxsearch.game.Estimator` (batched);
* :func:`from_mctx` — an mctx-style ``recurrent_fn`` whose embedding plays the state, so mctx
  research code ports without rewriting its model.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch.game import Estimate, Estimator, Game, Params


@struct.dataclass
class Expansion:
  """B new states with everything the tree stores about them (leading ``[B]``).

  Attributes:
    state: the states (pytree).
    reward, discount: ``f32[B]`` of the transition into each state (unused for roots).
    terminal: ``bool[B]``.
    legal: ``bool[B, A]`` legal actions (all ``False`` where terminal).
    estimate: the estimator's :class:`Estimate` of the states.
    pessimistic: ``f32[B]`` the game's ``pessimistic_value`` of each state, or ``None`` when
      the game has none (then searches report no achievable bound).
    optimistic: ``f32[B]`` the game's ``optimistic_value``, or ``None``.
  """

  state: Any
  reward: jax.Array
  discount: jax.Array
  terminal: jax.Array
  legal: jax.Array
  estimate: Estimate
  pessimistic: Optional[jax.Array] = None
  optimistic: Optional[jax.Array] = None


@dataclasses.dataclass(frozen=True)
class Model:
  """Batched callables the engine drives (all with a leading ``[B]``).

  Attributes:
    num_actions: ``A``.
    num_outcomes: ``O``.
    root: ``(params, key, root_input) -> Expansion`` for the root states.
    step: ``(params, key, states, actions i32[B], outcomes i32[B]) -> Expansion``.
    outcome_probs: ``(params, states, actions i32[B]) -> f32[B, O]``.
    max_length: default maximum search depth, or ``None``.
    has_bound: its expansions carry ``pessimistic`` values (an achievable bound exists).
    has_upper: its expansions carry ``optimistic`` values (an admissible bound exists).
    value_bounds: ``(lo, hi)`` every value of the game lies in (the game's
      :attr:`~jaxsearch.game.Game.value_bounds`), or ``None``: reported values are clipped
      to it.
  """

  num_actions: int
  num_outcomes: int
  root: Callable[[Params, jax.Array, Any], Expansion]
  step: Callable[[Params, jax.Array, Any, jax.Array, jax.Array], Expansion]
  outcome_probs: Callable[[Params, Any, jax.Array], jax.Array]
  max_length: Optional[int] = None
  has_bound: bool = False
  has_upper: bool = False
  value_bounds: Optional[tuple[float, float]] = None


def check_estimate(estimate: Estimate, batch_size: int, num_actions: int,
                   source: str = "estimator") -> None:
  """Trace-time shape check of an :class:`Estimate`; the error names the field."""
  if not isinstance(estimate, Estimate):
    raise TypeError(f"{source} must return a jaxsearch.Estimate, got {type(estimate).__name__}")
  if jnp.shape(estimate.value) != (batch_size,):
    raise ValueError(f"{source}: Estimate.value must have shape [B]=({batch_size},), "
                     f"got {jnp.shape(estimate.value)}")
  for field in ("prior_logits", "action_values", "action_bounds"):
    array = getattr(estimate, field)
    if array is not None and jnp.shape(array) != (batch_size, num_actions):
      raise ValueError(f"{source}: Estimate.{field} must have shape [B, A]=({batch_size}, "
                       f"{num_actions}), got {jnp.shape(array)}")


def from_game(game: Game, estimator: Estimator) -> Model:
  """A :class:`Model` that steps ``game`` (vmapped) and evaluates new states with
  ``estimator`` in one batched call."""
  legal_fn = jax.vmap(game.legal_actions)
  step_fn = jax.vmap(game.step)
  probs_fn = jax.vmap(game.outcome_probs)
  num_actions = game.num_actions

  def bound(fn, name, states, terminal):
    if fn is None:
      return None
    values = jnp.asarray(jax.vmap(fn)(states), jnp.float32)
    if values.shape != terminal.shape:
      raise ValueError(f"game {game.name!r}: {name} must return f32[] per state, "
                       f"got shape {values.shape[1:]}")
    return jnp.where(terminal, 0.0, values)

  def bounds(states, terminal):
    return dict(
        pessimistic=bound(game.pessimistic_value, "pessimistic_value", states, terminal),
        optimistic=bound(game.optimistic_value, "optimistic_value", states, terminal))

  def evaluate(params, key, states, legal):
    batch_size = legal.shape[0]
    if legal.shape != (batch_size, num_actions):
      raise ValueError(f"game {game.name!r}: legal_actions must return bool[A]=({num_actions},)"
                       f" per state, got {legal.shape[1:]}")
    estimate = estimator(params, key, states)
    check_estimate(estimate, batch_size, num_actions)
    return estimate

  def root(params, key, states):
    legal = legal_fn(states)
    batch_size = legal.shape[0]
    terminal = ~jnp.any(legal, axis=-1)
    return Expansion(state=states, reward=jnp.zeros((batch_size,), jnp.float32),
                     discount=jnp.ones((batch_size,), jnp.float32), terminal=terminal,
                     legal=legal, estimate=evaluate(params, key, states, legal),
                     **bounds(states, terminal))

  def step(params, key, states, actions, outcomes):
    result = step_fn(states, actions, outcomes)
    legal = legal_fn(result.state)
    terminal = jnp.asarray(result.terminal, bool) | ~jnp.any(legal, axis=-1)
    legal = legal & ~terminal[:, None]
    return Expansion(state=result.state, reward=jnp.asarray(result.reward, jnp.float32),
                     discount=jnp.asarray(result.discount, jnp.float32), terminal=terminal,
                     legal=legal, estimate=evaluate(params, key, result.state, legal),
                     **bounds(result.state, terminal))

  def outcome_probs(params, states, actions):
    del params
    return probs_fn(states, actions)

  return Model(num_actions=num_actions, num_outcomes=game.num_outcomes, root=root, step=step,
               outcome_probs=outcome_probs, max_length=game.max_length,
               has_bound=game.pessimistic_value is not None,
               has_upper=game.optimistic_value is not None,
               value_bounds=getattr(game, "value_bounds", None))


def from_mctx(recurrent_fn: Callable, num_actions: int) -> Model:
  """A :class:`Model` from an mctx ``recurrent_fn``.

  ``recurrent_fn(params, key, action[B], embedding[B]) -> (RecurrentFnOutput, embedding)`` is
  called exactly as mctx calls it. The root input is ``(RootFnOutput, invalid_actions)`` with
  ``invalid_actions`` ``bool[B, A]`` or ``None``. As in mctx, interior nodes treat every action
  as legal (mask them through the prior logits) and nothing is terminal: a ``discount`` of 0
  cuts the value off instead.
  """

  def root(params, key, root_input):
    del params, key
    root_output, invalid_actions = root_input
    prior_logits = jnp.asarray(root_output.prior_logits, jnp.float32)
    batch_size = prior_logits.shape[0]
    if prior_logits.shape != (batch_size, num_actions):
      raise ValueError(f"RootFnOutput.prior_logits must have shape [B, A]=(B, {num_actions}),"
                       f" got {prior_logits.shape}")
    legal = (jnp.ones((batch_size, num_actions), bool) if invalid_actions is None
             else ~jnp.asarray(invalid_actions, bool))
    estimate = Estimate(value=jnp.asarray(root_output.value, jnp.float32),
                        prior_logits=prior_logits)
    check_estimate(estimate, batch_size, num_actions, "RootFnOutput")
    return Expansion(state=root_output.embedding, reward=jnp.zeros((batch_size,), jnp.float32),
                     discount=jnp.ones((batch_size,), jnp.float32),
                     terminal=~jnp.any(legal, axis=-1), legal=legal, estimate=estimate)

  def step(params, key, states, actions, outcomes):
    del outcomes
    output, embedding = recurrent_fn(params, key, actions, states)
    batch_size = actions.shape[0]
    estimate = Estimate(value=jnp.asarray(output.value, jnp.float32),
                        prior_logits=jnp.asarray(output.prior_logits, jnp.float32))
    check_estimate(estimate, batch_size, num_actions, "recurrent_fn")
    return Expansion(state=embedding, reward=jnp.asarray(output.reward, jnp.float32),
                     discount=jnp.asarray(output.discount, jnp.float32),
                     terminal=jnp.zeros((batch_size,), bool),
                     legal=jnp.ones((batch_size, num_actions), bool), estimate=estimate)

  def outcome_probs(params, states, actions):
    del params, states
    return jnp.ones((actions.shape[0], 1), jnp.float32)

  return Model(num_actions=num_actions, num_outcomes=1, root=root, step=step,
               outcome_probs=outcome_probs)
