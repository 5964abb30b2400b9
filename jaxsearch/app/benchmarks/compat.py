"""``jaxsearch bench compat``: mctx's policies against ``jaxsearch.compat``'s and the engine's,
through one ``recurrent_fn``.

The hashed toy model (``jaxsearch.games.hashed``, 16 actions) as mctx functions
(:func:`jaxsearch.compat.to_mctx`); every system is compiled first, then the systems' calls
are interleaved (:func:`jaxsearch.app.timing.interleaved`) so that machine noise hits them
alike. Prints one JSON line: the median milliseconds of each system and the ratios (time ÷
mctx's). Needs mctx (``pip install "jaxsearch[mctx]"``).

    jaxsearch bench compat [--batch 256 --simulations 64 --repeats 5]
"""

from __future__ import annotations

import statistics
import sys


def systems(batch: int, simulations: int) -> dict:
  """``{name: (fn, (key,))}``: mctx's two policies, ``jaxsearch.compat``'s drop-ins and the
  engine's policies over the model read from the same ``recurrent_fn``, each jitted."""
  import jax
  import mctx

  import jaxsearch as js
  import jaxsearch.compat as compat
  from jaxsearch.games import hashed

  game, estimator = hashed.make(16), hashed.estimator(16)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root, invalid = root_fn(None, jax.random.PRNGKey(0), hashed.distinct_roots(game, batch))
  model = js.model.from_mctx(recurrent_fn, game.num_actions)
  engine_puct = js.policies.puct(model=model, num_simulations=simulations)
  engine_gumbel = js.policies.gumbel(model=model, num_simulations=simulations)
  calls = {
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
  return {name: (jax.jit(fn).lower(key).compile(), (key,)) for name, fn in calls.items()}


def main(argv=None, prog: str = "jaxsearch bench compat") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  from jaxsearch.app import bench, timing
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=positive_int, default=256)
  parser.add_argument("--simulations", type=positive_int, default=64)
  parser.add_argument("--repeats", type=positive_int, default=5)
  parser.add_argument("--quick", action="store_true", help="B = 8, S = 8, two rounds")
  args = parser.parse_args(argv)
  if args.quick:
    args.batch, args.simulations, args.repeats = 8, 8, 2
  if not bench.has_mctx():
    print(f'{prog}: needs mctx: pip install "jaxsearch[mctx]"', file=sys.stderr)
    return 2
  seconds = timing.interleaved(systems(args.batch, args.simulations), args.repeats)
  ms = {name: round(1000 * statistics.median(times), 3) for name, times in seconds.items()}
  record = {"benchmark": "compat", "batch": args.batch, "simulations": args.simulations,
            "repeats": args.repeats, "ms": ms}
  for ours in ("compat_muzero", "engine_puct"):
    record[f"{ours}_over_mctx"] = round(ms[ours] / ms["mctx_muzero"], 3)
  for ours in ("compat_gumbel", "engine_gumbel"):
    record[f"{ours}_over_mctx"] = round(ms[ours] / ms["mctx_gumbel"], 3)
  timing.emit(record)
  return 0
