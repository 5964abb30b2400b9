"""Sample efficiency of selection rules on random MDPs (issue 3; seed 000's comparison).

For each rule, one batched search runs over ``--mdps`` random Garnet MDPs (one tree each, one
compile), one simulation at a time. After every simulation we note each tree's recommended
root action and its number of estimator evaluations (= nodes in the tree: each node is one
evaluated state). The figure per MDP is the number of evaluations at which the recommended
action becomes optimal **and stays optimal** until the budget ends (MDPs where it never settles
count as unsolved: ``inf``, and quartiles are taken with them in).

Rules (all AVTS rules share the Bellman backup over exact chance outcomes, debiasing and
progressive widening, as in seed 000; only the selection differs):
  thompson_avts      Thompson sampling on q̂3 (the default ``js.policies.avts``)
  thompson_no_debias the same without debiasing
  laplace            q̂3 + δ/(n+1), δ = 0.1
  hoeffding          q̂3 + (U−L)·sqrt(−ln p / 2)/sqrt(n+1), p = 0.999
  puct_value_prior   seed 000's PUCT: q̂3 + c·softmax(q̂1)·sqrt(N)/(1+n), c = 1
  uct                classic UCT, running-mean backup, leaf value max q̂1

The estimator is ``Q* + bias_per_step·(moves left) + noise·z`` (fixed per state): optimistic
far from the end, like Wordle's entropic estimator.

    python scripts/bench_sample_efficiency.py              # 128 MDPs, JSON line + PNG
    python scripts/bench_sample_efficiency.py --quick      # a small smoke run

Prints one JSON line: per rule the median and quartiles of evaluations, the fraction solved,
and ``ratio_puct_over_avts`` (PUCT's median ÷ Thompson-AVTS's; ``null`` when a median lies
beyond the budget, with ``ratio_puct_over_avts_at_most`` when only Thompson-AVTS's does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jaxsearch as js  # noqa: E402
from games import garnet  # noqa: E402


def rules(game, estimator, max_nodes: int):
  """``name -> Search`` doing one simulation per call."""
  value_range = game.value_range
  common = dict(num_simulations=1, max_nodes=max_nodes)
  sel = js.selection
  return {
      "thompson_avts": js.policies.avts(game, estimator, **common),
      "thompson_no_debias": js.policies.avts(game, estimator, debias=False, **common),
      "laplace": js.policies.avts(game, estimator, selection=sel.laplace(0.1), **common),
      "hoeffding": js.policies.avts(game, estimator, selection=sel.hoeffding(value_range),
                                    **common),
      "puct_value_prior": js.policies.avts(game, estimator, selection=sel.value_prior_puct(),
                                           **common),
      "uct": js.policies.uct(game, estimator, **common),
  }


def trace(search, roots, key, steps: int, record=None):
  """Runs ``steps`` single-simulation searches in one jitted scan; returns
  ``(actions i32[T, M], evaluations i32[T, M])`` after each simulation, plus
  ``record(out)`` stacked over the steps as a third item when ``record`` is given (e.g.
  ``lambda out: out.root_bound``)."""

  @jax.jit
  def run(key):
    init_key, loop_key = jax.random.split(key)
    tree = search.init_tree(None, init_key, roots)

    def step(tree, step_key):
      out = search(None, step_key, roots, tree)
      if record is not None:
        return out.tree, (out.action, out.tree.num_nodes, record(out))
      return out.tree, (out.action, out.tree.num_nodes)

    _, history = jax.lax.scan(step, tree, jax.random.split(loop_key, steps))
    return history

  return run(key)


def settle_evaluations(actions, evaluations, optimal, budget: int):
  """Per MDP, evaluations when the recommendation becomes optimal for good (``inf`` if never
  within ``budget`` evaluations).

  Args:
    actions, evaluations: ``[T, M]``.
    optimal: ``bool[M, A]`` optimal root actions.
  """
  actions = np.asarray(actions)
  evaluations = np.asarray(evaluations)
  steps, count = actions.shape
  good = optimal[np.arange(count)[None, :], np.maximum(actions, 0)] & (actions >= 0)
  good &= evaluations <= budget
  within = evaluations <= budget
  result = np.full(count, np.inf)
  for m in range(count):
    last_in_budget = np.nonzero(within[:, m])[0]
    if len(last_in_budget) == 0:
      continue
    end = last_in_budget[-1]
    column = good[:end + 1, m]
    if not column[end]:
      continue
    bad = np.nonzero(~column)[0]
    first = 0 if len(bad) == 0 else bad[-1] + 1
    result[m] = evaluations[first, m]
  return result


def summary(values):
  finite = np.isfinite(values)
  q1, median, q3 = np.percentile(values, [25, 50, 75], method="lower")
  as_number = lambda x: None if not math.isfinite(x) else float(x)  # noqa: E731
  return {"median": as_number(median), "q1": as_number(q1), "q3": as_number(q3),
          "solved": float(finite.mean())}


def plot(results, budget, path, title):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  names = list(results)
  data = [np.where(np.isfinite(results[n]), results[n], budget * 1.15) for n in names]
  fig, ax = plt.subplots(figsize=(8, 4.5))
  ax.boxplot(data, orientation="horizontal", whis=(5, 95), showfliers=True)
  ax.set_yticks(range(1, len(names) + 1), names)
  ax.axvline(budget, color="grey", linestyle=":", label="budget (right of it: never settled)")
  ax.set_xscale("log")
  ax.set_xlabel("estimator evaluations until the root action is optimal for good")
  ax.set_title(title)
  ax.legend(loc="lower right", fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def add_garnet_arguments(parser: argparse.ArgumentParser, *, mdps: int, actions: int) -> None:
  """The Garnet family and estimator flags, shared with ``scripts/compare_rules.py``."""
  parser.add_argument("--mdps", type=int, default=mdps)
  parser.add_argument("--states", type=int, default=20)
  parser.add_argument("--actions", type=int, default=actions)
  parser.add_argument("--branching", type=int, default=2)
  parser.add_argument("--horizon", type=int, default=4)
  parser.add_argument("--bias-per-step", type=float, default=0.5)
  parser.add_argument("--noise", type=float, default=0.1)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  add_garnet_arguments(parser, mdps=128, actions=32)
  parser.add_argument("--budget", type=int, default=2000,
                      help="estimator evaluations per MDP")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--only", default=None, help="comma-separated rule names")
  parser.add_argument("--plot", default="sample_efficiency.png",
                      help="PNG path ('' for none)")
  parser.add_argument("--quick", action="store_true", help="small smoke run")
  args = parser.parse_args(argv)
  if args.quick:
    args.mdps, args.budget = 16, 300

  family = garnet.make_family(args.mdps, args.states, args.actions, args.branching,
                              args.horizon, seed=args.seed)
  estimator = garnet.estimator(family, bias_per_step=args.bias_per_step, noise=args.noise,
                               seed=args.seed)
  roots = family.roots()
  q_root = np.asarray(family.q_star[:, 0, 0])  # [M, A]
  optimal = q_root >= q_root.max(axis=-1, keepdims=True) - 1e-6
  max_nodes = args.budget + args.branching + 1
  searches = rules(family.game, estimator, max_nodes)
  if args.only:
    searches = {k: v for k, v in searches.items() if k in args.only.split(",")}

  results, report = {}, {}
  for name, search in searches.items():
    per_step = args.branching if search.config.bellman else 1
    steps = args.budget // per_step + 1
    start = time.perf_counter()
    actions, evaluations = jax.block_until_ready(trace(search, roots, jax.random.key(args.seed),
                                                       steps))
    seconds = time.perf_counter() - start
    results[name] = settle_evaluations(actions, evaluations, optimal, args.budget)
    report[name] = dict(summary(results[name]), seconds=round(seconds, 2))
    print(f"# {name}: {report[name]}", file=sys.stderr)

  line = {"bench": "sample_efficiency", "mdps": args.mdps, "states": args.states,
          "actions": args.actions, "branching": args.branching, "horizon": args.horizon,
          "bias_per_step": args.bias_per_step, "noise": args.noise, "budget": args.budget,
          "seed": args.seed, "rules": report}
  if "thompson_avts" in report and "puct_value_prior" in report:
    avts_median = report["thompson_avts"]["median"]
    puct_median = report["puct_value_prior"]["median"]
    line["ratio_puct_over_avts"] = (
        None if avts_median is None or puct_median is None else
        round(puct_median / avts_median, 3))
    if avts_median is None and puct_median is not None:
      # Thompson-AVTS settled on fewer than half the MDPs: its median exceeds the budget.
      line["ratio_puct_over_avts_at_most"] = round(puct_median / args.budget, 3)
  if args.plot:
    plot(results, args.budget, args.plot,
         f"{args.mdps} Garnet MDPs (S={args.states}, A={args.actions}, O={args.branching}, "
         f"H={args.horizon})")
    line["plot"] = args.plot
  print(json.dumps(line))


if __name__ == "__main__":
  main()
