"""Static settings of one search (:class:`SearchConfig`) and their validation."""

from __future__ import annotations

import dataclasses
from typing import Optional

from jaxsearch.selection.base import RootRule, SelectionRule


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
