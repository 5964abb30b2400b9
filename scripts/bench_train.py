"""Training throughput at the default settings: self-play positions/s, updates/s, and where a
training step's time goes (search without the network, the network inside the search, the
gradient update, the rest: replay writes, reroot, game steps).

    python scripts/bench_train.py [--game tictactoe|connect_four] [--preset cpu|accelerator]
                                  [--steps 50] [--set K=V ...]

Prints one JSON line. The steps are timed as ``jaxsearch train`` runs them: ``metrics_every``
steps (:meth:`Trainer.advance <jaxsearch.train.trainer.Trainer.advance>`: one device loop, or
one call a step), then one read of their metrics; ``step_ms`` is such an interval's median
time per step. Each part is timed on its own jitted function after a warm-up (so compilation
is excluded and reported separately as ``compile_s``); the network's share is its batched
forward pass times the ``S + 1`` estimator calls of one search.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


import jax  # noqa: E402

from jaxsearch.app import training  # noqa: E402
from jaxsearch.cli.train import parse_overrides  # noqa: E402
from jaxsearch.train import networks, replay  # noqa: E402
from jaxsearch.train.config import TrainConfig  # noqa: E402


def _time(fn, repeats: int) -> float:
  """Median seconds of ``fn()`` (which must block) over ``repeats`` calls."""
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
  times.sort()
  return times[len(times) // 2]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--game", choices=training.games(), default="tictactoe")
  parser.add_argument("--preset", choices=["cpu", "accelerator"], default=None,
                      help="the game's preset (default: the one for this backend)")
  parser.add_argument("--steps", type=int, default=50,
                      help="timed steps (whole read intervals) and repetitions of each part")
  parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
  args = parser.parse_args(argv)
  config = training.preset(args.game, args.preset, eval_every=-1,
                           **parse_overrides(args.set, TrainConfig))
  every = config.metrics_every
  t0 = time.perf_counter()
  trainer = training.trainer(config, evaluator=False)
  ts = trainer.init_state()
  ts, pending = trainer.advance(ts, 1)  # the program of any interval: compiled here
  trainer.fetch_metrics(pending)
  compile_s = time.perf_counter() - t0
  # Fill the buffer so that the timed steps include their updates.
  while int(ts.buffer.size) < config.min_replay:
    ts, pending = trainer.advance(ts, every)
  trainer.fetch_metrics(pending)

  state = {"ts": ts}

  def interval():
    state["ts"], pending = trainer.advance(state["ts"], every)
    trainer.fetch_metrics(pending)

  step_s = _time(interval, max(1, -(-args.steps // every))) / every
  ts = state["ts"]
  games = ts.selfplay
  key = jax.random.PRNGKey(1)
  search = jax.jit(trainer.search)
  search_call = lambda: jax.block_until_ready(  # noqa: E731
      search(ts.params, key, games.states, games.tree).action)
  search_call()
  search_s = _time(search_call, args.steps)
  apply = jax.jit(networks.apply, static_argnums=0)
  obs = jax.vmap(trainer.observe)(games.states)
  net_call = lambda: jax.block_until_ready(apply(trainer.graphdef, ts.params, obs).value)  # noqa
  net_call()
  network_s = _time(net_call, args.steps) * (config.simulations + 1)
  train_step = jax.jit(trainer.train_step)
  batch = replay.sample(ts.buffer, key, config.train_batch)
  update_call = lambda: jax.block_until_ready(  # noqa: E731
      train_step(ts.params, ts.opt_state, batch)[2]["loss"])
  update_call()
  update_s = _time(update_call, args.steps) * config.updates_per_step

  moves = config.moves_per_step
  search_total = search_s * moves
  network_total = min(network_s * moves, search_total)
  # The parts are timed separately, under the same load but not at the same moment: shares
  # are of max(step, search + update), so they add up to 1 even when the parts' medians
  # slightly exceed the step's.
  whole = max(step_s, search_total + update_s)
  rest = whole - search_total - update_s
  result = dict(
      game=args.game, preset=config.preset, policy=config.policy, network=config.network,
      channels=config.channels if config.network == "resnet" else None,
      blocks=config.blocks if config.network == "resnet" else None,
      compute_dtype=config.compute_dtype, metrics_every=every,
      device_loop=config.device_loop, batch_size=config.batch_size,
      simulations=config.simulations,
      train_batch=config.train_batch, updates_per_step=config.updates_per_step,
      positions_per_s=round(config.batch_size * moves / step_s, 1),
      updates_per_s=round(config.updates_per_step / step_s, 2),
      step_ms=round(step_s * 1e3, 2),
      share_search=round((search_total - network_total) / whole, 3),
      share_network=round(network_total / whole, 3),
      share_update=round(update_s / whole, 3),
      share_other=round(rest / whole, 3),
      compile_s=round(compile_s, 1),
      devices=str(jax.devices()[0].platform))
  print(json.dumps(result))
  return 0


if __name__ == "__main__":
  sys.exit(main())
