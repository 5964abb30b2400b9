"""Matches between agents: two-player games in lock-step, and one-player mean returns."""

from __future__ import annotations

from typing import Any, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Game, per_item_keys
from jaxsearch.train.agents import ActFn, Agent, as_agent


# ---------------------------------------------------------------------------------------------
# Matches.


def _play_outcomes(game: Game, half: int, max_steps: int, alternating: bool, agent_a: Agent,
                   agent_b: Agent, key):
  """``2 * half`` games in lock-step: games ``[0, half)`` with A first, ``[half, 2 half)`` with
  B first. Returns ``(score f32[2 half] from A's view, forfeit bool[2 half], plies i32[])``.

  ``alternating``: the players move in turn, so each agent is called on ``half`` games a ply;
  otherwise both agents are called on every game and the mover is tracked by the discount
  (``-1`` hands the turn over, ``+1`` keeps it). Chance outcomes are drawn from
  ``game.outcome_probs``."""
  num_games = 2 * half
  init_key, loop_key = jax.random.split(key)
  states = jax.vmap(game.init)(per_item_keys(init_key, num_games))
  legal_fn = jax.vmap(game.legal_actions)
  first_half = jnp.arange(num_games) < half

  def cond(carry):
    t, _, done, _, _, _ = carry
    return (t < max_steps) & ~jnp.all(done)

  def body(carry):
    t, states, done, score, forfeits, a_to_move = carry
    key_a, key_b = jax.random.split(jax.random.fold_in(loop_key, t))
    if alternating:
      actions, a_moves = _alternating_actions(agent_a, agent_b, key_a, key_b, states, t, half)
    else:
      a_moves = a_to_move
      actions = jnp.where(a_moves, agent_a(key_a, states).astype(jnp.int32),
                          agent_b(key_b, states).astype(jnp.int32))
    sign = jnp.where(a_moves, 1.0, -1.0)  # the mover's returns, seen by A
    states, gain, ended, forfeit, hands_over = _play_ply(game, states, actions, done, key_b)
    done = done | ended
    a_to_move = a_to_move ^ hands_over
    return t + 1, states, done, score + sign * gain, forfeits | forfeit, a_to_move

  done = ~jnp.any(legal_fn(states), axis=-1)
  carry = (jnp.int32(0), states, done, jnp.zeros((num_games,), jnp.float32),
           jnp.zeros((num_games,), bool), first_half)
  t, _, _, score, forfeits, _ = jax.lax.while_loop(cond, body, carry)
  return score, forfeits, t


def _alternating_actions(agent_a: Agent, agent_b: Agent, key_a, key_b, states, t, half: int):
  """``(actions i32[2 half], a_moves bool[2 half])`` of ply ``t`` when the players move in
  turn: A moves in the first half of the games on even plies, in the second on odd ones, so
  each agent is called on ``half`` games."""
  num_games = 2 * half
  lower = jnp.arange(half)
  a_turn = t % 2 == 0
  a_idx = jnp.where(a_turn, lower, lower + half)
  b_idx = jnp.where(a_turn, lower + half, lower)
  act_a = agent_a(key_a, jax.tree.map(lambda x: x[a_idx], states)).astype(jnp.int32)
  act_b = agent_b(key_b, jax.tree.map(lambda x: x[b_idx], states)).astype(jnp.int32)
  actions = jnp.zeros((num_games,), jnp.int32).at[a_idx].set(act_a).at[b_idx].set(act_b)
  return actions, (jnp.arange(num_games) < half) == a_turn


def _play_ply(game: Game, states, actions, done, key):
  """One ply of every unfinished game: legal actions step the game (chance outcomes drawn
  with ``fold_in(key, 1)``), an illegal one loses on the spot.

  Returns:
    ``(states, gain f32[G], ended bool[G], forfeit bool[G], hands_over bool[G])``: the mover's
    reward (``-1`` for a forfeit), the games that ended at this ply (or had no legal move),
    and those where the turn passes to the other player (a ``-1`` discount).
  """
  num_games = actions.shape[0]
  legal = jax.vmap(game.legal_actions)(states)
  active = ~done & jnp.any(legal, axis=-1)
  in_range = (actions >= 0) & (actions < game.num_actions)
  ok = in_range & jnp.take_along_axis(
      legal, jnp.clip(actions, 0, game.num_actions - 1)[:, None], axis=1)[:, 0]
  forfeit = active & ~ok  # an illegal move loses on the spot
  moved = active & ok
  safe = jnp.where(ok, actions, 0)
  if game.num_outcomes > 1:
    outcomes = jax.vmap(jax.random.categorical)(
        per_item_keys(jax.random.fold_in(key, 1), num_games),
        jnp.log(jax.vmap(game.outcome_probs)(states, safe))).astype(jnp.int32)
  else:
    outcomes = jnp.zeros_like(actions)
  result = jax.vmap(game.step)(states, safe, outcomes)
  states = jax.tree.map(
      lambda n, o: jnp.where(moved.reshape(moved.shape + (1,) * (n.ndim - 1)), n, o),
      result.state, states)
  gain = jnp.where(moved, result.reward, 0.0) - forfeit.astype(jnp.float32)
  ended = ~active | forfeit | (moved & result.terminal)
  return states, gain, ended, forfeit, moved & (result.discount < 0)


_play_jit = jax.jit(_play_outcomes, static_argnums=(0, 1, 2, 3))


def match_outcomes(game: Game, act_first: Union[ActFn, Agent], act_second: Union[ActFn, Agent],
                   key: jax.Array, num_games: int, max_steps: Optional[int] = None,
                   alternating: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Per-game results of :func:`play_match`.

  Returns:
    ``(score f32[G], first_agent_started bool[G], forfeit bool[G])``: ``score`` is the first
    agent's return (``> 0`` win, ``0`` draw, ``< 0`` loss); games ``[0, G/2)`` had the first
    agent move first; ``forfeit`` marks games ended by an illegal move (a loss for its player).
  """
  if num_games < 2 or num_games % 2:
    raise ValueError(f"num_games must be even and >= 2 (half with each side first), got "
                     f"{num_games}")
  if max_steps is None:
    max_steps = game.max_length
  if max_steps is None:
    raise ValueError(f"game {game.name!r} has no max_length; pass max_steps")
  half = num_games // 2
  score, forfeit, _ = _play_jit(game, half, int(max_steps), bool(alternating),
                                as_agent(act_first), as_agent(act_second), key)
  started = np.arange(num_games) < half
  return np.asarray(score), started, np.asarray(forfeit)


def _tally(score: np.ndarray) -> dict[str, int]:
  return {"wins": int(np.sum(score > 0)), "draws": int(np.sum(score == 0)),
          "losses": int(np.sum(score < 0)), "games": int(score.size)}


def play_match(game: Game, act_first: Union[ActFn, Agent], act_second: Union[ActFn, Agent],
               key: jax.Array, num_games: int, max_steps: Optional[int] = None,
               alternating: bool = True) -> dict[str, Any]:
  """Plays ``num_games`` games between two agents, all in lock-step in one jitted loop.

  The first agent moves first in half of the games and second in the other half. Each ply,
  each agent is called once on a ``[num_games / 2]`` batch (the games where it is to move).
  An illegal move (including ``-1``) by the player to move loses that game on the spot.
  Games still running after ``max_steps`` plies count as draws.

  Args:
    game: a two-player alternating game (``discount = -1`` between moves).
    act_first, act_second: the agents (plain ``act_fn(key, states)`` or :class:`Agent`).
    key: PRNG key (initial states and every ply's agent keys derive from it).
    num_games: ``G``, even.
    max_steps: ply cap, default ``game.max_length``.
    alternating: the players take turns one move each (each agent then runs on half the
      games a ply). ``False`` for games where a player may move several times in a row
      (backgammon): both agents run on every game each ply and the mover changes on the moves
      with ``discount < 0``. Chance outcomes are drawn from ``game.outcome_probs`` either way.

  Returns:
    ``{"wins", "draws", "losses", "games"}`` from the first agent's view, plus ``"as_first"``
    and ``"as_second"`` (the same counts split by who started) and ``"forfeits"`` (games ended
    by an illegal move, either side).
  """
  score, started, forfeit = match_outcomes(game, act_first, act_second, key, num_games,
                                           max_steps, alternating)
  result: dict[str, Any] = _tally(score)
  result["as_first"] = _tally(score[started])
  result["as_second"] = _tally(score[~started])
  result["forfeits"] = int(np.sum(forfeit))
  return result


def _episode_returns(game: Game, num_games: int, max_steps: int, agent: Agent, key):
  """``f32[G]`` undiscounted returns of ``G`` one-player games played by ``agent``."""
  init_key, loop_key = jax.random.split(key)
  states = jax.vmap(game.init)(per_item_keys(init_key, num_games))
  legal_fn, step_fn = jax.vmap(game.legal_actions), jax.vmap(game.step)
  probs_fn = jax.vmap(game.outcome_probs)

  def cond(carry):
    t, _, done, _ = carry
    return (t < max_steps) & ~jnp.all(done)

  def body(carry):
    t, states, done, total = carry
    key = jax.random.fold_in(loop_key, t)
    actions = agent(key, states).astype(jnp.int32)
    legal = legal_fn(states)
    ok = (actions >= 0) & (actions < game.num_actions) & jnp.take_along_axis(
        legal, jnp.clip(actions, 0, game.num_actions - 1)[:, None], axis=1)[:, 0]
    moved = ~done & ok
    safe = jnp.where(ok, actions, 0)
    outcomes = jax.vmap(jax.random.categorical)(
        per_item_keys(jax.random.fold_in(key, 1), num_games),
        jnp.log(probs_fn(states, safe))).astype(jnp.int32)
    result = step_fn(states, safe, outcomes)
    states = jax.tree.map(
        lambda n, o: jnp.where(moved.reshape(moved.shape + (1,) * (n.ndim - 1)), n, o),
        result.state, states)
    total = total + jnp.where(moved, result.reward, 0.0)
    done = done | ~moved | result.terminal
    return t + 1, states, done, total

  carry = (jnp.int32(0), states, ~jnp.any(legal_fn(states), axis=-1),
           jnp.zeros((num_games,), jnp.float32))
  return jax.lax.while_loop(cond, body, carry)[3]


_returns_jit = jax.jit(_episode_returns, static_argnums=(0, 1, 2))


def mean_return(game: Game, act_fn: Union[ActFn, Agent], key: jax.Array, num_games: int,
                max_steps: Optional[int] = None) -> float:
  """The mean undiscounted return of ``num_games`` games of a one-player game (e.g. pgx 2048)
  played by the agent in lock-step (an illegal move or ``-1`` ends that game); chance
  outcomes drawn from ``game.outcome_probs``; ``max_steps`` defaults to ``game.max_length``."""
  if num_games < 1:
    raise ValueError(f"num_games must be >= 1, got {num_games}")
  max_steps = game.max_length if max_steps is None else max_steps
  if max_steps is None:
    raise ValueError(f"game {game.name!r} has no max_length; pass max_steps")
  returns = _returns_jit(game, int(num_games), int(max_steps), as_agent(act_fn), key)
  return float(np.mean(np.asarray(returns)))

