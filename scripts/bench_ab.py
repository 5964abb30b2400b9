"""A/B timing of one search configuration between two checkouts (or two settings) of jaxsearch.

Each side runs in its own process with its own checkout first on ``sys.path``; the sides
alternate, ``--rounds`` times, and each process reports the median and the fastest of
``--repeats`` timed runs after compiling. Prints one JSON line: both medians, their ratio
(new / base), the ratio of the fastest runs and each side's kernel counts
(:func:`jaxsearch.app.bench.kernel_counts`).

    python scripts/bench_ab.py --base /path/to/old/checkout            # PUCT, B 1024, S 128
    python scripts/bench_ab.py --base ../old --policy gumbel --batch 64 --simulations 32
    python scripts/bench_ab.py --base . --base-max-depth 128 --new-max-depth 48

The workloads are those of ``jaxsearch bench``: the hashed MDP with 16 actions
(``jaxsearch.games.hashed``, the default) or Connect Four (``--game connect_four``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, statistics, sys, time
import jax
import jaxsearch as js
from jaxsearch.app.bench import kernel_counts
from jaxsearch.games import hashed

batch, simulations, policy, repeats = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                       int(sys.argv[4]))
max_depth = None if sys.argv[5] == "none" else int(sys.argv[5])
if sys.argv[6] == "connect_four":
  from jaxsearch.games import connect_four
  from jaxsearch.app.bench import _random_positions
  game, estimator = connect_four.GAME, js.estimators.uniform()
  roots = _random_positions(game, batch, plies=6)
else:
  game, estimator = hashed.make(16), hashed.estimator(16)
  roots = hashed.distinct_roots(game, batch)
key = jax.random.PRNGKey(0)
if policy == "puct":
  search = js.policies.puct(game, estimator, num_simulations=simulations, max_depth=max_depth)
else:
  search = js.policies.gumbel(game, estimator, num_simulations=simulations,
                              max_num_considered_actions=16, max_depth=max_depth)
compiled = jax.jit(lambda key, roots: search(None, key, roots)).lower(key, roots).compile()
jax.block_until_ready(compiled(key, roots))
times = []
for _ in range(repeats):
  start = time.perf_counter()
  jax.block_until_ready(compiled(key, roots))
  times.append(time.perf_counter() - start)
print(json.dumps({"seconds": statistics.median(times), "fastest": min(times),
                  "kernels": kernel_counts(compiled.as_text())}))
"""


def _run(checkout: str, args, max_depth) -> dict:
  env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
  out = subprocess.run(
      [sys.executable, "-c", _CHILD, str(args.batch), str(args.simulations), args.policy,
       str(args.repeats), "none" if max_depth is None else str(max_depth), args.game],
      cwd=os.path.abspath(checkout), env=env, capture_output=True, text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--base", required=True, help="checkout to compare against")
  parser.add_argument("--new", default=".", help="checkout under test (default: this one)")
  parser.add_argument("--policy", choices=["puct", "gumbel"], default="puct")
  parser.add_argument("--game", choices=["hashed", "connect_four"], default="hashed",
                      help="hashed MDP with 16 actions, or Connect Four from random "
                           "six-ply positions with a uniform estimator (as jaxsearch bench)")
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--simulations", type=int, default=128)
  parser.add_argument("--base-max-depth", type=int, default=None)
  parser.add_argument("--new-max-depth", type=int, default=None)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--repeats", type=int, default=7)
  args = parser.parse_args(argv)
  seconds = {"base": [], "new": []}
  fastest = {"base": [], "new": []}
  kernels = {}
  for _ in range(args.rounds):
    for side, checkout, depth in (("base", args.base, args.base_max_depth),
                                  ("new", args.new, args.new_max_depth)):
      result = _run(checkout, args, depth)
      seconds[side].append(result["seconds"])
      fastest[side].append(result["fastest"])
      kernels[side] = result["kernels"]
  base, new = statistics.median(seconds["base"]), statistics.median(seconds["new"])
  print(json.dumps({"game": args.game, "policy": args.policy, "batch": args.batch,
                    "simulations": args.simulations, "seconds_base": round(base, 5),
                    "seconds_new": round(new, 5), "new_over_base": round(new / base, 3),
                    # Noise on a shared machine only ever adds time: the fastest runs agree
                    # better from one try to the next than the medians do.
                    "fastest_new_over_base": round(min(fastest["new"]) / min(fastest["base"]), 3),
                    "kernels_base": kernels["base"], "kernels_new": kernels["new"]}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
