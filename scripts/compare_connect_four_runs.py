"""Connect Four training runs side by side: each run's size and its end-game errors.

    python scripts/compare_connect_four_runs.py LABEL=DIR [LABEL=DIR ...] [--last-minutes 10]
        [--plot PNG] [--budgets 16,32,64]

Reads each run's ``metrics.jsonl`` (``jaxsearch train connect_four --out DIR``) and prints one
JSON line: per run its steps, self-play positions, updates, positions per second over the
whole run (evaluations included), the final evaluation's errors on Test_L3_R1 and Test_L2_R2
(the raw network's argmax and the search), and the mean of the evaluations in its last
``--last-minutes`` minutes, steadier than the final one.

``--plot`` draws the network's and the search's errors on Test_L3_R1 against minutes, one line
per run. ``--budgets`` also searches each run's newest checkpoint at those numbers of
simulations (the evaluation's search: no noise, temperature 0) and reports its errors: how good
the search that makes the policy targets is, against the network that learns from them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jaxsearch.app.evaluators import CONNECT4_EVALUATED as SETS  # no JAX imported

KINDS = ("net_error", "search_error")


def summarise(directory: Path, last_minutes: float) -> dict:
  """One run's size and errors (in %) from its ``metrics.jsonl``."""
  from jaxsearch.train.metrics import read_metrics
  rows = read_metrics(directory / "metrics.jsonl")
  evaluations = [r for r in rows if f"net_error/{SETS[0]}" in r]
  if not evaluations:
    raise SystemExit(f"{directory}: no Connect Four evaluation in its metrics.jsonl")
  last, final = rows[-1], evaluations[-1]
  recent = [r for r in evaluations if r["time"] >= final["time"] - 60 * last_minutes]
  errors = lambda chosen: {  # noqa: E731
      kind: {name: round(100 * sum(r[f"{kind}/{name}"] for r in chosen) / len(chosen), 2)
             for name in SETS} for kind in KINDS}
  return dict(steps=last["step"], positions=last["positions"], updates=last.get("updates"),
              minutes=round(last["time"] / 60, 2),
              positions_per_s_overall=round(last["positions"] / last["time"], 1),
              final=errors([final]), recent=errors(recent), recent_evaluations=len(recent))


def budget_errors(directory: Path, budgets: list[int]) -> dict:
  """The newest checkpoint's search errors (in %) at each number of simulations."""
  import jax

  from jaxsearch.app import evaluate, training
  trainer, params = training.load_trained(directory)
  sets = {name: evaluate.load_connect4_set(name) for name in SETS}
  found = {}
  for simulations in budgets:
    agent = evaluate.search_act_fn(trainer.evaluation_search(simulations), params)
    found[simulations] = {
        name: round(100 * evaluate.connect4_error_rate(agent, jax.random.PRNGKey(1), s), 2)
        for name, s in sets.items()}
  return found


def plot(runs: dict[str, Path], png: Path) -> None:
  """Errors on Test_L3_R1 against minutes: the network's (left) and the search's (right)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  from jaxsearch.train.metrics import read_metrics
  figure, axes = plt.subplots(1, 2, figsize=(11, 4))
  for label, directory in runs.items():
    evaluations = [r for r in read_metrics(directory / "metrics.jsonl")
                   if f"net_error/{SETS[0]}" in r]
    minutes = [r["time"] / 60 for r in evaluations]
    for axis, kind in zip(axes, KINDS):
      axis.plot(minutes, [100 * r[f"{kind}/{SETS[0]}"] for r in evaluations], marker=".",
                label=label)
  for axis, title in zip(axes, ("raw network (argmax of its policy)", "search")):
    axis.set_title(f"{title}: {SETS[0]}")
    axis.set_xlabel("minutes")
    axis.set_ylabel("errors, %")
    axis.grid(alpha=0.3)
  axes[0].legend(fontsize=8)
  figure.tight_layout()
  figure.savefig(png, dpi=90)


def _run(text: str) -> tuple[str, Path]:
  label, sep, directory = text.partition("=")
  if not sep or not label:
    raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=DIR")
  if not (Path(directory) / "metrics.jsonl").is_file():
    raise argparse.ArgumentTypeError(f"{directory}: no metrics.jsonl there")
  return label, Path(directory)


def _budgets(text: str) -> list[int]:
  try:
    budgets = [int(part) for part in text.split(",")]
  except ValueError:
    budgets = []
  if not budgets or min(budgets) < 1:
    raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers, e.g. 16,32,64")
  return budgets


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("runs", nargs="+", type=_run, metavar="LABEL=DIR")
  parser.add_argument("--last-minutes", type=float, default=10.0)
  parser.add_argument("--plot", type=Path, default=None, metavar="PNG")
  parser.add_argument("--budgets", type=_budgets, default=None, metavar="S,S,...")
  args = parser.parse_args(argv)
  runs = dict(args.runs)
  summary = {label: summarise(directory, args.last_minutes)
             for label, directory in runs.items()}
  if args.budgets:
    for label, directory in runs.items():
      summary[label]["search_error_by_simulations"] = budget_errors(directory, args.budgets)
  if args.plot:
    plot(runs, args.plot)
  print(json.dumps(dict(runs=summary, plot=str(args.plot) if args.plot else None)))
  return 0


if __name__ == "__main__":
  sys.exit(main())
