"""``jaxsearch bench rules``: the AVTS article's selection-rule comparison on Wordle
sub-problems, against exact optima.

Sub-problems: the feedback classes of a first guess (default ``tarse``) on the answer list
that hold between ``--min-answers`` and ``--max-answers`` answers; each is searched from the
state after that feedback. Its optimum (least total guesses over its answers, the final
correct guess counted) comes from the project's exact solver
(:class:`jaxsearch.guessing.exact.ExactSolver`) over every allowed guess. The search keeps the
top ``--num-slots`` guesses by q̂1 per node (a documented cutoff; the article kept 100); a
sub-problem is kept only where the exact optimum *restricted to that cutoff* (the same q̂1,
computed by the game's own estimator: :class:`CutoffBounds`) equals the unrestricted one, so
that every rule can reach it. The number dropped is reported.

Rules (all AVTS: Bellman backup over exact feedbacks, debiasing, progressive widening, the
same cutoff; only the selection differs):
  thompson_avts      Thompson sampling on q̂3 (``js.policies.avts``'s default)
  laplace            q̂3 + δ/(n+1), δ = 0.1
  puct_value_prior   q̂3 + c·softmax(q̂1)·sqrt(N)/(1+n), c = 1
  hoeffding          q̂3 + (U−L)·sqrt(−ln p / 2)/sqrt(n+1), p = 0.999, [L, U] = [−6, 0]
  optimistic         the solver's proof rule (``js.selection.optimistic``, best optimistic
                     bound first, outcome rule "gap")
  solver_alternating the two above on the same trees, as ``jaxsearch.guessing.solve(...,
                     proof_every=k)`` runs them: blocks of ``--alternate-block`` simulations,
                     every ``--proof-every``-th block by the proof rule, the others by
                     Thompson-AVTS (Thompson first)

Each rule runs as one batched search over all sub-problems (one tree per sub-problem, one
compile), one simulation at a time, for ``--budget`` estimator evaluations (tree nodes: a node
is one evaluated state). Per sub-problem we note the evaluations, simulations and wall time
until the root's achievable bound (the exact value of a concrete policy held by the tree)
reaches the optimum; ``inf`` (``null``) when not within the budget. ``proven_evaluations``:
the same until, in addition, the root's optimistic bound (no policy does better) meets the
optimum, in total guesses within 0.01 (the solver's "proven", from the float bounds; its exact
certificate is not run here). With the default ``--bound-slots 0`` a guess cut from a node's
slots keeps its admissible bound, so a proof needs the cut guesses' bounds to be no better
than the optimum. Wall time per tree is
estimated as simulations × (the batched run's seconds per step ÷ the batch size): the trees
advance together, so their time is shared.

Word lists: ``$WORDLE_DATA``, else the copies shipped in ``jaxsearch/data/wordle``. ``--guesses
answers`` (default) restricts the allowed guesses to the answer list (3158 words), which keeps
the exact solves short; ``--guesses all`` allows the 14855 words. The game's feedback
table covers only the sub-problems' answers (``u8[S, G]``, S a few hundred) and is passed to
the compiled programs as an argument, not embedded.

    jaxsearch bench rules                      # 20-40 answers, JSON + PNG
    jaxsearch bench rules --quick              # a small smoke run

``--leaves-per-step K`` runs every search ``K`` paths per tree per step
(:attr:`jaxsearch.SearchConfig.leaves_per_step`) for the same budget: evaluations and
simulations (paths) to the optimum at ``K`` compare with those at 1.

Prints one JSON line: per rule the medians (and quartiles) of evaluations, simulations and
seconds, the fraction reached, and ``ratio_puct_over_thompson`` (median evaluations PUCT ÷
Thompson-AVTS; ``null`` when a median lies beyond the budget, ``..._at_least`` when only
PUCT's does).
"""

from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxsearch as js
from jaxsearch import debias
from jaxsearch.app import timing
from jaxsearch.app.benchmarks.wordle_problems import (exact_optimum, exact_solvers,
                                                      feedback_classes)
from jaxsearch.games import wordle
from jaxsearch.guessing import game as guessing

RULES = ("thompson_avts", "laplace", "puct_value_prior", "hoeffding", "optimistic",
         "solver_alternating")


class Alternating:
  """Thompson-AVTS and the proof rule growing the same trees, as the solver alternates them
  (``jaxsearch.guessing.solve(..., proof_every=every)`` with chunks of ``block`` simulations):
  simulation ``i`` (0-based) runs the proof rule where ``(i // block) % every == every - 1``,
  else Thompson-AVTS. Both searches are single-simulation ``Search`` objects of the same
  configuration apart from the selection and outcome rule, so their trees are alike."""

  def __init__(self, thompson, proof, block: int, every: int):
    if block < 1 or every < 1:
      raise ValueError(f"block and every must be positive, got {block}, {every}")
    self.thompson, self.proof, self.block, self.every = thompson, proof, block, every

  def init_tree(self, params, key, roots):
    return self.thompson.init_tree(params, key, roots)

  def uses_proof(self, index):
    """Whether simulation ``index`` runs the proof rule (traced or Python ints)."""
    return (index // self.block) % self.every == self.every - 1

  def scan(self, step, tree, keys):
    """``jax.lax.scan`` of ``step(search, tree, key) -> (tree, y)`` over ``keys[T]``, the
    search of each simulation chosen by :meth:`uses_proof`: one scan over periods of
    ``every`` blocks, each block its own scan of one search (a ``lax.cond`` per simulation
    would copy the trees at every step). Returns ``(tree, ys[T])``."""
    steps = keys.shape[0]
    period = self.block * self.every
    periods = -(-steps // period)
    pad = periods * period - steps
    keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], pad, axis=0)]) if pad else keys
    keys = keys.reshape((periods, self.every, self.block) + keys.shape[1:])

    def one_period(tree, period_keys):
      ys = []
      for phase in range(self.every):
        search = self.proof if phase == self.every - 1 else self.thompson
        tree, y = jax.lax.scan(lambda t, k, search=search: step(search, t, k), tree,
                               period_keys[phase])
        ys.append(y)
      return tree, jax.tree.map(lambda *xs: jnp.stack(xs), *ys)

    tree, ys = jax.lax.scan(one_period, tree, keys)
    return tree, jax.tree.map(lambda y: y.reshape((-1,) + y.shape[3:])[:steps], ys)


def search_factory(name: str, bind, value_range, *, num_slots: int, max_nodes: int,
                   max_depth: int, variance: str = "avts", bound_slots: int = 0,
                   alternate_block: int = 4, proof_every: int = 2, leaves: int = 1):
  """``table -> Search`` for rule ``name`` (one step of ``leaves`` paths per tree per call,
  :attr:`jaxsearch.search.SearchConfig.leaves_per_step`; one simulation by default), built
  from a traced ``u8[S, G]`` table with ``bind`` (:attr:`jaxsearch.games.wordle.Wordle.bind`);
  for ``solver_alternating`` an :class:`Alternating` pair (called with the step index; its
  blocks of ``alternate_block`` simulations are ``max(alternate_block // leaves, 1)``
  steps)."""
  sel = js.selection
  options = dict(num_simulations=leaves, leaves_per_step=leaves, max_nodes=max_nodes,
                 max_depth=max_depth, num_slots=num_slots, variance=variance,
                 bound_slots=bound_slots)
  if name == "solver_alternating":
    sizes = dict(num_slots=num_slots, max_nodes=max_nodes, max_depth=max_depth,
                 variance=variance, bound_slots=bound_slots, leaves=leaves)
    thompson = search_factory("thompson_avts", bind, value_range, **sizes)
    proof = search_factory("optimistic", bind, value_range, **sizes)
    return lambda table: Alternating(thompson(table), proof(table),
                                     max(alternate_block // leaves, 1), proof_every)
  selection = {"thompson_avts": None, "laplace": sel.laplace(0.1),
               "puct_value_prior": sel.value_prior_puct(1.0),
               "hoeffding": sel.hoeffding(value_range, 0.999),
               "optimistic": sel.optimistic()}[name]
  if name == "optimistic":
    options["outcome_rule"] = "gap"  # as the solver runs it

  def make(table):
    game, estimator = bind(table)
    return js.policies.avts(game, estimator, selection=selection, **options)

  return make


def zero_variance_fraction(tree):
  """``f32[B]``: of each tree's expanded, unsolved decision nodes, the fraction whose variance
  statistics give ``σ²(s, 0) = 0`` — at such a node every slot has ``σ² = 0`` and Thompson
  sampling is greedy on q̂3 (no bucket holds two records yet, or all changes were equal)."""
  stats = tree.debias
  sigma2 = jax.vmap(jax.vmap(lambda st: debias.variance(st, jnp.int32(0))))(stats)  # [B, N]
  allocated = jnp.arange(tree.nodes.visits.shape[1])[None, :] < tree.num_nodes[:, None]
  expanded = allocated & (jnp.sum(tree.slots.visits, axis=-1) > 0) & ~tree.bounds.solved
  zero = expanded & (sigma2 <= 0.0)
  return jnp.sum(zero, axis=1) / jnp.maximum(jnp.sum(expanded, axis=1), 1)


def trace(make_search, table, roots, key, steps: int):
  """Runs ``steps`` single-simulation searches in one jitted scan. Returns ``(evaluations
  i32[T, B], bounds f32[T, B], uppers f32[T, B], zero_variance f32[B], compile_seconds,
  run_seconds)``, with ``uppers`` the root's optimistic bound (``+inf`` where the game has
  none) and ``zero_variance`` :func:`zero_variance_fraction` of the final trees."""

  def run(table, key):
    search = make_search(table)
    init_key, loop_key = jax.random.split(key)
    tree = search.init_tree(None, init_key, roots)

    def step(search, tree, step_key):
      out = search(None, step_key, roots, tree)
      upper = (jnp.full_like(out.root_bound, jnp.inf) if out.root_upper is None
               else out.root_upper)
      return out.tree, (out.tree.num_nodes, out.root_bound, upper)

    keys = jax.random.split(loop_key, steps)
    if isinstance(search, Alternating):
      tree, history = search.scan(step, tree, keys)
    else:
      tree, history = jax.lax.scan(lambda t, k: step(search, t, k), tree, keys)
    return history, zero_variance_fraction(tree)

  with timing.Stopwatch() as compiling:
    compiled = jax.jit(run).lower(table, key).compile()
  with timing.Stopwatch() as running:
    (evaluations, bounds, uppers), zero = jax.block_until_ready(compiled(table, key))
  return (np.asarray(evaluations), np.asarray(bounds), np.asarray(uppers), np.asarray(zero),
          compiling.seconds, running.seconds)


def first_reach(bounds, target, budget_mask, tolerance: float = 1e-4):
  """Per tree, the first step index where ``bounds[T, B] >= target[B] - tolerance`` within
  ``budget_mask[T, B]``; ``-1`` if never."""
  reached = (np.asarray(bounds, np.float64) >= np.asarray(target)[None] - tolerance)
  reached &= budget_mask
  return np.where(reached.any(axis=0), np.argmax(reached, axis=0), -1)


def first_proof(bounds, uppers, optima, sizes, budget_mask, tolerance: float = 1e-2):
  """Per tree, the first step index where both bounds meet the optimum in total guesses
  (``optima[B]`` over ``sizes[B]`` answers): the achievable total ``-bound·n`` is at most
  ``optimum + tolerance`` and the optimistic total ``-upper·n`` at least ``optimum −
  tolerance``, within ``budget_mask[T, B]``; ``-1`` if never."""
  sizes = np.asarray(sizes, np.float64)[None]
  optima = np.asarray(optima, np.float64)[None]
  achieved = -np.asarray(bounds, np.float64) * sizes <= optima + tolerance
  with np.errstate(invalid="ignore"):
    met = -np.asarray(uppers, np.float64) * sizes >= optima - tolerance
  proven = achieved & met & budget_mask
  return np.where(proven.any(axis=0), np.argmax(proven, axis=0), -1)


def summary(values):
  """Median and quartiles (``None`` where beyond the budget: ``inf``) and fraction finite."""
  values = np.asarray(values, np.float64)
  q1, median, q3 = np.percentile(values, [25, 50, 75], method="lower")
  num = lambda x: None if not math.isfinite(x) else round(float(x), 4)  # noqa: E731
  return {"median": num(median), "q1": num(q1), "q3": num(q3),
          "reached": float(np.isfinite(values).mean())}


def ratio_line(report, budget: int):
  """``ratio_puct_over_thompson``: median evaluations PUCT ÷ Thompson-AVTS."""
  if "thompson_avts" not in report or "puct_value_prior" not in report:
    return {}
  avts = report["thompson_avts"]["evaluations"]["median"]
  puct = report["puct_value_prior"]["evaluations"]["median"]
  line = {"ratio_puct_over_thompson": None if avts is None or puct is None
          else round(puct / avts, 3)}
  if puct is None and avts is not None:
    line["ratio_puct_over_thompson_at_least"] = round(budget / avts, 3)
  return line


def plot(curves, optimum_mean, path: str, title: str) -> None:
  """The AVTS article's graph: the mean achievable bound in guesses per answer (over all the
  sub-problems' answers) against the mean estimator evaluations per sub-problem, one line per
  rule, the exact optimum dashed."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(8, 5))
  for name, (evals, guesses) in curves.items():
    ax.plot(evals, guesses, label=name)
  ax.axhline(optimum_mean, color="black", linestyle="--", linewidth=1,
             label=f"exact optimum {optimum_mean:.4f}")
  ax.set_xscale("log")
  ax.set_xlabel("estimator evaluations per sub-problem (mean over sub-problems)")
  ax.set_ylabel("achievable bound: guesses per answer after the first")
  ax.set_ylim(optimum_mean - 0.05, optimum_mean + 1.0)  # the pessimistic start is far above
  ax.set_title(title)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def _parser(prog: str):
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
  parser.add_argument("--answers", default=None, help="answer list (default: NYT 3158)")
  parser.add_argument("--guesses", default="answers",
                      help="'answers' (the answer list), 'all' (NYT 14855) or a path")
  parser.add_argument("--first", default="tarse", help="first guess defining the classes")
  parser.add_argument("--min-answers", type=int, default=20)
  parser.add_argument("--max-answers", type=int, default=40)
  parser.add_argument("--max-problems", type=int, default=None,
                      help="keep at most this many classes (largest first)")
  parser.add_argument("--budget", type=int, default=4000, help="evaluations per sub-problem")
  parser.add_argument("--num-slots", type=int, default=64, help="top-K guesses by q̂1")
  parser.add_argument("--max-depth", type=int, default=10)
  parser.add_argument("--variance", default="avts", help="AVTS variance model")
  parser.add_argument("--bound-slots", type=int, default=0,
                      help="of the slots, how many hold the best admissible bounds (the "
                           "solver's --bound-slots; default 0, as the solver on Wordle)")
  parser.add_argument("--alternate-block", type=int, default=4,
                      help="solver_alternating: simulations per block (the solver's chunk; "
                           "default 4, its Wordle default)")
  parser.add_argument("--proof-every", type=int, default=2,
                      help="solver_alternating: every this-many-th block runs the proof rule "
                           "(the solver's proof_every; default 2)")
  parser.add_argument("--only", default=None, help="comma-separated rule names")
  parser.add_argument("--leaves-per-step", type=positive_int, default=1, metavar="K",
                      help="paths each tree descends per step (SearchConfig.leaves_per_step; "
                           "default 1); the budget stays the same, in steps of K")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--plot", default="rules_wordle.png", help="PNG path ('' for none)")
  parser.add_argument("--quick", action="store_true",
                      help="the 4 largest classes, a budget of 600: a smoke run")
  return parser


def word_lists(args) -> tuple:
  """``(answers, guesses)`` of the flags; the first guess is added to the guesses (it only
  defines the classes)."""
  answers_path, guesses_path = wordle.default_paths("nyt")
  answers = wordle.load_words(args.answers or answers_path)
  if args.guesses == "answers":
    guesses = list(answers)
  elif args.guesses == "all":
    guesses = wordle.load_words(guesses_path)
  else:
    guesses = wordle.load_words(args.guesses)
  if args.first not in guesses:
    guesses = guesses + [args.first]
  return answers, guesses


def sub_problems(args, parser, answers, guesses) -> dict:
  """The classes of ``args.first`` in the size range, the game over their answers, their
  exact optima with and without the cut, and the ones kept (the two agree)."""
  with timing.Stopwatch() as watch:
    classes = feedback_classes(answers, args.first, args.min_answers, args.max_answers)
    classes = classes[:args.max_problems]
    if not classes:
      parser.error("no feedback class in the size range")
    # The game's secrets are the classes' answers only; each root holds one class.
    union = np.concatenate([members for _, members in classes])
    w = wordle.make([answers[i] for i in union], guesses)
    sizes = np.array([len(members) for _, members in classes])
    local = np.split(np.arange(sizes.sum()), np.cumsum(sizes)[:-1])
    exact, cut = exact_solvers(w, args.num_slots)
    optima = [exact_optimum(exact, ids) for ids in local]
    within_cut = [exact_optimum(cut, ids) for ids in local]
  keep = [i for i in range(len(classes)) if within_cut[i] == optima[i]]
  problems = [{"pattern": classes[i][0], "answers": len(local[i]), "optimum": optima[i],
               "optimum_within_cut": within_cut[i]} for i in range(len(classes))]
  print(f"# {len(classes)} classes, {len(keep)} kept; exact solves {watch.seconds:.1f} s: "
        f"{problems}", file=sys.stderr, flush=True)
  if not keep:
    parser.error("the cutoff excludes the optimum of every sub-problem; raise --num-slots")
  return {"w": w, "local": local, "optima": optima, "keep": keep, "problems": problems,
          "exact_seconds": watch.seconds}


def roots_of(found: dict):
  """``(roots, sizes int[B], target f64[B])``: one root per kept sub-problem, its answers
  and its optimum as a value (minus guesses per answer)."""
  w, keep = found["w"], found["keep"]
  masks = np.zeros((len(keep), w.num_answers), bool)
  for row, i in enumerate(keep):
    masks[row, found["local"][i]] = True
  roots = guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(masks)),
                         solved=jnp.zeros((len(keep),), bool))
  sizes = masks.sum(axis=1)
  return roots, sizes, -np.array([found["optima"][i] for i in keep], np.float64) / sizes


def _last_within(within, values, b: int):
  """``values[t, b]`` at the last step ``t`` within the budget."""
  return values[np.nonzero(within[:, b])[0][-1], b]


def rule_report(name: str, found: dict, args) -> tuple:
  """One rule over every kept sub-problem: ``(its figures, its curve)``, the curve the mean
  guesses per answer over all kept answers against the mean evaluations (the article's)."""
  w, keep = found["w"], found["keep"]
  roots, sizes, target = roots_of(found)
  leaves = args.leaves_per_step
  # At least one evaluation per simulation until the tree is solved: the budget in
  # simulations, in steps of ``leaves``.
  steps = -(-args.budget // leaves)
  make = search_factory(name, w.bind, w.game.value_range, num_slots=args.num_slots,
                        max_nodes=args.budget + leaves * wordle.NUM_PATTERNS + 1,
                        max_depth=args.max_depth, variance=args.variance,
                        bound_slots=args.bound_slots, alternate_block=args.alternate_block,
                        proof_every=args.proof_every, leaves=leaves)
  evaluations, bounds, uppers, zero_variance, compile_seconds, run_seconds = trace(
      make, jnp.asarray(w.by_secret), roots, jax.random.key(args.seed), steps)
  within, columns = evaluations <= args.budget, np.arange(len(keep))
  first = first_reach(bounds, target, within)
  evals = np.where(first >= 0, evaluations[np.maximum(first, 0), columns], np.inf)
  sims = np.where(first >= 0, (first + 1.0) * leaves, np.inf)
  proof = first_proof(bounds, uppers, -target * sizes, sizes, within)
  proof_evals = np.where(proof >= 0, evaluations[np.maximum(proof, 0), columns], np.inf)
  proof_sims = np.where(proof >= 0, (proof + 1.0) * leaves, np.inf)
  per_step = run_seconds / steps / len(keep) / leaves  # per tree and simulation
  # Simulations that evaluated nothing (they ended in a solved or terminal part of the tree)
  # before the optimum was reached: search effort that cannot move the bound.
  grew = np.diff(np.concatenate([np.zeros((1, len(keep)), evaluations.dtype), evaluations]),
                 axis=0) > 0
  active = np.arange(steps)[:, None] < np.where(first >= 0, first + 1, within.sum(axis=0))
  idle = ((~grew) & active).sum(axis=0) / np.maximum(active.sum(axis=0), 1)
  as_ints = lambda xs: [None if math.isinf(x) else int(x) for x in xs]  # noqa: E731
  report = {
      "evaluations": summary(evals), "simulations": summary(sims),
      "seconds": summary(sims * per_step), "per_problem": as_ints(evals),
      "proven_evaluations": summary(proof_evals), "proven_simulations": summary(proof_sims),
      "proven_seconds": summary(proof_sims * per_step), "per_problem_proven": as_ints(proof_evals),
      "final_upper_gap": [round(float(-target[b] * sizes[b] + _last_within(within, uppers, b)
                                      * sizes[b]), 2) for b in columns],
      "final_total_minus_optimum": [
          round(float((target[b] - _last_within(within, bounds, b)) * sizes[b]), 2)
          for b in columns],
      "idle_simulations": round(float(np.median(idle)), 3),
      "zero_variance_nodes": round(float(np.median(zero_variance)), 3),
      "evaluations_used": int(np.median(evaluations[-1])),
      "compile_seconds": round(compile_seconds, 1), "run_seconds": round(run_seconds, 1)}
  totals = -(np.asarray(bounds, np.float64) * sizes[None]).sum(axis=1) / sizes.sum()
  return report, (evaluations.mean(axis=1), totals)


def main(argv=None, prog: str = "jaxsearch bench rules") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  parser = _parser(prog)
  args = parser.parse_args(argv)
  if args.quick:
    args.max_problems, args.budget = 4, 600
  names = args.only.split(",") if args.only else list(RULES)
  unknown = set(names) - set(RULES)
  if unknown:
    parser.error(f"--only: unknown rules {sorted(unknown)}; known: {list(RULES)}")
  answers, guesses = word_lists(args)
  found = sub_problems(args, parser, answers, guesses)
  keep, problems = found["keep"], found["problems"]
  report, curves = {}, {}
  for name in names:
    report[name], curves[name] = rule_report(name, found, args)
    print(f"# {name}: {report[name]}", file=sys.stderr, flush=True)
  line = {"benchmark": "rules_wordle", "first": args.first, "guesses": len(guesses),
          "answers": len(answers), "min_answers": args.min_answers,
          "max_answers": args.max_answers, "problems": len(problems), "kept": len(keep),
          "dropped_by_cutoff": [p["pattern"] for i, p in enumerate(problems) if i not in keep],
          "budget": args.budget, "num_slots": args.num_slots, "variance": args.variance,
          "bound_slots": args.bound_slots, "alternate_block": args.alternate_block,
          "proof_every": args.proof_every, "seed": args.seed,
          "leaves_per_step": args.leaves_per_step,
          "exact_seconds": round(found["exact_seconds"], 1),
          "sub_problems": [problems[i] for i in keep], "rules": report}
  line.update(ratio_line(report, args.budget))
  if args.plot:
    kept = [problems[i] for i in keep]
    optimum_mean = sum(p["optimum"] for p in kept) / sum(p["answers"] for p in kept)
    plot(curves, optimum_mean, args.plot,
         f"Wordle: {len(keep)} sub-problems after '{args.first}' "
         f"({args.min_answers}-{args.max_answers} answers, {len(guesses)} guesses, "
         f"top {args.num_slots})")
    line["plot"] = args.plot
  timing.emit(line)
  return 0
