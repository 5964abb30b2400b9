"""Search throughput (simulations per second) against batch size and device count.

    python scripts/bench_scaling.py                       # B = 1 ... 8192, 1/2/4/8 devices
    python scripts/bench_scaling.py --max-batch 1024      # shorter, for a CPU
    python scripts/bench_scaling.py --plot scaling.png --simulations 64

The batch axis is split over the devices with ``devices=n`` (:mod:`jaxsearch.sharding`;
``n = 1`` is the plain single-device search). On a CPU the devices are simulated with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``, set below before JAX starts; they
share the machine's cores, so on a CPU the figures measure overheads and core use, not
scale-out. On a machine with fewer accelerators than asked for, the larger counts are
skipped. Batches not divisible by the device count are skipped too.

Workload: PUCT on the hashed synthetic MDP (``A = 16``, uniform prior, zero value — the
search engine itself, as ``scripts/bench_search.py``). Prints ONE JSON line: per (devices,
batch) the median wall time of ``--repeats`` calls after a warm-up (compile) call — the
device counts of one batch size timed round-robin, so that a shared machine's load hits
them alike — the
simulations per second and the compile seconds, plus each device count's speed-up over one
device at every batch size. Writes a PNG (matplotlib) when ``--plot`` is given.
"""

import argparse
import os
import sys

_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("--max-batch", type=int, default=8192)
_parser.add_argument("--min-batch", type=int, default=1)
_parser.add_argument("--batch-base", type=int, default=4, choices=(2, 4),
                     help="batch sizes are powers of this (plus --max-batch itself)")
_parser.add_argument("--devices", type=str, default="1,2,4,8",
                     help="comma-separated device counts")
_parser.add_argument("--simulations", type=int, default=32)
_parser.add_argument("--actions", type=int, default=16)
_parser.add_argument("--repeats", type=int, default=3)
_parser.add_argument("--plot", type=str, default=None, help="write a PNG here")
ARGS = _parser.parse_args()
DEVICE_COUNTS = sorted({int(n) for n in ARGS.devices.split(",")})

# Simulated CPU devices: must be set before JAX initialises (ignored by GPU/TPU backends).
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
  os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count="
                             f"{max(DEVICE_COUNTS)}").strip()

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402


import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxsearch as js  # noqa: E402
from jaxsearch.games import hashed  # noqa: E402
from jaxsearch import sharding  # noqa: E402


def batch_sizes():
  sizes, b = [], 1
  while b <= ARGS.max_batch:
    if b >= ARGS.min_batch:
      sizes.append(b)
    b *= ARGS.batch_base
  if ARGS.max_batch not in sizes:
    sizes.append(ARGS.max_batch)
  return sizes


def roots(game, batch):
  states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), batch))
  return states.replace(code=states.code ^ jnp.arange(batch, dtype=jnp.uint32))


def compiled(game, devices, batch):
  """``(step, states, compile seconds)`` for ``devices`` (1 = the plain search)."""
  search = js.policies.puct(game, js.estimators.uniform(), num_simulations=ARGS.simulations,
                            devices=None if devices == 1 else devices)
  step = jax.jit(search)
  states = sharding.put_batch(roots(game, batch), None if devices == 1 else devices)
  start = time.perf_counter()
  jax.block_until_ready(step(None, jax.random.PRNGKey(1), states))
  return step, states, time.perf_counter() - start


def measure_batch(game, counts, batch):
  """Every device count at one batch size, timed round-robin (``--repeats`` rounds), so that
  load from other processes hits them alike; the median of each."""
  steps = {n: compiled(game, n, batch) for n in counts}
  times = {n: [] for n in counts}
  for r in range(ARGS.repeats):
    for n in counts:
      step, states, _ = steps[n]
      start = time.perf_counter()
      jax.block_until_ready(step(None, jax.random.PRNGKey(2 + r), states))
      times[n].append(time.perf_counter() - start)
  rows = []
  for n in counts:
    seconds = statistics.median(times[n])
    rows.append(dict(devices=n, batch=batch, seconds=round(seconds, 6),
                     sims_per_s=round(batch * ARGS.simulations / seconds, 1),
                     compile_s=round(steps[n][2], 2)))
  return rows


def plot(results, path):
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
  device = jax.devices()[0]
  ax.set_title(f"PUCT, hashed MDP A={ARGS.actions}, S={ARGS.simulations} — "
               f"{device.platform} ({device.device_kind})", fontsize=9)
  ax.grid(True, which="both", alpha=0.3)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def main():
  game = hashed.make(ARGS.actions)
  available = jax.device_count()
  results, skipped = [], []
  counts = [n for n in DEVICE_COUNTS if n <= available]
  skipped += [dict(devices=n, reason=f"only {available} devices")
              for n in DEVICE_COUNTS if n > available]
  for batch in batch_sizes():
    fits = [n for n in counts if batch % n == 0]
    skipped += [dict(devices=n, batch=batch, reason="batch not divisible")
                for n in counts if batch % n]
    for row in measure_batch(game, fits, batch):
      results.append(row)
      print(json.dumps(row), file=sys.stderr, flush=True)
  results.sort(key=lambda r: (r["devices"], r["batch"]))
  speedup = {}
  for r in results:
    base = [b for b in results if b["devices"] == 1 and b["batch"] == r["batch"]]
    if base and r["devices"] > 1:
      speedup.setdefault(str(r["devices"]), {})[str(r["batch"])] = round(
          r["sims_per_s"] / base[0]["sims_per_s"], 3)
  device = jax.devices()[0]
  summary = dict(benchmark="scaling", workload=f"puct/hashed{ARGS.actions}",
                 simulations=ARGS.simulations, platform=device.platform,
                 device_kind=device.device_kind, device_count=available,
                 jax=jax.__version__, results=results, speedup_vs_1_device=speedup,
                 skipped=skipped)
  if ARGS.plot:
    plot(results, ARGS.plot)
    summary["plot"] = ARGS.plot
  print(json.dumps(summary))


if __name__ == "__main__":
  main()
