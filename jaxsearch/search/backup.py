"""What a backup is: the :class:`BackupRule` protocol, and :func:`resolve`, which turns a
config's ``backup`` into the one object the engine asks.

A backup decides more than how values go up the path: what a tree keeps (slot bounds, debias
buckets), how a new node's estimates become slot rows, what a selection rule sees at a node,
the whole simulation step after the descent (expansion, evaluation, backup), and what the
root summary reports. Each backup is one hashable frozen dataclass that owns all of it:

* :class:`~jaxsearch.search.backup_mean.MeanBackup` (``backup="mean"``): running means of
  sampled returns (AlphaZero, MuZero, UCT, Gumbel);
* :class:`~jaxsearch.search.backup_bellman.BellmanBackup` (``backup="bellman"``): AVTS, holding
  its :class:`~jaxsearch.search.config.AvtsOptions`.

:class:`~jaxsearch.search.config.SearchConfig` resolves its ``backup`` once, when it is built
(``config.backup_rule``); the engine calls the rule's methods instead of branching on a mode.
The search's :class:`~jaxsearch.search.plan.SearchPlan` (the config resolved for the model)
is a static argument of jitted functions and holds the rule, so a rule must be hashable (a
frozen dataclass of hashable fields); every method is called at trace time with static shapes,
and the engine's methods read the plan (``plan``), never a mode.
Adding a backup is one new module defining a class with these members, and one entry in
:func:`resolve`.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Optional, Protocol

import jax

from jaxsearch.enums import Backup


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


class BackupRule(Protocol):
  """One backup: what differs between backups, asked by the engine's phases.

  Attributes:
    kind: the :class:`~jaxsearch.enums.Backup` this rule implements.
    widening: a new node starts with one active slot and activates more as the search goes
      (``NodeStats.num_active`` is written and shown to the rule); else every slot is active.
    keeps_bounds: the tree keeps per-slot bounds and solved flags (``tree.slot_bounds``), the
      backup improves the node bounds, a new node reads per-action optimistic bounds, and the
      root summary reports the optimistic bound.
    static_priors: a node's prior logits and legal slots never change after it is created,
      so their softmax may be kept in the tree (``SearchConfig.keeps_prior_probs``).
  """

  kind: ClassVar[Backup]
  widening: bool
  keeps_bounds: bool
  static_priors: bool

  # ---- configuration (config.py) --------------------------------------------------------

  def check(self, config) -> None:
    """Raises a ``ValueError`` for options of ``config`` this backup cannot honour."""

  def nodes_per_expansion(self, num_outcomes: int) -> int:
    """Decision nodes one simulation creates at most (the default ``max_nodes``)."""

  # ---- tree parts (loop.init_tree) ------------------------------------------------------

  def tree_parts(self) -> dict[str, Any]:
    """The keywords of :func:`jaxsearch.tree.allocate` this backup decides
    (``num_buckets``, ``slot_bounds``)."""

  # ---- node rows (nodes._node_rows) -----------------------------------------------------

  def missing_action_values(self, batch_size: int, num_actions: int) -> jax.Array:
    """``f32[B, A]`` q̂1 for an estimator that returns none (or raise: it needs them)."""

  def usable_action_values(self, legal, action_values, finite, value):
    """``(legal bool[B, A], action_values f32[B, A])`` with the non-finite q̂1 replaced (and,
    for a backup that masks them, removed from the legal actions); ``value`` ``f32[B]``."""

  def slot_ranking(self, logits, action_values) -> tuple[jax.Array, int]:
    """``(keys f32[B, A], bound_slots)``: what orders the actions into a node's slots with a
    cut ``K < A``, and how many of the slots go to the best action bounds instead."""

  def node_values(self, terminal, value, slot_legal, slot_action_value, num_active):
    """``(V f32[B], Q f32[B, K])`` of new nodes from the estimator's value and the slots'
    q̂1 (``num_active`` ``i32[B]``)."""

  def fixed_fields(self, slots_are_actions: bool) -> frozenset:
    """Names of node-row fields this backup always leaves as allocated (never written)."""

  # ---- descent (descent._node_view, descent._outcomes) ----------------------------------

  def view_stats(self, tree, at, batch_ids, node_ids, legal, child_values, child_visits,
                 action_values, *, plan):
    """``(legal, debiased_values, value_variance, upper_bounds)``, each ``[B, K]``, of the
    :class:`~jaxsearch.selection.NodeView` of nodes ``node_ids[B]``; ``at(field)`` reads a
    ``[B, N, ...]`` tree field at those nodes."""

  def outcome_weights(self, tree, batch_ids, safe_chance, probs, *,
                      plan) -> tuple[jax.Array, Optional[jax.Array]]:
    """``(probs f32[B, O], gaps f32[B, O] or None)``: what the outcome rule weighs at the
    chance records ``safe_chance[B]`` (``probs``: their outcome probabilities)."""

  # ---- one simulation after the descent (loop.run) --------------------------------------

  def expand_and_backup(self, model, plan, params, keys: SimulationKeys, tree, path):
    """The rest of a simulation after the descent: expands the paths' last edges (under the
    ``expansion`` scope), evaluates the new states (``estimator``) and backs up (``backup``);
    returns the trees (``[B, ...]``)."""

  def expand_root_children(self, model, plan, params, estimator_keys, tree, slots, count):
    """A root rule's opening (:mod:`jaxsearch.search.opening`): the first ``count[b]``
    simulations of fresh tree ``b``, each expanding root slot ``slots[b, j]``, as one step;
    returns the trees as those simulations would have left them. ``None`` (a class attribute)
    where the backup has no such step: the loop runs them."""

  def back_up_stretch(self, model, plan, params, estimator_keys, tree, path, owner, choose):
    """A batched stretch of a root rule's schedule (:mod:`jaxsearch.search.phases`): evaluates
    the leaves of ``R = B·W`` walks (``path`` ``[R]``, walk ``i`` in tree ``owner[i]``, keys
    ``[W]`` by candidate), hands their returns at the root (``f32[B, W]``) to ``choose``, which
    replays the root rule's picks (``i32[B, W]``, ``-1``: not picked), and writes the picked
    walks as those simulations would have; returns the trees. ``None`` (a class attribute) where the backup has no such step."""

  # ---- root summary (jaxsearch.summary.root_summary) ------------------------------------

  def root_slots(self, tree, config) -> tuple[jax.Array, jax.Array, Optional[jax.Array]]:
    """``(shown bool[B, K], q f32[B, K], exact bool[B, K] or None)`` of the root slots:
    which report their own ``q`` (the others report the root value), and which hold exact
    values that compete for the greedy action without being the most visited. ``config``:
    the search's config or plan (its ``avts`` is read)."""


def resolve(backup: Backup, avts) -> BackupRule:
  """The rule of ``backup`` (a :class:`~jaxsearch.enums.Backup`); ``avts``
  (:class:`~jaxsearch.search.config.AvtsOptions`) goes to the backup that reads it."""
  # Imported here: the rules' modules import the engine, which imports the config.
  from jaxsearch.search.backup_bellman import BellmanBackup
  from jaxsearch.search.backup_mean import MeanBackup
  rules = {Backup.MEAN: lambda: MeanBackup(), Backup.BELLMAN: lambda: BellmanBackup(avts)}
  return rules[Backup(backup)]()
