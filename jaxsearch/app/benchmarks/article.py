"""``jaxsearch bench article``: the AVTS article's rule comparison under the article's own
protocol.

One tree from the empty board, the rule under test at every node (the root included), the
article's iteration (every state under the chosen actions, every existing feedback subtree
visited, leaves expanded; new nodes evaluated one batch per level) and the article's bound
(the tree's own upper bound on the optimal total, unexplored states charged pessimistically),
recorded after every iteration: :mod:`jaxsearch.games.avts_article`. Nothing of the solver.

Rules (the article's constants): thompson_avts, laplace (δ = 0.1), puct_value_prior
(c = 1, softmax(q̂1) prior), hoeffding (p = 0.999 on [−6, 0]). The solver's proof rule is not
one of them: it ranks guesses by admissible bounds the article's tree does not carry and
activates guesses out of the estimator's order, which is not the article's widening.

Per rule and seed: iterations, estimator evaluations and seconds until the bound reaches
``--target``; every ``--policy-every`` iterations the exported policy's exact total (the
tree's best choice by q̂3, the greedy guess below it). Prints one JSON line with per-rule
medians and ``ratio_puct_over_thompson`` (median iterations; ``..._at_least`` where PUCT did
not reach the target). ``--plot F`` draws the bound per game against iterations, one line per
rule (every seed), as the article's graph.

The project's solver departs from this protocol in four ways, each a switch here so that
its effect on the rules' ordering can be measured alone or combined: ``--cut 64`` (guesses
per node), ``--one-path`` (an iteration is one path), ``--root thompson --root-live 2`` (the
solver's root: Thompson-AVTS over first guesses whatever the rule, two live first guesses)
and ``--figure exported`` (the exported policy's exact total must reach the target, not the
tree's bound).

    jaxsearch bench article --game mastermind --pegs 4 --colours 6 --seeds 0,1,2
    jaxsearch bench article --game wordle --subset 200 --seeds 0,1
    jaxsearch bench article --game wordle --cap-iterations 3   # full lists: timing
    jaxsearch bench article --game wordle --subset 300 --cut 64 --one-path \
        --root thompson --root-live 2 --figure exported   # the solver's four departures
    jaxsearch bench article --quick      # Mastermind 3×3, 300 iterations at most: a smoke run
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np

from jaxsearch.app import timing
from jaxsearch.games import avts_article as aa
from jaxsearch.games import avts_article_node as an

EXACT_UP_TO = 300  # secrets: Wordle 300/14855 takes ~11 s exactly, 600 over 5 min
KNOWN_OPTIMA = {("mastermind", 4, 6): 5625, ("mastermind", 4, 3): 246,
                ("mastermind", 3, 4): 206, ("wordle", 3158, 14855): 11219}


def problem_from(args) -> tuple[an.Problem, int | None]:
  """The instance and its known optimal total (or ``None``)."""
  if args.game == "mastermind":
    problem = an.Problem.mastermind(args.pegs, args.colours)
    return problem, KNOWN_OPTIMA.get(("mastermind", args.pegs, args.colours))
  from jaxsearch.games import wordle
  answers_path, guesses_path = wordle.default_paths()
  answers = wordle.load_words(args.answers or answers_path)
  guesses = wordle.load_words(args.guesses or guesses_path)
  if args.subset:
    if not 2 <= args.subset <= len(answers):
      raise ValueError(f"--subset must be in [2, {len(answers)}], got {args.subset}")
    pick = np.random.default_rng(args.subset_seed).choice(len(answers), args.subset,
                                                          replace=False)
    answers = [answers[i] for i in sorted(pick)]
  if args.guesses_from_answers:
    guesses = list(answers)
  problem = an.Problem.wordle(answers, guesses)
  return problem, KNOWN_OPTIMA.get(("wordle", len(answers), len(guesses)))


def exact_optimum(problem: an.Problem) -> int:
  """The exact optimal total by the project's exhaustive solver (small instances)."""
  from jaxsearch.guessing.exact import ExactBounds, ExactSolver
  bounds = ExactBounds.build(problem.table, problem.num_codes, problem.solved_code,
                             guess_of_secret=problem.guess_of_secret)
  return ExactSolver(bounds).optimum(np.arange(problem.num_secrets))


def run_one(problem, rule, seed, target, args) -> dict:
  """One rule and seed until the bound reaches ``target`` or a cap; its curve."""
  config = aa.Config(rule=rule, variance=args.variance, child_bound=args.child_bound,
                     seed=seed, cut=args.cut, one_path=args.one_path, root=args.root,
                     root_live=args.root_live)
  every = args.policy_every or (1 if args.figure == "exported" else 0)
  curve, memo, reached = [], {}, False
  with timing.Stopwatch() as watch:
    tree = aa.ArticleTree(problem, config)
    while tree.iterations < args.cap_iterations and watch.elapsed <= args.cap_seconds:
      tree.iterate()
      point = {"iteration": tree.iterations, "bound": round(tree.bound_total(), 4),
               "evaluations": tree.evaluations, "visited": tree.visited,
               "seconds": round(watch.elapsed, 2)}
      if every and tree.iterations % every == 0:
        point["policy"] = tree.policy_total(memo)
      curve.append(point)
      reached = reached_target(point, target, args.figure)
      if args.verbose:
        print(json.dumps({"rule": rule, "seed": seed, **point}), file=sys.stderr, flush=True)
      if reached:
        break
  last = curve[-1] if curve else {"iteration": 0, "bound": tree.bound_total(),
                                  "evaluations": tree.evaluations, "seconds": 0.0}
  return {"reached": reached, "iterations": last["iteration"],
          "evaluations": last["evaluations"], "seconds": last["seconds"],
          "bound": last["bound"], "policy": tree.policy_total(memo), "nodes": tree.nodes,
          "curve": curve}


def reached_target(point: dict, target, figure: str) -> bool:
  """Whether a curve's point has its figure (the tree's ``bound``, or the ``exported``
  policy's exact total where it was evaluated) at the target."""
  value = point.get("policy") if figure == "exported" else point["bound"]
  return target is not None and value is not None and value <= target + 1e-6


def summarise(runs: dict, rules) -> dict:
  """Per rule: reached count and the median iterations / evaluations (unreached: ∞)."""
  out = {}
  for rule in rules:
    found = runs[rule]
    its = [r["iterations"] if r["reached"] else float("inf") for r in found]
    evs = [r["evaluations"] if r["reached"] else float("inf") for r in found]
    out[rule] = {"reached": sum(r["reached"] for r in found), "seeds": len(found),
                 "median_iterations": _finite(statistics.median_low(its)),
                 "median_evaluations": _finite(statistics.median_low(evs)),
                 "iterations": [r["iterations"] for r in found],
                 "evaluations": [r["evaluations"] for r in found],
                 "reached_by_seed": [r["reached"] for r in found],
                 "final_bound": [r["bound"] for r in found],
                 "final_policy": [r["policy"] for r in found],
                 "seconds": [r["seconds"] for r in found]}
  return out


def _finite(x):
  return None if x == float("inf") else x


def thompson_first(runs: dict, rules) -> dict:
  """Seeds on which Thompson reached the target in fewer iterations than every other rule."""
  if "thompson_avts" not in runs:
    return {}
  wins = 0
  for k, mine in enumerate(runs["thompson_avts"]):
    if not mine["reached"]:
      continue
    wins += all((not runs[r][k]["reached"]) or runs[r][k]["iterations"] > mine["iterations"]
                for r in rules if r != "thompson_avts")
  return {"thompson_first_seeds": wins}


def ratio(summary: dict) -> dict:
  """PUCT's median iterations over Thompson's (a lower bound where PUCT did not reach)."""
  if "puct_value_prior" not in summary or "thompson_avts" not in summary:
    return {}
  fast, slow = summary["thompson_avts"], summary["puct_value_prior"]
  if fast["median_iterations"] is None:
    return {}
  if slow["median_iterations"] is not None:
    return {"ratio_puct_over_thompson": round(slow["median_iterations"]
                                              / fast["median_iterations"], 2)}
  return {"ratio_puct_over_thompson_at_least": round(
      statistics.median_low(slow["iterations"]) / fast["median_iterations"], 2)}


def plot(runs: dict, target, num_secrets: int, path: str, title: str,
         measured: str = "bound") -> None:
  """The figure (the tree's bound, or the exported policy's total) per game against
  iterations, one line per rule and seed, to ``path``."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  figure, axis = plt.subplots(figsize=(8, 4.5))
  colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
  key = "policy" if measured == "exported" else "bound"
  ends = []
  for k, (rule, found) in enumerate(runs.items()):
    for s, run in enumerate(found):
      points = [p for p in run["curve"] if key in p]
      xs = [p["iteration"] for p in points]
      ys = [p[key] / num_secrets for p in points]
      ends += [p[key] for p in points[-1:]]
      axis.plot(xs, ys, color=colours[k % len(colours)], linewidth=1.2,
                label=rule if s == 0 else None)
  if target is not None:
    axis.axhline(target / num_secrets, color="grey", linestyle="--", linewidth=1)
    # The first iterations' bounds (every part charged its size) dwarf the end game: show
    # from the optimum to a little above the worst bound any run ended with.
    axis.set_ylim(target / num_secrets * 0.995,
                  max(ends + [target * 1.02]) / num_secrets * 1.15)
  axis.set_xscale("log")
  axis.set_yscale("log")
  axis.set_xlabel("iterations")
  axis.set_ylabel("upper bound on guesses per game" if key == "bound" else
                  "exported policy's guesses per game")
  axis.legend(frameon=False)
  axis.set_title(title)
  figure.tight_layout()
  figure.savefig(path, dpi=110)


def build_parser(prog: str = "jaxsearch bench article"):
  from jaxsearch.cli.common import ArgumentParser
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--game", choices=("mastermind", "wordle"), default="mastermind")
  parser.add_argument("--pegs", type=int, default=4)
  parser.add_argument("--colours", type=int, default=6)
  parser.add_argument("--answers", default=None, help="Wordle answers (default: shipped)")
  parser.add_argument("--guesses", default=None, help="Wordle guesses (default: shipped)")
  parser.add_argument("--subset", type=int, default=0,
                      help="Wordle: this many answers drawn at random (0: all)")
  parser.add_argument("--subset-seed", type=int, default=0)
  parser.add_argument("--guesses-from-answers", action="store_true",
                      help="Wordle: the answers are the only guesses")
  parser.add_argument("--rules", default=",".join(r.value for r in aa.Rule))
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--variance", default="avts",
                      choices=[v.value for v in an.VARIANCES])
  parser.add_argument("--child-bound", default="best_value",
                      choices=[c.value for c in aa.ChildBound])
  parser.add_argument("--cut", type=int, default=0,
                      help="at most this many guesses per node (0: none, the article's)")
  parser.add_argument("--one-path", action="store_true",
                      help="an iteration is one path (an engine's simulation), not the "
                           "article's visit of every existing subtree")
  parser.add_argument("--root", default="article", choices=[r.value for r in aa.RootRule],
                      help="the root's rule: the rule under test (article) or Thompson-AVTS "
                           "whatever the rule, which then acts below the root only (the "
                           "solver's root)")
  parser.add_argument("--root-live", type=int, default=0,
                      help="at most this many first guesses live, the others retired (0: "
                           "all live, the article's; the solver's: 2)")
  parser.add_argument("--figure", default="bound", choices=("bound", "exported"),
                      help="what must reach the target: the tree's own bound (the "
                           "article's) or the exported policy's exact total, the greedy guess "
                           "below the tree (the solver's; evaluated every --policy-every "
                           "iterations, every one if 0)")
  parser.add_argument("--target", type=int, default=None,
                      help="optimal total (default: the known optimum; else, up to "
                           f"{EXACT_UP_TO} secrets, the exhaustive solver's)")
  parser.add_argument("--cap-iterations", type=int, default=100_000)
  parser.add_argument("--cap-seconds", type=float, default=600.0,
                      help="wall seconds per rule and seed")
  parser.add_argument("--policy-every", type=int, default=0,
                      help="exported policy's exact total every k iterations (0: at the end)")
  parser.add_argument("--plot", default=None)
  parser.add_argument("--verbose", action="store_true", help="every iteration to stderr")
  parser.add_argument("--quick", action="store_true",
                      help="Mastermind 3×3, seeds 0 and 1, 300 iterations at most: a smoke run")
  return parser


def main(argv=None, prog: str = "jaxsearch bench article") -> int:
  """Runs the experiment with the command line ``argv``; returns the exit status."""
  parser = build_parser(prog)
  args = parser.parse_args(argv)
  if args.quick:
    args.game, args.pegs, args.colours, args.seeds = "mastermind", 3, 3, "0,1"
    args.cap_iterations = min(args.cap_iterations, 300)
  rules = [r for r in args.rules.split(",") if r]
  unknown = set(rules) - {r.value for r in aa.Rule}
  if unknown:
    parser.error(f"--rules: unknown {sorted(unknown)}; choose from "
                 f"{', '.join(r.value for r in aa.Rule)}")
  if args.cut < 0:
    parser.error(f"--cut must be 0 (no cut) or a positive number of guesses, got {args.cut}")
  if args.root_live < 0 or args.root_live == 1:
    parser.error(f"--root-live must be 0 (every first guess live) or at least 2, "
                 f"got {args.root_live}")
  try:
    seeds = [int(s) for s in args.seeds.split(",") if s]
  except ValueError:
    parser.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
  with timing.Stopwatch() as setup:
    try:
      problem, target = problem_from(args)
    except ValueError as error:
      parser.error(str(error))
    if args.target is not None:
      target = args.target
    elif target is None and problem.num_secrets <= EXACT_UP_TO:
      target = exact_optimum(problem)
    elif target is None:
      parser.error(f"--target: no known optimum for {problem.name}; give one (the runs "
                   f"stop at their caps otherwise)")
  runs = {rule: [run_one(problem, rule, seed, target, args) for seed in seeds]
          for rule in rules}
  summary = summarise(runs, rules)
  if args.plot:
    plot(runs, target, problem.num_secrets, args.plot,
         f"{problem.name} from the empty board ({args.variance} variance)", args.figure)
  timing.emit({"benchmark": "article", "instance": problem.name, "target": target,
               "variance": args.variance, "child_bound": args.child_bound, "cut": args.cut,
               "one_path": args.one_path, "root": args.root, "root_live": args.root_live,
               "figure": args.figure, "seeds": seeds,
               "setup_seconds": round(setup.seconds, 1),
               "cap_iterations": args.cap_iterations, "cap_seconds": args.cap_seconds,
               "rules": summary, **ratio(summary), **thompson_first(runs, rules)})
  return 0
