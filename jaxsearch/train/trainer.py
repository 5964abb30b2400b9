"""The training loop: self-play with the batched search, replay, updates, evaluation.

One **step** is ``moves_per_step`` self-play moves in all ``batch_size`` games (each one
batched search), then ``updates_per_step`` gradient updates on batches sampled from the
replay buffer (none until it holds ``min_replay`` positions): one jitted function. The
step's keys are ``fold_in(seed key, step)``, so a run is a deterministic function of its
configuration, seed and step count — which is what makes resuming exact: the whole
:class:`TrainState` (parameters, optimiser state, replay buffer, games in progress and their
trees, key, step) is checkpointed, and a resumed run continues bit for bit.

The state never leaves the device during a run. The host reads the steps' metrics once every
``metrics_every`` steps (:meth:`Trainer.advance`, :meth:`Trainer.fetch_metrics`); with
``device_loop`` the steps in between are one jitted ``lax.fori_loop`` (the state donated),
else one call each, dispatched without waiting.

    trainer = Trainer(config, module, out_dir="runs/ttt")
    summary = trainer.run(minutes=5)          # or steps=...; resume=True continues

The trainer names no game: it is given the game's module (``GAME``, ``observe``) and,
optionally, how to evaluate it. :mod:`jaxsearch.app.training` builds one from a game's name
(``trainer(preset("tictactoe"), out_dir=...)``), with the game's oracle evaluation.

Outputs in ``out_dir``: ``metrics.jsonl`` (one JSON object per logged step; evaluation
fields when evaluated), ``checkpoints/`` (orbax), ``config.json``, and with ``plot`` a PNG.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch import policies, sharding
from jaxsearch.enums import SearchPolicy
from jaxsearch.train import checkpoint as checkpoint_lib
from jaxsearch.train import losses, networks, replay, selfplay
from jaxsearch.train import value_scale as value_scale_lib
from jaxsearch.train.config import CONFIG_DEFAULTS, MAY_CHANGE, TrainConfig
from jaxsearch.train.evaluators import MakeEvaluator, default_evaluator
from jaxsearch.train.metrics import (ProgressBar, append_rows, flatten_metrics, plot_metrics,
                                     truncate_metrics)
from jaxsearch.train.run_state import Budget, RunProgress, next_interval, report_skipped
from jaxsearch.train.metrics import read_metrics

# The training API (``TrainConfig``, ``read_metrics`` and the settings' tables re-exported).
__all__ = ["Trainer", "TrainState", "TrainConfig", "CONFIG_DEFAULTS",
           "MAY_CHANGE", "read_metrics", "SLEEP_ENV"]

SLEEP_ENV = "JAXSEARCH_TRAIN_STEP_SLEEP"  # tests: seconds to sleep after each step


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



class Trainer:
  """Builds the network, searches, self-play, optimiser and the jitted step of a config.

  Args:
    config: the run's :class:`TrainConfig`.
    module: the game ``config.game`` names, as a module or namespace: ``GAME`` (a
      :class:`jaxsearch.game.Game`) and ``observe`` (``state -> f32[...]``, the network's
      input), and optionally ``num_players`` and ``alternating`` (read by
      :func:`default_evaluator`). :func:`jaxsearch.app.registry.game_module` resolves a name.
    out_dir: where metrics, checkpoints and plots go (``None``: nothing is written).
    evaluator: builds the run's evaluation from this trainer, ``trainer -> (params, key,
      final) -> dict`` (:data:`~jaxsearch.train.evaluators.MakeEvaluator`); default
      :func:`default_evaluator` (matches against a random player and UCT). Pass ``False`` to
      skip evaluation.
  """

  def __init__(self, config: TrainConfig, module: Any, out_dir: Optional[str | Path] = None,
               evaluator: Optional[MakeEvaluator] | bool = None):
    self.config = config
    self.out_dir = Path(out_dir) if out_dir is not None else None
    self.module = module
    self.game = self.module.GAME
    self.observe = self.module.observe
    obs_shape = jax.eval_shape(self.observe, self.game.init(jax.random.PRNGKey(0))).shape
    self.action_values = config.policy is SearchPolicy.AVTS
    sizes = (dict(hidden=tuple(config.hidden)) if config.network == "mlp" else
             dict(channels=config.channels, blocks=config.blocks,
                  head_hidden=config.head_hidden, ones_plane=config.ones_plane))
    sizes["compute_dtype"] = str(config.compute_dtype)
    self.graphdef, self.initial_params = networks.init(
        config.network, obs_shape, self.game.num_actions, seed=config.seed,
        action_values=self.action_values, **sizes)
    # The heads say [-1, 1]; the search, self-play and the buffer keep the game's units.
    self.value_scale = value_scale_lib.for_game(self.game, config.value_scale)
    self.estimator = networks.estimator_from_network(self.graphdef, self.observe,
                                                     value_scale=self.value_scale)
    self.devices = sharding.resolve_devices(config.devices or None)
    self.search = self.make_search(config.simulations, config.nodes,
                                   config.dirichlet_fraction, devices=self.devices)
    self.eval_search = self.evaluation_search(config.eval_simulations)
    self.selfplay = selfplay.SelfPlay(
        game=self.game, observe=self.observe, search=self.search,
        batch_size=config.batch_size, temperature_moves=config.temperature_moves,
        random_opening=config.random_opening,
        # Gumbel's guarantees assume a fresh root: a reused one's old visits would decide
        # Sequential Halving and the final action, and self-play would stop exploring.
        value_target=config.value_target, td_steps=config.td_steps,
        reuse=config.reuse and config.policy is not SearchPolicy.GUMBEL,
        action_values=self.action_values, sample_visits=config.policy is not SearchPolicy.GUMBEL)
    self.optimizer = losses.make_optimizer(
        config.learning_rate, warmup_steps=config.warmup_steps,
        decay_steps=config.decay_steps, weight_decay=config.weight_decay)
    self.train_step = losses.make_train_step(self.graphdef, self.optimizer, l2=config.l2,
                                             action_value_weight=config.action_value_weight,
                                             value_scale=self.value_scale)
    self.play_move = selfplay.make_step(self.selfplay)
    self.iterate = jax.jit(self._iterate, donate_argnums=0)
    self.iterate_many = jax.jit(self._iterate_many, donate_argnums=0)
    if evaluator is None:
      evaluator = default_evaluator
    # The evaluation is built last: it reads the searches and the network built above.
    self.evaluator = evaluator(self) if evaluator and config.eval_every >= 0 else None

  # ---- building blocks ----

  def make_search(self, simulations: int, max_nodes: int, noise: float,
                  devices=None) -> policies.Search:
    """A temperature-0 search of the configured policy with this network as estimator
    (its batch split over ``devices``, if given)."""
    config = self.config
    if config.policy is SearchPolicy.AVTS:
      return policies.avts(self.game, self.estimator, num_simulations=simulations,
                           max_nodes=max(max_nodes, simulations + 1), devices=devices)
    if config.policy is SearchPolicy.GUMBEL:
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

  def evaluation_search(self, simulations: int) -> policies.Search:
    """The evaluation's search at ``simulations``: no noise, temperature 0, no reuse."""
    return self.make_search(simulations, simulations + 1, 0.0)

  @property
  def positions_per_step(self) -> int:
    """Self-play positions a step plays: ``batch_size × moves_per_step``."""
    return self.config.batch_size * self.config.moves_per_step

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
    # loop carry, which XLA copies every trip; moves_per_step is small.
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

  def _iterate_many(self, ts: TrainState, count: jax.Array):
    """``count`` steps (``i32[]``, at most ``metrics_every``) in one ``lax.fori_loop``:
    ``(state, metrics)``, each metric ``[metrics_every]`` with step ``i``'s at row ``i``
    (rows past ``count`` are zeros). The trip count is an argument, so every interval
    between two reads, shortened or not, runs the same compiled loop."""
    rows = self.config.metrics_every
    shapes = jax.eval_shape(self._iterate, ts)[1]
    history = jax.tree.map(lambda m: jnp.zeros((rows,) + m.shape, m.dtype), shapes)

    def body(i, carry):
      ts, history = carry
      ts, metrics = self._iterate(ts)
      return ts, jax.tree.map(lambda h, m: h.at[i].set(m), history, metrics)

    return jax.lax.fori_loop(0, count, body, (ts, history))

  def advance(self, ts: TrainState, count: int) -> tuple[TrainState, list]:
    """``count`` steps from ``ts``, nothing read back: ``(state, pending)``, ``pending`` the
    steps' metrics still on the device (:meth:`fetch_metrics` fetches them in one read).
    With ``device_loop`` one call of :attr:`iterate_many`, else ``count`` calls of
    :attr:`iterate`, dispatched without waiting."""
    if self.config.device_loop:
      ts, history = self.iterate_many(ts, np.int32(count))
      return ts, [(history, count)]
    pending = []
    for _ in range(count):
      ts, metrics = self.iterate(ts)
      pending.append((metrics, None))
    return ts, pending

  @staticmethod
  def fetch_metrics(pending: list) -> list[dict]:
    """The steps' metrics from :meth:`advance`'s ``pending``, one dict of host scalars per
    step, fetched in one ``jax.device_get`` (the loop's only read of the device between
    checkpoints and evaluations)."""
    rows = []
    for metrics, count in jax.device_get(pending):
      if count is None:
        rows.append(metrics)
      else:
        rows.extend({k: v[i] for k, v in metrics.items()} for i in range(count))
    return rows

  # ---- the run ----

  def checkpointer(self, lock: bool = False) -> checkpoint_lib.Checkpointer:
    """The run's checkpoints; ``lock``: hold ``out_dir``'s lock until it is closed (a
    training run does, so that a second run on the directory is refused at once)."""
    if self.out_dir is None:
      raise ValueError("checkpoints need an out_dir")
    return checkpoint_lib.Checkpointer(self.out_dir, self.config.to_dict(),
                                       may_change=MAY_CHANGE, defaults=CONFIG_DEFAULTS,
                                       lock=lock)

  def run(self, *, steps: Optional[int] = None, minutes: Optional[float] = None,
          resume: bool = False, progress: bool = True, plot: bool = False,
          console=None, started: Optional[float] = None) -> dict:
    """Trains until ``steps`` (total, counting resumed ones) or ``minutes`` (this call's wall
    clock, compilation included) is reached, at a step boundary; checkpoints, evaluates.

    The host reads the metrics after the call's first step (timed alone: it holds the
    compilation), then once every ``metrics_every`` steps (sooner when a checkpoint, an
    evaluation or the ``steps`` bound falls earlier: those steps are the same for every
    ``metrics_every``), and checks ``minutes`` then; the steps in between are dispatched
    without waiting for the device (:meth:`advance`).

    ``started``: the ``time.perf_counter()`` the clock counts from (default: now; the CLI
    passes its own start, so imports and building the trainer count too).

    A resume past a corrupt newest checkpoint continues from the newest intact one
    (:meth:`~jaxsearch.train.checkpoint.Checkpointer.restore`), saying so on ``console``.

    Returns:
      the summary: the final evaluation's fields plus ``steps``, ``positions`` (self-play
      positions played, all runs), ``games``, ``updates``, ``minutes`` (this call),
      ``out_dir``, ``preset`` (the configuration's :class:`~jaxsearch.enums.TrainPreset`
      or ``None``), ``positions_per_s`` and ``updates_per_s`` (this call's steady state: its
      read intervals after the first, which holds the compilation; evaluations and
      checkpoints excluded; ``None`` after a single interval), ``first_interval_s`` (the
      first step's seconds, compilation included), ``device_peak_bytes``
      (:meth:`peak_device_bytes`); after a fallback past corrupt checkpoints
      ``skipped_checkpoints`` (their steps) and ``resumed_from`` (the step restored).
    """
    config = self.config
    budget = Budget(steps=config.steps if steps is None else steps,
                    minutes=config.minutes if minutes is None else minutes,
                    started=time.perf_counter() if started is None else started)
    ckpt = self.checkpointer(lock=True) if self.out_dir is not None else None
    try:
      ts = self._start_state(ckpt, resume)
    except BaseException:
      if ckpt is not None:  # its lock too
        ckpt.close()
      raise
    run = self._progress(ts, tuple(ckpt.skipped) if ckpt is not None else (), console)
    metrics_path = self.out_dir / "metrics.jsonl" if self.out_dir is not None else None
    if metrics_path is not None:
      truncate_metrics(metrics_path, run.step)
    sleep = float(os.environ.get(SLEEP_ENV, "0") or 0)
    label = f"training ({config.preset} preset)" if config.preset else "training"
    bar = ProgressBar(progress, budget.steps, budget.minutes, console, label=label)
    try:
      with bar:
        while not budget.reached(run.step):
          if not budget.steps and not budget.minutes:
            raise ValueError("give a stop condition: steps or minutes")
          self._run_interval(run, budget, ckpt, metrics_path, bar)
          if sleep:
            time.sleep(sleep)
    finally:
      self._log_cut_short(run, budget, metrics_path)
      if ckpt is not None:
        if run.step != run.last_saved:
          ckpt.save(run.step, run.ts)
        ckpt.close()
    self.state = run.ts
    return self._summary(run, budget, metrics_path if plot else None)

  @staticmethod
  def _progress(ts: TrainState, skipped: tuple, console) -> RunProgress:
    """A run's progress from its start state (one read: its step and updates); says which
    corrupt checkpoints a resume passed over (``skipped``)."""
    step, updates = (int(x) for x in jax.device_get((ts.step, ts.updates)))
    report_skipped(skipped, step, console)
    return RunProgress(ts=ts, step=step, last_saved=step, last_updates=updates,
                       skipped=[s.step for s in skipped], resumed_from=step)

  def _start_state(self, ckpt: Optional[checkpoint_lib.Checkpointer],
                   resume: bool) -> TrainState:
    """The state a run starts from: restored with ``resume`` (when there is a checkpoint),
    else fresh; writes ``config.json``."""
    out = self.out_dir
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
      (out / "config.json").write_text(json.dumps(self.config.to_dict(), indent=1) + "\n")
    return ts

  def _advance_run(self, run: "RunProgress", count: int) -> None:
    """:meth:`advance` by ``count`` steps, ``run`` updated as each call is dispatched (an
    interruption leaves ``run.ts`` a live state, its step and its unread metrics)."""
    calls = 1 if self.config.device_loop else count
    for _ in range(calls):
      run.ts, pending = self.advance(run.ts, count // calls)
      run.pending.extend(pending)
      run.step += count // calls

  def _run_interval(self, run: "RunProgress", budget: "Budget",
                    ckpt: Optional[checkpoint_lib.Checkpointer], metrics_path: Optional[Path],
                    bar: ProgressBar) -> None:
    """One interval of :meth:`run`: the steps up to the next read
    (:func:`~jaxsearch.train.run_state.next_interval`), one read of their metrics, then
    evaluate, log and checkpoint when due."""
    config = self.config
    count = next_interval(self.config, run.step, budget.steps, first=not run.intervals)
    run.interval_started = time.perf_counter()
    self._advance_run(run, count)
    rows = run.read_rows(self.fetch_metrics, budget, self.positions_per_step)
    step = run.step
    final = budget.reached(step)
    if self.evaluator is not None and ((config.eval_every > 0 and
                                        step % config.eval_every == 0) or final):
      run.last_eval = self.evaluate(run.ts.params, step, final=final)
      run.last_final = final
      rows[-1].update(flatten_metrics(run.last_eval))
    append_rows(metrics_path, rows, config.log_every, final)
    if ckpt is not None and ((config.checkpoint_every and
                              step % config.checkpoint_every == 0) or final):
      ckpt.save(step, run.ts)
      run.last_saved = step
    bar.update(step, rows[-1], run.last_eval, budget.elapsed())

  def _log_cut_short(self, run: "RunProgress", budget: "Budget",
                     metrics_path: Optional[Path]) -> None:
    """After an interruption inside an interval: the rows of the steps it dispatched (the
    checkpoint :meth:`run` then writes is of the last of them)."""
    if not run.pending:
      return
    try:
      rows = run.read_rows(self.fetch_metrics, budget, self.positions_per_step)
    except Exception:  # the device failed: the error already being raised says more
      return
    append_rows(metrics_path, rows, self.config.log_every, final=True)

  def _summary(self, run: "RunProgress", budget: "Budget",
               plot_from: Optional[Path]) -> dict:
    """:meth:`run`'s summary, after a final evaluation unless the last step had one; with
    ``plot_from`` (the metrics file) the plot is written too."""
    config, out, ts = self.config, self.out_dir, run.ts
    last_eval = run.last_eval
    if self.evaluator is not None and not (last_eval.get("eval_step") == run.step
                                           and run.last_final):
      last_eval = self.evaluate(ts.params, run.step, final=True)
    summary = dict(last_eval)
    moves, games, updates = (int(x) for x in jax.device_get(
        (ts.selfplay.moves, ts.selfplay.games, ts.updates)))
    summary.update(
        steps=run.step, positions=moves, games=games, updates=updates,
        minutes=round(budget.elapsed() / 60, 3),
        out_dir=str(out) if out is not None else None,
        preset=str(config.preset) if config.preset else None,
        device_peak_bytes=self.peak_device_bytes(),
        **run.throughput(self.positions_per_step))
    if run.skipped:
      summary.update(skipped_checkpoints=run.skipped, resumed_from=run.resumed_from)
    if plot_from is not None:
      scale = "" if self.value_scale.is_identity else f", values {self.value_scale.describe()}"
      summary["plot"] = str(plot_metrics(plot_from, out / "training.png",
                                         title=f"{config.game} ({config.policy}{scale})"))
    return summary

  def peak_device_bytes(self) -> Optional[int]:
    """The most bytes in use at once on any of the run's devices since the process started
    (``None`` where the backend does not say: a CPU)."""
    peaks = [(device.memory_stats() or {}).get("peak_bytes_in_use")
             for device in (self.devices or jax.devices()[:1])]
    peaks = [int(peak) for peak in peaks if peak is not None]
    return max(peaks) if peaks else None

  def evaluate(self, params, step: int, final: bool = False) -> dict:
    """Runs the evaluator with the key ``fold_in(PRNGKey(seed + 1), step)``."""
    key = jax.random.fold_in(jax.random.PRNGKey(self.config.seed + 1), step)
    t0 = time.perf_counter()
    result = dict(self.evaluator(params, key, final))
    result["eval_step"] = step
    result["eval_seconds"] = round(time.perf_counter() - t0, 2)
    return result
