"""Where a training run stands (:meth:`jaxsearch.train.trainer.Trainer.run`): its stop
conditions (:class:`Budget`), when the host next reads the device (:func:`next_interval`),
and its progress between two reads (:class:`RunProgress`: the state, its step, the metrics
not read yet, each read interval's size and seconds; :meth:`RunProgress.read_rows` turns a
read into ``metrics.jsonl`` rows)."""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable, Optional

from jaxsearch.train.metrics import json_number


def next_interval(config, step: int, steps: int = 0, first: bool = False) -> int:
  """How many steps a run of ``config`` (a :class:`~jaxsearch.train.config.TrainConfig`)
  takes from ``step`` before the host next reads the metrics: one when ``first`` (a call's
  first step holds the compilation: timed alone), else to the next multiple of
  ``metrics_every``, or sooner to the next multiple of ``checkpoint_every`` or ``eval_every``
  (when positive) or to ``steps`` (when positive)."""
  if first:
    return 1
  ends = [step - step % every + every
          for every in (config.metrics_every, config.checkpoint_every, config.eval_every)
          if every > 0]
  if steps > step:
    ends.append(steps)
  return min(ends) - step


def report_skipped(skipped, step: int, console=None) -> None:
  """Says (on ``console``, else stderr) which corrupt checkpoints a resume passed over
  (:class:`~jaxsearch.train.checkpoint.SkippedStep`) and the ``step`` it resumed from."""
  for note in skipped:
    message = (f"warning: checkpoint step {note.step} is corrupt and was skipped; resuming "
               f"from step {step}. ({note.brief()})")
    if console is not None:
      console.print(message, markup=False, highlight=False, style="yellow")
    else:
      print(message, file=sys.stderr)


@dataclasses.dataclass(frozen=True)
class Budget:
  """When :meth:`~jaxsearch.train.trainer.Trainer.run` stops: ``steps`` in total or
  ``minutes`` since ``started`` (a ``time.perf_counter()``), whichever comes first; 0 turns a
  condition off."""

  steps: int
  minutes: float
  started: float

  def elapsed(self) -> float:
    return time.perf_counter() - self.started

  def reached(self, step: int) -> bool:
    return bool((self.steps and step >= self.steps) or
                (self.minutes and self.elapsed() >= self.minutes * 60))


@dataclasses.dataclass
class RunProgress:
  """Where :meth:`~jaxsearch.train.trainer.Trainer.run` stands: the state, its step, the last
  checkpointed step and the latest evaluation (``last_final``: whether it was a final one,
  with the UCT match etc.)."""

  ts: Any  # the trainer's TrainState
  step: int
  last_saved: int
  last_updates: int = 0  # the updates counted when the metrics were last read
  last_eval: dict = dataclasses.field(default_factory=dict)
  last_final: bool = False
  # A resume that passed over corrupt checkpoints: their steps, and the step it restored.
  skipped: list = dataclasses.field(default_factory=list)
  resumed_from: Optional[int] = None
  # Metrics dispatched and not read yet (Trainer.advance's), since interval_started.
  pending: list = dataclasses.field(default_factory=list)
  interval_started: float = 0.0
  # (steps, seconds, updates) of each read interval of this call.
  intervals: list = dataclasses.field(default_factory=list)

  def read_rows(self, fetch: Callable[[list], list[dict]], budget: Budget,
                positions_per_step: int) -> list[dict]:
    """The ``metrics.jsonl`` rows of the unread steps (``pending``), read with ``fetch`` (one
    read: :meth:`~jaxsearch.train.trainer.Trainer.fetch_metrics`); each row's ``time`` is
    interpolated over the interval and ``positions_per_s`` is the interval's. Records the
    interval's steps, seconds and updates in ``intervals``."""
    metrics = fetch(self.pending)
    self.pending = []
    seconds = max(time.perf_counter() - self.interval_started, 1e-9)
    elapsed, count = budget.elapsed(), len(metrics)
    rows = []
    for i, values in enumerate(metrics):
      step = self.step - count + 1 + i
      row = {"step": step, "positions": step * positions_per_step,
             "time": round(elapsed - seconds * (count - 1 - i) / count, 3),
             "positions_per_s": round(positions_per_step * count / seconds, 1)}
      row.update({k: json_number(v) for k, v in values.items()})
      rows.append(row)
    if rows:
      updates = rows[-1].get("updates", self.last_updates)
      self.intervals.append((count, seconds, updates - self.last_updates))
      self.last_updates = updates
    return rows

  def throughput(self, positions_per_step: int) -> dict:
    """``positions_per_s`` and ``updates_per_s`` over the intervals after the first (``None``
    without one), and ``first_interval_s`` (the first's seconds: the compilation's)."""
    steady = self.intervals[1:]
    seconds = sum(s for _, s, _ in steady)
    rate = lambda total: round(total / seconds, 2) if steady else None  # noqa: E731
    return dict(positions_per_s=rate(positions_per_step * sum(n for n, _, _ in steady)),
                updates_per_s=rate(sum(u for _, _, u in steady)),
                first_interval_s=round(self.intervals[0][1], 3) if self.intervals else None)
