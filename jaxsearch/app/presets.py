"""The per-game training presets: each game's :class:`~jaxsearch.train.config.TrainConfig`
fields, from the game's full name and the :class:`~jaxsearch.enums.TrainPreset` (the
``CPU`` one by default; ``ACCELERATOR`` for a GPU or TPU).

The registry (:mod:`jaxsearch.app.registry`) says which presets a game has;
:func:`jaxsearch.app.training.preset` builds the configuration, picking the preset for the
backend JAX runs on unless told. Importing this module is cheap (no JAX): the command line
lists the games before it imports anything heavy.

The accelerator presets keep each game's CPU recipe (search, targets, openings) and scale it:
``ACCELERATOR_GAMES`` self-play games a step instead of ~100, a wider and deeper network, the
update batch and the updates a step raised so that each self-play position is sampled about
as often as on the CPU, a replay buffer holding about as many updates' worth of positions, and
the steps between two reads of the metrics run as one device loop.
"""

from __future__ import annotations

from jaxsearch.enums import SearchPolicy, ValueScaleKind, ValueTarget, coerce
from jaxsearch.enums import ComputeDtype, TrainPreset

# The host reads the metrics (and checks --minutes) every this many steps: on a CPU the steps
# are dispatched one call each (XLA's CPU convolutions are slower inside a loop); on an
# accelerator they run as one jitted loop.
CPU_METRICS_EVERY = 10
ACCELERATOR_METRICS_EVERY = 25
ACCELERATOR_GAMES = 4096  # Connect Four's self-play games a step on an accelerator


def _chosen(preset) -> TrainPreset:
  return coerce(TrainPreset, preset, "preset")


def tictactoe(game: str, preset: TrainPreset = TrainPreset.CPU) -> dict:
  """Tic-tac-toe: PUCT self-play (root noise) of a small MLP; on an accelerator a modest
  scale-up (1,024 games a step, a 128-128 MLP in float32: the game is solved exactly, and
  its tiny network gains nothing from bfloat16)."""
  cpu = dict(game=game, preset=TrainPreset.CPU, network="mlp", hidden=(64, 64),
             batch_size=128, simulations=32, temperature_moves=2, random_opening=6,
             dirichlet_alpha=1.0, replay_capacity=20000, min_replay=512, train_batch=256,
             updates_per_step=1, learning_rate=2e-3, decay_steps=3000,
             checkpoint_every=250, eval_every=250, eval_simulations=64, eval_games=100,
             metrics_every=CPU_METRICS_EVERY)
  if _chosen(preset) is TrainPreset.CPU:
    return cpu
  # 1,024 positions a step, 2 x 1,024 samples: 2 samples a position, as 256 per 128 above.
  return dict(cpu, preset=TrainPreset.ACCELERATOR, hidden=(128, 128), batch_size=1024,
              replay_capacity=100_000, min_replay=4096, train_batch=1024,
              updates_per_step=2, checkpoint_every=250, eval_every=50,
              metrics_every=ACCELERATOR_METRICS_EVERY, device_loop=True)


def connect_four(game: str, preset: TrainPreset = TrainPreset.CPU) -> dict:
  """Connect Four: Gumbel self-play of a ResNet with mixed value targets: 32 channels and
  two blocks on a CPU; 64 channels, 5 blocks, bfloat16 convolutions and 4,096 games a step on
  an accelerator."""
  # Gumbel, not PUCT: see docs/training.md (PUCT's visit-count targets at 32 simulations
  # never learnt immediate wins and blocks). 32 x 2, not 16 x 1: the smaller network could not
  # fit its targets and its errors flattened within minutes; 32 x 2 self-plays a quarter as
  # many positions and ends the default 30 minutes with the fewest errors of 16 x 1, 32 x 1
  # and 32 x 2 (docs/training.md, "Why the CPU run flattened").
  cpu = dict(game=game, preset=TrainPreset.CPU, policy=SearchPolicy.GUMBEL,
             value_target=ValueTarget.MIX, network="resnet",
             channels=32, blocks=2, head_hidden=32, ones_plane=True,
             batch_size=128, simulations=32, temperature_moves=4, random_opening=8,
             dirichlet_alpha=1.0, replay_capacity=100000, min_replay=4096,
             train_batch=256, updates_per_step=2, learning_rate=2e-3, decay_steps=20000,
             checkpoint_every=500, eval_every=1000, eval_simulations=128, eval_games=100,
             eval_uct_simulations=200, metrics_every=CPU_METRICS_EVERY)
  if _chosen(preset) is TrainPreset.CPU:
    return cpu
  # 4,096 positions a step and 4 x 4,096 samples: 4 samples a position, as 2 x 256 per 128
  # on the CPU. The buffer holds ~240 steps (~1,000 updates) of positions, the CPU's ~780
  # steps (~1,600 updates); the schedule decays over 100k updates instead of 20k.
  return dict(cpu, preset=TrainPreset.ACCELERATOR, channels=64, blocks=5, head_hidden=64,
              compute_dtype=ComputeDtype.BFLOAT16, batch_size=ACCELERATOR_GAMES,
              replay_capacity=1_000_000, min_replay=65536, train_batch=4096,
              updates_per_step=4, warmup_steps=200, decay_steps=100_000,
              checkpoint_every=500, eval_every=250,
              metrics_every=ACCELERATOR_METRICS_EVERY, device_loop=True)


def pgx(game: str, preset: TrainPreset = TrainPreset.CPU) -> dict:
  """Defaults for any pgx game (``"pgx:ENV_ID"``): Gumbel MuZero self-play (as pgx's own
  AlphaZero example), a small ResNet over ``[H, W, C]`` observations (an MLP over others),
  evaluation against a random player (and, at the end, UCT with random rollouts). On an
  accelerator: 1,024 games a step, a 64-channel, 4-block ResNet in bfloat16 (a 256-256 MLP)."""
  import jax  # the observation's shape is read off the environment

  from jaxsearch.games import pgx_env
  from jaxsearch.train import value_scale
  module = pgx_env.module_for(game)
  obs = jax.eval_shape(module.observe, module.GAME.init(jax.random.PRNGKey(0)))
  network = (dict(network="resnet", channels=16, blocks=2, head_hidden=32, ones_plane=True)
             if len(obs.shape) == 3 else dict(network="mlp", hidden=(128, 128)))
  # Returns summed over a long game (2048's, scaled by MuZero's h): the outcome's variance
  # grows with the game, so the value learns from MuZero's bootstrapped n-step returns
  # (docs/training.md: 2048's search return rose 26 % more in 8 minutes than with "mix").
  summed = value_scale.for_game(module.GAME).kind is ValueScaleKind.MUZERO
  target = ValueTarget.N_STEP if summed else ValueTarget.MIX
  cpu = dict(game=game, preset=TrainPreset.CPU, policy=SearchPolicy.GUMBEL,
             value_target=target, **network, batch_size=64, simulations=32,
             temperature_moves=4, random_opening=4, dirichlet_alpha=0.3,
             replay_capacity=50000, min_replay=1024, train_batch=256, updates_per_step=2,
             learning_rate=2e-3, decay_steps=20000, checkpoint_every=500, eval_every=50,
             eval_simulations=32, eval_games=64, eval_uct_simulations=100,
             metrics_every=CPU_METRICS_EVERY)
  if _chosen(preset) is TrainPreset.CPU:
    return cpu
  bigger = (dict(channels=64, blocks=4, head_hidden=64, compute_dtype=ComputeDtype.BFLOAT16)
            if network["network"] == "resnet" else dict(hidden=(256, 256)))
  # 1,024 positions a step and 4 x 2,048 samples: 8 samples a position, as 2 x 256 per 64.
  return dict(cpu, preset=TrainPreset.ACCELERATOR, **bigger, batch_size=1024,
              replay_capacity=500_000, min_replay=16384, train_batch=2048,
              updates_per_step=4, warmup_steps=200, decay_steps=100_000,
              checkpoint_every=500, eval_every=50,
              metrics_every=ACCELERATOR_METRICS_EVERY, device_loop=True)
