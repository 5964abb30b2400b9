"""The static plan of one search: its :class:`~jaxsearch.search.config.SearchConfig` resolved
once for a :class:`~jaxsearch.model.Model`, the one object every phase reads.

A config says what the user asked for, with some sizes left to the game; a plan holds every
static fact of the search — the sizes ``A, K, O, N, C, D``, the backup rule, which node
fields are written, which bounds are kept — resolved once, when the search is configured
(:func:`plan_for`), so that no phase derives a size on demand or carries ``num_actions``
beside the config.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from jaxsearch.search.backup import BackupRule
from jaxsearch.search.config import EntropyOptions, LoopOptions, RootNoise, SearchConfig
from jaxsearch.selection.base import RootRule, SelectionRule


@dataclasses.dataclass(frozen=True)
class SearchPlan:
  """Everything static about one search (hashable: a static argument of jitted functions).

  Attributes:
    config: the :class:`SearchConfig`, with ``max_nodes`` and ``max_depth`` filled in.
    num_actions: ``A``, the game's actions.
    num_slots: ``K``, action slots per node (``config.num_slots`` clamped to ``A``).
    num_outcomes: ``O``, chance outcomes per action.
    max_nodes: ``N``. max_chance: ``C``, chance records per tree. max_depth: ``D``.
    backup: the config's :class:`~jaxsearch.search.backup.BackupRule` (``config.backup``).
    slots_are_actions: slot ``k`` holds action ``k`` in every node (``K = A``, no widening):
      the slot layout is the allocated one, never written or looked up.
    keeps_prior_probs: nodes keep their prior probabilities (:attr:`SearchConfig.keeps_prior_probs`).
    has_bound, has_upper: the model supplies achievable / optimistic values (the tree's
      bounds are reported).
    value_bounds: the game's ``(lo, hi)`` values or ``None``: reported values are clipped to
      them (:func:`jaxsearch.summary.root_summary`).
    leaves_per_step: ``L``, the paths each tree descends in one step
      (:attr:`SearchConfig.leaves_per_step`); :attr:`num_steps` steps run them all.
  """

  config: SearchConfig
  num_actions: int
  num_slots: int
  num_outcomes: int
  max_nodes: int
  max_chance: int
  max_depth: int
  backup: BackupRule
  slots_are_actions: bool
  keeps_prior_probs: bool
  has_bound: bool
  has_upper: bool
  value_bounds: Optional[tuple[float, float]] = None
  leaves_per_step: int = 1

  @property
  def num_steps(self) -> int:
    """Steps of the search's loop from a fresh root: ``ceil(num_simulations / L)``."""
    return -(-self.num_simulations // self.leaves_per_step)

  # The config's settings that phases read, under the names they have there.
  @property
  def num_simulations(self) -> int:
    return self.config.num_simulations

  @property
  def selection(self) -> SelectionRule:
    return self.config.selection

  @property
  def root_selection(self) -> Optional[RootRule]:
    return self.config.root_selection

  @property
  def root_noise(self) -> Optional[RootNoise]:
    return self.config.root_noise

  @property
  def outcome_rule(self):
    return self.config.outcome_rule

  @property
  def entropy(self) -> Optional[EntropyOptions]:
    return self.config.entropy

  @property
  def loops(self) -> LoopOptions:
    """The config's :class:`LoopOptions` with the backend's defaults filled in (read at trace
    time: the backend is the one the search is traced for)."""
    return self.config.loops.resolved()


def plan_for(config: SearchConfig | SearchPlan, model) -> SearchPlan:
  """The :class:`SearchPlan` of ``config`` for ``model`` (:class:`~jaxsearch.model.Model`); a
  plan is returned as it is."""
  if isinstance(config, SearchPlan):
    return config
  config = config.for_model(model)
  num_actions = model.num_actions
  return SearchPlan(config=config, num_actions=num_actions,
                    num_slots=config.slots_for(num_actions), num_outcomes=model.num_outcomes,
                    max_nodes=config.max_nodes, max_chance=config.chance_capacity,
                    max_depth=config.max_depth, backup=config.backup,
                    slots_are_actions=config.slots_are_actions(num_actions),
                    keeps_prior_probs=config.keeps_prior_probs, has_bound=model.has_bound,
                    has_upper=model.has_upper, value_bounds=model.value_bounds,
                    leaves_per_step=config.leaves_per_step)
