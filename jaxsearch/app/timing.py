"""The one timing harness of the benchmarks: timed calls, their median and spread, peak memory,
one JSON line.

Every ``jaxsearch bench`` subcommand (and the developer scripts that time something) measures
the same way:

* :func:`time_calls` — ``warmup`` untimed calls (the first one compiles, if the function is
  jitted and not yet compiled), then ``repeats`` timed ones, each waited for with
  ``jax.block_until_ready`` (JAX dispatches asynchronously: without it a timer measures the
  dispatch, not the work);
* :func:`interleaved` — several systems timed round by round, one timed call of each per
  round (each after its own untimed call), so that a shared machine's noise hits them alike;
* :class:`Timing` — the seconds of the timed calls, with their median, fastest, slowest and
  relative spread, and :meth:`Timing.record` for a JSON record;
* :func:`peak_rss_bytes` — the peak resident memory of this process or of its finished
  children (a child process measured from outside: ``jaxsearch bench solve``);
* :func:`emit` — one JSON line on standard output, flushed (what every benchmark prints).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from typing import Callable, Optional, Sequence


def time_calls(fn: Callable, args: Sequence = (), repeats: int = 5,
               warmup: int = 1) -> list:
  """Seconds of ``repeats`` calls of ``fn(*args)``, each waited for, after ``warmup``
  untimed calls.

  Self-contained (its imports are its own): ``jaxsearch bench ab`` sends this function's
  source to the processes that time another checkout, so that both sides are timed alike.

  Returns:
    ``list[float]`` of ``repeats`` seconds, in call order.
  """
  import time as clock

  import jax
  for _ in range(warmup):
    jax.block_until_ready(fn(*args))
  seconds = []
  for _ in range(repeats):
    start = clock.perf_counter()
    jax.block_until_ready(fn(*args))
    seconds.append(clock.perf_counter() - start)
  return seconds


def interleaved(systems: dict, rounds: int, warmup: int = 1) -> dict:
  """Seconds of each of ``systems`` (``{name: (fn, args)}``), timed round by round: in each
  of ``rounds`` rounds every system in turn makes ``warmup`` untimed calls and one timed
  call, so that the timed call finds the system's own data in the caches and the machine's
  noise hits every system alike.

  Returns:
    ``{name: list[float]}``, ``rounds`` seconds each (round ``r``'s at index ``r``).
  """
  seconds = {name: [] for name in systems}
  for _ in range(rounds):
    for name, (fn, args) in systems.items():
      seconds[name] += time_calls(fn, args, repeats=1, warmup=warmup)
  return seconds


@dataclasses.dataclass(frozen=True)
class Timing:
  """The seconds of some timed calls (:func:`time_calls`) and what a benchmark reports of
  them."""

  seconds: tuple

  @classmethod
  def of(cls, fn: Callable, args: Sequence = (), repeats: int = 5,
         warmup: int = 1) -> "Timing":
    """:func:`time_calls`' seconds as a :class:`Timing`."""
    return cls(tuple(time_calls(fn, args, repeats, warmup)))

  @property
  def median(self) -> float:
    return statistics.median(self.seconds)

  @property
  def fastest(self) -> float:
    """Noise on a shared machine only ever adds time: the fastest calls agree better from
    one run to the next than the medians do."""
    return min(self.seconds)

  @property
  def slowest(self) -> float:
    return max(self.seconds)

  @property
  def spread(self) -> float:
    """``(slowest − fastest) / median``: how far the machine's noise moved the calls."""
    return (self.slowest - self.fastest) / self.median

  def record(self, prefix: str = "", digits: int = 5) -> dict:
    """``{prefix + "seconds", "fastest_seconds", "spread", "repeats"}``: the median, the
    fastest call, the relative spread and the number of timed calls, rounded."""
    return {f"{prefix}seconds": round(self.median, digits),
            f"{prefix}fastest_seconds": round(self.fastest, digits),
            f"{prefix}spread": round(self.spread, 3), f"{prefix}repeats": len(self.seconds)}


class Stopwatch:
  """Wall seconds of a block: ``with Stopwatch() as watch: ...`` then ``watch.seconds``
  (for work timed once, e.g. a whole run with its compiles); inside the block
  ``watch.elapsed`` is the time so far."""

  def __enter__(self) -> "Stopwatch":
    self.seconds = 0.0
    self._start = time.perf_counter()
    return self

  @property
  def elapsed(self) -> float:
    return time.perf_counter() - self._start

  def __exit__(self, *exc) -> None:
    self.seconds = self.elapsed


def peak_rss_bytes(children: bool = False) -> Optional[int]:
  """Peak resident memory in bytes: this process's, or with ``children`` the largest of its
  finished child processes' (each measured by the kernel over the child's whole life, as
  ``/usr/bin/time -v`` reports it). ``None`` where the platform does not say (Windows)."""
  try:
    import resource
  except ImportError:
    return None
  who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
  peak = resource.getrusage(who).ru_maxrss
  return int(peak if sys.platform == "darwin" else peak * 1024)  # KiB on Linux


def gib(count: Optional[int]) -> Optional[float]:
  """Bytes in GiB, two decimals (``None`` stays ``None``)."""
  return None if count is None else round(count / (1 << 30), 2)


def emit(record: dict, stream=None) -> None:
  """``record`` as one JSON line on ``stream`` (standard output), flushed."""
  print(json.dumps(record), file=stream or sys.stdout, flush=True)
