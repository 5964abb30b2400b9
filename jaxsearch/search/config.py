"""Static settings of one search (:class:`SearchConfig` and its parts) and their validation.

A config is built once and validated once (``__post_init__``): mode strings become enum members
(:mod:`jaxsearch.enums`), sizes and combinations are checked, and every error names the option
and what it accepts. Options that belong together are small typed parts: :class:`RootNoise`
(Dirichlet noise at the root), :class:`AvtsOptions` (the Bellman backup's) and
:class:`EntropyOptions` (the subtree entropy of entropy-guided PUCT).

    config = SearchConfig(num_simulations=64, selection=js.selection.thompson(),
                          backup="bellman", avts=AvtsOptions(widening=True, num_buckets=16))
    search = js.policies.custom(game, estimator, config=config)
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from jaxsearch.enums import (Backup, EntropyPolicy, OutcomeRule, PathUpdate, SubtreeEntropy,
                             Variance, coerce)
from jaxsearch.selection.base import RootRule, SelectionRule


def _set(obj, name, value):
  object.__setattr__(obj, name, value)  # coercion in a frozen dataclass's __post_init__


def _positive_int(value, name: str) -> None:
  if not isinstance(value, int) or isinstance(value, bool) or value < 1:
    raise ValueError(f"{name} must be a positive int, got {value!r}")


@dataclasses.dataclass(frozen=True)
class RootNoise:
  """Dirichlet noise at the root: the prior becomes ``(1 - fraction) p + fraction η``,
  ``η ~ Dir(alpha)`` over the legal actions (AlphaZero: 0.25, 0.3). A ``fraction`` of 0 is
  no noise (:class:`SearchConfig` then keeps ``root_noise=None``)."""

  fraction: float = 0.25
  alpha: float = 0.3

  def __post_init__(self):
    if not 0.0 <= self.fraction <= 1.0:
      raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.fraction}")
    if self.alpha <= 0.0:
      raise ValueError(f"dirichlet_alpha must be > 0, got {self.alpha}")


@dataclasses.dataclass(frozen=True)
class AvtsOptions:
  """Options of the Bellman backup (AVTS, ALGORITHMS.md §2; ``SearchConfig(backup="bellman")``).

  Attributes:
    widening: progressive widening: a node starts with its best slot by q̂1 and activates
      the next whenever the newest (unvisited) one is chosen.
    debias: subtract the expected remaining drift (off: q̂3 is q̂2).
    variance: :class:`~jaxsearch.enums.Variance`: ``"avts"`` (the default: squared changes
      of q̂3 after subtracting the bucket's bias mean from *before* the record, so a bucket's
      first record adds the whole drift — inflated, and measured better for Thompson on
      Wordle and Mastermind), ``"centred"`` (the AVTS article's: changes centred on the
      updated bias, Welford, with a cold start), ``"reference"`` (the reference code's
      quirks, :mod:`jaxsearch.debias`) or ``"off"`` (σ² = 0: Thompson becomes greedy).
    num_buckets: ``V``, visit-count buckets of the debias statistics (the last absorbs the
      tail).
    bound_slots: of the ``K`` slots, how many go to the best admissible action bounds
      (``Estimate.action_bounds``) among the actions q̂1 did not place (none without bounds).
      A cut action's bound floors its node's optimistic bound, so a proof needs the actions
      whose bounds beat the optimum in slots, and q̂1 ranks some of them low (Mastermind 4×6
      after ``1123``: 96 of 128 slots close every sub-problem's proof).
    max_chance: ``C``, chance records per tree (``None``: ``max_nodes``). Expanding a slot
      creates one record holding all its possible outcomes' nodes, so a tree of ``N`` nodes
      holds about ``N / (outcomes per expansion)`` records: with many outcomes (Wordle's 243
      feedbacks, 4.9 KB a record) a smaller ``C`` saves most of the tree's memory. A tree
      whose records run out stops growing, as when its nodes do.
    expand_chunk: the outcome states of one expansion step (``B·O`` of them) are stepped and
      evaluated ``expand_chunk`` at a time, and only the possible outcomes of the trees that
      expand (``p > 0``), each chunk reduced to its ``K`` slots before the next: the
      estimator's ``[·, A]`` outputs never exist for all ``B·O`` states at once. Where
      ``B·O <= expand_chunk`` all are evaluated in one call.
  """

  widening: bool = False
  debias: bool = True
  variance: Variance = Variance.AVTS
  num_buckets: int = 32
  bound_slots: int = 0
  max_chance: Optional[int] = None
  expand_chunk: int = 256

  def __post_init__(self):
    _set(self, "variance", coerce(Variance, self.variance, "variance"))
    _positive_int(self.num_buckets, "num_buckets")
    _positive_int(self.expand_chunk, "expand_chunk")
    if not isinstance(self.bound_slots, int) or self.bound_slots < 0:
      raise ValueError(f"bound_slots must be an int in [0, num_slots), got {self.bound_slots!r}")


@dataclasses.dataclass(frozen=True)
class EntropyOptions:
  """The subtree entropy a search keeps for entropy-guided PUCT (ALGORITHMS.md §4;
  running-mean backup only): each node's entropy ``H``, frontier-leaf count ``K`` and
  all-terminal flag, updated along the backup path in ``O(D·K·O)`` and shown to the rule as
  ``NodeView.child_exploration``.

  Attributes:
    kind: :class:`~jaxsearch.enums.SubtreeEntropy`: ``"full"`` (chain rule over the whole
      subtree) or ``"one_level"`` (the cheap proxy: a node's own playout-policy entropy over
      its legal edges).
    policy: :class:`~jaxsearch.enums.EntropyPolicy`, the playout policy defining the leaf
      distribution: ``"pi_hat"`` ``π̂(a) = (1 + n(a)) / (|A| + N)`` or ``"pibar"`` (π̄,
      :func:`jaxsearch.selection.pibar_policy` with ``c = pibar_c``).
    pibar_c: π̄'s constant for ``policy="pibar"``.
  """

  kind: SubtreeEntropy = SubtreeEntropy.FULL
  policy: EntropyPolicy = EntropyPolicy.PI_HAT
  pibar_c: float = 1.25

  def __post_init__(self):
    _set(self, "kind", coerce(SubtreeEntropy, self.kind, "subtree_entropy"))
    _set(self, "policy", coerce(EntropyPolicy, self.policy, "entropy_policy"))


@dataclasses.dataclass(frozen=True)
class LoopOptions:
  """How a simulation walks its path on the device. Every setting builds the same tree, bit
  for bit; they trade bytes against loop trips, whose cost depends on the backend: on a CPU a
  trip of a loop is cheap and bytes are not, on a GPU each trip of a data-dependent loop waits
  for the device to hand its condition to the host (tens of microseconds), while a kernel
  over a few more bytes costs a few. ``None`` settings follow the backend the search is
  traced for (:meth:`resolved`).

  Attributes:
    path_update: :class:`~jaxsearch.enums.PathUpdate`: the running-mean backup writes the
      path level by level (``"per_level"``, the CPU's default) or all at once
      (``"whole_path"``, an accelerator's).
    levels_per_trip: levels of the descent each trip of its loop takes (a walk that ended
      stays put for the rest of a trip); default 1 on a CPU, 2 on an accelerator.
    batched_opening: where the root rule names its first simulations up front
      (``RootRule.opening``, Gumbel MuZero's first phase), run them as one batched step
      (:mod:`jaxsearch.search.opening`) rather than one simulation each (default ``True``).
      The same tree, but where the sequential root rule meets a tie that float rounding
      made (:func:`jaxsearch.gumbel.gumbel_top_m`). That step calls the model once on
      ``B·m`` states, ``m`` times a simulation's batch: turn it off where a large network's
      activations for that many states would not fit.
    batched_phases: after such an opening, where the root rule also says which slots each
      later simulation chooses among (``RootRule.schedule``: Sequential Halving's later
      phases), run each stretch of simulations that share a visit level as one batched step
      (:mod:`jaxsearch.search.phases`; default ``False``). The same tree for an estimator
      that does not draw (the children's prior probabilities may differ in the last bit, as
      with the opening); one that draws gets a stretch's keys by candidate rather than by
      pick. A stretch walks and evaluates every candidate (at 32 simulations and ``m = 16``:
      28 walks for 16 simulations) and still replays the root rule pick by pick, in exchange
      for 3 batched steps instead of 16 trips of the loop: slower on a CPU (measured), meant
      for an accelerator, where each trip of a loop waits on the host.
  """

  path_update: Optional[PathUpdate] = None
  levels_per_trip: Optional[int] = None
  batched_opening: bool = True
  batched_phases: bool = False

  def __post_init__(self):
    if self.path_update is not None:
      _set(self, "path_update", coerce(PathUpdate, self.path_update, "path_update"))
    if self.levels_per_trip is not None:
      _positive_int(self.levels_per_trip, "levels_per_trip")
    for name in ("batched_opening", "batched_phases"):
      if not isinstance(getattr(self, name), bool):
        raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")

  def resolved(self) -> LoopOptions:
    """These options with the backend's defaults filled in (call at trace time)."""
    import jax
    on_cpu = jax.default_backend() == "cpu"
    return LoopOptions(
        path_update=self.path_update or (PathUpdate.PER_LEVEL if on_cpu
                                         else PathUpdate.WHOLE_PATH),
        levels_per_trip=self.levels_per_trip or (1 if on_cpu else 2),
        batched_opening=self.batched_opening, batched_phases=self.batched_phases)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Static settings of one search.

  Attributes:
    num_simulations: ``S``.
    selection: the rule picking a slot at each decision node.
    max_nodes: ``N``; at least ``S + 1`` (a fresh root plus one node per simulation).
      ``None``: the game's default (:meth:`for_model`: ``S·O + 1`` with the Bellman backup,
      whose expansions create all ``O`` outcomes, else ``S + 1``).
    max_depth: ``D``, the longest path in edges from the root; ``None``: the game's
      ``max_length`` (else ``S``).
    backup: :class:`~jaxsearch.enums.Backup`: ``"mean"`` — running means of sampled returns
      (AlphaZero, MuZero, UCT; one chance outcome is expanded per simulation) — or
      ``"bellman"`` — AVTS (ALGORITHMS.md §2): expanding a slot creates **all** its possible
      outcomes in one estimator call, and ``q̂2(s,a) = Σ_o p(o)(r + γ V(s_o))`` is recomputed
      at every backup, with ``V`` the best debiased value of the active slots. Needs
      estimators that return ``action_values``; its options are ``avts``.
    outcome_rule: :class:`~jaxsearch.enums.OutcomeRule`, at a chance record: ``"balanced"``
      picks ``argmax p(o) / (n(o) + 1)`` (no randomness), ``"sample"`` draws ``o ~ p``, and
      ``"gap"`` (Bellman backup) prefers the outcome whose value is most uncertain in the
      certified sense: ``argmax p(o)·(upper − bound)`` of its child, the
      probability-weighted gap between the optimistic and the achievable bound
      (``"balanced"`` decides among ties) — the outcome whose proof matters most.
    num_slots: ``K``, action slots per node; ``None`` = ``A``. Larger than ``A`` is clamped to
      ``A``. With ``K < A`` a node keeps its top-``K`` actions by q̂1 (by prior logit for the
      mean backup) — a documented cutoff: actions outside it are never searched.
    root_noise: :class:`RootNoise` (Dirichlet noise at the root) or ``None``.
    root_selection: a root-only rule (:class:`~jaxsearch.selection.base.RootRule`, e.g.
      Gumbel MuZero's Sequential Halving) used for the first step of every descent, with the
      simulation index and a per-search draw; ``selection`` then only serves interior nodes.
    avts: :class:`AvtsOptions`, read by the Bellman backup only (``widening`` and
      ``max_chance`` need it; with the running-mean backup a record comes with every node).
    entropy: :class:`EntropyOptions`: keep the subtree entropy (running-mean backup only);
      ``None`` (default) allocates and computes nothing.
    loops: :class:`LoopOptions`, how the descent and the backup walk a path on the device
      (the same tree whatever they are; the defaults follow the backend).
  """

  num_simulations: int
  selection: SelectionRule
  max_nodes: Optional[int] = None
  max_depth: Optional[int] = None
  backup: Backup = Backup.MEAN
  outcome_rule: OutcomeRule = OutcomeRule.BALANCED
  num_slots: Optional[int] = None
  root_noise: Optional[RootNoise] = None
  root_selection: Optional[RootRule] = None
  avts: AvtsOptions = AvtsOptions()
  entropy: Optional[EntropyOptions] = None
  loops: LoopOptions = LoopOptions()

  def __post_init__(self):
    _positive_int(self.num_simulations, "num_simulations")
    from jaxsearch.validation import check_selection  # validation imports the tree: JAX
    check_selection(self.selection)
    for name in ("max_nodes", "max_depth"):
      if getattr(self, name) is not None:
        _positive_int(getattr(self, name), name)
    if self.max_nodes is not None and self.max_nodes < self.num_simulations + 1:
      raise ValueError(
          f"max_nodes={self.max_nodes} is smaller than num_simulations + 1 = "
          f"{self.num_simulations + 1}, the nodes one search from a fresh root needs")
    _set(self, "backup", coerce(Backup, self.backup, "backup"))
    _set(self, "outcome_rule", coerce(OutcomeRule, self.outcome_rule, "outcome_rule"))
    if self.num_slots is not None:
      _positive_int(self.num_slots, "num_slots")
    for name, kind in (("root_noise", RootNoise), ("avts", AvtsOptions),
                       ("entropy", EntropyOptions), ("loops", LoopOptions)):
      value = getattr(self, name)
      if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {value!r}")
    if self.root_noise is not None and self.root_noise.fraction == 0.0:
      _set(self, "root_noise", None)
    # Resolved once: every phase asks this object, never the mode (jaxsearch.search.backup).
    from jaxsearch.search.backup import resolve
    _set(self, "_backup_rule", resolve(self.backup, self.avts))
    self._check_avts()
    self.backup_rule.check(self)

  def _check_avts(self):
    avts = self.avts
    if self.num_slots is not None and avts.bound_slots >= self.num_slots:
      raise ValueError(f"bound_slots must be an int in [0, num_slots), got "
                       f"{avts.bound_slots!r} with num_slots={self.num_slots!r}")
    if avts.max_chance is None:
      return
    if (not isinstance(avts.max_chance, int) or avts.max_chance < 1 or
        (self.max_nodes is not None and avts.max_chance > self.max_nodes)):
      raise ValueError(f"max_chance must be an int in [1, max_nodes={self.max_nodes}] or "
                       f"None, got {avts.max_chance!r}")

  @property
  def backup_rule(self):
    """The :class:`~jaxsearch.search.backup.BackupRule` of ``backup`` (resolved when the config
    is built; it holds ``avts`` where the backup reads it)."""
    return self._backup_rule

  @property
  def chance_capacity(self) -> int:
    """``C``: ``avts.max_chance``, or ``max_nodes`` by default."""
    return self.max_nodes if self.avts.max_chance is None else self.avts.max_chance

  @property
  def keeps_prior_probs(self) -> bool:
    """Each node keeps the softmax of its prior logits over its legal slots
    (``tree.slots.prior_probs``), computed once when it is created: the rule reads it and,
    under the running-mean backup, a node's legal slots and logits never change (the Bellman
    backup removes solved slots, widening adds slots)."""
    return self.selection.reads_prior_probs and self.backup_rule.static_priors

  def slots_for(self, num_actions: int) -> int:
    """``K`` for a game with ``num_actions`` actions (``num_slots`` clamped to ``A``)."""
    return num_actions if self.num_slots is None else min(self.num_slots, num_actions)

  def slots_are_actions(self, num_actions: int) -> bool:
    """Slot ``k`` holds action ``k`` in every node (``K = A``, no widening): the slot layout
    is the allocated one and is never written or looked up."""
    return self.slots_for(num_actions) == num_actions and not self.backup_rule.widening

  def for_model(self, model) -> SearchConfig:
    """This config with the sizes left to the game filled in (``max_nodes``, ``max_depth``;
    see the attributes) for ``model`` (:class:`~jaxsearch.model.Model`)."""
    if self.max_nodes is not None and self.max_depth is not None:
      return self
    max_depth = self.max_depth
    if max_depth is None:
      max_depth = model.max_length if model.max_length else self.num_simulations
    max_nodes = self.max_nodes
    if max_nodes is None:
      max_nodes = (self.num_simulations * self.backup_rule.nodes_per_expansion(model.num_outcomes)
                   + 1)
    return dataclasses.replace(self, max_nodes=max_nodes, max_depth=max_depth)


# The flat keywords of the named constructors (jaxsearch.policies), by the part they fill.
_PART_KEYWORDS = {
    "root_noise": (RootNoise, {"dirichlet_fraction": "fraction", "dirichlet_alpha": "alpha"}),
    "avts": (AvtsOptions, {name: name for name in (
        "widening", "debias", "variance", "num_buckets", "bound_slots", "max_chance",
        "expand_chunk")}),
    "entropy": (EntropyOptions, {"subtree_entropy": "kind", "entropy_policy": "policy",
                                 "entropy_pibar_c": "pibar_c"}),
    "loops": (LoopOptions, {name: name for name in ("path_update", "levels_per_trip",
                                                    "batched_opening", "batched_phases")}),
}


def config_from_keywords(**options) -> SearchConfig:
  """A :class:`SearchConfig` from flat keywords, the form :func:`jaxsearch.policies.custom`
  and the named constructors accept: ``SearchConfig``'s own fields, plus each part's options
  under their flat names — ``dirichlet_fraction``, ``dirichlet_alpha`` (:class:`RootNoise`;
  a fraction of 0, the default, is no noise), ``widening``, ``debias``, ``variance``,
  ``num_buckets``, ``bound_slots``, ``max_chance``, ``expand_chunk`` (:class:`AvtsOptions`),
  ``subtree_entropy`` (``None``: off), ``entropy_policy``, ``entropy_pibar_c``
  (:class:`EntropyOptions`), ``path_update``, ``levels_per_trip``, ``batched_opening``,
  ``batched_phases`` (:class:`LoopOptions`)."""
  parts = {}
  for part, (kind, keywords) in _PART_KEYWORDS.items():
    given = {field: options.pop(name) for name, field in keywords.items() if name in options}
    if part == "root_noise":
      given.setdefault("fraction", 0.0)
    if part == "entropy" and given.get("kind", None) is None:
      given.pop("kind", None)
      if given:
        EntropyOptions(**given)  # validated, though the search keeps no entropy
      continue
    if given:
      parts[part] = kind(**given)
  unknown = set(options) - {field.name for field in dataclasses.fields(SearchConfig)}
  if unknown:
    raise TypeError(f"unknown search options {sorted(unknown)}")
  return SearchConfig(**options, **parts)
