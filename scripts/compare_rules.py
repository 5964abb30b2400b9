"""Every selection rule of the library at equal estimator budgets.

Rules (``--rules``; estimator evaluations = nodes in the tree, the budget unit everywhere):
  uct               UCT, running-mean backup
  puct              PUCT, MuZero schedule, min-max Q, running-mean backup
  value_prior_puct  the AVTS article's PUCT (prior = softmax q̂1) on AVTS's Bellman backup
  hoeffding         Hoeffding bound on q̂3, AVTS's Bellman backup
  laplace           q̂3 + δ/(n+1), AVTS's Bellman backup
  thompson_avts     Thompson sampling on debiased q̂3 (``js.policies.avts``)
  pibar             Grill et al.'s SEARCH: sample from π̄ at every node, running mean
  entropy_puct      entropy-guided PUCT (full subtree entropy, π̂ playouts), running mean
  gumbel            Gumbel MuZero root (Sequential Halving) + deterministic interior rule

Domains (``--domains``):
  garnet      random MDPs with exact Q* (``jaxsearch.games.garnet``), estimator ``Q* + bias + noise``
              (as ``scripts/bench_sample_efficiency.py``): regret ``V* − Q*(root, action)``
              and the fraction of optimal root actions at each budget, and the evaluations
              until the recommendation is optimal for good (median over MDPs).
  tictactoe   decisive positions with exact minimax values (``scripts/ttt_sweep.py``).
  connect4    ``Test_L3_R1`` end-game positions with perfect-play scores (an error is
              ``sign(S_chosen) < max legal sign(S)``).
              Both board games use one fixed estimator for every rule: q̂1(a) = reward + one
              random playout after each legal move, value = max q̂1, uniform prior.
  mastermind  3 pegs × 4 colours (64 secrets, optimal 206 guesses in total): the certified
              achievable bound after each evaluation and the evaluations until it reaches the
              optimum. Only the Bellman-backup (AVTS) rules keep an achievable bound; the
              running-mean rules have none and are reported as not applicable.

Anytime rules run one simulation per call on continued trees in one jitted scan (the
machinery of ``bench_sample_efficiency.py``), so one compile gives the recommendation after
every evaluation. Gumbel's Sequential Halving plans its whole budget, so it runs one search per
budget instead (and has no "optimal for good" figure).

    python scripts/compare_rules.py --quick              # <= 5 min on a 2-core CPU
    python scripts/compare_rules.py                      # the full run (longer)

Writes ``--out`` (JSON), ``--plot`` (PNG) and ``--markdown`` (the README table).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

import jaxsearch as js  # noqa: E402
from bench_sample_efficiency import (add_garnet_arguments, garnet_from_arguments,  # noqa: E402
                                     settle_evaluations, summary, trace)
from jaxsearch.games import connect_four, mastermind, tictactoe  # noqa: E402

RULES = ("uct", "puct", "value_prior_puct", "hoeffding", "laplace", "thompson_avts", "pibar",
         "entropy_puct", "gumbel")
BELLMAN = ("value_prior_puct", "hoeffding", "laplace", "thompson_avts")
DOMAINS = ("garnet", "tictactoe", "connect4", "mastermind")


def make_search(rule: str, game, estimator, num_simulations: int, max_nodes: int,
                board_game: bool = False, max_depth=None):
  """A :class:`jaxsearch.policies.Search` for ``rule`` (see the module docstring).
  ``max_depth`` is needed for games without ``max_length`` (the default would be the
  per-call simulation count, 1 in the anytime traces)."""
  sel = js.selection
  common = dict(num_simulations=num_simulations, max_nodes=max_nodes, max_depth=max_depth)
  if rule == "uct":
    return js.policies.uct(game, estimator, **common)
  if rule == "puct":
    return js.policies.puct(game, estimator, **common)
  if rule == "value_prior_puct":
    return js.policies.avts(game, estimator, selection=sel.value_prior_puct(), **common)
  if rule == "hoeffding":
    return js.policies.avts(game, estimator, selection=sel.hoeffding(game.value_range),
                            **common)
  if rule == "laplace":
    return js.policies.avts(game, estimator, selection=sel.laplace(0.1), **common)
  if rule == "thompson_avts":
    return js.policies.avts(game, estimator, **common)
  if rule == "pibar":
    return js.policies.pibar(game, estimator, **common)
  if rule == "entropy_puct":
    return js.policies.entropy_puct(game, estimator, **common)
  if rule == "gumbel":
    # c_scale = 1 for board games (Danihelka et al.), mctx's 0.1 otherwise.
    return js.policies.gumbel(game, estimator, c_scale=1.0 if board_game else 0.1, **common)
  raise ValueError(f"unknown rule {rule!r}")


def actions_at_budgets(rule, game, estimator, roots, budgets, key, board_game=False):
  """``(actions i32[len(budgets), M], trace or None)``: the recommended root action with at
  most ``b`` evaluations for each budget ``b``; the anytime trace ``(actions, evaluations)``
  ``[T, M]`` for every rule but Gumbel."""
  top = max(budgets)
  if rule == "gumbel":
    rows = []
    for b in budgets:
      search = make_search(rule, game, estimator, max(1, b - 1), b + 1, board_game)
      rows.append(np.asarray(jax.jit(search)(None, jax.random.fold_in(key, b), roots).action))
    return np.stack(rows), None
  per_step = game.num_outcomes if rule in BELLMAN else 1
  search = make_search(rule, game, estimator, 1, top + per_step + 1, board_game)
  steps = top // per_step + 1
  actions, evaluations = map(np.asarray, trace(search, roots, key, steps))
  picked = []
  for b in budgets:
    within = evaluations <= b  # [T, M]; evaluations grow with the step
    last = np.maximum(within.sum(axis=0) - 1, 0)
    picked.append(actions[last, np.arange(actions.shape[1])])
  return np.stack(picked), (actions, evaluations)


def _rows_of(states, index):
  return jax.tree.map(lambda x: x[index], states)


# ---- domains ------------------------------------------------------------------------------

def run_garnet(args, rules, budgets):
  family, estimator, roots, q_root, optimal = garnet_from_arguments(args)
  v_root = q_root.max(axis=-1)
  result = {"settings": dict(mdps=args.mdps, states=args.states, actions=args.actions,
                             branching=args.branching, horizon=args.horizon,
                             bias_per_step=args.bias_per_step, noise=args.noise)}
  for rule in rules:
    start = time.perf_counter()
    picked, history = actions_at_budgets(rule, family.game, estimator, roots, budgets,
                                         jax.random.key(args.seed))
    regret = v_root[None, :] - q_root[np.arange(args.mdps)[None, :], np.maximum(picked, 0)]
    entry = {"regret": regret.mean(axis=1).round(4).tolist(),
             "optimal": optimal[np.arange(args.mdps)[None, :], np.maximum(picked, 0)
                                ].mean(axis=1).round(4).tolist()}
    if history is not None:
      entry["evaluations_to_optimal"] = summary(settle_evaluations(
          history[0], history[1], optimal, max(budgets)))
    entry["seconds"] = round(time.perf_counter() - start, 1)
    result[rule] = entry
    print(f"# garnet {rule}: {entry}", file=sys.stderr, flush=True)
  return result


def _board_estimator(game):
  return js.estimators.rollout(game, 1, action_values=True)


def run_board(name, game, states, optimal, args, rules, budgets):
  estimator = _board_estimator(game)
  result = {"positions": int(optimal.shape[0])}
  for rule in rules:
    start = time.perf_counter()
    picked, _ = actions_at_budgets(rule, game, estimator, states, budgets,
                                   jax.random.key(args.seed), board_game=True)
    good = optimal[np.arange(optimal.shape[0])[None, :], np.maximum(picked, 0)] & (picked >= 0)
    result[rule] = {"optimal": good.mean(axis=1).round(4).tolist(),
                    "seconds": round(time.perf_counter() - start, 1)}
    print(f"# {name} {rule}: {result[rule]}", file=sys.stderr, flush=True)
  return result


def tictactoe_positions(count, seed):
  from ttt_sweep import decisive_positions
  states, qs = decisive_positions()
  rng = np.random.default_rng(seed)
  index = np.sort(rng.choice(qs.shape[0], size=min(count, qs.shape[0]), replace=False))
  qs = qs[index]
  legal = np.isfinite(qs)
  best = np.where(legal, qs, -np.inf).max(axis=1, keepdims=True)
  return _rows_of(states, index), legal & (qs >= best)


def connect4_positions(count, seed, data_dir=None):
  try:
    from jaxsearch.app.evaluate import load_connect4_set
    positions = load_connect4_set("Test_L3_R1", data_dir)
    states, scores = positions.states, np.asarray(positions.scores)
  except ImportError:  # the training package is optional here
    from pathlib import Path
    path = Path(data_dir or Path(HERE).parents[1] / "shared" / "data" / "connect4")
    moves, scores = connect_four.load_test_positions(path / "Test_L3_R1.moves")
    states = connect_four.states_from_moves(moves)
  rng = np.random.default_rng(seed)
  index = np.sort(rng.choice(scores.shape[0], size=min(count, scores.shape[0]), replace=False))
  scores = scores[index]
  legal = scores != connect_four.FULL_COLUMN_SCORE
  signs = np.where(legal, np.sign(scores), -2)
  return _rows_of(states, index), legal & (signs >= signs.max(axis=1, keepdims=True))


def run_mastermind(args, rules, budget):
  m = mastermind.make(3, 4)
  optimum = -206.0 / 64.0  # docs/algorithms.md §6: (3 pegs, 4 colours) -> 206 guesses in total
  roots = jax.tree.map(lambda x: x[None], m.game.init(jax.random.key(0)))
  result = {"pegs": 3, "colours": 4, "optimal_total": 206, "budget": budget}
  for rule in rules:
    if rule not in BELLMAN:
      result[rule] = {"applicable": False,
                      "why": "running-mean backup: no achievable bound to certify"}
      continue
    start = time.perf_counter()
    search = make_search(rule, m.game, m.estimator, 1, budget + m.game.num_outcomes + 1,
                         max_depth=16)
    steps = budget // m.game.num_outcomes + 1
    _, evaluations, bounds = map(np.asarray, trace(search, roots, jax.random.key(args.seed),
                                                   steps, record=lambda out: out.root_bound))
    evaluations, bounds = evaluations[:, 0], bounds[:, 0]
    reached = np.flatnonzero((bounds >= optimum - 1e-4) & (evaluations <= budget))
    result[rule] = {
        "applicable": True,
        "evaluations_to_optimal_bound": int(evaluations[reached[0]]) if len(reached) else None,
        "final_bound_total": round(float(-bounds[evaluations <= budget][-1] * 64), 3),
        "seconds": round(time.perf_counter() - start, 1)}
    print(f"# mastermind {rule}: {result[rule]}", file=sys.stderr, flush=True)
  return result


# ---- output -------------------------------------------------------------------------------

def markdown(report) -> str:
  budgets = report["budgets"]
  lines = []
  cols = ["rule"]
  if "garnet" in report:
    cols += [f"Garnet regret @{budgets[0]}/@{budgets[-1]}", "Garnet evals to optimal (median)"]
  if "tictactoe" in report:
    cols += [f"TTT optimal @{budgets[0]}/@{budgets[-1]}"]
  if "connect4" in report:
    cols += [f"C4 L3R1 optimal @{budgets[0]}/@{budgets[-1]}"]
  if "mastermind" in report:
    cols += ["Mastermind 3×4: evals to optimal bound"]
  lines.append("| " + " | ".join(cols) + " |")
  lines.append("|" + "---|" * len(cols))
  for rule in report["rules"]:
    row = [rule + (" (Bellman)" if rule in BELLMAN else "")]
    if "garnet" in report:
      g = report["garnet"][rule]
      row.append(f"{g['regret'][0]:.3f} / {g['regret'][-1]:.3f}")
      ev = g.get("evaluations_to_optimal")
      if ev is None:
        row.append("— (not anytime)")
      else:
        med = "> budget" if ev["median"] is None else f"{ev['median']:.0f}"
        row.append(f"{med} ({ev['solved'] * 100:.0f}% settled)")
    for name in ("tictactoe", "connect4"):
      if name in report:
        o = report[name][rule]["optimal"]
        row.append(f"{o[0] * 100:.0f}% / {o[-1] * 100:.0f}%")
    if "mastermind" in report:
      mm = report["mastermind"][rule]
      if not mm["applicable"]:
        row.append("n/a (no bound without the Bellman backup)")
      else:
        e = mm["evaluations_to_optimal_bound"]
        row.append(f"{e}" if e is not None else
                   f"not within {report['mastermind']['budget']} (bound {mm['final_bound_total']})")
    lines.append("| " + " | ".join(row) + " |")
  return "\n".join(lines)


def plot(report, path):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  budgets = report["budgets"]
  panels = [(name, key, label) for name, key, label in (
      ("garnet", "regret", "Garnet: mean regret of the root action"),
      ("tictactoe", "optimal", "tic-tac-toe: fraction of optimal moves"),
      ("connect4", "optimal", "Connect Four L3_R1: fraction of optimal moves"))
      if name in report]
  if not panels:
    return
  fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
  for ax, (name, key, label) in zip(axes[0], panels):
    for rule in report["rules"]:
      ax.plot(budgets, report[name][rule][key], marker="o", ms=3,
              linestyle="--" if rule in BELLMAN else "-", label=rule)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("estimator evaluations")
    ax.set_title(label, fontsize=10)
    ax.grid(alpha=0.3)
  axes[0][0].legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="small samples, budgets 16, 64, 256 (517 s on a 2-core CPU, "
                           "mostly compiling)")
  parser.add_argument("--rules", default=",".join(RULES))
  parser.add_argument("--domains", default=",".join(DOMAINS))
  parser.add_argument("--budgets", default=None, help="comma-separated evaluation budgets")
  add_garnet_arguments(parser, mdps=64, actions=16)
  parser.add_argument("--ttt-positions", type=int, default=256)
  parser.add_argument("--c4-positions", type=int, default=128)
  parser.add_argument("--mastermind-budget", type=int, default=4096)
  parser.add_argument("--connect4-dir", default=None)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--out", default="compare_rules.json")
  parser.add_argument("--plot", default="compare_rules.png")
  parser.add_argument("--markdown", default="compare_rules.md")
  parser.add_argument("--merge", default=None,
                      help="comma-separated JSON reports of runs over separate domains (same "
                           "rules and budgets): write their union instead of running")
  args = parser.parse_args(argv)
  if args.merge:
    report = {}
    for path in args.merge.split(","):
      with open(path) as f:
        part = json.load(f)
      for key, value in part.items():
        if key == "seconds":
          report["seconds"] = round(report.get("seconds", 0.0) + value, 1)
        else:
          report.setdefault(key, value)
    _write(report, args)
    return
  if args.quick:
    args.mdps, args.ttt_positions, args.c4_positions = 16, 32, 16
    args.mastermind_budget = 1024
    budgets = [16, 64, 256]
  else:
    budgets = [16, 32, 64, 128, 256, 512, 1024]
  if args.budgets:
    budgets = [int(b) for b in args.budgets.split(",")]
  rules = [r for r in args.rules.split(",") if r]
  domains = [d for d in args.domains.split(",") if d]
  for r in rules:
    if r not in RULES:
      raise SystemExit(f"unknown rule {r!r}; choose from {RULES}")
  start = time.perf_counter()
  report = {"bench": "compare_rules", "quick": args.quick, "budgets": budgets, "rules": rules,
            "seed": args.seed, "device": jax.devices()[0].platform}
  if "garnet" in domains:
    report["garnet"] = run_garnet(args, rules, budgets)
  if "tictactoe" in domains:
    states, optimal = tictactoe_positions(args.ttt_positions, args.seed)
    report["tictactoe"] = run_board("tictactoe", tictactoe.GAME, states, optimal, args, rules,
                                    budgets)
  if "connect4" in domains:
    states, optimal = connect4_positions(args.c4_positions, args.seed, args.connect4_dir)
    report["connect4"] = run_board("connect4", connect_four.GAME, states, optimal, args, rules,
                                   budgets)
  if "mastermind" in domains:
    report["mastermind"] = run_mastermind(args, rules, args.mastermind_budget)
  report["seconds"] = round(time.perf_counter() - start, 1)
  _write(report, args)


def _write(report, args):
  table = markdown(report)
  if args.out:
    with open(args.out, "w") as f:
      json.dump(report, f, indent=1)
  if args.markdown:
    with open(args.markdown, "w") as f:
      f.write(table + "\n")
  if args.plot:
    plot(report, args.plot)
  print(table)
  print(json.dumps({"seconds": report["seconds"], "out": args.out, "plot": args.plot}))


if __name__ == "__main__":
  main()
