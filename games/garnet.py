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

Many MDPs are searched in one batch (one compile) as a :class:`GarnetFamily`: one
:class:`Game` whose :class:`State` carries the index ``mdp`` of its member MDP.

    f = garnet.make_family(count=128, num_states=6, num_actions=3, branching=2, horizon=4)
    search = js.policies.puct(f.game, garnet.estimator(f), num_simulations=64)
    out = jax.jit(search)(None, key, f.roots())             # root m: member m's state 0
    f.q_star[jnp.arange(128), 0, 0, out.action]             # == f.v_star[:, 0, 0] if optimal

Both carry bounds for solvers: ``game.pessimistic_value`` is the exact value of the policy
"always play action 0" (``v_pessimistic``, a lower bound on ``V*``) and
``game.optimistic_value`` is ``max reward · (1 + γ + ... + γ^(moves left - 1))`` (an upper
bound on ``V*``).

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
  """A Garnet state: which MDP state, how many moves have been made, and in which MDP.

  ``mdp`` is the member of a :class:`GarnetFamily` (``i32[]`` in ``[0, M)``); a single
  :class:`Garnet` is member 0 of a family of one, and ``mdp=None`` (the default, so that
  ``State(state=..., time=...)`` still works, batched or not) means member 0. The game's rules
  keep ``mdp`` as they find it, ``None`` included.
  """

  state: jax.Array  # i32[] in [0, S)
  time: jax.Array  # i32[] in [0, H]; the episode ends at time == H
  mdp: Optional[jax.Array] = None  # i32[] in [0, M), or None for member 0


def _member(state: State) -> jax.Array:
  """``i32[...]`` the member index of ``state`` (0 where ``mdp`` is ``None``)."""
  return jnp.zeros_like(state.state) if state.mdp is None else state.mdp


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
    v_pessimistic: ``f32[H + 1, S]`` exact values of the policy "always play action 0"
      (``<= v_star``; ``0`` at time ``H``), the game's ``pessimistic_value``.
    game: the MDP as a :class:`jaxsearch.game.Game` over :class:`State` (``mdp`` 0), with
      ``pessimistic_value`` and ``optimistic_value`` (see :func:`make_game`).
  """

  next_state: jax.Array
  probs: jax.Array
  rewards: jax.Array
  horizon: int
  discount: float
  q_star: jax.Array
  v_star: jax.Array
  v_pessimistic: jax.Array
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


@dataclasses.dataclass(frozen=True, eq=False)
class GarnetFamily:
  """``M`` same-shaped Garnets searched as one :class:`Game` (one batch, one compile).

  A state of :attr:`game` names its member in ``State.mdp``; the game, :func:`estimator`,
  :func:`optimal_value` and :func:`optimal_action_values` look the member's tables up.

  Attributes:
    members: the ``M`` :class:`Garnet` s, member ``m`` = ``members[m]``.
    next_state: ``i32[M, S, A, O]``; probs: ``f32[M, S, A, O]``; rewards: ``f32[M, S, A, O]``
      the members' tables, stacked.
    horizon: ``H``; discount: ``γ`` (shared by all members).
    q_star: ``f32[M, H, S, A]``; v_star: ``f32[M, H + 1, S]``;
    v_pessimistic: ``f32[M, H + 1, S]`` the members' values, stacked.
    game: the family as one :class:`jaxsearch.game.Game` over :class:`State`, with
      ``pessimistic_value`` and ``optimistic_value``; ``init(key)`` starts at state 0 of a
      member drawn uniformly from ``key``.
  """

  members: tuple[Garnet, ...]
  next_state: jax.Array
  probs: jax.Array
  rewards: jax.Array
  horizon: int
  discount: float
  q_star: jax.Array
  v_star: jax.Array
  v_pessimistic: jax.Array
  game: Game

  @property
  def num_members(self) -> int:
    return len(self.members)

  @property
  def num_states(self) -> int:
    return int(self.next_state.shape[1])

  @property
  def num_actions(self) -> int:
    return int(self.next_state.shape[2])

  @property
  def branching(self) -> int:
    return int(self.next_state.shape[3])

  def member(self, m: int) -> Garnet:
    """Member ``m`` as a single :class:`Garnet`."""
    return self.members[m]

  def roots(self) -> State:
    """``State[M]``: root ``m`` is member ``m``'s initial state (state 0, time 0)."""
    zeros = jnp.zeros((self.num_members,), jnp.int32)
    return State(state=zeros, time=zeros, mdp=jnp.arange(self.num_members, dtype=jnp.int32))


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


def evaluate_policy(next_state: np.ndarray, probs: np.ndarray, rewards: np.ndarray,
                    horizon: int, discount: float, policy=None) -> np.ndarray:
  """Exact finite-horizon values of a fixed deterministic policy (numpy, float64).

  Args:
    next_state: ``int[S, A, O]``; probs: ``float[S, A, O]``; rewards: ``float[S, A, O]``.
    horizon: ``H``; discount: ``γ``.
    policy: ``int[H, S]`` the action played at each ``(t, s)``; ``None`` = always action 0.

  Returns:
    ``v [H + 1, S]`` with ``v[H] = 0``; ``v <= V*`` since the policy is one of those ``V*``
    maximises over.
  """
  num_states = next_state.shape[0]
  if policy is None:
    policy = np.zeros((horizon, num_states), np.int64)
  policy = np.asarray(policy)
  states = np.arange(num_states)
  v = np.zeros((horizon + 1, num_states))
  for t in range(horizon - 1, -1, -1):
    a = policy[t]
    v[t] = np.sum(probs[states, a] * (rewards[states, a] + discount *
                                      v[t + 1][next_state[states, a]]), axis=-1)
  return v


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
  probs = np.array(probs, np.float32)  # a copy: normalised in place below, the caller's kept
  rewards = np.asarray(rewards, np.float32)
  if probs.shape != next_state.shape or rewards.shape != next_state.shape:
    raise ValueError(f"garnet.from_tables: probs {probs.shape} and rewards {rewards.shape} "
                     f"must have next_state's shape {next_state.shape}")
  if np.any(probs < 0) or not np.allclose(probs.sum(-1), 1.0, atol=1e-5):
    raise ValueError("garnet.from_tables: probs rows must be non-negative and sum to 1")
  probs /= probs.sum(-1, keepdims=True)
  # Values from the float32 tables the game uses (in float64), so they are exact for the game.
  # Rounding to float32 is monotone, so v_pessimistic <= v_star survives it.
  tables64 = (next_state, probs.astype(np.float64), rewards.astype(np.float64))
  q_star, v_star = backward_induction(*tables64, horizon, discount)
  v_pessimistic = evaluate_policy(*tables64, horizon, discount)
  if name is None:
    name = f"garnet_S{num_states}_A{num_actions}_O{branching}_H{horizon}"
  game = make_game(next_state[None], probs[None], rewards[None], v_pessimistic[None], horizon,
                   discount, name)
  return Garnet(next_state=jnp.asarray(next_state), probs=jnp.asarray(probs),
                rewards=jnp.asarray(rewards), horizon=horizon, discount=float(discount),
                q_star=jnp.asarray(q_star, jnp.float32), v_star=jnp.asarray(v_star, jnp.float32),
                v_pessimistic=jnp.asarray(v_pessimistic, jnp.float32), game=game)


def make_family(count: int, num_states: int, num_actions: int, branching: int, horizon: int,
                seed: int = 0, discount: float = 1.0) -> GarnetFamily:
  """``count`` random Garnets as one :class:`GarnetFamily`; member ``m`` is exactly
  ``make(num_states, num_actions, branching, horizon, seed=seed + m, discount=discount)``.
  """
  if int(count) != count or count < 1:
    raise ValueError(f"garnet.make_family: count must be an integer >= 1, got {count!r}")
  return stack_family([make(num_states, num_actions, branching, horizon, seed=seed + m,
                            discount=discount) for m in range(int(count))])


def stack_family(members, name: Optional[str] = None) -> GarnetFamily:
  """A :class:`GarnetFamily` of given Garnets (same ``S, A, O``, horizon and discount).

  Args:
    members: a non-empty sequence of :class:`Garnet`; member ``m`` = ``members[m]``.
    name: the game's name (default ``garnet_M{M}_S{S}_A{A}_O{O}_H{H}``).
  """
  members = tuple(members)
  if not members:
    raise ValueError("garnet.stack_family: needs at least one Garnet")
  first = members[0]
  for g in members:
    if (g.next_state.shape != first.next_state.shape or g.horizon != first.horizon or
        g.discount != first.discount):
      raise ValueError("garnet.stack_family: members must share (S, A, O), horizon and "
                       f"discount; got {g.next_state.shape}, {g.horizon}, {g.discount} and "
                       f"{first.next_state.shape}, {first.horizon}, {first.discount}")
  stacked = {field: np.stack([np.asarray(getattr(g, field)) for g in members])
             for field in ("next_state", "probs", "rewards", "q_star", "v_star",
                           "v_pessimistic")}
  if name is None:
    name = (f"garnet_M{len(members)}_S{first.num_states}_A{first.num_actions}"
            f"_O{first.branching}_H{first.horizon}")
  game = make_game(stacked["next_state"], stacked["probs"], stacked["rewards"],
                   stacked["v_pessimistic"], first.horizon, first.discount, name)
  return GarnetFamily(members=members, horizon=first.horizon, discount=first.discount,
                      game=game, **{k: jnp.asarray(v) for k, v in stacked.items()})


def make_game(next_state, probs, rewards, v_pessimistic, horizon: int, discount: float,
              name: str) -> Game:
  """The :class:`Game` of ``M`` same-shaped MDPs; ``State.mdp`` picks the member.

  Args:
    next_state: ``i32[M, S, A, O]``; probs: ``f32[M, S, A, O]``; rewards: ``f32[M, S, A, O]``.
    v_pessimistic: ``f32[M, H + 1, S]`` exact values of some fixed policy (``0`` at ``H``).
    horizon: ``H``; discount: ``γ``; name: the game's name.

  The game's ``pessimistic_value(state)`` is ``v_pessimistic[mdp, time, state]`` and its
  ``optimistic_value(state)`` is ``max(rewards[mdp]) · (1 + γ + ... + γ^(H - time - 1))``
  (computed in float64, then rounded up to float32): every move pays at most the member's
  largest reward, so it is never below ``V*``. Both are 0 at terminal states.
  """
  next_state = np.asarray(next_state, np.int32)
  num_members, _, num_actions, num_outcomes = next_state.shape
  rewards64 = np.asarray(rewards, np.float64)
  optimistic32, remaining = _optimistic_values(rewards64, horizon, discount)
  next_state, probs, rewards = (jnp.asarray(next_state), jnp.asarray(probs, jnp.float32),
                                jnp.asarray(rewards, jnp.float32))
  v_pessimistic = jnp.asarray(v_pessimistic, jnp.float32)
  optimistic32 = jnp.asarray(optimistic32)

  def init(key):
    if num_members == 1:
      return State(state=jnp.int32(0), time=jnp.int32(0), mdp=jnp.int32(0))
    mdp = jax.random.randint(key, (), 0, num_members, dtype=jnp.int32)
    return State(state=jnp.int32(0), time=jnp.int32(0), mdp=mdp)

  def legal_actions(state):
    return jnp.broadcast_to(state.time < horizon, (num_actions,))

  def outcome_probs(state, action):
    return probs[_member(state), state.state, action]

  def pessimistic_value(state):
    return _lookup(v_pessimistic[:, :horizon], state)

  def optimistic_value(state):
    value = optimistic32[_member(state), jnp.minimum(state.time, horizon)]
    return jnp.where(state.time < horizon, value, 0.0)

  # With rewards in [lo, hi] ⊇ [0, 1] (Garnets: exactly [0, 1]) a return lies in
  # [lo, hi] * (1 + γ + ... + γ^(H-1)).
  total = float(remaining[0])
  value_range = (min(0.0, float(np.min(rewards64))) * total,
                 max(1.0, float(np.max(rewards64))) * total)
  return Game(name=name, num_actions=num_actions, init=init, legal_actions=legal_actions,
              step=_step_fn(next_state, rewards, horizon, discount),
              num_outcomes=num_outcomes, outcome_probs=outcome_probs, max_length=horizon,
              value_range=value_range, pessimistic_value=pessimistic_value,
              optimistic_value=optimistic_value)


def _step_fn(next_state: jax.Array, rewards: jax.Array, horizon: int, discount: float):
  """The ``step`` of :func:`make_game` over ``next_state i32[M, S, A, O]`` and ``rewards
  f32[M, S, A, O]``."""

  def step(state, action, outcome):
    done = state.time >= horizon
    m = _member(state)
    reward = rewards[m, state.state, action, outcome]
    successor = next_state[m, state.state, action, outcome]
    time = state.time + 1
    ends = done | (time >= horizon)
    # A terminal state is absorbing: stepping it changes nothing and pays nothing.
    new_state = state.replace(state=jnp.where(done, state.state, successor).astype(jnp.int32),
                              time=jnp.where(done, state.time, time).astype(jnp.int32))
    return StepResult(state=new_state, reward=jnp.where(done, 0.0, reward).astype(jnp.float32),
                      discount=jnp.where(ends, 0.0, discount).astype(jnp.float32),
                      terminal=ends)

  return step


def _optimistic_values(rewards64: np.ndarray, horizon: int, discount: float):
  """``(optimistic f32[M, H + 1], remaining f64[H + 1])``: the members' optimistic values by
  time (see :func:`make_game`), rounded up to float32 so they stay admissible, and
  ``remaining[t] = 1 + γ + ... + γ^(H - t - 1)``, the discounts still to come at time ``t``."""
  num_members = rewards64.shape[0]
  remaining = np.array([sum(discount ** k for k in range(horizon - t))
                        for t in range(horizon + 1)])
  optimistic = rewards64.reshape(num_members, -1).max(-1)[:, None] * remaining  # [M, H + 1]
  optimistic32 = optimistic.astype(np.float32)
  optimistic32 = np.where(optimistic32 < optimistic,
                          np.nextafter(optimistic32, np.float32(np.inf)), optimistic32)
  return optimistic32, remaining


def _lookup(table: jax.Array, state: State) -> jax.Array:
  """``table[mdp, time, state]`` (``table`` is ``[M, H, S, ...]``), 0 at terminal states."""
  horizon = table.shape[1]
  row = table[_member(state), jnp.minimum(state.time, horizon - 1), state.state]
  return jnp.where(state.time < horizon, row, 0.0)


def _stacked(garnet, table: jax.Array) -> jax.Array:
  """``table`` of a Garnet or a family with the member axis ``[M, ...]`` (``M = 1``)."""
  return table if isinstance(garnet, GarnetFamily) else table[None]


def optimal_value(garnet, state: State) -> jax.Array:
  """``f32[]`` V* of one (unbatched) state of a :class:`Garnet` or :class:`GarnetFamily`; 0 at
  the end of the episode. Jittable."""
  return _lookup(_stacked(garnet, garnet.v_star)[:, :garnet.horizon], state)


def optimal_action_values(garnet, state: State) -> jax.Array:
  """``f32[A]`` Q* of one (unbatched) state of a :class:`Garnet` or :class:`GarnetFamily`;
  zeros at the end of the episode. Jittable."""
  return _lookup(_stacked(garnet, garnet.q_star), state)


def estimator(garnet, bias: float = 0.0, noise: float = 0.0, seed: int = 0,
              bias_per_step: float = 0.0):
  """A batched estimator ``Q* + bias + bias_per_step · (H − t) + noise · z``, exact ``Q*`` when
  all three are 0.

  ``bias_per_step`` makes the optimism grow with the moves left, as for Wordle's entropic
  estimator (the AVTS article): estimates far from the end are too good and a one-step lookahead
  revises them down — the drift AVTS's debiasing removes. A constant ``bias`` shifts every
  action alike and cancels out.

  ``garnet`` is a :class:`Garnet` or a :class:`GarnetFamily`. ``z ~ N(0, 1)`` is a fixed table
  shaped like ``garnet.q_star`` (``[H, S, A]``, or ``[M, H, S, A]`` for a family: one noise
  table per member; member 0's equals a single Garnet's for the same ``seed``) drawn from
  ``seed`` when the estimator is made, so the same state always gets the same estimate
  whatever the search's key: the error is a property of the estimator, as for a trained
  network, not fresh noise per call.

  Returns:
    ``(params, key, states[B]) -> Estimate`` with ``action_values f32[B, A]``,
    ``value f32[B] = max_a action_values`` (0 at terminal states) and ``prior_logits=None``.
  """
  z = np.random.default_rng(seed).standard_normal(garnet.q_star.shape)
  horizon = garnet.q_star.shape[-3]
  moves_left = np.arange(horizon, 0, -1, dtype=np.float32)[:, None, None]  # [H, 1, 1]
  # Kept in numpy: making the estimator inside a traced function then captures no tracer
  # (each trace that uses it embeds it as a constant).
  table = (np.asarray(garnet.q_star, np.float32) + np.float32(bias) +
           np.float32(bias_per_step) * moves_left + np.float32(noise) * z.astype(np.float32))
  table = table if isinstance(garnet, GarnetFamily) else table[None]

  def estimate(params, key, states) -> Estimate:
    del params, key
    values = jnp.asarray(table)
    action_values = jax.vmap(lambda s: _lookup(values, s))(states)
    terminal = states.time >= garnet.horizon
    value = jnp.where(terminal, 0.0, jnp.max(action_values, axis=-1))
    return Estimate(value=value, action_values=action_values)

  return estimate
