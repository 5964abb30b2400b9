"""Ready-made searches: configuration in, ``(params, key, root, tree=None) -> PolicyOutput``.

    search = js.policies.puct(connect_four.GAME, js.estimators.uniform(), num_simulations=64)
    out = jax.jit(search)(None, key, states)          # states: a batch [B, ...]
    out.action, out.action_weights, out.root_value, out.q_values, out.tree
    tree = js.tree.reroot(out.tree, out.action)       # reuse the subtree for the next move
    out = jax.jit(search)(None, key, next_states, tree)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import search as search_lib
from jaxsearch import selection as selection_lib
from jaxsearch.game import Estimator, Game, per_item_keys
from jaxsearch.model import Model, from_game
from jaxsearch.selection.base import QTransform, SelectionRule, masked_argmax, q_minmax
from jaxsearch.tree import Tree


@struct.dataclass
class PolicyOutput:
  """What a search returns (``B`` searches, ``A`` actions).

  Attributes:
    action: ``i32[B]`` the chosen action; ``-1`` where the root has no legal action.
    action_weights: ``f32[B, A]`` visit counts to the power ``1/τ``, normalised (one-hot of
      the most visited action at ``τ = 0``; all zeros without a legal action).
    visit_counts: ``i32[B, A]`` root visit counts (with a reused tree they include the
      visits of earlier searches, so they can add up to more than ``num_simulations``).
    root_value: ``f32[B]`` the root's backed-up value (mover's view; 0 if terminal).
    q_values: ``f32[B, A]`` Q at the root; unvisited or illegal actions get ``root_value``.
      With the Bellman backup (AVTS): the debiased q̂3 of every active slot.
    tree: the searched trees (pass to :func:`jaxsearch.tree.reroot` to reuse them).
    root_bound: ``f32[B]`` the achievable bound at the root — the exact value of a concrete
      policy the tree holds, a certified lower bound on the optimal value (upper bound on
      cost) that never decreases as the search goes on — or ``None`` when the game supplies
      no ``pessimistic_value``.
    root_solved: ``bool[B]`` the root's value is exact (Bellman backup: every reachable
      state below it was expanded to the end) — within the searched actions: with a cutoff
      ``K < A``, or actions the estimator declared never optimal (q̂1 = ``-inf``), exact over
      those kept; always False with the running-mean backup.
    root_upper: ``f32[B]`` the optimistic bound at the root (Bellman backup, games with an
      ``optimistic_value``): no policy does better. ``root_upper - root_bound <= tolerance``
      certifies that the achievable policy is optimal. ``None`` without one.
  """

  action: jax.Array
  action_weights: jax.Array
  visit_counts: jax.Array
  root_value: jax.Array
  q_values: jax.Array
  tree: Tree
  root_bound: Optional[jax.Array] = None
  root_solved: Optional[jax.Array] = None
  root_upper: Optional[jax.Array] = None


def root_summary(tree: Tree, num_actions: int, temperature: float, key,
                 config: Optional[search_lib.SearchConfig] = None,
                 has_bound: bool = False, has_upper: bool = False) -> PolicyOutput:
  """Turns the roots of ``tree`` into a :class:`PolicyOutput`.

  The greedy action is the most visited, ties broken by Q — with the Bellman backup
  (``config.bellman``) by the debiased q̂3, which ``q_values`` then reports for every active
  slot, and solved slots (exact values, no more visits) compete too. Measured on Garnet MDPs (``scripts/bench_sample_efficiency.py``): under Thompson
  sampling the argmax of q̂3 flips between lightly visited actions and recommends worse
  actions than the visit counts, which estimate each action's chance of being the best.
  """
  bellman = config is not None and config.bellman
  batch_ids = jnp.arange(tree.batch_size)[:, None]
  actions = tree.slot_action[:, 0]
  legal_slots = tree.slot_legal[:, 0]
  visits = jnp.zeros((tree.batch_size, num_actions), jnp.int32).at[batch_ids, actions].add(
      jnp.where(legal_slots, tree.slot_visits[:, 0], 0))
  legal = jnp.zeros((tree.batch_size, num_actions), bool).at[batch_ids, actions].max(
      legal_slots)
  visited = jnp.zeros((tree.batch_size, num_actions), bool).at[batch_ids, actions].max(
      legal_slots & (tree.slot_visits[:, 0] > 0))
  slot_q = jnp.zeros((tree.batch_size, num_actions), jnp.float32).at[batch_ids, actions].add(
      jnp.where(legal_slots, tree.slot_value[:, 0], 0.0))
  root_value = tree.node_value[:, 0]
  most = jnp.max(jnp.where(legal, visits, -1), axis=-1, keepdims=True)
  if bellman:
    active_slots = legal_slots & (jnp.arange(tree.num_slots) < tree.node_num_active[:, [0]])
    debiased, _ = jax.vmap(functools.partial(search_lib.slot_estimates, config=config))(
        search_lib.node_stats(tree, jnp.arange(tree.batch_size), 0), tree.slot_value[:, 0],
        tree.slot_visits[:, 0], tree.slot_solved[:, 0], tree.node_num_active[:, 0])
    active = jnp.zeros((tree.batch_size, num_actions), bool).at[batch_ids, actions].max(
        active_slots)
    slot_q3 = jnp.zeros((tree.batch_size, num_actions), jnp.float32).at[
        batch_ids, actions].add(jnp.where(active_slots, debiased, 0.0))
    q_values = jnp.where(active, slot_q3, root_value[:, None])
    # A solved slot's value is exact but it gets no more visits (the descent skips it), so
    # it competes on value with the most visited ones.
    solved = jnp.zeros((tree.batch_size, num_actions), bool).at[batch_ids, actions].max(
        active_slots & tree.slot_solved[:, 0])
    candidates = legal & ((visits == most) | solved)
  else:
    q_values = jnp.where(visited, slot_q, root_value[:, None])
    candidates = legal & (visits == most)
  # Most visited, ties broken by Q (q̂3 with the Bellman backup), then by index.
  greedy = jax.vmap(masked_argmax)(q_values, candidates)
  has_action = jnp.any(legal, axis=-1)
  if temperature == 0.0:
    weights = jax.nn.one_hot(greedy, num_actions, dtype=jnp.float32)
    action = greedy
  else:
    counts = visits.astype(jnp.float32)
    scaled = jnp.where(legal & (counts > 0),
                       jnp.exp((jnp.log(jnp.maximum(counts, 1.0)) -
                                jnp.log(jnp.maximum(most, 1)).astype(jnp.float32)) / temperature),
                       0.0)
    weights = scaled / jnp.maximum(jnp.sum(scaled, axis=-1, keepdims=True), 1e-30)
    sampled = jax.vmap(jax.random.categorical)(
        per_item_keys(key, tree.batch_size),
        jnp.where(weights > 0, jnp.log(weights), -jnp.inf))
    action = jnp.where(jnp.any(weights > 0, axis=-1), sampled, greedy)
  weights = jnp.where(has_action[:, None], weights, 0.0)
  action = jnp.where(has_action, action, -1).astype(jnp.int32)
  return PolicyOutput(action=action, action_weights=weights, visit_counts=visits,
                      root_value=root_value, q_values=q_values, tree=tree,
                      root_bound=tree.node_bound[:, 0] if has_bound else None,
                      root_solved=tree.node_solved[:, 0],
                      root_upper=tree.node_upper[:, 0] if has_upper and bellman else None)


@dataclasses.dataclass(frozen=True)
class Search:
  """A configured search. Call it (under ``jax.jit`` if you like) as
  ``search(params, key, root, tree=None)``.

  Args of the call:
    params: the estimator's parameters (``None`` for parameter-free estimators).
    key: a PRNG key.
    root: the root states, a state pytree with leading ``[B]``.
    tree: optional trees from a previous search, usually ``jaxsearch.tree.reroot(...)``ed;
      rows with ``num_nodes == 0`` start afresh from ``root``. The caller guarantees that a
      kept tree's root is the state in ``root``. Reuse needs room: size ``max_nodes`` for
      the kept subtree plus ``num_simulations`` new nodes; a tree that fills up stops growing
      (``tree.num_nodes == max_nodes``) and its simulations re-back existing nodes.
  """

  model: Model
  config: search_lib.SearchConfig
  temperature: float = 0.0

  def __post_init__(self):
    if self.temperature < 0:
      raise ValueError(f"temperature must be >= 0, got {self.temperature}")

  def init_tree(self, params, key, root) -> Tree:
    """Fresh trees for ``root`` (``[B]`` states) of exactly the shapes this search uses.

    Passing a tree on every call (this one first, then ``reroot``-ed ones) keeps one compiled
    program instead of two (``tree=None`` and ``tree=Tree`` trace differently).
    """
    return search_lib.init_tree(self.model, self.config, params, key, root)

  def __call__(self, params, key, root, tree: Optional[Tree] = None) -> PolicyOutput:
    search_key, action_key = jax.random.split(key)
    tree = search_lib.run(self.model, self.config, params, search_key, root, tree)
    return root_summary(tree, self.model.num_actions, self.temperature, action_key,
                        self.config, self.model.has_bound, self.model.has_upper)


def _model(game: Optional[Game], estimator: Optional[Estimator], model: Optional[Model]) -> Model:
  if model is not None:
    if game is not None or estimator is not None:
      raise ValueError("pass either model=... or game and estimator, not both")
    return model
  if game is None or estimator is None:
    raise ValueError("a search needs a game and an estimator (or model=...)")
  return from_game(game, estimator)


def custom(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
           selection: SelectionRule, num_simulations: int, max_nodes: Optional[int] = None,
           max_depth: Optional[int] = None, dirichlet_fraction: float = 0.0,
           dirichlet_alpha: float = 0.3, temperature: float = 0.0,
           outcome_rule: str = "balanced", model: Optional[Model] = None,
           backup: str = "mean", num_slots: Optional[int] = None, widening: bool = False,
           debias: bool = True, variance: str = "avts", num_buckets: int = 32) -> Search:
  """A search with any selection rule and either backup (see
  :class:`jaxsearch.search.SearchConfig` for every option).

  Defaults: ``max_nodes = num_simulations + 1`` for the running-mean backup and
  ``num_simulations * O + 1`` for the Bellman backup (each expansion creates all ``O``
  outcomes); ``max_depth`` = the game's ``max_length`` (else ``num_simulations``).
  """
  model = _model(game, estimator, model)
  if max_depth is None:
    max_depth = model.max_length if model.max_length else num_simulations
  if max_nodes is None:
    per_simulation = model.num_outcomes if backup == "bellman" else 1
    max_nodes = num_simulations * per_simulation + 1
  config = search_lib.SearchConfig(
      num_simulations=num_simulations, max_nodes=max_nodes, max_depth=max_depth,
      selection=selection, outcome_rule=outcome_rule, dirichlet_fraction=dirichlet_fraction,
      dirichlet_alpha=dirichlet_alpha, backup=backup, num_slots=num_slots, widening=widening,
      debias=debias, variance=variance, num_buckets=num_buckets)
  return Search(model=model, config=config, temperature=temperature)


def avts(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
         num_simulations: int, selection: Optional[SelectionRule] = None,
         widening: bool = True, debias: bool = True, variance: str = "avts",
         **kwargs) -> Search:
  """Action Value Tree Search (seed 000; ALGORITHMS.md §2): Bellman backup over exact chance
  outcomes, debiased values q̂3, Thompson sampling and progressive widening.

  The estimator must return ``action_values`` (q̂1). The recommended action is the most
  visited (ties by q̂3), ``out.q_values`` holds q̂3, and ``out.root_bound`` is the achievable
  bound when the game has a ``pessimistic_value``.

  Args:
    selection: default :func:`jaxsearch.selection.thompson`; any rule works (``laplace``,
      ``hoeffding``, ``value_prior_puct``, ...).
    widening: progressive widening (start from the best q̂1, add one action at a time).
    debias: subtract the expected remaining drift (off for ablations).
    variance: ``"avts"``, ``"reference"`` (the reference code's quirks), ``"centred"``
      (Welford sample variance of each bucket's changes) or ``"off"``.
    **kwargs: :func:`custom`'s other options (``num_slots``, ``num_buckets``, ``max_nodes``,
      ``max_depth``, ``outcome_rule``, ``temperature``, ``model``, ...).
  """
  if selection is None:
    selection = selection_lib.thompson()
  return custom(game, estimator, selection=selection, num_simulations=num_simulations,
                backup="bellman", widening=widening, debias=debias, variance=variance,
                **kwargs)


def puct(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
         num_simulations: int, c: Optional[float] = None, c1: float = 1.25,
         c2: float = 19652.0, q_transform: QTransform = q_minmax,
         visit_convention: str = "node", **kwargs) -> Search:
  """PUCT search (AlphaZero with constant ``c``; MuZero schedule when ``c`` is None).

  See :func:`jaxsearch.selection.puct` for the rule and :func:`custom` for the other options
  (``max_nodes``, ``max_depth``, ``dirichlet_fraction``, ``dirichlet_alpha``, ``temperature``,
  ``outcome_rule``, ``model``).
  """
  rule = selection_lib.puct(c=c, c1=c1, c2=c2, q_transform=q_transform,
                            visit_convention=visit_convention)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations, **kwargs)


def alphazero(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
              num_simulations: int, dirichlet_fraction: float = 0.25,
              dirichlet_alpha: float = 0.3, temperature: float = 1.0, **kwargs) -> Search:
  """PUCT set up for self-play: root Dirichlet noise (ε = 0.25, α = 0.3) and actions sampled
  from the visit counts (τ = 1)."""
  return puct(game, estimator, num_simulations=num_simulations,
              dirichlet_fraction=dirichlet_fraction, dirichlet_alpha=dirichlet_alpha,
              temperature=temperature, **kwargs)


def uct(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
        num_simulations: int, exploration: float = math.sqrt(2.0),
        value_range: Optional[tuple[float, float]] = None, **kwargs) -> Search:
  """UCT (UCB1 on trees); Q is mapped from the game's ``value_range`` to ``[0, 1]``."""
  if value_range is None:
    value_range = game.value_range if game is not None else (-1.0, 1.0)
  rule = selection_lib.uct(exploration=exploration, value_range=value_range)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations, **kwargs)
