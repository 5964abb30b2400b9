"""Wordle solved from a fixed first word, or from the empty board: total, proof, time and
memory, as one JSON line.

Runs ``jaxsearch solve wordle --first WORD --json --quiet [options]`` (with ``--first none``:
no ``--first``, the search over first guesses) in a child process under
``/usr/bin/time -v`` (peak resident memory of the whole run, compilation included) and prints

    {"first": ..., "total_guesses": ..., "proven_optimal": ..., "proven_given_first": ...,
     "lower_bound_total": ...,
     "seconds": ..., "wall_seconds": ..., "peak_rss_gib": ..., "nodes": ...,
     "bytes_per_node": ..., "memory_estimate_gb": ..., "simulations": ..., "command": ...}

    python scripts/bench_wordle_solve.py --first tarse -- --seconds 60
    python scripts/bench_wordle_solve.py --first salet --lists orig -- --seconds 60
    python scripts/bench_wordle_solve.py --first none -- --seconds 600

Everything after ``--`` goes to ``jaxsearch solve wordle``. The compilation cache is off
(``JAXSEARCH_CACHE_DIR=``) unless ``--warm``, so a run's figures include compiling.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time


def peak_rss_bytes(time_report: str) -> int | None:
  """``Maximum resident set size (kbytes)`` of a ``/usr/bin/time -v`` report, in bytes."""
  match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_report)
  return int(match.group(1)) * 1024 if match else None


def run(first: str, lists: str, extra: list[str], warm: bool) -> dict:
  opening = [] if first == "none" else ["--first", first]
  command = ["jaxsearch", "solve", "wordle"] + opening + ["--json", "--quiet"] + extra
  if lists != "nyt":
    from jaxsearch.games import wordle
    answers, guesses = wordle.default_paths(lists)
    command += ["--answers", str(answers), "--guesses", str(guesses)]
  timer = shutil.which("time") and os.path.exists("/usr/bin/time")
  argv = (["/usr/bin/time", "-v"] if timer else []) + command
  env = dict(os.environ)
  if not warm:
    env["JAXSEARCH_CACHE_DIR"] = ""
  started = time.perf_counter()
  done = subprocess.run(argv, capture_output=True, text=True, env=env)
  wall = time.perf_counter() - started
  if done.returncode != 0:
    sys.stderr.write(done.stderr[-4000:])
    raise SystemExit(f"the solve exited with status {done.returncode}")
  found = json.loads(done.stdout.strip().splitlines()[-1])
  peak = peak_rss_bytes(done.stderr)
  return {"first": first, "first_guess": found["first_guess"], "lists": lists,
          "total_guesses": found["total_guesses"],
          "proven_optimal": found["proven_optimal"],
          # With --first a proof is of the best total given that guess: proven_optimal (of
          # the game) stays false even when this is true.
          "proven_given_first": found.get("proven_given_first"),
          "lower_bound_total": found["lower_bound_total"],
          "seconds": found["seconds"], "wall_seconds": round(wall, 1),
          "peak_rss_gib": None if peak is None else round(peak / (1 << 30), 2),
          "nodes": found["nodes"], "bytes_per_node": found.get("bytes_per_node"),
          "memory_estimate_gb": found.get("memory_estimate_gb"),
          "subproblems_proven": found.get("subproblems_proven"),
          "simulations": found["simulations"], "phases": found.get("phases"),
          "first_guesses": _first_guesses(found.get("first_guesses")),
          "command": " ".join(command)}


def _first_guesses(report):
  """The search over first guesses, without its per-guess list: counts and the most
  visited."""
  if report is None:
    return None
  visited = sorted(report["visited"], key=lambda o: -o["visits"])
  return {"count": report["count"], "ruled_out": report["ruled_out"], "open": report["open"],
          "root_visits": report["root_visits"], "visited": len(visited),
          "most_visited": [[o["guess"], o["visits"]] for o in visited[:5]]}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--first", default="tarse",
                      help="the fixed first guess, or none: search the first guess too")
  parser.add_argument("--lists", default="nyt", choices=["nyt", "orig"])
  parser.add_argument("--warm", action="store_true", help="keep the compilation cache")
  parser.add_argument("solve_args", nargs=argparse.REMAINDER,
                      help="after --: options for jaxsearch solve wordle")
  args = parser.parse_args(argv)
  extra = [a for a in args.solve_args if a != "--"]
  print(json.dumps(run(args.first, args.lists, extra, args.warm)))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
