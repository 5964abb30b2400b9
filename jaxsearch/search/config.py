"""Static settings of one search (:class:`SearchConfig` and its parts) and their validation.

A config is built once and validated once (``__post_init__``): mode strings become enum members
(:mod:`jaxsearch.enums`), sizes and combinations are checked, and every error names the option
and what it accepts. Options that belong together are small typed parts: :class:`RootNoise`
(Dirichlet noise at the root), the backup rule itself (its options its fields) and
:class:`EntropyOptions` (the subtree entropy of entropy-guided PUCT).

    config = SearchConfig(num_simulations=64, selection=js.selection.thompson(),
                          backup=BellmanBackup(widening=True, num_buckets=16))
    search = js.policies.custom(game, estimator, config=config)

A backup given by name is looked up in :data:`BACKUPS`, the one table of names.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

from jaxsearch.enums import Backup, EntropyPolicy, OutcomeRule, PathUpdate, SubtreeEntropy, coerce
from jaxsearch.search.backup import BackupRule
from jaxsearch.search.backup_bellman import AvtsOptions, BellmanBackup
from jaxsearch.search.backup_mean import MeanBackup
from jaxsearch.selection.base import RootRule, SelectionRule
from jaxsearch.validation import check_selection

# The backups by name: ``SearchConfig(backup="bellman")`` is ``backup=BellmanBackup()``.
BACKUPS = {"mean": MeanBackup, "bellman": BellmanBackup, "avts": BellmanBackup}


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
class EntropyOptions:
  """The subtree entropy a search keeps for entropy-guided PUCT (``docs/algorithms.md`` §4;
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
  """

  path_update: Optional[PathUpdate] = None
  levels_per_trip: Optional[int] = None
  batched_opening: bool = True

  def __post_init__(self):
    if self.path_update is not None:
      _set(self, "path_update", coerce(PathUpdate, self.path_update, "path_update"))
    if self.levels_per_trip is not None:
      _positive_int(self.levels_per_trip, "levels_per_trip")
    if not isinstance(self.batched_opening, bool):
      raise TypeError(f"batched_opening must be a bool, got {self.batched_opening!r}")

  def resolved(self) -> LoopOptions:
    """These options with the backend's defaults filled in (call at trace time)."""
    import jax
    on_cpu = jax.default_backend() == "cpu"
    return LoopOptions(
        path_update=self.path_update or (PathUpdate.PER_LEVEL if on_cpu
                                         else PathUpdate.WHOLE_PATH),
        levels_per_trip=self.levels_per_trip or (1 if on_cpu else 2),
        batched_opening=self.batched_opening)


def resolve_backup(backup, avts: Optional[AvtsOptions] = None) -> BackupRule:
  """The rule ``backup`` names: a :class:`~jaxsearch.search.backup.BackupRule` as it is, a name
  (or :class:`~jaxsearch.enums.Backup`) looked up in :data:`BACKUPS`. ``avts`` (the Bellman
  options under their former keyword) is the rule where ``backup`` names the Bellman backup;
  beside a Bellman rule it must be that rule."""
  if avts is not None and not isinstance(avts, AvtsOptions):
    raise TypeError(f"avts must be a AvtsOptions, got {avts!r}")
  if isinstance(backup, BackupRule):
    if avts is not None and isinstance(backup, AvtsOptions) and avts != backup:
      raise ValueError(f"backup={backup!r} holds the Bellman options: give them as its fields, "
                       f"not also avts={avts!r}")
    return backup
  if not isinstance(backup, str) or backup not in BACKUPS:
    names = ", ".join(repr(name) for name in BACKUPS)
    raise ValueError(f"backup must be a BackupRule or one of {names}, got {backup!r}")
  kind = BACKUPS[backup]
  return avts if isinstance(avts, kind) else kind()


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
    backup: the :class:`~jaxsearch.search.backup.BackupRule`:
      :class:`~jaxsearch.search.backup_mean.MeanBackup` — running means of sampled returns
      (AlphaZero, MuZero, UCT; one chance outcome is expanded per simulation) — or
      :class:`~jaxsearch.search.backup_bellman.BellmanBackup` — AVTS
      (``docs/algorithms.md`` §2): expanding a slot creates **all** its possible outcomes in
      one estimator call, and q̂2 is recomputed at every backup; its options are its fields.
      A name (``"mean"``, ``"bellman"`` or ``"avts"``, a :class:`~jaxsearch.enums.Backup`)
      is looked up in :data:`BACKUPS`; after ``__post_init__`` this is always the rule.
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
    avts: the Bellman backup's options under their former keyword (``AvtsOptions`` is
      :class:`~jaxsearch.search.backup_bellman.BellmanBackup`): with ``backup="bellman"``
      they are the rule; given beside the running-mean backup, ``widening`` and
      ``max_chance`` are refused (a record comes with every node there). After
      ``__post_init__`` it is the Bellman rule itself, or what was given (``None`` by default)
      beside another backup.
    entropy: :class:`EntropyOptions`: keep the subtree entropy (running-mean backup only);
      ``None`` (default) allocates and computes nothing.
    loops: :class:`LoopOptions`, how the descent and the backup walk a path on the device
      (the same tree whatever they are; the defaults follow the backend).
    leaves_per_step: ``L``, the paths every tree descends in one step of the search
      (``docs/algorithms.md``, "Several leaves per step"): a rule that draws (Thompson) takes
      ``L`` independent draws at each node, a deterministic rule sees a virtual visit for each
      path the step has already sent through a node, so that the paths spread; the ``L``
      leaves are expanded and evaluated in one model call (a leaf two paths reach, once) and
      every path is backed up. ``num_simulations`` counts paths: a search runs
      ``ceil(num_simulations / L)`` steps, and the last one's surplus paths sit out. 1 (the
      default) is the one-path search, bit for bit. Not with subtree entropy.
  """

  num_simulations: int
  selection: SelectionRule
  max_nodes: Optional[int] = None
  max_depth: Optional[int] = None
  backup: Union[BackupRule, Backup, str] = Backup.MEAN
  outcome_rule: OutcomeRule = OutcomeRule.BALANCED
  num_slots: Optional[int] = None
  root_noise: Optional[RootNoise] = None
  root_selection: Optional[RootRule] = None
  avts: Optional[AvtsOptions] = None
  entropy: Optional[EntropyOptions] = None
  loops: LoopOptions = LoopOptions()
  leaves_per_step: int = 1

  def __post_init__(self):
    _positive_int(self.num_simulations, "num_simulations")
    _positive_int(self.leaves_per_step, "leaves_per_step")
    if self.leaves_per_step > self.num_simulations:
      raise ValueError(f"leaves_per_step={self.leaves_per_step} is larger than "
                       f"num_simulations={self.num_simulations}, the paths of the whole search")
    check_selection(self.selection)
    for name in ("max_nodes", "max_depth"):
      if getattr(self, name) is not None:
        _positive_int(getattr(self, name), name)
    if self.max_nodes is not None and self.max_nodes < self.num_simulations + 1:
      raise ValueError(
          f"max_nodes={self.max_nodes} is smaller than num_simulations + 1 = "
          f"{self.num_simulations + 1}, the nodes one search from a fresh root needs")
    _set(self, "outcome_rule", coerce(OutcomeRule, self.outcome_rule, "outcome_rule"))
    if self.num_slots is not None:
      _positive_int(self.num_slots, "num_slots")
    for name, kind in (("root_noise", RootNoise), ("entropy", EntropyOptions),
                       ("loops", LoopOptions)):
      value = getattr(self, name)
      if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {value!r}")
    if self.root_noise is not None and self.root_noise.fraction == 0.0:
      _set(self, "root_noise", None)
    # Resolved once: every phase asks this object, never a mode (jaxsearch.search.backup).
    _set(self, "backup", resolve_backup(self.backup, self.avts))
    if isinstance(self.backup, AvtsOptions):
      _set(self, "avts", self.backup)
    if self.avts is not None:
      self._check_avts(self.avts)
    if self.leaves_per_step > 1 and self.entropy is not None:
      raise ValueError("leaves_per_step > 1 needs subtree_entropy=None (the entropy update "
                       "walks one path per step)")
    if self.leaves_per_step > 1 and not self.backup.several_leaves:
      raise ValueError(f"leaves_per_step > 1 is not supported with "
                       f"backup={self.backup.kind.value!r}")
    self.backup.check(self)

  def _check_avts(self, avts: AvtsOptions):
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
  def backup_rule(self) -> BackupRule:
    """``backup``, the rule (the name this had when ``backup`` held a mode)."""
    return self.backup

  @property
  def chance_capacity(self) -> int:
    """``C``: the backup's (``BellmanBackup.max_chance``), or ``max_nodes`` by default."""
    return self.backup.chance_capacity(self.max_nodes)

  @property
  def keeps_prior_probs(self) -> bool:
    """Each node keeps the softmax of its prior logits over its legal slots
    (``tree.slots.prior_probs``), computed once when it is created: the rule reads it and,
    under the running-mean backup, a node's legal slots and logits never change (the Bellman
    backup removes solved slots, widening adds slots)."""
    return self.selection.reads_prior_probs and self.backup.static_priors

  def slots_for(self, num_actions: int) -> int:
    """``K`` for a game with ``num_actions`` actions (``num_slots`` clamped to ``A``)."""
    return num_actions if self.num_slots is None else min(self.num_slots, num_actions)

  def slots_are_actions(self, num_actions: int) -> bool:
    """Slot ``k`` holds action ``k`` in every node (``K = A``, no widening): the slot layout
    is the allocated one and is never written or looked up."""
    return self.slots_for(num_actions) == num_actions and not self.backup.widening

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
      max_nodes = (self.num_simulations * self.backup.nodes_per_expansion(model.num_outcomes)
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
                                                    "batched_opening")}),
}


def config_from_keywords(**options) -> SearchConfig:
  """A :class:`SearchConfig` from flat keywords, the form :func:`jaxsearch.policies.custom`
  and the named constructors accept: ``SearchConfig``'s own fields, plus each part's options
  under their flat names — ``dirichlet_fraction``, ``dirichlet_alpha`` (:class:`RootNoise`;
  a fraction of 0, the default, is no noise), ``widening``, ``debias``, ``variance``,
  ``num_buckets``, ``bound_slots``, ``max_chance``, ``expand_chunk`` (the fields of
  :class:`~jaxsearch.search.backup_bellman.BellmanBackup`, passed as ``avts``),
  ``subtree_entropy`` (``None``: off), ``entropy_policy``, ``entropy_pibar_c``
  (:class:`EntropyOptions`), ``path_update``, ``levels_per_trip``, ``batched_opening``
  (:class:`LoopOptions`)."""
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
