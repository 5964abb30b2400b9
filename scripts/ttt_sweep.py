"""Sweeps a search over every decisive tic-tac-toe position and counts minimax mistakes.

A position is *decisive* when it is reachable, not terminal, and its legal moves do not all
have the same minimax value (so a wrong choice changes the result: 3,191 of the 4,520
non-terminal positions). The empty board is added on top (all its moves draw, so it can only
fail by crashing, but the issue names it). A *mistake* is a chosen move whose minimax action
value is below the best legal one.

    python scripts/ttt_sweep.py --rule uct --simulations 2000 --rollouts 1
    python scripts/ttt_sweep.py --rule puct --simulations 1000 --rollouts 1 --c 1.0

Prints one JSON line: settings, position counts, mistakes, seconds (compile, and the sweep
after it) and up to ``--show`` failing positions (board, chosen move, root visit counts and
minimax action values, ``null`` = illegal). Chunk ``i`` of the positions is searched with the
key ``fold_in(PRNGKey(seed), i)``, as in ``tests/test_tictactoe_search.py``, so a sweep with
the same settings and ``--chunk 128`` reproduces the slow tests exactly.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np


import jaxsearch as js  # noqa: E402
from jaxsearch.games import tictactoe as t3  # noqa: E402


def decisive_positions() -> tuple[t3.State, np.ndarray]:
  """The decisive positions plus the empty board (first), and their ``f32[P, 9]`` minimax
  action values (``-inf`` illegal)."""
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


def make_search(rule: str, simulations: int, rollouts: int, c: float | None,
                exploration: float):
  estimator = js.estimators.rollout(t3.GAME, rollouts)
  if rule == "uct":
    return js.policies.uct(t3.GAME, estimator, num_simulations=simulations,
                           exploration=exploration)
  if rule == "puct":
    return js.policies.puct(t3.GAME, estimator, num_simulations=simulations, c=c)
  raise ValueError(f"unknown rule {rule!r}")


def sweep(search, states, qs: np.ndarray, *, seed: int, chunk: int):
  """Runs ``search`` over ``states`` in padded chunks of ``chunk`` (one compile).

  Returns ``(actions i32[P], visits i32[P, 9], compile_s, run_s)``.
  """

  def summary(key, roots):
    out = search(None, key, roots)
    return out.action, out.visit_counts  # leave the tree on the device side

  fn = jax.jit(summary)
  total = qs.shape[0]
  key = jax.random.PRNGKey(seed)
  actions, visits = [], []
  compile_s = run_s = 0.0
  for i, start in enumerate(range(0, total, chunk)):
    stop = min(start + chunk, total)
    # Pad with copies of the first state so every call has the compiled shape.
    idx = np.concatenate([np.arange(start, stop), np.zeros(chunk - (stop - start), np.int64)])
    roots = jax.tree.map(lambda x: x[idx], states)
    t0 = time.perf_counter()
    if i == 0:
      fn = fn.lower(jax.random.fold_in(key, i), roots).compile()
      compile_s = time.perf_counter() - t0
      t0 = time.perf_counter()
    a, v = jax.block_until_ready(fn(jax.random.fold_in(key, i), roots))
    run_s += time.perf_counter() - t0
    actions.append(np.asarray(a)[:stop - start])
    visits.append(np.asarray(v)[:stop - start])
  return np.concatenate(actions), np.concatenate(visits), compile_s, run_s


def mistakes(actions: np.ndarray, qs: np.ndarray) -> np.ndarray:
  """``bool[P]``: the chosen move is illegal or worse than the best legal move."""
  best = qs.max(axis=1)  # -inf entries never win the max at a non-terminal position
  chosen = qs[np.arange(len(actions)), np.clip(actions, 0, 8)]
  return (actions < 0) | ~np.isfinite(chosen) | (chosen < best)


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rule", choices=("uct", "puct"), default="uct")
  parser.add_argument("--simulations", type=int, default=2000)
  parser.add_argument("--rollouts", type=int, default=1)
  parser.add_argument("--c", type=float, default=None, help="PUCT constant (default: MuZero)")
  parser.add_argument("--exploration", type=float, default=float(np.sqrt(2.0)),
                      help="UCT constant")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--chunk", type=int, default=128)
  parser.add_argument("--limit", type=int, default=None, help="first N positions only")
  parser.add_argument("--show", type=int, default=5)
  args = parser.parse_args(argv)

  states, qs = decisive_positions()
  if args.limit is not None:
    states = jax.tree.map(lambda x: x[:args.limit], states)
    qs = qs[:args.limit]
  search = make_search(args.rule, args.simulations, args.rollouts, args.c, args.exploration)
  actions, visits, compile_s, run_s = sweep(search, states, qs, seed=args.seed,
                                            chunk=args.chunk)
  bad = mistakes(actions, qs)
  boards = np.asarray(states.board)
  shown = []
  for p in np.flatnonzero(bad)[:args.show]:
    shown.append({"board": boards[p].tolist(), "action": int(actions[p]),
                  "visits": visits[p].tolist(),
                  "minimax": [None if not np.isfinite(q) else float(q) for q in qs[p]]})
  print(json.dumps({
      "rule": args.rule, "simulations": args.simulations, "rollouts": args.rollouts,
      "c": args.c, "exploration": args.exploration if args.rule == "uct" else None,
      "seed": args.seed, "positions": int(len(qs)), "decisive": int(len(qs) - 1),
      "mistakes": int(bad.sum()), "empty_board_mistake": bool(bad[0]),
      "compile_s": round(compile_s, 2), "sweep_s": round(run_s, 2), "failures": shown}))


if __name__ == "__main__":
  main()
