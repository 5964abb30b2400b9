"""Memory a run will hold, estimated before it starts, and the refusal when it would not fit.

A run that would not fit is refused up front with the estimate, by part, and the flags that
lower it — never killed by the system halfway (:func:`check_memory`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional


class MemoryBudgetError(ValueError):
  """A solve whose estimated memory exceeds the budget (refused before it starts)."""


GB = 1 << 30  # what ``--memory`` and the figures here call a GB


def format_bytes(count: float) -> str:
  """``count`` bytes for a person: MB below a GB (``"850 MB"``), else GB (``"2.3 GB"``)."""
  if count < GB:
    return f"{count / (1 << 20):,.0f} MB"
  return f"{count / GB:,.1f} GB"


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
  """Bytes a solve needs at its peak, by part (:func:`jaxsearch.solve.estimate_memory`,
  :func:`estimate_from_sizes`).

  Attributes:
    trees: the batch of trees (``B`` trees of ``N`` nodes, from their allocated shapes),
      held once: each chunk writes into the previous chunk's trees (they are donated).
    per_node: ``trees / (B · N)``.
    tables: the game's tables (held once on the host and once as the programs' input).
    working: the estimator's outputs for one chunk of expanded states (``expand_chunk × A``
      values, a few arrays of them).
    runtime: Python, JAX, the game and XLA compiling the search's programs (measured:
      :data:`RUNTIME_BYTES`).
    nodes: ``B · N``.

  It is the peak of the run's own process. Not counted: after a regrowth (the proven roots
  leave the batch, the open ones move into larger trees, array by array), the proven roots'
  trees, cut to what they allocated, which the search keeps only where they fit then
  (:func:`can_hold`); and the certificates' worker processes, each a process of its own, as
  many as fit beside this estimate (:func:`plan_workers`).
  """

  trees: int
  per_node: float
  tables: int
  working: int
  runtime: int
  nodes: int

  @property
  def total(self) -> int:
    return self.trees + self.tables + self.working + self.runtime

  def describe(self) -> str:
    return (f"about {format_bytes(self.total)}: trees {format_bytes(self.trees)} "
            f"({self.nodes} nodes × {self.per_node:,.0f} bytes), tables "
            f"{format_bytes(self.tables)}, working memory {format_bytes(self.working)}, "
            f"runtime {format_bytes(self.runtime)}")


# Python, JAX and the game, and XLA compiling the search's programs: peak RSS less the trees,
# tables and working memory, measured with `/usr/bin/time -v` on `jaxsearch solve
# mastermind` (1.0-1.2 GB at 50,000 to 400,000 nodes) and `jaxsearch solve wordle --first
# tarse` (1.0 GB), docs/solving.md.
RUNTIME_BYTES = 1_150_000_000


@dataclasses.dataclass(frozen=True)
class PuzzleSizes:
  """What the memory of a guessing game's solve depends on, known before the game is built.

  Attributes:
    secrets, actions, outcomes: ``S``, ``A``, ``O``.
    state_bytes: bytes of one game state (a node stores one).
    table_bytes: bytes of the game's tables (``Puzzle.tables``).
  """

  secrets: int
  actions: int
  outcomes: int
  state_bytes: int
  table_bytes: int

  @classmethod
  def of(cls, puzzle) -> "PuzzleSizes":
    """The sizes of a built :class:`jaxsearch.guessing.Puzzle`."""
    import jax
    import numpy as np
    state = sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(puzzle.initial_state))
    tables = sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(puzzle.tables))
    return cls(secrets=len(puzzle.secrets), actions=int(puzzle.game.num_actions),
               outcomes=int(puzzle.game.num_outcomes), state_bytes=state, table_bytes=tables)


def working_bytes(num_actions: int) -> int:
  """The estimator's outputs for one chunk of expanded states: ``expand_chunk × A`` values,
  eight f32 arrays of them."""
  from jaxsearch.search import AvtsOptions
  return 8 * 4 * AvtsOptions().expand_chunk * num_actions


def tree_bytes(batch: int, max_nodes: int, num_slots: int, num_outcomes: int,
               max_chance: int, state_bytes: int) -> int:
  """Bytes of the solver's ``batch`` trees (AVTS with the Bellman backup: slot bounds, debias
  statistics, the slots' actions and q̂1), from :func:`jaxsearch.tree.allocate`'s shapes
  (``jax.eval_shape``: nothing is allocated)."""
  import jax
  import numpy as np
  from jaxsearch import tree as tree_lib
  from jaxsearch.search import AvtsOptions

  state = (np.zeros(state_bytes, np.uint8),)
  shapes = jax.eval_shape(lambda: tree_lib.allocate(
      batch, max_nodes, num_slots, num_outcomes, state,
      num_buckets=AvtsOptions().num_buckets, slot_bounds=True, max_chance=max_chance,
      slot_actions=True, action_values=True))
  return sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(shapes))


def estimate_from_sizes(sizes: PuzzleSizes, options, batch: Optional[int] = None
                        ) -> MemoryEstimate:
  """The estimate of a solve with ``options`` (a :class:`jaxsearch.solve.SolveOptions`) from
  ``sizes`` alone: nothing is built, traced or compiled. ``batch``: that many sub-problem
  trees share the node budget (each at least :func:`subproblem_min_nodes`); ``None``: one
  tree from the start."""
  from jaxsearch.guessing.subproblems import subproblem_min_nodes
  tree_options = (options if batch is None else
                  options.for_trees(batch, subproblem_min_nodes(sizes.outcomes)))
  batch = 1 if batch is None else batch
  capacity = tree_options.capacity
  num_slots = min(capacity.num_slots or sizes.actions, sizes.actions)
  max_chance = tree_options.max_chance_of(sizes.outcomes)
  trees = tree_bytes(batch, capacity.max_nodes, num_slots, sizes.outcomes, max_chance,
                     sizes.state_bytes)
  nodes = batch * capacity.max_nodes
  return MemoryEstimate(trees=trees, per_node=trees / max(nodes, 1),
                        tables=2 * sizes.table_bytes, working=working_bytes(sizes.actions),
                        runtime=RUNTIME_BYTES, nodes=nodes)


def available_memory() -> Optional[int]:
  """Bytes of memory available now (``MemAvailable`` of ``/proc/meminfo``), or the machine's
  physical memory where that is unknown, or ``None``."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  try:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError, AttributeError):
    return None


def check_memory(estimate: MemoryEstimate, budget: Optional[float] = None) -> None:
  """Raises :class:`MemoryBudgetError` if ``estimate`` exceeds ``budget`` bytes (default: the
  memory available now), naming the parts and what lowers them."""
  limit = available_memory() if budget is None else budget
  if limit is None or estimate.total <= limit:
    return
  where = "the budget" if budget is not None else "the memory available"
  raise MemoryBudgetError(
      f"this run would need {estimate.describe()}, more than {where} "
      f"({format_bytes(limit)}). Lower the node budget (--nodes; the trees take "
      f"{estimate.per_node:,.0f} bytes a node) or the slots per node (--slots), or raise "
      f"--memory if more is free.")


def can_hold(extra: int, estimate: Optional[MemoryEstimate],
             budget: Optional[float] = None) -> bool:
  """Whether ``extra`` bytes more than ``estimate`` fit: within ``budget`` bytes where one
  is given, else within the memory available now (true where that is unknown)."""
  if budget is not None:
    return (0 if estimate is None else estimate.total) + extra <= budget
  free = available_memory()
  return free is None or extra <= free


# A certificate worker process before it is sent anything: Python, numpy and JAX imported
# with jaxsearch.guessing.certificates (164 MB measured with `resource.getrusage`, rounded
# up). What it is sent comes on top (:func:`worker_bytes`).
WORKER_RUNTIME_BYTES = 175_000_000


def worker_bytes(game_bytes: int, tree_bytes: int) -> int:
  """The memory of one certificate worker process: its runtime
  (:data:`WORKER_RUNTIME_BYTES`), the game's exact bounds (``game_bytes``: their arrays) and
  the largest tree it is sent (``tree_bytes``), each twice (as received, then unpickled).
  Wordle's: 175 MB + 2 × 47 MB + 2 × 4 MB = 277 MB; measured 240–300 MB."""
  return WORKER_RUNTIME_BYTES + 2 * int(game_bytes) + 2 * int(tree_bytes)


@dataclasses.dataclass(frozen=True)
class WorkerPlan:
  """How many certificate worker processes a run starts, and why.

  Attributes:
    workers: processes (1: the certificates run in this process, none is started).
    cores: the CPU cores (``os.cpu_count()``).
    each: the bytes one worker is expected to hold (:func:`worker_bytes`).
    free: the bytes the workers may take: the budget less the run's estimate, or the memory
      available now; ``None`` where unknown (no cap).
    capped: fewer workers than cores (and roots to certify) because of ``free``.
    late: none started because the certificates' time was (nearly) spent: without the exact
      search, which stops then, each certificate reads its tree alone, quicker than a
      process starts.
  """

  workers: int
  cores: int
  each: int
  free: Optional[int]
  capped: bool
  late: bool = False

  def describe(self) -> str:
    """Where the certificates run, in words: ``"on 2 worker processes (2 cores)"``, ``"in
    this process (4 cores; capped by memory: 300 MB free, about 277 MB a worker)"``."""
    cores = f"{self.cores} core{'s' if self.cores != 1 else ''}"
    where = ("in this process" if self.workers == 1 else
             f"on {self.workers} worker processes")
    if self.late:
      return f"{where} ({cores}; their time is spent: the trees alone)"
    if not self.capped:
      return f"{where} ({cores})"
    return (f"{where} ({cores}; capped by memory: {format_bytes(max(self.free or 0, 0))} "
            f"free, about {format_bytes(self.each)} a worker)")


def plan_workers(each: int, tasks: int, estimate: Optional[MemoryEstimate] = None,
                 budget: Optional[float] = None, cores: Optional[int] = None) -> WorkerPlan:
  """Worker processes for ``tasks`` independent certificates, ``each`` bytes a worker: one
  per core (``cores``, default ``os.cpu_count()``) and task, as many as fit in what the
  budget leaves beside the run's ``estimate`` (``budget`` bytes), or in the memory
  available now; at least one (then the work runs in this process)."""
  cores = max(int(cores or os.cpu_count() or 1), 1)
  wanted = max(min(cores, int(tasks)), 1)
  if budget is not None:
    free: Optional[int] = int(budget - (0 if estimate is None else estimate.total))
  else:
    free = available_memory()
  fit = wanted if free is None else max(free // max(int(each), 1), 1)
  workers = min(wanted, fit)
  return WorkerPlan(workers=workers, cores=cores, each=int(each), free=free,
                    capped=workers < wanted)
