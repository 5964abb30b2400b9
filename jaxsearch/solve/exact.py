"""Solving any game with chance, certified in exact rational arithmetic.

:func:`solve_game` searches a batch of roots of any :class:`jaxsearch.game.Game` (single-agent:
discounts ``>= 0``, with ``outcome_probs``, and ideally ``pessimistic_value`` and
``optimistic_value``) with the solver's loop, then works in exact arithmetic on the game's own
float32 numbers (floats are dyadic rationals, and so are their sums and products, so this is
exact arithmetic on the game's rewards, discounts and probabilities; results are
:class:`fractions.Fraction`) over a **graph of states**: the searched trees, whose nodes are
histories, are read into one entry per distinct state (the bytes of its leaves), with every
action the search expanded there re-stepped through the game. Identical states reached along
different histories are shared, so the cost grows with the number of states (a
finite-horizon MDP: states × horizon), not of histories, and every traversal is iterative (no
recursion, whatever the depth). Per root it:

* **extracts** the best policy the graph holds: at every state the better, exactly, of each
  action stepped there (completed the same way below) and the estimator's greedy action,
  which is stepped at every state, so the greedy policy completes it below the search;
* **evaluates** it (:func:`exact_value`): every outcome with ``p > 0`` enumerated through
  ``game.step`` — the **lower bound**, a value some policy reaches;
* computes an **upper bound** by a Bellman recursion over the graph, where a legal action not
  stepped at a state is bounded by the game's admissible ``optimistic_value`` (and every
  state by its own);
* where the two differ, runs the **exact completion**: more of the game is stepped from the
  root (AO*-like: the states with unstepped actions that the optimistic policy reaches, float
  bounds steering) and, once the float bounds say the gap is closed, the exact bounds decide;
  if they still differ, every reachable state is opened, breadth first — until they meet or
  the budget ends;
* says **proven** iff the two are equal, exactly. No float tolerance is ever involved.

The policy is plain nested dicts ``{"action": a, "children": {outcome: node}}``, one child for
every outcome with ``p > 0`` that does not end the game, and one dict per distinct state: the
histories that reach a state share its dict, so the policy is a DAG (walk it with a memo of
the dicts seen, not history by history; :func:`exact_value` does).
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.solve import loop

_MIN_BUCKET = 64  # batches are padded to 64, 256, 1024... rows: few shapes to compile


def _take(states, index):
  return jax.tree.map(lambda x: x[index], states)


def _keys(states) -> list[tuple]:
  """One hashable key per row of a batch of (numpy) states: the bytes of every leaf."""
  leaves = [np.ascontiguousarray(x) for x in jax.tree.leaves(states)]
  size = leaves[0].shape[0] if leaves else 0
  return [tuple(leaf[i].tobytes() for leaf in leaves) for i in range(size)]


class _Oracle:
  """The game's and the estimator's functions, vmapped and jitted, on numpy batches (padded
  to a few sizes, so that a few shapes are compiled)."""

  _cache: dict = {}  # (id(game), id(estimator)) -> _Oracle, the most recent few
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
    self._greedy = None if estimator is None else jax.jit(greedy)

  @staticmethod
  def _call(fn, *batch):
    """``fn`` on a numpy batch padded to a bucket size (rows repeated), results cut back."""
    size = int(jax.tree.leaves(batch[0])[0].shape[0])
    padded = _MIN_BUCKET
    while padded < size:
      padded *= 4
    index = np.concatenate([np.arange(size), np.zeros(padded - size, np.int64)])
    out = fn(*(_take(x, index) for x in batch))
    return jax.tree.map(lambda x: np.asarray(x)[:size], out)

  def transitions(self, states, actions):
    """``(probs, rewards, discounts, terminal)`` ``[n, O]`` and the next states ``[n, O]``."""
    return self._call(self._transitions, states, np.asarray(actions, np.int32))

  def legal(self, states) -> np.ndarray:
    return self._call(self._legal, states)

  def optimistic(self, states) -> Optional[np.ndarray]:
    return None if self._optimistic is None else self._call(self._optimistic, states)

  def greedy(self, states) -> np.ndarray:
    return self._call(self._greedy, states)


class _Dyadic:
  """An exact dyadic rational ``n · 2**e``: every finite float is one, and so are the sums and
  products of floats this module forms, so this is exact arithmetic like
  :class:`fractions.Fraction`, without its gcd at every step (values hundreds of moves deep
  have numerators of thousands of bits)."""

  __slots__ = ("n", "e")

  def __init__(self, n: int, e: int = 0):
    self.n, self.e = n, (e if n else 0)

  @staticmethod
  def of(x) -> "_Dyadic":
    numerator, denominator = float(x).as_integer_ratio()  # the denominator is a power of 2
    return _Dyadic(numerator, 1 - denominator.bit_length())

  def __add__(self, other: "_Dyadic") -> "_Dyadic":
    if self.e <= other.e:
      return _Dyadic(self.n + (other.n << (other.e - self.e)), self.e)
    return _Dyadic((self.n << (self.e - other.e)) + other.n, other.e)

  def __mul__(self, other: "_Dyadic") -> "_Dyadic":
    return _Dyadic(self.n * other.n, self.e + other.e)

  def _aligned(self, other: "_Dyadic") -> tuple[int, int]:
    if self.e <= other.e:
      return self.n, other.n << (other.e - self.e)
    return self.n << (self.e - other.e), other.n

  def __eq__(self, other) -> bool:
    a, b = self._aligned(other)
    return a == b

  def __lt__(self, other) -> bool:
    a, b = self._aligned(other)
    return a < b

  def __gt__(self, other) -> bool:
    a, b = self._aligned(other)
    return a > b

  __hash__ = None

  def reduced(self) -> "_Dyadic":
    """The same number with an odd numerator (or 0), so that it stays small."""
    if not self.n:
      return self
    zeros = (self.n & -self.n).bit_length() - 1
    return _Dyadic(self.n >> zeros, self.e + zeros)

  def fraction(self) -> Fraction:
    if self.e >= 0:
      return Fraction(self.n << self.e)
    return Fraction(self.n, 1 << -self.e)


_ZERO = _Dyadic(0)


def _expected(edge, values) -> _Dyadic:
  """``Σ_o p_o (r_o + d_o · values[child_o])`` exactly, 0 after an outcome that ends the game.
  ``edge`` is a tuple of ``(o, p, r, d, child or None)`` with :class:`_Dyadic` numbers."""
  total = _ZERO
  for _, p, r, d, child in edge:
    total = total + p * (r if child is None else r + d * values[child])
  return total.reduced()


def _expected_float(edge, values, default) -> float:
  """:func:`_expected` in float64 (``default[child]`` where ``values`` has no entry)."""
  total = 0.0
  for p, r, d, child in edge:
    if child is None:
      total += p * r
    else:
      value = values.get(child)
      total += p * (r + d * (default[child] if value is None else value))
  return total


class _Graph:
  """Every state met, keyed by its bytes (:func:`_keys`): the game's transitions from it (one
  entry per action stepped: its outcomes with ``p > 0``), its legal actions, the game's
  optimistic value and the estimator's greedy action. Identical states reached along
  different histories are one entry, so the graph grows with the number of distinct states,
  not of histories (a finite-horizon MDP: states × horizon), and every traversal is
  iterative.

  Every state's greedy action is stepped (:meth:`close`), so the greedy policy is defined
  below any state; the exact passes (:meth:`lower`, :meth:`upper`) run over the states
  reachable from a root through every stepped action, children first.
  """

  _CHUNK = 4096  # rows per call of the game's functions (bounds the compiled shapes)

  def __init__(self, oracle: _Oracle):
    self.oracle = oracle
    self.ids: dict[tuple, int] = {}
    self.keys: list[tuple] = []
    self.legal: list[np.ndarray] = []
    self.optimistic: list[Optional[_Dyadic]] = []
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
    keys = _keys(states)
    new: dict[tuple, int] = {}
    for row, key in enumerate(keys):
      if key not in self.ids and key not in new:
        new[key] = row
    rows = np.fromiter(new.values(), np.int64, len(new))
    for start in range(0, len(rows), self._CHUNK):
      batch = _take(states, rows[start:start + self._CHUNK])
      legal = self.oracle.legal(batch)
      optimistic = self.oracle.optimistic(batch)
      greedy = self.oracle.greedy(batch) if self.oracle.estimator is not None else None
      for k, row in enumerate(rows[start:start + self._CHUNK]):
        node = len(self.keys)
        self.ids[keys[row]] = node
        self.keys.append(keys[row])
        self.legal.append(legal[k])
        self.optimistic.append(None if optimistic is None else _Dyadic.of(optimistic[k]))
        self.optimistic_float.append(np.inf if optimistic is None else float(optimistic[k]))
        playable = bool(legal[k].any())
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
      probs, rewards, discounts, terminal, following = self.oracle.transitions(
          self.states([n for n, _ in chunk]), np.array([a for _, a in chunk], np.int32))
      flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
      places = [(k, int(o)) for k in range(len(chunk)) for o in np.flatnonzero(probs[k] > 0)]
      going_on = [k * num_outcomes + o for k, o in places if not terminal[k, o]]
      children = iter(self.add(_take(flat, np.array(going_on, np.int64))) if going_on else [])
      outcomes: list[list] = [[] for _ in chunk]
      for k, o in places:
        outcomes[k].append((o, probs[k, o], rewards[k, o], discounts[k, o],
                            None if terminal[k, o] else next(children)))
      for (node, action), found in zip(chunk, outcomes):
        self.negative_discount |= any(d < 0 for _, _, _, d, _ in found)
        self.edges[node][action] = tuple(
            (o, _Dyadic.of(p), _Dyadic.of(r), _Dyadic.of(d), c) for o, p, r, d, c in found)
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
    value: dict[int, _Dyadic] = {}
    choice: dict[int, int] = {}
    for node in self.order(root):
      best, action = None, -1
      first = self.greedy[node]
      for a in ([first] if first in self.edges[node] else []) + sorted(
          a for a in self.edges[node] if a != first):
        q = _expected(self.edges[node][a], value)
        if best is None or q > best:
          best, action = q, a
      value[node], choice[node] = (_ZERO if best is None else best), action
    self._passes[("lower", root)] = (self.version, (value, choice))
    return value, choice

  def upper(self, root: int) -> dict:
    """An exact upper bound on the optimal value of every state reachable from ``root``: the
    Bellman recursion over the stepped actions, the game's optimistic value for every legal
    action not stepped, min'd with the state's own optimistic value (0 where nothing is
    legal)."""
    if self.negative_discount:
      raise ValueError("exact certificates are for single-agent games: a negative "
                       "discount (alternating players) was met")
    cached = self._passes.get(("upper", root))
    if cached is not None and cached[0] == self.version:
      return cached[1]
    value: dict[int, _Dyadic] = {}
    for node in self.order(root):
      if self.terminal(node):
        value[node] = _ZERO
        continue
      own = self.optimistic[node]
      if self.unstepped(node):  # some action is only bounded by ``own``: the bound is ``own``
        value[node] = own
        continue
      best = None
      for edge in self.edges[node].values():
        q = _expected(edge, value)
        best = q if best is None or q > best else best
      value[node] = own if own < best else best
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
      qs = [_expected_float(edge, lower, None) for edge in self.float_edges[node].values()]
      lower[node] = max(qs) if qs else 0.0
      own = self.optimistic_float[node]
      if self.unstepped(node):
        upper[node] = own
      else:
        upper[node] = min(own, max(_expected_float(edge, upper, None)
                                   for edge in self.float_edges[node].values()))
    return lower, upper

  def _optimistic_action(self, node: int, upper: dict) -> int:
    """The stepped action with the best float upper bound (children not in ``upper`` are
    bounded by their own optimistic value)."""
    return max(self.float_edges[node], key=lambda a: (
        _expected_float(self.float_edges[node][a], upper, self.optimistic_float), -a))

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
    return (self.optimistic[root] is not None and
            self.lower(root)[0][root] == self.upper(root)[root])

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
      if upper[root] - lower[root] > tolerance * max(1.0, abs(upper[root])):
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


def _child(node: dict, outcome: int):
  children = node.get("children") or {}
  child = children.get(outcome, children.get(str(outcome)))
  return child


def _evaluate_levels(oracle: _Oracle, states, nodes: list, max_depth: int):
  """Walks a policy level by level through ``game.step``: per level, the edges of every
  item ``[(p, r, d, next item index or None)]``. Within a level, items that are the same
  policy node (the same dict) at the same state are one item, so a policy that shares its
  sub-policies (a DAG, as :func:`solve_game` returns) is walked once per distinct state, not
  once per history."""
  levels = []
  for _ in range(max_depth + 1):
    if not nodes:
      return levels
    actions = np.array([node.get("action", -1) if isinstance(node, dict) else -1
                        for node in nodes], np.int64)
    legal = oracle.legal(states)
    bad = [i for i, a in enumerate(actions) if not (0 <= a < legal.shape[1] and legal[i, a])]
    if bad:
      raise ValueError(f"the policy plays action {actions[bad[0]]}, which is not legal "
                       f"there (or the state is terminal)")
    probs, rewards, discounts, terminal, following = oracle.transitions(states, actions)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
    next_keys = _keys(flat)
    edges, next_nodes, rows, seen = [], [], [], {}
    for i, node in enumerate(nodes):
      item = []
      for o in np.flatnonzero(probs[i] > 0):
        index = None
        if not terminal[i, o]:
          child = _child(node, int(o))
          if child is None:
            raise ValueError(f"the policy has no child for outcome {int(o)} after action "
                             f"{int(actions[i])} (probability {float(probs[i, o])})")
          row = i * probs.shape[1] + o
          index = seen.setdefault((id(child), next_keys[row]), len(next_nodes))
          if index == len(next_nodes):
            next_nodes.append(child)
            rows.append(row)
        item.append((probs[i, o], rewards[i, o], discounts[i, o], index))
      edges.append(item)
    levels.append(edges)
    nodes, states = next_nodes, _take(flat, np.array(rows, np.int64))
  raise ValueError(f"the policy is deeper than {max_depth} moves")


def exact_value(game: Game, state, policy: dict, *, max_depth: int = 10_000) -> Fraction:
  """The exact value of ``policy`` from ``state`` (one unbatched state), mover's view.

  Every outcome with ``p > 0`` of every decision is enumerated through ``game.outcome_probs``
  and ``game.step``, in exact rationals of the game's float32 probabilities, rewards and
  discounts: ``V(node) = Σ_o p_o (r_o + d_o · V(child_o))``, 0 after an outcome that ends the
  game. ``policy`` is nested dicts ``{"action": a, "children": {outcome: node}}``; a node may
  be shared by several parents (a DAG, as :func:`solve_game` returns): it is evaluated once
  per distinct state it is reached at and depth. Raises ``ValueError`` where the policy plays
  an illegal action, misses an outcome with ``p > 0`` that does not end the game, or is
  deeper than ``max_depth``.
  """
  return _exact_value(_Oracle(game), state, policy, max_depth)


def _exact_value(oracle: _Oracle, state, policy: dict, max_depth: int = 10_000) -> Fraction:
  states = jax.tree.map(lambda x: np.asarray(x)[None], state)
  levels = _evaluate_levels(oracle, states, [policy], max_depth)
  values: list[_Dyadic] = []
  for edges in reversed(levels):
    values = [_expected([(None, _Dyadic.of(p), _Dyadic.of(r), _Dyadic.of(d), i)
                         for p, r, d, i in item], values) for item in edges]
  return values[0].fraction()


@dataclasses.dataclass
class RootSolution:
  """One root's result (:func:`solve_game`).

  Attributes:
    policy: the extracted policy, ``{"action": a, "children": {outcome: node}}``, one dict per
      distinct state: histories that reach the same state share it (a DAG — walk it with a
      memo of the dicts seen, e.g. by ``id``, not history by history).
    value: its exact value (:func:`exact_value`), a :class:`fractions.Fraction`.
    lower: the certified lower bound on the optimal value: ``value``.
    upper: the certified upper bound (exact Bellman recursion over the states the search and
      the exact completion stepped, with the game's ``optimistic_value``), or ``None`` where
      the game has no optimistic value.
    proven: ``lower == upper`` exactly: ``policy`` is optimal and ``value`` is the optimum.
    search_bound, search_upper: the search's float bounds at the root (``None`` if absent).
    states: distinct states reachable from the root in the exact graph (0 for a finished
      root).
    completion: ``(state, action)`` pairs the exact completion stepped through the game for
      this root, beyond those the search expanded.
  """

  policy: dict
  value: Fraction
  lower: Fraction
  upper: Optional[Fraction]
  proven: bool
  search_bound: Optional[float]
  search_upper: Optional[float]
  states: int = 0
  completion: int = 0


@dataclasses.dataclass
class GameSolution:
  """What :func:`solve_game` found: one :class:`RootSolution` per root, and the work done
  (``simulations`` per tree, ``nodes`` over the batch, ``seconds`` of search, ``history`` per
  chunk ``(simulations, seconds, bound f64[B], upper f64[B] | None)``, the final ``trees``)."""

  roots: list
  simulations: int
  nodes: int
  seconds: float
  history: list
  trees: Any = None

  @property
  def proven(self) -> bool:
    return all(root.proven for root in self.roots)


def _meets_within(tolerance: float):
  """The loop's stopping rule on float values: the bounds are within ``tolerance`` (relative
  to the value's size). It only stops the search; "proven" is decided exactly afterwards."""
  def meets(bound, upper) -> bool:
    if upper is None or not np.isfinite(bound) or not np.isfinite(upper):
      return False
    return upper - bound <= tolerance * max(1.0, abs(upper))
  return meets


def _tree_roots(graph: _Graph, trees, row: int) -> int:
  """Adds one root's searched tree to ``graph`` (its states, and every action it expanded,
  re-stepped through the game); returns the root's id."""
  trees, row = loop._row_of(trees, row)
  count = int(np.asarray(trees.num_nodes)[row])
  states = jax.tree.map(lambda x: np.asarray(x[row])[:count], trees.nodes.state)
  ids = graph.add(states)
  slot_chance = np.asarray(trees.slots.chance[row])[:count]
  slot_action = np.asarray(trees.slots.action[row])[:count]
  nodes, slots = np.nonzero(slot_chance >= 0)
  graph.step([(ids[n], int(slot_action[n, s])) for n, s in zip(nodes, slots)])
  graph.close()
  return ids[0]


def solve_game(game: Game, estimator: Estimator, roots, *, seconds: float = 60.0,
               max_simulations: Optional[int] = None, max_nodes: int = 10_000,
               chunk: int = 64, num_slots: Optional[int] = None, tolerance: float = 1e-6,
               completion: int = 100_000, **options) -> GameSolution:
  """Solves a batch of roots of any single-agent game with chance, with exact certificates.

  The search grows a tree of histories; the exact part works on states instead: the
  searched trees are read into a graph with one entry per distinct state (identical states
  reached along different histories are shared), so its cost grows with the states, not the
  histories (a finite-horizon MDP: states × horizon), and no step of it recurses. Where the
  exact bounds read from the trees differ, an exact completion steps more of the game from
  the root (AO*-like, steered by float bounds, decided by the exact ones) until they meet or
  its budget ends.

  Args:
    game: a :class:`jaxsearch.game.Game` with ``outcome_probs``; discounts ``>= 0``. With
      ``pessimistic_value`` the search keeps an achievable bound, with ``optimistic_value``
      (admissible) an optimistic one, and the result can be proven.
    estimator: its batched estimator ``(params, key, states) -> Estimate`` (called with
      ``params=None``); its greedy action (``action_values``, else ``prior_logits``)
      completes the policy below the searched states.
    roots: ``[B]`` root states (a batched pytree).
    seconds, max_simulations: budgets (wall clock, checked between chunks and by the exact
      completion; simulations per tree). The search also stops once every root's float
      bounds are within ``tolerance`` (relative), or when the trees are full. The tolerance
      only stops the search and steers the completion: "proven" is always the exact
      equality of the bounds.
    max_nodes: nodes per tree. chunk: simulations per compiled call.
    num_slots: action slots per node (default ``None``: every action, which a proof needs
      unless the estimator gives ``action_bounds``).
    completion: the most ``(state, action)`` pairs that the exact completion may step
      through the game per root, beyond those the search expanded (``0``: none; the bounds
      are then those of the searched trees alone). Needs the game's ``optimistic_value``.
    options: the other arguments of :func:`jaxsearch.solve.loop.run` (``seed``,
      ``bound_slots``, ``max_depth``, ``selection``, ``proof_every``, ``on_chunk``...).
  Returns:
    A :class:`GameSolution`: per root the extracted policy (a DAG of nested dicts, one per
    distinct state), its exact value (the lower bound), the exact upper bound and whether
    they are equal. A finished root (no legal action) has value 0 and the empty policy
    ``{}``, proven; the other roots are searched as a batch of their own (``trees`` holds
    theirs; the finished ones' history bounds are 0).
  """
  finished = _finished_roots(game, roots)
  if finished.any():  # nothing to play at a finished root: its value is 0
    return _with_finished_roots(game, estimator, roots, finished, dict(
        seconds=seconds, max_simulations=max_simulations, max_nodes=max_nodes, chunk=chunk,
        num_slots=num_slots, tolerance=tolerance, completion=completion, **options))
  if int(completion) != completion or completion < 0:
    raise ValueError(f"solve_game: completion must be an integer >= 0, got {completion!r}")
  started = time.perf_counter()
  batch = int(jax.tree.leaves(roots)[0].shape[0])
  problem = loop.Problem(game=game, estimator=estimator)
  found, trees = loop.run(problem, roots, weights=np.ones(batch), meets=_meets_within(tolerance),
                          seconds=seconds, max_simulations=max_simulations,
                          max_nodes=max_nodes, chunk=chunk, num_slots=num_slots, **options)
  trees = jax.tree.map(np.asarray, trees)
  oracle = _Oracle(game, estimator)
  graph = _Graph(oracle)  # shared by the roots: a state met from one is known to all
  root_ids = [_tree_roots(graph, trees, row) for row in range(batch)]
  deadline = started + seconds
  solutions = []
  for row, root in enumerate(root_ids):
    stepped = graph.complete(root, int(completion), deadline, tolerance) if completion else 0
    policy = graph.policy(root)
    value = _exact_value(oracle, jax.tree.map(lambda x: np.asarray(x)[row], roots), policy)
    if value != graph.lower(root)[0][root].fraction():
      raise AssertionError("the extracted policy's value differs from its evaluation")
    upper = None if graph.optimistic[root] is None else graph.upper(root)[root].fraction()
    bound, top = found["bound"][row], None if found["upper"] is None else found["upper"][row]
    solutions.append(RootSolution(
        policy=policy, value=value, lower=value, upper=upper,
        proven=upper is not None and value == upper,
        search_bound=None if not np.isfinite(bound) else float(bound),
        search_upper=None if top is None else float(top),
        states=len(graph.order(root)), completion=stepped))
  return GameSolution(roots=solutions, simulations=found["simulations"], nodes=found["nodes"],
                      seconds=found["seconds"], history=found["history"], trees=trees)


def _finished_roots(game: Game, roots) -> np.ndarray:
  """``bool[B]``: the roots with no legal action (finished games)."""
  legal = np.asarray(jax.vmap(game.legal_actions)(roots))
  return ~legal.reshape(legal.shape[0], -1).any(axis=1)


def _with_finished_roots(game: Game, estimator: Estimator, roots, finished: np.ndarray,
                         options: dict) -> GameSolution:
  """:func:`solve_game` of a batch where the roots ``finished`` have no legal action: each is
  worth 0 with the empty policy, proven; the others are solved as a batch of their own."""
  def done():
    return RootSolution(policy={}, value=Fraction(0), lower=Fraction(0), upper=Fraction(0),
                        proven=True, search_bound=None, search_upper=None)
  rest = np.flatnonzero(~finished)
  if not len(rest):
    return GameSolution(roots=[done() for _ in finished], simulations=0, nodes=0,
                        seconds=0.0, history=[], trees=None)
  solved = solve_game(game, estimator, jax.tree.map(lambda x: np.asarray(x)[rest], roots),
                      **options)
  solutions = [done() for _ in finished]
  for row, solution in zip(rest, solved.roots):
    solutions[row] = solution

  def widened(values):  # f64[B'] -> f64[B], 0 at the finished roots
    if values is None:
      return None
    full = np.zeros(len(finished))
    full[rest] = values
    return full

  history = [(sims, secs, widened(bound), widened(upper))
             for sims, secs, bound, upper in solved.history]
  return dataclasses.replace(solved, roots=solutions, history=history)
