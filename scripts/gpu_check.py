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
* ``mastermind``: ``jaxsearch solve mastermind --method tree`` (4×6, the trees) end to end,
  with its phases, twice on a compilation cache of its own: compiling everything (``cold``), then from the cache
  (``warm``, what a user's later runs take);
* ``leaves``: ``jaxsearch bench leaves``, the solver's chunk at K = 1, 4, 16, 64 leaves per
  tree per step: simulations and new nodes per second, where the device saturates;
* ``mastermind_graphs`` (when named): the same with XLA's CUDA graphs over loops
  (:data:`GRAPH_FLAGS` added to ``XLA_FLAGS``);
* ``solve_profile`` (when named): a ``jax.profiler`` trace of one chunk of Mastermind's
  search, with the optimised HLO of its search programs, in ``solve_profile.tar.gz``
  (read it with ``scripts/profile_search.py --from``);
* ``train``: ``jaxsearch train connect_four --preset accelerator`` for the part's cap less
  75 s (``--parts env,train --cap train=435 --budget 540``: 6 minutes), then its final
  evaluation: self-play positions and updates per second in steady state (compilation
  reported apart), the device's peak memory, the search's and the raw network's Test_L3_R1
  and Test_L2_R2 errors;
* ``wordle``: ``jaxsearch solve wordle --first tarse`` with a bounded search: when the
  search's achievable bound reached 11219, and whether the certificates (on the host's cores)
  prove it;
* ``wordle_empty`` (when named): ``jaxsearch solve wordle`` from the empty board (the first
  guess searched too) with a bounded search: the best first guess's bound after each root
  visit, the exported total and its first guess;
* ``openings`` (when named): ``scripts/wordle_openings.py --engine jax --order random``, the
  two-step lower bounds of a uniform sample of Wordle's first guesses for the part's time:
  seconds per first guess on the device, and the share that cannot beat 11219.

mctx is not a dependency. On a machine without a network, carry its pure-Python wheel: on a
machine with one, ``pip download --no-deps -d .whl mctx`` into a folder git ignores, copy it
across, and ``pip install --no-index --no-deps --target /tmp/site .whl/*.whl`` before the run
with ``PYTHONPATH=/tmp/site:.`` (see docs/benchmarks.md).

The parts live in ``scripts/gpu_parts/`` (``engine.py``: env, bench, variants, profile;
``commands.py``: the command line's jobs); this file runs them and writes the report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from gpu_parts.commands import (part_estimator, part_leaves, part_mastermind,
                                part_mastermind_graphs, part_openings, part_solve_profile,
                                part_train, part_wordle, part_wordle_empty)
from gpu_parts.common import ROOT, child_env
from gpu_parts.engine import part_bench, part_env, part_profile, part_variants

# Seconds each part may take at most (the full run; --smoke uses SMOKE_CAPS).
CAPS = {"env": 60, "bench": 170, "variants": 120, "profile": 90, "mastermind": 130,
        "leaves": 90,
        "mastermind_graphs": 100, "solve_profile": 120, "estimator": 90, "train": 100,
        "wordle": 120, "wordle_empty": 300, "openings": 120}
SMOKE_CAPS = {"env": 60, "bench": 120, "variants": 120, "profile": 60, "mastermind": 150,
              "leaves": 120,
              "mastermind_graphs": 90, "solve_profile": 120, "estimator": 90, "train": 90,
              "wordle": 90, "wordle_empty": 120, "openings": 90}
ORDER = ("env", "variants", "bench", "profile", "estimator", "mastermind", "leaves",
         "mastermind_graphs", "solve_profile", "train", "wordle", "wordle_empty", "openings")
# Run only when named (profile also with --profile).
OPTIONAL = ("variants", "profile", "mastermind_graphs", "solve_profile", "wordle_empty",
            "openings")


PARTS = {"env": part_env, "bench": part_bench, "variants": part_variants,
         "profile": part_profile, "estimator": part_estimator, "mastermind": part_mastermind,
         "leaves": part_leaves,
         "mastermind_graphs": part_mastermind_graphs, "solve_profile": part_solve_profile,
         "train": part_train, "wordle": part_wordle, "wordle_empty": part_wordle_empty,
         "openings": part_openings}


# --- the driver ------------------------------------------------------------------------------


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
  process = subprocess.Popen(command, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE,
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
    lines += ["", "Loop settings (path update / descent levels per trip; the same trees), "
              "S = "
              f"{variant_rows[0]['simulations']}, simulations per second (millions):", "",
              "| workload | B | setting | XLA_FLAGS | PUCT | Gumbel | mctx muzero | mctx gumbel |",
              "|---|---|---|---|---|---|---|---|"]
    for r in variant_rows:
      lines.append(
          f"| {r['workload']} | {r['batch']} | {r['setting']} | {r['xla_flags'] or '–'} | "
          f"{mega(r, 'sims_per_s_ours')} | {mega(r, 'sims_per_s_ours_gumbel')} | "
          f"{mega(r, 'sims_per_s_mctx_muzero')} | {mega(r, 'sims_per_s_mctx_gumbel')} |")
  for part in ("estimator", "mastermind", "leaves", "mastermind_graphs", "solve_profile",
               "train",
               "wordle", "wordle_empty", "openings", "profile"):
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
