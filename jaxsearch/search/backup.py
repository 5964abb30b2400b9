"""What a backup is: :class:`BackupRule`, three small parts with defaults, and one simulation's
random keys.

A backup decides more than how values go up the path: what a tree keeps (slot bounds, debias
buckets), how a new node's estimates become slot entries, what a selection rule sees at a node,
the whole simulation step after the descent (expansion, evaluation, backup), and what the
root summary reports. Each backup is one hashable frozen dataclass deriving from
:class:`BackupRule`, which joins three parts, each with defaults that describe a backup that
keeps nothing beyond visit counts and running values (the running mean's):

* :class:`TreeSetup`: what the config and the tree's allocation ask (options it cannot honour,
  nodes per expansion, the tree parts it keeps);
* :class:`NodeReading`: how a new node's estimates become slot entries, what the descent reads
  from a node, what the root summary reports;
* :class:`SimulationStep`: the simulation after the descent (its one required method) and,
  where there is one, the batched step of a root rule's opening.

The two backups are :class:`~jaxsearch.search.backup_mean.MeanBackup` (``backup="mean"``,
AlphaZero, MuZero, UCT, Gumbel) and :class:`~jaxsearch.search.backup_bellman.BellmanBackup`
(``backup="bellman"``, AVTS, its options its fields). ``SearchConfig(backup=...)`` takes the
rule itself, or its name (looked up in ``jaxsearch.search.config.BACKUPS``). The search's
:class:`~jaxsearch.search.plan.SearchPlan` is a static argument of jitted functions and holds
the rule, so a rule must be hashable (a frozen dataclass of hashable fields); every method is
called at trace time with static shapes.

This module imports nothing of the engine: the phases import it, never the other way round.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsearch.enums import Backup
from jaxsearch.tree import NO_UPPER


class SimulationKeys(NamedTuple):
  """The random keys of one simulation after its descent: ``outcome`` picks the chance outcome
  a new edge takes (a backup that expands every outcome reads none), ``estimator`` goes to the
  model's step."""

  outcome: jax.Array
  estimator: jax.Array


def simulation_keys(loop_key: jax.Array, index) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(select, outcome, estimator)`` keys of simulation ``index`` of a search whose loop key is
  ``loop_key`` (the opening, :mod:`jaxsearch.search.opening`, draws its estimator keys here
  too, so that its children are evaluated with the keys the loop would have used)."""
  select_key, outcome_key, estimator_key = jax.random.split(jax.random.fold_in(loop_key, index),
                                                            3)
  return select_key, outcome_key, estimator_key


class TreeSetup:
  """What the config (:class:`~jaxsearch.search.config.SearchConfig`) and the tree's
  allocation (``simulate.init_tree``) ask a backup.

  Attributes:
    kind: the :class:`~jaxsearch.enums.Backup` this rule implements (its name).
  """

  kind: ClassVar[Backup]

  def check(self, config) -> None:
    """Raises a ``ValueError`` for options of ``config`` this backup cannot honour."""
    del config

  def nodes_per_expansion(self, num_outcomes: int) -> int:
    """Decision nodes one simulation creates at most (the default ``max_nodes``)."""
    del num_outcomes  # one outcome per simulation
    return 1

  def chance_capacity(self, max_nodes: int) -> int:
    """``C``, chance records per tree (one per node by default)."""
    return max_nodes

  def tree_parts(self) -> dict[str, Any]:
    """The keywords of :func:`jaxsearch.tree.allocate` this backup decides
    (``num_buckets``, ``slot_bounds``)."""
    return {"num_buckets": None, "slot_bounds": False}


class NodeReading:
  """How a backup reads a node: a new node's slot entries (``nodes.node_update``), what the descent
  sees (``descent``) and what the root summary reports (``jaxsearch.summary``).

  Attributes:
    widening: a new node starts with one active slot and activates more as the search goes
      (``NodeStats.num_active`` is written and shown to the rule); else every slot is active.
    keeps_bounds: the tree keeps per-slot bounds and solved flags (``tree.slot_bounds``), the
      backup improves the node bounds, a new node reads per-action optimistic bounds, and the
      root summary reports the optimistic bound.
    static_priors: a node's prior logits and legal slots never change after it is created,
      so their softmax may be kept in the tree (``SearchConfig.keeps_prior_probs``).
  """

  widening: ClassVar[bool] = False
  keeps_bounds: ClassVar[bool] = False
  static_priors: ClassVar[bool] = True

  def missing_action_values(self, batch_size: int, num_actions: int) -> jax.Array:
    """``f32[B, A]`` q̂1 for an estimator that returns none (or raise: it needs them)."""
    return jnp.zeros((batch_size, num_actions), jnp.float32)

  def usable_action_values(self, legal, action_values, finite, value):
    """``(legal bool[B, A], action_values f32[B, A])`` with the non-finite q̂1 replaced (and,
    for a backup that masks them, removed from the legal actions); ``value`` ``f32[B]``."""
    del value  # q̂1 only informs the rule here: a non-finite one is 0, the action stays
    return legal, jnp.where(finite, action_values, 0.0)

  def slot_ranking(self, logits, action_values) -> tuple[jax.Array, int]:
    """``(keys f32[B, A], bound_slots)``: what orders the actions into a node's slots with a
    cut ``K < A``, and how many of the slots go to the best action bounds instead."""
    del action_values
    return logits, 0  # by prior logit; no bound slots (nothing reads the bounds)

  def node_values(self, terminal, value, slot_legal, slot_action_value, num_active):
    """``(V f32[B], Q f32[B, K])`` of new nodes from the estimator's value and the slots'
    q̂1 (``num_active`` ``i32[B]``)."""
    del terminal, slot_legal, num_active  # V: the estimator's value; Q: running means from 0
    return value, jnp.zeros_like(slot_action_value)

  def fixed_fields(self, slots_are_actions: bool) -> frozenset:
    """Names of node-row fields this backup always leaves as allocated (never written)."""
    # Q starts at 0; with K = A every legal action has a slot: nothing is ever cut.
    return frozenset({"slot_value"} | ({"cut_upper"} if slots_are_actions else set()))

  def view_stats(self, tree, at, batch_ids, node_ids, legal, child_values, child_visits,
                 action_values, *, plan):
    """``(legal, debiased_values, value_variance, upper_bounds)``, each ``[B, K]``, of the
    :class:`~jaxsearch.selection.NodeView` of nodes ``node_ids[B]``; ``at(field)`` reads a
    ``[B, N, ...]`` tree field at those nodes."""
    del tree, at, batch_ids, node_ids, plan
    debiased = jnp.where(child_visits > 0, child_values, action_values)
    return (legal, debiased, jnp.zeros_like(child_values),
            jnp.full_like(child_values, NO_UPPER))

  def outcome_weights(self, tree, batch_ids, safe_chance, probs, *,
                      plan) -> tuple[jax.Array, Optional[jax.Array]]:
    """``(probs f32[B, O], gaps f32[B, O] or None)``: what the outcome rule weighs at the
    chance records ``safe_chance[B]`` (``probs``: their outcome probabilities)."""
    del tree, batch_ids, safe_chance, plan
    return probs, None

  def root_slots(self, tree) -> tuple[jax.Array, jax.Array, Optional[jax.Array]]:
    """``(shown bool[B, K], q f32[B, K], exact bool[B, K] or None)`` of the root slots:
    which report their own ``q`` (the others report the root value), and which hold exact
    values that compete for the greedy action without being the most visited."""
    legal, visits, values = tree.slots.legal[:, 0], tree.slots.visits[:, 0], tree.slots.value[:, 0]
    return legal & (visits > 0), jnp.where(legal, values, 0.0), None


class SimulationStep:
  """The simulation after the descent, asked by ``simulate.run`` and ``opening.expand``."""

  # A root rule's opening (:mod:`jaxsearch.search.opening`), where the backup has such a step:
  # ``(model, plan, params, estimator_keys, tree, slots, count) -> tree``, the first
  # ``count[b]`` simulations of fresh tree ``b``, each expanding root slot ``slots[b, j]``,
  # as one step; the trees as those simulations would have left them. ``None``: the loop
  # runs them.
  expand_root_children: ClassVar[Optional[Any]] = None
  # The backup takes several paths per tree in one step (SearchConfig.leaves_per_step > 1):
  # it defines expand_and_back_up_walks.
  several_leaves: ClassVar[bool] = False

  def expand_and_backup(self, model, plan, params, keys: SimulationKeys, tree, path):
    """The rest of a simulation after the descent: expands the paths' last edges (under the
    ``expansion`` scope), evaluates the new states (``estimator``) and backs up (``backup``);
    returns the trees (``[B, ...]``)."""
    raise NotImplementedError

  def expand_and_back_up_walks(self, model, plan, params, keys: SimulationKeys, tree, paths,
                               walking):
    """:meth:`expand_and_backup` for a step of ``L`` paths per tree (``paths`` ``[L, B]``,
    :func:`jaxsearch.search.walks.select_walks`; ``walking`` ``bool[L, B]`` the paths that
    take part, or ``None``: all); only where :attr:`several_leaves`."""
    raise NotImplementedError


class BackupRule(TreeSetup, NodeReading, SimulationStep):
  """One backup: what differs between backups, asked by the engine's phases (the three parts'
  members; a new backup overrides what differs from their defaults and defines ``kind`` and
  ``expand_and_backup``)."""
