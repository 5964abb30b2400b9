"""Evaluation against exact oracles: tic-tac-toe minimax and the Connect Four test sets.

The application layer's (it names games); the agents and matches it measures are the
library's, game-agnostic (:mod:`jaxsearch.train.agents`, :mod:`jaxsearch.train.matches`), and
their names are importable from here too.

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
loaded test set), :func:`best_value_player` (the best move by any exact oracle's action
values), and the adapters :func:`search_act_fn` and :func:`greedy_act_fn`.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import jax
import numpy as np

# The game-agnostic agents and matches (the library's) and the Connect Four sets live in their
# own modules; this module is the evaluation API and keeps their names importable from here.
from jaxsearch.app.connect4_sets import (CONNECT4_ENV, CONNECT4_SETS, DEFAULT_CONNECT4_DIR,
                                         Connect4Set, connect4_data_dir, connect4_error_rate,
                                         connect4_expected_random_error, connect4_move_errors,
                                         connect4_oracle_player, load_connect4_set)
from jaxsearch.game import Game
from jaxsearch.train.agents import (ActFn, Agent, MoveReport, act_on_positions, as_agent,
                                    best_value_player, greedy_act_fn, random_player,
                                    search_act_fn, uct_rollout_player)
from jaxsearch.train.matches import match_outcomes, mean_return, play_match

from jaxsearch.games import tictactoe as t3

__all__ = [
    # tic-tac-toe against minimax (this module)
    "perfect_player", "tictactoe_vs_perfect", "tictactoe_positions", "tictactoe_optimal_moves",
    "tictactoe_optimal_fraction",
    # the Connect Four test sets (jaxsearch.app.connect4_sets)
    "CONNECT4_ENV", "CONNECT4_SETS", "DEFAULT_CONNECT4_DIR", "Connect4Set", "connect4_data_dir",
    "connect4_error_rate", "connect4_expected_random_error", "connect4_move_errors",
    "connect4_oracle_player", "load_connect4_set",
    # agents and matches (jaxsearch.train.agents, jaxsearch.train.matches)
    "ActFn", "Agent", "MoveReport", "act_on_positions", "as_agent", "best_value_player",
    "greedy_act_fn", "random_player", "search_act_fn", "uct_rollout_player", "match_outcomes",
    "mean_return", "play_match",
]


# ---------------------------------------------------------------------------------------------
# Tic-tac-toe against minimax.


def perfect_player(game: Optional[Game] = None) -> Agent:
  """The perfect tic-tac-toe player: a uniformly random minimax-optimal move (ties broken with
  the key, so games between perfect players vary); ``-1`` at terminal states.

  Args:
    game: optional, must be tic-tac-toe (accepted for symmetry with :func:`random_player`).
  """
  if game is not None and game.name != t3.GAME.name:
    raise ValueError(f"perfect_player knows tic-tac-toe only, got game {game.name!r}")
  return best_value_player(t3.minimax_action_values)


def tictactoe_vs_perfect(act_fn: Union[ActFn, Agent], key: jax.Array,
                         num_games: int = 100) -> dict[str, Any]:
  """:func:`play_match` of the agent against :func:`perfect_player` (half the games each side);
  ``"losses"`` counts the agent's losses (0 for a perfect agent)."""
  return play_match(t3.GAME, act_fn, _PERFECT, key, num_games)


_PERFECT = perfect_player()


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
