"""Any `pgx <https://github.com/sotetsuk/pgx>`_ environment as a jaxsearch :class:`Game`.

    from jaxsearch.games import pgx_env
    game = pgx_env.make("othello")                # a Game named "pgx:othello"
    search = js.policies.uct(game, js.estimators.rollout(game), num_simulations=200)
    states = jax.vmap(game.init)(jax.random.split(key, 64))
    out = jax.jit(search)(None, key, states)       # out.action: i32[64], always legal

pgx is an optional dependency (``pip install "jaxsearch[pgx]"``); importing this module
without it works, and :func:`make` then raises an ``ImportError`` that says how to install it.

How pgx's conventions are mapped to jaxsearch's (``jaxsearch.game``):

* **Terminal states.** pgx sets ``legal_action_mask`` to all ``True`` once a game is over;
  :func:`legal_actions` returns all ``False`` there (that is how the engine sees a terminal).
  A game also ends (as a truncation: no reward, discount 0) after ``max_length`` moves, so
  every game has a bound for self-play and rollouts; :data:`MAX_LENGTH` lists the defaults,
  chosen above the real game lengths where those are bounded (a truncated othello or
  connect_four game cannot happen).
* **Rewards.** pgx reports ``rewards: f32[num_players]`` on each step, usually only on the
  final one; the step's ``reward`` is the entry of the player who moved. Most games score
  in ``[-1, 1]``; those that do not have a ``value_range`` (:data:`VALUE_RANGE`: 2048's
  returns reach thousands, backgammon's gammons 2 and 3, the poker games' chips) and, where
  exact, ``value_bounds`` (:data:`VALUE_BOUNDS`), from which training picks a value scale
  (:mod:`jaxsearch.train.value_scale`).
* **Players.** Values are from the view of the player to move (pgx's ``current_player``, whose
  view pgx's ``observation`` also takes). Two-player games are assumed zero-sum: a move after
  which the other player is to move has ``discount = -1``, one after which the same player
  moves again (a backgammon turn of several checker moves) ``+1``, and the move that ends the
  game ``0``. One-player games (2048) have ``discount = 1``. Games of three or more players are
  refused.
* **Illegal actions** are a no-op (state unchanged, reward 0, discount 0) rather than pgx's
  loss-on-the-spot; the engine never plays them.

**Stochastic environments** (``2048``, ``backgammon``; :data:`STOCHASTIC`) are searched with
*sampled* outcomes, not their exact chance distribution: the state carries a PRNG key, and
each action has ``chance_samples`` outcomes with probability ``1 / chance_samples``, outcome
``o`` being pgx's step with the key ``fold_in(state.key, o)`` (the next state's key follows from
it too). The search therefore averages over a few sampled futures per action (a sample-average
approximation); a larger ``chance_samples`` is closer to the true expectation and costs more
per expansion. A game played for real draws the outcome index uniformly, so the realised
tile/dice have pgx's distribution — but a search that looked ahead from the same state has
seen the candidates, so treat results against such a search as slightly optimistic.
Imperfect-information environments (``kuhn_poker``, ``leduc_holdem``, ``sparrow_mahjong``) are
searched as if every card were visible.

Offline: no environment used here downloads anything, except ``bridge_bidding`` (which needs
downloaded double-dummy tables and is refused) and pgx's pre-trained baselines (not used).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.game import Game, StepResult

PREFIX = "pgx:"
STOCHASTIC = frozenset({"2048", "backgammon"})
# Two-player games where every move hands the turn to the other player (a pass is a move);
# in the others (backgammon: several checker moves per turn) a player may move twice in a row.
ALTERNATING = frozenset({"tic_tac_toe", "connect_four", "othello", "hex", "go_9x9", "go_19x19",
                         "chess", "gardner_chess", "animal_shogi", "shogi"})
UNSUPPORTED = {
    "bridge_bidding": "it needs double-dummy tables downloaded from the internet",
}
# Moves before a game is cut short as a draw: above the real maximum where there is one
# (tic_tac_toe 9, connect_four 42, othello 60 placements with at most one pass between two
# of them, hex 121 cells + the swap), pgx's own termination step for the chess family, and
# a practical horizon for the rest (random 2048 and backgammon games are a few hundred moves).
MAX_LENGTH = {
    "tic_tac_toe": 9, "connect_four": 42, "othello": 128, "hex": 122, "go_9x9": 162,
    "go_19x19": 722, "animal_shogi": 256, "gardner_chess": 256, "chess": 512, "shogi": 512,
    "kuhn_poker": 4, "leduc_holdem": 16, "sparrow_mahjong": 64, "2048": 1000,
    "backgammon": 500,
}
DEFAULT_MAX_LENGTH = 256
# Value ranges where the rewards are not in [-1, 1] (backgammon: gammons and backgammons
# score 2 and 3; kuhn_poker: a called bet wins 2; leduc_holdem: up to 13 chips (ante 1, two
# raises of 2, two of 4); 2048: the sum of merged tiles, a rough scale for range-normalised
# rules and for training's value scale, not a bound: a strong player's returns exceed it).
VALUE_RANGE = {"backgammon": (-3.0, 3.0), "kuhn_poker": (-2.0, 2.0),
               "leduc_holdem": (-13.0, 13.0), "2048": (0.0, 10000.0)}
# Game.value_bounds (values every state does hold) where they are known and not [-1, 1]:
# training then scales values linearly from them (jaxsearch.train.value_scale).
VALUE_BOUNDS = {"backgammon": (-3.0, 3.0), "kuhn_poker": (-2.0, 2.0),
                "leduc_holdem": (-13.0, 13.0)}

_INSTALL = 'pgx is not installed; install it with `pip install "jaxsearch[pgx]"` (or `pip install pgx`)'


@struct.dataclass
class State:
  """One pgx position (unbatched; batched states have a leading ``[B]``).

  Attributes:
    env: the pgx state (``pgx.State`` of the environment; its ``observation`` is from the
      view of ``env.current_player``, the player to move).
    key: ``u32[2]``, the key that stochastic environments draw their next chance outcomes
      from (unused and constant for deterministic ones).
  """

  env: Any
  key: jax.Array


def _require_pgx():
  try:
    import pgx
  except ImportError as error:
    raise ImportError(_INSTALL) from error
  return pgx


def env_id_of(name: str) -> str:
  """``"pgx:othello"`` or ``"othello"`` -> ``"othello"``."""
  return name[len(PREFIX):] if name.startswith(PREFIX) else name


def available() -> tuple[str, ...]:
  """The pgx environment ids :func:`make` accepts (requires pgx)."""
  pgx = _require_pgx()
  return tuple(e for e in pgx.available_envs() if e not in UNSUPPORTED)


def _raw_key(key: jax.Array) -> jax.Array:
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  return key


def make(env_id: str, *, max_length: Optional[int] = None, chance_samples: int = 4,
         value_range: Optional[tuple[float, float]] = None) -> Game:
  """The pgx environment ``env_id`` as a :class:`Game` named ``"pgx:" + env_id``.

  Cached: the same arguments give the same ``Game`` object (so jitted functions keyed by it
  compile once).

  Args:
    env_id: a pgx id (``"othello"``, ``"connect_four"``, ``"2048"``, ...; ``"pgx:"`` prefix
      allowed). See :func:`available`.
    max_length: moves after which a game ends as a draw (``None``: :data:`MAX_LENGTH`'s entry,
      else 256).
    chance_samples: ``O``, sampled outcomes per action of a stochastic environment (ignored,
      1, for deterministic ones).
    value_range: ``(lo, hi)`` bounds on values for range-normalised rules (default
      ``(-1, 1)``, or :data:`VALUE_RANGE`'s entry). The game's ``value_bounds`` are
      :data:`VALUE_BOUNDS`'s entry (``None`` for the others).

  Raises:
    ImportError: pgx is not installed.
    ValueError: an unknown or unsupported id, a game of more than two players, an
      observation that is not a numeric array of rank 1-3, or bad sizes.
  """
  return _make(env_id_of(str(env_id)), max_length, int(chance_samples),
               None if value_range is None else tuple(float(v) for v in value_range))


@functools.lru_cache(maxsize=None)
def _make(env_id: str, max_length: Optional[int], chance_samples: int,
          value_range: Optional[tuple[float, float]]) -> Game:
  """:func:`make`, cached per argument (one game object per setting)."""
  env, example = _supported_env(env_id)
  max_length, num_outcomes = _checked_sizes(env_id, max_length, chance_samples)
  stochastic = env_id in STOCHASTIC
  two_player = env.num_players == 2
  num_actions = int(example.legal_action_mask.shape[0])
  if value_range is None:
    value_range = VALUE_RANGE.get(env_id, (-1.0, 1.0))

  def ended(s) -> jax.Array:
    return s.terminated | s.truncated | (s._step_count >= max_length)

  def init(key: jax.Array) -> State:
    env_key, chance_key = jax.random.split(key)
    # asarray: some pgx states hold Python ints when built eagerly (not jit-able leaves).
    return State(env=jax.tree.map(jnp.asarray, env.init(env_key)),
                 key=_raw_key(chance_key).astype(jnp.uint32))

  def legal_actions(state: State) -> jax.Array:
    return state.env.legal_action_mask & ~ended(state.env)

  def step(state: State, action: jax.Array, outcome: jax.Array | int = 0) -> StepResult:
    action = jnp.asarray(action, jnp.int32)
    safe = jnp.clip(action, 0, num_actions - 1)
    ok = (action == safe) & legal_actions(state)[safe]
    s = state.env
    mover = s.current_player
    if stochastic:
      branch = jax.random.fold_in(state.key, jnp.asarray(outcome, jnp.int32))
      step_key, next_key = jax.random.split(branch)
    else:
      step_key, next_key = jnp.zeros((2,), jnp.uint32), state.key
    nxt = env.step(s, safe, step_key)
    reward = nxt.rewards[jnp.clip(mover, 0, env.num_players - 1)].astype(jnp.float32)
    done = ended(nxt)
    if two_player:
      discount = jnp.where(nxt.current_player == mover, 1.0, -1.0)
    else:
      discount = jnp.float32(1.0)
    discount = jnp.where(done, 0.0, discount).astype(jnp.float32)
    new = State(env=nxt, key=next_key.astype(jnp.uint32))
    new = jax.tree.map(lambda n, o: jnp.where(ok, n, o), new, state)
    return StepResult(state=new, reward=jnp.where(ok, reward, 0.0),
                      discount=jnp.where(ok, discount, 0.0),
                      terminal=jnp.where(ok, done, ended(s)))

  def outcome_probs(state: State, action: jax.Array) -> jax.Array:
    del state, action
    return jnp.full((num_outcomes,), 1.0 / num_outcomes, jnp.float32)

  return Game(name=PREFIX + env_id, num_actions=num_actions, init=init,
              legal_actions=legal_actions, step=step, num_outcomes=num_outcomes,
              outcome_probs=outcome_probs, max_length=max_length,
              value_range=tuple(float(v) for v in value_range),
              value_bounds=VALUE_BOUNDS.get(env_id))


def _checked_sizes(env_id: str, max_length: Optional[int], chance_samples: int):
  """``(max_length, num_outcomes)`` of :func:`make` (defaults filled in, checked)."""
  if max_length is None:
    max_length = MAX_LENGTH.get(env_id, DEFAULT_MAX_LENGTH)
  if int(max_length) < 1:
    raise ValueError(f"max_length must be >= 1, got {max_length}")
  stochastic = env_id in STOCHASTIC
  if stochastic and int(chance_samples) < 1:
    raise ValueError(f"chance_samples must be >= 1, got {chance_samples}")
  return int(max_length), int(chance_samples) if stochastic else 1


def _supported_env(env_id: str):
  """``(env, example)``: pgx's environment ``env_id`` and the shapes of its initial state,
  after checking that it is one this module can play (ValueError, ImportError otherwise)."""
  pgx = _require_pgx()
  known = pgx.available_envs()
  if env_id in UNSUPPORTED:
    raise ValueError(f"pgx environment {env_id!r} is not supported: {UNSUPPORTED[env_id]}")
  if env_id not in known:
    choices = ", ".join(e for e in known if e not in UNSUPPORTED)
    raise ValueError(f"unknown pgx environment {env_id!r}; available: {choices}")
  try:
    env = pgx.make(env_id)
  except ImportError as error:  # e.g. minatar-* need the MinAtar package
    raise ImportError(f"pgx environment {env_id!r} needs a package that is missing: "
                      f"{error}") from error
  if env.num_players > 2:
    raise ValueError(f"pgx environment {env_id!r} has {env.num_players} players; only one- "
                     "and two-player games are supported")
  example = jax.eval_shape(env.init, jax.random.PRNGKey(0))
  obs = example.observation
  if not (1 <= len(obs.shape) <= 3) or not (jnp.issubdtype(obs.dtype, jnp.number)
                                            or obs.dtype == jnp.bool_):
    raise ValueError(f"pgx environment {env_id!r} has an unsupported observation "
                     f"({obs.dtype}{list(obs.shape)}): need a numeric array of rank 1 to 3")
  return env, example


def observe(state: State) -> jax.Array:
  """``f32[*obs_shape]``: pgx's observation of the player to move, as floats (the network
  input; e.g. ``[8, 8, 2]`` for othello, ``[34]`` for backgammon)."""
  return jnp.asarray(state.env.observation, jnp.float32)


def current_player(state: State) -> jax.Array:
  """``i32[]``: pgx's id of the player to move (0 or 1)."""
  return state.env.current_player


def module_for(name: str) -> types.SimpleNamespace:
  """What the CLI and the trainer need of a game, like a module under ``games``:
  ``GAME``, ``observe``, ``render``, plus ``num_players`` and ``alternating`` (the players
  take turns one move each: :data:`ALTERNATING`)."""
  env_id = env_id_of(name)
  game = make(env_id)
  return types.SimpleNamespace(GAME=game, observe=observe, render=render,
                               current_player=current_player,
                               num_players=_require_pgx().make(env_id).num_players,
                               alternating=env_id in ALTERNATING)


# ---------------------------------------------------------------------------------------------
# Plain-Python text rendering (for `jaxsearch play`).

_2048_MOVES = ("left", "up", "right", "down")


def render(state: State) -> str:
  """A text picture of one unbatched state, with the number a person types for each legal
  move (action ``a`` is ``a + 1``), then who is to move or the result.

  Boards whose observation is ``[H, W, C]`` with the mover's and the opponent's stones in the
  first two planes (tic_tac_toe, connect_four, othello, hex, go) are drawn as a grid, X for
  player 0 and O for player 1; 2048 as its tiles; backgammon as its points, dice and moves
  (source and die); other games as their legal action numbers.
  """
  s = state.env
  env_id = s.env_id
  obs = np.asarray(s.observation)
  legal = np.asarray(s.legal_action_mask) & ~bool(np.asarray(s.terminated | s.truncated))
  player = int(np.asarray(s.current_player))
  if env_id == "2048":
    lines = _render_2048(obs, legal)
  elif env_id == "backgammon":
    lines = _render_backgammon(obs, legal)
  elif obs.ndim == 3 and obs.shape[-1] >= 2:
    lines = _render_grid(env_id, obs, legal, player)
  else:
    lines = ["legal moves: " + ", ".join(str(a + 1) for a in np.flatnonzero(legal))]
  if bool(np.asarray(s.terminated | s.truncated)):
    rewards = np.asarray(s.rewards)
    lines.append("game over" + ("" if rewards.size < 2 else
                                f": player X {rewards[0]:+g}, player O {rewards[1]:+g}"))
  elif s.rewards.shape[0] > 1:
    lines.append(("X" if player == 0 else "O") + " to move")
  return "\n".join(lines)


def _render_2048(obs: np.ndarray, legal: np.ndarray) -> list[str]:
  """2048's tiles and moves, from its one-hot ``[4, 4, 31]`` observation."""
  exponents = obs.argmax(-1)  # one-hot planes of the tile's exponent; plane 0: empty
  tiles = np.where(exponents > 0, 2 ** exponents, 0)
  width = max(4, len(str(tiles.max())))
  lines = [" ".join(str(t).rjust(width) if t else ".".rjust(width) for t in row)
           for row in tiles]
  lines.append("moves: " + ", ".join(f"{a + 1} {m}" for a, m in enumerate(_2048_MOVES)
                                      if legal[a]))
  return lines


def _render_backgammon(obs: np.ndarray, legal: np.ndarray) -> list[str]:
  """Backgammon's points, dice and moves (source and die), from its ``[34]`` observation."""
  board, dice = obs[:28].astype(int), obs[28:34].astype(int)
  lines = ["points 1-24 (+ the mover's checkers, - the opponent's): " + " ".join(
      f"{x:+d}" if x else "." for x in board[:24])]
  lines.append(f"bar and borne off (pgx's board[24:28]): {board[24:28].tolist()}")
  lines.append("dice left: " + (" ".join(str(d + 1) for d in range(6) for _ in
                                         range(dice[d])) or "-"))

  def describe(a):
    source = a // 6
    where = "no move" if source == 0 else "bar" if source == 1 else f"point {source - 1}"
    return f"{a + 1} ({where}, die {a % 6 + 1})" if source else f"{a + 1} (no move)"

  lines.append("moves: " + ", ".join(describe(a) for a in np.flatnonzero(legal)))
  return lines


def _render_grid(env_id: str, obs: np.ndarray, legal: np.ndarray, player: int) -> list[str]:
  """A board game whose ``[H, W, C]`` observation holds the mover's and the opponent's stones
  in its first two planes: X for player 0, O for player 1, legal cells by number (connect_four:
  its columns under the board), then the moves past the board (a pass)."""
  h, w = obs.shape[:2]
  mine, theirs = obs[..., 0] > 0, obs[..., 1] > 0
  x_cells, o_cells = (mine, theirs) if player == 0 else (theirs, mine)
  columns = env_id == "connect_four"
  cell_width = len(str(len(legal))) + 1
  lines = []
  for r in range(h):
    row = []
    for c in range(w):
      a = r * w + c
      if x_cells[r, c]:
        mark = "X"
      elif o_cells[r, c]:
        mark = "O"
      elif not columns and a < len(legal) and legal[a]:
        mark = str(a + 1)
      else:
        mark = "."
      row.append(mark.rjust(cell_width))
    lines.append("".join(row))
  if columns:
    lines.append("".join(str(c + 1).rjust(cell_width) if legal[c] else " " * cell_width
                         for c in range(w)))
  extra = [a for a in range(h * w, len(legal)) if legal[a]]
  if extra:
    lines.append("other moves: " + ", ".join(
        str(a + 1) + (" (pass)" if env_id in ("othello",) or env_id.startswith("go") else "")
        for a in extra))
  return lines
