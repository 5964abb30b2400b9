"""Tic-tac-toe as pure JAX functions, with an exact minimax oracle.

Board cells are numbered row-major::

   0 | 1 | 2
  ---+---+---
   3 | 4 | 5
  ---+---+---
   6 | 7 | 8

Action ``a`` in ``[0, 9)`` marks cell ``a``. X (``+1``) moves first, O (``-1``) second.

Conventions (see ``jaxsearch.game``): the reward of a move is ``+1`` to the mover when it
completes a line and ``0`` otherwise; ``discount`` is ``-1`` on moves that do not end the game and
``0`` on the move that ends it (win or full-board draw); ``legal_actions`` of a terminal state is
all ``False``. Stepping a terminal state, or playing an occupied cell, is a no-op: the state is
returned unchanged with ``reward = 0`` and ``discount = 0`` (the engine masks illegal actions, so
this only has to be harmless, never meaningful).

The oracle (``minimax_value``, ``minimax_action_values``) is exact: it is computed once, lazily,
by plain-Python negamax over the 5,478 reachable boards (4,520 of them non-terminal) and stored
as tables indexed by :func:`state_index`, a base-3 encoding of the board.
"""

from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.game import Game, StepResult

NUM_ACTIONS = 9
NUM_INDICES = 3**9  # size of the state_index range
NUM_REACHABLE_NONTERMINAL = 4520

# The 8 winning lines, as cell indices.
LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8],  # rows
     [0, 3, 6], [1, 4, 7], [2, 5, 8],  # columns
     [0, 4, 8], [2, 4, 6]],  # diagonals
    dtype=np.int32)

_POW3 = (3 ** np.arange(9)).astype(np.int32)


@struct.dataclass
class State:
  """One tic-tac-toe position (unbatched; batched states have a leading ``[B]``).

  Attributes:
    board: ``int8[9]``, ``+1`` X, ``-1`` O, ``0`` empty, row-major.
    player: ``int8[]``, the mark of the player to move (``+1`` X or ``-1`` O). At a terminal
      state it is the player who would have moved next.
    terminal: ``bool[]``, the game is over (a line was completed or the board is full).
  """

  board: jax.Array
  player: jax.Array
  terminal: jax.Array


def init(key: jax.Array) -> State:
  """The empty board, X to move. ``key`` is unused (the start is deterministic)."""
  del key
  return State(board=jnp.zeros((9,), jnp.int8), player=jnp.int8(1), terminal=jnp.bool_(False))


def legal_actions(state: State) -> jax.Array:
  """``bool[9]``: empty cells; all ``False`` at terminal states."""
  return (state.board == 0) & ~state.terminal


def _wins(board: jax.Array, player: jax.Array) -> jax.Array:
  """``bool[]``: ``player`` owns a complete line of ``board`` (``int8[9]``)."""
  # 8 lines x 3 cells with constant indices: tiny, and vectorises cleanly under vmap.
  return jnp.any(jnp.all(board[LINES] == player, axis=-1))


def step(state: State, action: jax.Array, outcome: jax.Array | int = 0) -> StepResult:
  """Plays ``action`` (``i32[]``, a cell) for the player to move.

  Args:
    state: the current state (unbatched).
    action: ``i32[]`` cell in ``[0, 9)``.
    outcome: ignored (deterministic game, one outcome).

  Returns:
    ``StepResult`` with ``reward`` ``f32[]`` (``+1`` if the move completes a line),
    ``discount`` ``f32[]`` (``-1``, or ``0`` when the move ends the game or is a no-op) and
    ``terminal`` ``bool[]``.
  """
  del outcome
  action = jnp.asarray(action, jnp.int32)
  cells = jnp.arange(9, dtype=jnp.int32)
  # A move is applied only if legal; otherwise everything below degenerates to a no-op.
  ok = ~state.terminal & (action >= 0) & (action < 9) & jnp.any(
      (cells == action) & (state.board == 0))
  # One-hot write instead of a scatter: cheaper under vmap and never out of bounds.
  board = jnp.where(ok & (cells == action), state.player, state.board).astype(jnp.int8)
  won = ok & _wins(board, state.player)
  full = jnp.all(board != 0)
  ended = ok & (won | full)
  terminal = state.terminal | ended
  player = jnp.where(ok, -state.player, state.player).astype(jnp.int8)
  reward = jnp.where(won, 1.0, 0.0).astype(jnp.float32)
  discount = jnp.where(ok & ~ended, -1.0, 0.0).astype(jnp.float32)
  return StepResult(
      state=State(board=board, player=player, terminal=terminal),
      reward=reward,
      discount=discount,
      terminal=terminal,
  )


def observe(state: State) -> jax.Array:
  """``f32[3, 3, 2]`` network input from the mover's view: planes (mover's marks, opponent's)."""
  rel = (state.board * state.player).reshape(3, 3)
  return jnp.stack([rel == 1, rel == -1], axis=-1).astype(jnp.float32)


GAME = Game(
    name="tictactoe",
    num_actions=NUM_ACTIONS,
    init=init,
    legal_actions=legal_actions,
    step=step,
    max_length=9,
    value_range=(-1.0, 1.0),
    value_bounds=(-1.0, 1.0),  # a win, a draw or a loss
)

# ---------------------------------------------------------------------------------------------
# Exact minimax oracle.


def state_index(state: State) -> jax.Array:
  """``i32[]`` in ``[0, 3**9)``: base-3 code of the board (digit ``i`` = cell ``i``; 0 empty,
  1 X, 2 O). The mover and terminal flag are functions of the board, so this identifies the state.
  """
  digits = jnp.mod(state.board.astype(jnp.int32), 3)  # -1 -> 2
  return jnp.sum(digits * jnp.asarray(_POW3)).astype(jnp.int32)


def _py_wins(board: Sequence[int], p: int) -> bool:
  return any(board[a] == p and board[b] == p and board[c] == p for a, b, c in LINES.tolist())


@functools.lru_cache(maxsize=None)
def _oracle_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Negamax over every reachable board (computed once, ~0.25 s).

  Returns:
    value: ``f32[3**9]`` value to the mover (0 at terminal states; NaN if unreachable).
    action_values: ``f32[3**9, 9]`` ``reward + discount * value(next)`` per action; ``-inf``
      for illegal actions (all of them at terminal states); NaN rows if unreachable.
    nonterminal: ``i32[4520]`` sorted state indices of the reachable non-terminal states.
  """
  value = np.full((NUM_INDICES,), np.nan, np.float32)
  qs = np.full((NUM_INDICES, 9), np.nan, np.float32)
  nonterminal = []

  def code(board):
    return sum((b % 3) * p for b, p in zip(board, _POW3.tolist()))

  def solve(board: tuple, player: int, terminal: bool) -> float:
    idx = code(board)
    if not np.isnan(value[idx]):
      return float(value[idx])
    q = np.full((9,), -np.inf, np.float32)
    if terminal:
      v = 0.0
    else:
      nonterminal.append(idx)
      for a in range(9):
        if board[a] != 0:
          continue
        nxt = board[:a] + (player,) + board[a + 1:]
        if _py_wins(nxt, player):
          q[a] = 1.0  # reward 1, discount 0
        elif all(c != 0 for c in nxt):
          q[a] = 0.0  # draw, discount 0
        else:
          q[a] = -solve(nxt, -player, False)  # reward 0, discount -1
      v = float(q.max())
    value[idx] = v
    qs[idx] = q
    # Mark terminal successors too, so every reachable board has a table row.
    if not terminal:
      for a in range(9):
        if board[a] == 0:
          nxt = board[:a] + (player,) + board[a + 1:]
          if _py_wins(nxt, player) or all(c != 0 for c in nxt):
            solve(nxt, -player, True)
    return v

  solve((0,) * 9, 1, False)
  return value, qs, np.array(sorted(nonterminal), np.int32)


def minimax_value(state: State) -> jax.Array:
  """``f32[]`` exact value for the player to move: +1 win, 0 draw, -1 loss; 0 at terminal
  states. Jittable and vmappable (a table lookup by :func:`state_index`)."""
  value, _, _ = _oracle_tables()
  return jnp.asarray(value)[state_index(state)]


def minimax_action_values(state: State) -> jax.Array:
  """``f32[9]`` exact ``reward + discount * minimax_value(next)`` for each action, from the
  mover's view; ``-inf`` for illegal actions (all actions at terminal states)."""
  _, qs, _ = _oracle_tables()
  return jnp.asarray(qs)[state_index(state)]


def _board_from_index(idx: np.ndarray) -> np.ndarray:
  """``int8[P, 9]`` boards (+1/-1/0) decoded from ``[P]`` state indices."""
  digits = (np.asarray(idx)[:, None] // _POW3[None, :]) % 3
  return np.where(digits == 2, -1, digits).astype(np.int8)


def reachable_states() -> State:
  """All 4,520 reachable non-terminal states as one batched ``State`` (leaves ``[4520, ...]``),
  sorted by :func:`state_index`."""
  _, _, idx = _oracle_tables()
  boards = _board_from_index(idx)
  # X moves when both have placed the same number of marks.
  player = np.where(boards.sum(axis=1) == 0, 1, -1).astype(np.int8)
  return State(
      board=jnp.asarray(boards),
      player=jnp.asarray(player),
      terminal=jnp.zeros((len(idx),), jnp.bool_),
  )


# ---------------------------------------------------------------------------------------------
# Plain-Python helpers (not jittable).


def state_from_moves(moves: Sequence[int]) -> State:
  """The state after playing ``moves`` (action ids, cells ``0..8``) from the empty board.

  Raises:
    ValueError: on a cell out of range, an occupied cell, or a move after the game ended.
  """
  board = [0] * 9
  player, terminal = 1, False
  for i, a in enumerate(moves):
    a = int(a)
    if terminal:
      raise ValueError(f"state_from_moves({list(moves)}): move {i} ({a}) after the game ended")
    if not 0 <= a < 9:
      raise ValueError(f"state_from_moves({list(moves)}): move {i} ({a}) is not a cell 0..8")
    if board[a] != 0:
      raise ValueError(f"state_from_moves({list(moves)}): move {i}: cell {a} is occupied")
    board[a] = player
    terminal = _py_wins(board, player) or all(c != 0 for c in board)
    player = -player
  return State(board=jnp.asarray(board, jnp.int8), player=jnp.int8(player),
               terminal=jnp.bool_(terminal))


def render(state: State) -> str:
  """A 3x3 board: ``X``/``O`` marks, empty cells show their number ``1..9`` (= action + 1),
  then a status line (who moves, or the result)."""
  board = np.asarray(state.board).reshape(-1).tolist()
  if len(board) != 9:
    raise ValueError(f"render expects one unbatched state, got board shape "
                     f"{np.shape(state.board)}")
  marks = [{1: "X", -1: "O"}.get(int(c), str(i + 1)) for i, c in enumerate(board)]
  rows = [" " + " | ".join(marks[r * 3:r * 3 + 3]) for r in range(3)]
  text = "\n---+---+---\n".join(rows)
  if _py_wins(board, 1):
    status = "X wins"
  elif _py_wins(board, -1):
    status = "O wins"
  elif all(c != 0 for c in board):
    status = "draw"
  else:
    status = ("X" if int(np.asarray(state.player)) == 1 else "O") + " to move"
  return text + "\n" + status
