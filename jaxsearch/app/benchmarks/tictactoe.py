"""``jaxsearch bench tictactoe``: a search over every decisive tic-tac-toe position, its
minimax mistakes counted.

A position is *decisive* when it is reachable, not terminal, and its legal moves do not all
have the same minimax value (so a wrong choice changes the result: 3,191 of the 4,520
non-terminal positions). The empty board is added on top (all its moves draw, so it can only
fail by crashing). A *mistake* is a chosen move whose minimax action value is below the best
legal one.

    jaxsearch bench tictactoe --rule uct --simulations 2000 --rollouts 1
    jaxsearch bench tictactoe --rule puct --simulations 1000 --rollouts 8 --c 4

Prints one JSON line: settings, position counts, mistakes, seconds (compile, and the sweep
after it) and up to ``--show`` failing positions (board, chosen move, root visit counts and
minimax action values, ``null`` = illegal). Chunk ``i`` of the positions is searched with the
key ``fold_in(PRNGKey(seed), i)``, as in the project's tests (``tests/test_tictactoe_search.py``),
so a sweep with the same settings and ``--chunk 128`` reproduces their slow sweeps exactly.
"""

from __future__ import annotations

import numpy as np


def decisive_positions():
  """``(states, qs f32[P, 9])``: the empty board (first) and every decisive position, and
  their minimax action values (``-inf`` illegal)."""
  import jax
  import jax.numpy as jnp

  from jaxsearch.games import tictactoe as t3
  states = t3.reachable_states()
  qs = np.asarray(jax.vmap(t3.minimax_action_values)(states))
  legal = np.isfinite(qs)
  best = np.where(legal, qs, -np.inf).max(axis=1)
  worst = np.where(legal, qs, np.inf).min(axis=1)
  keep = np.flatnonzero(best > worst)
  empty = t3.init(None)
  picked = jax.tree.map(lambda e, s: jnp.concatenate([e[None], s[keep]]), empty, states)
  empty_qs = np.asarray(t3.minimax_action_values(empty))[None]
  return picked, np.concatenate([empty_qs, qs[keep]])


def make_search(rule: str, simulations: int, rollouts: int, c, exploration: float):
  """UCT or PUCT over tic-tac-toe with ``rollouts`` random rollouts per leaf."""
  import jaxsearch as js
  from jaxsearch.games import tictactoe as t3
  estimator = js.estimators.rollout(t3.GAME, rollouts)
  if rule == "uct":
    return js.policies.uct(t3.GAME, estimator, num_simulations=simulations,
                           exploration=exploration)
  if rule == "puct":
    return js.policies.puct(t3.GAME, estimator, num_simulations=simulations, c=c)
  raise ValueError(f"unknown rule {rule!r}")


def sweep(search, states, count: int, *, seed: int, chunk: int):
  """Runs ``search`` over the first ``count`` of ``states`` in padded chunks of ``chunk`` (one
  compile). Returns ``(actions i32[P], visits i32[P, 9], compile_s, run_s)``."""
  import jax

  from jaxsearch.app import timing

  def summary(key, roots):
    out = search(None, key, roots)
    return out.action, out.visit_counts  # leave the tree on the device side

  key = jax.random.PRNGKey(seed)
  actions, visits = [], []
  fn, compile_s, run_s = None, 0.0, 0.0
  for i, start in enumerate(range(0, count, chunk)):
    stop = min(start + chunk, count)
    # Pad with copies of the first state so every call has the compiled shape.
    idx = np.concatenate([np.arange(start, stop), np.zeros(chunk - (stop - start), np.int64)])
    args = (jax.random.fold_in(key, i), jax.tree.map(lambda x: x[idx], states))
    if fn is None:
      with timing.Stopwatch() as watch:
        fn = jax.jit(summary).lower(*args).compile()
      compile_s = watch.seconds
    with timing.Stopwatch() as watch:
      a, v = jax.block_until_ready(fn(*args))
    run_s += watch.seconds
    actions.append(np.asarray(a)[:stop - start])
    visits.append(np.asarray(v)[:stop - start])
  return np.concatenate(actions), np.concatenate(visits), compile_s, run_s


def mistakes(actions: np.ndarray, qs: np.ndarray) -> np.ndarray:
  """``bool[P]``: the chosen move is illegal or worse than the best legal move."""
  best = qs.max(axis=1)  # -inf entries never win the max at a non-terminal position
  chosen = qs[np.arange(len(actions)), np.clip(actions, 0, 8)]
  return (actions < 0) | ~np.isfinite(chosen) | (chosen < best)


def _parser(prog: str):
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--rule", choices=("uct", "puct"), default="uct")
  parser.add_argument("--simulations", type=positive_int, default=2000)
  parser.add_argument("--rollouts", type=positive_int, default=1)
  parser.add_argument("--c", type=float, default=None, help="PUCT constant (default: MuZero)")
  parser.add_argument("--exploration", type=float, default=float(np.sqrt(2.0)),
                      help="UCT constant")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--chunk", type=positive_int, default=128)
  parser.add_argument("--limit", type=positive_int, default=None,
                      help="the first LIMIT positions only")
  parser.add_argument("--show", type=int, default=5)
  parser.add_argument("--quick", action="store_true",
                      help="the first 16 positions, 64 simulations, chunks of 8: a smoke run")
  return parser


def main(argv=None, prog: str = "jaxsearch bench tictactoe") -> int:
  """Runs the sweep with the command line ``argv``; returns the exit status."""
  from jaxsearch.app import timing
  args = _parser(prog).parse_args(argv)
  if args.quick:
    args.limit, args.simulations, args.chunk = 16, 64, 8
  states, qs = decisive_positions()
  qs = qs[:args.limit]
  search = make_search(args.rule, args.simulations, args.rollouts, args.c, args.exploration)
  actions, visits, compile_s, run_s = sweep(search, states, len(qs), seed=args.seed,
                                            chunk=args.chunk)
  bad = mistakes(actions, qs)
  boards = np.asarray(states.board)
  shown = [{"board": boards[p].tolist(), "action": int(actions[p]),
            "visits": visits[p].tolist(),
            "minimax": [None if not np.isfinite(q) else float(q) for q in qs[p]]}
           for p in np.flatnonzero(bad)[:args.show]]
  timing.emit({
      "benchmark": "tictactoe", "rule": args.rule, "simulations": args.simulations,
      "rollouts": args.rollouts, "c": args.c,
      "exploration": args.exploration if args.rule == "uct" else None,
      "seed": args.seed, "positions": int(len(qs)), "decisive": int(len(qs) - 1),
      "mistakes": int(bad.sum()), "empty_board_mistake": bool(bad[0]),
      "compile_s": round(compile_s, 2), "sweep_s": round(run_s, 2), "failures": shown})
  return 0
