"""Training configuration: :class:`TrainConfig`.

A configuration defines a run completely (with its seed, a run is a deterministic function
of it and the step count); :mod:`jaxsearch.train.trainer` builds and runs it. The per-game
defaults (``preset``) are the application layer's: :func:`jaxsearch.app.training.preset`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Optional

from jaxsearch.enums import (ComputeDtype, SearchPolicy, TrainPreset, ValueScaleKind, ValueTarget,
                             coerce)
from jaxsearch.seeds import seed_problem

# Configuration fields a resumed run may change (they do not change what a step computes;
# ``devices`` changes the updates only by float summation order; ``metrics_every`` only when
# the host reads, and with ``device_loop`` the length of the loop's metrics rows).
MAY_CHANGE = ("steps", "minutes", "checkpoint_every", "eval_every", "eval_games",
              "eval_uct_simulations", "log_every", "devices", "preset", "metrics_every")
# Settings added after checkpoints were first written: a checkpoint without one is taken to
# have used its default (``CONFIG_DEFAULTS``, read from ``TrainConfig`` below; see
# ``checkpoint.Checkpointer``), so a new setting's default must be the old behaviour.
# (``value_scale="auto"`` is the old behaviour for every game whose values lie in [-1, 1]; an
# older 2048 or backgammon checkpoint resumes with scaled value targets.)
ADDED_SETTINGS = ("pibar_target", "gumbel_c_scale", "ones_plane", "value_scale", "td_steps",
                  "preset", "compute_dtype", "metrics_every", "device_loop")

# What each numeric field accepts, checked once when a config is built (as the solver's
# ``SolveOptions`` are): a NaN learning rate trained a NaN network, and a negative one trained
# away from the targets, both exiting 0. Integers: the least value (``None``: any integer).
INT_FIELDS = dict(
    batch_size=1, simulations=1, moves_per_step=1, updates_per_step=1, replay_capacity=1,
    train_batch=1, eval_simulations=1, td_steps=1, channels=1, head_hidden=1, blocks=0,
    max_nodes=0, temperature_moves=0, random_opening=0, min_replay=0, warmup_steps=0,
    decay_steps=0, steps=0, checkpoint_every=0, log_every=0, eval_uct_simulations=0,
    devices=0, metrics_every=1, eval_games=None, eval_every=None)  # eval_games: even, >= 2 (below)
# Floats: ``(least, most, least allowed)``; every one must be finite.
FLOAT_FIELDS = dict(
    learning_rate=(0.0, math.inf, False), dirichlet_fraction=(0.0, 1.0, True),
    dirichlet_alpha=(0.0, math.inf, False), gumbel_c_scale=(0.0, math.inf, False),
    weight_decay=(0.0, math.inf, True), l2=(0.0, math.inf, True),
    action_value_weight=(0.0, math.inf, True), minutes=(0.0, math.inf, True),
    c=(0.0, math.inf, True))
BOOL_FIELDS = ("ones_plane", "reuse", "pibar_target", "device_loop")
NETWORKS = ("mlp", "resnet")


class ConfigError(ValueError):
  """A :class:`TrainConfig` field out of range; ``field`` names it (the command line names
  the flag that set it, e.g. ``--set learning_rate=nan``)."""

  def __init__(self, field: str, message: str):
    super().__init__(message)
    self.field = field


def _float_range(least: float, most: float, closed: bool) -> str:
  if most == math.inf:
    return ("a non-negative" if closed else "a positive") + " finite number"
  return f"a number in [{least:g}, {most:g}]"


def check_field(name: str, value):
  """``value`` of the numeric or boolean field ``name``, normalised (``int``, ``float``,
  ``bool``); other fields are returned as given.

  Raises:
    ConfigError: naming the field, what it accepts and the value given.
  """
  if name in INT_FIELDS:
    least = INT_FIELDS[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
      want = "an integer" + (f" >= {least}" if least is not None else "")
      raise ConfigError(name, f"{name} must be {want}, got {value!r}")
    if least is not None and value < least:
      raise ConfigError(name, f"{name} must be >= {least}, got {value!r}")
    return int(value)
  if name in FLOAT_FIELDS:
    if name == "c" and value is None:  # the MuZero schedule
      return None
    least, most, closed = FLOAT_FIELDS[name]
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
        or not math.isfinite(value) or value > most
        or value < least or (value == least and not closed)):
      want = _float_range(least, most, closed) + (" or null" if name == "c" else "")
      raise ConfigError(name, f"{name} must be {want}, got {value!r}")
    return float(value)
  if name in BOOL_FIELDS and not isinstance(value, bool):
    raise ConfigError(name, f"{name} must be true or false, got {value!r}")
  return value


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Everything that defines a training run (see :func:`jaxsearch.app.training.preset` for
  the per-game defaults).

  Every field is checked when the configuration is built, before anything else is (as the
  solver's ``SolveOptions``): numbers finite and in range (:data:`INT_FIELDS`,
  :data:`FLOAT_FIELDS`), the seed from 0 to 2**32 - 1 (:mod:`jaxsearch.seeds`), and the
  fields that depend on each other; a :class:`ConfigError` (a ``ValueError``) names the field.

  Attributes:
    game: the game's name, as the application's registry knows it
      (:mod:`jaxsearch.app.registry`: ``"tictactoe"``, ``"connect_four"`` or ``"pgx:ENV_ID"``,
      any pgx environment). The trainer is given the game's module itself; the name is kept
      so that a checkpoint says what it was trained on.
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
    value_target: ``"outcome"``, ``"search"``, ``"mix"`` or ``"n_step"`` (see :mod:`selfplay`).
    td_steps: plies of rewards before the bootstrapped root value in ``"n_step"`` targets.
    value_scale: how the game's values are put in the value head's ``[-1, 1]``
      (:func:`jaxsearch.train.value_scale.for_game`): ``"auto"`` (identity for games whose
      values lie in ``[-1, 1]``; ``linear`` over declared ``value_bounds``, e.g. backgammon;
      MuZero's ``h`` over ``value_range``, e.g. 2048), ``"identity"``, ``"linear"`` or
      ``"muzero"``. The search and the replay buffer stay in the game's units.
    reuse: subtree reuse between moves (never with ``policy="gumbel"``: its root must be
      fresh).
    gumbel_c_scale: σ's ``c_scale`` of ``policy="gumbel"`` (0.1 as mctx; the Gumbel MuZero
      paper uses 1.0 for board games): how far the improved-policy target moves from the
      prior toward the actions with the best Q.
    pibar_target: train the policy head on π̄ (Grill et al. 2020, the search's regularised
      policy at the root: ``out.policy_target``) instead of the visit distribution; PUCT
      only (Gumbel has its own improved policy as the target).
    moves_per_step, updates_per_step: see :mod:`jaxsearch.train.trainer`.
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
    preset: the :class:`TrainPreset` the configuration was built from (``None``: built by
      hand); a label, recorded in ``config.json``, the summary and the progress bar (a resumed
      run may change it: the settings it chose are compared one by one).
    compute_dtype: the network's arithmetic, a :class:`ComputeDtype` (``"float32"`` or
      ``"bfloat16"``).
    metrics_every: steps between the host's reads of the metrics (and between its checks of
      the stop conditions, which it makes only then): the steps in between are dispatched
      without waiting for the device (the per-step rows of ``metrics.jsonl`` are written
      when they are read). Checkpoints, evaluations and the ``steps`` bound end a read
      interval early, so they fall on the same steps as with ``metrics_every = 1``.
    device_loop: run the steps between two reads as one jitted ``lax.fori_loop`` over the
      step (one call: self-play, replay and updates never leave the device); else one call
      per step. On an accelerator the loop saves a dispatch per step; on a CPU XLA's
      convolutions run several times slower inside a loop, so the CPU presets keep it off.
      The loop's steps equal the separate calls' up to XLA's fusion choices (bit for bit
      for tic-tac-toe's preset on a CPU, not for Connect Four's), so it may not change on
      resume; the loop's trip count is an argument, so any split of the steps into
      intervals gives the same run.
    devices: split the self-play games and every update batch over the first ``devices``
      devices (:mod:`jaxsearch.sharding`; 0 = one device, no sharding). Self-play is
      bit-identical on any number of devices (per-game keys); the updates' gradients are
      all-reduced by XLA and equal one device's up to float summation order.
      ``batch_size`` and ``train_batch`` must be divisible by it.
  """

  game: str = "tictactoe"
  preset: Optional[TrainPreset] = None
  policy: SearchPolicy = SearchPolicy.ALPHAZERO
  seed: int = 0
  network: str = "mlp"
  hidden: tuple = (64, 64)
  channels: int = 32
  blocks: int = 2
  head_hidden: int = 64
  ones_plane: bool = False
  compute_dtype: ComputeDtype = ComputeDtype.FLOAT32
  batch_size: int = 128
  simulations: int = 32
  max_nodes: int = 0
  c: Optional[float] = None
  temperature_moves: int = 2
  random_opening: int = 0
  dirichlet_fraction: float = 0.25
  dirichlet_alpha: float = 1.0
  value_target: ValueTarget = ValueTarget.OUTCOME
  td_steps: int = 10
  value_scale: ValueScaleKind = ValueScaleKind.AUTO
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
  metrics_every: int = 1
  device_loop: bool = False
  devices: int = 0

  def __post_init__(self):
    if not isinstance(self.game, str) or not self.game:
      raise ConfigError("game", f"game must be a game's name, got {self.game!r}")
    # Given as strings (presets, --set, a checkpoint's JSON) or members: members from here on.
    kinds = [("policy", SearchPolicy), ("value_target", ValueTarget),
             ("value_scale", ValueScaleKind), ("compute_dtype", ComputeDtype)]
    if self.preset is not None:
      kinds.append(("preset", TrainPreset))
    for name, kind in kinds:
      try:
        object.__setattr__(self, name, coerce(kind, getattr(self, name), name))
      except ValueError as error:
        raise ConfigError(name, str(error)) from None
    for field in dataclasses.fields(self):
      object.__setattr__(self, field.name, check_field(field.name, getattr(self, field.name)))
    self._check_combinations()
    if self.pibar_target and self.policy is not SearchPolicy.ALPHAZERO:
      raise ConfigError("pibar_target", "pibar_target needs policy='alphazero' (PUCT)")

  def _check_combinations(self) -> None:
    """The seed, the network's kind and widths, and the fields checked against each other."""
    problem = seed_problem(self.seed)
    if problem is not None:
      raise ConfigError("seed", f"seed {problem}")
    if self.network not in NETWORKS:
      raise ConfigError("network", f"network must be one of {', '.join(NETWORKS)}, got "
                                   f"{self.network!r}")
    hidden = self.hidden
    if (isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__")
        or any(isinstance(h, bool) or not isinstance(h, numbers.Integral) or h < 1
               for h in hidden)):
      raise ConfigError("hidden", f"hidden must be a list of layer widths >= 1, got "
                                  f"{hidden!r}")
    object.__setattr__(self, "hidden", tuple(int(h) for h in hidden))
    # (AVTS raises a smaller capacity to simulations + 1 itself.)
    if (self.max_nodes and self.max_nodes < self.simulations + 1
        and self.policy is not SearchPolicy.AVTS):
      raise ConfigError("max_nodes", f"max_nodes = {self.max_nodes} cannot hold a search of "
                                     f"simulations = {self.simulations} (it needs "
                                     f"{self.simulations + 1} nodes; 0 = 2 × simulations + 1)")
    if self.min_replay > self.replay_capacity:
      raise ConfigError("min_replay", f"min_replay = {self.min_replay} exceeds replay_capacity "
                                      f"= {self.replay_capacity}: the buffer could never hold "
                                      "enough positions and no update would ever run")
    if self.eval_games < 2 or self.eval_games % 2:
      raise ConfigError("eval_games", f"eval_games must be an even number >= 2 (each side "
                                      f"half the games), got {self.eval_games!r}")
    for name in ("batch_size", "train_batch"):
      if self.devices and getattr(self, name) % self.devices:
        raise ConfigError(name, f"{name} = {getattr(self, name)} is not divisible by "
                                f"devices = {self.devices}: each device takes an equal share")

  @property
  def nodes(self) -> int:
    return self.max_nodes or 2 * self.simulations + 1

  def to_dict(self) -> dict:
    return dataclasses.asdict(self)


CONFIG_DEFAULTS = {field.name: field.default for field in dataclasses.fields(TrainConfig)
                   if field.name in ADDED_SETTINGS}
