"""Side-by-side search throughput: jaxsearch PUCT vs mctx muzero / gumbel muzero.

Runs every system on the same workloads in one process and prints one JSON line per
workload: simulations per second for each system, speedups (ours / theirs), compile seconds
and tree bytes. Connect Four also gets the environment alone (S sequential vmapped steps).

    python scripts/bench_search.py            # all workloads
    python scripts/bench_search.py --quick    # small shapes, a smoke run
    jaxsearch bench                           # the same
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable

import jax
import jax.numpy as jnp


def _timed_compile(fn, *args):
  start = time.perf_counter()
  compiled = jax.jit(fn).lower(*args).compile()
  return compiled, time.perf_counter() - start


def _time_runs(compiled, args, repeats: int) -> float:
  """Median seconds of ``repeats`` runs (after one warm-up)."""
  jax.block_until_ready(compiled(*args))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def _tree_bytes(tree) -> int:
  return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree)))


def _workload(name, game, estimator, recurrent_fn, root_states, root_output, invalid,
              num_simulations, repeats, env_step=None):
  import mctx
  import jaxsearch as js

  batch_size = jax.tree.leaves(root_states)[0].shape[0]
  key = jax.random.PRNGKey(0)
  ours = js.policies.puct(game, estimator, num_simulations=num_simulations)

  def run_ours(key, states):
    return ours(None, key, states)

  def run_muzero(key, root):
    return mctx.muzero_policy(None, key, root, recurrent_fn, num_simulations,
                              invalid_actions=invalid, dirichlet_fraction=0.0)

  def run_gumbel(key, root):
    return mctx.gumbel_muzero_policy(None, key, root, recurrent_fn, num_simulations,
                                     invalid_actions=invalid)

  systems = {"ours": (run_ours, root_states), "mctx_muzero": (run_muzero, root_output),
             "mctx_gumbel": (run_gumbel, root_output)}
  record = {"workload": name, "batch": batch_size, "simulations": num_simulations,
            "actions": game.num_actions}
  compiled = {}
  for system, (fn, root) in systems.items():
    compiled[system], record[f"compile_s_{system}"] = _timed_compile(fn, key, root)
  # Interleave the systems so that machine noise hits them alike.
  times = {system: [] for system in systems}
  for _ in range(repeats):
    for system, (fn, root) in systems.items():
      times[system].append(_time_runs(compiled[system], (key, root), 1))
  total_sims = batch_size * num_simulations
  for system in systems:
    seconds = statistics.median(times[system])
    record[f"seconds_{system}"] = round(seconds, 5)
    record[f"sims_per_s_{system}"] = round(total_sims / seconds)
  record["speedup_vs_mctx_muzero"] = round(
      record["sims_per_s_ours"] / record["sims_per_s_mctx_muzero"], 3)
  record["speedup_vs_mctx_gumbel"] = round(
      record["sims_per_s_ours"] / record["sims_per_s_mctx_gumbel"], 3)
  out_ours = compiled["ours"](key, root_states)
  out_mctx = compiled["mctx_muzero"](key, root_output)
  record["tree_bytes_ours"] = _tree_bytes(out_ours.tree)
  record["tree_bytes_mctx"] = _tree_bytes(out_mctx.search_tree)
  if env_step is not None:
    env_compiled, _ = _timed_compile(env_step, root_states)
    env_seconds = statistics.median(
        [_time_runs(env_compiled, (root_states,), 1) for _ in range(repeats)])
    record["env_steps_per_s"] = round(total_sims / env_seconds)
    record["search_over_env_time"] = round(record["seconds_ours"] / env_seconds, 3)
  return record


def connect_four_workload(batch_size=256, num_simulations=64, repeats=5):
  import jaxsearch as js
  from games import connect_four

  game = connect_four.GAME
  estimator = js.estimators.uniform()
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  states = _random_positions(game, batch_size, plies=6)
  root_output, invalid = root_fn(None, jax.random.PRNGKey(0), states)
  legal_fn = jax.vmap(game.legal_actions)

  def env_alone(states):
    """S sequential vmapped steps, always playing the first legal column."""
    def body(_, states):
      action = jnp.argmax(legal_fn(states), axis=-1)
      return jax.vmap(game.step)(states, action, jnp.zeros_like(action)).state
    return jax.lax.fori_loop(0, num_simulations, body, states)

  return _workload("connect_four", game, estimator, recurrent_fn, states, root_output,
                   invalid, num_simulations, repeats, env_step=env_alone)


def _random_positions(game, batch_size, plies):
  """Positions after ``plies`` random legal moves (a fixed key), so roots differ."""
  key = jax.random.PRNGKey(123)
  states = jax.vmap(game.init)(jax.random.split(key, batch_size))
  for ply in range(plies):
    legal = jax.vmap(game.legal_actions)(states)
    logits = jnp.where(legal, 0.0, -jnp.inf)
    action = jax.random.categorical(jax.random.fold_in(key, ply), logits)
    stepped = jax.vmap(game.step)(states, action, jnp.zeros_like(action))
    alive = jnp.any(legal, axis=-1) & ~stepped.terminal
    states = jax.tree.map(lambda new, old: jnp.where(
        alive.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), stepped.state, states)
  return states


def hashed_workload(batch_size, num_simulations, num_actions=16, repeats=5):
  import jaxsearch as js
  from games import hashed

  game = hashed.make(num_actions)
  estimator = hashed.estimator(num_actions)
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  states = hashed.distinct_roots(game, batch_size)
  root_output, _ = root_fn(None, jax.random.PRNGKey(0), states)
  return _workload(f"hashed_A{num_actions}", game, estimator, recurrent_fn, states,
                   root_output, None, num_simulations, repeats)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="small shapes (smoke test)")
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--only", choices=["connect_four", "hashed"], default=None)
  args = parser.parse_args(argv)
  try:
    import mctx  # noqa: F401
  except ImportError:
    print("bench needs mctx: pip install -e '.[dev]'", file=sys.stderr)
    return 2
  print(json.dumps({"jax": jax.__version__, "backend": jax.default_backend(),
                    "devices": str(jax.devices())}), flush=True)
  if args.quick:
    workloads = [lambda: connect_four_workload(8, 8, args.repeats),
                 lambda: hashed_workload(8, 8, repeats=args.repeats)]
  else:
    workloads = []
    if args.only in (None, "connect_four"):
      workloads.append(lambda: connect_four_workload(256, 64, args.repeats))
    if args.only in (None, "hashed"):
      for batch_size in (64, 1024):
        for num_simulations in (32, 128):
          workloads.append(lambda b=batch_size, s=num_simulations: hashed_workload(
              b, s, repeats=args.repeats))
  for workload in workloads:
    print(json.dumps(workload()), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
