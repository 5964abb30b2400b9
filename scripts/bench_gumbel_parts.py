"""Where our Gumbel MuZero search spends its time at few simulations: its selection formulas
replaced by trivial ones, side by side with the real search and ``mctx.gumbel_muzero_policy``.

On the hashed MDP (``jaxsearch bench``'s workload, 16 actions, ``max_num_considered_actions
= 16``), in one process, interleaved, median of ``--repeats`` runs each:

  ours            ``js.policies.gumbel`` as it is
  sequential      the same search with ``batched_opening=False``: the first phase's ``m``
                  simulations run one by one in the loop, as mctx runs them (the same tree)
  cheap_root      the root's Sequential Halving score replaced by ``g + logits`` on the slots
                  at the schedule's visit count (no completed Q, no σ)
  cheap_interior  the interior rule ``argmax π′ − n/(1+N)`` replaced by ``logits − n``
  cheap_both      both
  mctx            ``mctx.gumbel_muzero_policy`` (if installed)

The cheap variants build other trees: they are not searches anyone should run. What they
save is an upper bound on what the two Gumbel formulas (completed Q, its min-max rescaling,
σ, the improved policy's softmax: a dozen reductions over the ``K`` slots of a node) cost
inside a search, because the cheap interior rule also makes shallower trees (fewer levels
walked per simulation): ``mean_deepest_node`` gives each variant's mean over the batch of
its trees' deepest node. Prints one JSON line: milliseconds per search, each variant's share
saved (negative: slower than ``ours``), mctx's time over ours with and without the batched
opening, the seconds each of our variants took to compile and their trees' depth.

    python scripts/bench_gumbel_parts.py --batch 64 --simulations 32

``--scan 1,16,24,32`` times instead ``ours`` and mctx at each of those simulation counts
(interleaved, one process) and prints the milliseconds per search at each count and the cost
of one more simulation between consecutive counts: with ``m = 16`` considered actions, from
1 to 16 the simulations of the batched first phase, after 16 those of the loop.

    python scripts/bench_gumbel_parts.py --batch 64 --scan 1,16,24,32
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsearch as js  # noqa: E402
from jaxsearch import gumbel as gumbel_lib  # noqa: E402
from jaxsearch.app.bench import compile_all, has_mctx  # noqa: E402
from jaxsearch.games import hashed  # noqa: E402
from jaxsearch.selection.base import RootRule, SelectionRule  # noqa: E402

VARIANTS = ("ours", "sequential", "cheap_root", "cheap_interior", "cheap_both")
CONSIDERED = 16


def _search(game, estimator, simulations: int, variant: str):
  """Our Gumbel search with the variant's rules (the real ones from ``js.policies.gumbel``)."""
  search = js.policies.gumbel(game, estimator, num_simulations=simulations,
                              max_num_considered_actions=CONSIDERED,
                              batched_opening=variant != "sequential")
  config = search.config
  if variant in ("cheap_root", "cheap_both"):
    table = jnp.asarray(gumbel_lib.sequential_halving_table(CONSIDERED, simulations))
    real = config.root_selection

    def root_score(view, context):
      considered = table[jnp.minimum(CONSIDERED, jnp.sum(view.legal)), context.simulation]
      return jnp.where(view.legal & (view.child_visits == considered),
                       context.noise + view.prior_logits, -jnp.inf)

    config = dataclasses.replace(
        config, root_selection=RootRule("cheap_root", root_score, real.noise,
                                        opening=real.opening,
                                        opening_width=real.opening_width))
  if variant in ("cheap_interior", "cheap_both"):
    config = dataclasses.replace(config, selection=SelectionRule(
        "cheap_interior", lambda view, key: view.prior_logits - view.child_visits,
        reads_prior_probs=True))
  return dataclasses.replace(search, config=config)


def _mean_deepest(tree) -> float:
  """The mean over the batch of each tree's deepest node: the cheap variants' trees differ."""
  depth, count = np.asarray(tree.nodes.depth), np.asarray(tree.num_nodes)
  made = np.arange(depth.shape[1])[None, :] < count[:, None]
  return round(float(np.where(made, depth, 0).max(axis=1).mean()), 3)


def _interleaved_ms(programs: dict, repeats: int) -> dict:
  """Median milliseconds per run of each compiled program, run in turn ``repeats`` times."""
  times = {name: [] for name in programs}
  for _ in range(repeats):
    for name, (compiled, inputs) in programs.items():
      start = time.perf_counter()
      jax.block_until_ready(compiled(*inputs))
      times[name].append(time.perf_counter() - start)
  return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def _mctx_job(game, estimator, key, roots, simulations: int):
  import mctx
  root_fn, recurrent_fn = js.compat.to_mctx(game, estimator)
  root, _ = root_fn(None, key, roots)
  return (lambda k, r: mctx.gumbel_muzero_policy(
      None, k, r, recurrent_fn, simulations, max_num_considered_actions=CONSIDERED),
      (key, root))


def scan(batch: int, counts: list[int], repeats: int) -> dict:
  """Ours and mctx at each simulation count: ms per search, and ms per added simulation
  between consecutive counts."""
  game, estimator = hashed.make(16), hashed.estimator(16)
  roots = hashed.distinct_roots(game, batch)
  key = jax.random.PRNGKey(0)
  systems = ("ours", "mctx") if has_mctx() else ("ours",)
  jobs = {}
  for count in counts:
    jobs[("ours", count)] = (lambda k, r, s=_search(game, estimator, count, "ours"):
                             s(None, k, r), (key, roots))
    if "mctx" in systems:
      jobs[("mctx", count)] = _mctx_job(game, estimator, key, roots, count)
  compiled = compile_all(jobs)
  programs = {name: (compiled[name][0], jobs[name][1]) for name in jobs}
  for compiled_fn, inputs in programs.values():
    jax.block_until_ready(compiled_fn(*inputs))
  ms = _interleaved_ms(programs, repeats)
  result = {"batch": batch, "simulation_counts": counts, "device": str(jax.devices()[0]),
            "considered": CONSIDERED}
  for system in systems:
    result[f"ms_{system}"] = [round(ms[(system, c)], 3) for c in counts]
    result[f"ms_per_added_simulation_{system}"] = {
        f"{a}-{b}": round((ms[(system, b)] - ms[(system, a)]) / (b - a), 4)
        for a, b in zip(counts, counts[1:])}
  if "mctx" in systems:
    result["mctx_over_ours"] = [round(ms[("mctx", c)] / ms[("ours", c)], 3) for c in counts]
  return result


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--simulations", type=int, default=32)
  parser.add_argument("--repeats", type=int, default=15)
  parser.add_argument("--scan", default=None, metavar="S1,S2,...",
                      help="time ours and mctx at these simulation counts instead")
  args = parser.parse_args(argv)
  if args.scan:
    counts = sorted({int(c) for c in args.scan.split(",")})
    if counts[0] < 1:
      parser.error("--scan takes simulation counts >= 1")
    print(json.dumps(scan(args.batch, counts, args.repeats)))
    return 0
  game, estimator = hashed.make(16), hashed.estimator(16)
  roots = hashed.distinct_roots(game, args.batch)
  key = jax.random.PRNGKey(0)
  jobs = {variant: (lambda k, r, s=_search(game, estimator, args.simulations, variant):
                    s(None, k, r), (key, roots)) for variant in VARIANTS}
  if has_mctx():
    jobs["mctx"] = _mctx_job(game, estimator, key, roots, args.simulations)
  compiled = compile_all(jobs)
  programs = {name: (compiled[name][0], jobs[name][1]) for name in jobs}
  compile_s = {name: round(compiled[name][1], 2) for name in VARIANTS}
  deepest = {}
  for name, (compiled, inputs) in programs.items():
    out = jax.block_until_ready(compiled(*inputs))
    if name in VARIANTS:
      deepest[name] = _mean_deepest(out.tree)
  ms = _interleaved_ms(programs, args.repeats)
  print(json.dumps({
      "batch": args.batch, "simulations": args.simulations, "device": str(jax.devices()[0]),
      "ms_per_search": {name: round(v, 3) for name, v in ms.items()},
      "compile_s": compile_s,
      "mean_deepest_node": deepest,
      "share_saved": {name: round(1 - ms[name] / ms["ours"], 3) for name in VARIANTS[1:]},
      "mctx_over_ours": round(ms["mctx"] / ms["ours"], 3) if "mctx" in ms else None,
      "mctx_over_sequential": (round(ms["mctx"] / ms["sequential"], 3) if "mctx" in ms
                               else None)}))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
