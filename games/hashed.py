"""A synthetic "hashed" environment: an infinite deterministic tree of random values.

The state is a ``uint32`` hash; ``step`` mixes the action into it, and rewards, priors and
values are fixed pseudo-random functions of the hash. It costs almost nothing to step, so it
measures the search engine itself (benchmarks), and its values have no ties, so two correct
PUCT implementations must agree exactly (mctx parity tests). Single-agent, discount 0.95,
never terminal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch.game import Estimate, Game, StepResult

DISCOUNT = 0.95


@struct.dataclass
class State:
  code: jax.Array  # u32[]


def _mix(x: jax.Array) -> jax.Array:
  """A 32-bit integer finaliser (murmur3 fmix32): cheap, well-spread."""
  x = x ^ (x >> 16)
  x = x * jnp.uint32(0x85EBCA6B)
  x = x ^ (x >> 13)
  x = x * jnp.uint32(0xC2B2AE35)
  return x ^ (x >> 16)


def _unit(x: jax.Array) -> jax.Array:
  """u32 -> f32 in [0, 1)."""
  return (x >> 8).astype(jnp.float32) * (1.0 / (1 << 24))


def make(num_actions: int = 16, seed: int = 0) -> Game:
  """The hashed environment with ``num_actions`` actions (``seed`` picks another instance)."""
  salt = jnp.uint32(seed * 0x9E3779B9 % (1 << 32))

  def init(key):
    del key
    return State(code=_mix(salt + jnp.uint32(1)))

  def legal_actions(state):
    return jnp.ones((num_actions,), bool)

  def step(state, action, outcome):
    del outcome
    code = _mix(state.code ^ _mix(jnp.asarray(action, jnp.uint32) + jnp.uint32(0x632BE5AB)))
    reward = _unit(_mix(code ^ jnp.uint32(0x1234567))) - 0.5
    return StepResult(state=State(code=code), reward=reward, discount=jnp.float32(DISCOUNT),
                      terminal=jnp.bool_(False))

  return Game(name=f"hashed{num_actions}", num_actions=num_actions, init=init,
              legal_actions=legal_actions, step=step, max_length=None, value_range=(-10., 10.))


def estimate_one(state: State, num_actions: int) -> tuple[jax.Array, jax.Array]:
  """``(value f32[], prior_logits f32[A])`` of one state."""
  salts = jnp.arange(num_actions, dtype=jnp.uint32) * jnp.uint32(0x27D4EB2F)
  logits = 2.0 * _unit(_mix(state.code ^ salts)) - 1.0
  value = 2.0 * _unit(_mix(state.code ^ jnp.uint32(0x5BD1E995))) - 1.0
  return value, logits


def estimator(num_actions: int = 16):
  """Batched estimator with hashed values in [-1, 1) and prior logits in [-1, 1)."""

  def estimate(params, key, states) -> Estimate:
    del params, key
    value, logits = jax.vmap(lambda s: estimate_one(s, num_actions))(states)
    return Estimate(value=value, prior_logits=logits)

  return estimate



def distinct_roots(game: Game, batch_size: int) -> State:
  """``batch_size`` different root states (``[B]``) of a hashed game."""
  states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), batch_size))
  return states.replace(code=_mix(states.code ^ jnp.arange(batch_size, dtype=jnp.uint32)))
