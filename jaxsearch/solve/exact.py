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
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.solve import checkpoint as checkpoint_lib
from jaxsearch.solve import chunked
from jaxsearch.solve.options import SolveOptions
from jaxsearch.solve.dyadic import Dyadic, expected
from jaxsearch.solve.game_identity import check_key, game_identity
from jaxsearch.solve.game_numbers import (
    INFINITE, BadGameNumber, check_transitions, describe_state)
from jaxsearch.solve.state_graph import StateGraph, Oracle, state_keys, take
from jaxsearch.solve.tree_reader import TreeReader

def _child(node: dict, outcome: int):
  children = node.get("children") or {}
  child = children.get(outcome, children.get(str(outcome)))
  return child


def _evaluate_levels(oracle: Oracle, states, nodes: list, max_depth: int):
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
    check_transitions(probs, rewards, discounts, states, actions)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
    next_keys = state_keys(flat)
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
    nodes, states = next_nodes, take(flat, np.array(rows, np.int64))
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
  return _exact_value(Oracle(game), state, policy, max_depth)


def _exact_value(oracle: Oracle, state, policy: dict, max_depth: int = 10_000) -> Fraction:
  states = jax.tree.map(lambda x: np.asarray(x)[None], state)
  levels = _evaluate_levels(oracle, states, [policy], max_depth)
  values: list[Dyadic] = []
  for edges in reversed(levels):
    values = [expected([(None, Dyadic.of(p), Dyadic.of(r), Dyadic.of(d), i)
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
      the game has no optimistic value, or where its optimistic values leave the root
      unbounded (``+inf`` at states the graph did not open further).
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
  chunk ``(simulations, seconds, bound f64[B], upper f64[B] | None)``, the final ``trees``:
  one batch of one tree per searched root)."""

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


def _tree_roots(graph: StateGraph, tree) -> int:
  """Adds one root's searched tree (a batch of one) to ``graph`` (its states, and every
  action it expanded, re-stepped through the game); returns the root's id."""
  reader = TreeReader(tree)
  count = reader.num_nodes
  ids = graph.add(jax.tree.map(lambda x: x[:count], reader.states))
  nodes, slots = np.nonzero(reader.slot_chance[:count] >= 0)
  graph.step([(ids[n], int(reader.slot_action[n, s])) for n, s in zip(nodes, slots)])
  graph.close()
  return ids[0]


def solve_game(game: Game, estimator: Estimator, roots, *, seconds: float = 60.0,
               max_simulations: Optional[int] = None, max_nodes: int = 10_000,
               chunk: int = 64, num_slots: Optional[int] = None, tolerance: float = 1e-6,
               completion: int = 100_000, on_chunk=None, game_key: Any = None,
               options: Optional[SolveOptions] = None, **keywords) -> GameSolution:
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
    on_chunk: called after every chunk with the search's progress.
    game_key: JSON-able data naming the game (``"garnet seed 1"``, ``{"seed": 1}``): part
      of a checkpoint's fingerprint, beside a digest of what the game and the estimator do
      from the roots (:mod:`jaxsearch.solve.game_identity`), so that a checkpoint of another
      game is refused, saying what differs. The digest samples the game near the roots: give
      a key where two games could agree there.
    options, keywords: the other :class:`~jaxsearch.solve.options.SolveOptions` (``seed``,
      ``bound_slots``, ``max_depth``, ``selection``, ``proof_every``, ``devices``,
      ``checkpoint``...), as an object or flat keywords; the arguments above replace its
      fields.
  Returns:
    A :class:`GameSolution`: per root the extracted policy (a DAG of nested dicts, one per
    distinct state), its exact value (the lower bound), the exact upper bound and whether
    they are equal. A finished root (no legal action) has value 0 and the empty policy
    ``{}``, proven; the other roots are searched as a batch of their own (``trees`` holds
    theirs; the finished ones' history bounds are 0).

  Every bound the game gives is checked where the solver meets it (at the roots before the
  search, at every state of the exact graph after it): NaN is refused, and so are an
  optimistic ``-inf`` or a pessimistic ``+inf`` where a legal action is, and non-finite
  rewards, discounts or probabilities (:class:`~jaxsearch.solve.game_numbers.BadGameNumber`,
  a ``ValueError`` naming the state). An optimistic ``+inf`` is admissible and means no
  information: the exact completion opens the game below it.
  Raises:
    TypeError: an unknown keyword. ValueError: a bad option, before any work; a bad bound
      (see above). CheckpointError: see :class:`jaxsearch.solve.checkpoint.Checkpoint`
      (another live run holds the directory, another game's or options' checkpoint...).
  """
  if isinstance(completion, bool) or int(completion) != completion or completion < 0:
    raise ValueError(f"solve_game: completion must be an integer >= 0, got {completion!r}")
  game_key = check_key(game_key)
  if options is not None and not isinstance(options, SolveOptions):
    raise TypeError(f"solve_game: options must be a SolveOptions, got {options!r}")
  options = (options or SolveOptions()).override(
      "solve_game", seconds=seconds, max_simulations=max_simulations, max_nodes=max_nodes,
      chunk=chunk, num_slots=num_slots, **keywords)
  return _solve_game(game, estimator, roots, options, float(tolerance), int(completion),
                     on_chunk, game_key)


def _solve_game(game: Game, estimator: Estimator, roots, options: SolveOptions,
                tolerance: float, completion: int, on_chunk, game_key=None) -> GameSolution:
  """:func:`solve_game`, its options validated."""
  finished = _finished_roots(game, roots)
  if finished.any():  # nothing to play at a finished root: its value is 0
    return _with_finished_roots(game, estimator, roots, finished, options, tolerance,
                                completion, on_chunk, game_key)
  started = time.perf_counter()
  batch = int(jax.tree.leaves(roots)[0].shape[0])
  problem = chunked.Problem(game=game, estimator=estimator)
  checkpointing = options.checkpointing
  # The directory's lock first (a second run is refused before any work), then the game's
  # bounds at the roots, then the game's identity (the checkpoint's fingerprint).
  store = None if checkpointing.directory is None else checkpoint_lib.Checkpoint(
      checkpointing.directory, resume=checkpointing.resume)
  oracle = Oracle(game, estimator)
  try:
    _check_roots(oracle, estimator, roots)
    if store is not None:
      store.identity = {"game": game_identity(game, estimator, roots, game_key)}
    found = chunked.run(problem, roots, options, weights=np.ones(batch),
                     meets=_meets_within(tolerance), on_chunk=on_chunk, checkpoint=store)
  finally:
    if store is not None:
      store.close()
  graph = StateGraph(oracle)  # shared by the roots: a state met from one is known to all
  root_ids = [_tree_roots(graph, tree) for tree in found.trees]
  deadline = started + options.budget.seconds
  solutions = []
  for row, root in enumerate(root_ids):
    stepped = graph.complete(root, completion, deadline, tolerance) if completion else 0
    policy = graph.policy(root)
    value = _exact_value(oracle, jax.tree.map(lambda x: np.asarray(x)[row], roots), policy)
    if value != graph.lower(root)[0][root].fraction():
      raise AssertionError("the extracted policy's value differs from its evaluation")
    upper = None if graph.optimistic[root] is None else graph.upper(root)[root]
    upper = None if upper is None or upper is INFINITE else upper.fraction()
    bound, top = found.bound[row], None if found.upper is None else found.upper[row]
    solutions.append(RootSolution(
        policy=policy, value=value, lower=value, upper=upper,
        proven=upper is not None and value == upper,
        search_bound=None if not np.isfinite(bound) else float(bound),
        search_upper=None if top is None else float(top),
        states=len(graph.order(root)), completion=stepped))
  return GameSolution(roots=solutions, simulations=found.simulations, nodes=found.nodes,
                      seconds=found.seconds, history=found.history, trees=found.trees)


def _check_roots(oracle: Oracle, estimator: Estimator, roots) -> None:
  """Refuses, before the search, a bad bound of the game at the roots
  (:mod:`jaxsearch.solve.game_numbers`), or a NaN among the estimator's ``action_bounds``
  there."""
  roots = jax.tree.map(np.asarray, roots)
  oracle.check_bounds(roots, oracle.legal(roots))
  bounds = jax.jit(lambda s: estimator(None, jax.random.PRNGKey(0), s).action_bounds)(roots)
  if bounds is not None and np.isnan(np.asarray(bounds)).any():
    row, action = (int(i) for i in np.argwhere(np.isnan(np.asarray(bounds)))[0])
    raise BadGameNumber(f"the estimator's action_bounds is nan for action {action} at the "
                        f"root {describe_state(roots, row)}: NaN is no bound")


def _finished_roots(game: Game, roots) -> np.ndarray:
  """``bool[B]``: the roots with no legal action (finished games)."""
  legal = np.asarray(jax.vmap(game.legal_actions)(roots))
  return ~legal.reshape(legal.shape[0], -1).any(axis=1)


def _with_finished_roots(game: Game, estimator: Estimator, roots, finished: np.ndarray,
                         options: SolveOptions, tolerance: float, completion: int,
                         on_chunk, game_key=None) -> GameSolution:
  """:func:`solve_game` of a batch where the roots ``finished`` have no legal action: each is
  worth 0 with the empty policy, proven; the others are solved as a batch of their own."""
  def done():
    return RootSolution(policy={}, value=Fraction(0), lower=Fraction(0), upper=Fraction(0),
                        proven=True, search_bound=None, search_upper=None)
  rest = np.flatnonzero(~finished)
  if not len(rest):
    return GameSolution(roots=[done() for _ in finished], simulations=0, nodes=0,
                        seconds=0.0, history=[], trees=None)
  solved = _solve_game(game, estimator, jax.tree.map(lambda x: np.asarray(x)[rest], roots),
                       options, tolerance, completion, on_chunk, game_key)
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
