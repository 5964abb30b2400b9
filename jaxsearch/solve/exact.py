"""Solving any game with chance, certified in exact rational arithmetic.

:func:`solve_game` searches a batch of roots of any :class:`jaxsearch.game.Game` (single-agent:
discounts ``>= 0``, with ``outcome_probs``, and ideally ``pessimistic_value`` and
``optimistic_value``) with the solver's loop, then, per root, in :class:`fractions.Fraction`
of the game's own float32 numbers (floats are dyadic rationals, so this is exact arithmetic on
the game's rewards, discounts and probabilities):

* **extracts** the best policy the tree holds: at every expanded node the better, exactly, of
  each expanded action (completed recursively the same way) and the estimator-greedy policy;
  below the tree, the estimator-greedy policy;
* **evaluates** it (:func:`exact_value`): every outcome with ``p > 0`` enumerated through
  ``game.step`` — the **lower bound**, a value some policy reaches;
* computes an **upper bound** by a Bellman recursion over the tree's expanded nodes, where an
  unexpanded node, and any legal action not expanded at an expanded node, is bounded by the
  game's admissible ``optimistic_value`` (and every node by its own);
* says **proven** iff the two are equal, exactly.

The policy is a plain nested structure: ``{"action": a, "children": {outcome: node}}``, one
child for every outcome with ``p > 0`` that does not end the game.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.solve import loop

_MIN_BUCKET = 64  # batches are padded to 64, 256, 1024... rows: few shapes to compile


def _fraction(x) -> Fraction:
  return Fraction(float(x))  # float32 -> float64 is exact, and so is Fraction(float)


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


class _Greedy:
  """The estimator-greedy policy from any state, valued exactly (memoised by state)."""

  def __init__(self, oracle: _Oracle):
    self.oracle = oracle
    self.graph: dict[tuple, tuple[int, list]] = {}  # key -> (action, [(o, p, r, d, child)])
    self.values: dict[tuple, Fraction] = {}

  def explore(self, states) -> list[tuple]:
    """Records the greedy policy below every state of a batch; returns their keys."""
    keys = _keys(states)
    frontier = {}
    ends = ~self.oracle.legal(states).any(axis=-1)
    for i, key in enumerate(keys):
      if ends[i]:
        self.graph.setdefault(key, (-1, []))  # a terminal state: nothing to play, value 0
      elif key not in self.graph:
        frontier.setdefault(key, i)
    batch = _take(states, np.array(list(frontier.values()), np.int64))
    while frontier:
      actions = self.oracle.greedy(batch)
      probs, rewards, discounts, terminal, following = self.oracle.transitions(batch, actions)
      next_keys = _keys(jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following))
      queued, rows = {}, []
      for i, key in enumerate(frontier):
        edges = []
        for o in np.flatnonzero(probs[i] > 0):
          flat = i * probs.shape[1] + o
          child = None if terminal[i, o] else next_keys[flat]
          edges.append((int(o), probs[i, o], rewards[i, o], discounts[i, o], child))
          if child is not None and child not in self.graph and child not in frontier \
              and child not in queued:
            queued[child] = flat
        self.graph[key] = (int(actions[i]), edges)
      flat_states = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
      frontier = queued
      batch = _take(flat_states, np.array(list(queued.values()), np.int64))
    return keys

  def value(self, key: tuple) -> Fraction:
    """The greedy policy's exact value from an explored state (post-order, no recursion)."""
    stack, active = [key], set()
    while stack:
      top = stack[-1]
      if top in self.values:
        stack.pop()
        continue
      _, edges = self.graph[top]
      pending = [c for *_, c in edges if c is not None and c not in self.values]
      if pending:
        if top in active:
          raise ValueError("the greedy policy revisits a state: exact evaluation needs a "
                           "game that ends (e.g. a finite horizon)")
        active.add(top)
        stack.extend(pending)
        continue
      self.values[top] = sum((_fraction(p) * (_fraction(r) + _fraction(d) *
                                              (0 if c is None else self.values[c]))
                              for _, p, r, d, c in edges), Fraction(0))
      stack.pop()
    return self.values[key]

  def policy(self, key: tuple) -> dict:
    action, edges = self.graph[key]
    return {"action": action, "children": {o: self.policy(c) for o, _, _, _, c in edges
                                           if c is not None}}


def _child(node: dict, outcome: int):
  children = node.get("children") or {}
  child = children.get(outcome, children.get(str(outcome)))
  return child


def _evaluate_levels(oracle: _Oracle, states, nodes: list, max_depth: int):
  """Walks a policy level by level through ``game.step``: per level, the edges of every
  item ``[(p, r, d, next item index or None)]``."""
  levels = []
  for _ in range(max_depth + 1):
    if not nodes:
      return levels
    actions = np.array([node["action"] for node in nodes], np.int64)
    legal = oracle.legal(states)
    bad = [i for i, a in enumerate(actions) if not (0 <= a < legal.shape[1] and legal[i, a])]
    if bad:
      raise ValueError(f"the policy plays action {actions[bad[0]]}, which is not legal "
                       f"there (or the state is terminal)")
    probs, rewards, discounts, terminal, following = oracle.transitions(states, actions)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
    edges, next_nodes, rows = [], [], []
    for i, node in enumerate(nodes):
      item = []
      for o in np.flatnonzero(probs[i] > 0):
        index = None
        if not terminal[i, o]:
          child = _child(node, int(o))
          if child is None:
            raise ValueError(f"the policy has no child for outcome {int(o)} after action "
                             f"{int(actions[i])} (probability {float(probs[i, o])})")
          index = len(next_nodes)
          next_nodes.append(child)
          rows.append(i * probs.shape[1] + o)
        item.append((probs[i, o], rewards[i, o], discounts[i, o], index))
      edges.append(item)
    levels.append(edges)
    nodes, states = next_nodes, _take(flat, np.array(rows, np.int64))
  raise ValueError(f"the policy is deeper than {max_depth} moves")


def exact_value(game: Game, state, policy: dict, *, max_depth: int = 10_000) -> Fraction:
  """The exact value of ``policy`` from ``state`` (one unbatched state), mover's view.

  Every outcome with ``p > 0`` of every decision is enumerated through ``game.outcome_probs``
  and ``game.step``, in :class:`fractions.Fraction` of the game's float32 probabilities,
  rewards and discounts: ``V(node) = Σ_o p_o (r_o + d_o · V(child_o))``, 0 after an outcome
  that ends the game. Raises ``ValueError`` where the policy plays an illegal action, misses
  an outcome with ``p > 0`` that does not end the game, or is deeper than ``max_depth``.
  """
  return _exact_value(_Oracle(game), state, policy, max_depth)


def _exact_value(oracle: _Oracle, state, policy: dict, max_depth: int = 10_000) -> Fraction:
  states = jax.tree.map(lambda x: np.asarray(x)[None], state)
  levels = _evaluate_levels(oracle, states, [policy], max_depth)
  values: list[Fraction] = []
  for edges in reversed(levels):
    values = [sum((_fraction(p) * (_fraction(r) + _fraction(d) *
                                   (0 if i is None else values[i]))
                   for p, r, d, i in item), Fraction(0)) for item in edges]
  return values[0]


@dataclasses.dataclass
class _Edge:
  """An expanded action of a tree node, re-stepped through the game: per outcome with
  ``p > 0``, ``(o, p, r, d, child node or -1, key of the next state or None if terminal)``."""

  outcomes: list


class _ExactTree:
  """One root's tree (numpy), its transitions re-computed by the game, read exactly."""

  def __init__(self, oracle: _Oracle, greedy: _Greedy, trees, row: int):
    trees, row = loop._row_of(trees, row)
    take = lambda x: np.asarray(x[row])  # noqa: E731
    self.oracle, self.greedy = oracle, greedy
    count = int(np.asarray(trees.num_nodes)[row])
    self.states = jax.tree.map(lambda x: np.asarray(x[row])[:count], trees.nodes.state)
    self.keys = _keys(self.states)
    self.legal = oracle.legal(self.states)
    optimistic = oracle.optimistic(self.states)
    self.optimistic = None if optimistic is None else [_fraction(x) for x in optimistic]
    self.edges: list[dict[int, _Edge]] = [{} for _ in range(count)]
    self.outside: dict[tuple, Fraction] = {}  # optimistic bounds of next states not held
    greedy.explore(self.states)
    slot_chance, slot_action = take(trees.slots.chance)[:count], take(trees.slots.action)[:count]
    self._expand(np.argwhere(slot_chance >= 0), slot_action, slot_chance,
                 take(trees.chance.child))
    self._best: dict[int, tuple[Fraction, Optional[int]]] = {}
    self._upper: dict[int, Fraction] = {}

  def _expand(self, pairs, slot_action, slot_chance, chance_child):
    """Re-steps every expanded ``(node, action)`` through the game; a tree child is used
    where its state is the game's next state."""
    if len(pairs) == 0:
      return
    nodes, slots = pairs[:, 0], pairs[:, 1]
    actions = slot_action[nodes, slots]
    probs, rewards, discounts, terminal, following = self.oracle.transitions(
        _take(self.states, nodes), actions)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
    next_keys = _keys(flat)
    missing = []
    for k, (node, slot) in enumerate(zip(nodes, slots)):
      outcomes = []
      for o in np.flatnonzero(probs[k] > 0):
        key = None if terminal[k, o] else next_keys[k * probs.shape[1] + o]
        child = int(chance_child[slot_chance[node, slot], o])
        if key is not None and (child < 0 or self.keys[child] != key):
          child = -1
          missing.append(k * probs.shape[1] + o)
        outcomes.append((int(o), probs[k, o], rewards[k, o], discounts[k, o], child, key))
      self.edges[int(node)][int(actions[k])] = _Edge(outcomes)
    if missing:  # next states the tree does not hold: the greedy policy and the bound
      rows = _take(flat, np.array(missing, np.int64))
      self.greedy.explore(rows)
      bounds = self.oracle.optimistic(rows)
      for key, bound in zip(_keys(rows), [] if bounds is None else bounds):
        self.outside[key] = _fraction(bound)

  def terminal(self, node: int) -> bool:
    return not self.legal[node].any()

  def _q(self, edge: _Edge, child_value) -> Fraction:
    return sum((_fraction(p) * (_fraction(r) + _fraction(d) *
                                (0 if key is None else child_value(child, key)))
                for _, p, r, d, child, key in edge.outcomes), Fraction(0))

  def best(self, node: int) -> tuple[Fraction, Optional[int]]:
    """``(exact value, action or None)`` of the best policy from ``node``: an expanded action
    completed the same way, or (``None``) the greedy policy, whichever is better."""
    if node not in self._best:
      choice = (self.greedy.value(self.keys[node]), None)
      for action, edge in self.edges[node].items():
        if self.legal[node, action]:
          value = self._q(edge, lambda child, key: (
              self.best(child)[0] if child >= 0 else self.greedy.value(key)))
          if value > choice[0]:
            choice = (value, action)
      self._best[node] = choice
    return self._best[node]

  def policy(self, node: int) -> dict:
    _, action = self.best(node)
    if action is None:
      return self.greedy.policy(self.keys[node])
    return {"action": action, "children": {
        o: self.policy(child) if child >= 0 else self.greedy.policy(key)
        for o, _, _, _, child, key in self.edges[node][action].outcomes if key is not None}}

  def upper(self, node: int) -> Fraction:
    """An exact upper bound on the optimal value from ``node``: the Bellman recursion over
    the expanded actions, the game's optimistic value for every other legal action and
    every state below the tree, min'd with the node's own optimistic value."""
    if node in self._upper:
      return self._upper[node]
    if self.terminal(node):
      return Fraction(0)
    own = self.optimistic[node]
    best = None
    for action in np.flatnonzero(self.legal[node]):
      edge = self.edges[node].get(int(action))
      if edge is None:
        value = own
      else:
        if any(d < 0 for _, _, _, d, _, _ in edge.outcomes):
          raise ValueError("exact certificates are for single-agent games: a negative "
                           "discount (alternating players) was met")
        value = self._q(edge, lambda child, key: (
            self.upper(child) if child >= 0 else self.outside[key]))
      best = value if best is None else max(best, value)
    self._upper[node] = bound = min(own, best)
    return bound


@dataclasses.dataclass
class RootSolution:
  """One root's result (:func:`solve_game`).

  Attributes:
    policy: the extracted policy, ``{"action": a, "children": {outcome: node}}``.
    value: its exact value (:func:`exact_value`), a :class:`fractions.Fraction`.
    lower: the certified lower bound on the optimal value: ``value``.
    upper: the certified upper bound (exact Bellman recursion over the tree with the game's
      ``optimistic_value``), or ``None`` where the game has no optimistic value.
    proven: ``lower == upper`` exactly: ``policy`` is optimal and ``value`` is the optimum.
    search_bound, search_upper: the search's float bounds at the root (``None`` if absent).
  """

  policy: dict
  value: Fraction
  lower: Fraction
  upper: Optional[Fraction]
  proven: bool
  search_bound: Optional[float]
  search_upper: Optional[float]


@dataclasses.dataclass
class GameSolution:
  """What :func:`solve_game` found: one :class:`RootSolution` per root, and the work done
  (``simulations`` per tree, ``nodes`` over the batch, ``seconds``, ``history`` per chunk
  ``(simulations, seconds, bound f64[B], upper f64[B] | None)``, the final ``trees``)."""

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


def solve_game(game: Game, estimator: Estimator, roots, *, seconds: float = 60.0,
               max_simulations: Optional[int] = None, max_nodes: int = 10_000,
               chunk: int = 64, num_slots: Optional[int] = None, tolerance: float = 1e-6,
               **options) -> GameSolution:
  """Solves a batch of roots of any single-agent game with chance, with exact certificates.

  Args:
    game: a :class:`jaxsearch.game.Game` with ``outcome_probs``; discounts ``>= 0``. With
      ``pessimistic_value`` the search keeps an achievable bound, with ``optimistic_value``
      (admissible) an optimistic one, and the result can be proven.
    estimator: its batched estimator ``(params, key, states) -> Estimate`` (called with
      ``params=None``); its greedy action (``action_values``, else ``prior_logits``)
      completes the policy below the searched nodes.
    roots: ``[B]`` root states (a batched pytree).
    seconds, max_simulations: budgets (wall clock, checked between chunks; simulations per
      tree). The search also stops once every root's float bounds are within
      ``tolerance`` (relative), or when the trees are full.
    max_nodes: nodes per tree. chunk: simulations per compiled call.
    num_slots: action slots per node (default ``None``: every action, which a proof needs
      unless the estimator gives ``action_bounds``).
    options: the other arguments of :func:`jaxsearch.solve.loop.run` (``seed``,
      ``bound_slots``, ``max_depth``, ``selection``, ``proof_every``, ``on_chunk``...).
  Returns:
    A :class:`GameSolution`: per root the extracted policy, its exact value (the lower
    bound), the exact upper bound and whether they are equal.
  """
  batch = int(jax.tree.leaves(roots)[0].shape[0])
  problem = loop.Problem(game=game, estimator=estimator)
  found, trees = loop.run(problem, roots, weights=np.ones(batch), meets=_meets_within(tolerance),
                          seconds=seconds, max_simulations=max_simulations,
                          max_nodes=max_nodes, chunk=chunk, num_slots=num_slots, **options)
  trees = jax.tree.map(np.asarray, trees)
  oracle = _Oracle(game, estimator)
  greedy = _Greedy(oracle)
  solutions = []
  for row in range(batch):
    tree = _ExactTree(oracle, greedy, trees, row)
    policy = tree.policy(0)
    value = _exact_value(oracle, jax.tree.map(lambda x: np.asarray(x)[row], roots), policy)
    if value != tree.best(0)[0]:
      raise AssertionError("the extracted policy's value differs from its evaluation")
    upper = None if tree.optimistic is None else tree.upper(0)
    bound, top = found["bound"][row], None if found["upper"] is None else found["upper"][row]
    solutions.append(RootSolution(
        policy=policy, value=value, lower=value, upper=upper,
        proven=upper is not None and value == upper,
        search_bound=None if not np.isfinite(bound) else float(bound),
        search_upper=None if top is None else float(top)))
  return GameSolution(roots=solutions, simulations=found["simulations"], nodes=found["nodes"],
                      seconds=found["seconds"], history=found["history"], trees=trees)
