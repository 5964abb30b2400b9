"""Which rule should grow the solver's Wordle trees by default: end to end, over seeds.

Solves Wordle with a fixed first guess (``--first``, default ``tarse``: 158 feedback
sub-problems as one batch of trees) as ``jaxsearch solve wordle --first tarse`` does — the
same defaults, the exact extraction, the certificates with their exact search — once per
rule and seed, and prints one JSON line: per run the search seconds and simulations at which
the trees' achievable bound first reached ``--target`` (the optimum given the first guess,
11219 for ``tarse``), that bound at the end of the search, the final total (after the
certificates' exact search), whether it is proven, and the wall seconds of the
whole solve; per rule the median over seeds.

Rules (the sub-problem trees' selection rule; the rest of the solver is the same):

  optimistic   the solver's default, the proof rule (best optimistic bound first)
  hoeffding    AVTS's Hoeffding rule, p = 0.999 (no proof-directed chunks)
  thompson_avts, laplace, puct_value_prior: as in ``scripts/bench_rules_wordle_full.py``

    python scripts/bench_wordle_default_rule.py --rules optimistic,hoeffding --seeds 0,1,2
    python scripts/bench_wordle_default_rule.py --answers A --guesses G --first W --target T

Run it with nothing else on the machine: the search budget is in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


from bench_rules_wordle_full import RULES, rule_options  # noqa: E402
from jaxsearch import solve as solve_lib  # noqa: E402
from jaxsearch.games import wordle  # noqa: E402


def first_reached(history, target: float) -> tuple:
  """``(simulations, seconds)`` of the first chunk whose achievable bound is at most
  ``target`` (``(None, None)`` if none is)."""
  for simulations, seconds, bound, _ in history:
    if bound <= target:
      return simulations, round(seconds, 1)
  return None, None


def run(puzzle, first: str, rule: str, seed: int, args) -> dict:
  started = time.perf_counter()
  result = solve_lib.solve_puzzle(
      puzzle, first=first, seconds=args.seconds, chunk=4, max_nodes=args.nodes,
      num_slots=64, bound_slots=0, seed=seed, certify_seconds=args.certify_seconds,
      **rule_options(rule, puzzle.game.value_range))
  simulations, seconds = first_reached(result.history, args.target)
  return {"rule": rule, "seed": seed, "reached_in_search": simulations is not None,
          "simulations_to_target": simulations, "search_seconds_to_target": seconds,
          "simulations": result.simulations,
          "search_bound": float(result.history[-1][2]) if result.history else None,
          "total": int(result.evaluation.total_guesses),
          "proven_given_first": bool(result.proven_given_first),
          "wall_seconds": round(time.perf_counter() - started, 1),
          "phases": result.phases}


def summary(runs: list[dict]) -> dict:
  """Per rule: runs that reached the target in the search, their median seconds and
  simulations to it, median wall seconds, totals and proofs."""
  rules = {}
  for rule in dict.fromkeys(r["rule"] for r in runs):
    mine = [r for r in runs if r["rule"] == rule]
    reached = [r for r in mine if r["reached_in_search"]]
    rules[rule] = {
        "runs": len(mine), "reached_in_search": len(reached),
        "median_search_seconds_to_target": (statistics.median(
            r["search_seconds_to_target"] for r in reached) if reached else None),
        "median_simulations_to_target": (statistics.median(
            r["simulations_to_target"] for r in reached) if reached else None),
        "median_wall_seconds": statistics.median(r["wall_seconds"] for r in mine),
        "search_bounds": [r["search_bound"] for r in mine],
        "totals": [r["total"] for r in mine],
        "proven_given_first": sum(r["proven_given_first"] for r in mine)}
  return rules


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rules", default="optimistic,hoeffding")
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--first", default="tarse")
  parser.add_argument("--target", type=int, default=11219)
  parser.add_argument("--seconds", type=float, default=60.0,
                      help="search seconds per run (default 60, the command's)")
  parser.add_argument("--certify-seconds", type=float, default=600.0)
  parser.add_argument("--nodes", type=int, default=120_000)
  parser.add_argument("--answers", default=None, help="answer list (default: the shipped one)")
  parser.add_argument("--guesses", default=None, help="allowed guesses (default: the shipped)")
  args = parser.parse_args(argv)
  names = [r for r in args.rules.split(",") if r]
  unknown = set(names) - set(RULES)
  if unknown:
    parser.error(f"unknown rules {sorted(unknown)}; choose from {', '.join(RULES)}")
  seeds = [int(s) for s in args.seeds.split(",") if s]
  answers, guesses = wordle.default_paths()
  answers, guesses = args.answers or answers, args.guesses or guesses
  puzzle = wordle.puzzle(answers, guesses)
  runs = []
  for seed in seeds:  # the rules alternate, so that a slower spell of the machine hits both
    for rule in names:
      runs.append(run(puzzle, args.first, rule, seed, args))
      print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
  print(json.dumps({"first": args.first, "target": args.target, "seconds": args.seconds,
                    "rules": summary(runs), "runs": runs}))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
