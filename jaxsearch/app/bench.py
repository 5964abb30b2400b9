"""Side-by-side search throughput: jaxsearch against mctx, policy for policy.

Runs four systems on the same workloads in one process — our PUCT against
``mctx.muzero_policy`` and our Gumbel MuZero against ``mctx.gumbel_muzero_policy`` (same
``max_num_considered_actions``) — interleaving their repeats so that machine noise hits them
alike, and prints a table (with ``--json``, one JSON line per workload): simulations per
second of each system, the
speedups (ours / theirs), compile seconds, tree bytes, how deep our PUCT trees grew, and the
XLA kernels each compiled search launches per simulation and per level of descent (counted in
the optimised HLO, see :func:`kernel_counts`). Connect Four also gets the environment alone (S sequential vmapped
steps), the floor any search on it pays.

    jaxsearch bench                  # all workloads (needs mctx: pip install "jaxsearch[mctx]")
    jaxsearch bench --quick          # small shapes, a smoke run
    jaxsearch bench --only hashed    # one family of workloads
    jaxsearch bench --json           # every figure, one JSON line per workload

``jaxsearch bench`` is ``jaxsearch bench engine``; the other benchmarks are its siblings
(:mod:`jaxsearch.app.benchmarks`, ``jaxsearch bench --help`` lists them). The timing is
:mod:`jaxsearch.app.timing`'s.

The workloads use the bundled ``games`` package (Connect Four, the hashed MDP), which is why
the benchmark is the application layer's (:mod:`jaxsearch.app`), not the library's; like the
command line, this module imports them only when it runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import statistics
import sys
import time
from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.app import timing

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


def compile_all(jobs: dict, workers: int = 1) -> dict:
  """``{name: (compiled, seconds)}`` of ``jobs = {name: (fn, args)}``: each traced and
  lowered in turn, then compiled on ``workers`` threads (XLA compiles outside Python's lock,
  so on a many-core host the compiles of one grid of workloads overlap). ``seconds`` is that
  job's own lowering plus compilation, which concurrent compiles may stretch."""
  import concurrent.futures
  lowered = {}
  for name, (fn, args) in jobs.items():
    start = time.perf_counter()
    lowered[name] = (jax.jit(fn).lower(*args), time.perf_counter() - start)

  def compile_one(name):
    start = time.perf_counter()
    compiled = lowered[name][0].compile()
    return compiled, lowered[name][1] + time.perf_counter() - start

  if workers <= 1:
    return {name: compile_one(name) for name in lowered}
  with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    futures = {name: pool.submit(compile_one, name) for name in lowered}
    return {name: future.result() for name, future in futures.items()}


def program_bytes(compiled) -> Optional[int]:
  """Device bytes a compiled program needs while it runs (arguments, outputs and scratch,
  less what outputs reuse of the arguments), from XLA's memory analysis; ``None`` where the
  backend does not say."""
  try:
    stats = compiled.memory_analysis()
  except Exception:  # noqa: BLE001 - not every backend implements it
    return None
  if stats is None:
    return None
  return int(stats.argument_size_in_bytes + stats.output_size_in_bytes +
             stats.temp_size_in_bytes - stats.alias_size_in_bytes)


def peak_device_bytes() -> Optional[int]:
  """The process's peak device memory so far (``device.memory_stats()``), or ``None`` on a
  backend without allocator statistics (the CPU)."""
  stats = jax.devices()[0].memory_stats()
  return None if not stats else stats.get("peak_bytes_in_use")


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


def has_mctx() -> bool:
  """Whether mctx can be imported (the systems measured against need it)."""
  try:
    importlib.import_module("mctx")
  except ImportError:
    return False
  return True


@dataclasses.dataclass(frozen=True)
class Workload:
  """One benchmark shape: the systems to time on it, each ``name: (fn, args)`` with
  ``fn(*args)`` one batched search, and optionally the environment alone (``env``: S
  sequential vmapped steps, the floor any search on the game pays)."""

  name: str
  batch_size: int
  num_simulations: int
  num_actions: int
  systems: dict
  env: Optional[tuple] = None


def _systems(game, estimator, root_states, num_simulations, with_mctx: bool,
             mask_invalid: bool = True, options: Optional[dict] = None) -> dict:
  """``{name: (fn, args)}``: our PUCT and Gumbel over the game (with search ``options``,
  e.g. ``levels_per_trip``), and with mctx its two policies over the same game through
  :func:`jaxsearch.compat.to_mctx`'s ``recurrent_fn``."""
  import jaxsearch as js

  key = jax.random.PRNGKey(0)
  options = options or {}
  puct = js.policies.puct(game, estimator, num_simulations=num_simulations, **options)
  gumbel = js.policies.gumbel(game, estimator, num_simulations=num_simulations,
                              max_num_considered_actions=MAX_CONSIDERED, **options)

  def run_puct(key, states):
    return puct(None, key, states)

  def run_gumbel(key, states):
    return gumbel(None, key, states)

  systems = {"ours": (run_puct, (key, root_states)),
             "ours_gumbel": (run_gumbel, (key, root_states))}
  if not with_mctx:
    return systems
  import mctx
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root_output, invalid = root_fn(None, key, root_states)
  if not mask_invalid:  # every action legal everywhere: mctx's default, no mask
    invalid = None

  def run_muzero(key, root):
    return mctx.muzero_policy(None, key, root, recurrent_fn, num_simulations,
                              invalid_actions=invalid, dirichlet_fraction=0.0)

  def run_mctx_gumbel(key, root):
    return mctx.gumbel_muzero_policy(None, key, root, recurrent_fn, num_simulations,
                                     invalid_actions=invalid,
                                     max_num_considered_actions=MAX_CONSIDERED)

  # The order interleaves each of ours with its mctx counterpart.
  return {"ours": systems["ours"], "mctx_muzero": (run_muzero, (key, root_output)),
          "ours_gumbel": systems["ours_gumbel"],
          "mctx_gumbel": (run_mctx_gumbel, (key, root_output))}


def measure(workload: Workload, compiled: dict, repeats: int) -> dict:
  """One JSON record of a workload whose systems are compiled (``{name: (compiled,
  seconds)}``, see :func:`compile_all`; an ``"env"`` entry times the environment alone):
  simulations per second of each system (median of ``repeats`` interleaved runs, so that
  machine noise hits them alike), the speedups ours / mctx, compile seconds, kernels per
  simulation and per level, each program's device bytes, tree bytes, and the process's peak
  device memory so far."""
  record = {"workload": workload.name, "batch": workload.batch_size,
            "simulations": workload.num_simulations, "actions": workload.num_actions}
  systems = workload.systems
  for system in systems:
    program, record[f"compile_s_{system}"] = compiled[system]
    record[f"compile_s_{system}"] = round(record[f"compile_s_{system}"], 3)
    counts = kernel_counts(program.as_text())
    record[f"kernels_per_simulation_{system}"] = counts["per_simulation"]
    record[f"kernels_per_level_{system}"] = counts["per_level"]
    record[f"program_bytes_{system}"] = program_bytes(program)
  times = timing.interleaved({system: (compiled[system][0], args)
                              for system, (_, args) in systems.items()}, repeats)
  total_sims = workload.batch_size * workload.num_simulations
  for system in systems:
    seconds = statistics.median(times[system])
    record[f"seconds_{system}"] = round(seconds, 5)
    record[f"sims_per_s_{system}"] = round(total_sims / seconds)
  speed = lambda ours, theirs: round(  # noqa: E731
      record[f"sims_per_s_{ours}"] / record[f"sims_per_s_{theirs}"], 3)
  if "mctx_muzero" in systems:
    record["speedup_vs_mctx_muzero"] = speed("ours", "mctx_muzero")
    record["speedup_vs_mctx_gumbel"] = speed("ours", "mctx_gumbel")
    record["speedup_gumbel_vs_mctx_gumbel"] = speed("ours_gumbel", "mctx_gumbel")
    record["speedup_vs_mctx_muzero_range"] = ratio_range(times["ours"], times["mctx_muzero"])
    record["speedup_gumbel_vs_mctx_gumbel_range"] = ratio_range(times["ours_gumbel"],
                                                                times["mctx_gumbel"])
    out_mctx = compiled["mctx_muzero"][0](*systems["mctx_muzero"][1])
    record["tree_bytes_mctx"] = _tree_bytes(out_mctx.search_tree)
  out_ours = compiled["ours"][0](*systems["ours"][1])
  record.update(_depths(out_ours.tree))
  record["tree_bytes_ours"] = _tree_bytes(out_ours.tree)
  if workload.env is not None and "env" in compiled:
    env_seconds = statistics.median(timing.interleaved(
        {"env": (compiled["env"][0], workload.env[1])}, repeats)["env"])
    record["env_steps_per_s"] = round(total_sims / env_seconds)
    record["search_over_env_time"] = round(record["seconds_ours"] / env_seconds, 3)
  record["peak_device_bytes"] = peak_device_bytes()
  return record


def ratio_range(ours: list, theirs: list) -> list:
  """``[lowest, highest]`` speedup of one round (``theirs[r] / ours[r]``, seconds of the same
  interleaved round): how far the machine's noise moves the ratio whose median the record
  gives."""
  ratios = [their / our for our, their in zip(ours, theirs)]
  return [round(min(ratios), 3), round(max(ratios), 3)]


def jobs(workload: Workload) -> dict:
  """What :func:`compile_all` compiles for ``workload``: its systems and its environment."""
  found = dict(workload.systems)
  if workload.env is not None:
    found["env"] = workload.env
  return found


def run_workload(workload: Workload, repeats: int, workers: int = 1) -> dict:
  """Compiles and measures one workload (:func:`measure`'s record)."""
  return measure(workload, compile_all(jobs(workload), workers), repeats)


def connect_four(batch_size=256, num_simulations=64, with_mctx=True,
                 options: Optional[dict] = None) -> Workload:
  """Connect Four after 6 random plies, a uniform estimator; the environment alone too."""
  import jaxsearch as js
  from jaxsearch.games import connect_four as game_module

  game = game_module.GAME
  states = random_positions(game, batch_size, plies=6)
  legal_fn = jax.vmap(game.legal_actions)

  def env_alone(states):
    """S sequential vmapped steps, always playing the first legal column."""
    def body(_, states):
      action = jnp.argmax(legal_fn(states), axis=-1)
      return jax.vmap(game.step)(states, action, jnp.zeros_like(action)).state
    return jax.lax.fori_loop(0, num_simulations, body, states)

  systems = _systems(game, js.estimators.uniform(), states, num_simulations, with_mctx,
                     options=options)
  return Workload("connect_four", batch_size, num_simulations, game.num_actions, systems,
                  env=(env_alone, (states,)))


def random_positions(game, batch_size, plies):
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


def hashed(batch_size, num_simulations, num_actions=16, with_mctx=True,
           options: Optional[dict] = None) -> Workload:
  """The hashed MDP (``jaxsearch.games.hashed``): distinct roots, a hashed estimator."""
  from jaxsearch.games import hashed as game_module

  game = game_module.make(num_actions)
  states = game_module.distinct_roots(game, batch_size)
  systems = _systems(game, game_module.estimator(num_actions), states, num_simulations,
                     with_mctx, mask_invalid=False, options=options)
  return Workload(f"hashed_A{num_actions}", batch_size, num_simulations, num_actions,
                  systems)


def connect_four_workload(batch_size=256, num_simulations=64, repeats=5):
  """:func:`measure`'s record of Connect Four against mctx."""
  return run_workload(connect_four(batch_size, num_simulations), repeats)


def hashed_workload(batch_size, num_simulations, num_actions=16, repeats=5):
  """:func:`measure`'s record of the hashed MDP against mctx."""
  return run_workload(hashed(batch_size, num_simulations, num_actions), repeats)


# One table per pair of policies compared: (title, our rate, mctx's rate, ratio key, our
# compile seconds).
_PAIRS = (("PUCT, ours against mctx.muzero_policy", "sims_per_s_ours",
           "sims_per_s_mctx_muzero", "speedup_vs_mctx_muzero", "compile_s_ours"),
          ("Gumbel, ours against mctx.gumbel_muzero_policy", "sims_per_s_ours_gumbel",
           "sims_per_s_mctx_gumbel", "speedup_gumbel_vs_mctx_gumbel", "compile_s_ours_gumbel"))
# Dropped in this order where the console is too narrow for them (--json keeps every figure).
_OPTIONAL_COLUMNS = ("rounds", "compile s")

QUICK_NOTE = ("--quick runs tiny shapes (B = 8, S = 8): a smoke run that checks the benchmark "
              "works. At that size fixed per-call costs dominate, so its ratios say nothing "
              "about either library's speed and are not the README's figures; those come from "
              "`jaxsearch bench --repeats 5` (the CPU figures) and `python scripts/gpu_check.py "
              "--out gpu_out` (the GPU figures).")


def _table(records: list[dict], console, *, quick: bool = False) -> None:
  """The records as readable tables on ``console`` (rich), one per pair of policies
  compared, with what the ratios mean. Where the console is too narrow for every column,
  the rounds' range, then the compile seconds are dropped, never cut (``--json`` keeps them).
  ``quick``: the shapes were ``--quick``'s, and :data:`QUICK_NOTE` says what they show."""
  from rich.measure import Measurement
  natural = console.options.update_width(1 << 16)  # the console's own would clamp the width
  for count in range(len(_OPTIONAL_COLUMNS) + 1):  # the same columns in every table
    tables = [_pair_table(records, pair, _OPTIONAL_COLUMNS[:count]) for pair in _PAIRS]
    if all(Measurement.get(console, natural, t).maximum <= console.width for t in tables):
      break
  for table in tables:
    console.print(table)
  console.print("A ratio is our simulations per second over mctx's for the same policy on the "
                "same workload, in this process (above 1: ours is faster): the median of the "
                "interleaved rounds; rounds, where shown: the lowest and highest round's. --json "
                "prints every figure.")
  if quick:
    console.print(QUICK_NOTE)


def _pair_table(records: list[dict], pair: tuple, dropped: tuple):
  """One pair's ``rich.table.Table`` (thousands of simulations per second, the ratio), less
  the ``dropped`` columns."""
  from rich import box
  from rich.table import Table
  title, ours, theirs, key, compile_key = pair
  table = Table(title=f"{title}: thousands of simulations/s", box=box.SIMPLE_HEAD,
                title_justify="left", pad_edge=False, collapse_padding=True)
  columns = [c for c in ("workload", "B", "S", "ours", "mctx", "ours ÷ mctx", "rounds",
                         "compile s") if c not in dropped]
  for column in columns:
    table.add_column(column, justify="left" if column == "workload" else "right",
                     no_wrap=True)
  thousands = lambda r, k: "–" if r.get(k) is None else f"{r[k] / 1e3:,.0f}"  # noqa: E731
  for r in records:
    cells = {"workload": r["workload"], "B": str(r["batch"]), "S": str(r["simulations"]),
             "ours": thousands(r, ours), "mctx": thousands(r, theirs),
             "ours ÷ mctx": "–" if r.get(key) is None else f"{r[key]:.2f}×",
             "rounds": ("–" if r.get(f"{key}_range") is None else
                        "{:.2f}–{:.2f}".format(*r[f"{key}_range"])),
             "compile s": ("–" if r.get(compile_key) is None else f"{r[compile_key]:.1f}")}
    table.add_row(*(cells[c] for c in columns))
  return table


def main(argv=None, prog: str = "jaxsearch bench") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  from jaxsearch.cli.common import ArgumentParser
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="tiny shapes, a smoke run: its ratios are not the README's figures "
                           "(those: --repeats 5)")
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--only", choices=["connect_four", "hashed"], default=None)
  parser.add_argument("--json", action="store_true",
                      help="one JSON line per workload (every figure) instead of a table")
  args = parser.parse_args(argv)
  if not has_mctx():
    print('jaxsearch bench: needs mctx: pip install "jaxsearch[mctx]" (from a checkout: '
          'pip install -e ".[mctx]")', file=sys.stderr)
    return 2
  from rich.console import Console
  console = Console(stderr=True)
  header = {"jax": jax.__version__, "backend": jax.default_backend(),
            "devices": str(jax.devices())}
  if args.json:
    timing.emit(header)
  else:
    console.print(f"jax {header['jax']} on {header['devices']}")
  if args.quick:  # said first too: the run takes a while and the ratios read as claims
    console.print(QUICK_NOTE)
  if args.quick:
    shapes = [(connect_four, 8, 8), (hashed, 8, 8)]
  else:
    shapes = []
    if args.only in (None, "connect_four"):
      shapes.append((connect_four, 256, 64))
    if args.only in (None, "hashed"):
      shapes += [(hashed, b, s) for b in (64, 1024) for s in (32, 128)]
  records = []
  with console.status("benchmarking…") as status:
    for make, batch_size, num_simulations in shapes:
      status.update(f"benchmarking {make.__name__} B={batch_size} S={num_simulations}…")
      record = run_workload(make(batch_size, num_simulations), args.repeats)
      records.append(record)
      if args.json:
        timing.emit(record)
  if not args.json:
    _table(records, Console(), quick=args.quick)
  return 0


if __name__ == "__main__":
  sys.exit(main())
