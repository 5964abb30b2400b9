"""Agents for evaluation: ``act_fn(key, states[B]) -> i32[B]``, and running one over a set of
positions. Game-agnostic: a game's exact oracles (tic-tac-toe minimax, the Connect Four test
sets) belong to the application layer, :mod:`jaxsearch.app.evaluate`, which measures these
agents against them.

An :class:`Agent` holds its parameters as a pytree, so that evaluating a network or a search
again after a training step re-uses the compiled program.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch import estimators as estimators_lib
from jaxsearch import policies as policies_lib
from jaxsearch.game import Game, per_item_keys

ActFn = Callable[[jax.Array, Any], jax.Array]
"""``(key, states[B]) -> i32[B]`` actions."""


# ---------------------------------------------------------------------------------------------
# Agents.


class BoundFn:
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
    return (type(other) is BoundFn and self.func is other.func and
            len(self.static) == len(other.static) and
            all(a is b for a, b in zip(self.static, other.static)))

  def __repr__(self):
    name = getattr(self.func, "__name__", repr(self.func))
    return f"BoundFn({name})"


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
  return Agent(fn=BoundFn(_call_plain, act_fn), params=None)


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
  return Agent(fn=BoundFn(_random_act, game))


def _best_value_act(action_values, params, key, states):
  del params
  qs = jax.vmap(action_values)(states)  # [B, A], -inf illegal
  best = jnp.max(qs, axis=-1, keepdims=True)
  optimal = jnp.isfinite(qs) & (qs == best)
  return _sample_masked(key, optimal)


def best_value_player(action_values: Callable[[Any], jax.Array]) -> Agent:
  """A uniformly random move among the best by an exact oracle (ties broken with the key, so
  games between two such players vary); ``-1`` where no move has a finite value.

  Args:
    action_values: ``state -> f32[A]`` of one (unbatched) state, ``-inf`` for illegal moves
      (e.g. tic-tac-toe's minimax action values: :func:`jaxsearch.app.evaluate.perfect_player`).
      It is part of the compiled program's identity: pass the same function object to re-use
      the compilation.
  """
  return Agent(fn=BoundFn(_best_value_act, action_values))


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
  return Agent(fn=BoundFn(_search_act, search), params=params)


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
  return Agent(fn=BoundFn(_greedy_logits_act, game, logits_fn, with_params), params=params)


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
    correct: ``bool[P]`` the oracle accepts the move (tic-tac-toe: optimal; Connect Four: not
      an error); illegal moves are never correct.
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
