"""``jaxsearch bench ab``: one search configuration timed in two checkouts, side by side.

Each side runs in processes of its own, started with its checkout first on the import path
(``PYTHONPATH``; the games come from the checkout's ``games/`` folder when it has one, as an
installed ``jaxsearch.games``) and optionally its own interpreter (``--base-python``: a
virtual environment where that checkout's dependencies are installed). The sides alternate,
``--rounds`` times; each process compiles the search, then times ``--repeats`` calls with
:func:`jaxsearch.app.timing.time_calls` (its source is sent to the process, so that both
sides are timed alike whatever their checkout holds). Prints one JSON line: both medians (over
every timed call of the side, all rounds together), their ratio (new / base), the ratio of the
fastest calls, each side's kernel counts (:func:`jaxsearch.app.bench.kernel_counts`, where
the checkout has it) and the folders each side imported ``jaxsearch`` and its games from.

    jaxsearch bench ab --base /path/to/old/checkout            # PUCT, B 1024, S 128
    jaxsearch bench ab --base ../old --policy gumbel --batch 64 --simulations 32
    jaxsearch bench ab --base . --base-max-depth 128 --new-max-depth 48

The workloads are ``jaxsearch bench engine``'s: the hashed MDP with 16 actions (the default)
or Connect Four after six random plies (``--game connect_four``).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from jaxsearch.app import timing

# The program each side runs: ``SETTINGS`` (a JSON object) and ``time_calls`` (the harness's
# source) are put in front of it.
_CHILD = r"""
import importlib.util, json, os, sys
from pathlib import Path

checkout = Path(SETTINGS["checkout"]).resolve()
games = checkout / "games"
if (games / "__init__.py").is_file() and not (checkout / "jaxsearch" / "games").is_dir():
  # The layout that installs games/ as jaxsearch.games: import it from this checkout too.
  spec = importlib.util.spec_from_file_location(
      "jaxsearch.games", games / "__init__.py", submodule_search_locations=[str(games)])
  module = importlib.util.module_from_spec(spec)
  sys.modules["jaxsearch.games"] = module
  spec.loader.exec_module(module)
import jax
import jaxsearch as js
from jaxsearch.games import hashed
from jaxsearch.app import bench
if not Path(js.__file__).resolve().is_relative_to(checkout):
  raise SystemExit(f"jaxsearch came from {js.__file__}, not from {checkout}")

batch, simulations = SETTINGS["batch"], SETTINGS["simulations"]
if SETTINGS["game"] == "connect_four":
  from jaxsearch.games import connect_four
  positions = getattr(bench, "random_positions", None) or bench._random_positions
  game, estimator = connect_four.GAME, js.estimators.uniform()
  roots = positions(game, batch, plies=6)
else:
  game, estimator = hashed.make(16), hashed.estimator(16)
  roots = hashed.distinct_roots(game, batch)
options = {} if SETTINGS["max_depth"] is None else {"max_depth": SETTINGS["max_depth"]}
if SETTINGS["policy"] == "puct":
  search = js.policies.puct(game, estimator, num_simulations=simulations, **options)
else:
  search = js.policies.gumbel(game, estimator, num_simulations=simulations,
                              max_num_considered_actions=16, **options)
key = jax.random.PRNGKey(0)
compiled = jax.jit(lambda key, roots: search(None, key, roots)).lower(key, roots).compile()
seconds = time_calls(compiled, (key, roots), repeats=SETTINGS["repeats"], warmup=1)
counts = getattr(bench, "kernel_counts", None)
print(json.dumps({"seconds": seconds, "jaxsearch": js.__file__,
                  "games": sys.modules["jaxsearch.games"].__file__,
                  "kernels": None if counts is None else counts(compiled.as_text())}))
"""


def child_program(settings: dict) -> str:
  """The Python source one side runs: its ``settings``, the timing harness, the search."""
  # The harness's annotations name types the program does not import: left unevaluated.
  return (f"from __future__ import annotations\nimport json as _json\n"
          f"SETTINGS = _json.loads({json.dumps(settings)!r})\n"
          f"{inspect.getsource(timing.time_calls)}\n{_CHILD}")


def run_side(checkout: str, python: str, settings: dict) -> dict:
  """One process of one side: ``{"seconds": [...], "jaxsearch": path, "games": path,
  "kernels": ...}`` (the paths of the packages it imported)."""
  root = os.path.abspath(checkout)
  env = dict(os.environ, PYTHONPATH=root)
  done = subprocess.run([python, "-c", child_program(dict(settings, checkout=root))],
                        cwd=root, env=env, capture_output=True, text=True)
  if done.returncode != 0:
    raise RuntimeError(f"the side in {root} failed (status {done.returncode}):\n"
                       f"{done.stderr[-3000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


def compare(args) -> dict:
  """Alternates the two sides ``args.rounds`` times; the JSON record."""
  sides = (("base", args.base, args.base_python, args.base_max_depth),
           ("new", args.new, args.new_python, args.new_max_depth))
  seconds = {"base": [], "new": []}
  found = {}
  for _ in range(args.rounds):
    for side, checkout, python, depth in sides:
      settings = {"batch": args.batch, "simulations": args.simulations,
                  "policy": args.policy, "game": args.game, "repeats": args.repeats,
                  "max_depth": depth}
      found[side] = run_side(checkout, python or sys.executable, settings)
      seconds[side] += found[side]["seconds"]
  base, new = (timing.Timing(tuple(seconds[side])) for side in ("base", "new"))
  return {"benchmark": "ab", "game": args.game, "policy": args.policy, "batch": args.batch,
          "simulations": args.simulations, "rounds": args.rounds, "repeats": args.repeats,
          "seconds_base": round(base.median, 5), "seconds_new": round(new.median, 5),
          "new_over_base": round(new.median / base.median, 3),
          # Noise on a shared machine only ever adds time: the fastest calls agree better
          # from one try to the next than the medians do.
          "fastest_new_over_base": round(new.fastest / base.fastest, 3),
          "spread_base": round(base.spread, 3), "spread_new": round(new.spread, 3),
          "kernels_base": found["base"]["kernels"], "kernels_new": found["new"]["kernels"],
          **{f"{name}_{side}": str(Path(found[side][name]).parent)
             for name in ("jaxsearch", "games") for side in ("base", "new")}}


def main(argv=None, prog: str = "jaxsearch bench ab") -> int:
  """Runs the A/B comparison with the command line ``argv``; returns the exit status."""
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--base", required=True, help="the checkout to compare against")
  parser.add_argument("--new", default=".", help="the checkout under test (default: .)")
  parser.add_argument("--base-python", default=None,
                      help="the interpreter of the base side (default: this one)")
  parser.add_argument("--new-python", default=None,
                      help="the interpreter of the new side (default: this one)")
  parser.add_argument("--policy", choices=["puct", "gumbel"], default="puct")
  parser.add_argument("--game", choices=["hashed", "connect_four"], default="hashed",
                      help="the hashed MDP with 16 actions, or Connect Four from random "
                           "six-ply positions with a uniform estimator")
  parser.add_argument("--batch", type=positive_int, default=1024)
  parser.add_argument("--simulations", type=positive_int, default=128)
  parser.add_argument("--base-max-depth", type=positive_int, default=None)
  parser.add_argument("--new-max-depth", type=positive_int, default=None)
  parser.add_argument("--rounds", type=positive_int, default=3)
  parser.add_argument("--repeats", type=positive_int, default=7)
  parser.add_argument("--quick", action="store_true",
                      help="B = 8, S = 8, one round of two calls: a smoke run")
  args = parser.parse_args(argv)
  if args.quick:
    args.batch, args.simulations, args.rounds, args.repeats = 8, 8, 1, 2
  for side in (args.base, args.new):
    if not (Path(side) / "jaxsearch" / "__init__.py").is_file():
      parser.error(f"{side} is not a checkout of jaxsearch (no jaxsearch/__init__.py)")
  try:
    record = compare(args)
  except RuntimeError as error:
    print(f"{prog}: {error}", file=sys.stderr)
    return 1
  timing.emit(record)
  return 0
