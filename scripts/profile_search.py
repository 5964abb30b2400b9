"""Where one compiled search spends its time, kernel by kernel (XLA CPU or GPU).

Runs a search on the hashed MDP (``jaxsearch.games.hashed``, 16 actions) under ``jax.profiler``, reads
the trace back with ``xprof`` (``pip install xprof``: a profiling tool, not a dependency of
jaxsearch) and prints the kernels that cost most: milliseconds per search, calls per search
(a call count of ``S`` runs once per simulation; larger counts run once per level), µs per
call, the kernel's output shape and the JAX operation it came from. The profiler's own
overhead inflates small kernels; compare kernels with each other, and time changes with
``jaxsearch bench ab``.

    python scripts/profile_search.py --policy gumbel --batch 1024 --simulations 32 --top 40
    python scripts/profile_search.py --policy gumbel --batch 64 --option batched_opening=false
    python scripts/profile_search.py --from profile.tar.gz   # a trace recorded elsewhere

``record`` needs only JAX, so a trace can be taken on a machine without xprof (an
accelerator's, by ``scripts/gpu_check.py --profile``) and read back here.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import re
import sys
import tempfile
from typing import Optional

import jax

_WRAPPERS = ("ThreadpoolListener::Region", "ThunkExecutor::Execute")


# The engine's named scopes (``jax.named_scope``), innermost first when nested.
PHASES = ("root_level", "interior_levels", "estimator", "expansion", "backup", "descent",
          "init")


def _kernel_info(hlo_text: str) -> dict[str, tuple[str, str, str, str]]:
  """``{instruction name: (output shape, op_name tail, phase, opcode)}`` of an optimised HLO
  module; the phase is the innermost engine scope in the op_name (``other`` outside them)."""
  info = {}
  for line in hlo_text.splitlines():
    match = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = (\S+) ([\w\-]+)\(.*?op_name=\"([^\"]+)\"",
                     line)
    if match:
      parts = match.group(4).split("/")
      phase = next((p for p in PHASES if p in parts), "other")
      info[match.group(1)] = (match.group(2), parts[-1][:60], phase, match.group(3))
  return info


def record(policy: str, batch: int, simulations: int, repeats: int, folder,
           game_name: str = "hashed", options: Optional[dict] = None) -> dict:
  """Compiles one search on the hashed MDP (or Connect Four after 6 random plies,
  ``game_name="connect_four"``; ``options``: more :class:`jaxsearch.SearchConfig` keywords,
  e.g. ``{"path_update": "per_level"}``), traces ``repeats`` runs of it into ``folder``
  (``jax.profiler``) and writes its optimised HLO and settings beside the trace; returns
  the settings and the traced runs' mean seconds. Needs only JAX (no xprof)."""
  import time
  from pathlib import Path

  import jaxsearch as js
  from jaxsearch.games import hashed

  folder = Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  if game_name == "connect_four":
    from jaxsearch.app.bench import random_positions
    from jaxsearch.games import connect_four
    game, estimator = connect_four.GAME, js.estimators.uniform()
    roots = random_positions(game, batch, plies=6)
  else:
    game, estimator = hashed.make(16), hashed.estimator(16)
    roots = hashed.distinct_roots(game, batch)
  options = dict(options or {})
  if policy == "puct":
    search = js.policies.puct(game, estimator, num_simulations=simulations, **options)
  else:
    search = js.policies.gumbel(game, estimator, num_simulations=simulations,
                                max_num_considered_actions=16, **options)
  key = jax.random.PRNGKey(0)
  compiled = jax.jit(lambda key, roots: search(None, key, roots)).lower(key, roots).compile()
  jax.block_until_ready(compiled(key, roots))
  start = time.perf_counter()
  with jax.profiler.trace(str(folder / "trace")):
    for _ in range(repeats):
      jax.block_until_ready(compiled(key, roots))
  seconds = (time.perf_counter() - start) / repeats
  (folder / "module.hlo.txt").write_text(compiled.as_text())
  settings = {"policy": policy, "game": game_name, "options": options, "batch": batch,
              "simulations": simulations, "repeats": repeats,
              "traced_seconds_per_search": round(seconds, 5),
              "device": str(jax.devices()[0])}
  (folder / "settings.json").write_text(json.dumps(settings))
  return settings


def analyse(folder, top: int = 40) -> dict:
  """Reads a :func:`record` folder back with xprof: prints the costliest kernels and returns
  milliseconds and kernel calls per phase."""
  from pathlib import Path

  from xprof.convert import raw_to_tool_data
  folder = Path(folder)
  settings = json.loads((folder / "settings.json").read_text())
  repeats, simulations = settings["repeats"], settings["simulations"]
  trace_file = glob.glob(f"{folder}/trace/**/*.xplane.pb", recursive=True)[0]
  data, _ = raw_to_tool_data.xspace_to_tool_data([trace_file], "trace_viewer", {})
  events = json.loads(data)
  events = events["traceEvents"] if isinstance(events, dict) else events
  micros, calls = collections.Counter(), collections.Counter()
  for event in events:
    name = event.get("name", "")
    if (event.get("ph") == "X" and not name.startswith(("$", "end: ", "Pjit")) and
        not name.startswith(_WRAPPERS)):
      micros[name] += event.get("dur", 0)
      calls[name] += 1
  info = _kernel_info((folder / "module.hlo.txt").read_text())
  print(f"{settings}")
  print(f"{'ms/search':>9} {'calls':>7} {'us/call':>8}  kernel  shape  phase  op")
  for name, total in micros.most_common(top):
    shape, op, phase, _ = info.get(name, ("", "", "", ""))
    print(f"{total / repeats / 1000:9.3f} {calls[name] / repeats:7.0f} "
          f"{total / calls[name]:8.1f}  {name}  {shape}  {phase}  {op}")
  # Loops' own events span their bodies' kernels: counted once, through the kernels.
  phase_ms, phase_kernels = collections.Counter(), collections.Counter()
  for name, total in micros.items():
    if name in info and info[name][3] not in ("while", "conditional", "call"):
      phase_ms[info[name][2]] += total / repeats / 1000
      phase_kernels[info[name][2]] += calls[name] / repeats / simulations
  return {**settings,
          "phase_ms_per_search": {p: round(v, 3) for p, v in phase_ms.most_common()},
          "phase_kernel_calls_per_simulation": {
              p: round(v, 1) for p, v in phase_kernels.most_common()}}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--policy", choices=["puct", "gumbel"], default="puct")
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--simulations", type=int, default=32)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--top", type=int, default=40)
  parser.add_argument("--from", dest="source", default=None, metavar="PATH",
                      help="analyse a recorded trace instead of running one: a folder of "
                           "record() or gpu_check.py's profile.tar.gz (every policy in it)")
  parser.add_argument("--option", action="append", default=[], metavar="NAME=JSON",
                      help="a SearchConfig keyword of the search, its value as JSON, e.g. "
                           "batched_opening=false or path_update='\"whole_path\"' (repeatable)")
  args = parser.parse_args(argv)
  options = {}
  for option in args.option:
    name, _, value = option.partition("=")
    try:
      options[name] = json.loads(value)
    except json.JSONDecodeError:
      parser.error(f"--option {option!r}: the value must be JSON (true, 2, \"whole_path\")")
  try:
    import xprof  # noqa: F401
  except ImportError:
    print("profile_search.py: needs xprof (pip install xprof)", file=sys.stderr)
    return 2
  if args.source is not None:
    return _analyse_source(args.source, args.top)
  with tempfile.TemporaryDirectory() as folder:
    record(args.policy, args.batch, args.simulations, args.repeats, folder, options=options)
    print(json.dumps(analyse(folder, args.top)))
  return 0


def _analyse_source(source: str, top: int) -> int:
  """``--from``: a record() folder, or an archive of them (each sub-folder one policy)."""
  import tarfile
  from pathlib import Path
  with tempfile.TemporaryDirectory() as scratch:
    path = Path(source)
    if path.is_file():
      with tarfile.open(path) as archive:
        archive.extractall(scratch, filter="data")
      path = Path(scratch)
    folders = sorted({Path(f).parent for f in glob.glob(f"{path}/**/settings.json",
                                                         recursive=True)})
    if not folders:
      print(f"profile_search.py: no recorded trace under {source}", file=sys.stderr)
      return 2
    for folder in folders:
      print(json.dumps(analyse(folder, top)))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
