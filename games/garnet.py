"""Garnet MDPs: random finite-horizon MDPs with exact optimal values.

A Garnet ("Generic Average Reward Non-stationary Environment Testbed", Archibald, McKinnon
and Thomas 1995) has ``S`` states and ``A`` actions; each ``(s, a)`` leads to ``O``
("branching") distinct random next states with Dirichlet(1) probabilities and pays a reward
uniform in ``[0, 1]`` for each of them. Here it is played for a fixed horizon ``H`` from
state 0, so that the optimal values ``Q*[t, s, a]`` and ``V*[t, s]`` are known exactly by
backward induction. That makes Garnets a test bed for search: with the exact estimator a
search must pick an optimal action, and :func:`estimator` degrades it in a controlled way
(``Q* + bias + noise``) to mimic imperfect learned estimators.

    g = garnet.make(num_states=6, num_actions=3, branching=2, horizon=4, seed=0)
    search = js.policies.puct(g.game, garnet.estimator(g), num_simulations=64)
    roots = jax.vmap(g.game.init)(keys)
    out = jax.jit(search)(None, key, roots)
    g.q_star[0, 0, out.action]     # == g.v_star[0, 0] when the search chose optimally

Single-agent: rewards and values are the agent's (``discount`` is never negative).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.game import Estimate, Game, StepResult


@struct.dataclass
class State:
  """A Garnet state: which MDP state, and how many moves have been made."""

  state: jax.Array  # i32[] in [0, S)
  time: jax.Array  # i32[] in [0, H]; the episode ends at time == H


# eq=False: the fields hold arrays, which have no boolean ==; identity equality and hashing let
# a Garnet key a cache of compiled searches.
@dataclasses.dataclass(frozen=True, eq=False)
class Garnet:
  """One random finite-horizon MDP, its exact optimal values and its :class:`Game`.

  Attributes:
    next_state: ``i32[S, A, O]`` the ``O`` distinct successors of each ``(s, a)``.
    probs: ``f32[S, A, O]`` their probabilities (each row sums to 1).
    rewards: ``f32[S, A, O]`` reward in ``[0, 1]`` of each transition.
    horizon: ``H``, the number of moves in an episode.
    discount: ``γ`` applied between moves.
    q_star: ``f32[H, S, A]`` optimal action values ``Q*[t, s, a]`` with ``H - t`` moves left.
    v_star: ``f32[H + 1, S]`` optimal values, ``V*[t] = max_a Q*[t]`` and ``V*[H] = 0``.
    game: the MDP as a :class:`jaxsearch.game.Game` over :class:`State`.
  """

  next_state: jax.Array
  probs: jax.Array
  rewards: jax.Array
  horizon: int
  discount: float
  q_star: jax.Array
  v_star: jax.Array
  game: Game

  @property
  def num_states(self) -> int:
    return int(self.next_state.shape[0])

  @property
  def num_actions(self) -> int:
    return int(self.next_state.shape[1])

  @property
  def branching(self) -> int:
    return int(self.next_state.shape[2])


def backward_induction(next_state: np.ndarray, probs: np.ndarray, rewards: np.ndarray,
                       horizon: int, discount: float) -> tuple[np.ndarray, np.ndarray]:
  """Exact finite-horizon optimal values (numpy, float64).

  Args:
    next_state: ``int[S, A, O]``; probs: ``float[S, A, O]``; rewards: ``float[S, A, O]``.
    horizon: ``H``; discount: ``γ``.

  Returns:
    ``(q_star [H, S, A], v_star [H + 1, S])`` with ``V*[H] = 0``.
  """
  num_states, num_actions, _ = next_state.shape
  q_star = np.zeros((horizon, num_states, num_actions))
  v_star = np.zeros((horizon + 1, num_states))
  for t in range(horizon - 1, -1, -1):
    # The move into time H ends the episode (discount 0), but V*[H] = 0 makes that moot.
    q_star[t] = np.sum(probs * (rewards + discount * v_star[t + 1][next_state]), axis=-1)
    v_star[t] = q_star[t].max(axis=-1)
  return q_star, v_star


def make(num_states: int, num_actions: int, branching: int, horizon: int, seed: int = 0,
         discount: float = 1.0) -> Garnet:
  """A random Garnet MDP (same arguments, same MDP).

  Args:
    num_states: ``S >= 1``.
    num_actions: ``A >= 1``.
    branching: ``O``, successors per ``(s, a)``, ``1 <= O <= S`` (1 = deterministic).
    horizon: ``H >= 1`` moves per episode.
    seed: numpy seed of the tables.
    discount: ``γ`` in ``[0, 1]``.
  """
  for name, value in (("num_states", num_states), ("num_actions", num_actions),
                      ("branching", branching), ("horizon", horizon)):
    if int(value) != value or value < 1:
      raise ValueError(f"garnet.make: {name} must be an integer >= 1, got {value!r}")
  if branching > num_states:
    raise ValueError(f"garnet.make: branching ({branching}) must be <= num_states "
                     f"({num_states}): the successors of a state-action pair are distinct")
  if not 0.0 <= discount <= 1.0:
    raise ValueError(f"garnet.make: discount must be in [0, 1], got {discount!r}")
  rng = np.random.default_rng(seed)
  # ``branching`` distinct successors per (s, a): the first O of a random permutation.
  next_state = np.argsort(rng.random((num_states, num_actions, num_states)), axis=-1)
  next_state = next_state[..., :branching]
  probs = rng.dirichlet(np.ones(branching), size=(num_states, num_actions))
  rewards = rng.random((num_states, num_actions, branching))
  return from_tables(next_state, probs, rewards, horizon, discount)


def from_tables(next_state, probs, rewards, horizon: int, discount: float = 1.0,
                name: Optional[str] = None) -> Garnet:
  """A :class:`Garnet` from explicit tables (e.g. a hand-made MDP, or several Garnets joined).

  Args:
    next_state: ``int[S, A, O]`` successors in ``[0, S)``.
    probs: ``float[S, A, O]`` non-negative rows summing to 1 (renormalised in float32).
    rewards: ``float[S, A, O]``.
    horizon: ``H >= 1``; discount: ``γ``.
    name: the game's name (default ``garnet_S{S}_A{A}_O{O}_H{H}``).
  """
  if int(horizon) != horizon or horizon < 1:
    raise ValueError(f"garnet.from_tables: horizon must be an integer >= 1, got {horizon!r}")
  next_state = np.asarray(next_state, np.int32)
  num_states, num_actions, branching = next_state.shape
  if next_state.min() < 0 or next_state.max() >= num_states:
    raise ValueError(f"garnet.from_tables: next_state must lie in [0, {num_states})")
  probs = np.asarray(probs, np.float32)
  rewards = np.asarray(rewards, np.float32)
  if probs.shape != next_state.shape or rewards.shape != next_state.shape:
    raise ValueError(f"garnet.from_tables: probs {probs.shape} and rewards {rewards.shape} "
                     f"must have next_state's shape {next_state.shape}")
  if np.any(probs < 0) or not np.allclose(probs.sum(-1), 1.0, atol=1e-5):
    raise ValueError("garnet.from_tables: probs rows must be non-negative and sum to 1")
  probs /= probs.sum(-1, keepdims=True)
  # Values from the float32 tables the game uses (in float64), so they are exact for the game.
  q_star, v_star = backward_induction(next_state, probs.astype(np.float64),
                                      rewards.astype(np.float64), horizon, discount)
  tables = dict(next_state=jnp.asarray(next_state), probs=jnp.asarray(probs),
                rewards=jnp.asarray(rewards))
  if name is None:
    name = f"garnet_S{num_states}_A{num_actions}_O{branching}_H{horizon}"
  game = _game(**tables, horizon=horizon, discount=discount, name=name)
  return Garnet(**tables, horizon=horizon, discount=float(discount),
                q_star=jnp.asarray(q_star, jnp.float32), v_star=jnp.asarray(v_star, jnp.float32),
                game=game)


def _game(next_state, probs, rewards, horizon: int, discount: float, name: str) -> Game:
  num_actions = next_state.shape[1]

  def init(key):
    del key
    return State(state=jnp.int32(0), time=jnp.int32(0))

  def legal_actions(state):
    return jnp.broadcast_to(state.time < horizon, (num_actions,))

  def step(state, action, outcome):
    done = state.time >= horizon
    reward = rewards[state.state, action, outcome]
    successor = next_state[state.state, action, outcome]
    time = state.time + 1
    ends = done | (time >= horizon)
    # A terminal state is absorbing: stepping it changes nothing and pays nothing.
    new_state = State(state=jnp.where(done, state.state, successor).astype(jnp.int32),
                      time=jnp.where(done, state.time, time).astype(jnp.int32))
    return StepResult(state=new_state, reward=jnp.where(done, 0.0, reward).astype(jnp.float32),
                      discount=jnp.where(ends, 0.0, discount).astype(jnp.float32),
                      terminal=ends)

  def outcome_probs(state, action):
    return probs[state.state, action]

  # With rewards in [lo, hi] ⊇ [0, 1] (Garnets: exactly [0, 1]) a return lies in
  # [lo, hi] * (1 + γ + ... + γ^(H-1)).
  total = float(sum(discount ** k for k in range(horizon)))
  lo = min(0.0, float(np.min(rewards))) * total
  hi = max(1.0, float(np.max(rewards))) * total
  return Game(name=name, num_actions=num_actions, init=init, legal_actions=legal_actions,
              step=step, num_outcomes=int(next_state.shape[2]), outcome_probs=outcome_probs,
              max_length=horizon, value_range=(lo, hi))


def _lookup(table: jax.Array, state: State) -> jax.Array:
  """``table[time, state]`` (``table`` is ``[H, S, ...]``), 0 at terminal states."""
  horizon = table.shape[0]
  row = table[jnp.minimum(state.time, horizon - 1), state.state]
  return jnp.where(state.time < horizon, row, 0.0)


def optimal_value(garnet: Garnet, state: State) -> jax.Array:
  """``f32[]`` V* of one (unbatched) state; 0 at the end of the episode. Jittable."""
  return _lookup(garnet.v_star[:garnet.horizon], state)


def optimal_action_values(garnet: Garnet, state: State) -> jax.Array:
  """``f32[A]`` Q* of one (unbatched) state; zeros at the end of the episode. Jittable."""
  return _lookup(garnet.q_star, state)


def estimator(garnet: Garnet, bias: float = 0.0, noise: float = 0.0, seed: int = 0):
  """A batched estimator ``Q* + bias + noise · z``, with exact ``Q*`` at ``bias = noise = 0``.

  ``z[t, s, a] ~ N(0, 1)`` is a fixed table drawn from ``seed`` when the estimator is made,
  so the same state always gets the same estimate whatever the search's key: the error is a
  property of the estimator, as for a trained network, not fresh noise per call.

  Returns:
    ``(params, key, states[B]) -> Estimate`` with ``action_values f32[B, A]``,
    ``value f32[B] = max_a action_values`` (0 at terminal states) and ``prior_logits=None``.
  """
  z = np.random.default_rng(seed).standard_normal(garnet.q_star.shape)
  table = garnet.q_star + jnp.float32(bias) + jnp.float32(noise) * jnp.asarray(z, jnp.float32)

  def estimate(params, key, states) -> Estimate:
    del params, key
    action_values = jax.vmap(lambda s: _lookup(table, s))(states)
    terminal = states.time >= garnet.horizon
    value = jnp.where(terminal, 0.0, jnp.max(action_values, axis=-1))
    return Estimate(value=value, action_values=action_values)

  return estimate
