"""The parts of ``scripts/gpu_check.py`` that run the command line's jobs: Mastermind and
Wordle solved, the solver's chunk at several leaves per step, the estimator, a profiler trace
of the solver, and training."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from gpu_parts.common import emit, last_json, run_cli, run_script

# XLA's CUDA graphs over loops too (``mastermind_graphs``): each trip of a data-dependent loop
# then runs inside a graph on the device instead of handing its condition to the host.
GRAPH_FLAGS = ("--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,"
               "CONDITIONAL,WHILE")
WORDLE_TARGET = 11219  # the optimum after tarse on the 3158/14855 lists


def part_mastermind(args, xla_flags: str = "", runs: tuple = ("cold", "warm")) -> None:
  """``jaxsearch solve mastermind --method tree`` (the trees' search on the device; the
  default solves Mastermind by the exact search on the host) on a compilation cache of its
  own, once per ``runs``:
  ``cold`` compiles every program, ``warm`` (a user's later runs) loads them from the cache.
  Each run gets the part's time that is left (none left: its record says so)."""
  size = ["--pegs", "2", "--colours", "3"] if args.smoke else []
  start = time.perf_counter()
  with tempfile.TemporaryDirectory() as cache_dir:
    for run in runs:
      left = args.cap - 2 - (time.perf_counter() - start)
      if left < 5:
        emit({"run": run, "status": "no time left", "xla_flags": xla_flags})
        continue
      status, stdout, wall = run_cli(["solve", "mastermind", *size, "--method", "tree",
                                      "--json", "--quiet"],
                                     left, xla_flags, cache_dir)
      found = last_json(stdout) or {}
      emit({"run": run, "status": status, "wall_s": round(wall, 2), "xla_flags": xla_flags,
             **{k: found.get(k) for k in ("total_guesses", "proven_optimal", "simulations",
                                          "nodes", "seconds", "phases",
                                          "memory_estimate_gb")}})


def part_estimator(args) -> None:
  emit(run_script("bench_estimator.py", ["--batch", "16" if args.smoke else "1024"],
                  args.cap - 2))


def part_leaves(args) -> None:
  """``jaxsearch bench leaves``: simulations per second of the solver's chunk program at
  K = 1, 4, 16, 64 leaves per tree per step (Mastermind's opening sub-problems), where the
  device saturates."""
  argv = ["bench", "leaves"] + (["--quick"] if args.smoke else [])
  status, stdout, wall = run_cli(argv, args.cap - 2)
  emit({"status": status, "wall_s": round(wall, 2), **(last_json(stdout) or {})})


def part_mastermind_graphs(args) -> None:
  part_mastermind(args, GRAPH_FLAGS, runs=("cold",))  # beside the plain part's cold run


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

  from jaxsearch import cli
  from jaxsearch.solve import chunked
  traced = folder / "solve"
  traced.mkdir()
  chunk_of_loop, timing = chunked.run_chunk, {}

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

  chunked.run_chunk = traced_chunk
  # Chunks of 4 simulations keep the trace (a kernel event each) small enough to come back.
  size = ["--pegs", "3", "--colours", "4", "--chunk", "1"] if args.smoke else ["--chunk", "4"]
  cli.main(["solve", "mastermind", *size, "--simulations", "8", "--certify-seconds", "5",
            "--method", "tree", "--quiet"])
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
  emit({**settings, "written": str(archive_path), "bytes": archive_path.stat().st_size})


def part_wordle(args) -> None:
  """``--first tarse`` with a bounded search: ``history`` says when the achievable bound
  reached the optimum; the certificates then run on the host's cores."""
  if args.smoke:
    lists = _small_wordle_lists(Path(args.out))
    extra = ["--answers", str(lists[0]), "--guesses", str(lists[1]), "--first",
             lists[2], "--seconds", "10"]
  else:
    extra = ["--first", "tarse", "--seconds", "45", "--certify-seconds", "40"]
  status, stdout, wall = run_cli(["solve", "wordle", *extra, "--json", "--quiet"], args.cap - 2)
  found = last_json(stdout) or {}
  target = found.get("total_guesses") if args.smoke else WORDLE_TARGET
  reached = next((secs for _, secs, bound, _ in found.get("history") or ()
                  if bound is not None and bound <= target + 1e-6), None)
  emit({"status": status, "wall_s": round(wall, 2), "target": target,
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
  status, stdout, wall = run_cli(["solve", "wordle", *extra, "--json", "--quiet"], args.cap - 2)
  found = last_json(stdout) or {}
  history = [(sims, round(secs, 1), bound) for sims, secs, bound, _ in
             found.get("history") or ()]
  emit({"status": status, "wall_s": round(wall, 2), "bound_history": history,
         **{k: found.get(k) for k in ("total_guesses", "first_guess", "proven_given_first",
                                       "simulations", "nodes", "seconds", "phases")}})


def part_openings(args) -> None:
  """Two-step lower bounds of Wordle's first guesses on the device
  (``scripts/wordle_openings.py --engine jax --order random``): how many an accelerator bounds
  a second, and the share of a uniform sample that cannot beat 11219."""
  seconds = 3 if args.smoke else max(10, args.cap - 45)
  found = run_script("wordle_openings.py", ["--engine", "jax", "--order", "random",
                                             "--two-step-seconds", str(seconds)], args.cap - 2)
  emit({k: found.get(k) for k in ("openings", "one_step", "two_step", "remaining",
                                  "incumbent_bounds", "seconds")})


def _small_wordle_lists(folder: Path) -> tuple[Path, Path, str]:
  """The first 40 answers of the default lists (the smoke run's puzzle)."""
  from jaxsearch.games import wordle
  answers_path, _ = wordle.default_paths()
  words = [w for w in answers_path.read_text().split() if w][:40]
  answers = folder / "smoke_answers.txt"
  answers.write_text("\n".join(words) + "\n")
  return answers, answers, words[0]


TRAIN_RESERVE_S = 75  # of the train part's cap: start-up and the final evaluation


def part_train(args) -> None:
  """``jaxsearch train connect_four --preset accelerator`` for the part's cap less
  :data:`TRAIN_RESERVE_S` (``--cap train=420``: about 6 minutes), then its final evaluation
  (the end-game sets, no UCT match): positions and updates per second in steady state (the
  summary's, compilation excluded and given as ``first_interval_s``), the device's peak
  memory, and the search's and the raw network's errors on Test_L3_R1 and Test_L2_R2."""
  minutes = max(0.5, (args.cap - TRAIN_RESERVE_S) / 60)
  with tempfile.TemporaryDirectory() as out:
    extra = (["--steps", "3", "--set", "batch_size=8", "--set", "simulations=4",
              "--set", "min_replay=16", "--set", "train_batch=8", "--set", "eval_games=2",
              "--set", "eval_simulations=4", "--set", "eval_uct_simulations=4"]
             if args.smoke else
             ["--preset", "accelerator", "--minutes", f"{minutes:.2f}", "--set",
              "eval_every=0", "--set", "eval_uct_simulations=0", "--set", "checkpoint_every=0"])
    status, stdout, wall = run_cli(["train", "connect_four", *extra, "--json", "--quiet",
                                 "--out", out], args.cap - 2)
    metrics = Path(out) / "metrics.jsonl"
    rows = ([json.loads(line) for line in metrics.read_text().splitlines()]
            if metrics.is_file() else [])
  summary = last_json(stdout) or {}
  emit({"status": status, "wall_s": round(wall, 2), "rows": _train_rates(rows),
         **{k: summary.get(k) for k in ("preset", "steps", "positions", "updates", "minutes",
                                        "positions_per_s", "updates_per_s",
                                        "first_interval_s", "device_peak_bytes",
                                        "search_error", "net_error", "search_vs_random")}})


def _train_rates(rows: list[dict]) -> dict:
  """Rates from the metrics rows: self-play positions and gradient updates per second
  between the second logged step (the first, alone, holds the compilation) and the last."""
  if len(rows) < 3:
    return {"positions_per_s": None, "updates_per_s": None}
  first, last = rows[1], rows[-1]
  seconds = max(last["time"] - first["time"], 1e-9)
  return {"positions_per_s": round((last["positions"] - first["positions"]) / seconds, 1),
          "updates_per_s": round((last.get("updates", 0) - first.get("updates", 0)) / seconds,
                                 2),
          "steady_seconds": round(seconds, 2)}
