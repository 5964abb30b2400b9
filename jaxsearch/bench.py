"""Side-by-side search throughput: jaxsearch against mctx, policy for policy.

Runs four systems on the same workloads in one process — our PUCT against
``mctx.muzero_policy`` and our Gumbel MuZero against ``mctx.gumbel_muzero_policy`` (same
``max_num_considered_actions``) — interleaving their repeats so that machine noise hits them
alike, and prints one JSON line per workload: simulations per second of each system, the
speedups (ours / theirs), compile seconds, tree bytes, how deep our PUCT trees grew, and the
XLA kernels each compiled search launches per simulation and per level of descent (counted in
the optimised HLO, see :func:`kernel_counts`). Connect Four also gets the environment alone (S sequential vmapped
steps), the floor any search on it pays.

    jaxsearch bench                  # all workloads (needs mctx: pip install "jaxsearch[mctx]")
    jaxsearch bench --quick          # small shapes, a smoke run
    jaxsearch bench --only hashed    # one family of workloads

The workloads use the bundled ``games`` package (Connect Four, the hashed MDP); like the
command line, this module imports them only when it runs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time

import jax
import jax.numpy as jnp


_TRIVIAL_OPS = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast",
                          "after-all", "partition-id", "replica-id", "while"})
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$")
_OPCODE = re.compile(r"=\s.*?\s([a-z][\w\-]*)\(")
_LOOP = re.compile(r"condition=%?([\w.\-]+), body=%?([\w.\-]+)")


def _computations(hlo_text: str) -> tuple[dict[str, list[str]], str]:
  """``({name: instruction lines}, entry name)`` of an optimised HLO module's text."""
  computations: dict[str, list[str]] = {}
  entry, current = "", None
  for line in hlo_text.splitlines():
    header = _COMPUTATION.match(line)
    if header:
      current = header.group(1)
      computations[current] = []
      if line.startswith("ENTRY"):
        entry = current
    elif current is not None and line.strip() == "}":
      current = None
    elif current is not None and " = " in line:
      computations[current].append(line)
  return computations, entry


def kernel_counts(hlo_text: str) -> dict[str, int]:
  """Kernels one search launches, read off its optimised HLO (``compiled.as_text()``).

  A kernel is an instruction of a computation that runs on its own — a fusion, a scatter, a
  sort, a custom call — not bookkeeping (parameters, constants, tuples, bitcasts). The
  simulation loop is the entry's ``while`` with the most kernels in its body; the loops
  nested in that body (descent, backup) run once per level of the path.

  Returns:
    ``per_simulation`` (the simulation loop's body and condition, nested loops excluded) and
    ``per_level`` (the nested loops' bodies and conditions together).
  """
  computations, entry = _computations(hlo_text)

  def kernels(name: str) -> int:
    return sum(1 for line in computations.get(name, ())
               if (op := _OPCODE.search(line)) and op.group(1) not in _TRIVIAL_OPS)

  def loops(name: str) -> list[tuple[str, str]]:
    return [match.groups() for line in computations.get(name, ())
            if " while(" in line and (match := _LOOP.search(line))]

  outer = max(loops(entry), key=lambda loop: kernels(loop[1]), default=None)
  if outer is None:
    return {"per_simulation": 0, "per_level": 0}
  nested = loops(outer[1])
  return {"per_simulation": kernels(outer[0]) + kernels(outer[1]),
          "per_level": sum(kernels(cond) + kernels(body) for cond, body in nested)}


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


def _depths(tree) -> dict:
  """How deep our PUCT trees grew: the mean depth of the nodes the search created (about the
  levels an average descent walks) and the mean over the batch of each tree's deepest node (a
  batched descent walks until its deepest tree is done)."""
  import numpy as np
  depth = np.asarray(tree.nodes.depth)
  created = np.arange(depth.shape[1])[None, :] < np.asarray(tree.num_nodes)[:, None]
  created[:, 0] = False  # the root
  deepest = np.where(created, depth, 0).max(axis=1)
  return {"mean_node_depth_ours": round(float(depth[created].mean()), 2),
          "mean_max_depth_ours": round(float(deepest.mean()), 2)}


def _tree_bytes(tree) -> int:
  return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree)))


# Gumbel's ``m`` for both systems (mctx's default and the paper's).
MAX_CONSIDERED = 16


def _systems(game, estimator, recurrent_fn, root_states, root_output, invalid,
             num_simulations):
  """``{name: (search function (key, root) -> output, its root input)}`` for the four
  systems: our PUCT and Gumbel over the game, mctx's two policies over the same game
  through :func:`jaxsearch.compat.to_mctx`'s ``recurrent_fn``."""
  import mctx
  import jaxsearch as js

  puct = js.policies.puct(game, estimator, num_simulations=num_simulations)
  gumbel = js.policies.gumbel(game, estimator, num_simulations=num_simulations,
                              max_num_considered_actions=MAX_CONSIDERED)

  def run_puct(key, states):
    return puct(None, key, states)

  def run_gumbel(key, states):
    return gumbel(None, key, states)

  def run_muzero(key, root):
    return mctx.muzero_policy(None, key, root, recurrent_fn, num_simulations,
                              invalid_actions=invalid, dirichlet_fraction=0.0)

  def run_mctx_gumbel(key, root):
    return mctx.gumbel_muzero_policy(None, key, root, recurrent_fn, num_simulations,
                                     invalid_actions=invalid,
                                     max_num_considered_actions=MAX_CONSIDERED)

  return {"ours": (run_puct, root_states), "mctx_muzero": (run_muzero, root_output),
          "ours_gumbel": (run_gumbel, root_states),
          "mctx_gumbel": (run_mctx_gumbel, root_output)}


def _workload(name, game, estimator, recurrent_fn, root_states, root_output, invalid,
              num_simulations, repeats, env_step=None):
  batch_size = jax.tree.leaves(root_states)[0].shape[0]
  key = jax.random.PRNGKey(0)
  systems = _systems(game, estimator, recurrent_fn, root_states, root_output, invalid,
                     num_simulations)
  record = {"workload": name, "batch": batch_size, "simulations": num_simulations,
            "actions": game.num_actions}
  compiled = {}
  for system, (fn, root) in systems.items():
    compiled[system], record[f"compile_s_{system}"] = _timed_compile(fn, key, root)
    counts = kernel_counts(compiled[system].as_text())
    record[f"kernels_per_simulation_{system}"] = counts["per_simulation"]
    record[f"kernels_per_level_{system}"] = counts["per_level"]
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
  speed = lambda ours, theirs: round(  # noqa: E731
      record[f"sims_per_s_{ours}"] / record[f"sims_per_s_{theirs}"], 3)
  record["speedup_vs_mctx_muzero"] = speed("ours", "mctx_muzero")
  record["speedup_vs_mctx_gumbel"] = speed("ours", "mctx_gumbel")
  record["speedup_gumbel_vs_mctx_gumbel"] = speed("ours_gumbel", "mctx_gumbel")
  out_ours = compiled["ours"](key, root_states)
  out_mctx = compiled["mctx_muzero"](key, root_output)
  record.update(_depths(out_ours.tree))
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
  parser = argparse.ArgumentParser(prog="jaxsearch bench", description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="small shapes (smoke test)")
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--only", choices=["connect_four", "hashed"], default=None)
  args = parser.parse_args(argv)
  try:
    import mctx  # noqa: F401
  except ImportError:
    print("jaxsearch bench: needs mctx (pip install \"jaxsearch[mctx]\")", file=sys.stderr)
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
