"""``jaxsearch bench sample-efficiency``: selection rules' estimator evaluations to an optimum
on random MDPs (the AVTS article's comparison).

For each rule, one batched search runs over ``--mdps`` random Garnet MDPs (one tree each, one
compile), one simulation at a time. After every simulation we note each tree's recommended
root action and its number of estimator evaluations (= nodes in the tree: each node is one
evaluated state). Two figures per MDP:

* **settle** (the issue's metric): the number of evaluations at which the recommended action
  (``out.action``: the most visited, ties by q̂3) becomes optimal **and stays optimal** until
  the budget ends;
* **bound** (the AVTS article's metric): the number of evaluations at which the root's achievable
  bound ``out.root_bound`` — the exact value of a concrete policy the tree holds, initialised
  by the Garnet's pessimistic value (the policy "always action 0") — first reaches ``V*``
  (within 1e-5): the search then holds a provably optimal policy. The bound never decreases,
  so it stays there. Bellman-backup rules only (UCT keeps no bound).

MDPs where a figure is not reached within the budget count as unsolved (``inf``; quartiles are
taken with them in, ``null`` in the JSON when beyond the budget). For the Bellman-backup rules
the settle figure is also given for two other recommendations: ``recommend_bound_action``
(the first move of the policy behind the achievable bound) and ``recommend_best_q3`` (the
visited root action with the best debiased value q̂3).

Rules (all AVTS rules share the Bellman backup over exact chance outcomes, debiasing and
progressive widening, as in the AVTS article; only the selection differs):
  thompson_avts      Thompson sampling on q̂3 (the default ``js.policies.avts``)
  thompson_no_debias the same without debiasing
  laplace            q̂3 + δ/(n+1), δ = 0.1
  hoeffding          q̂3 + (U−L)·sqrt(−ln p / 2)/sqrt(n+1), p = 0.999
  puct_value_prior   the AVTS article's PUCT: q̂3 + c·softmax(q̂1)·sqrt(N)/(1+n), c = 1
  uct                classic UCT, running-mean backup, leaf value max q̂1
and, only when named in ``--only``: ``thompson_centred`` and ``thompson_reference``
(Thompson-AVTS with ``variance="centred"`` / ``"reference"``), and ``optimistic``, the
solver's proof rule (``js.selection.optimistic``, best optimistic bound first, outcome rule
"gap", as ``jaxsearch solve`` grows its trees).

The estimator is ``Q* + bias_per_step·(moves left) + noise·z`` (fixed per state): optimistic
far from the end, like Wordle's entropic estimator. ``--num-slots K`` keeps the top-K actions
by q̂1 (the article: top 100 of 14855) and ``--variance`` picks the AVTS variance model, for every
AVTS rule.

    jaxsearch bench sample-efficiency              # 128 MDPs, JSON line + PNG
    jaxsearch bench sample-efficiency --quick      # a small smoke run
    jaxsearch bench sample-efficiency --horizon 2 --actions 512 --num-slots 100 \
        --only thompson_avts,puct_value_prior,laplace      # a regime closer to the AVTS article

``--calibration`` runs Thompson-AVTS alone and prints how its Gaussian at the root matches
its errors (median σ, median ``|q̂3 − Q*|``, their ratio, the gap between the two best Q*)
after 50, 200 and 1000 simulations: why Thompson sampling explores as much as it does.

``--mastermind PxC`` replaces the Garnets by the article's own kind of problem: Mastermind with P
pegs and C colours (the Wordle machinery of ``jaxsearch.games.mastermind``: entropic optimistic
estimator, exact chance over feedbacks), one instance searched by ``--repeats`` independent
trees per Bellman-backup rule, scored by the bound metric against the known optimal total
(docs/algorithms.md §6; ``evaluations_used`` per tree says how far each run got), and by
``proven``: the evaluations until the optimistic bound has come down to it too (the float
bounds meet):

    jaxsearch bench sample-efficiency --mastermind 4x3 --budget 4096 --repeats 4 \
        --only thompson_avts,puct_value_prior,laplace

``--leaves-per-step K`` runs every search ``K`` paths per tree per step
(:attr:`jaxsearch.SearchConfig.leaves_per_step`) for the same simulation budget, so that the
evaluations to an optimum at ``K`` compare with those at 1 (the solver's sample cost of
several leaves); with ``--mastermind``, each rule's ``simulations`` gives the same figure in
simulations (paths).

Prints one JSON line: per rule the median and quartiles of evaluations and the fraction solved
for both metrics (``median``/``q1``/``q3``/``solved`` and ``bound_median``/``bound_q1``/
``bound_q3``/``bound_solved``), ``ratio_puct_over_avts`` (PUCT's median ÷ Thompson-AVTS's)
and ``ratio_puct_over_avts_bound`` (the same for the bound); each ``null`` when a median lies
beyond the budget, with ``..._at_most`` when only Thompson-AVTS's does.
"""

from __future__ import annotations

import argparse
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxsearch as js
from jaxsearch.app import timing
from jaxsearch.games import garnet


def rules(game, estimator, max_nodes: int, avts_options=None, leaves: int = 1):
  """``name -> Search`` doing one step of ``leaves`` simulations per call (one path per
  tree by default; ``leaves`` paths per tree in one step otherwise,
  :attr:`jaxsearch.search.SearchConfig.leaves_per_step`).

  ``avts_options``: extra :func:`js.policies.avts` options for every Bellman-backup rule (e.g.
  ``num_slots``, ``variance``); UCT ignores them.
  """
  value_range = game.value_range
  common = dict(num_simulations=leaves, leaves_per_step=leaves, max_nodes=max_nodes)
  avts_common = dict(common, **(avts_options or {}))
  sel = js.selection
  return {
      "thompson_avts": js.policies.avts(game, estimator, **avts_common),
      "thompson_no_debias": js.policies.avts(game, estimator, debias=False, **avts_common),
      "laplace": js.policies.avts(game, estimator, selection=sel.laplace(0.1), **avts_common),
      "hoeffding": js.policies.avts(game, estimator, selection=sel.hoeffding(value_range),
                                    **avts_common),
      "puct_value_prior": js.policies.avts(game, estimator, selection=sel.value_prior_puct(),
                                           **avts_common),
      "uct": js.policies.uct(game, estimator, **common),
      # Run only when named in --only: Thompson-AVTS with the other variance models.
      "thompson_centred": js.policies.avts(game, estimator,
                                           **dict(avts_common, variance="centred")),
      "thompson_reference": js.policies.avts(game, estimator,
                                             **dict(avts_common, variance="reference")),
      "optimistic": js.policies.avts(game, estimator, selection=sel.optimistic(),
                                     outcome_rule="gap", **avts_common),
  }


EXTRA_RULES = ("thompson_centred", "thompson_reference", "optimistic")


def root_record(out):
  """What the benchmark notes after each simulation of a Bellman-backup search besides the
  recommended action: ``(root_bound f32[B], bound_action i32[B], q3_action i32[B])``.

  ``bound_action`` is the first move of the concrete policy behind the achievable bound (the
  root slot with the best bound; action 0, the game's pessimistic policy, while no expanded
  slot beats it) and ``q3_action`` the visited action with the best debiased value q̂3.
  """
  tree = out.tree
  rows = jnp.arange(tree.batch_size)
  legal = tree.slots.legal[:, 0]
  slot_bound = jnp.where(legal, tree.slot_bounds.bound[:, 0], -jnp.inf)
  best_slot = jnp.argmax(slot_bound, axis=-1)
  beaten = slot_bound[rows, best_slot] >= tree.bounds.bound[:, 0]
  bound_action = jnp.where(beaten, tree.slots.actions()[rows, 0, best_slot], 0)
  visited = out.visit_counts > 0
  q3_action = jnp.argmax(jnp.where(visited, out.q_values, -jnp.inf), axis=-1)
  q3_action = jnp.where(jnp.any(visited, axis=-1), q3_action, out.action)
  return out.root_bound, bound_action.astype(jnp.int32), q3_action.astype(jnp.int32)


def trace(search, roots, key, steps: int, record=None):
  """Runs ``steps`` searches of one step each (one simulation per tree, or ``leaves``: see
  :func:`rules`) in one jitted scan; returns
  ``(actions i32[T, M], evaluations i32[T, M])`` after each step, plus
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


def calibration(search, roots, key, steps: int, q_root, checkpoints=(50, 200, 1000)):
  """How well Thompson-AVTS's Gaussian matches its errors at the root: after each of
  ``checkpoints`` simulations (those ``<= steps``), over the visited root slots of all trees,
  the medians of ``σ = sqrt(σ²(s, n))``, of the error ``|q̂3 − Q*|`` and of their ratio
  ``|q̂3 − Q*| / σ`` (about 0.67 for a calibrated Gaussian), and of the gap between each
  tree's two best ``Q*`` (what σ must resolve). ``q_root``: ``f[M, A]`` the roots' Q*.

  Returns ``{checkpoint: {...}}``."""
  from jaxsearch import debias

  @jax.jit
  def run(key):
    init_key, loop_key = jax.random.split(key)
    tree = search.init_tree(None, init_key, roots)

    def step(tree, step_key):
      return search(None, step_key, roots, tree).tree, None

    outs = []
    done = 0
    keys = jax.random.split(loop_key, steps)
    for point in sorted(c for c in checkpoints if c <= steps):
      tree, _ = jax.lax.scan(step, tree, keys[done:point])
      done = point
      stats = jax.tree.map(lambda x: x[:, 0], tree.debias)
      visits = tree.slots.visits[:, 0]
      q3 = tree.slots.value[:, 0] + jax.vmap(debias.correction)(stats, visits)
      sigma2 = jax.vmap(debias.variance)(stats, visits)
      outs.append((tree.slots.actions()[:, 0], visits, q3, sigma2, tree.slot_bounds.solved[:, 0]))
    return outs

  q_root = np.asarray(q_root, np.float64)
  top2 = np.sort(q_root, axis=1)[:, -2:]
  report = {}
  points = sorted(c for c in checkpoints if c <= steps)
  for point, (actions, visits, q3, sigma2, solved) in zip(points, run(key)):
    actions, visits = np.asarray(actions), np.asarray(visits)
    use = (visits > 0) & ~np.asarray(solved)
    err = np.abs(np.asarray(q3, np.float64) - np.take_along_axis(q_root, actions, axis=1))
    sigma = np.sqrt(np.maximum(np.asarray(sigma2, np.float64), 0.0))
    if not use.any():  # every visited root slot is solved: nothing left to calibrate
      report[point] = {"visited_slots": 0.0}
      continue
    report[point] = {"sigma": round(float(np.median(sigma[use])), 4),
                     "error": round(float(np.median(err[use])), 4),
                     "error_over_sigma": round(float(np.median(err[use] / np.maximum(
                         sigma[use], 1e-9))), 3),
                     "gap_top2": round(float(np.median(top2[:, 1] - top2[:, 0])), 4),
                     "visited_slots": round(float(use.sum(axis=1).mean()), 1)}
  return report


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


def reach_evaluations(bounds, evaluations, target, budget: int, tolerance: float = 1e-5):
  """Per MDP, evaluations when the root's achievable bound first reaches ``target`` (``V*``)
  within ``tolerance`` — the search then holds a provably optimal concrete policy, the article's
  metric; the bound never decreases, so it stays there. ``inf`` if not within ``budget``.

  Args:
    bounds, evaluations: ``[T, M]``.
    target: ``f[M]``.
  """
  bounds = np.asarray(bounds, np.float64)
  evaluations = np.asarray(evaluations)
  reached = (bounds >= np.asarray(target, np.float64)[None, :] - tolerance)
  reached &= evaluations <= budget
  first = np.argmax(reached, axis=0)
  return np.where(reached.any(axis=0), evaluations[first, np.arange(bounds.shape[1])], np.inf)


def ratio(report, key: str, budget: int, suffix: str = ""):
  """``{ratio_puct_over_avts<suffix>: ...}`` from the two rules' ``key`` medians (``null`` when
  one lies beyond the budget; ``..._at_most`` when only Thompson-AVTS's does)."""
  avts = report["thompson_avts"].get(key)
  puct = report["puct_value_prior"].get(key)
  name = "ratio_puct_over_avts" + suffix
  line = {name: None if avts is None or puct is None else round(puct / avts, 3)}
  if avts is None and puct is not None:
    line[name + "_at_most"] = round(puct / budget, 3)
  return line


def summary(values):
  finite = np.isfinite(values)
  q1, median, q3 = np.percentile(values, [25, 50, 75], method="lower")
  as_number = lambda x: None if not math.isfinite(x) else float(x)  # noqa: E731
  return {"median": as_number(median), "q1": as_number(q1), "q3": as_number(q3),
          "solved": float(finite.mean())}


def plot(results, budget, path, title, bound_results=None):
  """Box plots of the settle figures (and, given ``bound_results``, of the bound figures in a
  second panel); MDPs never solved are drawn right of the budget line."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  panels = [(results, "evaluations until the root action is optimal for good")]
  if bound_results:
    panels.append((bound_results, "evaluations until the achievable bound reaches V*"))
  fig, axes = plt.subplots(len(panels), 1, figsize=(8, 4.5 * len(panels)), squeeze=False,
                           sharex=True)
  for ax, (values, label) in zip(axes[:, 0], panels):
    names = list(values)
    data = [np.where(np.isfinite(values[n]), values[n], budget * 1.15) for n in names]
    ax.boxplot(data, orientation="horizontal", whis=(5, 95), showfliers=True)
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.axvline(budget, color="grey", linestyle=":", label="budget (right of it: never)")
    ax.set_xscale("log")
    ax.set_xlabel(label)
    ax.legend(loc="lower right", fontsize=8)
  axes[0, 0].set_title(title)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def add_garnet_arguments(parser: argparse.ArgumentParser, *, mdps: int, actions: int) -> None:
  """The Garnet family and estimator flags."""
  parser.add_argument("--mdps", type=int, default=mdps)
  parser.add_argument("--states", type=int, default=20)
  parser.add_argument("--actions", type=int, default=actions)
  parser.add_argument("--branching", type=int, default=2)
  parser.add_argument("--horizon", type=int, default=4)
  parser.add_argument("--bias-per-step", type=float, default=0.5)
  parser.add_argument("--noise", type=float, default=0.1)


def garnet_from_arguments(args):
  """``(family, estimator, roots, q_root f32[M, A], optimal bool[M, A])`` from the flags of
  :func:`add_garnet_arguments`: the MDPs, their estimator, roots, root Q* and optimal actions."""
  family = garnet.make_family(args.mdps, args.states, args.actions, args.branching,
                              args.horizon, seed=args.seed)
  estimator = garnet.estimator(family, bias_per_step=args.bias_per_step, noise=args.noise,
                               seed=args.seed)
  q_root = np.asarray(family.q_star[:, 0, 0])
  optimal = q_root >= q_root.max(axis=-1, keepdims=True) - 1e-6
  return family, estimator, family.roots(), q_root, optimal


# Optimal total guesses over all secrets (docs/algorithms.md §6), by (pegs, colours).
MASTERMIND_OPTIMA = {(2, 2): 8, (2, 3): 21, (3, 2): 18, (2, 4): 45, (3, 3): 73, (4, 3): 246,
                     (3, 4): 206}


def root_bounds(out):
  """``(root_bound f32[B], root_upper f32[B])`` of a search's output: the achievable and
  the optimistic bound at each root (``+inf`` where the game gives no optimistic bound)."""
  upper = (jnp.full_like(out.root_bound, jnp.inf) if out.root_upper is None
           else out.root_upper)
  return out.root_bound, upper


def mastermind_rule(search, roots, args, steps: int, optimum: int, codes: int) -> dict:
  """One rule's report on Mastermind (:func:`run_mastermind`): ``steps`` steps of
  ``--leaves-per-step`` paths on ``--repeats`` trees from ``roots``, scored against the
  ``optimum`` total over ``codes`` secrets."""
  leaves = args.leaves_per_step
  with timing.Stopwatch() as watch:
    _, evaluations, (bounds, uppers) = jax.tree.map(np.asarray, jax.block_until_ready(
        trace(search, roots, jax.random.key(args.seed), steps, root_bounds)))
  target = np.full(args.repeats, -optimum / codes)
  reach = reach_evaluations(bounds, evaluations, target, args.budget, tolerance=1e-4)
  # Proven: the optimistic bound has come down to the optimum too (the float bounds meet;
  # the solver's exact certificate is not run here).
  certified = np.where(uppers <= target[None] + 1e-4, bounds, -np.inf)
  proven = reach_evaluations(certified, evaluations, target, args.budget, tolerance=1e-4)
  reach_simulations = reach_evaluations(
      bounds, np.cumsum(np.full_like(evaluations, leaves), axis=0), target, steps * leaves,
      tolerance=1e-4)
  within = evaluations <= args.budget
  last = np.array([np.nonzero(within[:, r])[0][-1] for r in range(args.repeats)])
  return dict(
      summary(reach), reach=[None if math.isinf(x) else int(x) for x in reach],
      simulations={k: v for k, v in summary(reach_simulations).items() if k != "solved"},
      proven=summary(proven),
      final_total=[round(float(-bounds[t, r] * codes), 2) for r, t in enumerate(last)],
      evaluations_used=[int(evaluations[t, r]) for r, t in enumerate(last)],
      seconds=round(watch.seconds, 2))


def run_mastermind(args, parser):
  """The AVTS article's own kind of problem: evaluations until the root's achievable bound on
  Mastermind ``--mastermind PxC`` (entropic estimator, as Wordle) reaches the known optimum;
  Bellman-backup rules only, ``--repeats`` independent trees per rule (one batch). Returns
  the JSON line."""
  from jaxsearch.games import mastermind
  try:
    pegs, colours = (int(x) for x in args.mastermind.lower().split("x"))
  except ValueError:
    parser.error(f"--mastermind wants PEGSxCOLOURS, e.g. 4x3; got {args.mastermind!r}")
  if (pegs, colours) not in MASTERMIND_OPTIMA:
    parser.error(f"--mastermind: known optima are for {sorted(MASTERMIND_OPTIMA)}")
  m = mastermind.make(pegs, colours)
  codes = colours ** pegs
  optimum = MASTERMIND_OPTIMA[(pegs, colours)]
  roots = jax.tree.map(lambda x: jnp.stack([x] * args.repeats), m.game.init(jax.random.key(0)))
  avts_options = {"max_depth": 16, "variance": args.variance}
  if args.num_slots is not None:
    avts_options["num_slots"] = args.num_slots
  outcomes = m.game.num_outcomes
  leaves = args.leaves_per_step
  searches = rules(m.game, m.estimator, args.budget + leaves * outcomes + 1, avts_options,
                   leaves)
  searches = {k: v for k, v in searches.items() if v.config.backup.kind is js.Backup.BELLMAN}
  names = args.only.split(",") if args.only else [k for k in searches if k not in EXTRA_RULES]
  unknown = set(names) - set(searches)
  if unknown:
    parser.error(f"--only: unknown or bound-less rules {sorted(unknown)}; known: "
                 f"{sorted(searches)}")
  # An expansion evaluates its possible outcomes only (often fewer than O): enough
  # simulations for three per expansion, whatever the leaves per step (paths of a step that
  # share a leaf evaluate it once); ``evaluations_used`` says how far each run got.
  steps = -(-(args.budget // 3 + 1) // leaves)
  report = {}
  for name in names:
    report[name] = mastermind_rule(searches[name], roots, args, steps, optimum, codes)
    print(f"# {name}: {report[name]}", file=sys.stderr, flush=True)
  line = {"benchmark": "sample_efficiency_mastermind", "pegs": pegs, "colours": colours,
          "optimal_total": optimum, "budget": args.budget, "repeats": args.repeats,
          "num_slots": args.num_slots, "variance": args.variance, "seed": args.seed,
          "leaves_per_step": leaves, "rules": report}
  if "thompson_avts" in report and "puct_value_prior" in report:
    line.update(ratio(report, "median", args.budget, "_bound"))
  return line


def _parser(prog: str) -> argparse.ArgumentParser:
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
  add_garnet_arguments(parser, mdps=128, actions=32)
  parser.add_argument("--budget", type=int, default=2000,
                      help="estimator evaluations per MDP")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--only", default=None, help="comma-separated rule names")
  parser.add_argument("--plot", default="sample_efficiency.png",
                      help="PNG path ('' for none)")
  parser.add_argument("--num-slots", type=int, default=None,
                      help="AVTS rules: top-K cutoff of actions by q̂1 (default: all)")
  parser.add_argument("--variance", default="avts", choices=("avts", "reference", "centred"),
                      help="AVTS rules: variance model (jaxsearch.SearchConfig.variance)")
  parser.add_argument("--mastermind", default=None, metavar="PxC",
                      help="instead of Garnets: Mastermind with P pegs and C colours (known "
                           "optimum: 2x2 2x3 3x2 2x4 3x3 4x3 3x4), bound metric only")
  parser.add_argument("--repeats", type=int, default=8,
                      help="--mastermind: independent trees per rule")
  parser.add_argument("--leaves-per-step", type=positive_int, default=1, metavar="K",
                      help="paths each tree descends per step (SearchConfig.leaves_per_step; "
                           "default 1); the simulation budget stays the same, in steps of K")
  parser.add_argument("--quick", action="store_true",
                      help="16 MDPs, a budget of 300: a smoke run")
  parser.add_argument("--calibration", action="store_true",
                      help="Garnets: only Thompson-AVTS's calibration at the root (σ against "
                           "|q̂3 − Q*|) after 50, 200 and 1000 simulations")
  return parser


def run_rule(name, search, roots, args, optimal, v_root) -> tuple:
  """One rule over the Garnets: ``(settle figures f[M], bound figures f[M] or None, its
  report)``."""
  bellman = search.config.backup.kind is js.Backup.BELLMAN
  leaves = args.leaves_per_step
  steps = -(-(args.budget // (args.branching if bellman else 1) + 1) // leaves)
  with timing.Stopwatch() as watch:
    history = jax.block_until_ready(trace(search, roots, jax.random.key(args.seed), steps,
                                          root_record if bellman else None))
  actions, evaluations = history[:2]
  settled = settle_evaluations(actions, evaluations, optimal, args.budget)
  report = dict(summary(settled), seconds=round(watch.seconds, 2))
  if not bellman:
    return settled, None, report
  bounds, bound_actions, q3_actions = history[2]
  reached = reach_evaluations(bounds, evaluations, v_root, args.budget)
  report.update({"bound_" + k: v for k, v in summary(reached).items()})
  report["recommend_bound_action"] = summary(
      settle_evaluations(bound_actions, evaluations, optimal, args.budget))
  report["recommend_best_q3"] = summary(
      settle_evaluations(q3_actions, evaluations, optimal, args.budget))
  return settled, reached, report


def run_garnets(args, parser) -> dict:
  """The rules over ``args.mdps`` Garnets (or, with ``--calibration``, Thompson-AVTS's
  calibration at the root); the JSON line."""
  family, estimator, roots, q_root, optimal = garnet_from_arguments(args)
  v_root = np.asarray(family.v_star[:, 0, 0])  # [M]
  avts_options = {"variance": args.variance}
  if args.num_slots is not None:
    avts_options["num_slots"] = args.num_slots
  searches = rules(family.game, estimator,
                   args.budget + args.leaves_per_step * args.branching + 1, avts_options,
                   args.leaves_per_step)
  if args.calibration:
    if args.leaves_per_step != 1:
      parser.error("--calibration counts single simulations: use --leaves-per-step 1")
    return {"benchmark": "calibration", "variance": args.variance, "mdps": args.mdps,
            "rule": "thompson_avts", "root": calibration(
                searches["thompson_avts"], roots, jax.random.key(args.seed),
                args.budget // args.branching + 1, q_root)}
  names = args.only.split(",") if args.only else [k for k in searches if k not in EXTRA_RULES]
  unknown = set(names) - set(searches)
  if unknown:
    parser.error(f"--only: unknown rules {sorted(unknown)}; known: {sorted(searches)}")
  results, bound_results, report = {}, {}, {}
  for name in (k for k in searches if k in names):
    results[name], reached, report[name] = run_rule(name, searches[name], roots, args,
                                                    optimal, v_root)
    if reached is not None:
      bound_results[name] = reached
    print(f"# {name}: {report[name]}", file=sys.stderr, flush=True)
  line = {"benchmark": "sample_efficiency", "mdps": args.mdps, "states": args.states,
          "actions": args.actions, "branching": args.branching, "horizon": args.horizon,
          "bias_per_step": args.bias_per_step, "noise": args.noise, "budget": args.budget,
          "num_slots": args.num_slots, "variance": args.variance,
          "seed": args.seed, "leaves_per_step": args.leaves_per_step, "rules": report}
  if "thompson_avts" in report and "puct_value_prior" in report:
    # A median beyond the budget (solved on fewer than half the MDPs) is null.
    line.update(ratio(report, "median", args.budget))
    line.update(ratio(report, "bound_median", args.budget, "_bound"))
  if args.plot:
    plot(results, args.budget, args.plot,
         f"{args.mdps} Garnet MDPs (S={args.states}, A={args.actions}, O={args.branching}, "
         f"H={args.horizon})", bound_results)
    line["plot"] = args.plot
  return line


def main(argv=None, prog: str = "jaxsearch bench sample-efficiency") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  parser = _parser(prog)
  args = parser.parse_args(argv)
  if args.mastermind:
    timing.emit(run_mastermind(args, parser))
    return 0
  if args.quick:
    args.mdps, args.budget = 16, 300
  timing.emit(run_garnets(args, parser))
  return 0
