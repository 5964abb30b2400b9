"""The exact side of :func:`jaxsearch.solve.solve_game`: a game's states as a graph, in exact
arithmetic.

* :class:`Oracle` steps a game's states in padded batches and remembers each distinct state
  (keyed by the bytes of its leaves);
* every number the exact side takes from the game is checked where it is met: a NaN bound,
  reward, discount or probability, an optimistic bound of ``-inf`` or a pessimistic one of
  ``+inf`` at a state with a legal action, or an infinite reward, is refused
  (:class:`~jaxsearch.solve.game_numbers.BadGameNumber`, naming the state); an optimistic
  bound of ``+inf`` is admissible and means "no information" (``INFINITE`` in the exact
  upper bounds, :mod:`jaxsearch.solve.game_numbers`);
* :class:`~jaxsearch.solve.dyadic.Dyadic` (its own module) is exact arithmetic on the game's
  float32 numbers (``n·2^e``; sums and products of floats stay dyadic), turned into
  :class:`fractions.Fraction` for results;
* :class:`StateGraph` reads searched trees into one entry per distinct state, extracts the best
  policy it holds, bounds it from above by a Bellman recursion, and opens more of the game
  (the exact completion) until the bounds meet — all by iterative traversals.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.solve.dyadic import ZERO, Dyadic, expected, expected_float
from jaxsearch.solve.game_numbers import (
    INFINITE, check_bounds, check_transitions, expected_upper)

_MIN_BUCKET = 64  # batches are padded to 64, 256, 1024... rows: few shapes to compile


def take(states, index):
  return jax.tree.map(lambda x: x[index], states)


def state_keys(states) -> list[tuple]:
  """One hashable key per row of a batch of (numpy) states: the bytes of every leaf."""
  leaves = [np.ascontiguousarray(x) for x in jax.tree.leaves(states)]
  size = leaves[0].shape[0] if leaves else 0
  return [tuple(leaf[i].tobytes() for leaf in leaves) for i in range(size)]


class Oracle:
  """The game's and the estimator's functions, vmapped and jitted, on numpy batches (padded
  to a few sizes, so that a few shapes are compiled)."""

  _cache: dict = {}  # (id(game), id(estimator)) -> Oracle, the most recent few
  _CACHE_SIZE = 16

  def __new__(cls, game: Game, estimator: Optional[Estimator] = None):
    key = (id(game), None if estimator is None else id(estimator))
    found = cls._cache.get(key)
    if found is not None and found.game is game and found.estimator is estimator:
      return found
    self = super().__new__(cls)
    self._build(game, estimator)
    if len(cls._cache) >= cls._CACHE_SIZE:
      cls._cache.pop(next(iter(cls._cache)))
    cls._cache[key] = self
    return self

  def _build(self, game: Game, estimator: Optional[Estimator]):
    self.game, self.estimator = game, estimator
    outcomes = jnp.arange(game.num_outcomes, dtype=jnp.int32)

    def transitions(state, action):
      result = jax.vmap(lambda o: game.step(state, action, o))(outcomes)
      return (game.outcome_probs(state, action), result.reward, result.discount,
              result.terminal, result.state)

    def greedy(states):
      legal = jax.vmap(game.legal_actions)(states)
      estimate = estimator(None, jax.random.PRNGKey(0), states)
      scores = (estimate.action_values if estimate.action_values is not None else
                estimate.prior_logits)
      if scores is None:
        scores = jnp.zeros(legal.shape, jnp.float32)
      return jnp.argmax(jnp.where(legal, scores, -jnp.inf), axis=-1)

    self._transitions = jax.jit(jax.vmap(transitions))
    self._legal = jax.jit(jax.vmap(game.legal_actions))
    self._optimistic = (None if game.optimistic_value is None else
                        jax.jit(jax.vmap(game.optimistic_value)))
    self._pessimistic = (None if game.pessimistic_value is None else
                         jax.jit(jax.vmap(game.pessimistic_value)))
    self._greedy = None if estimator is None else jax.jit(greedy)

  @staticmethod
  def _call(fn, *batch):
    """``fn`` on a numpy batch padded to a bucket size (rows repeated), results cut back."""
    size = int(jax.tree.leaves(batch[0])[0].shape[0])
    padded = _MIN_BUCKET
    while padded < size:
      padded *= 4
    index = np.concatenate([np.arange(size), np.zeros(padded - size, np.int64)])
    out = fn(*(take(x, index) for x in batch))
    return jax.tree.map(lambda x: np.asarray(x)[:size], out)

  def transitions(self, states, actions):
    """``(probs, rewards, discounts, terminal)`` ``[n, O]`` and the next states ``[n, O]``."""
    return self._call(self._transitions, states, np.asarray(actions, np.int32))

  def legal(self, states) -> np.ndarray:
    return self._call(self._legal, states)

  def optimistic(self, states) -> Optional[np.ndarray]:
    return None if self._optimistic is None else self._call(self._optimistic, states)

  def pessimistic(self, states) -> Optional[np.ndarray]:
    return None if self._pessimistic is None else self._call(self._pessimistic, states)

  def check_bounds(self, states, legal: np.ndarray) -> Optional[np.ndarray]:
    """The game's optimistic values at ``states`` (``f32[n]``, ``None`` without), every
    bound of the game checked there (:mod:`jaxsearch.solve.game_numbers`): NaN refused, and
    the infinities that cannot hold (optimistic ``-inf``, pessimistic ``+inf``) where a legal
    action is (``legal bool[n, A]``)."""
    playable = legal.reshape(legal.shape[0], -1).any(axis=1)
    optimistic = self.optimistic(states)
    if optimistic is not None:
      check_bounds("optimistic_value", optimistic, playable, states, -np.inf)
    pessimistic = self.pessimistic(states)
    if pessimistic is not None:
      check_bounds("pessimistic_value", pessimistic, playable, states, np.inf)
    return optimistic

  def greedy(self, states) -> np.ndarray:
    return self._call(self._greedy, states)


class StateGraph:
  """Every state met, keyed by its bytes (:func:`state_keys`): the game's transitions from it
  (one entry per action stepped: its outcomes with ``p > 0``), its legal actions, the game's
  optimistic value and the estimator's greedy action. Identical states reached along
  different histories are one entry, so the graph grows with the number of distinct states,
  not of histories (a finite-horizon MDP: states × horizon), and every traversal is
  iterative.

  Every state's greedy action is stepped (:meth:`close`), so the greedy policy is defined
  below any state; the exact passes (:meth:`lower`, :meth:`upper`) run over the states
  reachable from a root through every stepped action, children first.
  """

  _CHUNK = 4096  # rows per call of the game's functions (bounds the compiled shapes)

  def __init__(self, oracle: Oracle):
    self.oracle = oracle
    self.ids: dict[tuple, int] = {}
    self.keys: list[tuple] = []
    self.legal: list[np.ndarray] = []
    self.optimistic: list[Optional[Dyadic]] = []
    self.optimistic_float: list[float] = []
    self.greedy: list[int] = []  # -1 where nothing is legal
    self.edges: list[dict[int, tuple]] = []  # action -> ((o, p, r, d, child), ...) exact
    self.float_edges: list[dict[int, tuple]] = []  # action -> ((p, r, d, child), ...)
    self.negative_discount = False
    self.version = 0  # grows with every stepped action (caches of the passes check it)
    self._pending: list[int] = []  # states whose greedy action is still to be stepped
    self._spec = None  # (treedef, [(dtype, shape)]) of one state
    self._passes: dict = {}

  # -- states ---------------------------------------------------------------------------------

  def states(self, ids) -> Any:
    """The states ``ids`` as one numpy batch (rebuilt from their keys)."""
    treedef, leaves = self._spec
    return jax.tree.unflatten(treedef, [
        np.frombuffer(b"".join(self.keys[i][k] for i in ids), dtype).reshape(
            (len(ids),) + shape) for k, (dtype, shape) in enumerate(leaves)])

  def add(self, states) -> list[int]:
    """The ids of a batch of states, adding the new ones (their legal actions, optimistic
    value and greedy action, computed as one batch)."""
    if self._spec is None:
      self._spec = (jax.tree.structure(states),
                    [(np.asarray(x).dtype, np.asarray(x).shape[1:])
                     for x in jax.tree.leaves(states)])
    keys = state_keys(states)
    new: dict[tuple, int] = {}
    for row, key in enumerate(keys):
      if key not in self.ids and key not in new:
        new[key] = row
    rows = np.fromiter(new.values(), np.int64, len(new))
    for start in range(0, len(rows), self._CHUNK):
      batch = take(states, rows[start:start + self._CHUNK])
      legal = self.oracle.legal(batch)
      optimistic = self.oracle.check_bounds(batch, legal)
      greedy = self.oracle.greedy(batch) if self.oracle.estimator is not None else None
      for k, row in enumerate(rows[start:start + self._CHUNK]):
        node = len(self.keys)
        self.ids[keys[row]] = node
        self.keys.append(keys[row])
        self.legal.append(legal[k])
        playable = bool(legal[k].any())
        own = None if optimistic is None else float(optimistic[k]) if playable else 0.0
        self.optimistic.append(None if own is None else INFINITE if own == np.inf else
                               Dyadic.of(own))
        self.optimistic_float.append(np.inf if own is None else own)
        self.greedy.append(int(greedy[k]) if playable and greedy is not None else -1)
        self.edges.append({})
        self.float_edges.append({})
        if playable and greedy is not None:
          self._pending.append(node)
    return [self.ids[key] for key in keys]

  def terminal(self, node: int) -> bool:
    return not self.legal[node].any()

  def unstepped(self, node: int) -> list[int]:
    """The legal actions of ``node`` not stepped yet."""
    return [int(a) for a in np.flatnonzero(self.legal[node]) if int(a) not in self.edges[node]]

  # -- transitions ----------------------------------------------------------------------------

  def step(self, pairs) -> int:
    """Steps every ``(node, action)`` pair not stepped yet (legal ones) through the game;
    returns how many were stepped."""
    pairs = [(n, a) for n, a in dict.fromkeys(pairs)
             if a not in self.edges[n] and 0 <= a < len(self.legal[n]) and self.legal[n][a]]
    num_outcomes = self.oracle.game.num_outcomes
    size = max(1, self._CHUNK // num_outcomes)
    for start in range(0, len(pairs), size):
      chunk = pairs[start:start + size]
      states = self.states([n for n, _ in chunk])
      actions = np.array([a for _, a in chunk], np.int32)
      probs, rewards, discounts, terminal, following = self.oracle.transitions(states, actions)
      check_transitions(probs, rewards, discounts, states, actions)
      flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
      places = [(k, int(o)) for k in range(len(chunk)) for o in np.flatnonzero(probs[k] > 0)]
      going_on = [k * num_outcomes + o for k, o in places if not terminal[k, o]]
      children = iter(self.add(take(flat, np.array(going_on, np.int64))) if going_on else [])
      outcomes: list[list] = [[] for _ in chunk]
      for k, o in places:
        outcomes[k].append((o, probs[k, o], rewards[k, o], discounts[k, o],
                            None if terminal[k, o] else next(children)))
      for (node, action), found in zip(chunk, outcomes):
        self.negative_discount |= any(d < 0 for _, _, _, d, _ in found)
        self.edges[node][action] = tuple(
            (o, Dyadic.of(p), Dyadic.of(r), Dyadic.of(d), c) for o, p, r, d, c in found)
        self.float_edges[node][action] = tuple(
            (float(p), float(r), float(d), c) for _, p, r, d, c in found)
    self.version += 1
    return len(pairs)

  def close(self) -> None:
    """Steps the greedy action of every state that needs it (and of the states that reveals),
    so that the greedy policy is defined below every state of the graph."""
    while self._pending:
      pending, self._pending = self._pending, []
      self.step([(n, self.greedy[n]) for n in pending])

  # -- traversals (iterative) -----------------------------------------------------------------

  def children(self, node: int, action: Optional[int] = None):
    edges = self.edges[node].values() if action is None else (self.edges[node][action],)
    return [c for edge in edges for *_, c in edge if c is not None]

  def order(self, root: int) -> list[int]:
    """The states reachable from ``root`` through every stepped action, children first (an
    iterative depth-first post-order). Raises ``ValueError`` on a cycle."""
    done: set[int] = set()
    active: set[int] = {root}
    order: list[int] = []
    stack = [(root, iter(self.children(root)))]
    while stack:
      node, pending = stack[-1]
      for child in pending:
        if child in done:
          continue
        if child in active:
          raise ValueError("the game revisits a state: exact solving needs a game that ends "
                           "(e.g. a finite horizon)")
        active.add(child)
        stack.append((child, iter(self.children(child))))
        break
      else:
        stack.pop()
        active.discard(node)
        done.add(node)
        order.append(node)
    return order

  def reachable(self, root: int, choice: dict) -> list[int]:
    """The states reachable from ``root`` when every state plays ``choice[state]``."""
    seen, stack = {root}, [root]
    while stack:
      node = stack.pop()
      if choice[node] >= 0:
        for child in self.children(node, choice[node]):
          if child not in seen:
            seen.add(child)
            stack.append(child)
    return list(seen)

  # -- exact passes ---------------------------------------------------------------------------

  def lower(self, root: int) -> tuple[dict, dict]:
    """``(value, choice)`` per state reachable from ``root``: the exact value of the best
    policy the graph holds — at every state the better, exactly, of each stepped action
    (the greedy one first; ties keep the earlier), each completed the same way below — and
    the action it plays (-1 where nothing is legal)."""
    cached = self._passes.get(("lower", root))
    if cached is not None and cached[0] == self.version:
      return cached[1]
    value: dict[int, Dyadic] = {}
    choice: dict[int, int] = {}
    for node in self.order(root):
      best, action = None, -1
      first = self.greedy[node]
      for a in ([first] if first in self.edges[node] else []) + sorted(
          a for a in self.edges[node] if a != first):
        q = expected(self.edges[node][a], value)
        if best is None or q > best:
          best, action = q, a
      value[node], choice[node] = (ZERO if best is None else best), action
    self._passes[("lower", root)] = (self.version, (value, choice))
    return value, choice

  def upper(self, root: int) -> dict:
    """An exact upper bound on the optimal value of every state reachable from ``root``: the
    Bellman recursion over the stepped actions, the game's optimistic value for every legal
    action not stepped, min'd with the state's own optimistic value (0 where nothing is
    legal). :data:`INFINITE` where the optimistic values say nothing (``+inf``)."""
    if self.negative_discount:
      raise ValueError("exact certificates are for single-agent games: a negative "
                       "discount (alternating players) was met")
    cached = self._passes.get(("upper", root))
    if cached is not None and cached[0] == self.version:
      return cached[1]
    value: dict[int, Dyadic] = {}
    for node in self.order(root):
      if self.terminal(node):
        value[node] = ZERO
        continue
      own = self.optimistic[node]
      if self.unstepped(node):  # some action is only bounded by ``own``: the bound is ``own``
        value[node] = own
        continue
      best = None
      for edge in self.edges[node].values():
        q = expected_upper(edge, value)
        if q is INFINITE:
          best = q
          break
        best = q if best is None or q > best else best
      value[node] = (best if own is INFINITE else
                     own if best is INFINITE or own < best else best)
    self._passes[("upper", root)] = (self.version, value)
    return value

  # -- the completion -------------------------------------------------------------------------

  def _float_passes(self, root: int) -> tuple[dict, dict]:
    """``(lower, upper)`` of :meth:`lower` and :meth:`upper` in float64 (to steer the
    completion only)."""
    lower: dict[int, float] = {}
    upper: dict[int, float] = {}
    for node in self.order(root):
      if self.terminal(node):
        lower[node] = upper[node] = 0.0
        continue
      qs = [expected_float(edge, lower, None) for edge in self.float_edges[node].values()]
      lower[node] = max(qs) if qs else 0.0
      own = self.optimistic_float[node]
      if self.unstepped(node):
        upper[node] = own
      else:
        upper[node] = min(own, max(expected_float(edge, upper, None)
                                   for edge in self.float_edges[node].values()))
    return lower, upper

  def _optimistic_action(self, node: int, upper: dict) -> int:
    """The stepped action with the best float upper bound (children not in ``upper`` are
    bounded by their own optimistic value)."""
    return max(self.float_edges[node], key=lambda a: (
        expected_float(self.float_edges[node][a], upper, self.optimistic_float), -a))

  def _tips(self, root: int, upper: dict) -> list[int]:
    """The states with unstepped legal actions that the optimistic policy reaches (at a fully
    stepped state it plays the action with the best upper bound)."""
    tips, seen, stack = [], {root}, [root]
    while stack:
      node = stack.pop()
      if self.terminal(node):
        continue
      if self.unstepped(node):
        tips.append(node)
        continue
      for child in self.children(node, self._optimistic_action(node, upper)):
        if child not in seen:
          seen.add(child)
          stack.append(child)
    return tips

  def _open_all(self, nodes, limit: int) -> tuple[int, list[int]]:
    """Steps every legal action of ``nodes`` (whole states, in order, while ``limit`` pairs
    allow); returns how many pairs were stepped and the states opened up."""
    pairs, opened = [], []
    for node in nodes:
      actions = self.unstepped(node)
      if len(pairs) + len(actions) > limit:
        break
      pairs.extend((node, a) for a in actions)
      opened.append(node)
    stepped = self.step(pairs)
    self.close()
    return stepped, opened

  def _dive(self, tips, upper: dict, limit: int, deadline: float) -> int:
    """Steps every action of the ``tips``, then of the open states that their optimistic
    actions lead to, and so on down to the end of the game: one optimistic policy's whole
    frontier per pass of the float bounds."""
    spent, frontier, marked = 0, list(tips), set(tips)
    while frontier and spent < limit and time.perf_counter() < deadline:
      stepped, opened = self._open_all(frontier, limit - spent)
      spent += stepped
      if not opened:
        break
      frontier = []
      for node in opened:
        for child in self.children(node, self._optimistic_action(node, upper)):
          if child not in marked and not self.terminal(child) and self.unstepped(child):
            marked.add(child)
            frontier.append(child)
    return spent

  def _exhaust(self, root: int, limit: int, deadline: float) -> int:
    """Steps every legal action of every state reachable from ``root``, breadth first, while
    ``limit`` pairs and the time allow."""
    spent = 0
    while spent < limit and time.perf_counter() < deadline:
      open_states = [node for node in self.order(root)[::-1]
                     if not self.terminal(node) and self.unstepped(node)]
      if not open_states:
        break
      stepped, _ = self._open_all(open_states, limit - spent)
      if not stepped:
        break
      spent += stepped
    return spent

  def proven(self, root: int) -> bool:
    if self.optimistic[root] is None:
      return False
    upper = self.upper(root)[root]
    return upper is not INFINITE and self.lower(root)[0][root] == upper

  def complete(self, root: int, limit: int, deadline: float, tolerance: float) -> int:
    """The exact completion: steps more of the game from ``root`` until its exact bounds meet,
    ``limit`` ``(state, action)`` pairs are stepped or ``deadline`` (``time.perf_counter``)
    passes; returns the pairs stepped.

    The float bounds only steer: while they are more than ``tolerance`` apart, every state
    with unstepped actions that the optimistic policy reaches is opened (AO*-like, with whole
    optimistic paths opened at once); once they are within it (or nothing is left to open
    that way), the exact bounds decide, and if they still differ every state reachable from
    the root is opened, breadth first.
    """
    spent = 0
    if self.optimistic[root] is None:
      return spent
    while spent < limit and time.perf_counter() < deadline:
      lower, upper = self._float_passes(root)
      tips = []
      if (upper[root] == np.inf or
          upper[root] - lower[root] > tolerance * max(1.0, abs(upper[root]))):
        tips = self._tips(root, upper)
      if not tips:
        if not self.proven(root):
          spent += self._exhaust(root, limit - spent, deadline)
        return spent
      stepped = self._dive(tips, upper, limit - spent, deadline)
      if not stepped:
        break
      spent += stepped
    return spent

  def policy(self, root: int) -> dict:
    """The policy of :meth:`lower` from ``root`` as nested dicts, one dict per state: every
    history that reaches a state shares its dict (a DAG, built children first)."""
    _, choice = self.lower(root)
    wanted = set(self.reachable(root, choice))
    made: dict[int, dict] = {}
    for node in self.order(root):
      if node in wanted:
        action = choice[node]
        made[node] = {"action": action, "children": {} if action < 0 else {
            o: made[c] for o, _, _, _, c in self.edges[node][action] if c is not None}}
    return made[root]

