"""The parts of ``scripts/gpu_check.py`` that measure the engine: the environment, the bench
grid against mctx, the loop layouts, and a profiler trace."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

from gpu_parts.common import emit

# The bench grid.
BATCHES, SIMULATIONS = (256, 4096, 32768), (32, 128)
SMOKE_BATCHES, SMOKE_SIMULATIONS = (4,), (4,)


def part_env(args) -> None:
  import jax

  from jaxsearch.app import bench
  device = jax.devices()[0]
  emit({"jax": jax.__version__, "jaxlib": _version("jaxlib"), "backend": jax.default_backend(),
         "devices": [str(d) for d in jax.devices()], "device_kind": device.device_kind,
         "mctx": _version("mctx") if bench.has_mctx() else "missing",
         "flax": _version("flax"), "orbax": _version("orbax-checkpoint"),
         "cpu_count": os.cpu_count(), "python": sys.version.split()[0]})


def _version(package: str):
  from importlib import metadata
  try:
    return metadata.version(package)
  except metadata.PackageNotFoundError:
    return None


def _workers(args) -> int:
  """Compile threads: ``--compile-workers``, else one per core up to 8 (the GPU's autotuner
  then times candidate kernels while other compiles share the device; 1 rules that out)."""
  if args.compile_workers:
    return args.compile_workers
  return max(1, min(8, (os.cpu_count() or 2) - 1))


def part_bench(args) -> None:
  """Every (game, B, S) of the grid, batch by batch: the workloads of one batch size are
  compiled together on the host's cores, then timed one after another."""
  from jaxsearch.app import bench
  with_mctx = bench.has_mctx()
  if not with_mctx:
    emit({"note": "mctx is missing: ours alone are measured (see the script's docstring)"})
  batches, sims = ((SMOKE_BATCHES, SMOKE_SIMULATIONS) if args.smoke
                   else (BATCHES, SIMULATIONS))
  workers = _workers(args)
  deadline = time.monotonic() + args.cap - 5
  for batch_size in batches:
    if time.monotonic() > deadline:
      emit({"skipped": f"B={batch_size}: out of time"})
      continue
    workloads = [make(batch_size, s, with_mctx=with_mctx)
                 for make in (bench.hashed, bench.connect_four) for s in sims]
    jobs = {(i, name): job for i, w in enumerate(workloads)
            for name, job in bench.jobs(w).items()}
    start = time.perf_counter()
    compiled = bench.compile_all(jobs, workers)
    emit({"compiled": len(jobs), "batch": batch_size, "workers": workers,
           "wall_s": round(time.perf_counter() - start, 2)})
    for i, workload in enumerate(workloads):
      if time.monotonic() > deadline:
        emit({"skipped": f"{workload.name} B={batch_size} S={workload.num_simulations}"})
        continue
      mine = {name: value for (j, name), value in compiled.items() if j == i}
      emit(bench.measure(workload, mine, repeats=args.repeats))


# Loop settings compared by the ``variants`` part: "path_update/levels_per_trip".
VARIANTS = ("per_level/1", "whole_path/1", "whole_path/2", "whole_path/4")


def _loop_options(setting: str) -> dict:
  """SearchConfig keywords of a :data:`VARIANTS` setting."""
  update, levels = setting.split("/")
  return {"path_update": update, "levels_per_trip": int(levels)}


def part_variants(args) -> None:
  """Our searches under each of :data:`VARIANTS` (the same trees, different loops), beside
  mctx at the default settings, at every batch of the grid and S = 32: what a loop trip
  costs on this device."""
  from jaxsearch.app import bench
  with_mctx = bench.has_mctx()
  batches, sims = ((SMOKE_BATCHES, SMOKE_SIMULATIONS[0]) if args.smoke
                   else (BATCHES, SIMULATIONS[0]))
  if args.variant_batches:
    batches = tuple(int(b) for b in args.variant_batches.split(","))
  workers = _workers(args)
  makers = {"hashed": bench.hashed, "connect_four": bench.connect_four}
  names = (args.variant_games.split(",") if args.variant_games
           else ["hashed"] if args.smoke else ["hashed", "connect_four"])
  games = tuple(makers[name.strip()] for name in names)
  variants = (VARIANTS[0], VARIANTS[2]) if args.smoke else VARIANTS
  if args.variant_settings:
    variants = tuple(setting.strip() for setting in args.variant_settings.split(","))
  for batch_size in batches:
    workloads = []
    for make in games:
      for index, setting in enumerate(variants):
        workload = make(batch_size, sims, with_mctx=with_mctx and index == 0,
                        options=_loop_options(setting))
        workloads.append((setting, workload))
    jobs = {(i, name): job for i, (_, w) in enumerate(workloads)
            for name, job in bench.jobs(w).items() if name != "env"}
    compiled = bench.compile_all(jobs, workers)
    for i, (setting, workload) in enumerate(workloads):
      mine = {name: value for (j, name), value in compiled.items() if j == i}
      workload = dataclasses.replace(workload, env=None)
      emit({"setting": setting, "xla_flags": os.environ.get("XLA_FLAGS", ""),
             **bench.measure(workload, mine, repeats=args.repeats)})


# The searches ``profile`` traces: (policy, game, B, SearchConfig keywords), at S = 32.
PROFILES = {
    "puct_hashed": ("puct", "hashed", 4096, {}),
    "gumbel_hashed": ("gumbel", "hashed", 4096, {}),
    "puct_connect_four_whole_path": ("puct", "connect_four", 32768,
                                     {"path_update": "whole_path"}),
    "puct_connect_four_per_level": ("puct", "connect_four", 32768,
                                    {"path_update": "per_level"}),
}


def part_profile(args) -> None:
  """Traces of the searches of :data:`PROFILES`, with their HLO, packed into
  ``profile.tar.gz`` for ``scripts/profile_search.py --from``."""
  import tarfile

  import jax

  import profile_search
  with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    for name, (policy, game, batch, options) in PROFILES.items():
      batch = min(batch, 8) if args.smoke else batch
      sims = 4 if args.smoke else 32
      record = profile_search.record(policy, batch, sims, repeats=3, folder=folder / name,
                                     game_name=game, options=options)
      emit({"profile": name, **record})
    with tarfile.open(Path(args.out) / "profile.tar.gz", "w:gz") as archive:
      archive.add(folder, arcname="profile")
  emit({"written": str(Path(args.out) / "profile.tar.gz"), "device": str(jax.devices()[0])})
