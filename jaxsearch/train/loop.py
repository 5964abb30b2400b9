"""The training loop: self-play with the batched search, replay, updates, evaluation.

One **step** is one jitted call: ``moves_per_step`` self-play moves in all ``batch_size``
games (each one batched search), then ``updates_per_step`` gradient updates on batches
sampled from the replay buffer (none until it holds ``min_replay`` positions). The step's
keys are ``fold_in(seed key, step)``, so a run is a deterministic function of its
configuration, seed and step count — which is what makes resuming exact: the whole
:class:`TrainState` (parameters, optimiser state, replay buffer, games in progress and their
trees, key, step) is checkpointed, and a resumed run continues bit for bit.

    trainer = Trainer(preset("tictactoe"), out_dir="runs/ttt")
    summary = trainer.run(minutes=5)          # or steps=...; resume=True continues

Outputs in ``out_dir``: ``metrics.jsonl`` (one JSON object per logged step; evaluation
fields when evaluated), ``checkpoints/`` (orbax), ``config.json``, and with ``plot`` a PNG.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch import policies, sharding
from jaxsearch.train import checkpoint as checkpoint_lib
from jaxsearch.train import losses, networks, replay, selfplay

GAMES = ("tictactoe", "connect_four")
PGX_PREFIX = "pgx:"  # "pgx:ENV_ID" trains on a pgx environment (games.pgx_env)
POLICIES = ("alphazero", "avts", "gumbel")
# Configuration fields a resumed run may change (they do not change what a step computes;
# ``devices`` changes the updates only by float summation order).
MAY_CHANGE = ("steps", "minutes", "checkpoint_every", "eval_every", "eval_games",
              "eval_uct_simulations", "log_every", "devices")
SLEEP_ENV = "JAXSEARCH_TRAIN_STEP_SLEEP"  # tests: seconds to sleep after each step
# Settings added after checkpoints were first written: a checkpoint without one is taken to
# have used its default (``CONFIG_DEFAULTS``, read from ``TrainConfig`` below; see
# ``checkpoint.Checkpointer``), so a new setting's default must be the old behaviour.
ADDED_SETTINGS = ("pibar_target", "gumbel_c_scale", "ones_plane")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Everything that defines a training run (see :func:`preset` for the per-game defaults).

  Attributes:
    game: ``"tictactoe"``, ``"connect_four"`` or ``"pgx:ENV_ID"``, any pgx environment
      (:mod:`games.pgx_env`; its observation is the network input).
    policy: ``"alphazero"`` (PUCT + root Dirichlet noise), ``"avts"`` (needs the action-value
      head, added automatically; its targets are the search's root q̂3) or ``"gumbel"``
      (Gumbel MuZero: the Gumbel draw explores, the improved policy is the policy target;
      evaluated with ``gumbel_scale = 0``).
    seed: the run's seed (network initialisation and every step's keys).
    network: ``"mlp"`` or ``"resnet"``; ``hidden`` (MLP widths), ``channels``, ``blocks``,
      ``head_hidden``, ``ones_plane`` (ResNet: a constant input plane, so that the zero
      padding differs from empty cells).
    batch_size: games played in lock-step.
    simulations: search simulations per move; ``max_nodes`` tree capacity (0 = ``2 S + 1``,
      room for a reused subtree of up to ``S`` nodes plus a full search; bigger kept subtrees
      are dropped rather than let the tree fill up).
    c: PUCT constant (``None``: the MuZero schedule, ``c ≈ 1.25``).
    temperature_moves: plies per game sampled from the visit counts (τ = 1); greedy after.
    random_opening: games start with up to this many uniformly random plies, not recorded
      (see :mod:`selfplay`; 0 = off).
    dirichlet_fraction, dirichlet_alpha: root noise of the self-play search.
    value_target: ``"outcome"``, ``"search"`` or ``"mix"`` (see :mod:`selfplay`).
    reuse: subtree reuse between moves (never with ``policy="gumbel"``: its root must be
      fresh).
    gumbel_c_scale: σ's ``c_scale`` of ``policy="gumbel"`` (0.1 as mctx; the Gumbel MuZero
      paper uses 1.0 for board games): how far the improved-policy target moves from the
      prior toward the actions with the best Q.
    pibar_target: train the policy head on π̄ (Grill et al. 2020, the search's regularised
      policy at the root: ``out.policy_target``) instead of the visit distribution; PUCT
      only (Gumbel has its own improved policy as the target).
    moves_per_step, updates_per_step: see the module docstring.
    replay_capacity, min_replay, train_batch: replay buffer size, positions needed before
      the first update, and the update batch size.
    learning_rate, warmup_steps, decay_steps, weight_decay, l2: AdamW on a warm-up + cosine
      schedule (in updates), plus ``λ = l2`` in the loss.
    action_value_weight: weight of the action-value regression (AVTS).
    steps, minutes: stop conditions (0 = none); the run stops at the first reached, at a step
      boundary.
    checkpoint_every, eval_every, log_every: in steps (the final step is always checkpointed,
      evaluated and logged); ``eval_every < 0`` turns evaluation off, the final one too.
    eval_simulations: the fixed search budget of the evaluation (temperature 0, no noise).
    eval_games: games against the perfect player (tic-tac-toe) or a random player (Connect
      Four) per evaluation; eval_uct_simulations: UCT-with-rollouts opponent's budget in the
      final Connect Four evaluation (0 = skip).
    devices: split the self-play games and every update batch over the first ``devices``
      devices (:mod:`jaxsearch.sharding`; 0 = one device, no sharding). Self-play is
      bit-identical on any number of devices (per-game keys); the updates' gradients are
      all-reduced by XLA and equal one device's up to float summation order.
      ``batch_size`` and ``train_batch`` must be divisible by it.
  """

  game: str = "tictactoe"
  policy: str = "alphazero"
  seed: int = 0
  network: str = "mlp"
  hidden: tuple = (64, 64)
  channels: int = 32
  blocks: int = 2
  head_hidden: int = 64
  ones_plane: bool = False
  batch_size: int = 128
  simulations: int = 32
  max_nodes: int = 0
  c: Optional[float] = None
  temperature_moves: int = 2
  random_opening: int = 0
  dirichlet_fraction: float = 0.25
  dirichlet_alpha: float = 1.0
  value_target: str = "outcome"
  reuse: bool = True
  pibar_target: bool = False
  gumbel_c_scale: float = 0.1
  moves_per_step: int = 1
  updates_per_step: int = 1
  replay_capacity: int = 20000
  min_replay: int = 512
  train_batch: int = 256
  learning_rate: float = 2e-3
  warmup_steps: int = 50
  decay_steps: int = 3000
  weight_decay: float = 1e-4
  l2: float = 1e-4
  action_value_weight: float = 1.0
  steps: int = 0
  minutes: float = 0.0
  checkpoint_every: int = 200
  eval_every: int = 100
  log_every: int = 1
  eval_simulations: int = 32
  eval_games: int = 100
  eval_uct_simulations: int = 0
  devices: int = 0

  def __post_init__(self):
    if self.game not in GAMES and not str(self.game).startswith(PGX_PREFIX):
      raise ValueError(f"game must be one of {GAMES} or 'pgx:ENV_ID', got {self.game!r}")
    if self.policy not in POLICIES:
      raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
    for name in ("batch_size", "simulations", "moves_per_step", "replay_capacity",
                 "train_batch", "eval_simulations"):
      if int(getattr(self, name)) < 1:
        raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
    if int(self.updates_per_step) < 1:
      raise ValueError(f"updates_per_step must be >= 1, got {self.updates_per_step!r}")
    if int(self.min_replay) > int(self.replay_capacity):
      raise ValueError(f"min_replay = {self.min_replay} exceeds replay_capacity = "
                       f"{self.replay_capacity}: the buffer could never hold enough "
                       "positions and no update would ever run")
    if int(self.eval_games) < 2 or int(self.eval_games) % 2:
      raise ValueError(f"eval_games must be an even number >= 2 (each side half the games), "
                       f"got {self.eval_games!r}")
    if self.pibar_target and self.policy != "alphazero":
      raise ValueError("pibar_target needs policy='alphazero' (PUCT)")
    if int(self.devices) < 0:
      raise ValueError(f"devices must be >= 0 (0 = one device), got {self.devices!r}")
    for name in ("batch_size", "train_batch"):
      if self.devices and int(getattr(self, name)) % int(self.devices):
        raise ValueError(f"{name} = {getattr(self, name)} is not divisible by "
                         f"devices = {self.devices}: each device takes an equal share")

  @property
  def nodes(self) -> int:
    return self.max_nodes or 2 * self.simulations + 1

  def to_dict(self) -> dict:
    return dataclasses.asdict(self)



CONFIG_DEFAULTS = {field.name: field.default for field in dataclasses.fields(TrainConfig)
                   if field.name in ADDED_SETTINGS}

def preset(game: str, **overrides) -> TrainConfig:
  """The default configuration for ``game``, with ``overrides``."""
  if game == "tictactoe":
    base = dict(game=game, network="mlp", hidden=(64, 64), batch_size=128, simulations=32,
                temperature_moves=2, random_opening=6, dirichlet_alpha=1.0,
                replay_capacity=20000, min_replay=512, train_batch=256, updates_per_step=1,
                learning_rate=2e-3, decay_steps=3000, checkpoint_every=250, eval_every=250,
                eval_simulations=64, eval_games=100)
  elif game == "connect_four":
    # Gumbel, not PUCT: see docs/training.md (PUCT's visit-count targets at 32 simulations
    # never learnt immediate wins and blocks).
    base = dict(game=game, policy="gumbel", value_target="mix", network="resnet",
                channels=16, blocks=1, head_hidden=32, ones_plane=True,
                batch_size=128, simulations=32, temperature_moves=4, random_opening=8,
                dirichlet_alpha=1.0, replay_capacity=100000, min_replay=4096,
                train_batch=256, updates_per_step=2, learning_rate=2e-3, decay_steps=20000,
                checkpoint_every=500, eval_every=1000, eval_simulations=128, eval_games=100,
                eval_uct_simulations=200)
  elif str(game).startswith(PGX_PREFIX):
    base = _pgx_preset(game)
  else:
    raise ValueError(f"no preset for game {game!r}; expected one of {GAMES} or 'pgx:ENV_ID'")
  base.update(overrides)
  return TrainConfig(**base)


def _pgx_preset(game: str) -> dict:
  """Defaults for any pgx game: Gumbel MuZero self-play (as pgx's own AlphaZero example), a
  small ResNet over ``[H, W, C]`` observations (an MLP over others), evaluation against a
  random player (and, at the end, UCT with random rollouts)."""
  from games import pgx_env
  module = pgx_env.module_for(game)
  obs = jax.eval_shape(module.observe, module.GAME.init(jax.random.PRNGKey(0)))
  network = (dict(network="resnet", channels=16, blocks=2, head_hidden=32, ones_plane=True)
             if len(obs.shape) == 3 else dict(network="mlp", hidden=(128, 128)))
  return dict(game=game, policy="gumbel", value_target="mix", **network, batch_size=64,
              simulations=32, temperature_moves=4, random_opening=4, dirichlet_alpha=0.3,
              replay_capacity=50000, min_replay=1024, train_batch=256, updates_per_step=2,
              learning_rate=2e-3, decay_steps=20000, checkpoint_every=500, eval_every=50,
              eval_simulations=32, eval_games=64, eval_uct_simulations=100)


def game_module(name: str):
  """The module under ``games`` of a training game (``GAME``, ``observe``, ``render``); for
  ``"pgx:ENV_ID"`` the same three built by :func:`games.pgx_env.module_for`."""
  import importlib
  if str(name).startswith(PGX_PREFIX):
    from games import pgx_env
    return pgx_env.module_for(name)
  return importlib.import_module(f"games.{name}")


@struct.dataclass
class TrainState:
  """Everything a step reads and writes (all arrays; checkpointed whole).

  Attributes:
    params: the network's parameters (``nnx.State``).
    opt_state: the optimiser state.
    buffer: the replay buffer.
    selfplay: the games in progress and their trees.
    key: the run's base key (``fold_in(key, step)`` keys step ``step``).
    step: ``i32[]`` steps done.
    updates: ``i32[]`` gradient updates done.
  """

  params: Any
  opt_state: Any
  buffer: replay.Buffer
  selfplay: selfplay.SelfPlayState
  key: jax.Array
  step: jax.Array
  updates: jax.Array


Evaluator = Callable[[Any, jax.Array, bool], dict]
"""``(params, key, final) -> {name: number or dict}``; ``final`` marks the end-of-run one."""


class Trainer:
  """Builds the network, searches, self-play, optimiser and the jitted step of a config.

  Args:
    config: the run's :class:`TrainConfig`.
    out_dir: where metrics, checkpoints and plots go (``None``: nothing is written).
    evaluator: ``(params, key, final) -> dict``; default :func:`default_evaluator`. Pass
      ``False`` to skip evaluation.
  """

  def __init__(self, config: TrainConfig, out_dir: Optional[str | Path] = None,
               evaluator: Optional[Evaluator] | bool = None):
    self.config = config
    self.out_dir = Path(out_dir) if out_dir is not None else None
    self.module = game_module(config.game)
    self.game = self.module.GAME
    self.observe = self.module.observe
    obs_shape = jax.eval_shape(self.observe, self.game.init(jax.random.PRNGKey(0))).shape
    self.action_values = config.policy == "avts"
    sizes = (dict(hidden=tuple(config.hidden)) if config.network == "mlp" else
             dict(channels=config.channels, blocks=config.blocks,
                  head_hidden=config.head_hidden, ones_plane=config.ones_plane))
    self.graphdef, self.initial_params = networks.init(
        config.network, obs_shape, self.game.num_actions, seed=config.seed,
        action_values=self.action_values, **sizes)
    self.estimator = networks.estimator_from_network(self.graphdef, self.observe)
    self.devices = sharding.resolve_devices(config.devices or None)
    self.search = self.make_search(config.simulations, config.nodes,
                                   config.dirichlet_fraction, devices=self.devices)
    self.eval_search = self.make_search(config.eval_simulations, config.eval_simulations + 1,
                                        0.0)
    self.selfplay = selfplay.SelfPlay(
        game=self.game, observe=self.observe, search=self.search,
        batch_size=config.batch_size, temperature_moves=config.temperature_moves,
        random_opening=config.random_opening,
        # Gumbel's guarantees assume a fresh root: a reused one's old visits would decide
        # Sequential Halving and the final action, and self-play would stop exploring.
        value_target=config.value_target, reuse=config.reuse and config.policy != "gumbel",
        action_values=self.action_values, sample_visits=config.policy != "gumbel")
    self.optimizer = losses.make_optimizer(
        config.learning_rate, warmup_steps=config.warmup_steps,
        decay_steps=config.decay_steps, weight_decay=config.weight_decay)
    self.train_step = losses.make_train_step(self.graphdef, self.optimizer, l2=config.l2,
                                             action_value_weight=config.action_value_weight)
    self.play_move = selfplay.make_step(self.selfplay)
    self.iterate = jax.jit(self._iterate, donate_argnums=0)
    if evaluator is None and config.eval_every >= 0:
      evaluator = default_evaluator(self)
    if config.eval_every < 0:
      evaluator = False
    self.evaluator = evaluator or None

  # ---- building blocks ----

  def make_search(self, simulations: int, max_nodes: int, noise: float,
                  devices=None) -> policies.Search:
    """A temperature-0 search of the configured policy with this network as estimator
    (its batch split over ``devices``, if given)."""
    config = self.config
    if config.policy == "avts":
      return policies.avts(self.game, self.estimator, num_simulations=simulations,
                           max_nodes=max(max_nodes, simulations + 1), devices=devices)
    if config.policy == "gumbel":
      if not hasattr(policies, "gumbel"):
        raise ValueError("policy 'gumbel' needs jaxsearch.policies.gumbel, which this "
                         "version does not have yet; use 'alphazero' or 'avts'")
      return policies.gumbel(self.game, self.estimator, num_simulations=simulations,
                             max_nodes=max_nodes, gumbel_scale=1.0 if noise > 0 else 0.0,
                             c_scale=config.gumbel_c_scale, devices=devices)
    return policies.puct(self.game, self.estimator, num_simulations=simulations,
                         c=config.c, max_nodes=max_nodes, dirichlet_fraction=noise,
                         dirichlet_alpha=config.dirichlet_alpha, temperature=0.0,
                         devices=devices, pibar_target=config.pibar_target)

  def logits(self, params, states) -> jax.Array:
    """``f32[B, A]`` the raw network's policy logits at ``states``."""
    return networks.apply(self.graphdef, params, jax.vmap(self.observe)(states)).logits

  def init_state(self) -> TrainState:
    """The state at step 0 (fresh network, empty buffer, new games)."""
    key = jax.random.PRNGKey(self.config.seed)
    params = self.initial_params
    buffer = replay.init(self.config.replay_capacity, self.selfplay.example())
    games = jax.jit(self.selfplay.init)(params, jax.random.fold_in(key, 2**31 - 1))
    state = TrainState(params=params, opt_state=self.optimizer.init(params), buffer=buffer,
                       selfplay=games, key=key, step=jnp.zeros((), jnp.int32),
                       updates=jnp.zeros((), jnp.int32))
    return jax.tree.map(jnp.copy, state)  # distinct buffers: the step donates its input

  def _iterate(self, ts: TrainState):
    config = self.config
    key = jax.random.fold_in(ts.key, ts.step)
    play_key, train_key = jax.random.split(key)

    def play(carry, i):
      games, buffer = carry
      games, buffer, info = self.play_move(ts.params, jax.random.fold_in(play_key, i), games,
                                           buffer)
      return (games, buffer), info

    # A Python loop, not a scan: the games' trees and the replay buffer must not become a
    # loop carry (DESIGN.md); moves_per_step is small.
    carry, infos = (ts.selfplay, ts.buffer), []
    for i in range(config.moves_per_step):
      carry, info = play(carry, i)
      infos.append(info)
    games, buffer = carry
    info = jax.tree.map(lambda *xs: sum(xs), *infos)

    # The updates are unrolled at the top level of the step, not in a scan or a cond: on CPU,
    # XLA runs the network's convolutions several times slower inside control flow. Before
    # the buffer holds min_replay positions the update is computed and discarded.
    ready = buffer.size >= config.min_replay
    params, opt_state, updates = ts.params, ts.opt_state, ts.updates
    history = []
    for i in range(config.updates_per_step):
      batch = replay.sample(buffer, jax.random.fold_in(train_key, i), config.train_batch)
      # Data parallel over the devices: the batch split, the parameters replicated; XLA
      # all-reduces the gradients (jaxsearch.sharding.data_parallel's recipe, inlined here
      # because the step is already inside this jit).
      batch = sharding.constrain_batch(batch, self.devices, "update batch")
      params, opt_state = sharding.constrain_replicated((params, opt_state), self.devices)
      new_params, new_opt_state, step_metrics = self.train_step(params, opt_state, batch)
      params, opt_state = jax.tree.map(lambda new, old: jnp.where(ready, new, old),
                                       (new_params, new_opt_state), (params, opt_state))
      updates = updates + ready.astype(jnp.int32)
      history.append(jax.tree.map(lambda x: jnp.where(ready, x, jnp.zeros_like(x)),
                                  step_metrics))
    metrics = jax.tree.map(lambda *xs: jnp.stack(xs), *history)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics.update(info)
    metrics["buffer"] = buffer.size
    metrics["updates"] = updates
    new = TrainState(params=params, opt_state=opt_state, buffer=buffer, selfplay=games,
                     key=ts.key, step=ts.step + 1, updates=updates)
    return new, metrics

  # ---- the run ----

  def checkpointer(self) -> checkpoint_lib.Checkpointer:
    if self.out_dir is None:
      raise ValueError("checkpoints need an out_dir")
    return checkpoint_lib.Checkpointer(self.out_dir, self.config.to_dict(),
                                       may_change=MAY_CHANGE, defaults=CONFIG_DEFAULTS)

  def run(self, *, steps: Optional[int] = None, minutes: Optional[float] = None,
          resume: bool = False, progress: bool = True, plot: bool = False,
          console=None, started: Optional[float] = None) -> dict:
    """Trains until ``steps`` (total, counting resumed ones) or ``minutes`` (this call's wall
    clock, compilation included) is reached, at a step boundary; checkpoints, evaluates.

    ``started``: the ``time.perf_counter()`` the clock counts from (default: now; the CLI
    passes its own start, so imports and building the trainer count too).

    Returns:
      the summary: the final evaluation's fields plus ``steps``, ``positions`` (self-play
      positions played, all runs), ``games``, ``updates``, ``minutes`` (this call),
      ``out_dir``.
    """
    config = self.config
    steps = config.steps if steps is None else steps
    minutes = config.minutes if minutes is None else minutes
    started = time.perf_counter() if started is None else started
    out = self.out_dir
    ckpt = self.checkpointer() if out is not None else None
    if resume and ckpt is None:
      raise ValueError("resume needs an out_dir")
    if not resume and ckpt is not None and ckpt.latest_step() is not None:
      raise ValueError(f"{out} already holds checkpoints of a run: pass resume=True to "
                       "continue it, or choose another out_dir")
    if resume and ckpt.latest_step() is not None:
      # The template's shapes suffice (nothing is computed); the configuration is checked
      # before any array is read.
      ts, _ = ckpt.restore(jax.eval_shape(self.init_state))
      ts = jax.tree.map(jnp.asarray, ts)
    else:
      ts = self.init_state()
    if out is not None:  # after a successful restore: a mismatched resume changes nothing
      out.mkdir(parents=True, exist_ok=True)
      (out / "config.json").write_text(json.dumps(config.to_dict(), indent=1) + "\n")
    start_step = int(ts.step)
    metrics_path = out / "metrics.jsonl" if out is not None else None
    if metrics_path is not None:
      _truncate_metrics(metrics_path, start_step)
    sleep = float(os.environ.get(SLEEP_ENV, "0") or 0)
    positions_per_step = config.batch_size * config.moves_per_step
    last_eval: dict = {}
    last_final = False  # whether last_eval was a final evaluation (the UCT match etc.)
    last_saved = start_step
    step = start_step
    bar = _Bar(progress, steps, minutes, console)
    try:
      with bar:
        while True:
          elapsed = time.perf_counter() - started
          if steps and step >= steps:
            break
          if minutes and elapsed >= minutes * 60:
            break
          if not steps and not minutes:
            raise ValueError("give a stop condition: steps or minutes")
          t0 = time.perf_counter()
          ts, metrics = self.iterate(ts)
          metrics = jax.device_get(metrics)
          step += 1
          dt = time.perf_counter() - t0
          row = {"step": step, "positions": step * positions_per_step,
                 "time": round(time.perf_counter() - started, 3),
                 "positions_per_s": round(positions_per_step / max(dt, 1e-9), 1)}
          row.update({k: _number(v) for k, v in metrics.items()})
          final = (steps and step >= steps) or (
              minutes and time.perf_counter() - started >= minutes * 60)
          if self.evaluator is not None and ((config.eval_every > 0 and
                                              step % config.eval_every == 0) or final):
            last_eval = self.evaluate(ts.params, step, final=bool(final))
            last_final = bool(final)
            row.update(_flatten(last_eval))
          if metrics_path is not None and (final or step % max(config.log_every, 1) == 0
                                           or last_eval and "eval_step" in row):
            with metrics_path.open("a") as f:
              f.write(json.dumps(row) + "\n")
          if ckpt is not None and ((config.checkpoint_every and
                                    step % config.checkpoint_every == 0) or final):
            ckpt.save(step, ts)
            last_saved = step
          bar.update(step, row, last_eval, time.perf_counter() - started)
          if sleep:
            time.sleep(sleep)
    finally:
      if ckpt is not None:
        if step != last_saved:
          ckpt.save(step, ts)
        ckpt.close()
    self.state = ts
    if self.evaluator is not None and not (last_eval.get("eval_step") == step and last_final):
      last_eval = self.evaluate(ts.params, step, final=True)
    summary = dict(last_eval)
    summary.update(
        steps=step, positions=int(ts.selfplay.moves), games=int(ts.selfplay.games),
        updates=int(ts.updates), minutes=round((time.perf_counter() - started) / 60, 3),
        out_dir=str(out) if out is not None else None)
    if plot and metrics_path is not None:
      summary["plot"] = str(plot_metrics(metrics_path, out / "training.png",
                                         title=f"{config.game} ({config.policy})"))
    return summary

  def evaluate(self, params, step: int, final: bool = False) -> dict:
    """Runs the evaluator with the key ``fold_in(PRNGKey(seed + 1), step)``."""
    key = jax.random.fold_in(jax.random.PRNGKey(self.config.seed + 1), step)
    t0 = time.perf_counter()
    result = dict(self.evaluator(params, key, final))
    result["eval_step"] = step
    result["eval_seconds"] = round(time.perf_counter() - t0, 2)
    return result


def load_trained(out_dir: str | Path, step: Optional[int] = None) -> tuple[Trainer, Any]:
  """``(trainer, params)`` of a run's newest checkpoint (or ``step``), the configuration read
  from its ``config.json``; no evaluator is built.

  Raises:
    FileNotFoundError: no ``config.json`` or no checkpoint in ``out_dir``.
    CheckpointMismatch / CheckpointCorrupt: see :mod:`jaxsearch.train.checkpoint`.
  """
  out_dir = Path(out_dir)
  config_path = out_dir / "config.json"
  if not config_path.is_file():
    raise FileNotFoundError(f"{config_path} not found: not a `jaxsearch train` output "
                            f"directory")
  fields = json.loads(config_path.read_text())
  known = {f.name for f in dataclasses.fields(TrainConfig)}
  unknown = sorted(set(fields) - known)
  if unknown:
    raise checkpoint_lib.CheckpointMismatch(
        f"{config_path} has settings this version does not know: {', '.join(unknown)}")
  fields["hidden"] = tuple(fields.get("hidden", ()))
  fields["devices"] = 0  # play on whatever this machine has
  trainer = Trainer(TrainConfig(**fields), out_dir=out_dir, evaluator=False)
  ckpt = trainer.checkpointer()
  try:
    state, _ = ckpt.restore(jax.eval_shape(trainer.init_state), step)
  finally:
    ckpt.close()
  return trainer, jax.tree.map(jnp.asarray, state.params)


# ---- evaluation --------------------------------------------------------------------------


def default_evaluator(trainer: Trainer) -> Optional[Evaluator]:
  """The game's oracle evaluation (:mod:`jaxsearch.train.evaluate`) of the search (at
  ``eval_simulations``, temperature 0, no noise) and of the raw network (argmax of the
  logits):

  * tic-tac-toe: ``optimal_move_fraction``, ``net_optimal_move_fraction`` over the 4,520
    reachable positions, ``losses_vs_perfect`` / ``games_vs_perfect`` of the search against
    the perfect player;
  * Connect Four: ``search_error`` and ``net_error`` on Test_L3_R1 and Test_L2_R2,
    ``search_vs_random`` (score rate) and, in the final evaluation with
    ``eval_uct_simulations``, ``search_vs_uct``.
  * pgx games (two players): ``search_vs_random`` and ``net_vs_random`` (score rates: win 1,
    draw 1/2, over ``eval_games`` games, half with each side first) and, in the final
    evaluation with ``eval_uct_simulations``, ``search_vs_uct``; one player: the mean game
    returns ``search_return``, ``net_return`` and ``random_return``.
  """
  from jaxsearch.train import evaluate as ev
  config = trainer.config
  search = trainer.eval_search
  logits = trainer.logits  # one object: the compiled evaluation is reused across calls

  if str(config.game).startswith(PGX_PREFIX):
    return _pgx_evaluator(trainer)

  if config.game == "tictactoe":

    def evaluate_ttt(params, key, final):
      k1, k2, k3 = jax.random.split(key, 3)
      search_agent = ev.search_act_fn(search, params)
      net_agent = ev.greedy_act_fn(trainer.game, logits, params)
      match = ev.tictactoe_vs_perfect(search_agent, k3, num_games=config.eval_games)
      return dict(
          optimal_move_fraction=ev.tictactoe_optimal_fraction(search_agent, k1),
          net_optimal_move_fraction=ev.tictactoe_optimal_fraction(net_agent, k2),
          losses_vs_perfect=match["losses"], games_vs_perfect=match["games"])

    return evaluate_ttt

  sets = {}
  for name in ("Test_L3_R1", "Test_L2_R2"):
    try:
      sets[name] = ev.load_connect4_set(name)
    except FileNotFoundError as error:
      print(f"warning: {error}")
  random_agent = ev.random_player(trainer.game)
  uct_agent = (ev.uct_rollout_player(trainer.game, config.eval_uct_simulations)
               if config.eval_uct_simulations else None)

  def evaluate_c4(params, key, final):
    keys = jax.random.split(key, 4)
    search_agent = ev.search_act_fn(search, params)
    net_agent = ev.greedy_act_fn(trainer.game, logits, params)
    result = dict(
        search_error={n: round(ev.connect4_error_rate(search_agent, keys[0], s), 4)
                      for n, s in sets.items()},
        net_error={n: round(ev.connect4_error_rate(net_agent, keys[1], s), 4)
                   for n, s in sets.items()})
    if config.eval_games >= 2:
      m = ev.play_match(trainer.game, search_agent, random_agent, keys[2],
                        config.eval_games // 2 * 2)
      result["search_vs_random"] = round((m["wins"] + 0.5 * m["draws"]) / m["games"], 4)
    if final and uct_agent is not None and config.eval_games >= 2:
      m = ev.play_match(trainer.game, search_agent, uct_agent, keys[3],
                        config.eval_games // 2 * 2)
      result["search_vs_uct"] = round((m["wins"] + 0.5 * m["draws"]) / m["games"], 4)
    return result

  return evaluate_c4


def _pgx_evaluator(trainer: Trainer) -> Evaluator:
  """:func:`default_evaluator` of a pgx game (see there)."""
  from jaxsearch.train import evaluate as ev
  config, game = trainer.config, trainer.game
  search, logits = trainer.eval_search, trainer.logits
  random_agent = ev.random_player(game)
  alternating = getattr(trainer.module, "alternating", True)
  two_player = getattr(trainer.module, "num_players", 2) == 2
  uct_agent = (ev.uct_rollout_player(game, config.eval_uct_simulations)
               if config.eval_uct_simulations and two_player else None)

  def score(m):
    return round((m["wins"] + 0.5 * m["draws"]) / m["games"], 4)

  def evaluate_pgx(params, key, final):
    keys = jax.random.split(key, 4)
    search_agent = ev.search_act_fn(search, params)
    net_agent = ev.greedy_act_fn(game, logits, params)
    if not two_player:
      return {name: round(ev.mean_return(game, agent, k, config.eval_games), 4)
              for name, agent, k in (("search_return", search_agent, keys[0]),
                                     ("net_return", net_agent, keys[1]),
                                     ("random_return", random_agent, keys[2]))}
    result = dict(
        search_vs_random=score(ev.play_match(game, search_agent, random_agent, keys[0],
                                             config.eval_games, alternating=alternating)),
        net_vs_random=score(ev.play_match(game, net_agent, random_agent, keys[1],
                                          config.eval_games, alternating=alternating)))
    if final and uct_agent is not None:
      result["search_vs_uct"] = score(ev.play_match(game, search_agent, uct_agent, keys[2],
                                                    config.eval_games,
                                                    alternating=alternating))
    return result

  return evaluate_pgx


# ---- reporting ---------------------------------------------------------------------------


def _number(x):
  x = np.asarray(x)
  return x.item() if x.dtype.kind in "iub" else round(float(x), 6)


def _flatten(d: dict, prefix: str = "") -> dict:
  flat = {}
  for k, v in d.items():
    if isinstance(v, dict):
      flat.update(_flatten(v, f"{prefix}{k}/"))
    else:
      flat[f"{prefix}{k}"] = v
  return flat


def _truncate_metrics(path: Path, step: int) -> None:
  """Drops lines logged after ``step`` (a resumed run re-does those steps)."""
  if not path.exists():
    return
  kept = []
  for line in path.read_text().splitlines():
    try:
      if json.loads(line).get("step", 0) <= step:
        kept.append(line)
    except json.JSONDecodeError:
      break  # a line cut by a kill: everything after it is gone too
  path.write_text("".join(line + "\n" for line in kept))


def read_metrics(path: str | Path) -> list[dict]:
  """The rows of a ``metrics.jsonl``."""
  return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_metrics(metrics_path: str | Path, png_path: str | Path, title: str = "") -> Path:
  """Writes a PNG: the loss terms (left) and the evaluation metrics (right) against wall-clock
  minutes. Returns ``png_path``."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  rows = read_metrics(metrics_path)
  fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
  trained = [r for r in rows if r.get("updates", 0) > 0]
  for name in ("loss", "value_loss", "policy_loss", "policy_kl", "action_value_loss"):
    pts = [(r["time"] / 60, r[name]) for r in trained if name in r]
    if pts:
      left.plot(*zip(*pts), label=name, lw=1)
  left.set_xlabel("minutes")
  left.set_ylabel("loss")
  left.legend(fontsize=8)
  left.set_title("training loss")
  skip = {"eval_step", "eval_seconds", "games_vs_perfect", "losses_vs_perfect"}
  evals = [r for r in rows if "eval_step" in r]
  names = sorted({k for r in evals for k, v in r.items()
                  if k.startswith(("optimal", "net_", "search_")) and k not in skip
                  and isinstance(v, (int, float))})
  for name in names:
    pts = [(r["time"] / 60, r[name]) for r in evals if name in r]
    right.plot(*zip(*pts), marker="o", ms=3, label=name, lw=1)
  losses_pts = [(r["time"] / 60, r["losses_vs_perfect"] / max(r["games_vs_perfect"], 1))
                for r in evals if "losses_vs_perfect" in r]
  if losses_pts:
    right.plot(*zip(*losses_pts), marker="x", ms=3, label="loss rate vs perfect", lw=1)
  right.set_xlabel("minutes")
  right.set_title("evaluation")
  if names or losses_pts:
    right.legend(fontsize=8)
  fig.suptitle(title)
  fig.tight_layout()
  png_path = Path(png_path)
  fig.savefig(png_path, dpi=110)
  plt.close(fig)
  return png_path


class _Bar:
  """A rich progress bar (step, positions/s, loss, latest evaluation) or nothing."""

  def __init__(self, enabled: bool, steps: int, minutes: float, console=None):
    self.enabled = enabled
    self.steps, self.minutes = steps, minutes
    self.console = console
    self.progress = None

  def __enter__(self):
    if self.enabled:
      from rich.console import Console
      from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
      self.progress = Progress(TextColumn("[bold]training"), BarColumn(),
                               TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                               console=self.console or Console(stderr=True))
      self.progress.__enter__()
      total = self.steps if self.steps else self.minutes * 60
      self.task = self.progress.add_task("training", total=total, status="compiling…")
    return self

  def update(self, step, row, last_eval, elapsed):
    if self.progress is None:
      return
    parts = [f"step {step}", f"{row.get('positions_per_s', 0):.0f} pos/s"]
    if "loss" in row and row.get("updates", 0):
      parts.append(f"loss {row['loss']:.3f}")
    flat = _flatten({k: v for k, v in last_eval.items()
                     if k not in ("eval_step", "eval_seconds")})
    if flat:
      parts.append("eval " + " ".join(
          f"{k.split('/')[-1] if '/' in k else k}={v:.3g}" if isinstance(v, float) else
          f"{k}={v}" for k, v in list(flat.items())[:4]))
    done = step if self.steps else min(elapsed, self.minutes * 60)
    self.progress.update(self.task, completed=done, status=" · ".join(parts))

  def __exit__(self, *exc):
    if self.progress is not None:
      self.progress.__exit__(*exc)
