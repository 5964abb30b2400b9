"""Mastermind from 3×3 to 5×5: the optimum, the time to find it and to prove it, peak memory.

    python scripts/bench_solve_scaling.py                              # every size, both ways
    python scripts/bench_solve_scaling.py --sizes 3x3,4x6 --ways exact  # a few sizes, one way
    python scripts/bench_solve_scaling.py --plot docs/solve_scaling.png
    python scripts/bench_solve_scaling.py --wordle ...                 # the Wordle sweeps (below)

Each size is solved in a child process, one at a time, in one or both of two ways:

* ``exact`` — the exact search alone (:func:`jaxsearch.guessing.exact_game.solve_exactly`):
  every first guess up to symmetry, its feedback parts in one worker process per core for
  games of 2,000 secrets or more (``--workers``). The policy found is exported and
  evaluated over every secret (:func:`jaxsearch.guessing.finish.evaluate`, which shares no
  code with the search), and written with ``--export DIR`` (``DIR/mastermind_PxC.json``,
  for ``jaxsearch evaluate``). ``time_to_optimum_s``: from the child's start until the
  best total first equals the final one (after the first first guess solved, usually);
  ``time_to_proof_s``: until it is proven.
* ``command`` — ``jaxsearch solve mastermind --pegs P --colours C --seconds S --json``, as a
  user runs it: the exact search of the whole game first, the trees where it does not prove
  the optimum in its share of the time.
* ``tree`` — the same with ``--method tree``: the trees only (the search, the extraction,
  then the certificates). ``time_to_optimum_s``: the first chunk
  after which the search's achievable bound reached the total finally reported (``null``
  where only the extraction found it); ``time_to_proof_s``: the run's wall time if proven (``command`` too).

Every child gets ``--timeout`` seconds (the tree's ``--seconds`` is that less 30 s); a child
killed at the timeout is reported as such. ``peak_rss_gib`` is the child's own peak resident
memory (``wait4``; the exact search's worker processes: ``workers_peak_rss_gib``, the largest
one; the tree's certificate workers are not counted). One JSON line per size and way on
stderr as it completes, then one summary line on stdout; ``--plot F`` draws the times
against the number of secrets, with peak memory beside them. Timings are wall time on
whatever else the machine runs: say so when quoting them.

The Wordle sweeps (``--wordle`` first, then their options): how batched Wordle solving
scales with the batch of trees and the number of answers after a fixed first guess
(:data:`WORDLE_DOC`; ``python scripts/bench_solve_scaling.py --wordle --help``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

STARTED = time.monotonic()  # the child's clock starts before its imports

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxsearch.games import wordle  # noqa: E402
from jaxsearch import guessing as guessing_lib  # noqa: E402

SIZES = ("3x3", "3x4", "4x3", "3x5", "4x4", "3x6", "5x3", "4x5", "4x6", "5x4", "4x7", "5x5",
         "4x8")


def _size(text: str) -> tuple[int, int]:
  pegs, colours = text.lower().split("x")
  return int(pegs), int(colours)


def exact_child(pegs: int, colours: int, workers: int, seconds: float,
                export: str | None) -> dict:
  """In the child: the exact search of one size; its record."""
  import resource

  from jaxsearch.games import mastermind
  from jaxsearch.guessing import exact_game, finish, policy_file
  game = mastermind.make(pegs, colours)
  openings = [game.code_index(code) for code in mastermind.openings(pegs, colours)]
  if not workers:  # solve_exactly's default
    workers = (os.cpu_count() or 1) if game.num_codes >= exact_game.PARALLEL_FROM else 1
  events = []
  found = exact_game.solve_exactly(
      game.exact_bounds, openings, deadline=time.monotonic() + seconds, workers=workers,
      on_first_guess=lambda event: events.append((time.monotonic() - STARTED, event)))
  record = {"workers": workers, "total_guesses": found.total, "proven_optimal": found.proven,
            "lower_bound_total": found.lower_bound,
            "first_guess": None if found.first_guess is None else game.code_string(
                found.first_guess),
            "time_to_proof_s": round(time.monotonic() - STARTED, 2) if found.proven else None,
            "time_to_optimum_s": next((round(at, 2) for at, event in events
                                       if event["incumbent"] == found.total), None),
            "first_guesses_settled": len(events)}
  if found.policy is not None:
    puzzle = mastermind.puzzle(pegs, colours, symmetry=False)  # to score and export only
    policy = finish.exported_policy(puzzle, found.policy)
    evaluation = finish.evaluate(puzzle, policy)
    record["evaluated_total"] = evaluation.total_guesses
    record["expected_guesses"] = round(evaluation.total_guesses / game.num_codes, 4)
    record["worst_case"] = evaluation.worst_case
    if export:
      os.makedirs(export, exist_ok=True)
      policy_file.save(os.path.join(export, f"mastermind_{pegs}x{colours}.json"),
                       puzzle.header, policy)
  children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
  record["workers_peak_rss_gib"] = round(children / 2**20, 3) if children else None
  return record


def _run_child(command: list, timeout: float) -> tuple[dict | None, float, float, int]:
  """``(last JSON line or None, wall seconds, peak RSS GiB, exit status)`` of a child
  process, killed after ``timeout`` seconds."""
  started = time.monotonic()
  with tempfile.TemporaryFile("w+") as out:
    child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, text=True)
    while True:
      pid, status, usage = os.wait4(child.pid, os.WNOHANG)
      if pid:
        break
      if time.monotonic() - started > timeout:
        child.kill()
        pid, status, usage = os.wait4(child.pid, 0)
        break
      time.sleep(0.2)
    child.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    lines = [line for line in out.read().splitlines() if line.startswith("{")]
  found = json.loads(lines[-1]) if lines else None
  return found, time.monotonic() - started, usage.ru_maxrss / 2**20, child.returncode


def measure_exact(pegs: int, colours: int, args) -> dict:
  command = [sys.executable, os.path.abspath(__file__), "--exact-child", f"{pegs}x{colours}",
             "--workers", str(args.workers), "--timeout", str(args.timeout)]
  if args.export:
    command += ["--export", args.export]
  found, wall, peak, status = _run_child(command, args.timeout + 60)
  record = {"way": "exact", **(found or {"proven_optimal": False})}
  return {**record, "wall_s": round(wall, 1), "peak_rss_gib": round(peak, 3),
          "exit_status": status, "timed_out": found is None}


def measure_command(pegs: int, colours: int, args, method: str = "auto") -> dict:
  seconds = max(args.timeout - 30, 10)
  command = [sys.executable, "-m", "jaxsearch.cli", "solve", "mastermind", "--pegs", str(pegs),
             "--colours", str(colours), "--seconds", str(seconds), "--json", "--quiet",
             "--method", method]
  found, wall, peak, status = _run_child(command, args.timeout + 120)
  record = {"way": "command" if method == "auto" else method, "command": " ".join(command),
            "wall_s": round(wall, 1),
            "peak_rss_gib": round(peak, 3), "exit_status": status, "timed_out": found is None}
  if found is None:
    return {**record, "proven_optimal": False}
  total = found["total_guesses"]
  reached = [entry[1] for entry in found.get("history", []) if entry[2] <= total]
  return {**record, "total_guesses": total, "proven_optimal": found["proven_optimal"],
          "lower_bound_total": found["lower_bound_total"], "first_guess": found["first_guess"],
          "expected_guesses": found["expected_guesses"],
          "subproblems_proven": found.get("subproblems_proven"),
          "time_to_optimum_s": round(reached[0], 1) if reached else None,
          "time_to_proof_s": round(wall, 1) if found["proven_optimal"] else None,
          "phases": found.get("phases")}


WAYS = {"exact": measure_exact, "command": measure_command,
        "tree": lambda pegs, colours, args: measure_command(pegs, colours, args, "tree")}


def plot(records: list, path: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, (times, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
  for way, colour in (("exact", "tab:blue"), ("tree", "tab:orange"), ("command", "tab:green")):
    rows = sorted((r for r in records if r["way"] == way), key=lambda r: r["secrets"])
    if not rows:
      continue
    for key, style, label in (("time_to_proof_s", "o-", "proven"),
                              ("time_to_optimum_s", "x--", "optimum found")):
      points = [(r["secrets"], r[key]) for r in rows if r.get(key) is not None]
      if points:
        times.plot(*zip(*points), style, color=colour, label=f"{way}: {label}")
    for r in rows:
      if not r["proven_optimal"]:
        times.plot(r["secrets"], r["wall_s"], "v", color=colour, markersize=9)
    memory.plot([r["secrets"] for r in rows], [r["peak_rss_gib"] for r in rows], "o-",
                color=colour, label=way)
  for r in records:
    times.annotate(r["size"], (r["secrets"], r.get("time_to_proof_s") or r["wall_s"]),
                   fontsize=7, xytext=(3, 3), textcoords="offset points")
  times.set(xscale="log", yscale="log", xlabel="secrets (colours ** pegs)",
            ylabel="wall seconds", title="Mastermind: time to the optimum and to its proof "
            "(▼: not proven)")
  memory.set(xscale="log", xlabel="secrets", ylabel="peak RSS, GiB (main process)",
             title="peak memory")
  times.legend(fontsize=8)
  memory.legend(fontsize=8)
  figure.tight_layout()
  figure.savefig(path, dpi=120)


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else list(argv)
  if argv[:1] == ["--wordle"]:
    return wordle_main(argv[1:])
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--sizes", default=",".join(SIZES), help="PxC sizes, comma-separated")
  parser.add_argument("--ways", default="exact,tree",
                      help="comma-separated: exact, command (the command as a user runs it), "
                           "tree (the command with --method tree)")
  parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
  parser.add_argument("--workers", type=int, default=0,
                      help="the exact search's processes (default 0: one per core from "
                           "2,000 secrets, else one)")
  parser.add_argument("--export", default=None, help="folder for the exact policies")
  parser.add_argument("--plot", default=None)
  parser.add_argument("--exact-child", default=None, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.exact_child:
    pegs, colours = _size(args.exact_child)
    print(json.dumps(exact_child(pegs, colours, args.workers, args.timeout, args.export)))
    return 0
  records = []
  for size in args.sizes.split(","):
    pegs, colours = _size(size)
    for way in args.ways.split(","):
      if way not in WAYS:
        parser.error(f"--ways: unknown way {way!r}; give exact, command or tree")
      record = {"size": f"{pegs}x{colours}", "secrets": colours ** pegs,
                **WAYS[way](pegs, colours, args)}
      records.append(record)
      print(json.dumps(record), file=sys.stderr, flush=True)
  if args.plot:
    plot(records, args.plot)
  print(json.dumps({"bench": "solve_scaling", "game": "mastermind", "timeout_s": args.timeout,
                    "workers": args.workers, "load_average": os.getloadavg(),
                    "sizes": records}))
  return 0


# ---------------------------------------------------------------------------------------------
# The Wordle sweeps (``--wordle``).

WORDLE_DOC = """How batched Wordle solving scales with the batch of trees and the number of answers.

    python scripts/bench_solve_scaling.py --wordle                # defaults below, ~10 min
    python scripts/bench_solve_scaling.py --wordle --batches 1,8 --answers 400 --chunks 2

Two sweeps of :func:`jaxsearch.guessing.solve` (AVTS, Thompson chunks only), both after the first
guess ``--first`` (default tarse) on the 3158 / 14855 lists (``$WORDLE_DATA``, else the copies
shipped in ``jaxsearch/data/wordle``):

* **batch**: all 3158 answers; ``B`` trees, the sub-problems of the first guess in a fixed
  shuffled order (cycled when ``B`` exceeds their number, 158 for tarse);
* **answers**: a random subset of ``n`` answers (seed 0; the guesses stay all 14855), every
  sub-problem of the first guess in one batch.

Each configuration compiles once (the first chunk, reported as ``first_chunk_s``), then runs
``--chunks`` chunks of ``--chunk`` simulations per tree; ``chunk_s`` is their median wall
time, ``tree_simulations_per_s = B * chunk / chunk_s``, ``nodes_per_tree_simulation`` the
nodes one simulation creates (an expansion creates a node per possible feedback).
``bytes_per_node`` is the tree's size (every array of the batch) over ``B * N``:
the state's bitset, the slots and the chance records together. Prints one JSON line.
Timings are wall-clock on a shared machine: compare the rows of one run.
"""


def _ints(text: str) -> list[int]:
  return [int(x) for x in text.split(",") if x]


def measure(puzzle, states, args) -> dict:
  """Runs one configuration over ``states`` (a list of unbatched root states)."""
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  batch = len(states)
  found = guessing_lib.solve(
      puzzle, roots, seconds=1e9, max_simulations=args.chunk * (args.chunks + 1),
      chunk=args.chunk, max_nodes=args.nodes, num_slots=args.slots, proof_every=0,
      seed=args.seed)
  history = found.history
  times = [later[1] - earlier[1] for earlier, later in zip(history, history[1:])]
  chunk_s = statistics.median(times)
  tree_bytes = sum(x.nbytes for x in jax.tree.leaves(found.trees))
  nodes = np.concatenate([np.asarray(tree.num_nodes) for tree in found.trees])
  return dict(trees=batch, first_chunk_s=round(history[0][1], 2), chunk_s=round(chunk_s, 3),
              tree_simulations_per_s=round(batch * args.chunk / chunk_s, 1),
              nodes=int(nodes.sum()), nodes_per_tree_simulation=round(
                  (int(nodes.sum()) - batch) / (batch * found.simulations), 1),
              bytes_per_node=round(tree_bytes / (batch * args.nodes)))


def wordle_main(argv=None) -> int:
  """The Wordle sweeps (``--wordle``): see :data:`WORDLE_DOC`."""
  parser = argparse.ArgumentParser(prog="bench_solve_scaling.py --wordle",
                                   description=WORDLE_DOC.split("\n\n")[0])
  parser.add_argument("--first", default="tarse")
  parser.add_argument("--batches", default="1,8,32,158,256",
                      help="tree counts of the batch sweep (comma-separated)")
  parser.add_argument("--answers", default="400,1600,3158",
                      help="answer-list sizes of the answers sweep (comma-separated)")
  parser.add_argument("--chunk", type=int, default=4, help="simulations per jitted call")
  parser.add_argument("--chunks", type=int, default=3, help="timed chunks per configuration")
  parser.add_argument("--nodes", type=int, default=1024, help="nodes per tree")
  parser.add_argument("--slots", type=int, default=64)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)

  answers_path, guesses_path = wordle.default_paths()
  all_answers = wordle.load_words(answers_path)
  result = dict(bench="solve_scaling", first=args.first, chunk=args.chunk, nodes=args.nodes,
                slots=args.slots, batch=[], answers=[])
  full = wordle.puzzle(answers_path, guesses_path)
  _, states = guessing_lib.opening_roots(full, args.first)
  order = np.random.default_rng(args.seed).permutation(len(states))
  for batch in _ints(args.batches):
    row = measure(full, [states[order[i % len(states)]] for i in range(batch)], args)
    result["batch"].append(row)
    print(json.dumps(dict(sweep="batch", **row)), file=sys.stderr)
  rng = np.random.default_rng(args.seed)
  with tempfile.TemporaryDirectory() as folder:
    for size in _ints(args.answers):
      if size >= len(all_answers):
        puzzle = full
      else:
        subset = sorted(rng.choice(len(all_answers), size, replace=False).tolist())
        path = os.path.join(folder, f"answers_{size}.txt")
        with open(path, "w") as handle:
          handle.write("\n".join(all_answers[i] for i in subset) + "\n")
        puzzle = wordle.puzzle(path, guesses_path)
      _, sub_states = guessing_lib.opening_roots(puzzle, args.first)
      row = dict(answers=len(puzzle.secrets), **measure(puzzle, sub_states, args))
      result["answers"].append(row)
      print(json.dumps(dict(sweep="answers", **row)), file=sys.stderr)
  print(json.dumps(result))
  return 0



if __name__ == "__main__":
  sys.exit(main())
