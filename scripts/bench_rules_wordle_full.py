"""The AVTS article's rule comparison at its own scale: Wordle from the empty board.

Seed 000 plays the whole game (3158 answers, 14,855 allowed guesses, no first word given)
and reports the iterations each selection rule needed before its policy was optimal:
Thompson 870, Laplace 17,735, PUCT 20,539, Hoeffding 22,954. Here each rule drives the
solver's search over first guesses (:mod:`jaxsearch.solve.root`: the first guess chosen by
Thompson sampling over debiased values with progressive widening, each visited first guess's
feedback sub-problems a batch of trees); only the rule inside the sub-problem trees differs:

  thompson_avts      Thompson sampling on q̂3 (AVTS's rule)
  laplace            q̂3 + δ/(n+1), δ = 0.1
  puct_value_prior   q̂3 + c·softmax(q̂1)·sqrt(N)/(1+n), c = 1
  hoeffding          q̂3 + (U−L)·sqrt(−ln p / 2)/sqrt(n+1), p = 0.999, [L, U] = [−6, 0]
  optimistic         the solver's proof rule (best optimistic bound first, outcome rule "gap")

Every ``--check-every`` seconds of search, the policy of the best first guess held (the
trees' policy completed by the game's greedy guess, :func:`jaxsearch.solve.extract`) is
evaluated exactly over the 3158 answers; a rule stops once that total reaches ``--target``
(11219, the optimum) or at its cap (``--cap-seconds`` of search). The checks' time is not
counted. Counts, at each check:

* ``iterations`` — the seed's unit: an iteration expands every feedback of the guess it
  chooses. In this engine a simulation in a sub-problem tree does exactly that at its leaf,
  so iterations are the simulations summed over every tree searched (root visits included
  through them);
* ``evaluations`` — estimator evaluations: tree nodes allocated (one evaluated state each);
* ``seconds`` — search wall time, compilation included.

Prints one JSON line: per rule whether and when it reached the target (iterations,
evaluations, seconds) or, if not, its best total and the ratio's lower bound, and
``ratio_puct_over_thompson`` (iterations; ``..._at_least`` where PUCT did not reach it).
``--plot F`` draws each rule's exact total against iterations and against seconds, as the
seed's graph.

    python scripts/bench_rules_wordle_full.py --rules thompson_avts,optimistic
    python scripts/bench_rules_wordle_full.py --cap-seconds 1800 --plot docs/rules_wordle_full.png
    python scripts/bench_rules_wordle_full.py --quick        # small lists: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


from jaxsearch import selection as sel  # noqa: E402
from jaxsearch.games import wordle  # noqa: E402
from jaxsearch.solve import SolveOptions  # noqa: E402
from jaxsearch.solve.finish import opening_policy  # noqa: E402
from jaxsearch.solve.root import RootOptions, RootSearch  # noqa: E402

RULES = ("thompson_avts", "laplace", "puct_value_prior", "hoeffding", "optimistic")


def rule_options(name: str, value_range) -> dict:
  """The solver options that make the sub-problem trees run rule ``name``."""
  if name == "optimistic":
    return {"selection": None, "proof_every": 1}
  selection = {"thompson_avts": None, "laplace": sel.laplace(0.1),
               "puct_value_prior": sel.value_prior_puct(1.0),
               "hoeffding": sel.hoeffding(value_range, 0.999)}[name]
  return {"selection": selection, "proof_every": 0}


def iterations(search: RootSearch) -> int:
  """Simulations summed over every tree searched so far (retired first guesses included)."""
  return int(sum(o.iterations for o in search.openings))


def run_rule(puzzle, name: str, args) -> dict:
  """One rule from the empty board until the target or its cap; its curve and figures."""
  options = SolveOptions.from_keywords(
      chunk=args.chunk, max_nodes=args.nodes, num_slots=args.slots or None, bound_slots=0,
      seed=args.seed, **rule_options(name, puzzle.game.value_range))
  search = RootSearch(puzzle, RootOptions(), options)
  curve, searched, best = [], 0.0, None
  while searched < args.cap_seconds:
    started = time.perf_counter()
    search.run(min(args.check_every, args.cap_seconds - searched))
    searched += time.perf_counter() - started
    opening = search.best_live()
    evaluation, _, _ = opening_policy(puzzle, opening.name, opening.outcomes,
                                       opening.loop.final_trees(), opening.rows)
    total = int(evaluation.total_guesses)
    best = total if best is None else min(best, total)
    curve.append({"iterations": iterations(search), "evaluations": search.evaluations(),
                  "seconds": round(searched, 1), "total": total, "first_guess": opening.name})
    print(json.dumps({"rule": name, **curve[-1]}), file=sys.stderr, flush=True)
    if total <= args.target:
      break
  reached = curve[-1]["total"] <= args.target
  last = curve[-1]
  return {"reached": reached, "best_total": best,
          "iterations": last["iterations"] if reached else None,
          "evaluations": last["evaluations"] if reached else None,
          "seconds": last["seconds"] if reached else None,
          "spent": {k: last[k] for k in ("iterations", "evaluations", "seconds")},
          "curve": curve}


def ratio(rules: dict, slow: str, fast: str) -> dict:
  """``slow``'s iterations over ``fast``'s: exact where both reached the target, a lower
  bound (``..._at_least``) where only ``fast`` did."""
  if slow not in rules or fast not in rules or not rules[fast]["reached"]:
    return {}
  key = f"ratio_{slow.split('_')[0]}_over_{fast.split('_')[0]}"
  if rules[slow]["reached"]:
    return {key: round(rules[slow]["iterations"] / rules[fast]["iterations"], 2)}
  return {key + "_at_least": round(rules[slow]["spent"]["iterations"]
                                   / rules[fast]["iterations"], 2)}


def plot(rules: dict, target: int, path: str, title: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
  for name, found in rules.items():
    curve = found["curve"]
    for axis, field in zip(axes, ("iterations", "seconds")):
      axis.plot([p[field] for p in curve], [p["total"] for p in curve], marker="o", label=name)
  for axis, label in zip(axes, ("iterations (expansions of every feedback of a guess)",
                                "search seconds")):
    axis.axhline(target, color="grey", linestyle="--", linewidth=1)
    axis.set_xlabel(label)
    axis.set_ylabel("the policy's exact total (guesses)")
  handles, labels = axes[0].get_legend_handles_labels()
  figure.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
  figure.suptitle(title)
  figure.tight_layout(rect=(0, 0.07, 1, 1))
  figure.savefig(path, dpi=110)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rules", default=",".join(RULES))
  parser.add_argument("--target", type=int, default=11219)
  parser.add_argument("--cap-seconds", type=float, default=1800.0,
                      help="search seconds per rule (default 1800)")
  parser.add_argument("--check-every", type=float, default=60.0,
                      help="search seconds between exact evaluations (default 60)")
  parser.add_argument("--chunk", type=int, default=4)
  parser.add_argument("--nodes", type=int, default=120_000)
  parser.add_argument("--slots", type=int, default=64, help="slots per node (0: all)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--answers", default=None, help="answer list (default: the shipped one)")
  parser.add_argument("--guesses", default=None, help="allowed guesses (default: the shipped)")
  parser.add_argument("--quick", action="store_true",
                      help="the answers as guesses, the first 300 answers: a smoke run")
  parser.add_argument("--plot", default=None)
  args = parser.parse_args(argv)
  names = [r for r in args.rules.split(",") if r]
  unknown = set(names) - set(RULES)
  if unknown:
    parser.error(f"unknown rules {sorted(unknown)}; choose from {', '.join(RULES)}")
  answers, guesses = wordle.default_paths()
  answers, guesses = args.answers or answers, args.guesses or guesses
  if args.quick:
    import tempfile
    words = wordle.load_words(answers)[:300]
    folder = tempfile.mkdtemp()
    answers = guesses = os.path.join(folder, "words.txt")
    with open(answers, "w") as out:
      out.write("\n".join(words) + "\n")
  puzzle = wordle.puzzle(answers, guesses)
  rules = {name: run_rule(puzzle, name, args) for name in names}
  title = (f"Wordle {len(puzzle.secrets)}/{len(puzzle.guess_names)} from the empty board: "
           f"each rule's exact total")
  if args.plot:
    plot(rules, args.target, args.plot, title)
  summary = {"answers": len(puzzle.secrets), "guesses": len(puzzle.guess_names),
             "target": args.target, "cap_seconds": args.cap_seconds,
             "rules": {name: {k: v for k, v in found.items() if k != "curve"}
                       for name, found in rules.items()},
             "curves": {name: found["curve"] for name, found in rules.items()},
             **ratio(rules, "puct_value_prior", "thompson_avts")}
  print(json.dumps(summary))
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
