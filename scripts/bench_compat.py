"""mctx's policies against ``jaxsearch.compat``'s and the engine's, through one ``recurrent_fn``.

The hashed toy model (``games/hashed.py``, 16 actions) as mctx functions
(:func:`jaxsearch.compat.to_mctx`); every system is compiled first, then the systems'
repeats are interleaved so that machine noise hits them alike. Prints one JSON line: the
median milliseconds of each system and the ratios (time ÷ mctx's).

    python scripts/bench_compat.py [--batch 256 --simulations 64 --repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=256)
  parser.add_argument("--simulations", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args(argv)
  import mctx

  import jaxsearch as js
  import jaxsearch.compat as compat
  from jaxsearch.games import hashed

  game, estimator = hashed.make(16), hashed.estimator(16)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root, invalid = root_fn(None, jax.random.PRNGKey(0), hashed.distinct_roots(game, args.batch))
  model = js.model.from_mctx(recurrent_fn, game.num_actions)
  simulations = args.simulations
  engine_puct = js.policies.puct(model=model, num_simulations=simulations)
  engine_gumbel = js.policies.gumbel(model=model, num_simulations=simulations)
  systems = {
      "mctx_muzero": lambda key: mctx.muzero_policy(None, key, root, recurrent_fn, simulations),
      "compat_muzero": lambda key: compat.muzero_policy(None, key, root, recurrent_fn,
                                                        simulations),
      "engine_puct": lambda key: engine_puct(None, key, (root, invalid)),
      "mctx_gumbel": lambda key: mctx.gumbel_muzero_policy(None, key, root, recurrent_fn,
                                                           simulations),
      "compat_gumbel": lambda key: compat.gumbel_muzero_policy(None, key, root, recurrent_fn,
                                                               simulations),
      "engine_gumbel": lambda key: engine_gumbel(None, key, (root, invalid)),
  }
  key = jax.random.PRNGKey(0)
  compiled = {name: jax.jit(fn).lower(key).compile() for name, fn in systems.items()}
  for fn in compiled.values():
    jax.block_until_ready(fn(key))
  times = {name: [] for name in compiled}
  for _ in range(args.repeats):
    for name, fn in compiled.items():
      start = time.perf_counter()
      jax.block_until_ready(fn(key))
      times[name].append(time.perf_counter() - start)
  ms = {name: round(1000 * statistics.median(t), 1) for name, t in times.items()}
  record = {"batch": args.batch, "simulations": simulations, "ms": ms}
  for ours in ("compat_muzero", "engine_puct"):
    record[f"{ours}_over_mctx"] = round(ms[ours] / ms["mctx_muzero"], 3)
  for ours in ("compat_gumbel", "engine_gumbel"):
    record[f"{ours}_over_mctx"] = round(ms[ours] / ms["mctx_gumbel"], 3)
  print(json.dumps(record))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
