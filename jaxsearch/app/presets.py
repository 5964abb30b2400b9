"""The per-game training presets: each game's :class:`~jaxsearch.train.config.TrainConfig`
fields, from the game's full name.

The registry (:mod:`jaxsearch.app.registry`) says which preset a game has;
:func:`jaxsearch.app.training.preset` builds the configuration. Importing this module is cheap
(no JAX): the command line lists the games before it imports anything heavy.
"""

from __future__ import annotations

from jaxsearch.enums import SearchPolicy, ValueScaleKind, ValueTarget


def tictactoe(game: str) -> dict:
  """Tic-tac-toe: PUCT self-play (root noise) of a small MLP."""
  return dict(game=game, network="mlp", hidden=(64, 64), batch_size=128, simulations=32,
              temperature_moves=2, random_opening=6, dirichlet_alpha=1.0,
              replay_capacity=20000, min_replay=512, train_batch=256, updates_per_step=1,
              learning_rate=2e-3, decay_steps=3000, checkpoint_every=250, eval_every=250,
              eval_simulations=64, eval_games=100)


def connect_four(game: str) -> dict:
  """Connect Four: Gumbel self-play of a small ResNet with mixed value targets."""
  # Gumbel, not PUCT: see docs/training.md (PUCT's visit-count targets at 32 simulations
  # never learnt immediate wins and blocks).
  return dict(game=game, policy=SearchPolicy.GUMBEL, value_target=ValueTarget.MIX, network="resnet",
              channels=16, blocks=1, head_hidden=32, ones_plane=True,
              batch_size=128, simulations=32, temperature_moves=4, random_opening=8,
              dirichlet_alpha=1.0, replay_capacity=100000, min_replay=4096,
              train_batch=256, updates_per_step=2, learning_rate=2e-3, decay_steps=20000,
              checkpoint_every=500, eval_every=1000, eval_simulations=128, eval_games=100,
              eval_uct_simulations=200)


def pgx(game: str) -> dict:
  """Defaults for any pgx game (``"pgx:ENV_ID"``): Gumbel MuZero self-play (as pgx's own
  AlphaZero example), a small ResNet over ``[H, W, C]`` observations (an MLP over others),
  evaluation against a random player (and, at the end, UCT with random rollouts)."""
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
  return dict(game=game, policy=SearchPolicy.GUMBEL, value_target=target, **network, batch_size=64,
              simulations=32, temperature_moves=4, random_opening=4, dirichlet_alpha=0.3,
              replay_capacity=50000, min_replay=1024, train_batch=256, updates_per_step=2,
              learning_rate=2e-3, decay_steps=20000, checkpoint_every=500, eval_every=50,
              eval_simulations=32, eval_games=64, eval_uct_simulations=100)
