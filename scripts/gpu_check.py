"""One prepared run on an accelerator: the engine against mctx, the solver, and training.

    python scripts/gpu_check.py --out DIR            # the full run (6–7 minutes on an H200)
    python scripts/gpu_check.py --out DIR --smoke    # tiny shapes: a minute on a CPU

Runs from a plain checkout on the machine's own JAX (``PYTHONPATH=.`` is set for the parts
it starts). Each part runs in its own process under its own time cap, so one slow or broken
part cannot take the others with it; what a part printed before its cap is kept. It writes
``DIR/results.jsonl`` (one JSON object per measurement, each with its ``part``), and
``DIR/summary.md`` (tables of the same figures); ``--profile`` also writes
``DIR/profile.tar.gz`` (a ``jax.profiler`` trace of one PUCT and one Gumbel search with their
optimised HLO: read it on any machine with ``python scripts/profile_search.py --from
profile.tar.gz``).

The parts, in order:

* ``env``: JAX, its backend and devices, and whether mctx is importable;
* ``variants`` (when named): our searches under each loop layout (:class:`jaxsearch.LoopOptions`,
  the same trees) beside mctx, at S = 32: what a loop trip costs on this device;
* ``bench``: our PUCT against ``mctx.muzero_policy`` and our Gumbel against
  ``mctx.gumbel_muzero_policy`` on the hashed MDP and Connect Four, at B in {256, 4096, 32768}
  and S in {32, 128}: simulations per second, the ratios, compile seconds, each program's
  device bytes, the process's peak device memory (without mctx: ours alone, and the record
  says mctx is missing);
* ``profile``: the trace named above (with ``--profile``);
* ``estimator``: ``scripts/bench_estimator.py``, Mastermind's estimator one state at a time
  against all states at once (B = 1024);
* ``mastermind``: ``jaxsearch solve mastermind`` (4×6) end to end, with its phases, twice on
  a compilation cache of its own: compiling everything (``cold``), then from the cache
  (``warm``, what a user's later runs take);
* ``mastermind_graphs`` (when named): the same with XLA's CUDA graphs over loops
  (:data:`GRAPH_FLAGS` added to ``XLA_FLAGS``);
* ``solve_profile`` (when named): a ``jax.profiler`` trace of one chunk of Mastermind's
  search, with the optimised HLO of its search programs, in ``solve_profile.tar.gz``
  (read it with ``scripts/profile_search.py --from``);
* ``train``: ``jaxsearch train connect_four`` for 60 s with the default preset: self-play
  positions and updates per second;
* ``wordle``: ``jaxsearch solve wordle --first tarse`` with a bounded search: when the
  search's achievable bound reached 11219, and whether the certificates (on the host's cores)
  prove it;
* ``wordle_empty`` (when named): ``jaxsearch solve wordle`` from the empty board (the first
  guess searched too) with a bounded search: the best first guess's bound after each root
  visit, the exported total and its first guess.

mctx is not a dependency. On a machine without a network, carry its pure-Python wheel: on a
machine with one, ``pip download --no-deps -d .whl mctx`` into a folder git ignores, copy it
across, and ``pip install --no-index --no-deps --target /tmp/site .whl/*.whl`` before the run
with ``PYTHONPATH=/tmp/site:.`` (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Seconds each part may take at most (the full run; --smoke uses SMOKE_CAPS).
CAPS = {"env": 60, "bench": 170, "variants": 120, "profile": 90, "mastermind": 130,
        "mastermind_graphs": 100, "solve_profile": 120, "estimator": 90, "train": 100,
        "wordle": 120, "wordle_empty": 300}
SMOKE_CAPS = {"env": 60, "bench": 120, "variants": 120, "profile": 60, "mastermind": 150,
              "mastermind_graphs": 90, "solve_profile": 120, "estimator": 90, "train": 90,
              "wordle": 90, "wordle_empty": 120}
ORDER = ("env", "variants", "bench", "profile", "estimator", "mastermind",
         "mastermind_graphs", "solve_profile", "train", "wordle", "wordle_empty")
# Run only when named (profile also with --profile).
OPTIONAL = ("variants", "profile", "mastermind_graphs", "solve_profile", "wordle_empty")

# XLA's CUDA graphs over loops too (``mastermind_graphs``): each trip of a data-dependent loop
# then runs inside a graph on the device instead of handing its condition to the host.
GRAPH_FLAGS = ("--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,"
               "CONDITIONAL,WHILE")

# The bench grid.
BATCHES, SIMULATIONS = (256, 4096, 32768), (32, 128)
SMOKE_BATCHES, SMOKE_SIMULATIONS = (4,), (4,)
WORDLE_TARGET = 11219  # the optimum after tarse on the 3158/14855 lists


def _emit(record: dict) -> None:
  print(json.dumps(record), flush=True)


# --- the parts (each runs in a process of its own) -------------------------------------------


def part_env(args) -> None:
  import jax

  sys.path.insert(0, str(ROOT))
  from jaxsearch.app import bench
  device = jax.devices()[0]
  _emit({"jax": jax.__version__, "jaxlib": _version("jaxlib"), "backend": jax.default_backend(),
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
  sys.path.insert(0, str(ROOT))
  from jaxsearch.app import bench
  with_mctx = bench.has_mctx()
  if not with_mctx:
    _emit({"note": "mctx is missing: ours alone are measured (see the script's docstring)"})
  batches, sims = ((SMOKE_BATCHES, SMOKE_SIMULATIONS) if args.smoke
                   else (BATCHES, SIMULATIONS))
  workers = _workers(args)
  deadline = time.monotonic() + args.cap - 5
  for batch_size in batches:
    if time.monotonic() > deadline:
      _emit({"skipped": f"B={batch_size}: out of time"})
      continue
    workloads = [make(batch_size, s, with_mctx=with_mctx)
                 for make in (bench.hashed, bench.connect_four) for s in sims]
    jobs = {(i, name): job for i, w in enumerate(workloads)
            for name, job in bench.jobs(w).items()}
    start = time.perf_counter()
    compiled = bench.compile_all(jobs, workers)
    _emit({"compiled": len(jobs), "batch": batch_size, "workers": workers,
           "wall_s": round(time.perf_counter() - start, 2)})
    for i, workload in enumerate(workloads):
      if time.monotonic() > deadline:
        _emit({"skipped": f"{workload.name} B={batch_size} S={workload.num_simulations}"})
        continue
      mine = {name: value for (j, name), value in compiled.items() if j == i}
      _emit(bench.measure(workload, mine, repeats=args.repeats))


# Loop settings compared by the ``variants`` part: (path_update, levels_per_trip).
VARIANTS = (("per_level", 1), ("whole_path", 1), ("whole_path", 2), ("whole_path", 4))


def part_variants(args) -> None:
  """Our searches under each of :data:`VARIANTS` (the same trees, different loops), beside
  mctx at the default settings, at every batch of the grid and S = 32: what a loop trip
  costs on this device."""
  sys.path.insert(0, str(ROOT))
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
  variants = VARIANTS[::3] if args.smoke else VARIANTS
  if args.variant_settings:
    variants = tuple((update, int(levels)) for update, levels in (
        setting.split("/") for setting in args.variant_settings.split(",")))
  for batch_size in batches:
    workloads = []
    for make in games:
      for index, (update, levels) in enumerate(variants):
        workload = make(batch_size, sims, with_mctx=with_mctx and index == 0,
                        options={"path_update": update, "levels_per_trip": levels})
        workloads.append((f"{update}/{levels}", workload))
    jobs = {(i, name): job for i, (_, w) in enumerate(workloads)
            for name, job in bench.jobs(w).items() if name != "env"}
    compiled = bench.compile_all(jobs, workers)
    for i, (setting, workload) in enumerate(workloads):
      mine = {name: value for (j, name), value in compiled.items() if j == i}
      workload = dataclasses.replace(workload, env=None)
      _emit({"setting": setting, "xla_flags": os.environ.get("XLA_FLAGS", ""),
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

  sys.path.insert(0, str(ROOT))
  sys.path.insert(0, str(ROOT / "scripts"))
  import profile_search
  with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    for name, (policy, game, batch, options) in PROFILES.items():
      batch = min(batch, 8) if args.smoke else batch
      sims = 4 if args.smoke else 32
      record = profile_search.record(policy, batch, sims, repeats=3, folder=folder / name,
                                     game_name=game, options=options)
      _emit({"profile": name, **record})
    with tarfile.open(Path(args.out) / "profile.tar.gz", "w:gz") as archive:
      archive.add(folder, arcname="profile")
  _emit({"written": str(Path(args.out) / "profile.tar.gz"), "device": str(jax.devices()[0])})


def _cli(argv: list[str], cap: float, xla_flags: str = "",
         cache_dir: str | None = None) -> tuple[int, str, float]:
  """Runs ``python -m jaxsearch.cli ARGV`` under ``cap`` seconds (``xla_flags`` added to
  ``XLA_FLAGS``; ``cache_dir``: the CLI's compilation cache, else its default):
  ``(status, stdout, seconds)``; status 124 when the cap ended it."""
  env = _child_env()
  if cache_dir is not None:
    env["JAXSEARCH_CACHE_DIR"] = cache_dir
  if xla_flags:
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {xla_flags}".strip()
  start = time.perf_counter()
  try:
    done = subprocess.run([sys.executable, "-m", "jaxsearch.cli", *argv], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=cap)
    status, stdout = done.returncode, done.stdout
    if status:
      sys.stderr.write(done.stderr[-4000:])
  except subprocess.TimeoutExpired as expired:
    status, stdout, stderr = 124, expired.stdout or "", expired.stderr or ""
    if isinstance(stdout, bytes):
      stdout = stdout.decode(errors="replace")
    if isinstance(stderr, bytes):
      stderr = stderr.decode(errors="replace")
    sys.stderr.write(f"cut at {cap:.0f} s; its last output:\n{stderr[-4000:]}")
  return status, stdout, time.perf_counter() - start


def _last_json(stdout: str):
  for line in reversed(stdout.strip().splitlines()):
    try:
      return json.loads(line)
    except json.JSONDecodeError:
      continue
  return None


def part_mastermind(args, xla_flags: str = "") -> None:
  """``jaxsearch solve mastermind`` twice on a compilation cache of its own: ``cold`` compiles
  every program, ``warm`` (a user's later runs) loads them from the cache. The warm run gets
  the part's time that is left (none left: its record says so)."""
  size = ["--pegs", "2", "--colours", "3"] if args.smoke else []
  start = time.perf_counter()
  with tempfile.TemporaryDirectory() as cache_dir:
    for run in ("cold", "warm"):
      left = args.cap - 2 - (time.perf_counter() - start)
      if left < 5:
        _emit({"run": run, "status": "no time left", "xla_flags": xla_flags})
        continue
      status, stdout, wall = _cli(["solve", "mastermind", *size, "--json", "--quiet"], left,
                                  xla_flags, cache_dir)
      found = _last_json(stdout) or {}
      _emit({"run": run, "status": status, "wall_s": round(wall, 2), "xla_flags": xla_flags,
             **{k: found.get(k) for k in ("total_guesses", "proven_optimal", "simulations",
                                          "nodes", "seconds", "phases",
                                          "memory_estimate_gb")}})


def part_estimator(args) -> None:
  batch = "16" if args.smoke else "1024"
  done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_estimator.py"),
                         "--batch", batch], cwd=ROOT, env=_child_env(), capture_output=True,
                        text=True, timeout=args.cap - 2)
  if done.returncode:
    sys.stderr.write(done.stderr[-4000:])
    raise SystemExit(done.returncode)
  _emit(_last_json(done.stdout) or {})


def part_mastermind_graphs(args) -> None:
  part_mastermind(args, GRAPH_FLAGS)


def part_solve_profile(args) -> None:
  """One chunk of Mastermind's search (4 simulations; the second chunk, so no compilation)
  traced by ``jax.profiler``, the run made in-process through the command line, with the
  optimised HLO of the search programs (XLA's dump), packed as ``profile_search.py --from``
  reads it."""
  import tarfile
  folder = Path(tempfile.mkdtemp())
  dump = folder / "dump"
  os.environ["XLA_FLAGS"] = (f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump} "
                             "--xla_dump_hlo_as_text").strip()
  import jax  # after XLA_FLAGS: XLA reads them once

  sys.path.insert(0, str(ROOT))
  from jaxsearch import cli
  from jaxsearch.solve import loop
  traced = folder / "solve"
  traced.mkdir()
  chunk_of_loop, timing = loop._chunk, {}

  def traced_chunk(the_loop, *rest):  # the second chunk of the run, under the profiler
    if the_loop.chunks != 1:
      return chunk_of_loop(the_loop, *rest)
    jax.profiler.start_trace(str(traced / "trace"))
    start = time.perf_counter()
    try:
      return chunk_of_loop(the_loop, *rest)
    finally:
      timing["chunk_s"] = time.perf_counter() - start
      timing["simulations"] = the_loop.options.search.chunk
      jax.profiler.stop_trace()

  loop._chunk = traced_chunk
  # Chunks of 4 simulations keep the trace (a kernel event each) small enough to come back.
  size = ["--pegs", "3", "--colours", "4", "--chunk", "1"] if args.smoke else ["--chunk", "4"]
  cli.main(["solve", "mastermind", *size, "--simulations", "8", "--certify-seconds", "5",
            "--quiet"])
  if not timing:
    raise RuntimeError("solve_profile: the search ended within its first chunk")
  # The search programs (step, for the search and the proof rule's chunks): their
  # instruction names label the trace's kernels with the engine's phases.
  modules = sorted(p for p in dump.glob("*after_optimizations.txt")
                   if "jit_step" in p.name)
  (traced / "module.hlo.txt").write_text("\n".join(p.read_text() for p in modules))
  settings = {"policy": "solve mastermind (one chunk)", "batch": "openings",
              "simulations": timing.get("simulations"), "repeats": 1,
              "traced_seconds_per_search": round(timing.get("chunk_s", float("nan")), 4),
              "modules": [p.name for p in modules], "device": str(jax.devices()[0])}
  (traced / "settings.json").write_text(json.dumps(settings))
  archive_path = Path(args.out) / "solve_profile.tar.gz"
  with tarfile.open(archive_path, "w:gz") as archive:
    archive.add(traced, arcname="solve_profile")
  _emit({**settings, "written": str(archive_path), "bytes": archive_path.stat().st_size})


def part_wordle(args) -> None:
  """``--first tarse`` with a bounded search: ``history`` says when the achievable bound
  reached the optimum; the certificates then run on the host's cores."""
  if args.smoke:
    lists = _small_wordle_lists(Path(args.out))
    extra = ["--answers", str(lists[0]), "--guesses", str(lists[1]), "--first",
             lists[2], "--seconds", "10"]
  else:
    extra = ["--first", "tarse", "--seconds", "45", "--certify-seconds", "40"]
  status, stdout, wall = _cli(["solve", "wordle", *extra, "--json", "--quiet"], args.cap - 2)
  found = _last_json(stdout) or {}
  target = found.get("total_guesses") if args.smoke else WORDLE_TARGET
  reached = next((secs for _, secs, bound, _ in found.get("history") or ()
                  if bound is not None and bound <= target + 1e-6), None)
  _emit({"status": status, "wall_s": round(wall, 2), "target": target,
         "search_reached_target_s": reached, **{k: found.get(k) for k in (
             "total_guesses", "proven_optimal", "proven_given_first", "subproblems_proven",
             "simulations", "nodes", "seconds", "phases")}})


def part_wordle_empty(args) -> None:
  """From the empty board with a bounded search (``--cap`` leaves the certificates 60 s):
  the bound over time says how far the GPU gets towards 11219."""
  if args.smoke:
    lists = _small_wordle_lists(Path(args.out))
    extra = ["--answers", str(lists[0]), "--guesses", str(lists[1]), "--seconds", "10"]
  else:
    extra = ["--seconds", str(max(args.cap - 150, 30)), "--certify-seconds", "60"]
  status, stdout, wall = _cli(["solve", "wordle", *extra, "--json", "--quiet"], args.cap - 2)
  found = _last_json(stdout) or {}
  history = [(sims, round(secs, 1), bound) for sims, secs, bound, _ in
             found.get("history") or ()]
  _emit({"status": status, "wall_s": round(wall, 2), "bound_history": history,
         **{k: found.get(k) for k in ("total_guesses", "first_guess", "proven_given_first",
                                       "simulations", "nodes", "seconds", "phases")}})


def _small_wordle_lists(folder: Path) -> tuple[Path, Path, str]:
  """The first 40 answers of the default lists (the smoke run's puzzle)."""
  sys.path.insert(0, str(ROOT))
  from jaxsearch.games import wordle
  answers_path, _ = wordle.default_paths()
  words = [w for w in answers_path.read_text().split() if w][:40]
  answers = folder / "smoke_answers.txt"
  answers.write_text("\n".join(words) + "\n")
  return answers, answers, words[0]


def part_train(args) -> None:
  with tempfile.TemporaryDirectory() as out:
    extra = (["--steps", "3", "--set", "batch_size=8", "--set", "simulations=4",
              "--set", "min_replay=16", "--set", "train_batch=8", "--set", "eval_games=2",
              "--set", "eval_simulations=4", "--set", "eval_uct_simulations=4"]
             if args.smoke else ["--minutes", "1"])
    status, stdout, wall = _cli(["train", "connect_four", *extra, "--json", "--quiet",
                                 "--out", out], args.cap - 2)
    metrics = Path(out) / "metrics.jsonl"
    rows = ([json.loads(line) for line in metrics.read_text().splitlines()]
            if metrics.is_file() else [])
  summary = _last_json(stdout) or {}
  _emit({"status": status, "wall_s": round(wall, 2), **_train_rates(rows),
         **{k: summary.get(k) for k in ("steps", "positions", "updates", "minutes")}})


def _train_rates(rows: list[dict]) -> dict:
  """Steady-state rates from the metrics rows: self-play positions and gradient updates per
  second between the second logged step (compilation behind) and the last."""
  if len(rows) < 3:
    return {"positions_per_s": None, "updates_per_s": None}
  first, last = rows[1], rows[-1]
  seconds = max(last["time"] - first["time"], 1e-9)
  return {"positions_per_s": round((last["positions"] - first["positions"]) / seconds, 1),
          "updates_per_s": round((last.get("updates", 0) - first.get("updates", 0)) / seconds,
                                 2),
          "steady_seconds": round(seconds, 2)}


PARTS = {"env": part_env, "bench": part_bench, "variants": part_variants,
         "profile": part_profile, "estimator": part_estimator, "mastermind": part_mastermind,
         "mastermind_graphs": part_mastermind_graphs, "solve_profile": part_solve_profile,
         "train": part_train, "wordle": part_wordle, "wordle_empty": part_wordle_empty}


# --- the driver ------------------------------------------------------------------------------


def _child_env() -> dict:
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
      p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
  env["PYTHONUNBUFFERED"] = "1"
  return env


def _run_part(name: str, args, cap: float, results) -> dict:
  """Runs one part in a process of its own under ``cap`` seconds; every JSON line it prints
  goes to ``results`` with its part's name. Returns the part's status record."""
  command = [sys.executable, str(Path(__file__).resolve()), "--part", name, "--out",
             str(args.out), "--part-cap", str(cap), "--repeats", str(args.repeats),
             "--compile-workers", str(args.compile_workers)]
  command += ["--smoke"] if args.smoke else []
  for option in ("variant_batches", "variant_games", "variant_settings"):
    if getattr(args, option):
      command += [f"--{option.replace('_', '-')}", getattr(args, option)]
  start = time.perf_counter()
  process = subprocess.Popen(command, cwd=ROOT, env=_child_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
  timed_out = False
  try:
    stdout, stderr = process.communicate(timeout=cap)
  except subprocess.TimeoutExpired:
    process.kill()
    stdout, stderr = process.communicate()
    timed_out = True
  count = 0
  for line in stdout.splitlines():
    try:
      record = json.loads(line)
    except json.JSONDecodeError:
      continue
    results.write(json.dumps({"part": name, **record}) + "\n")
    results.flush()
    count += 1
  status_text = "timed out" if timed_out else (
      "ok" if process.returncode == 0 else f"failed ({process.returncode})")
  status = {"part": name, "status": status_text,
      "seconds": round(time.perf_counter() - start, 1), "cap_s": round(cap), "records": count}
  if process.returncode and not timed_out:
    status["error"] = stderr.strip().splitlines()[-1][-300:] if stderr.strip() else ""
  with open(Path(args.out) / "stderr.txt", "a") as log:  # one file: few come back
    log.write(f"===== {name} ({status_text}) =====\n{stderr[-200_000:]}\n")
  results.write(json.dumps({"part": name, "status_record": status}) + "\n")
  results.flush()
  print(json.dumps(status), flush=True)
  return status


def _summary(records: list[dict], statuses: list[dict]) -> str:
  """A short markdown report of the run's records."""
  by_part: dict = {}
  for record in records:
    by_part.setdefault(record["part"], []).append(record)
  env = next(iter(by_part.get("env", [])), {})
  lines = [f"# gpu_check on {env.get('device_kind', '?')} ({env.get('backend', '?')}; jax "
           f"{env.get('jax', '?')}, mctx {env.get('mctx', '?')})", "",
           "| part | status | seconds | cap |", "|---|---|---|---|"]
  lines += [f"| {s['part']} | {s['status']} | {s['seconds']} | {s['cap_s']} |"
            for s in statuses]
  mega = lambda r, k: "–" if r.get(k) is None else f"{r[k] / 1e6:.2f}"  # noqa: E731
  bench_rows = [r for r in by_part.get("bench", []) if "workload" in r]
  if bench_rows:
    lines += ["", "Simulations per second (millions); ratios are ours / mctx (> 1: ours "
              "faster), same device, one run.", "",
              "| workload | B | S | PUCT | mctx muzero | ratio | Gumbel | mctx gumbel | ratio "
              "| compile s (ours, mctx) | peak GB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in bench_rows:
      peak = r.get("peak_device_bytes")
      lines.append(
          f"| {r['workload']} | {r['batch']} | {r['simulations']} | "
          f"{mega(r, 'sims_per_s_ours')} | {mega(r, 'sims_per_s_mctx_muzero')} | "
          f"{r.get('speedup_vs_mctx_muzero', '–')} | {mega(r, 'sims_per_s_ours_gumbel')} | "
          f"{mega(r, 'sims_per_s_mctx_gumbel')} | {r.get('speedup_gumbel_vs_mctx_gumbel', '–')}"
          f" | {r.get('compile_s_ours')}, {r.get('compile_s_mctx_muzero', '–')} | "
          f"{'–' if peak is None else round(peak / 2**30, 2)} |")
  variant_rows = [r for r in by_part.get("variants", []) if "workload" in r]
  if variant_rows:
    lines += ["", "Loop settings (path update / descent levels per trip; the same trees), S = "
              f"{variant_rows[0]['simulations']}, simulations per second (millions):", "",
              "| workload | B | setting | XLA_FLAGS | PUCT | Gumbel | mctx muzero | mctx gumbel |",
              "|---|---|---|---|---|---|---|---|"]
    for r in variant_rows:
      lines.append(
          f"| {r['workload']} | {r['batch']} | {r['setting']} | {r['xla_flags'] or '–'} | "
          f"{mega(r, 'sims_per_s_ours')} | {mega(r, 'sims_per_s_ours_gumbel')} | "
          f"{mega(r, 'sims_per_s_mctx_muzero')} | {mega(r, 'sims_per_s_mctx_gumbel')} |")
  for part in ("estimator", "mastermind", "mastermind_graphs", "solve_profile", "train",
               "wordle", "profile"):
    for r in by_part.get(part, []):
      if "status_record" not in r:
        shown = {k: v for k, v in r.items() if k != "part"}
        lines += ["", f"**{part}**: `{json.dumps(shown)}`"]
  return "\n".join(lines) + "\n"


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True, help="folder for results.jsonl and summary.md")
  parser.add_argument("--smoke", action="store_true", help="tiny shapes (a CPU smoke test)")
  parser.add_argument("--parts", default=None,
                      help=f"comma-separated parts to run, of {', '.join(ORDER)} (default: "
                           f"all but variants, and profile only with --profile)")
  parser.add_argument("--profile", action="store_true", help="also record the trace")
  parser.add_argument("--budget", type=float, default=480.0,
                      help="seconds for the whole run; a part's cap shrinks to what is left "
                           "(default 480)")
  parser.add_argument("--repeats", type=int, default=3, help="timed runs per system")
  parser.add_argument("--cap", dest="caps", action="append", default=[], metavar="PART=S",
                      help="override a part's time cap in seconds (repeatable)")
  parser.add_argument("--compile-workers", type=int, default=0, metavar="N",
                      help="threads compiling a batch's programs (default: one per core, up "
                           "to 8; 1 compiles one at a time)")
  parser.add_argument("--variant-batches", default=None, metavar="B,B",
                      help="batch sizes of the variants part (default: the grid's)")
  parser.add_argument("--variant-games", default=None, metavar="GAME,GAME",
                      help="games of the variants part: hashed, connect_four (default both)")
  parser.add_argument("--variant-settings", default=None, metavar="UPDATE/LEVELS,...",
                      help="loop settings of the variants part, e.g. per_level/1,whole_path/2 "
                           "(default: all four)")
  parser.add_argument("--part", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--part-cap", dest="cap", type=float, default=None,
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  out = Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  args.out = out.resolve()
  if args.part is not None:  # inside one part's own process
    PARTS[args.part](args)
    return 0
  if args.parts:
    chosen = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(ORDER))
    if unknown:
      parser.error(f"unknown parts {unknown}; expected some of {', '.join(ORDER)}")
  else:
    chosen = [p for p in ORDER if p not in OPTIONAL or (p == "profile" and args.profile)]
  caps = dict(SMOKE_CAPS if args.smoke else CAPS)
  for pair in args.caps:
    name, _, seconds = pair.partition("=")
    if name not in caps or not seconds:
      parser.error(f"--cap {pair!r}: expected PART=SECONDS with PART one of {', '.join(ORDER)}")
    caps[name] = float(seconds)
  deadline = time.monotonic() + args.budget
  statuses = []
  (out / "stderr.txt").write_text("")
  with open(out / "results.jsonl", "w") as results:
    for name in (p for p in ORDER if p in chosen):
      left = deadline - time.monotonic()
      if left < 10:
        statuses.append({"part": name, "status": "skipped: out of budget", "seconds": 0,
                         "cap_s": 0, "records": 0})
        continue
      statuses.append(_run_part(name, args, min(caps[name], left), results))
  records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
  summary = _summary([r for r in records if "status_record" not in r], statuses)
  (out / "summary.md").write_text(summary)
  print(summary)
  return 0 if all(s["status"] == "ok" for s in statuses) else 1


if __name__ == "__main__":
  sys.exit(main())
