"""How fast XLA runs a selection rule's reductions over a node's slots, by layout.

A Gumbel-like chain (masked exp, two sums, min and max, a softmax, an argmax) over ``B`` nodes
of ``K`` slots, 200 times in a ``fori_loop``, computed three ways with the same results:

* ``row``: ``[B, K]`` arrays, reductions over the minor axis (how the engine lays a batch of
  nodes out: one row per node);
* ``slot_major``: the same data already stored ``[K, B]``, reductions over the major axis;
* ``fold``: ``[B, K]`` with each reduction written as a chain of elementwise operations over
  the ``K`` columns.

Prints one JSON line: microseconds per evaluation of the chain (fastest of ``--repeats``) and
each way's time over ``row``'s.

    python scripts/bench_reduction_layout.py --batch 1024 --slots 16
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp

_STEPS = 200


def _chain(x, legal, axis, reduce):
  total, low, high, best = reduce
  weights = jnp.where(legal, jnp.exp(x), 0.0)
  v_mix = total(weights * x, axis) / total(weights, axis)
  completed = jnp.where(legal, x, v_mix)
  lo = low(jnp.where(legal, completed, jnp.inf), axis)
  hi = high(jnp.where(legal, completed, -jnp.inf), axis)
  logits = jnp.where(legal, x + (completed - lo) / jnp.maximum(hi - lo, 1e-8), -jnp.inf)
  exp = jnp.where(legal, jnp.exp(logits - high(logits, axis)), 0.0)
  policy = exp / total(exp, axis)
  return best(jnp.where(legal, policy, -jnp.inf), axis)


def _xla(name):
  fn = {"sum": jnp.sum, "min": jnp.min, "max": jnp.max}[name]
  return lambda a, axis: fn(a, axis=axis, keepdims=True)


def _fold(op, a, axis):
  del axis
  columns = [a[:, k] for k in range(a.shape[1])]
  return functools.reduce(op, columns)[:, None]


def _argmax_fold(a, axis):
  del axis
  best, index = a[:, 0], jnp.zeros(a.shape[0], jnp.int32)
  for k in range(1, a.shape[1]):
    take = a[:, k] > best
    best, index = jnp.where(take, a[:, k], best), jnp.where(take, k, index)
  return index


_XLA = (_xla("sum"), _xla("min"), _xla("max"),
        lambda a, axis: jnp.argmax(a, axis=axis).astype(jnp.int32))
_WAYS = {
    "row": (-1, _XLA),
    "slot_major": (0, _XLA),
    "fold": (-1, (functools.partial(_fold, jnp.add), functools.partial(_fold, jnp.minimum),
                  functools.partial(_fold, jnp.maximum), _argmax_fold)),
}


def _program(axis, reduce, batch_size):
  def run(x, legal):
    def body(_, carry):
      x, picks = carry
      return x * 0.999 + 1e-3, picks + _chain(x, legal, axis, reduce)
    return jax.lax.fori_loop(0, _STEPS, body, (x, jnp.zeros(batch_size, jnp.int32)))[1]
  return jax.jit(run)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--slots", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=9)
  args = parser.parse_args(argv)
  x = jax.random.normal(jax.random.PRNGKey(0), (args.batch, args.slots))
  legal = jax.random.uniform(jax.random.PRNGKey(1), (args.batch, args.slots)) < 0.9
  record = {"batch": args.batch, "slots": args.slots}
  picks = {}
  for name, (axis, reduce) in _WAYS.items():
    inputs = (x.T, legal.T) if axis == 0 else (x, legal)
    program = _program(axis, reduce, args.batch)
    picks[name] = jax.block_until_ready(program(*inputs))
    times = []
    for _ in range(args.repeats):
      start = time.perf_counter()
      jax.block_until_ready(program(*inputs))
      times.append(time.perf_counter() - start)
    record[f"us_{name}"] = round(min(times) / _STEPS * 1e6, 2)
  for name in _WAYS:
    record[f"{name}_over_row"] = round(record[f"us_{name}"] / record["us_row"], 3)
  record["same_picks"] = all(bool((picks[name] == picks["row"]).all()) for name in _WAYS)
  print(json.dumps(record))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
