"""The exact certificates use the machine: one worker process per core and root to certify,
as many as the memory holds beside the search's (the budget less the run's estimate, or the
memory available), each worker counted at its measured footprint; the run's plain lines say
where they run and why fewer than the cores."""

from __future__ import annotations

import argparse
import functools
import os

import pytest

from jaxsearch import cli
from jaxsearch.games.solve_defaults import SOLVABLE
from jaxsearch.guessing import certificates
from jaxsearch.memory import (GB, MemoryEstimate, WORKER_RUNTIME_BYTES, estimate_from_sizes,
                              plan_workers, worker_bytes)
from jaxsearch.solve import SolveOptions


def _estimate(total: int) -> MemoryEstimate:
  return MemoryEstimate(trees=total, per_node=1.0, tables=0, working=0, runtime=0, nodes=total)


def test_workers_are_the_cores_capped_by_the_memory_left():
  each = 100
  free = plan_workers(each, tasks=8, estimate=_estimate(1000), budget=1e9, cores=4)
  assert (free.workers, free.capped) == (4, False)
  assert free.describe() == "on 4 worker processes (4 cores)"
  few_tasks = plan_workers(each, tasks=2, estimate=_estimate(1000), budget=1e9, cores=4)
  assert (few_tasks.workers, few_tasks.capped) == (2, False)
  two = plan_workers(each, tasks=8, estimate=_estimate(1000), budget=1250, cores=4)
  assert (two.workers, two.capped, two.free) == (2, True, 250)
  one = plan_workers(each, tasks=8, estimate=_estimate(1000), budget=1050, cores=4)
  assert (one.workers, one.capped) == (1, True)
  assert one.describe().startswith("in this process (4 cores; capped by memory: ")
  # A worker: its runtime, and what it is sent twice (as received, then unpickled).
  assert worker_bytes(47_000_000, 4_000_000) == WORKER_RUNTIME_BYTES + 102_000_000


def test_a_memory_budget_caps_the_certificates_to_this_process(monkeypatch, capsys):
  """Mastermind 3×3 with four cores: a budget just above the search's estimate leaves no
  room for a worker, so the certificates run in this process (no pool is started), and the
  plain lines say so."""
  monkeypatch.setattr(os, "cpu_count", lambda: 4)
  # Bounds that can be sent to workers (Mastermind's state symmetries keep its bounds in this
  # process whatever the memory): without them.
  from jaxsearch.games import mastermind
  monkeypatch.setattr(mastermind, "puzzle",
                      functools.partial(mastermind.puzzle, symmetry=False))
  argv = ["solve", "mastermind", "--pegs", "3", "--colours", "3", "--nodes", "20000",
          "--seconds", "60", "--method", "tree"]
  args = argparse.Namespace(pegs=3, colours=3, first=None, openings=True)
  trees = sum(SOLVABLE["mastermind"].count_trees(args).trees)
  options = SolveOptions.from_keywords(chunk=32, max_nodes=20_000, num_slots=128,
                                       bound_slots=96)
  estimate = estimate_from_sizes(SOLVABLE["mastermind"].sizes(args), options, trees)
  started = []
  real_pool = certificates.worker_pool

  def pool(workers, *rest):
    started.append(workers)
    return real_pool(workers, *rest)

  monkeypatch.setattr(certificates, "worker_pool", pool)
  budget_gb = (estimate.total + WORKER_RUNTIME_BYTES // 2) / GB
  assert cli.main(argv + ["--memory", f"{budget_gb:.4f}"]) == 0
  err = capsys.readouterr().err
  assert "exact certificates in this process (4 cores; capped by memory:" in err, err
  assert started == []


@pytest.mark.parametrize("rows", [1, 3])
def test_the_plan_counts_the_game_and_the_largest_tree(rows):
  """One root: no worker (nothing to share out); three: a worker each, each counted at its
  runtime, the bounds as sent (pickled) and the largest tree (:func:`worker_bytes`)."""
  import pickle
  import numpy as np
  from jaxsearch.games import mastermind
  puzzle = mastermind.puzzle(2, 3, symmetry=False)  # bounds of data: sent to workers
  trees = [{"a": np.zeros((1, 1000 * (1 + r)), np.float32)} for r in range(rows)]
  plan = certificates.worker_plan(puzzle, trees, range(rows), cores=8)
  if rows == 1:
    assert plan.workers == 1 and not plan.capped
    return
  sent = pickle.dumps(certificates.CertificateGame.of(puzzle).for_workers(),
                      protocol=pickle.HIGHEST_PROTOCOL)
  assert plan.workers == 3 and plan.each == worker_bytes(len(sent), 4000 * rows)


def test_no_worker_starts_once_the_certificates_time_is_spent():
  """Past the deadline the exact search is not asked: each certificate reads its tree alone,
  quicker than a worker process starts (1–5 s, importing JAX), so none is started."""
  import time
  import numpy as np
  from jaxsearch.games import mastermind
  puzzle = mastermind.puzzle(2, 3, symmetry=False)  # bounds of data: sent to workers
  trees = [{"a": np.zeros((1, 10), np.float32)}] * 3
  late = certificates.worker_plan(puzzle, trees, range(3), cores=8,
                                  deadline=time.monotonic() + 0.5)
  assert (late.workers, late.late, late.capped) == (1, True, False)
  assert late.describe() == "in this process (8 cores; their time is spent: the trees alone)"
  soon = certificates.worker_plan(puzzle, trees, range(3), cores=8,
                                  deadline=time.monotonic() + 60)
  assert (soon.workers, soon.late) == (3, False)
