"""The Game and Estimator protocols and the small pytrees they exchange.

A **Game** is a bundle of pure, *unbatched* JAX functions over one state (a pytree); the engine
vmaps them. An **Estimator** is a *batched* function ``(params, key, states[B]) -> Estimate[B]``
so that a network runs once per simulation step for the whole batch.

Conventions (docs/architecture.md):
  * values and rewards are from the point of view of the player to move;
  * two-player zero-sum games return ``discount = -1`` on every non-terminal move and
    ``discount = 0`` on the move that ends the game;
  * ``legal_actions`` of a terminal state is all ``False`` (that is how the engine knows a
    state is terminal).
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from flax import struct

State = Any
Params = Any


@struct.dataclass
class StepResult:
  """The result of one transition, for one state (unbatched) or a batch (leading ``[B]``).

  Attributes:
    state: the next state.
    reward: ``f32[]`` reward to the player who acted.
    discount: ``f32[]`` multiplier of the next state's value (``-1`` alternating, ``0`` at the
      end of the game, ``1`` single-agent undiscounted).
    terminal: ``bool[]`` whether the next state ends the game.
  """

  state: State
  reward: jax.Array
  discount: jax.Array
  terminal: jax.Array


@struct.dataclass
class Estimate:
  """What an estimator says about a batch of states (``[B]`` leading axis).

  Attributes:
    value: ``f32[B]`` value of the state for the player to move.
    prior_logits: ``f32[B, A]`` or ``None`` (``None`` = uniform prior over legal actions).
    action_values: ``f32[B, A]`` estimated action values q̂1(s, ·) or ``None``.
    action_bounds: ``f32[B, A]`` admissible optimistic bounds per action — no policy that
      starts with the action does better — or ``None``. Used by the Bellman backup where the
      game has an ``optimistic_value``: each slot's optimistic bound starts at its action's
      (instead of the node's), the node's is at most the best action's, and actions left out
      of the node's ``K`` slots keep their bound (instead of blocking every proof through the
      node). ``-inf`` where ``action_values`` is ``-inf`` is fine (never optimal).
  """

  value: jax.Array
  prior_logits: Optional[jax.Array] = None
  action_values: Optional[jax.Array] = None
  action_bounds: Optional[jax.Array] = None


Estimator = Callable[[Params, jax.Array, State], Estimate]
"""``(params, key, states[B]) -> Estimate`` with every field batched over ``[B]``."""


def deterministic_outcome_probs(state: State, action: jax.Array) -> jax.Array:
  """``outcome_probs`` of a deterministic game: one outcome with probability 1 (``f32[1]``)."""
  del state, action
  return jnp.ones((1,), jnp.float32)


@dataclasses.dataclass(frozen=True)
class Game:
  """A game or MDP as pure unbatched functions.

  Attributes:
    name: short name used by the CLI and benchmarks.
    num_actions: ``A``, the size of the action space.
    init: ``key -> state``, the initial state.
    legal_actions: ``state -> bool[A]``; all ``False`` at terminal states.
    step: ``(state, action i32[], outcome i32[]) -> StepResult``.
    num_outcomes: ``O``, chance outcomes per action (1 for deterministic games).
    outcome_probs: ``(state, action) -> f32[O]`` summing to 1.
    max_length: an upper bound on the number of moves from ``init`` to the end (used as the
      default maximum search depth), or ``None`` if unbounded.
    value_range: ``(lo, hi)`` bounds on values, used by range-normalised selection rules.
    pessimistic_value: optional ``state -> f32[]``, the exact value (mover's view) of some
      concrete policy played from ``state``, hence a lower bound on its optimal value; 0 at
      terminal states. It seeds AVTS's *achievable bound* (docs/algorithms.md §2). Only meaningful
      for single-agent games (discount >= 0); without it searches report no bound.
    optimistic_value: optional ``state -> f32[]``, an admissible bound: never below the
      state's optimal value (0 at terminal states). Lets a solver certify optimality when the
      achievable bound meets it.
    value_bounds: optional ``(lo, hi)``, bounds that every value of the game does hold: the
      value of any state for the player to move, whatever the play (two-player wins and
      losses: ``(-1, 1)``). A search's summary (:func:`jaxsearch.summary.root_summary`, given
      them) reports ``root_value`` and ``q_values`` clipped to them (AVTS's debiased values
      extrapolate and may leave them, docs/algorithms.md §2); the search's own statistics and its
      certified bounds are never clipped. ``None`` (default): none
      declared, nothing clipped. Unlike ``value_range`` (a scale for selection rules, with a
      default every game gets, e.g. a guessing game's ``(-6, 0)`` that a poor policy
      exceeds), these must hold.
  """

  name: str
  num_actions: int
  init: Callable[[jax.Array], State]
  legal_actions: Callable[[State], jax.Array]
  step: Callable[[State, jax.Array, jax.Array], StepResult]
  num_outcomes: int = 1
  outcome_probs: Callable[[State, jax.Array], jax.Array] = deterministic_outcome_probs
  max_length: Optional[int] = None
  value_range: tuple[float, float] = (-1.0, 1.0)
  pessimistic_value: Optional[Callable[[State], jax.Array]] = None
  optimistic_value: Optional[Callable[[State], jax.Array]] = None
  value_bounds: Optional[tuple[float, float]] = None

  def __post_init__(self):
    if self.num_actions < 1:
      raise ValueError(f"Game {self.name!r}: num_actions must be >= 1, got {self.num_actions}")
    if self.num_outcomes < 1:
      raise ValueError(f"Game {self.name!r}: num_outcomes must be >= 1, got {self.num_outcomes}")
    if self.value_bounds is not None:
      try:
        lo, hi = (float(v) for v in self.value_bounds)
      except (TypeError, ValueError):
        lo = hi = float("nan")
      if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise ValueError(f"Game {self.name!r}: value_bounds must be None or two finite numbers "
                         f"(lo, hi) with lo <= hi, got {self.value_bounds!r}")
      object.__setattr__(self, "value_bounds", (lo, hi))


# Set by :mod:`jaxsearch.sharding` while it traces a function per shard (``shard_map``):
# ``(mesh axis name, rows of the local batch)``.
CURRENT_SHARD = contextvars.ContextVar("jaxsearch_shard", default=None)


def per_item_keys(key: jax.Array, batch_size: int) -> jax.Array:
  """``[B]`` keys, item ``b`` = ``fold_in(key, b)``.

  Unlike ``split(key, B)``, item ``b``'s key does not depend on ``B``, so a search's result
  for one root does not change when the batch around it grows or shrinks. Inside a function
  sharded by :mod:`jaxsearch.sharding`, ``b`` is the item's *global* index (the shard's
  offset is added to batch-major sizes, multiples of the local batch), so results do not
  depend on the number of devices either.
  """
  index = jnp.arange(batch_size)
  shard = CURRENT_SHARD.get()
  if shard is not None and batch_size % shard[1] == 0:
    index = index + jax.lax.axis_index(shard[0]) * batch_size
  return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, index)
