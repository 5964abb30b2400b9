"""``jaxsearch bench solve``: Wordle solved from a fixed first word, or from the empty board —
total, proof, time and peak memory, as one JSON line.

Runs ``jaxsearch solve wordle --first WORD --json --quiet [options]`` (with ``--first none``:
no ``--first``, the search over first guesses) in a child process and prints

    {"first": ..., "total_guesses": ..., "proven_optimal": ..., "proven_given_first": ...,
     "lower_bound_total": ..., "seconds": ..., "wall_seconds": ..., "peak_rss_gib": ...,
     "nodes": ..., "bytes_per_node": ..., "memory_estimate_gb": ..., "simulations": ...,
     "command": ...}

``peak_rss_gib`` is the child's peak resident memory over its whole run, compilation included
(:func:`jaxsearch.app.timing.peak_rss_bytes` of the finished child: what ``/usr/bin/time -v``
reports as its maximum resident set size).

    jaxsearch bench solve --first tarse -- --seconds 60
    jaxsearch bench solve --first salet --lists orig -- --seconds 60
    jaxsearch bench solve --first none -- --seconds 600

Everything after ``--`` goes to ``jaxsearch solve wordle`` (e.g. ``--answers`` and
``--guesses`` for other lists). The compilation cache is off (``JAXSEARCH_CACHE_DIR=``)
unless ``--warm``, so a run's figures include compiling.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def solve_command(first: str, lists: str, extra: list) -> list:
  """The ``jaxsearch solve wordle`` arguments the benchmark runs."""
  opening = [] if first == "none" else ["--first", first]
  command = ["solve", "wordle"] + opening + ["--json", "--quiet"]
  if lists != "nyt":
    from jaxsearch.games import wordle
    answers, guesses = wordle.default_paths(lists)
    command += ["--answers", str(answers), "--guesses", str(guesses)]
  return command + list(extra)


def first_guesses(report):
  """The search over first guesses, without its per-guess list: counts and the most
  visited."""
  if report is None:
    return None
  visited = sorted(report["visited"], key=lambda o: -o["visits"])
  return {"count": report["count"], "ruled_out": report["ruled_out"], "open": report["open"],
          "root_visits": report["root_visits"], "visited": len(visited),
          "most_visited": [[o["guess"], o["visits"]] for o in visited[:5]]}


def run(first: str, lists: str, extra: list, warm: bool) -> dict:
  """Solves in a child process; the JSON record (``RuntimeError`` if the solve fails)."""
  from jaxsearch.app import timing
  command = solve_command(first, lists, extra)
  env = dict(os.environ)
  if not warm:
    env["JAXSEARCH_CACHE_DIR"] = ""
  with timing.Stopwatch() as watch:
    done = subprocess.run([sys.executable, "-m", "jaxsearch.cli", *command],
                          capture_output=True, text=True, env=env)
  if done.returncode != 0:
    raise RuntimeError(f"the solve exited with status {done.returncode}:\n"
                       f"{done.stderr[-4000:]}")
  found = json.loads(done.stdout.strip().splitlines()[-1])
  return {"benchmark": "solve", "first": first, "first_guess": found["first_guess"],
          "lists": lists, "total_guesses": found["total_guesses"],
          "proven_optimal": found["proven_optimal"],
          # With --first a proof is of the best total given that guess: proven_optimal (of
          # the game) stays false even when this is true.
          "proven_given_first": found.get("proven_given_first"),
          "lower_bound_total": found["lower_bound_total"],
          "seconds": found["seconds"], "wall_seconds": round(watch.seconds, 1),
          "peak_rss_gib": timing.gib(timing.peak_rss_bytes(children=True)),
          "nodes": found["nodes"], "bytes_per_node": found.get("bytes_per_node"),
          "memory_estimate_gb": found.get("memory_estimate_gb"),
          "subproblems_proven": found.get("subproblems_proven"),
          "simulations": found["simulations"], "phases": found.get("phases"),
          "first_guesses": first_guesses(found.get("first_guesses")),
          "command": " ".join(["jaxsearch", *command])}


def main(argv=None, prog: str = "jaxsearch bench solve") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  import argparse

  from jaxsearch.app import timing
  from jaxsearch.cli.common import ArgumentParser
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--first", default="tarse",
                      help="the fixed first guess, or none: search the first guess too")
  parser.add_argument("--lists", default="nyt", choices=["nyt", "orig"])
  parser.add_argument("--warm", action="store_true", help="keep the compilation cache")
  parser.add_argument("--quick", action="store_true",
                      help="10 s of search and 10 s of certificates: a smoke run (the "
                           "lists are loaded and the programs compiled all the same)")
  parser.add_argument("solve_args", nargs=argparse.REMAINDER,
                      help="after --: options for jaxsearch solve wordle")
  args = parser.parse_args(argv)
  extra = [a for a in args.solve_args if a != "--"]
  if args.quick:
    extra = ["--seconds", "10", "--certify-seconds", "10"] + extra
  try:
    record = run(args.first, args.lists, extra, args.warm)
  except RuntimeError as error:
    print(f"{prog}: {error}", file=sys.stderr)
    return 1
  timing.emit(record)
  return 0
