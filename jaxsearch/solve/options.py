"""The solver's options: one frozen, validated :class:`SolveOptions`, grouped by what they are.

Every entry point (:func:`jaxsearch.guessing.solve_puzzle`, :func:`~jaxsearch.guessing.solve`,
:func:`~jaxsearch.solve.solve_game`, :func:`jaxsearch.solve.chunked.run`, the search over first
guesses) takes the same object, checked once when it is built (a ``ValueError`` naming the
option and what it accepts, a ``TypeError`` for an unknown one), and every search in a solve
reads its :class:`jaxsearch.search.SearchConfig` from :meth:`SolveOptions.search_config`.
Flat keywords build one too, which is how ``solve_puzzle(puzzle, seconds=30, chunk=32)`` is
read::

    options = SolveOptions.from_keywords(seconds=30, chunk=32, max_nodes=4000)
    options = SolveOptions(budget=Budget(seconds=30), search=SearchRule(chunk=32),
                           capacity=Capacity(max_nodes=4000))   # the same

The parts: :class:`Budget` (when the search stops: ``seconds``, ``max_simulations``, and
``certify_seconds`` for the certificates after it, ``run_seconds`` for the whole solve), :class:`Capacity` (the trees' sizes:
``max_nodes``, ``num_slots``, ``bound_slots``, ``max_chance``, ``max_depth``, and the
``memory`` budget), :class:`SearchRule` (how the trees grow: ``chunk``, ``seed``,
``selection``, ``variance``, ``proof_every``, ``leaves_per_step``), :class:`Checkpointing`
(``checkpoint``, ``resume``, ``checkpoint_seconds``) and ``devices``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
import time
from typing import Any, Optional, Union

from jaxsearch.enums import Variance, coerce
from jaxsearch.seeds import check_seed

# Simulations descend at most this many moves below a root unless the game has a
# ``max_length``: far more than an optimal guessing policy needs (Mastermind 4×6 and Wordle
# take at most 6 guesses), cheap (a path is ``O(D)``), and independent of the chunk size.
DEFAULT_MAX_DEPTH = 24


def _set(obj, name: str, value) -> None:
  object.__setattr__(obj, name, value)  # normalising a frozen dataclass's field


def _int(obj, name: str, least: int, optional: bool = False) -> None:
  """``obj.name`` is an int ``>= least`` (or ``None`` where ``optional``); stored as ``int``."""
  value = getattr(obj, name)
  if value is None and optional:
    return
  if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
      or value < least):
    allowed = f"an int >= {least}" + (" or None" if optional else "")
    raise ValueError(f"SolveOptions: {name} must be {allowed}, got {value!r}")
  _set(obj, name, int(value))


def _seconds(obj, name: str, *, positive: bool = False, finite: bool = False,
             optional: bool = False, label: Optional[str] = None) -> None:
  """``obj.name`` is a number of seconds (or bytes): not NaN, ``>= 0`` (``> 0`` where
  ``positive``), ``inf`` allowed unless ``finite``; stored as ``float``; ``label`` names it
  in the message (default ``name``). NaN is refused
  because every comparison with it is false: a NaN budget would switch its check off."""
  value = getattr(obj, name)
  if value is None and optional:
    return
  bad = (isinstance(value, bool) or not isinstance(value, numbers.Real)
         or math.isnan(value) or value < 0 or (positive and value == 0)
         or (finite and math.isinf(value)))
  if bad:
    allowed = ("a positive" if positive else "a non-negative") + (
        " finite number" if finite else " number (inf: no limit)") + (
        " or None" if optional else "")
    raise ValueError(f"SolveOptions: {label or name} must be {allowed}, got {value!r}")
  _set(obj, name, float(value))


@dataclasses.dataclass(frozen=True)
class Budget:
  """When the search stops, and how long the certificates may work after it.

  Attributes:
    seconds: search wall-clock budget, checked between chunks (``inf``: none). With a
      checkpoint, the search time of every run together.
    max_simulations: simulations per tree (``None``: no limit); with a checkpoint, the
      total of every run.
    certify_seconds: after the search, the time the certificates may spend in the game's
      exact search of small sets (0: none; what they cannot show by then is not claimed).
    run_seconds: the whole solve's wall-clock budget (``None``: none), counted from its
      start (:meth:`clock`): the search, extracting and evaluating the policy, and the
      certificates share it. The search stops by ``run_seconds - reserve`` (compilation
      included), where ``reserve = min(certify_seconds, run_seconds × (1 - search_share))``;
      the certificates get what is left of ``run_seconds``, at most ``certify_seconds``.
    search_share: with ``run_seconds``, the share of it the search may take at least (the
      rest is reserved for the extraction and the certificates, unless ``certify_seconds`` is
      smaller).
  """

  seconds: float = 60.0
  max_simulations: Optional[int] = None
  certify_seconds: float = 600.0
  run_seconds: Optional[float] = None
  search_share: float = 0.75

  def __post_init__(self):
    _seconds(self, "seconds")
    _int(self, "max_simulations", 1, optional=True)
    _seconds(self, "certify_seconds")
    _seconds(self, "run_seconds", optional=True)
    _seconds(self, "search_share", finite=True)
    if self.search_share > 1:
      raise ValueError(f"SolveOptions: search_share must be in [0, 1], got "
                       f"{self.search_share!r}")

  def clock(self, started: Optional[float] = None) -> "RunClock":
    """The deadlines of a solve that started at ``started`` (``time.monotonic()``; default
    now)."""
    started = time.monotonic() if started is None else float(started)
    if self.run_seconds is None or math.isinf(self.run_seconds):
      return RunClock(started, None, None, self.certify_seconds)
    reserve = min(self.certify_seconds, self.run_seconds * (1.0 - self.search_share))
    return RunClock(started, started + self.run_seconds - reserve,
                    started + self.run_seconds, self.certify_seconds)


@dataclasses.dataclass(frozen=True)
class RunClock:
  """The deadlines of one solve (:meth:`Budget.clock`), all ``time.monotonic()`` instants.

  Attributes:
    started: when the solve's budget started counting.
    search_ends: the search stops by then (after the chunk running then; at least one chunk
      runs), or ``None``: only its own ``seconds`` and ``max_simulations`` stop it.
    run_ends: the certificates stop by then, or ``None``.
    certify_seconds: the certificates' own limit, from when they start.
  """

  started: float
  search_ends: Optional[float]
  run_ends: Optional[float]
  certify_seconds: float

  def search_left(self) -> float:
    """Seconds left to the search (``inf`` without ``search_ends``; 0 once past it)."""
    if self.search_ends is None:
      return math.inf
    return max(self.search_ends - time.monotonic(), 0.0)

  def certify_deadline(self) -> float:
    """When certificates starting now must stop: ``certify_seconds`` from now, and not
    after ``run_ends``."""
    deadline = time.monotonic() + self.certify_seconds
    return deadline if self.run_ends is None else min(deadline, self.run_ends)


@dataclasses.dataclass(frozen=True)
class Capacity:
  """The trees' sizes and the memory they may take.

  Attributes:
    max_nodes: node capacity ``N`` of one tree; given to a batch of trees (a first guess's
      feedback sub-problems), the batch's budget, shared out (:meth:`SolveOptions.for_trees`).
    num_slots: guesses kept per node ``K`` (``None``: every action); a cutoff ``K < A`` keeps
      the top ``K`` by q̂1 and forgoes the proof at nodes where it cut.
    bound_slots: of the ``K`` slots, how many hold the best action bounds instead of the best
      q̂1 (:class:`jaxsearch.search.AvtsOptions`): what a proof through cut nodes needs.
    max_chance: chance records per tree ``C`` (``None``: ``max_nodes // 2``, ``// 4`` for
      games of at least 64 outcomes; at most ``max_nodes``).
    max_depth: the longest path a simulation descends ``D`` (``None``: the game's
      ``max_length``, else :data:`DEFAULT_MAX_DEPTH`).
    memory: bytes the run may use (``None``: the memory available now); a run whose
      estimate exceeds it is refused before anything is compiled.
  """

  max_nodes: int = 100_000
  num_slots: Optional[int] = 64
  bound_slots: int = 0
  max_chance: Optional[int] = None
  max_depth: Optional[int] = None
  memory: Optional[float] = None

  def __post_init__(self):
    _int(self, "max_nodes", 1)
    _int(self, "num_slots", 1, optional=True)
    _int(self, "bound_slots", 0)
    _int(self, "max_chance", 1, optional=True)
    _int(self, "max_depth", 1, optional=True)
    _seconds(self, "memory", positive=True, finite=True, optional=True)
    if self.num_slots is not None and self.bound_slots >= self.num_slots:
      raise ValueError(f"SolveOptions: bound_slots must be in [0, num_slots), got "
                       f"{self.bound_slots} with num_slots={self.num_slots}")


@dataclasses.dataclass(frozen=True)
class SearchRule:
  """How the trees grow.

  Attributes:
    chunk: simulations per compiled call; the budgets and the progress are checked between
      chunks.
    seed: PRNG seed, 0 to 2**32 - 1 (:mod:`jaxsearch.seeds`; chunk ``i`` draws from
      ``fold_in(key(seed), simulations before it)``).
    selection: the AVTS selection rule (:mod:`jaxsearch.selection`; ``None``: Thompson
      sampling).
    variance: AVTS's variance model (:class:`jaxsearch.enums.Variance`).
    proof_every: where the game has an optimistic bound, every ``proof_every``-th chunk runs
      the proof-directed rule (:func:`jaxsearch.selection.optimistic`) on the same trees, the
      others ``selection``; 0 never. The default, 1, runs only the proof rule.
    leaves_per_step: ``L``, the paths each tree descends in one step of a chunk
      (:attr:`jaxsearch.search.SearchConfig.leaves_per_step`; ``chunk`` counts paths, so a
      chunk is ``ceil(chunk / L)`` steps), from 1 to ``chunk``; ``None`` (the default): by
      the backend and the number of trees, :func:`default_leaves_per_step`
      (:meth:`SolveOptions.leaves_for`). 1 is the one-path search, bit for bit.
  """

  chunk: int = 128
  seed: int = 0
  selection: Any = None
  variance: Variance = Variance.AVTS
  proof_every: int = 1
  leaves_per_step: Optional[int] = None

  def __post_init__(self):
    _int(self, "chunk", 1)
    _set(self, "seed", check_seed(self.seed, "SolveOptions: seed"))
    from jaxsearch.selection.base import SelectionRule
    if self.selection is not None and not isinstance(self.selection, SelectionRule):
      raise TypeError(f"SolveOptions: selection must be a jaxsearch.selection rule or None, "
                      f"got {self.selection!r}")
    _set(self, "variance", coerce(Variance, self.variance, "SolveOptions: variance"))
    _int(self, "proof_every", 0)
    _int(self, "leaves_per_step", 1, optional=True)
    if self.leaves_per_step is not None and self.leaves_per_step > self.chunk:
      raise ValueError(f"SolveOptions: leaves_per_step must be at most chunk ({self.chunk}: "
                       f"the paths of one chunk), got {self.leaves_per_step}")


@dataclasses.dataclass(frozen=True)
class Checkpointing:
  """Where and how often a run's state is saved, so that a killed run can go on
  (:mod:`jaxsearch.solve.checkpoint`).

  Attributes:
    directory: the checkpoint directory (``None``: none kept).
    resume: go on from the state ``directory`` holds (a directory holding none starts
      afresh); without it, a directory that holds a run's state is refused.
    every_seconds: seconds of search between saves (0: after every chunk); the search's
      end is always saved.
  """

  directory: Optional[Union[str, os.PathLike]] = None
  resume: bool = False
  every_seconds: float = 10.0

  def __post_init__(self):
    if self.directory is not None and not isinstance(self.directory, (str, os.PathLike)):
      raise TypeError(f"SolveOptions: checkpoint must be a directory (a path) or None, got "
                      f"{self.directory!r}")
    if not isinstance(self.resume, bool):
      raise ValueError(f"SolveOptions: resume must be True or False, got {self.resume!r}")
    if self.resume and self.directory is None:
      raise ValueError("SolveOptions: resume needs a checkpoint directory (checkpoint=DIR)")
    _seconds(self, "every_seconds", label="checkpoint_seconds")


# The flat keywords (``solve_puzzle(puzzle, seconds=30, ...)``): name -> (part, field).
_KEYWORDS = {
    "seconds": ("budget", "seconds"),
    "max_simulations": ("budget", "max_simulations"),
    "certify_seconds": ("budget", "certify_seconds"),
    "run_seconds": ("budget", "run_seconds"),
    "search_share": ("budget", "search_share"),
    "max_nodes": ("capacity", "max_nodes"),
    "num_slots": ("capacity", "num_slots"),
    "bound_slots": ("capacity", "bound_slots"),
    "max_chance": ("capacity", "max_chance"),
    "max_depth": ("capacity", "max_depth"),
    "memory": ("capacity", "memory"),
    "chunk": ("search", "chunk"),
    "seed": ("search", "seed"),
    "selection": ("search", "selection"),
    "variance": ("search", "variance"),
    "proof_every": ("search", "proof_every"),
    "leaves_per_step": ("search", "leaves_per_step"),
    "checkpoint": ("checkpointing", "directory"),
    "resume": ("checkpointing", "resume"),
    "checkpoint_seconds": ("checkpointing", "every_seconds"),
    "devices": (None, "devices"),
}



@functools.lru_cache(maxsize=None)
def _default_rules():
  """``(thompson, optimistic)``: the default selection rule and the proof rule, one object
  each per process, so that configs built from the same options are equal and the compiled
  programs keyed by them are reused (:func:`jaxsearch.solve.chunked._cached_program`)."""
  from jaxsearch import selection
  return selection.thompson(), selection.optimistic()


# An accelerator's default: the paths one step of a chunk descends in all, trees × leaves
# per step, that keep its kernels wide (a guess: not yet measured on a device).
ACCELERATOR_STEP_WIDTH = 1024
# The most leaves per step a default gives one tree: the sample cost at 16 leaves was
# measured on the CPU (docs/benchmarks.md, "Several leaves per step in the solver").
MAX_DEFAULT_LEAVES = 16


def default_leaves_per_step(backend: str, batch: Optional[int]) -> int:
  """The solver's default ``leaves_per_step`` on ``backend`` (``"cpu"``, ``"gpu"``,
  ``"tpu"``, ...: a JAX platform) for a chunk of ``batch`` trees (``None``: not known,
  taken as one tree), before it is capped at the chunk (:meth:`SolveOptions.leaves_for`).

  * CPU: 1. Measured on two cores (docs/benchmarks.md, "Several leaves per step in the
    solver"): a chunk's time there is the estimator's evaluations of new states, which
    wider steps barely speed up (new nodes per second at most 1.2× at 4 or 16 leaves),
    and Mastermind 4×6 took more simulations, nodes and time to its proof at 4 and 16
    leaves than at 1.
  * An accelerator: the largest power of two ``L <= MAX_DEFAULT_LEAVES`` (16) with
    ``batch × L <= ACCELERATOR_STEP_WIDTH`` (1024), at least 1: one tree gets 16, the 52
    trees of Mastermind 4×6's openings 16, Wordle's 158 after ``tarse`` 4. This choice is
    not yet measured on a device: it only makes a step's kernels wider where the batch is
    narrow, within the leaves whose sample cost was measured.
  """
  if backend == "cpu":
    return 1
  trees = max(int(batch or 1), 1)
  wanted = max(ACCELERATOR_STEP_WIDTH // trees, 1)
  return min(1 << (wanted.bit_length() - 1), MAX_DEFAULT_LEAVES)


@dataclasses.dataclass(frozen=True)
class SolveOptions:
  """Everything a solve is asked to do, apart from the problem and the way its first guess
  is chosen (see the module docstring). Frozen and validated when built; derived options
  (a batch's share of the node budget, regrown trees) are new objects, never edits.

  Attributes:
    budget: :class:`Budget`. capacity: :class:`Capacity`. search: :class:`SearchRule`.
    checkpointing: :class:`Checkpointing`.
    devices: split each batch of trees over devices (:mod:`jaxsearch.sharding`: ``None``,
      an int, or devices; normalised to a tuple of devices). Not with a checkpoint.
  """

  budget: Budget = Budget()
  capacity: Capacity = Capacity()
  search: SearchRule = SearchRule()
  checkpointing: Checkpointing = Checkpointing()
  devices: Any = None

  def __post_init__(self):
    for name, kind in (("budget", Budget), ("capacity", Capacity), ("search", SearchRule),
                       ("checkpointing", Checkpointing)):
      if not isinstance(getattr(self, name), kind):
        raise TypeError(f"SolveOptions: {name} must be a {kind.__name__}, got "
                        f"{getattr(self, name)!r}")
    if self.capacity.max_nodes < self.search.chunk + 1:
      raise ValueError(f"SolveOptions: max_nodes {self.capacity.max_nodes} is too small for "
                       f"chunks of {self.search.chunk} simulations: a tree needs chunk + 1 = "
                       f"{self.search.chunk + 1} nodes")
    if self.devices is not None:
      from jaxsearch import sharding
      _set(self, "devices", sharding.resolve_devices(self.devices))
      if self.checkpointing.directory is not None:
        raise ValueError("SolveOptions: a checkpoint cannot be kept of a search split over "
                         "devices; pass checkpoint=None or devices=None")

  @classmethod
  def from_keywords(cls, where: str = "SolveOptions", **keywords) -> "SolveOptions":
    """The options of flat keywords (the defaults for those not given): ``seconds``,
    ``max_simulations``, ``certify_seconds``, ``run_seconds``, ``search_share`` (:class:`Budget`); ``max_nodes``,
    ``num_slots``, ``bound_slots``, ``max_chance``, ``max_depth``, ``memory``
    (:class:`Capacity`); ``chunk``, ``seed``, ``selection``, ``variance``, ``proof_every``,
    ``leaves_per_step`` (:class:`SearchRule`); ``checkpoint``, ``resume``,
    ``checkpoint_seconds`` (:class:`Checkpointing`); ``devices``.

    Raises:
      TypeError: an unknown keyword (``where`` names the caller in the message).
      ValueError: a bad value, naming it.
    """
    return cls().override(where, **keywords)

  def override(self, where: str = "SolveOptions", **keywords) -> "SolveOptions":
    """These options with the flat ``keywords`` (:meth:`from_keywords`) replacing theirs."""
    unknown = sorted(set(keywords) - set(_KEYWORDS))
    if unknown:
      raise TypeError(f"{where}: unknown option{'s' * (len(unknown) > 1)} "
                      f"{', '.join(unknown)}; the options are {', '.join(_KEYWORDS)}")
    parts: dict = {}
    top: dict = {}
    for name, value in keywords.items():
      part, field = _KEYWORDS[name]
      (top if part is None else parts.setdefault(part, {}))[field] = value
    replaced = {part: dataclasses.replace(getattr(self, part), **fields)
                for part, fields in parts.items()}
    return dataclasses.replace(self, **replaced, **top)

  def with_capacity(self, **fields) -> "SolveOptions":
    """These options with some :class:`Capacity` fields replaced (validated again)."""
    return dataclasses.replace(self, capacity=dataclasses.replace(self.capacity, **fields))

  def for_trees(self, count: int, least: int) -> "SolveOptions":
    """The options of each of ``count`` trees that share ``max_nodes`` (a batch's budget),
    each given at least ``least`` nodes (a smaller share is raised to it), with
    ``leaves_per_step`` decided for ``count`` trees where it was left to the default
    (:meth:`leaves_for`).

    Raises:
      ValueError: the share is below ``chunk + 1``.
    """
    share = max(self.capacity.max_nodes // max(int(count), 1), int(least))
    options = self
    if self.search.leaves_per_step is None:
      options = dataclasses.replace(self, search=dataclasses.replace(
          self.search, leaves_per_step=self.leaves_for(count)))
    try:
      return options.with_capacity(max_nodes=share)
    except ValueError as error:
      raise ValueError(f"{error} (max_nodes {self.capacity.max_nodes} shared out between "
                       f"{count} trees)") from None

  def backend(self) -> str:
    """The JAX platform the trees are searched on: ``devices``' (the first's), else JAX's
    default backend."""
    if self.devices:
      return self.devices[0].platform
    import jax
    return jax.default_backend()

  def leaves_for(self, batch: Optional[int] = None) -> int:
    """``L``, the paths each tree descends per step: ``search.leaves_per_step``, else
    :func:`default_leaves_per_step` of :meth:`backend` and ``batch`` trees (``None``: not
    known, taken as one tree) capped at ``chunk``."""
    if self.search.leaves_per_step is not None:
      return self.search.leaves_per_step
    return min(default_leaves_per_step(self.backend(), batch), self.search.chunk)

  def max_depth_for(self, game) -> int:
    """``D``: ``capacity.max_depth``, else the game's ``max_length``, else the default."""
    return self.capacity.max_depth or game.max_length or DEFAULT_MAX_DEPTH

  def max_chance_for(self, game) -> int:
    """``C``: ``capacity.max_chance``, else by the game's outcomes; at most ``max_nodes``."""
    return self.max_chance_of(game.num_outcomes)

  def max_chance_of(self, num_outcomes: int) -> int:
    """:meth:`max_chance_for` a game of ``num_outcomes`` outcomes."""
    max_nodes, max_chance = self.capacity.max_nodes, self.capacity.max_chance
    if max_chance is None:
      # Nodes per record = possible outcomes per expansion: measured 5.4 on Wordle after
      # tarse (243 feedbacks), 2.7 on Mastermind 3×3 (9).
      max_chance = max(max_nodes // (4 if num_outcomes >= 64 else 2), 1)
    return min(max_chance, max_nodes)

  def proves(self, game) -> bool:
    """Whether any chunk runs the proof rule (the game has an optimistic bound)."""
    return game.optimistic_value is not None and self.search.proof_every > 0

  def proof_chunk(self, game, chunk_number: int) -> bool:
    """Whether chunk ``chunk_number`` (1-based, every run's) runs the proof rule."""
    return self.proves(game) and chunk_number % self.search.proof_every == 0

  def tree_options(self, game) -> dict:
    """The options that shape the trees, with the game's defaults filled in (JSON-able):
    what a checkpoint's fingerprint compares (:func:`jaxsearch.solve.chunked.fingerprint`).
    ``leaves_per_step`` (:meth:`leaves_for`) is among them only where it is not 1, so that
    the fingerprint of a one-path search is what it was before the option existed."""
    capacity = self.capacity
    shape = dict(num_simulations=self.search.chunk, max_nodes=capacity.max_nodes,
                 max_depth=self.max_depth_for(game), num_slots=capacity.num_slots,
                 bound_slots=capacity.bound_slots, variance=self.search.variance.value,
                 max_chance=self.max_chance_for(game))
    if self.leaves_for() != 1:
      shape["leaves_per_step"] = self.leaves_for()
    return shape

  def search_config(self, game, *, proof: bool = False):
    """The :class:`jaxsearch.search.SearchConfig` of one chunk on these options' trees:
    AVTS (the Bellman backup with progressive widening and debiasing) with
    ``search.selection`` (Thompson sampling by default) or, with ``proof``, the proof rule
    (:func:`jaxsearch.selection.optimistic`, the ``gap`` outcome rule), ``leaves_for()``
    paths per tree in each step."""
    from jaxsearch.enums import Backup, OutcomeRule
    from jaxsearch.search import AvtsOptions, SearchConfig
    thompson, optimistic = _default_rules()
    if proof:
      rule, outcome_rule = optimistic, OutcomeRule.GAP
    else:
      rule, outcome_rule = self.search.selection or thompson, OutcomeRule.BALANCED
    return SearchConfig(
        num_simulations=self.search.chunk, selection=rule, max_nodes=self.capacity.max_nodes,
        max_depth=self.max_depth_for(game), backup=Backup.BELLMAN, outcome_rule=outcome_rule,
        num_slots=self.capacity.num_slots, leaves_per_step=self.leaves_for(),
        avts=AvtsOptions(widening=True, debias=True, variance=self.search.variance,
                         bound_slots=self.capacity.bound_slots,
                         max_chance=self.max_chance_for(game)))
