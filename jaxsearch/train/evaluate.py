"""Evaluation against exact oracles: tic-tac-toe minimax and the Connect Four test sets.

An **agent** is anything callable as ``act_fn(key, states[B]) -> i32[B]``: one action per state
of a batch, ``-1`` (or any illegal action) where it has nothing to play. Plain functions work;
:class:`Agent` is the same thing with its parameters held as a pytree, so that evaluating a
network or a search again after a training step re-uses the compiled program instead of
compiling one with the new parameters baked in as constants::

    act = search_act_fn(search, params)              # Agent(fn=..., params=params)
    tictactoe_optimal_fraction(act, key)            # compiles once ...
    act = search_act_fn(search, new_params)
    tictactoe_optimal_fraction(act, key)            # ... and re-uses it here

(A plain function is compiled once per function object: build it once, call it many times.)

Measures:
  * :func:`tictactoe_optimal_fraction` -- share of the 4,520 reachable non-terminal tic-tac-toe
    positions where the move is minimax-optimal; :func:`tictactoe_optimal_moves` gives the
    per-position details (which positions failed).
  * :func:`play_match` -- ``G`` games of any two-player game in lock-step, the agents taking each
    side in half of them; :func:`tictactoe_vs_perfect` against :func:`perfect_player`.
  * :func:`connect4_error_rate` -- move error rate on Pascal Pons' Connect Four test positions
    (:func:`load_connect4_set`); :func:`connect4_move_errors` gives the per-position details.

Agents: :func:`random_player`, :func:`perfect_player` (tic-tac-toe), :func:`uct_rollout_player`
(the UCT + random rollouts baseline), :func:`connect4_oracle_player` (plays a best move of a
loaded test set), and the adapters :func:`search_act_fn` and :func:`greedy_act_fn`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch import estimators as estimators_lib
from jaxsearch import policies as policies_lib
from jaxsearch.game import Game, per_item_keys

from games import connect_four as c4
from games import tictactoe as t3

ActFn = Callable[[jax.Array, Any], jax.Array]
"""``(key, states[B]) -> i32[B]`` actions."""

CONNECT4_ENV = "JAXSEARCH_CONNECT4_DIR"
CONNECT4_SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2")
# <repo>/../shared/data/connect4 (the repository sits next to the shared folder).
DEFAULT_CONNECT4_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "connect4"


# ---------------------------------------------------------------------------------------------
# Agents.


class _Bound:
  """``func(*static, params, key, states)`` as a jit-static callable.

  Hashed and compared by the *identity* of ``func`` and of each static part, so two agents built
  from the same objects share one compiled program, and distinct objects never collide.
  """

  def __init__(self, func, *static):
    self.func = func
    self.static = static

  def __call__(self, params, key, states):
    return self.func(*self.static, params, key, states)

  def __hash__(self):
    return hash((id(self.func),) + tuple(id(s) for s in self.static))

  def __eq__(self, other):
    return (type(other) is _Bound and self.func is other.func and
            len(self.static) == len(other.static) and
            all(a is b for a, b in zip(self.static, other.static)))

  def __repr__(self):
    name = getattr(self.func, "__name__", repr(self.func))
    return f"_Bound({name})"


@struct.dataclass
class Agent:
  """An agent whose parameters travel as a pytree (``jit`` traces them, never bakes them in).

  Call it as ``agent(key, states[B]) -> i32[B]``.

  Attributes:
    fn: ``(params, key, states[B]) -> i32[B]``, static (it is part of the compiled program's
      identity; keep the same object to re-use compilations).
    params: any pytree (``None`` for parameter-free agents).
  """

  fn: Callable = struct.field(pytree_node=False)
  params: Any = None

  def __call__(self, key, states):
    return self.fn(self.params, key, states)


def _call_plain(act_fn, params, key, states):
  del params
  return act_fn(key, states)


def as_agent(act_fn: Union[ActFn, Agent]) -> Agent:
  """``act_fn`` as an :class:`Agent` (unchanged if it already is one)."""
  if isinstance(act_fn, Agent):
    return act_fn
  if not callable(act_fn):
    raise TypeError(f"an agent must be callable as act_fn(key, states), got {act_fn!r}")
  return Agent(fn=_Bound(_call_plain, act_fn), params=None)


def _batch_size(states) -> int:
  return jax.tree.leaves(states)[0].shape[0]


def _mix32(x: jax.Array) -> jax.Array:
  """A 32-bit integer finaliser (``lowbias32``): every input bit flips about half the output
  bits."""
  x = x ^ (x >> 16)
  x = x * jnp.uint32(0x7FEB352D)
  x = x ^ (x >> 15)
  x = x * jnp.uint32(0x846CA68B)
  return x ^ (x >> 16)


def _sample_masked(key: jax.Array, mask: jax.Array) -> jax.Array:
  """``i32[B]``: a uniformly random ``True`` index of each ``mask`` row (``-1`` if none).

  Row ``b`` depends only on ``fold_in(key, b)`` (typed or raw keys). The per-action draws hash
  that key's data with the action index instead of calling ``jax.random.categorical``: as good
  for picking among a few actions, and about 4x quicker to compile on the 2-core CPU (0.4 s vs
  2.0 s for a ``[50, 9]`` draw, measured under load), which every agent and match pays.
  """
  batch, num = mask.shape
  data = jax.random.key_data(per_item_keys(key, batch)).astype(jnp.uint32)  # [B, 2]
  actions = jnp.arange(num, dtype=jnp.uint32)[None, :]
  draws = _mix32(_mix32(data[:, :1] ^ _mix32(actions + jnp.uint32(0x9E3779B9))) ^ data[:, 1:])
  draws = (draws >> 1).astype(jnp.int32)  # uniform in [0, 2**31)
  picked = jnp.argmax(jnp.where(mask, draws, -1), axis=-1)
  return jnp.where(jnp.any(mask, axis=-1), picked, -1).astype(jnp.int32)


def _random_act(game, params, key, states):
  del params
  legal = jax.vmap(game.legal_actions)(states)
  return _sample_masked(key, legal)


def random_player(game: Game) -> Agent:
  """Uniformly random legal moves (state ``b`` uses ``fold_in(key, b)``); ``-1`` at terminal
  states."""
  return Agent(fn=_Bound(_random_act, game))


def _perfect_act(params, key, states):
  del params
  qs = jax.vmap(t3.minimax_action_values)(states)  # [B, 9], -inf illegal
  best = jnp.max(qs, axis=-1, keepdims=True)
  optimal = jnp.isfinite(qs) & (qs == best)
  return _sample_masked(key, optimal)


def perfect_player(game: Optional[Game] = None) -> Agent:
  """The perfect tic-tac-toe player: a uniformly random minimax-optimal move (ties broken with
  the key, so games between perfect players vary); ``-1`` at terminal states.

  Args:
    game: optional, must be tic-tac-toe (accepted for symmetry with :func:`random_player`).
  """
  if game is not None and game.name != t3.GAME.name:
    raise ValueError(f"perfect_player knows tic-tac-toe only, got game {game.name!r}")
  return Agent(fn=_Bound(_perfect_act))


# Search agents: one temperature-0 copy per Search object, so the jit-static identity is stable.
_GREEDY_SEARCHES: dict[int, tuple[policies_lib.Search, policies_lib.Search]] = {}


def _greedy_search(search: policies_lib.Search) -> policies_lib.Search:
  if search.temperature == 0.0:
    return search
  hit = _GREEDY_SEARCHES.get(id(search))
  if hit is None or hit[0] is not search:
    hit = (search, dataclasses.replace(search, temperature=0.0))
    _GREEDY_SEARCHES[id(search)] = hit
  return hit[1]


def _search_act(search, params, key, states):
  return search(params, key, states).action


def search_act_fn(search: policies_lib.Search, params: Any = None, *,
                  greedy: bool = True) -> Agent:
  """The move a search recommends: ``search(params, key, states).action`` (fresh trees).

  Args:
    search: a configured :class:`jaxsearch.policies.Search`.
    params: its estimator's parameters (a pytree; traced, so new parameters re-use the compiled
      program of the same ``search`` object).
    greedy: play the search's greedy action (most visited, ties by Q) even if ``search`` samples
      (``temperature > 0``, e.g. :func:`jaxsearch.policies.alphazero`). Evaluation wants this;
      note that root Dirichlet noise, if configured, stays on.
  """
  if greedy:
    search = _greedy_search(search)
  return Agent(fn=_Bound(_search_act, search), params=params)


def _greedy_logits_act(game, logits_fn, with_params, params, key, states):
  del key
  logits = logits_fn(params, states) if with_params else logits_fn(states)
  legal = jax.vmap(game.legal_actions)(states)
  masked = jnp.where(legal, logits, -jnp.inf)
  return jnp.where(jnp.any(legal, axis=-1), jnp.argmax(masked, axis=-1), -1).astype(jnp.int32)


def greedy_act_fn(game: Game, logits_fn: Callable, params: Any = None) -> Agent:
  """The argmax of policy logits over the legal moves (e.g. the raw network); ``-1`` where no
  move is legal. Deterministic (the key is unused; ties go to the lowest action).

  Args:
    game: supplies ``legal_actions``.
    logits_fn: ``logits_fn(states[B]) -> f32[B, A]``, or ``logits_fn(params, states[B])`` when
      ``params`` is given.
    params: optional pytree passed to ``logits_fn`` (traced: no recompilation when it changes,
      as long as ``logits_fn`` is the same object).
  """
  with_params = params is not None
  return Agent(fn=_Bound(_greedy_logits_act, game, logits_fn, with_params), params=params)


def uct_rollout_player(game: Game, num_simulations: int = 200, *, num_rollouts: int = 1,
                       exploration: float = math.sqrt(2.0)) -> Agent:
  """The baseline: UCT (UCB1, ``c = exploration``) with ``num_rollouts`` random playouts per
  leaf, uniform prior, the most visited root move. Built once per call: keep the returned
  agent to re-use its compilation."""
  search = policies_lib.uct(game, estimators_lib.rollout(game, num_rollouts),
                            num_simulations=num_simulations, exploration=exploration)
  return search_act_fn(search, None)


# ---------------------------------------------------------------------------------------------
# Running an agent over a fixed set of positions.


@jax.jit
def _act_jit(agent: Agent, key, states):
  return agent(key, states)


def act_on_positions(act_fn: Union[ActFn, Agent], key: jax.Array, states,
                     batch_size: Optional[int] = None) -> np.ndarray:
  """``i32[P]``: the agent's action at each of ``P`` states, in jitted calls of ``batch_size``.

  The last chunk is padded (with copies of the first state) so every call has one shape and
  compiles once; chunk ``i`` gets the key ``fold_in(key, i)``.
  """
  agent = as_agent(act_fn)
  total = _batch_size(states)
  if batch_size is None or batch_size >= total:
    batch_size = total
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  actions = []
  for i, lo in enumerate(range(0, total, batch_size)):
    hi = min(lo + batch_size, total)
    if lo == 0 and hi == total:
      chunk = states
    else:
      idx = np.concatenate([np.arange(lo, hi), np.zeros(batch_size - (hi - lo), np.int64)])
      chunk = jax.tree.map(lambda x: x[idx], states)
    out = np.asarray(_act_jit(agent, jax.random.fold_in(key, i), chunk))
    if out.shape != (batch_size,):
      raise ValueError(f"act_fn returned actions of shape {out.shape}, expected "
                       f"({batch_size},) (one action per state)")
    actions.append(out[:hi - lo])
  return np.concatenate(actions).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class MoveReport:
  """An agent's moves on a fixed set of ``P`` positions, judged by an oracle.

  Attributes:
    states: the positions (a batched state, leaves ``[P, ...]``).
    actions: ``i32[P]`` the agent's moves.
    correct: ``bool[P]`` the move is optimal (tic-tac-toe) / not an error (Connect Four);
      illegal moves are never correct.
    values: ``f32[P, A]`` the oracle's value of each move (tic-tac-toe: minimax action values,
      ``-inf`` illegal; Connect Four: the test set's scores, ``-1000`` full column).
  """

  states: Any
  actions: np.ndarray
  correct: np.ndarray
  values: np.ndarray

  @property
  def fraction_correct(self) -> float:
    return float(np.mean(self.correct))

  @property
  def error_rate(self) -> float:
    return float(np.mean(~self.correct))

  @property
  def failed(self) -> np.ndarray:
    """``i64[F]`` indices of the positions where the move was not correct."""
    return np.flatnonzero(~self.correct)

  def failed_states(self):
    """The failed positions as one batched state (leaves ``[F, ...]``)."""
    idx = self.failed
    return jax.tree.map(lambda x: np.asarray(x)[idx], self.states)


# ---------------------------------------------------------------------------------------------
# Tic-tac-toe against minimax.


def tictactoe_positions() -> tuple[t3.State, np.ndarray]:
  """The 4,520 reachable non-terminal positions (sorted by ``state_index``) and their
  ``f32[4520, 9]`` minimax action values (``-inf`` illegal)."""
  states = t3.reachable_states()
  qs = np.asarray(jax.jit(jax.vmap(t3.minimax_action_values))(states))
  return states, qs


_TTT_CACHE: dict[str, Any] = {}


def _ttt_positions():
  if "positions" not in _TTT_CACHE:
    _TTT_CACHE["positions"] = tictactoe_positions()
  return _TTT_CACHE["positions"]


def tictactoe_optimal_moves(act_fn: Union[ActFn, Agent], key: jax.Array,
                            batch_size: Optional[int] = 1024) -> MoveReport:
  """The agent's move at every reachable non-terminal tic-tac-toe position, judged by minimax:
  optimal when its minimax action value equals the best legal one.

  Args:
    act_fn: the agent.
    key: PRNG key (chunk ``i`` of ``batch_size`` positions gets ``fold_in(key, i)``).
    batch_size: positions per call (bounds a search's tree memory); ``None`` = all at once.

  Returns:
    A :class:`MoveReport` over the 4,520 positions; ``.fraction_correct`` is the optimal-move
    fraction, ``.failed_states()`` the positions it got wrong (``t3.render`` shows one).
  """
  states, qs = _ttt_positions()
  actions = act_on_positions(act_fn, key, states, batch_size)
  legal = (actions >= 0) & (actions < t3.NUM_ACTIONS)
  chosen = qs[np.arange(len(actions)), np.clip(actions, 0, t3.NUM_ACTIONS - 1)]
  correct = legal & np.isfinite(chosen) & (chosen == qs.max(axis=1))
  return MoveReport(states=states, actions=actions, correct=correct, values=qs)


def tictactoe_optimal_fraction(act_fn: Union[ActFn, Agent], key: jax.Array,
                               batch_size: Optional[int] = 1024) -> float:
  """Fraction of the 4,520 reachable non-terminal tic-tac-toe positions where the agent's move
  is minimax-optimal (see :func:`tictactoe_optimal_moves` for which ones failed)."""
  return tictactoe_optimal_moves(act_fn, key, batch_size).fraction_correct


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
  probs_fn = jax.vmap(game.outcome_probs)
  states = jax.vmap(game.init)(per_item_keys(init_key, num_games))
  legal_fn = jax.vmap(game.legal_actions)
  step_fn = jax.vmap(game.step)
  first_half = jnp.arange(num_games) < half
  lower = jnp.arange(half)

  def cond(carry):
    t, _, done, _, _, _ = carry
    return (t < max_steps) & ~jnp.all(done)

  def body(carry):
    t, states, done, score, forfeits, a_to_move = carry
    key_a, key_b = jax.random.split(jax.random.fold_in(loop_key, t))
    if alternating:
      a_turn = t % 2 == 0  # A moves in the first half on even plies, in the second on odd ones
      a_idx = jnp.where(a_turn, lower, lower + half)
      b_idx = jnp.where(a_turn, lower + half, lower)
      act_a = agent_a(key_a, jax.tree.map(lambda x: x[a_idx], states)).astype(jnp.int32)
      act_b = agent_b(key_b, jax.tree.map(lambda x: x[b_idx], states)).astype(jnp.int32)
      actions = jnp.zeros((num_games,), jnp.int32).at[a_idx].set(act_a).at[b_idx].set(act_b)
      a_moves = first_half == a_turn
    else:
      a_moves = a_to_move
      actions = jnp.where(a_moves, agent_a(key_a, states).astype(jnp.int32),
                          agent_b(key_b, states).astype(jnp.int32))
    sign = jnp.where(a_moves, 1.0, -1.0)  # the mover's returns, seen by A

    legal = legal_fn(states)
    active = ~done & jnp.any(legal, axis=-1)
    in_range = (actions >= 0) & (actions < game.num_actions)
    ok = in_range & jnp.take_along_axis(
        legal, jnp.clip(actions, 0, game.num_actions - 1)[:, None], axis=1)[:, 0]
    forfeit = active & ~ok  # an illegal move loses on the spot
    moved = active & ok
    safe = jnp.where(ok, actions, 0)
    if game.num_outcomes > 1:
      outcomes = jax.vmap(jax.random.categorical)(
          per_item_keys(jax.random.fold_in(key_b, 1), num_games),
          jnp.log(probs_fn(states, safe))).astype(jnp.int32)
    else:
      outcomes = jnp.zeros_like(actions)
    result = step_fn(states, safe, outcomes)
    states = jax.tree.map(
        lambda n, o: jnp.where(moved.reshape(moved.shape + (1,) * (n.ndim - 1)), n, o),
        result.state, states)
    gain = jnp.where(moved, result.reward, 0.0) - forfeit.astype(jnp.float32)
    done = done | ~active | forfeit | (moved & result.terminal)
    a_to_move = a_to_move ^ (moved & (result.discount < 0))
    return t + 1, states, done, score + sign * gain, forfeits | forfeit, a_to_move

  done = ~jnp.any(legal_fn(states), axis=-1)
  carry = (jnp.int32(0), states, done, jnp.zeros((num_games,), jnp.float32),
           jnp.zeros((num_games,), bool), first_half)
  t, _, _, score, forfeits, _ = jax.lax.while_loop(cond, body, carry)
  return score, forfeits, t


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


def tictactoe_vs_perfect(act_fn: Union[ActFn, Agent], key: jax.Array,
                         num_games: int = 100) -> dict[str, Any]:
  """:func:`play_match` of the agent against :func:`perfect_player` (half the games each side);
  ``"losses"`` counts the agent's losses (0 for a perfect agent)."""
  return play_match(t3.GAME, act_fn, _PERFECT, key, num_games)


_PERFECT = perfect_player()


# ---------------------------------------------------------------------------------------------
# Connect Four test sets.


@dataclasses.dataclass(frozen=True)
class Connect4Set:
  """A Connect Four test set (Pascal Pons' ``Test_*.moves``), see ``README.md`` next to it.

  Attributes:
    name: e.g. ``"Test_L3_R1"``.
    path: the ``.moves`` file read.
    moves: ``P`` move strings (columns ``1..7``).
    states: the positions, a batched ``connect_four.State`` (leaves ``[P, ...]``).
    scores: ``i32[P, 7]`` perfect-play score of each column for the player to move (positive =
      win, larger = sooner; ``-1000`` = full column).
  """

  name: str
  path: Path
  moves: list
  states: c4.State
  scores: np.ndarray

  def __len__(self) -> int:
    return len(self.moves)


def connect4_data_dir(data_dir: Union[str, Path, None] = None) -> Path:
  """``data_dir``, else ``$JAXSEARCH_CONNECT4_DIR``, else ``<repo>/../shared/data/connect4``."""
  if data_dir is not None:
    return Path(data_dir)
  env = os.environ.get(CONNECT4_ENV)
  return Path(env) if env else DEFAULT_CONNECT4_DIR


def _connect4_path(name_or_path: Union[str, Path], data_dir) -> Path:
  text = str(name_or_path)
  path = Path(text)
  if path.is_file() or os.sep in text or text.endswith(".moves"):
    return path
  name = text if text.startswith("Test_") else f"Test_{text}"
  return connect4_data_dir(data_dir) / f"{name}.moves"


def load_connect4_set(name_or_path: Union[str, Path],
                      data_dir: Union[str, Path, None] = None) -> Connect4Set:
  """Reads a Connect Four test set.

  Args:
    name_or_path: a set name (``"Test_L3_R1"``, or ``"L3_R1"``) looked up as ``<name>.moves`` in
      the data directory, or the path of a ``.moves`` file.
    data_dir: the directory of the sets; default ``$JAXSEARCH_CONNECT4_DIR``, else
      ``../shared/data/connect4`` next to the repository.

  Raises:
    FileNotFoundError: the file is missing (the message names the path, the environment
      variable and the data's README).
    ValueError: a malformed line, or ``-1000`` markers that disagree with the full columns.
  """
  path = _connect4_path(name_or_path, data_dir)
  if not path.is_file():
    raise FileNotFoundError(
        f"Connect Four test set not found: {path}. The sets (Test_L3_R1.moves, "
        f"Test_L2_R1.moves, Test_L2_R2.moves) live in ../shared/data/connect4/ next to the "
        f"repository (format and error definition in its README.md: "
        f"{DEFAULT_CONNECT4_DIR / 'README.md'}); set ${CONNECT4_ENV} or pass data_dir= to "
        f"read them from elsewhere.")
  moves, scores = c4.load_test_positions(path)
  states = c4.states_from_moves(moves)
  top = np.asarray(states.mine)[:, -1] | np.asarray(states.theirs)[:, -1]
  full = ((top[:, None] >> np.arange(c4.NUM_COLUMNS)) & 1) == 1
  marked = scores == c4.FULL_COLUMN_SCORE
  bad = np.flatnonzero(np.any(full != marked, axis=1) | np.asarray(states.terminal))
  if len(bad):
    i = int(bad[0])
    raise ValueError(f"{path}: {len(bad)} positions whose {c4.FULL_COLUMN_SCORE} markers do "
                     f"not match the full columns (or that are over), first: line {i + 1} "
                     f"{moves[i]!r} {scores[i].tolist()}")
  name = path.name[:-len(".moves")] if path.name.endswith(".moves") else path.name
  return Connect4Set(name=name, path=path, moves=list(moves), states=states, scores=scores)


def connect4_move_errors(act_fn: Union[ActFn, Agent], key: jax.Array,
                         positions: Union[Connect4Set, str, Path],
                         batch_size: Optional[int] = 1000) -> MoveReport:
  """The agent's move at every position of a test set, judged by its scores: a move is an
  error when ``sign(S_chosen) < max over legal columns of sign(S)`` (and an illegal move is
  always one). ``.error_rate`` is the set's error rate, ``.failed`` the positions.

  Args:
    act_fn: the agent.
    key: PRNG key (chunk ``i`` of ``batch_size`` positions gets ``fold_in(key, i)``).
    positions: a :class:`Connect4Set`, or a set name / path for :func:`load_connect4_set`.
    batch_size: positions per call (bounds a search's tree memory); ``None`` = all at once.
  """
  if isinstance(positions, (str, Path)):
    positions = load_connect4_set(positions)
  actions = act_on_positions(act_fn, key, positions.states, batch_size)
  scores = positions.scores
  legal_cols = scores != c4.FULL_COLUMN_SCORE
  signs = np.where(legal_cols, np.sign(scores), -2)
  ok = (actions >= 0) & (actions < c4.NUM_COLUMNS)
  col = np.clip(actions, 0, c4.NUM_COLUMNS - 1)
  chosen_legal = ok & legal_cols[np.arange(len(actions)), col]
  chosen = signs[np.arange(len(actions)), col]
  correct = chosen_legal & (chosen >= signs.max(axis=1))
  return MoveReport(states=positions.states, actions=actions, correct=correct, values=scores)


def connect4_error_rate(act_fn: Union[ActFn, Agent], key: jax.Array,
                        positions: Union[Connect4Set, str, Path],
                        batch_size: Optional[int] = 1000) -> float:
  """Move error rate of the agent on a test set (see :func:`connect4_move_errors`)."""
  return connect4_move_errors(act_fn, key, positions, batch_size).error_rate


def connect4_expected_random_error(positions: Connect4Set) -> float:
  """The exact expected error rate of a uniformly random legal move on ``positions`` (the
  README's last column: 31.1 % on Test_L3_R1)."""
  return float(np.mean(_random_error_probs(positions.scores)))


def _random_error_probs(scores: np.ndarray) -> np.ndarray:
  """``f64[P]``: per position, the share of legal columns that are errors."""
  legal = scores != c4.FULL_COLUMN_SCORE
  signs = np.where(legal, np.sign(scores), -2)
  bad = legal & (signs < signs.max(axis=1, keepdims=True))
  return bad.sum(axis=1) / legal.sum(axis=1)


def _oracle_act(table_mine, table_theirs, table_best, params, key, states):
  del params, key
  # [B, P]: which table position each state is (all 12 row bytes equal).
  match = jnp.all((states.mine[:, None, :] == table_mine[None]) &
                  (states.theirs[:, None, :] == table_theirs[None]), axis=-1)
  found = jnp.any(match, axis=-1)
  return jnp.where(found, table_best[jnp.argmax(match, axis=-1)], -1).astype(jnp.int32)


def connect4_oracle_player(positions: Connect4Set) -> Agent:
  """Plays a best-scored column at the positions of ``positions`` (looked up by board;
  ``-1``, an illegal move, elsewhere): a perfect agent on that set, for sanity checks."""
  best = np.argmax(np.where(positions.scores == c4.FULL_COLUMN_SCORE, np.iinfo(np.int32).min,
                            positions.scores), axis=1).astype(np.int32)
  # Tables are closed over as constants (jit-static via _Bound identity), built once per call.
  table = (jnp.asarray(positions.states.mine), jnp.asarray(positions.states.theirs),
           jnp.asarray(best))
  return Agent(fn=_Bound(_oracle_act, *table))
