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


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
  """Bytes a solve needs, by part (:func:`jaxsearch.solve.estimate_memory`).

  Attributes:
    trees: the batch of trees (``B`` trees of ``N`` nodes, from their allocated shapes).
    per_node: ``trees / (B · N)``.
    tables: the game's tables (held once on the host and once as the programs' input).
    working: the estimator's outputs for one chunk of expanded states (``expand_chunk × A``
      values, a few arrays of them) and copies of the trees (regrowing the open ones,
      extraction).
    runtime: JAX, XLA and compiled programs (measured: about 1.5 GB for Wordle).
    nodes: ``B · N``.
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
    gb = 1 << 30
    return (f"about {self.total / gb:.1f} GB: trees {self.trees / gb:.2f} GB "
            f"({self.nodes} nodes × {self.per_node:,.0f} bytes), tables "
            f"{self.tables / gb:.2f} GB, working memory {self.working / gb:.2f} GB, runtime "
            f"{self.runtime / gb:.1f} GB")


RUNTIME_BYTES = 3 << 29  # 1.5 GB: JAX and XLA with the solver's compiled programs


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
      f"({limit / (1 << 30):.1f} GB). Lower the node budget (--nodes; the trees take "
      f"{estimate.per_node:,.0f} bytes a node) or the slots per node (--slots), or raise "
      f"--memory if more is free.")
