"""``jaxsearch bench scaling``: search throughput (simulations per second) against batch size
and device count.

    jaxsearch bench scaling                       # B = 1 ... 8192, 1/2/4/8 devices
    jaxsearch bench scaling --max-batch 1024      # shorter, for a CPU
    jaxsearch bench scaling --plot scaling.png --simulations 64

The batch axis is split over the devices with ``devices=n`` (:mod:`jaxsearch.sharding`;
``n = 1`` is the plain single-device search). On a CPU the devices are simulated with
``XLA_FLAGS=--xla_force_host_platform_device_count``, which the command sets before it starts
JAX (a process that started JAX already keeps the devices it has); they share the machine's
cores, so on a CPU the figures measure overheads and core use, not scale-out. Device counts
above what the machine has are skipped, and so are batches not divisible by the count.

Workload: PUCT on the hashed synthetic MDP (``A = 16``, uniform prior, zero value — the
search engine itself, as ``jaxsearch bench engine``). Prints ONE JSON line: per (devices,
batch) the median wall time of ``--repeats`` calls after a warm-up (compile) call — the
device counts of one batch size timed round by round (:func:`jaxsearch.app.timing.interleaved`),
so that a shared machine's load hits them alike — the simulations per second and the compile
seconds, plus each device count's speed-up over one device at every batch size. Writes a PNG
(matplotlib) when ``--plot`` is given.
"""

from __future__ import annotations

import os
import statistics
import sys


def batch_sizes(smallest: int, largest: int, base: int) -> list:
  """Powers of ``base`` from ``smallest`` to ``largest``, and ``largest`` itself."""
  sizes, b = [], 1
  while b <= largest:
    if b >= smallest:
      sizes.append(b)
    b *= base
  if largest not in sizes:
    sizes.append(largest)
  return sizes


def compiled(game, devices: int, batch: int, simulations: int):
  """``(step, args, compile seconds)`` of one search over ``devices`` (1 = the plain
  search): ``step(*args)`` runs it on distinct roots."""
  import jax
  import jax.numpy as jnp

  import jaxsearch as js
  from jaxsearch import sharding
  from jaxsearch.app import timing

  search = js.policies.puct(game, js.estimators.uniform(), num_simulations=simulations,
                            devices=None if devices == 1 else devices)
  states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), batch))
  states = states.replace(code=states.code ^ jnp.arange(batch, dtype=jnp.uint32))
  states = sharding.put_batch(states, None if devices == 1 else devices)
  step, args = jax.jit(search), (None, jax.random.PRNGKey(1), states)
  with timing.Stopwatch() as watch:
    jax.block_until_ready(step(*args))
  return step, args, watch.seconds


def measure_batch(game, counts: list, batch: int, simulations: int, repeats: int) -> list:
  """Every device count at one batch size, timed round by round; a row per count."""
  from jaxsearch.app import timing
  steps = {n: compiled(game, n, batch, simulations) for n in counts}
  seconds = timing.interleaved({n: (step, args) for n, (step, args, _) in steps.items()},
                               repeats, warmup=0)
  rows = []
  for n in counts:
    median = statistics.median(seconds[n])
    rows.append(dict(devices=n, batch=batch, seconds=round(median, 6),
                     sims_per_s=round(batch * simulations / median, 1),
                     compile_s=round(steps[n][2], 2)))
  return rows


def speedups(results: list) -> dict:
  """``{devices: {batch: sims/s ÷ one device's at that batch}}`` for every count above 1."""
  one = {r["batch"]: r["sims_per_s"] for r in results if r["devices"] == 1}
  found = {}
  for r in results:
    if r["devices"] > 1 and r["batch"] in one:
      found.setdefault(str(r["devices"]), {})[str(r["batch"])] = round(
          r["sims_per_s"] / one[r["batch"]], 3)
  return found


def plot(results: list, path: str, title: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(7, 4.2))
  for n in sorted({r["devices"] for r in results}):
    rows = [r for r in results if r["devices"] == n]
    ax.plot([r["batch"] for r in rows], [r["sims_per_s"] for r in rows], marker="o",
            label=f"{n} device{'s' if n > 1 else ''}")
  ax.set_xscale("log", base=2)
  ax.set_yscale("log")
  ax.set_xlabel("batch size B (searches)")
  ax.set_ylabel("simulations / s")
  ax.set_title(title, fontsize=9)
  ax.grid(True, which="both", alpha=0.3)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def _parser(prog: str):
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--max-batch", type=positive_int, default=8192)
  parser.add_argument("--min-batch", type=positive_int, default=1)
  parser.add_argument("--batch-base", type=int, default=4, choices=(2, 4),
                      help="batch sizes are powers of this (plus --max-batch itself)")
  parser.add_argument("--devices", type=str, default="1,2,4,8",
                      help="comma-separated device counts")
  parser.add_argument("--simulations", type=positive_int, default=32)
  parser.add_argument("--actions", type=positive_int, default=16)
  parser.add_argument("--repeats", type=positive_int, default=3)
  parser.add_argument("--plot", type=str, default=None, help="write a PNG here")
  parser.add_argument("--quick", action="store_true",
                      help="B = 4 and 8, 1 and 2 devices, S = 4, one round: a smoke run")
  return parser


def main(argv=None, prog: str = "jaxsearch bench scaling") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  parser = _parser(prog)
  args = parser.parse_args(argv)
  if args.quick:
    args.min_batch, args.max_batch, args.devices = 2, 8, "1,2"
    args.simulations, args.repeats = 4, 1
  try:
    wanted = sorted({int(n) for n in args.devices.split(",") if n})
  except ValueError:
    parser.error(f"--devices wants comma-separated counts, got {args.devices!r}")
  flags = os.environ.get("XLA_FLAGS", "")
  if "xla_force_host_platform_device_count" not in flags:  # read when JAX starts
    os.environ["XLA_FLAGS"] = (f"{flags} --xla_force_host_platform_device_count="
                               f"{max(wanted)}").strip()
  import jax

  from jaxsearch.app import timing
  from jaxsearch.games import hashed
  game, available = hashed.make(args.actions), jax.device_count()
  counts = [n for n in wanted if n <= available]
  skipped = [dict(devices=n, reason=f"only {available} devices") for n in wanted
             if n > available]
  results = []
  for batch in batch_sizes(args.min_batch, args.max_batch, args.batch_base):
    skipped += [dict(devices=n, batch=batch, reason="batch not divisible")
                for n in counts if batch % n]
    for row in measure_batch(game, [n for n in counts if batch % n == 0], batch,
                             args.simulations, args.repeats):
      results.append(row)
      timing.emit(row, sys.stderr)
  results.sort(key=lambda r: (r["devices"], r["batch"]))
  device = jax.devices()[0]
  summary = dict(benchmark="scaling", workload=f"puct/hashed{args.actions}",
                 simulations=args.simulations, platform=device.platform,
                 device_kind=device.device_kind, device_count=available,
                 jax=jax.__version__, results=results, speedup_vs_1_device=speedups(results),
                 skipped=skipped)
  if args.plot:
    plot(results, args.plot, f"PUCT, hashed MDP A={args.actions}, S={args.simulations} — "
                             f"{device.platform} ({device.device_kind})")
    summary["plot"] = args.plot
  timing.emit(summary)
  return 0
