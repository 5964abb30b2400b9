"""The generic search loop: select -> expand -> evaluate -> backup, in one jitted function.

The simulations are a ``lax.fori_loop`` over the whole batch, so the loop never selects
between whole trees. Within a simulation:

* **select** (:func:`_select`) descends every tree; the selection rule is a pure function of
  one node, vmapped, while the descent loop is batched by hand (a vmapped ``while_loop``
  re-selects its carry every level). It records what it reads on the way down.
* **expand + evaluate**: one batched ``Model.step`` (game step and one estimator call).
* **backup**: :func:`_expand_one` writes the new edge and node, :func:`_returns` computes the
  returns along the paths, :func:`_backup_one` updates the running means — per tree, vmapped.

Loops carry only the ``O(D)`` path, never the tree, and no tree array is read after the descent
before it is written: either would make XLA copy whole tree arrays every simulation
(DESIGN.md, performance rules; measured, see the notes in :class:`Path`).

The engine knows nothing of selection rules, games or networks: it receives a
:class:`~jaxsearch.model.Model` and a :class:`SearchConfig`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import jax
import jax.numpy as jnp
from flax import struct

from jaxsearch import debias as debias_lib
from jaxsearch import entropy as entropy_lib
from jaxsearch import tree as tree_lib
from jaxsearch import validation
from jaxsearch.game import per_item_keys
from jaxsearch.model import Expansion, Model
from jaxsearch.selection.base import (NodeView, RootContext, RootRule, SelectionRule,
                                      masked_argmax, masked_softmax)
from jaxsearch.tree import UNEXPANDED, Tree

OUTCOME_RULES = ("balanced", "sample", "gap")
BACKUPS = ("mean", "bellman")
SUBTREE_ENTROPY = (None, "full", "one_level")
ENTROPY_POLICIES = ("pi_hat", "pibar")
VARIANCES = ("avts", "reference", "centred", "off")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Static settings of one search.

  Attributes:
    num_simulations: ``S``.
    max_nodes: ``N``; at least ``S + 1`` (a fresh root plus one node per simulation).
    max_depth: ``D``, the longest path in edges from the root.
    selection: the rule picking a slot at each decision node.
    outcome_rule: at a chance record, ``"balanced"`` picks ``argmax p(o) / (n(o) + 1)`` (no
      randomness), ``"sample"`` draws ``o ~ p``, and ``"gap"`` (Bellman backup) prefers the
      outcome whose value is most uncertain in the certified sense: ``argmax p(o)·(upper −
      bound)`` of its child, the probability-weighted gap between the optimistic and the
      achievable bound (``"balanced"`` decides among ties) — the outcome whose proof matters
      most.
    dirichlet_fraction, dirichlet_alpha: root noise ``(1 - ε) p + ε η``, ``η ~ Dir(α)`` over
      the legal actions; ``ε = 0`` turns it off.
    backup: ``"mean"`` — running means of sampled returns (AlphaZero, MuZero, UCT; one chance
      outcome is expanded per simulation) — or ``"bellman"`` — AVTS (ALGORITHMS.md §2):
      expanding a slot creates **all** its possible outcomes in one estimator call, and
      ``q̂2(s,a) = Σ_o p(o)(r + γ V(s_o))`` is recomputed at every backup, with ``V`` the best
      debiased value of the active slots. Needs estimators that return ``action_values``.
    num_slots: ``K``, action slots per node; ``None`` = ``A``. Larger than ``A`` is clamped to
      ``A``. With ``K < A`` a node keeps its top-``K`` actions by q̂1 (by prior logit for the
      mean backup) — a documented cutoff: actions outside it are never searched.
    bound_slots: of those ``K`` slots, how many go to the best admissible action bounds
      (``Estimate.action_bounds``) among the actions q̂1 did not place (Bellman backup; none
      without bounds). A cut action's bound floors its node's optimistic bound, so a proof
      needs the actions whose bounds beat the optimum in slots, and q̂1 ranks some of them
      low (Mastermind 4×6 after ``1123``: 96 of 128 slots close every sub-problem's proof).
    widening: progressive widening (Bellman backup only): a node starts with its best slot by
      q̂1 and activates the next whenever the newest (unvisited) one is chosen.
    debias: subtract the expected remaining drift (Bellman backup only); off = q̂3 is q̂2.
    variance: ``"avts"`` (the default: squared changes of q̂3 after subtracting the bucket's
      bias mean from *before* the record, so a bucket's first record adds the whole drift —
      inflated, and measured better for Thompson on Wordle and Mastermind), ``"centred"``
      (the AVTS article's: changes centred on the updated bias, Welford, with a cold start),
      ``"reference"`` (the reference code's quirks, :mod:`jaxsearch.debias`) or ``"off"``
      (σ² = 0: Thompson becomes greedy).
    num_buckets: ``V``, visit-count buckets of the debias statistics (the last absorbs the tail).
    root_selection: a root-only rule (:class:`~jaxsearch.selection.base.RootRule`, e.g.
      Gumbel MuZero's Sequential Halving) used for the first step of every descent, with the
      simulation index and a per-search draw; ``selection`` then only serves interior nodes.
    subtree_entropy: keep each node's subtree entropy ``H``, frontier-leaf count ``K`` and
      all-terminal flag in the tree (ALGORITHMS.md §4; running-mean backup only), updated
      along the backup path in ``O(D·K·O)`` and shown to the rule as
      ``NodeView.child_exploration``: ``"full"`` (chain rule over the whole subtree) or
      ``"one_level"`` (the cheap proxy: a node's own playout-policy entropy over its legal
      edges); ``None`` (default) allocates and computes nothing.
    entropy_policy: the playout policy defining the leaf distribution: ``"pi_hat"``
      ``π̂(a) = (1 + n(a)) / (|A| + N)`` or ``"pibar"`` (π̄, :func:`jaxsearch.selection.pibar_policy`
      with ``c = entropy_pibar_c``).
    entropy_pibar_c: π̄'s constant for ``entropy_policy="pibar"``.
    max_chance: ``C``, chance records per tree (``None``: ``max_nodes``). The Bellman backup
      creates one record per expanded slot holding all its possible outcomes' nodes, so a
      tree of ``N`` nodes holds about ``N / (outcomes per expansion)`` records: with many
      outcomes (Wordle's 243 feedbacks, 4.9 KB a record) a smaller ``C`` saves most of the
      tree's memory. A tree whose records run out stops growing, as when its nodes do.
      Running-mean backup: must be ``None`` (a record comes with every new node).
    expand_chunk: Bellman backup: the outcome states of one expansion step (``B·O`` of them)
      are stepped and evaluated ``expand_chunk`` at a time, and only the possible outcomes
      of the trees that expand (``p > 0``), each chunk reduced to its ``K`` slots before
      the next: the estimator's ``[·, A]`` outputs never exist for all ``B·O`` states at
      once. Where ``B·O <= expand_chunk`` all are evaluated in one call, as before.
  """

  num_simulations: int
  max_nodes: int
  max_depth: int
  selection: SelectionRule
  outcome_rule: str = "balanced"
  dirichlet_fraction: float = 0.0
  dirichlet_alpha: float = 0.3
  backup: str = "mean"
  num_slots: Optional[int] = None
  bound_slots: int = 0
  widening: bool = False
  debias: bool = True
  variance: str = "avts"
  num_buckets: int = 32
  root_selection: Optional[RootRule] = None
  subtree_entropy: Optional[str] = None
  entropy_policy: str = "pi_hat"
  entropy_pibar_c: float = 1.25
  max_chance: Optional[int] = None
  expand_chunk: int = 256

  @property
  def bellman(self) -> bool:
    return self.backup == "bellman"

  def slots_for(self, num_actions: int) -> int:
    """``K`` for a game with ``num_actions`` actions (``num_slots`` clamped to ``A``)."""
    return num_actions if self.num_slots is None else min(self.num_slots, num_actions)

  def __post_init__(self):
    for name in ("num_simulations", "max_nodes", "max_depth"):
      value = getattr(self, name)
      if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if self.max_nodes < self.num_simulations + 1:
      raise ValueError(
          f"max_nodes={self.max_nodes} is smaller than num_simulations + 1 = "
          f"{self.num_simulations + 1}, the nodes one search from a fresh root needs")
    if self.outcome_rule not in OUTCOME_RULES:
      raise ValueError(f"outcome_rule must be one of {OUTCOME_RULES}, got {self.outcome_rule!r}")
    if self.outcome_rule == "gap" and self.backup != "bellman":
      raise ValueError("outcome_rule='gap' needs backup='bellman' (it reads the bounds)")
    if not 0.0 <= self.dirichlet_fraction <= 1.0:
      raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
    if self.dirichlet_alpha <= 0.0:
      raise ValueError(f"dirichlet_alpha must be > 0, got {self.dirichlet_alpha}")
    if self.backup not in BACKUPS:
      raise ValueError(f"backup must be one of {BACKUPS}, got {self.backup!r}")
    if self.variance not in VARIANCES:
      raise ValueError(f"variance must be one of {VARIANCES}, got {self.variance!r}")
    if self.num_slots is not None and (not isinstance(self.num_slots, int) or
                                       self.num_slots < 1):
      raise ValueError(f"num_slots must be a positive int or None, got {self.num_slots!r}")
    if not isinstance(self.bound_slots, int) or self.bound_slots < 0 or (
        self.num_slots is not None and self.bound_slots >= self.num_slots):
      raise ValueError(f"bound_slots must be an int in [0, num_slots), got "
                       f"{self.bound_slots!r} with num_slots={self.num_slots!r}")
    if not isinstance(self.num_buckets, int) or self.num_buckets < 1:
      raise ValueError(f"num_buckets must be a positive int, got {self.num_buckets!r}")
    if self.widening and not self.bellman:
      raise ValueError("widening=True needs backup='bellman' (it orders slots by q̂1)")
    if self.subtree_entropy not in SUBTREE_ENTROPY:
      raise ValueError(f"subtree_entropy must be one of {SUBTREE_ENTROPY}, "
                       f"got {self.subtree_entropy!r}")
    if self.subtree_entropy is not None and self.bellman:
      raise ValueError("subtree_entropy needs backup='mean' (it is updated on the mean path)")
    if self.entropy_policy not in ENTROPY_POLICIES:
      raise ValueError(f"entropy_policy must be one of {ENTROPY_POLICIES}, "
                       f"got {self.entropy_policy!r}")
    if self.max_chance is not None:
      if not isinstance(self.max_chance, int) or not 1 <= self.max_chance <= self.max_nodes:
        raise ValueError(f"max_chance must be an int in [1, max_nodes={self.max_nodes}] or "
                         f"None, got {self.max_chance!r}")
      if not self.bellman and self.max_chance != self.max_nodes:
        raise ValueError("max_chance needs backup='bellman' (with the running-mean backup "
                         "every new node comes with a chance record)")
    if not isinstance(self.expand_chunk, int) or self.expand_chunk < 1:
      raise ValueError(f"expand_chunk must be a positive int, got {self.expand_chunk!r}")

  @property
  def chance_capacity(self) -> int:
    """``C``: ``max_chance``, or ``max_nodes`` by default."""
    return self.max_nodes if self.max_chance is None else self.max_chance


@struct.dataclass
class Path:
  """One simulation's descent through one tree (``D`` = max depth; batched as ``[B, ...]``).

  The descent records the statistics it read on the way down, so that the backup never reads
  these tree arrays again before writing them: a read of the pre-descent arrays after the
  descent makes XLA copy whole tree arrays every simulation (measured; DESIGN.md rules).

  Attributes:
    nodes: ``i32[D + 1]`` decision nodes from the root; ``-1`` past the end and where the leaf
      still has to be created.
    slots, outcomes: ``i32[D]`` the edge taken below each node.
    chances: ``i32[D]`` the chance record of each edge (``-1``: not created yet).
    node_visits, node_values: ``[D]`` visits and value of ``nodes[d]`` before this simulation.
    slot_visits, slot_values: ``[D]`` the same for the slot taken at ``nodes[d]``.
    length: ``i32[]`` number of edges ``L``.
    expand: ``bool[]`` the last edge leads to a node that must be created.
    new_chance: ``bool[]`` ... and its slot has no chance record yet.
    leaf_visits, leaf_value, leaf_terminal: the existing node a simulation ends on when it
      does not expand (a terminal node, the depth limit, or a full tree).
  """

  nodes: jax.Array
  slots: jax.Array
  outcomes: jax.Array
  chances: jax.Array
  node_visits: jax.Array
  node_values: jax.Array
  slot_visits: jax.Array
  slot_values: jax.Array
  length: jax.Array
  expand: jax.Array
  new_chance: jax.Array
  leaf_visits: jax.Array
  leaf_value: jax.Array
  leaf_terminal: jax.Array


# ---- new nodes: sanitising estimator output, slot rows -----------------------------------

@struct.dataclass
class NodeRows:
  """Everything a new decision node stores (leading ``[B]``; ``K`` slots).

  ``slot_*`` are ``[B, K]``; ``value``, ``raw_value``, ``bound``, ``upper`` ``f32[B]``;
  ``num_active`` ``i32[B]``; ``cut_upper`` ``f32[B]`` the best optimistic bound among legal
  actions that have no slot (``Tree.node_cut_upper``); ``bad``
  ``bool[B]`` flags estimator output that was NaN/inf and was replaced. ``entropy``,
  ``leaves``, ``closed`` (``[B]``): the new node's subtree-entropy statistics, ``None``
  unless ``config.subtree_entropy``.
  """

  slot_action: jax.Array
  slot_legal: jax.Array
  slot_prior_logits: jax.Array
  slot_action_value: jax.Array
  slot_value: jax.Array
  num_active: jax.Array
  value: jax.Array
  raw_value: jax.Array
  bound: jax.Array
  upper: jax.Array
  cut_upper: jax.Array
  bad: jax.Array
  slot_upper: Optional[jax.Array] = None
  entropy: Optional[jax.Array] = None
  leaves: Optional[jax.Array] = None
  closed: Optional[jax.Array] = None


def _node_rows(expansion: Expansion, config: SearchConfig, num_actions: int) -> NodeRows:
  """Sanitises a batch of estimates and lays them out as slot rows.

  Non-finite output never reaches the tree. Values that are NaN/inf become 0; a row of prior
  logits holding NaN or ``+inf`` becomes uniform (``-inf`` is a legitimate zero prior). Action
  values: ``-inf`` masks an action on purpose — the estimator declares it never optimal (e.g. a
  useless Wordle guess), and certification trusts that; NaN and ``+inf`` mask it too, count as
  misbehaviour and leave the node's optimistic bound uncertifiable. If that masks every legal action of a live state,
  they all stay selectable with q̂1 = the (sanitised) value. ``bad`` flags misbehaving rows.

  Slots: with ``K = A`` and no widening, slot ``k`` is action ``k``; otherwise the slots hold
  the top-``K`` actions by q̂1 (Bellman backup) or prior logit, best first, so that widening
  activates them in order and illegal ones come last; with ``config.bound_slots`` the last
  ones are instead the best action bounds among the rest.
  """
  estimate = expansion.estimate
  legal = expansion.legal
  declared_useless = jnp.zeros_like(legal)
  batch_size = legal.shape[0]
  num_slots = config.slots_for(num_actions)
  value = jnp.asarray(estimate.value, jnp.float32)
  bad = ~jnp.isfinite(value)
  value = jnp.where(bad | expansion.terminal, 0.0, value)
  if estimate.prior_logits is None:
    logits = jnp.zeros((batch_size, num_actions), jnp.float32)
  else:
    logits = jnp.asarray(estimate.prior_logits, jnp.float32)
    bad_logits = jnp.any(jnp.isnan(logits) | (logits == jnp.inf), axis=-1)
    bad = bad | bad_logits
    logits = jnp.where(bad_logits[:, None], 0.0, logits)
  if estimate.action_values is None:
    if config.bellman:
      raise ValueError(
          "backup='bellman' (AVTS) needs an estimator that returns Estimate.action_values "
          "(q̂1 for every action), got action_values=None")
    action_values = jnp.zeros((batch_size, num_actions), jnp.float32)
  else:
    action_values = jnp.asarray(estimate.action_values, jnp.float32)
    finite = jnp.isfinite(action_values)
    declared_useless = legal & (action_values == -jnp.inf)
    bad = bad | jnp.any(legal & (jnp.isnan(action_values) | (action_values == jnp.inf)),
                        axis=-1)
    if config.bellman:
      usable = legal & finite
      none_left = ~jnp.any(usable, axis=-1, keepdims=True)
      legal = jnp.where(none_left, legal, usable)
      action_values = jnp.where(finite, action_values, value[:, None])
    else:
      action_values = jnp.where(finite, action_values, 0.0)

  slot_valid = None
  if num_slots == num_actions and not config.widening:
    slot_action = jnp.broadcast_to(jnp.arange(num_actions, dtype=jnp.int32),
                                   (batch_size, num_actions))
  else:
    ranking = action_values if config.bellman else logits
    # Legal actions first, best first; ties by index (top_k is stable).
    keys = jnp.where(legal, ranking, -jnp.inf)
    # Only a real cut (K < A) needs them; without one every action has a slot anyway.
    reserve = min(config.bound_slots, num_slots - 1) if num_slots < num_actions else 0
    if reserve and estimate.action_bounds is not None and config.bellman:
      _, first = jax.lax.top_k(keys, num_slots - reserve)
      taken = jnp.zeros(keys.shape, bool).at[jnp.arange(batch_size)[:, None], first].set(True)
      bound_keys = jnp.where(legal & ~taken & jnp.isfinite(action_values),
                             jnp.asarray(estimate.action_bounds, jnp.float32), -jnp.inf)
      bound_keys = jnp.where(jnp.isnan(bound_keys), -jnp.inf, bound_keys)
      second_keys, second = jax.lax.top_k(bound_keys, reserve)
      slot_action = jnp.concatenate([first, second], axis=1)
      slot_valid = jnp.concatenate([jnp.ones(first.shape, bool), second_keys > -jnp.inf], axis=1)
    else:
      _, slot_action = jax.lax.top_k(keys, num_slots)
    slot_action = slot_action.astype(jnp.int32)

  def gather(x):
    return jnp.take_along_axis(x, slot_action, axis=1)

  slot_legal = gather(legal)
  if slot_valid is not None:
    slot_legal = slot_legal & slot_valid
  slot_action_value = jnp.where(slot_legal, gather(action_values), 0.0)
  num_candidates = jnp.sum(slot_legal, axis=-1).astype(jnp.int32)
  if config.widening:
    num_active = jnp.minimum(num_candidates, 1)
  else:
    num_active = jnp.full((batch_size,), num_slots, jnp.int32)
  if config.bellman:
    # V = best q̂1 among the active slots (the debias statistics are empty in a new node).
    active = slot_legal & (jnp.arange(num_slots) < num_active[:, None])
    node_value = jnp.max(jnp.where(active, slot_action_value, -jnp.inf), axis=-1)
    node_value = jnp.where(jnp.any(active, axis=-1) & ~expansion.terminal, node_value, 0.0)
    slot_value = slot_action_value
  else:
    node_value = value
    slot_value = jnp.zeros_like(slot_action_value)
  wanted = expansion.legal & ~declared_useless
  cut = jnp.sum(wanted, axis=-1) > jnp.sum(slot_legal, axis=-1)
  no_upper = jnp.float32(tree_lib.NO_UPPER)
  slot_upper = None
  if expansion.optimistic is None:
    upper = jnp.full((batch_size,), no_upper, jnp.float32)
  else:
    upper = jnp.where(expansion.terminal, 0.0, jnp.asarray(expansion.optimistic, jnp.float32))
    bad = bad | ~jnp.isfinite(upper)
    upper = jnp.where(jnp.isfinite(upper), upper, no_upper)
  if expansion.optimistic is not None and estimate.action_bounds is not None and config.bellman:
    # Per-action admissible bounds: NaN or +inf is misbehaviour (no bound), -inf is fine
    # where the action is declared useless.
    action_bounds = jnp.asarray(estimate.action_bounds, jnp.float32)
    broken = wanted & ~jnp.isfinite(action_bounds)
    bad = bad | jnp.any(broken, axis=-1)
    action_bounds = jnp.where(broken, no_upper, action_bounds)
    best_action = jnp.max(jnp.where(wanted, action_bounds, -no_upper), axis=-1)
    upper = jnp.where(expansion.terminal | ~jnp.any(wanted, axis=-1), upper,
                      jnp.minimum(upper, best_action))
    # Which wanted actions have no slot (a scatter only this branch needs).
    in_slots = jnp.zeros(wanted.shape, jnp.int32).at[
        jnp.arange(batch_size)[:, None], slot_action].max(slot_legal.astype(jnp.int32)) > 0
    cut_upper = jnp.max(jnp.where(wanted & ~in_slots, action_bounds, -no_upper), axis=-1)
    slot_upper = jnp.minimum(upper[:, None], gather(action_bounds))
  else:
    cut_upper = jnp.where(cut, no_upper, -no_upper)
  if expansion.pessimistic is None:
    bound = jnp.zeros((batch_size,), jnp.float32)
  else:
    bound = jnp.where(expansion.terminal, 0.0,
                      jnp.asarray(expansion.pessimistic, jnp.float32))
    bad = bad | ~jnp.isfinite(bound)
    bound = jnp.where(jnp.isfinite(bound), bound, -1.0e30)
  entropy = leaves = closed = None
  if config.subtree_entropy is not None:
    entropy, leaves, closed = entropy_lib.fresh_node(slot_legal, gather(logits),
                                                     expansion.terminal, config.entropy_policy)
  return NodeRows(slot_action=slot_action, slot_legal=slot_legal,
                  slot_prior_logits=gather(logits), slot_action_value=slot_action_value,
                  slot_value=slot_value, num_active=num_active, value=node_value,
                  raw_value=value, bound=bound, upper=upper, cut_upper=cut_upper, bad=bad,
                  slot_upper=slot_upper,
                  entropy=entropy, leaves=leaves, closed=closed)


def _set_node(tree: Tree, index, expansion: Expansion, rows: NodeRows, parent, depth) -> Tree:
  """Writes decision node(s) ``index`` of one (unbatched) tree from unbatched ``rows``:
  ``index`` is a scalar (rows unbatched) or ``[M]`` (rows ``[M, ...]``); out-of-range indices
  are dropped."""

  def put(field, x):
    return field.at[index].set(x, mode="drop")

  if tree.slot_upper.shape[-1] == rows.slot_action.shape[-1]:  # Bellman trees only
    tree = tree.replace(slot_upper=put(tree.slot_upper, jnp.broadcast_to(
        rows.upper[..., None], rows.slot_action.shape) if rows.slot_upper is None
                                       else rows.slot_upper))
  if rows.entropy is not None:  # subtree-entropy trees only
    tree = tree.replace(node_entropy=put(tree.node_entropy, rows.entropy),
                        node_leaves=put(tree.node_leaves, rows.leaves),
                        node_closed=put(tree.node_closed, rows.closed))
  return tree.replace(
      node_visits=put(tree.node_visits, 1),
      node_value=put(tree.node_value, rows.value),
      node_raw_value=put(tree.node_raw_value, rows.raw_value),
      node_parent=put(tree.node_parent, parent),
      node_depth=put(tree.node_depth, depth),
      node_terminal=put(tree.node_terminal, expansion.terminal),
      node_state=jax.tree.map(put, tree.node_state, expansion.state),
      node_num_active=put(tree.node_num_active, rows.num_active),
      node_solved=put(tree.node_solved, expansion.terminal),
      node_bound=put(tree.node_bound, rows.bound),
      node_upper=put(tree.node_upper, rows.upper),
      node_cut_upper=put(tree.node_cut_upper, rows.cut_upper),
      slot_action=put(tree.slot_action, rows.slot_action),
      slot_legal=put(tree.slot_legal, rows.slot_legal),
      slot_prior_logits=put(tree.slot_prior_logits, rows.slot_prior_logits),
      slot_action_value=put(tree.slot_action_value, rows.slot_action_value),
      slot_value=put(tree.slot_value, rows.slot_value),
  )


# ---- root --------------------------------------------------------------------------------

def _write_root(tree: Tree, expansion: Expansion, rows: NodeRows) -> Tree:
  """Writes node 0 of one empty tree (unbatched)."""
  tree = _set_node(tree, 0, expansion, rows, UNEXPANDED, 0)
  return tree.replace(num_nodes=jnp.int32(1),
                      nonfinite_estimates=tree.nonfinite_estimates + rows.bad.astype(jnp.int32))


def _root_noise_logits(key, logits, legal, fraction, alpha):
  """Dirichlet noise over the legal actions of one root, as logits (``-inf`` = illegal)."""
  gammas = jax.random.gamma(key, alpha, logits.shape)
  gammas = jnp.where(legal, gammas, 0.0)
  noise = gammas / jnp.maximum(jnp.sum(gammas), jnp.finfo(jnp.float32).tiny)
  mixed = (1.0 - fraction) * masked_softmax(logits, legal) + fraction * noise
  return jnp.where(legal & (mixed > 0), jnp.log(jnp.maximum(mixed, 1e-30)), -jnp.inf)


# ---- AVTS estimates of one node ---------------------------------------------------------

def node_stats(tree: Tree, batch_ids, node) -> debias_lib.DebiasStats:
  """``[B, V]`` debias statistics of ``node[B]``."""
  return debias_lib.DebiasStats(count=tree.node_bias_count[batch_ids, node],
                                bias_mean=tree.node_bias_mean[batch_ids, node],
                                sq_sum=tree.node_bias_sq_sum[batch_ids, node])


def slot_estimates(stats: debias_lib.DebiasStats, tree_values, visits, solved, num_active, *,
                   config: SearchConfig):
  """``(q̂3 f32[K], σ² f32[K])`` of one node's slots from its statistics (Bellman backup).

  ``q̂3 = q̂2 + Σ_{j > n} bias_mean[j]`` (``q̂2`` alone with ``debias=False``) and
  ``σ²(s, n)`` per ``config.variance``; a solved slot's value is exact: no drift, no variance.
  """
  if config.debias:
    debiased = tree_values + jnp.where(solved, 0.0, debias_lib.correction(stats, visits))
  else:
    debiased = tree_values
  if config.variance == "off":
    variance = jnp.zeros_like(tree_values)
  else:
    per_bucket = (debias_lib.reference_bucket_variance(stats, num_active)
                  if config.variance == "reference" else None)
    variance = jnp.where(solved, 0.0, debias_lib.variance(stats, visits, per_bucket))
  return debiased, variance


# ---- select ------------------------------------------------------------------------------

def _choose_outcome(probs, visits, key, rule, gaps=None):
  """Outcome at a chance record (``probs``/``visits``/``gaps`` ``[O]``); zero-probability
  outcomes are never chosen."""
  possible = probs > 0
  if rule == "sample":
    return jax.random.categorical(key, jnp.where(possible, jnp.log(probs), -jnp.inf)
                                  ).astype(jnp.int32)
  balanced = probs / (visits + 1.0)
  if rule == "gap":
    # Lexicographic: the weighted bound gap first, the balanced score among (near-)ties.
    weighted = jnp.where(possible, probs * jnp.minimum(gaps, 1e6), -jnp.inf)
    best = jnp.max(weighted)
    tied = possible & (weighted >= best - 1e-6 * jnp.maximum(1.0, jnp.abs(best)))
    return masked_argmax(balanced, tied)
  return masked_argmax(balanced, possible)


def _select(tree: Tree, root_logits, keys, *, config: SearchConfig,
            root_context: Optional[RootContext] = None) -> tuple[Path, Tree]:
  """Descends every tree of the batch from its root to the edge its simulation will expand.

  The descent is batched by hand rather than vmapped: under ``vmap`` a ``while_loop`` with a
  per-tree predicate re-selects its whole carry (the path) every level, which measured as a
  third of the descent's kernels. Here finished trees simply stop writing (their path writes
  go out of range and are dropped). The selection *rule* is still a pure per-node function,
  vmapped over the batch.

  The tree rides through the loop unchanged and is returned, so that later reads and the
  backup's in-place writes are ordered after the descent.

  Args:
    tree: ``[B, ...]`` trees.
    root_logits: ``f32[B, K]`` root prior logits (Dirichlet noise mixed in).
    keys: ``[B]`` keys for rules or outcome rules that draw, else ``None``.
    root_context: ``[B]`` batched :class:`RootContext` for ``config.root_selection``; the
      root rule is scored once, before the descent, and its scores replace the interior
      rule's at depth 0 (a mask, not a branch).
  Returns:
    ``(path, tree)`` with a batched :class:`Path` (``[B, ...]``).
  """
  depth_limit = config.max_depth
  num_outcomes = tree.num_outcomes
  batch_ids = jnp.arange(tree.batch_size)
  score = jax.vmap(config.selection.score, in_axes=(0, 0 if keys is not None else None))
  noisy_root = config.dirichlet_fraction > 0.0
  slot_ids = jnp.arange(tree.num_slots)

  def exploration(tree, node):
    """``f32[B, K]`` E(s, a) of every slot of ``node[B]`` (subtree-entropy trees)."""
    chance = tree.slot_chance[batch_ids, node]
    safe_chance = jnp.maximum(chance, 0)
    kids = tree.chance_child[batch_ids[:, None], safe_chance]
    safe_kids = jnp.maximum(kids, 0)

    def at_kids(field):
      return field[batch_ids[:, None, None], safe_kids]

    return jax.vmap(entropy_lib.edge_exploration)(
        chance >= 0, tree.chance_prob[batch_ids[:, None], safe_chance], kids,
        at_kids(tree.node_entropy), at_kids(tree.node_leaves), at_kids(tree.node_closed))

  def view_of(tree, node, visits, value, depth):
    logits = tree.slot_prior_logits[batch_ids, node]
    if noisy_root:
      logits = jnp.where((node == 0)[:, None], root_logits, logits)
    child_visits = tree.slot_visits[batch_ids, node]
    child_values = tree.slot_value[batch_ids, node]
    action_values = tree.slot_action_value[batch_ids, node]
    legal = tree.slot_legal[batch_ids, node]
    if config.widening and not config.selection.sees_inactive:
      legal = legal & (slot_ids < tree.node_num_active[batch_ids, node][:, None])
    if config.bellman:
      solved = tree.slot_solved[batch_ids, node]
      legal = legal & ~solved
      debiased, variance = jax.vmap(functools.partial(slot_estimates, config=config))(
          node_stats(tree, batch_ids, node), child_values, child_visits, solved,
          tree.node_num_active[batch_ids, node])
      upper = tree.slot_upper[batch_ids, node]
    else:
      debiased = jnp.where(child_visits > 0, child_values, action_values)
      variance = jnp.zeros_like(child_values)
      upper = jnp.full_like(child_values, tree_lib.NO_UPPER)
    return NodeView(
        visits=visits, value=value, child_visits=child_visits, child_values=child_values,
        prior_logits=logits, action_values=action_values, legal=legal, depth=depth,
        debiased_values=debiased, value_variance=variance, upper_bounds=upper,
        child_exploration=(exploration(tree, node) if config.subtree_entropy is not None
                           else None))

  batch_size = tree.batch_size
  if config.root_selection is not None:
    zeros = jnp.zeros((batch_size,), jnp.int32)
    root_scores = jax.vmap(config.root_selection.score)(
        view_of(tree, zeros, tree.node_visits[:, 0], tree.node_value[:, 0], zeros),
        root_context)

  def body(carry):
    (node, visits, value, at_terminal, depth, steps, values, go), tree = carry
    view = view_of(tree, node, visits, value, depth)
    child_visits, child_values = view.child_visits, view.child_values
    if keys is not None:
      step_keys = jax.vmap(jax.random.fold_in)(keys, depth)
      rule_keys, outcome_keys = jnp.moveaxis(jax.vmap(jax.random.split)(step_keys), 1, 0)
    else:
      rule_keys = outcome_keys = None
    scores = score(view, rule_keys)
    if config.root_selection is not None:
      scores = jnp.where((depth == 0)[:, None], root_scores, scores)
    slot = jax.vmap(masked_argmax)(scores, view.legal)
    chance = tree.slot_chance[batch_ids, node, slot]
    safe_chance = jnp.maximum(chance, 0)
    if num_outcomes == 1:
      outcome = jnp.zeros_like(slot)
    else:
      probs = tree.chance_prob[batch_ids, safe_chance]
      gaps = None
      if config.bellman:  # never descend into a solved child
        children = tree.chance_child[batch_ids, safe_chance]
        safe_children = jnp.maximum(children, 0)
        open_child = ~tree.node_solved[batch_ids[:, None], safe_children]
        probs = jnp.where(open_child & (children >= 0), probs, 0.0)
        if config.outcome_rule == "gap":
          gaps = (tree.node_upper[batch_ids[:, None], safe_children] -
                  tree.node_bound[batch_ids[:, None], safe_children])
      outcome = jax.vmap(_choose_outcome, in_axes=(0, 0, 0 if keys is not None else None,
                                                   None, 0 if gaps is not None else None))(
          probs, tree.chance_visits[batch_ids, safe_chance], outcome_keys,
          config.outcome_rule, gaps)
    child = jnp.where(chance >= 0, tree.chance_child[batch_ids, safe_chance, outcome],
                      UNEXPANDED)
    # One packed int row and one float row per edge; finished trees write out of range.
    row = jnp.where(go, depth, depth_limit)
    slot_visits = jnp.take_along_axis(child_visits, slot[:, None], axis=1)[:, 0]
    slot_value = jnp.take_along_axis(child_values, slot[:, None], axis=1)[:, 0]
    steps = steps.at[batch_ids, row].set(
        jnp.stack([slot, outcome, child, chance, visits, slot_visits], axis=-1), mode="drop")
    values = values.at[batch_ids, row].set(jnp.stack([value, slot_value], axis=-1),
                                           mode="drop")
    depth = depth + go.astype(jnp.int32)
    safe_child = jnp.maximum(child, 0)
    moving = go & (child >= 0)
    # Read the next node's statistics now, so the leaf's are in hand when the loop stops.
    node = jnp.where(moving, child, node)
    visits = jnp.where(moving, tree.node_visits[batch_ids, safe_child], visits)
    value = jnp.where(moving, tree.node_value[batch_ids, safe_child], value)
    at_terminal = jnp.where(moving, tree.node_terminal[batch_ids, safe_child], at_terminal)
    go = moving & ~at_terminal & (depth < depth_limit)
    return (node, visits, value, at_terminal, depth, steps, values, go), tree

  root_open = (tree.num_nodes > 0) & ~tree.node_terminal[:, 0] & ~tree.node_solved[:, 0]
  init = (jnp.zeros((batch_size,), jnp.int32), tree.node_visits[:, 0], tree.node_value[:, 0],
          ~root_open, jnp.zeros((batch_size,), jnp.int32),
          jnp.full((batch_size, depth_limit, 6), UNEXPANDED, jnp.int32),
          jnp.zeros((batch_size, depth_limit, 2), jnp.float32), root_open)
  (_, leaf_visits, leaf_value, leaf_terminal, length, steps, values, _), tree = jax.lax.while_loop(
      lambda carry: jnp.any(carry[0][-1]), body, (init, tree))
  nodes = jnp.concatenate([jnp.zeros((batch_size, 1), jnp.int32), steps[:, :, 2]], axis=1)
  slots = jnp.maximum(steps[:, :, 0], 0)
  outcomes = jnp.maximum(steps[:, :, 1], 0)
  chances = steps[:, :, 3]

  last = jnp.maximum(length - 1, 0)
  expand = (length > 0) & (nodes[batch_ids, length] < 0)
  # A full tree stops growing: the simulation ends at the parent and re-backs its value.
  full = expand & (tree.num_nodes >= tree.max_nodes)
  length = jnp.where(full, last, length)
  expand = expand & ~full
  # Where the loop did not move onto an existing leaf (expand, full tree) the carried
  # statistics are the last decision node's: the leaf's in the full-tree case.
  leaf_terminal = leaf_terminal & ~expand
  new_chance = expand & (chances[batch_ids, last] < 0)
  return Path(nodes=nodes, slots=slots, outcomes=outcomes, chances=chances,
              node_visits=steps[:, :, 4], node_values=values[:, :, 0],
              slot_visits=steps[:, :, 5], slot_values=values[:, :, 1], length=length,
              expand=expand, new_chance=new_chance, leaf_visits=leaf_visits,
              leaf_value=leaf_value, leaf_terminal=leaf_terminal), tree


# ---- backup ------------------------------------------------------------------------------

def _leaf_value(path: Path, value):
  """``f32[B]`` value of where each simulation ended: the new node's estimate, 0 at a
  terminal node, else the existing leaf's value."""
  return jnp.where(path.expand, value, jnp.where(path.leaf_terminal, 0.0, path.leaf_value))


def _expand_one(tree: Tree, path: Path, expansion: Expansion, rows: NodeRows,
                probs) -> tuple[Tree, jax.Array]:
  """Writes the expanded edge (chance record, reward, discount, child) and the new node of one
  tree; returns it with ``i32[D]``, each path edge's chance record."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  length, expand, new_chance = path.length, path.expand, path.new_chance
  last = jnp.maximum(length - 1, 0)
  parent, slot, outcome = path.nodes[last], path.slots[last], path.outcomes[last]

  # The chance record of the expanded slot (created if new); out-of-range writes are dropped.
  chance_index = jnp.where(new_chance, tree.num_chance, path.chances[last])
  drop_chance = jnp.where(new_chance, tree.num_chance, capacity)
  new_node = tree.num_nodes
  write_node = jnp.where(expand, new_node, capacity)
  write_edge = jnp.where(expand, chance_index, capacity)

  edge_chances = jnp.maximum(jnp.where(
      (jnp.arange(depth_limit) == last) & new_chance, tree.num_chance, path.chances), 0)
  tree = _set_node(tree, write_node, expansion, rows, parent, length)
  return tree.replace(
      slot_chance=tree.slot_chance.at[jnp.where(new_chance, parent, capacity), slot].set(
          tree.num_chance, mode="drop"),
      chance_node=tree.chance_node.at[drop_chance].set(parent, mode="drop"),
      chance_prob=tree.chance_prob.at[drop_chance].set(probs, mode="drop"),
      chance_child=tree.chance_child.at[write_edge, outcome].set(new_node, mode="drop"),
      chance_reward=tree.chance_reward.at[write_edge, outcome].set(expansion.reward,
                                                                   mode="drop"),
      chance_discount=tree.chance_discount.at[write_edge, outcome].set(expansion.discount,
                                                                       mode="drop"),
      num_nodes=tree.num_nodes + expand.astype(jnp.int32),
      num_chance=tree.num_chance + new_chance.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + (rows.bad & expand).astype(jnp.int32),
  ), edge_chances


def _returns(tree: Tree, path: Path, edge_chances, leaf_value) -> jax.Array:
  """``f32[B, D]`` returns ``G_d = r_d + γ_d G_{d+1}`` along every path, ``G_L`` = leaf value.

  Batched by hand for the same reason as :func:`_select` (a vmapped loop re-selects its carry
  each step). Reads the chance records after :func:`_expand_one` wrote the new edge (reading
  them before the write would make XLA copy them). mctx's order of operations.
  """
  rows = jnp.arange(tree.batch_size)
  depth_limit = path.slots.shape[1]
  rewards = tree.chance_reward[rows[:, None], edge_chances, path.outcomes]
  discounts = tree.chance_discount[rows[:, None], edge_chances, path.outcomes]

  def recurse(carry):
    d, g, returns = carry
    active = d > 0
    d = jnp.where(active, d - 1, d)
    g = jnp.where(active, rewards[rows, d] + discounts[rows, d] * g, g)
    returns = returns.at[rows, jnp.where(active, d, depth_limit)].set(g, mode="drop")
    return d, g, returns

  _, _, returns = jax.lax.while_loop(
      lambda carry: jnp.any(carry[0] > 0), recurse,
      (path.length, leaf_value, jnp.zeros((tree.batch_size, depth_limit), jnp.float32)))
  return returns


def _backup_one(tree: Tree, path: Path, edge_chances, leaf_value, returns) -> Tree:
  """Running means of the returns for the nodes, slots and outcomes on one tree's path (the
  new node was written whole by :func:`_expand_one`)."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  on_path = jnp.arange(depth_limit) < path.length
  edge_nodes = jnp.maximum(path.nodes[:-1], 0)
  existing_leaf = jnp.where(path.expand, capacity, path.nodes[path.length])
  node_ids = jnp.concatenate([jnp.where(on_path, edge_nodes, capacity), existing_leaf[None]])
  node_returns = jnp.concatenate([returns, leaf_value[None]])
  counts = jnp.concatenate([path.node_visits, path.leaf_visits[None]]).astype(jnp.float32)
  old_values = jnp.concatenate([path.node_values, path.leaf_value[None]])
  means = (old_values * counts + node_returns) / (counts + 1.0)
  slot_rows = jnp.where(on_path, edge_nodes, capacity)
  slot_counts = path.slot_visits.astype(jnp.float32)
  slot_means = (path.slot_values * slot_counts + returns) / (slot_counts + 1.0)
  return tree.replace(
      node_visits=tree.node_visits.at[node_ids].add(1, mode="drop"),
      node_value=tree.node_value.at[node_ids].set(means, mode="drop"),
      slot_visits=tree.slot_visits.at[slot_rows, path.slots].add(1, mode="drop"),
      slot_value=tree.slot_value.at[slot_rows, path.slots].set(slot_means, mode="drop"),
      chance_visits=tree.chance_visits.at[jnp.where(on_path, edge_chances, capacity),
                                          path.outcomes].add(1, mode="drop"),
  )


def _entropy_update(tree: Tree, path: Path, config: SearchConfig) -> Tree:
  """Recomputes the subtree entropy ``H``, leaf count ``K`` and all-terminal flag of the
  nodes on every path, leaf to root, by the chain rule (:mod:`jaxsearch.entropy`).

  Runs after the running-mean backup (the playout policy reads the new visit counts and
  values). Only path nodes change: each level reads one node's ``[K]`` slot rows and its
  children's ``[K, O]`` statistics from the tree, replaces the path child's by the value the
  loop carries up, and the results are written once per field after the loop — the loop
  carries ``O(B)`` values, never the tree (DESIGN.md performance rules). ``O(D·K·O)``.
  """
  batch_size, depth_limit = path.slots.shape
  rows = jnp.arange(batch_size)
  num_slots, num_outcomes = tree.num_slots, tree.num_outcomes
  # The path's nodes with the new node (index num_nodes - 1 after the expansion) at the end.
  new_node = jnp.where(path.expand, tree.num_nodes - 1, path.nodes[rows, path.length])
  nodes = path.nodes.at[rows, path.length].set(new_node)
  mode, policy = config.subtree_entropy, config.entropy_policy

  def node_fn(legal, visits, values, logits, node_visits, node_value, terminal, has_chance,
              probs, kids, kid_entropy, kid_leaves, kid_closed):
    view = NodeView(visits=node_visits, value=node_value, child_visits=visits,
                    child_values=values, prior_logits=logits, action_values=values,
                    legal=legal, depth=jnp.int32(0), debiased_values=values,
                    value_variance=values, upper_bounds=values)
    probs_policy = entropy_lib.playout_policy(view, policy, config.entropy_pibar_c)
    edge = entropy_lib.edge_stats(has_chance, probs, kids, kid_entropy, kid_leaves, kid_closed)
    return entropy_lib.node_stats(probs_policy, legal, terminal, *edge, mode=mode)

  node_fn = jax.vmap(node_fn)
  carried_mask_slots = jnp.arange(num_slots)
  carried_mask_outcomes = jnp.arange(num_outcomes)

  def body(carry):
    depth, child_h, child_k, child_c, out_h, out_k, out_c = carry
    depth = depth - 1
    live = depth >= 0
    row = jnp.maximum(depth, 0)
    node = jnp.maximum(nodes[rows, row], 0)
    chance = tree.slot_chance[rows, node]
    safe_chance = jnp.maximum(chance, 0)
    kids = jnp.where((chance >= 0)[:, :, None], tree.chance_child[rows[:, None], safe_chance],
                     UNEXPANDED)
    safe_kids = jnp.maximum(kids, 0)
    # The path child (below every level but the deepest) takes the carried statistics.
    carried = ((carried_mask_slots == path.slots[rows, row][:, None])[:, :, None] &
               (carried_mask_outcomes == path.outcomes[rows, row][:, None])[:, None, :] &
               (depth < path.length)[:, None, None])

    def kid(field, value):
      return jnp.where(carried, value[:, None, None], field[rows[:, None, None], safe_kids])

    h, k, c = node_fn(
        tree.slot_legal[rows, node], tree.slot_visits[rows, node], tree.slot_value[rows, node],
        tree.slot_prior_logits[rows, node], tree.node_visits[rows, node],
        tree.node_value[rows, node], tree.node_terminal[rows, node], chance >= 0,
        tree.chance_prob[rows[:, None], safe_chance], kids, kid(tree.node_entropy, child_h),
        kid(tree.node_leaves, child_k), kid(tree.node_closed, child_c))
    out_row = jnp.where(live, depth, depth_limit + 1)
    out_h = out_h.at[rows, out_row].set(h, mode="drop")
    out_k = out_k.at[rows, out_row].set(k, mode="drop")
    out_c = out_c.at[rows, out_row].set(c, mode="drop")
    return (row, jnp.where(live, h, child_h), jnp.where(live, k, child_k),
            jnp.where(live, c, child_c), out_h, out_k, out_c)

  zeros = jnp.zeros((batch_size,), jnp.float32)
  levels = (batch_size, depth_limit + 1)
  init = (path.length + 1, zeros, zeros + 1.0, jnp.zeros((batch_size,), bool),
          jnp.zeros(levels, jnp.float32), jnp.ones(levels, jnp.float32),
          jnp.zeros(levels, bool))
  *_, out_h, out_k, out_c = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), body, init)
  on_path = jnp.arange(depth_limit + 1)[None, :] <= path.length[:, None]
  ids = jnp.where(on_path & (nodes >= 0), nodes, tree.max_nodes)
  return tree.replace(
      node_entropy=tree.node_entropy.at[rows[:, None], ids].set(out_h, mode="drop"),
      node_leaves=tree.node_leaves.at[rows[:, None], ids].set(out_k, mode="drop"),
      node_closed=tree.node_closed.at[rows[:, None], ids].set(out_c, mode="drop"))


# ---- Bellman backup (AVTS) ---------------------------------------------------------------

def _expand_all_one(tree: Tree, path: Path, expansion: Expansion, rows: NodeRows,
                    probs) -> tuple[Tree, jax.Array]:
  """Bellman mode: creates the expanded slot's chance record with **every** possible outcome's
  node at once (``expansion``/``rows`` are ``[O, ...]``, unbatched tree). Returns the tree and
  ``i32[D]``, each path edge's chance record."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  last = jnp.maximum(path.length - 1, 0)
  parent, slot = path.nodes[last], path.slots[last]
  expand = path.expand
  possible = probs > 0
  child_ids = tree.num_nodes + jnp.cumsum(possible).astype(jnp.int32) - 1
  children = jnp.where(possible, child_ids, UNEXPANDED)
  tree = _set_node(tree, jnp.where(expand & possible, child_ids, capacity), expansion, rows,
                   parent, path.length)
  chance = tree.num_chance
  write_chance = jnp.where(expand, chance, capacity)
  edge_chances = jnp.maximum(jnp.where(
      (jnp.arange(depth_limit) == last) & expand, chance, path.chances), 0)
  return tree.replace(
      slot_chance=tree.slot_chance.at[jnp.where(expand, parent, capacity), slot].set(
          chance, mode="drop"),
      chance_node=tree.chance_node.at[write_chance].set(parent, mode="drop"),
      chance_prob=tree.chance_prob.at[write_chance].set(probs, mode="drop"),
      chance_child=tree.chance_child.at[write_chance].set(children, mode="drop"),
      # Impossible outcomes hold zeros, however (or whether) they were evaluated.
      chance_reward=tree.chance_reward.at[write_chance].set(
          jnp.where(possible, expansion.reward, 0.0), mode="drop"),
      chance_discount=tree.chance_discount.at[write_chance].set(
          jnp.where(possible, expansion.discount, 0.0), mode="drop"),
      num_nodes=tree.num_nodes + jnp.where(expand, jnp.sum(possible), 0).astype(jnp.int32),
      num_chance=tree.num_chance + expand.astype(jnp.int32),
      nonfinite_estimates=tree.nonfinite_estimates + jnp.where(
          expand, jnp.sum(rows.bad & possible), 0).astype(jnp.int32),
  ), edge_chances


@struct.dataclass
class _Level:
  """What the Bellman backup changes at one node of a path (one tree, one level)."""

  slot_value: jax.Array  # f32[], the taken slot's new q̂2
  slot_solved: jax.Array  # bool[]
  slot_bound: jax.Array  # f32[]
  stats: debias_lib.DebiasStats  # [V]
  num_active: jax.Array  # i32[]
  value: jax.Array  # f32[], V(s) = max over active slots of q̂3
  solved: jax.Array  # bool[]
  bound: jax.Array  # f32[]
  slot_upper: jax.Array  # f32[]
  upper: jax.Array  # f32[]


def _bellman_level(tree_values, visits, legal, solved, num_active, stats, slot_bounds,
                   node_bound, slot_uppers, node_upper, node_cut_upper, slot, probs, rewards,
                   discounts, child_values, child_bounds, child_uppers, child_solved, *,
                   config: SearchConfig) -> _Level:
  """One node's Bellman update after its slot ``slot`` was simulated (``[K]`` slot rows,
  ``[O]`` outcome rows of the slot's chance record with the children's current values)."""
  possible = probs > 0
  q2_new = jnp.sum(jnp.where(possible, probs * (rewards + discounts * child_values), 0.0))
  q2_old = tree_values[slot]
  visits_before = visits[slot]
  change = q2_new - q2_old
  slot_solved = jnp.all(jnp.where(possible, child_solved, True))
  if config.variance == "centred":
    debiased_change = None  # Welford's centred squares of the changes
  elif config.debias and config.variance == "avts":
    # q̂3 after minus q̂3 before; a slot this visit solves is exact: q̂3 = q̂2, no correction.
    correction_after = jnp.where(slot_solved, 0.0,
                                 debias_lib.correction(stats, visits_before + 1))
    debiased_change = change + correction_after - debias_lib.correction(stats, visits_before)
  else:
    debiased_change = change  # q̂3 = q̂2 (no debias), or the reference code's raw change
  stats = debias_lib.record(stats, visits_before + 1, change, debiased_change)
  tree_values = tree_values.at[slot].set(q2_new)
  visits = visits.at[slot].add(1)
  solved = solved.at[slot].set(slot_solved)
  num_candidates = jnp.sum(legal).astype(jnp.int32)
  if config.widening:  # choosing the newest slot activates the next candidate
    num_active = jnp.where((slot == num_active - 1) & (num_active < num_candidates),
                           num_active + 1, num_active)
    # A rule that sees inactive slots activates every slot up to the one it chose.
    num_active = jnp.maximum(num_active, jnp.minimum(slot + 1, num_candidates))
  active = legal & (jnp.arange(legal.shape[0]) < num_active)
  debiased, _ = slot_estimates(stats, tree_values, visits, solved, num_active,
                               config=dataclasses.replace(config, variance="off"))
  value = jnp.max(jnp.where(active, debiased, -jnp.inf))
  value = jnp.where(jnp.any(active), value, 0.0)
  node_solved = (jnp.sum(active) >= num_candidates) & jnp.all(jnp.where(active, solved, True))
  # With a negative discount (zero-sum games) a child's lower bound bounds the parent from
  # above and vice versa.
  flip = discounts < 0
  child_bounds, child_uppers = (jnp.where(flip, child_uppers, child_bounds),
                                jnp.where(flip, child_bounds, child_uppers))
  slot_bound = jnp.maximum(slot_bounds[slot], jnp.sum(
      jnp.where(possible, probs * (rewards + discounts * child_bounds), 0.0)))
  # Optimistic bound: a slot's is the expectation of its children's; the node's is the best of
  # its slots' (each starts at the game's optimistic value or its action's bound) and of the
  # actions left out of the slots.
  slot_upper = jnp.minimum(slot_uppers[slot], jnp.sum(
      jnp.where(possible, probs * (rewards + discounts * child_uppers), 0.0)))
  best_upper = jnp.max(jnp.where(legal, slot_uppers.at[slot].set(slot_upper), -jnp.inf))
  upper = jnp.minimum(node_upper, jnp.maximum(best_upper, node_cut_upper))
  return _Level(slot_value=q2_new, slot_solved=slot_solved, slot_bound=slot_bound, stats=stats,
                num_active=num_active, value=value, solved=node_solved,
                bound=jnp.maximum(node_bound, slot_bound), slot_upper=slot_upper, upper=upper)


def _bellman_levels(tree: Tree, path: Path, edge_chances, config: SearchConfig) -> _Level:
  """``[B, D]`` Bellman updates along every path, leaf to root.

  Batched by hand like :func:`_returns`: the loop carries the child's new value, bound and
  solved flag up the path and collects per-level results; the tree is only read (it already
  holds the new nodes), and written once afterwards by :func:`_bellman_write_one`.
  """
  batch_size, depth_limit = path.slots.shape
  rows = jnp.arange(batch_size)
  level_fn = jax.vmap(functools.partial(_bellman_level, config=config))
  empty = jax.tree.map(
      lambda x: jnp.zeros((batch_size, depth_limit) + x.shape[1:], x.dtype),
      jax.eval_shape(level_fn, *(
          [tree.slot_value[:, 0], tree.slot_visits[:, 0], tree.slot_legal[:, 0],
           tree.slot_solved[:, 0], tree.node_num_active[:, 0], node_stats(tree, rows, 0),
           tree.slot_bound[:, 0], tree.node_bound[:, 0], tree.slot_upper[:, 0],
           tree.node_upper[:, 0], tree.node_cut_upper[:, 0], path.slots[:, 0]] +
          [tree.chance_prob[:, 0]] * 6 + [tree.chance_child[:, 0] >= 0])))

  def body(carry):
    depth, child_value, child_bound, child_upper, child_solved, levels = carry
    depth = depth - 1
    live = depth >= 0
    row = jnp.maximum(depth, 0)
    node = jnp.maximum(path.nodes[rows, row], 0)
    slot = path.slots[rows, row]
    chance = edge_chances[rows, row]
    kids = tree.chance_child[rows, chance]
    safe_kids = jnp.maximum(kids, 0)
    # Below the deepest edge the tree holds the child's values; above it, the carried ones.
    carried = ((jnp.arange(tree.num_outcomes) == path.outcomes[rows, row][:, None]) &
               (depth < path.length - 1)[:, None])
    kid_values = jnp.where(carried, child_value[:, None],
                           tree.node_value[rows[:, None], safe_kids])
    kid_bounds = jnp.where(carried, child_bound[:, None],
                           tree.node_bound[rows[:, None], safe_kids])
    kid_uppers = jnp.where(carried, child_upper[:, None],
                           tree.node_upper[rows[:, None], safe_kids])
    kid_solved = jnp.where(carried, child_solved[:, None],
                           tree.node_solved[rows[:, None], safe_kids]) & (kids >= 0)
    level = level_fn(
        tree.slot_value[rows, node], tree.slot_visits[rows, node], tree.slot_legal[rows, node],
        tree.slot_solved[rows, node], tree.node_num_active[rows, node],
        node_stats(tree, rows, node), tree.slot_bound[rows, node], tree.node_bound[rows, node],
        tree.slot_upper[rows, node], tree.node_upper[rows, node], tree.node_cut_upper[rows, node],
        slot, tree.chance_prob[rows, chance], tree.chance_reward[rows, chance],
        tree.chance_discount[rows, chance], kid_values, kid_bounds, kid_uppers, kid_solved)
    out_row = jnp.where(live, depth, depth_limit)
    levels = jax.tree.map(lambda buf, x: buf.at[rows, out_row].set(x, mode="drop"), levels,
                          level)
    return (jnp.maximum(depth, 0), jnp.where(live, level.value, child_value),
            jnp.where(live, level.bound, child_bound), jnp.where(live, level.upper, child_upper),
            jnp.where(live, level.solved, child_solved), levels)

  zeros = jnp.zeros((batch_size,), jnp.float32)
  init = (path.length, zeros, zeros, zeros, jnp.zeros((batch_size,), bool), empty)
  *_, levels = jax.lax.while_loop(lambda carry: jnp.any(carry[0] > 0), body, init)
  return levels


def _bellman_write_one(tree: Tree, path: Path, edge_chances, levels: _Level) -> Tree:
  """Writes one tree's ``[D]`` level updates and visit counts."""
  capacity = tree.node_visits.shape[0]
  depth_limit = path.slots.shape[0]
  on_path = jnp.arange(depth_limit) < path.length
  node_ids = jnp.where(on_path, jnp.maximum(path.nodes[:-1], 0), capacity)
  existing_leaf = jnp.where(path.expand, capacity, path.nodes[path.length])
  slots = path.slots

  def node_set(field, x):
    return field.at[node_ids].set(x, mode="drop")

  def slot_set(field, x):
    return field.at[node_ids, slots].set(x, mode="drop")

  return tree.replace(
      node_visits=tree.node_visits.at[jnp.concatenate([node_ids, existing_leaf[None]])].add(
          1, mode="drop"),
      node_value=node_set(tree.node_value, levels.value),
      node_num_active=node_set(tree.node_num_active, levels.num_active),
      node_solved=node_set(tree.node_solved, levels.solved),
      node_bound=node_set(tree.node_bound, levels.bound),
      node_upper=node_set(tree.node_upper, levels.upper),
      node_bias_count=node_set(tree.node_bias_count, levels.stats.count),
      node_bias_mean=node_set(tree.node_bias_mean, levels.stats.bias_mean),
      node_bias_sq_sum=node_set(tree.node_bias_sq_sum, levels.stats.sq_sum),
      slot_visits=tree.slot_visits.at[node_ids, slots].add(1, mode="drop"),
      slot_value=slot_set(tree.slot_value, levels.slot_value),
      slot_solved=slot_set(tree.slot_solved, levels.slot_solved),
      slot_bound=slot_set(tree.slot_bound, levels.slot_bound),
      slot_upper=slot_set(tree.slot_upper, levels.slot_upper),
      # A fresh expansion's outcomes were not chosen by the outcome rule: no visit to count.
      chance_visits=tree.chance_visits.at[
          jnp.where(on_path & ~((jnp.arange(depth_limit) == path.length - 1) & path.expand),
                    edge_chances, capacity), path.outcomes].add(1, mode="drop"),
  )


def _bellman_simulation(model: Model, config: SearchConfig, params, key, tree: Tree,
                        path: Path, parent_states, actions) -> Tree:
  """Expand (all outcomes, one estimator call for ``B·O`` states) and Bellman-backup."""
  batch_size = tree.batch_size
  num_outcomes = model.num_outcomes
  batch_ids = jnp.arange(batch_size)
  last = jnp.maximum(path.length - 1, 0)
  if num_outcomes == 1:
    probs = jnp.ones((batch_size, 1), jnp.float32)
  else:
    probs = _outcome_probs(model, params, parent_states, actions, batch_size)
  possible = probs > 0
  # All possible outcomes get a node now; where they (or their chance record) do not fit, the
  # tree stops growing.
  fits = ((tree.num_nodes + jnp.sum(possible, axis=-1) <= tree.max_nodes)
          & (tree.num_chance < tree.max_chance))
  full = path.expand & ~fits
  first_outcome = jnp.argmax(possible, axis=-1).astype(jnp.int32)
  outcomes = jnp.where(path.expand, first_outcome, path.outcomes[batch_ids, last])
  path = path.replace(length=jnp.where(full, last, path.length), expand=path.expand & fits,
                      new_chance=path.new_chance & fits,
                      outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
  expansion, rows = _expand_outcomes(model, config, params, key, parent_states, actions,
                                     possible & path.expand[:, None])

  def per_tree(x):
    return x.reshape((batch_size, num_outcomes) + x.shape[1:])

  tree, edge_chances = jax.vmap(_expand_all_one)(
      tree, path, jax.tree.map(per_tree, expansion), jax.tree.map(per_tree, rows), probs)
  levels = _bellman_levels(tree, path, edge_chances, config)
  return jax.vmap(_bellman_write_one)(tree, path, edge_chances, levels)


def _expand_outcomes(model: Model, config: SearchConfig, params, key, parent_states, actions,
                     wanted) -> tuple[Expansion, NodeRows]:
  """Steps and evaluates every outcome of each tree's expanded action: ``(expansion, rows)``
  with leading ``[B·O]`` (tree-major), of which only ``wanted`` (``bool[B, O]``) matter.

  Where ``B·O <= config.expand_chunk``: one model call for all ``B·O`` states. Otherwise the
  wanted ones are compacted to the front and done ``expand_chunk`` at a time in a loop that
  runs only as many chunks as there are wanted states; each chunk is reduced to its node rows
  (``K`` slots) before the next, so the estimator's ``[·, A]`` outputs exist for one chunk
  only. The other entries keep zero rows and states (they are never written to the tree).
  The returned ``expansion`` carries ``legal`` and ``estimate`` only on the one-call path
  (``None`` otherwise): the tree reads its rows.
  """
  batch_size, num_outcomes = wanted.shape
  total = batch_size * num_outcomes
  all_outcomes = jnp.tile(jnp.arange(num_outcomes, dtype=jnp.int32), batch_size)
  if total <= config.expand_chunk:
    def repeat(x):
      return jnp.repeat(x, num_outcomes, axis=0)

    expansion = model.step(params, key, jax.tree.map(repeat, parent_states), repeat(actions),
                           all_outcomes)
    return expansion, _node_rows(expansion, config, model.num_actions)
  chunk = config.expand_chunk
  num_chunks = -(-total // chunk)
  flat = wanted.reshape(-1)
  count = jnp.sum(flat, dtype=jnp.int32)
  # Wanted entries first, in order; the padding repeats entry 0 and is never written.
  order = jnp.argsort(~flat, stable=True).astype(jnp.int32)
  order = jnp.concatenate([order, jnp.zeros((num_chunks * chunk - total,), jnp.int32)])

  def light(entries, chunk_key):
    """Steps and evaluates flat entries ``i32[c]``; keeps what the tree stores."""
    tree_ids = entries // num_outcomes
    expansion = model.step(params, chunk_key,
                           jax.tree.map(lambda x: x[tree_ids], parent_states),
                           actions[tree_ids], entries % num_outcomes)
    rows = _node_rows(expansion, config, model.num_actions)
    return expansion.replace(legal=None, estimate=None), rows

  shapes = jax.eval_shape(light, order[:chunk], key)
  buffers = jax.tree.map(lambda x: jnp.zeros((total,) + x.shape[1:], x.dtype), shapes)

  def body(index, buffers):
    start = index * chunk
    entries = jax.lax.dynamic_slice_in_dim(order, start, chunk)
    targets = jnp.where(start + jnp.arange(chunk) < count, entries, total)  # total: dropped
    # A key per chunk: a stochastic estimator's draws are not repeated from chunk to chunk.
    return jax.tree.map(lambda buffer, x: buffer.at[targets].set(x, mode="drop"), buffers,
                        light(entries, jax.random.fold_in(key, index)))

  return jax.lax.fori_loop(0, (count + chunk - 1) // chunk, body, buffers)


def _outcome_probs(model: Model, params, states, actions, batch_size: int) -> jax.Array:
  probs = model.outcome_probs(params, states, actions)
  if probs.shape != (batch_size, model.num_outcomes):
    raise ValueError(f"outcome_probs must return [B, O]=({batch_size}, "
                     f"{model.num_outcomes}), got {probs.shape}")
  return probs


# ---- the search --------------------------------------------------------------------------

def init_tree(model: Model, config: SearchConfig, params, key, root_input,
              tree: Optional[Tree] = None) -> Tree:
  """A batch of trees whose roots are ``root_input`` (evaluated once).

  Where ``tree`` is given, its non-empty rows are kept (subtree reuse) and only its empty rows
  (``num_nodes == 0``, e.g. after :func:`jaxsearch.tree.reroot` into an unexpanded child) start
  from ``root_input``.
  """
  validation.check_inputs(model, config, params, key, root_input, tree)  # trace time only
  expansion = model.root(params, key, root_input)
  batch_size, num_actions = expansion.legal.shape
  if num_actions != model.num_actions:
    raise ValueError(f"root legal mask has {num_actions} actions, the model {model.num_actions}")
  state_example = jax.tree.map(lambda x: x[0], expansion.state)
  num_buckets = config.num_buckets if config.bellman else 1
  fresh = tree_lib.allocate(batch_size, config.max_nodes, config.slots_for(num_actions),
                            model.num_outcomes, state_example, num_buckets, config.bellman,
                            entropy=config.subtree_entropy is not None,
                            max_chance=config.chance_capacity)
  fresh = jax.vmap(_write_root)(fresh, expansion, _node_rows(expansion, config, num_actions))
  if tree is None:
    return fresh
  expected = (batch_size, config.max_nodes, config.slots_for(num_actions), model.num_outcomes,
              num_buckets, config.chance_capacity)
  got = (tree.batch_size, tree.max_nodes, tree.num_slots, tree.num_outcomes, tree.num_buckets,
         tree.max_chance)
  if got != expected:
    raise ValueError(f"tree has (B, N, K, O, V, C) = {got}, this search needs {expected}")
  if tree.slot_bound.shape != fresh.slot_bound.shape:
    raise ValueError("the tree was made for the other backup (backup='mean' vs 'bellman')")
  if tree.node_entropy.shape != fresh.node_entropy.shape:
    raise ValueError("the tree was made with another subtree_entropy setting (None vs kept)")
  if jax.tree.structure(tree.node_state) != jax.tree.structure(fresh.node_state):
    raise ValueError("tree.node_state does not match the structure of the root states")
  keep = tree.num_nodes > 0
  return jax.tree.map(
      lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), old, new),
      tree, fresh)


def draw_root_noise(config: SearchConfig, key, batch_size: int, num_slots: int) -> jax.Array:
  """``f32[B, K]`` the per-search draw of ``config.root_selection`` (zeros without one, or
  when the rule draws nothing); item ``b`` depends on ``key`` and ``b`` only."""
  rule = config.root_selection
  if rule is None or rule.noise is None:
    return jnp.zeros((batch_size, num_slots), jnp.float32)
  return jax.vmap(lambda k: rule.noise(k, (num_slots,)))(per_item_keys(key, batch_size))


def run(model: Model, config: SearchConfig, params, key, root_input,
        tree: Optional[Tree] = None, root_noise: Optional[jax.Array] = None) -> Tree:
  """Runs ``config.num_simulations`` simulations on a batch of trees and returns them.

  Args:
    model: the batched world (see :mod:`jaxsearch.model`).
    config: static settings.
    params: estimator parameters (any pytree, passed through).
    key: a PRNG key.
    root_input: the root states ``[B, ...]`` (for :func:`jaxsearch.model.from_game`).
    tree: optional trees to continue (subtree reuse).
    root_noise: ``f32[B, K]`` the per-search draw of ``config.root_selection``
      (:func:`draw_root_noise`); ``None`` draws it from ``key``.
  Returns:
    The trees, ``[B, N, ...]``.
  """
  root_key, noise_key, loop_key = jax.random.split(key, 3)
  tree = init_tree(model, config, params, root_key, root_input, tree)
  batch_size = tree.batch_size
  batch_ids = jnp.arange(batch_size)
  root_logits = tree.slot_prior_logits[:, 0]
  if config.dirichlet_fraction > 0.0:
    root_logits = jax.vmap(_root_noise_logits, in_axes=(0, 0, 0, None, None))(
        per_item_keys(noise_key, batch_size), root_logits, tree.slot_legal[:, 0],
        config.dirichlet_fraction, config.dirichlet_alpha)
  needs_key = config.selection.needs_key or (
      model.num_outcomes > 1 and config.outcome_rule == "sample")
  root_raw_value = tree.node_raw_value[:, 0]
  if config.root_selection is not None and root_noise is None:
    root_noise = draw_root_noise(config, jax.random.fold_in(noise_key, 1), batch_size,
                                 tree.num_slots)

  def simulate(sim, tree):
    sim_key = jax.random.fold_in(loop_key, sim)
    select_key, outcome_key, estimator_key = jax.random.split(sim_key, 3)
    tree_keys = per_item_keys(select_key, batch_size) if needs_key else None
    root_context = None
    if config.root_selection is not None:
      root_context = RootContext(noise=root_noise,
                                 simulation=jnp.full((batch_size,), sim, jnp.int32),
                                 raw_value=root_raw_value)
    path, tree = _select(tree, root_logits, tree_keys, config=config,
                         root_context=root_context)
    # Ties the tree's later reads and in-place writes to after the descent, so that XLA
    # updates the buffers the descent read instead of copying them (see _select).
    path, tree = jax.lax.optimization_barrier((path, tree))
    last = jnp.maximum(path.length - 1, 0)
    parents = path.nodes[batch_ids, last]
    slots = path.slots[batch_ids, last]
    parent_states = jax.tree.map(lambda x: x[batch_ids, parents], tree.node_state)
    actions = tree.slot_action[batch_ids, parents, slots]
    if config.bellman:
      return _bellman_simulation(model, config, params, estimator_key, tree, path,
                                 parent_states, actions)
    if model.num_outcomes == 1:
      probs = jnp.ones((batch_size, 1), jnp.float32)
      outcomes = path.outcomes[batch_ids, last]
    else:
      probs = _outcome_probs(model, params, parent_states, actions, batch_size)
      fresh_outcomes = jax.vmap(_choose_outcome, in_axes=(0, None, 0, None))(
          probs, jnp.zeros((model.num_outcomes,)), per_item_keys(outcome_key, batch_size),
          config.outcome_rule)
      outcomes = jnp.where(path.new_chance, fresh_outcomes, path.outcomes[batch_ids, last])
      path = path.replace(outcomes=path.outcomes.at[batch_ids, last].set(outcomes))
    expansion = model.step(params, estimator_key, parent_states, actions, outcomes)
    rows = _node_rows(expansion, config, model.num_actions)
    tree, edge_chances = jax.vmap(_expand_one)(tree, path, expansion, rows, probs)
    leaf_value = _leaf_value(path, rows.value)
    returns = _returns(tree, path, edge_chances, leaf_value)
    tree = jax.vmap(_backup_one)(tree, path, edge_chances, leaf_value, returns)
    if config.subtree_entropy is not None:
      tree = _entropy_update(tree, path, config)
    return tree

  return jax.lax.fori_loop(0, config.num_simulations, simulate, tree)
