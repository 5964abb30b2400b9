"""AlphaZero-style training: a Flax ``nnx`` network as the search's estimator.

Modules (small and flat):
  networks    MLP and residual conv nets (policy logits, tanh value, optional action values)
              and :func:`networks.estimator_from_network`, which makes any of them an Estimator.
  replay      a fixed-capacity FIFO replay buffer held as device arrays (jitted add / sample).
  selfplay    ``B`` games in lock-step, one batched search per move, subtree reuse, restarts.
  losses      ``(v − z)² − πᵀ log p + λ‖θ‖²`` (+ action-value regression), optax AdamW.
  value_scale the game's values <-> the value head's [-1, 1] (identity, linear, MuZero's h).
  checkpoint  orbax checkpoints of the whole training state, with mismatch checks.
  config      TrainConfig, the presets' kinds (TrainPreset) and the network's arithmetic.
  trainer     the training loop (deterministic in seed and step), given the game's module.
  run_state   where a run stands: its stop conditions, its unread metrics, its intervals.
  evaluators  the loop's default evaluation: matches against a random player and UCT.
  metrics     metrics.jsonl rows, plots, the progress bar.
  agents      players and adapters (random, UCT with rollouts, a search, a network's argmax,
              the best move by an oracle's action values), run over a set of positions.
  matches     two-player matches in lock-step, one-player mean returns.

Game-agnostic: no module here imports a game. The per-game presets, the games' exact oracles
(tic-tac-toe minimax, the Connect Four test sets) and the evaluation API built on them are the
application layer's (:mod:`jaxsearch.app.training`, :mod:`jaxsearch.app.evaluate`).

Submodules load on first use (``jaxsearch.train.trainer``), so importing the package is cheap.
"""

import importlib

_SUBMODULES = ("networks", "replay", "selfplay", "losses", "checkpoint", "config", "trainer",
               "run_state", "evaluators", "metrics", "agents", "matches", "value_scale")

__all__ = list(_SUBMODULES)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxsearch.train.{name}")
  raise AttributeError(f"module 'jaxsearch.train' has no attribute {name!r}")
