"""The guessing games' entropic estimator, one state at a time against all states at once.

Times ``jaxsearch.guessing.estimator.entropic_estimator`` on Mastermind 4×6 for a batch
of states whose remaining sets have mixed sizes (as a search's expansions have), with
``batched=False`` (each state by its size tier, a ``lax.map``: the CPU default) and
``batched=True`` (every histogram one product with the one-hot feedback table: the
accelerator default), side by side in one process, on whatever device JAX finds. Prints one
JSON line: seconds per batch of each (the median of ``--repeats`` calls after one that compiles,
:mod:`jaxsearch.app.timing`) and their ratio. ``scripts/gpu_check.py`` runs it on a device.

    python scripts/bench_estimator.py                 # B = 256, 3 timed calls each
    python scripts/bench_estimator.py --batch 1024 --repeats 5
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.app import timing


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=256)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  from jaxsearch.guessing import game as guessing, estimator as guessing_estimator
  from jaxsearch.games import mastermind as mm

  game = mm.make(4, 6)
  rng = np.random.default_rng(args.seed)
  sizes = rng.choice([1296, 300, 100, 40, 20, 10, 5, 2], args.batch,
                     p=[.02, .08, .1, .2, .2, .2, .1, .1])
  masks = np.zeros((args.batch, 1296), bool)
  for row, size in enumerate(sizes):
    masks[row, rng.choice(1296, size, replace=False)] = True
  states = guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(masks)),
                          solved=jnp.zeros(args.batch, bool))
  seconds = {}
  for batched in (False, True):
    estimate = jax.jit(guessing_estimator.entropic_estimator(
        game.by_secret, np.arange(1296), 14, branching=13, batched=batched))
    seconds["batched" if batched else "one_by_one"] = timing.Timing.of(
        estimate, (None, None, states), repeats=args.repeats).median
  timing.emit({"device": str(jax.devices()[0]), "batch": args.batch,
               "seconds_one_by_one": round(seconds["one_by_one"], 5),
               "seconds_batched": round(seconds["batched"], 5),
               "batched_over_one_by_one": round(seconds["batched"] / seconds["one_by_one"], 3)})
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
