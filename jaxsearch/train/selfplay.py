"""Self-play: ``B`` games in lock-step, one batched search per move, restarted in place.

One call of the step from :func:`make_step` plays one move in every game:

1. one batched search from the current positions (reusing each game's subtree);
2. records (observation, policy target, legal mask, search value, root action values) at
   the game's ply; the policy target is the search's own ``policy_target`` when it offers
   one (Gumbel: the improved policy ``softmax(logits + σ(completed Q))``), else the root
   visit distribution;
3. picks the move — uniformly at random during the game's random opening (its first ``k``
   plies, ``k ~ U{0..random_opening}`` drawn per game, not recorded: they only diversify the
   positions seen), then sampled from the visit counts (τ = 1) for ``temperature_moves``
   plies, then the search's greedy move (τ = 0) — and plays it;
4. for every game that just ended, computes each recorded position's value target (the
   outcome ``z`` from that position's mover's view, or the search value) and adds the game's
   positions to the replay buffer;
5. restarts finished games from the initial state (their tree is cleared) and keeps the
   chosen child's subtree for the others (:func:`jaxsearch.tree.reroot`).

Everything is one pure function of ``(params, key, state, buffer)``, jitted by the caller.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import tree as tree_lib
from jaxsearch.enums import ValueTarget, coerce
from jaxsearch.game import Game, per_item_keys
from jaxsearch.policies import Search
from jaxsearch.train import replay



@struct.dataclass
class SelfPlayState:
  """``B`` games in progress (``T`` = the game's ``max_length``).

  Attributes:
    states: game states ``[B, ...]``.
    tree: the search trees ``[B, N, ...]`` (subtrees kept from the previous move).
    ply: ``i32[B]`` moves played in each game so far.
    opening: ``i32[B]`` length of each game's random opening (plies not recorded).
    trajectory: :class:`replay.Sample` ``[B, T, ...]`` of the positions of the games so far
      (``value`` holds the search's root value until the game ends).
    reward: ``f32[B, T]`` reward to the mover of each recorded move.
    discount: ``f32[B, T]`` discount of each recorded move (``-1`` alternating, 0 at the end).
    games: ``i32[]`` games finished since the start.
    moves: ``i32[]`` moves played since the start (all games).
  """

  states: Any
  tree: tree_lib.Tree
  ply: jax.Array
  opening: jax.Array
  trajectory: replay.Sample
  reward: jax.Array
  discount: jax.Array
  games: jax.Array
  moves: jax.Array


@dataclasses.dataclass(frozen=True)
class SelfPlay:
  """Static settings of self-play.

  Attributes:
    game: the game.
    observe: unbatched ``state -> f32[*obs_shape]``.
    search: the search, built with ``temperature=0`` (the step samples early moves itself)
      and, for self-play, root noise (``dirichlet_fraction > 0``).
    batch_size: ``B`` games in lock-step.
    temperature_moves: plies after the random opening played at τ = 1 (sampled from the
      visit counts).
    random_opening: each game starts with ``k ~ U{0..random_opening}`` uniformly random
      plies, not recorded (0 = off): every kind of position gets played and learnt, not only
      those self-play's own moves reach.
    value_target: ``"outcome"`` (game result z), ``"search"`` (root value), ``"mix"``
      (their mean) or ``"n_step"`` (:func:`n_step_returns` over ``td_steps`` plies).
    td_steps: ``n`` of the ``"n_step"`` target.
    reuse: keep the played child's subtree for the next search.
    action_values: record the search's root action values as targets.
    sample_visits: sample the first ``temperature_moves`` moves from the visit counts (off
      for searches whose greedy action already explores, e.g. Gumbel's noisy Sequential
      Halving winner).
  """

  game: Game
  observe: Callable[[Any], jax.Array]
  search: Search
  batch_size: int
  temperature_moves: int = 2
  random_opening: int = 0
  value_target: ValueTarget = ValueTarget.OUTCOME
  td_steps: int = 10
  reuse: bool = True
  action_values: bool = False
  sample_visits: bool = True

  def __post_init__(self):
    object.__setattr__(self, "value_target",
                       coerce(ValueTarget, self.value_target, "value_target"))
    if int(self.td_steps) < 1:
      raise ValueError(f"td_steps must be at least 1, got {self.td_steps}")
    if self.game.max_length is None:
      raise ValueError(f"self-play needs a game with max_length, {self.game.name!r} has none")
    if self.search.temperature != 0.0:
      raise ValueError("build the self-play search with temperature=0 (the step samples the "
                       "first temperature_moves plies from the visit counts itself)")

  @property
  def max_length(self) -> int:
    return int(self.game.max_length)

  def example(self) -> replay.Sample:
    """One unbatched training sample of the right shapes (for :func:`replay.init`)."""
    state = self.game.init(jax.random.PRNGKey(0))
    obs = jax.eval_shape(self.observe, state)
    num_actions = self.game.num_actions
    return replay.Sample(
        obs=jnp.zeros(obs.shape, jnp.float32), policy=jnp.zeros((num_actions,), jnp.float32),
        legal=jnp.zeros((num_actions,), bool), value=jnp.zeros((), jnp.float32),
        action_values=jnp.zeros((num_actions,), jnp.float32) if self.action_values else None)

  def init(self, params, key: jax.Array) -> SelfPlayState:
    """``B`` fresh games and empty trees of the search's shapes."""
    batch = self.batch_size
    states = jax.vmap(self.game.init)(per_item_keys(key, batch))
    tree = self.search.init_tree(params, key, states)
    tree = tree.replace(num_nodes=jnp.zeros_like(tree.num_nodes))  # empty: the first search
    example = self.example()                                       # starts every row afresh
    trajectory = jax.tree.map(
        lambda x: jnp.zeros((batch, self.max_length) + x.shape, x.dtype), example)
    zeros = jnp.zeros((batch, self.max_length), jnp.float32)
    return SelfPlayState(states=states, tree=tree, ply=jnp.zeros((batch,), jnp.int32),
                         opening=self.draw_openings(jax.random.fold_in(key, 1)),
                         trajectory=trajectory, reward=zeros, discount=zeros,
                         games=jnp.zeros((), jnp.int32), moves=jnp.zeros((), jnp.int32))


  def draw_openings(self, key: jax.Array) -> jax.Array:
    """``i32[B]`` random-opening lengths, uniform over ``0..random_opening``."""
    return jax.random.randint(key, (self.batch_size,), 0, self.random_opening + 1)


def _returns(reward: jax.Array, discount: jax.Array) -> jax.Array:
  """``f32[B, T]`` value targets ``z_t = r_t + d_t z_{t+1}`` (``z_T = 0``) of whole games."""

  def back(z_next, rd):
    r, d = rd
    z = r + d * z_next
    return z, z

  _, z = jax.lax.scan(back, jnp.zeros(reward.shape[0], jnp.float32),
                      (reward.T, discount.T), reverse=True)
  return z.T


def n_step_returns(reward: jax.Array, discount: jax.Array, value: jax.Array,
                   steps: int) -> jax.Array:
  """``f32[B, T]`` bootstrapped value targets of whole games (MuZero's, Schrittwieser et al.
  2020, Appendix G): ``z_t = Σ_{i<n} (Π_{j<i} d_{t+j}) r_{t+i} + (Π_{j<n} d_{t+j}) v_{t+n}``,
  ``v`` the search's root values, each from the view of the player to move there (the
  discounts carry the sign between players). Past a game's end the discounts are 0, so a
  target within ``n`` plies of the end is the game's return. Against the outcome, a target
  whose variance does not grow with the game's length (2048's returns are sums over hundreds
  of moves).

  Args:
    reward, discount: ``f32[B, T]``, each ply's transition.
    value: ``f32[B, T]``, the root value searched at each ply.
    steps: ``n >= 1``.
  """
  horizon = reward.shape[1]

  def ahead(x, i):  # x[:, t + i], 0 past the last column
    shift = min(i, horizon)
    return jnp.pad(x[:, shift:], ((0, 0), (0, shift)))

  target, scale = jnp.zeros_like(reward), jnp.ones_like(reward)
  for i in range(steps):
    target = target + scale * ahead(reward, i)
    scale = scale * ahead(discount, i)
  # A value past the end (stale or unset) is multiplied by a zero discount: kept out exactly.
  return target + jnp.where(scale != 0, scale * ahead(value, steps), 0.0)


def make_step(selfplay: SelfPlay) -> Callable:
  """The move function ``(params, key, state, buffer) -> (state, buffer, info)``.

  ``info`` holds ``finished`` (``i32[]`` games finished by this move), ``added`` (``i32[]``
  positions added to the buffer), ``outcome`` (``f32[]`` sum over finished games of the
  first player's result) and ``length`` (``i32[]`` sum of their lengths).
  """
  game, search = selfplay.game, selfplay.search
  batch, horizon = selfplay.batch_size, selfplay.max_length
  legal_fn = jax.vmap(game.legal_actions)
  step_fn = jax.vmap(game.step)
  rows = jnp.arange(batch)

  def step(params, key, state: SelfPlayState, buffer: replay.Buffer):
    search_key, action_key, outcome_key, init_key = jax.random.split(key, 4)
    out = search(params, search_key, state.states, state.tree)
    legal = legal_fn(state.states)
    visits = out.visit_counts.astype(jnp.float32)
    policy = _policy_target(out, visits, legal)
    action = _choose_action(selfplay, state, out, visits, legal, action_key)
    trajectory, ply = _record_positions(selfplay, state, out, visits, legal, policy)
    outcome = _draw_outcomes(game, state.states, action, outcome_key)
    result = step_fn(state.states, action, outcome)
    reward = state.reward.at[rows, ply].set(result.reward)
    discount = state.discount.at[rows, ply].set(jnp.where(result.terminal, 0.0,
                                                          result.discount))
    # A game ends when the move ends it, at the length bound, or if the root had no move.
    done = result.terminal | (state.ply + 1 >= horizon) | (out.action < 0)
    buffer, mask = _add_finished_games(selfplay, buffer, state, trajectory, reward, discount,
                                       done)
    states, tree = _restart_finished_games(selfplay, done, result.state, out.tree, action,
                                           outcome, init_key)
    first_player_result = jnp.where(state.ply % 2 == 0, result.reward, -result.reward)
    info = dict(finished=jnp.sum(done, dtype=jnp.int32),
                added=jnp.sum(mask, dtype=jnp.int32),
                outcome=jnp.sum(jnp.where(done, first_player_result, 0.0)),
                length=jnp.sum(jnp.where(done, state.ply + 1, 0), dtype=jnp.int32))
    new_state = SelfPlayState(
        states=states, tree=tree, ply=jnp.where(done, 0, state.ply + 1),
        opening=jnp.where(done, selfplay.draw_openings(jax.random.fold_in(init_key, 1)),
                          state.opening),
        trajectory=trajectory,
        reward=jnp.where(done[:, None], 0.0, reward),
        discount=jnp.where(done[:, None], 0.0, discount),
        games=state.games + info["finished"], moves=state.moves + batch)
    return new_state, buffer, info

  return step


def _policy_target(out, visits: jax.Array, legal: jax.Array) -> jax.Array:
  """``f32[B, A]``: the search's ``policy_target`` where it has one (restricted to legal
  moves), else the root visit distribution ``visits f32[B, A]`` normalised."""
  policy = visits / jnp.maximum(jnp.sum(visits, axis=-1, keepdims=True), 1.0)
  if getattr(out, "policy_target", None) is not None:
    policy = jnp.where(legal, out.policy_target, 0.0)
    policy = policy / jnp.maximum(jnp.sum(policy, axis=-1, keepdims=True), 1e-30)
  return policy


def _choose_action(selfplay: SelfPlay, state: SelfPlayState, out, visits: jax.Array,
                   legal: jax.Array, key: jax.Array) -> jax.Array:
  """``i32[B]`` moves played: uniform over the legal ones in the random opening, sampled from
  the visit counts for ``temperature_moves`` plies after it (when ``sample_visits``), the
  search's action after that."""
  batch = selfplay.batch_size
  sampled = jax.vmap(jax.random.categorical)(
      per_item_keys(key, batch), jnp.where(visits > 0, jnp.log(visits), -jnp.inf))
  explore = (state.ply < state.opening + selfplay.temperature_moves) & selfplay.sample_visits
  action = jnp.where(explore & jnp.any(visits > 0, axis=-1), sampled, out.action)
  if selfplay.random_opening:
    uniform = jax.vmap(jax.random.categorical)(
        per_item_keys(jax.random.fold_in(key, 1), batch),
        jnp.where(legal, 0.0, -jnp.inf))
    action = jnp.where((state.ply < state.opening) & jnp.any(legal, axis=-1), uniform,
                       action)
  return action.astype(jnp.int32)


def _record_positions(selfplay: SelfPlay, state: SelfPlayState, out, visits: jax.Array,
                      legal: jax.Array, policy: jax.Array):
  """``(trajectory, ply i32[B])``: every game's current position written at its ply (capped
  at the last row) of ``state.trajectory``."""
  game = selfplay.game
  rows = jnp.arange(selfplay.batch_size)
  record = replay.Sample(
      obs=jax.vmap(selfplay.observe)(state.states), policy=policy, legal=legal,
      value=out.root_value,
      # q̂3 is debiased and may leave the game's value range, where no true value lies.
      action_values=(jnp.where(visits > 0, jnp.clip(out.q_values, *game.value_range),
                               jnp.nan)
                     if selfplay.action_values else None))
  ply = jnp.minimum(state.ply, selfplay.max_length - 1)
  trajectory = jax.tree.map(lambda t, x: t.at[rows, ply].set(x.astype(t.dtype)),
                            state.trajectory, record)
  return trajectory, ply


def _draw_outcomes(game, states, action: jax.Array, key: jax.Array) -> jax.Array:
  """``i32[B]`` chance outcomes of ``action`` at ``states`` (zeros without chance)."""
  batch = action.shape[0]
  if game.num_outcomes > 1:
    probs = jax.vmap(game.outcome_probs)(states, jnp.maximum(action, 0))
    return jax.vmap(jax.random.categorical)(per_item_keys(key, batch), jnp.log(probs))
  return jnp.zeros((batch,), jnp.int32)


def _add_finished_games(selfplay: SelfPlay, buffer: replay.Buffer, state: SelfPlayState,
                        trajectory, reward: jax.Array, discount: jax.Array, done: jax.Array):
  """``(buffer, mask bool[B, T])``: every finished game's positions past its opening added
  to the buffer with their value targets, oldest game first, in ply order."""
  batch, horizon = selfplay.batch_size, selfplay.max_length
  outcome_z = _returns(reward, discount)
  if selfplay.value_target is ValueTarget.OUTCOME:
    value = outcome_z
  elif selfplay.value_target is ValueTarget.SEARCH:
    value = trajectory.value
  elif selfplay.value_target is ValueTarget.N_STEP:
    value = n_step_returns(reward, discount, trajectory.value, int(selfplay.td_steps))
  else:
    value = 0.5 * (outcome_z + trajectory.value)
  finished = trajectory.replace(value=value)
  plies = jnp.arange(horizon)[None, :]
  mask = done[:, None] & (plies <= state.ply[:, None]) & (plies >= state.opening[:, None])
  flat = jax.tree.map(lambda x: x.reshape((batch * horizon,) + x.shape[2:]), finished)
  return replay.add(buffer, flat, mask.reshape(-1)), mask


def _restart_finished_games(selfplay: SelfPlay, done: jax.Array, stepped, tree, action,
                            outcome, key: jax.Array):
  """``(states, tree)``: finished games restarted from fresh states (keys from ``key``) with
  empty trees; the others keep the played child's subtree when reusing and it leaves room
  for a full search."""
  batch = selfplay.batch_size
  config = selfplay.search.config
  room = config.max_nodes - config.num_simulations - 1  # a kept subtree must leave S + 1 free
  fresh = jax.vmap(selfplay.game.init)(per_item_keys(key, batch))
  states = jax.tree.map(
      lambda new, old: jnp.where(done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
      fresh, stepped)
  if selfplay.reuse:
    tree = tree_lib.reroot(tree, action, outcome)
    keep = ~done & (tree.num_nodes <= room)
  else:
    keep = jnp.zeros((batch,), bool)
  return states, tree.replace(num_nodes=jnp.where(keep, tree.num_nodes, 0))
