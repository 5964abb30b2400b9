"""Training configuration: :class:`TrainConfig`.

A configuration defines a run completely (with its seed, a run is a deterministic function
of it and the step count); :mod:`jaxsearch.train.loop` builds and runs it. The per-game
defaults (``preset``) are the application layer's: :func:`jaxsearch.app.training.preset`.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from jaxsearch.enums import SearchPolicy, ValueScaleKind, ValueTarget, coerce

# Configuration fields a resumed run may change (they do not change what a step computes;
# ``devices`` changes the updates only by float summation order).
MAY_CHANGE = ("steps", "minutes", "checkpoint_every", "eval_every", "eval_games",
              "eval_uct_simulations", "log_every", "devices")
# Settings added after checkpoints were first written: a checkpoint without one is taken to
# have used its default (``CONFIG_DEFAULTS``, read from ``TrainConfig`` below; see
# ``checkpoint.Checkpointer``), so a new setting's default must be the old behaviour.
# (``value_scale="auto"`` is the old behaviour for every game whose values lie in [-1, 1]; an
# older 2048 or backgammon checkpoint resumes with scaled value targets.)
ADDED_SETTINGS = ("pibar_target", "gumbel_c_scale", "ones_plane", "value_scale", "td_steps")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Everything that defines a training run (see :func:`jaxsearch.app.training.preset` for
  the per-game defaults).

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
    moves_per_step, updates_per_step: see :mod:`jaxsearch.train.loop`.
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
  policy: SearchPolicy = SearchPolicy.ALPHAZERO
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
  devices: int = 0

  def __post_init__(self):
    if not isinstance(self.game, str) or not self.game:
      raise ValueError(f"game must be a game's name, got {self.game!r}")
    # Given as strings (presets, --set, a checkpoint's JSON) or members: members from here on.
    for name, kind in (("policy", SearchPolicy), ("value_target", ValueTarget),
                       ("value_scale", ValueScaleKind)):
      object.__setattr__(self, name, coerce(kind, getattr(self, name), name))
    for name in ("batch_size", "simulations", "moves_per_step", "replay_capacity",
                 "train_batch", "eval_simulations", "td_steps"):
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
    if self.pibar_target and self.policy is not SearchPolicy.ALPHAZERO:
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
