"""Training a game of the registry: its preset, its trainer, a trained run read back.

The library's trainer (:class:`jaxsearch.train.trainer.Trainer`) names no game: it is given the
game's module and its evaluation. This module looks both up in the registry
(:mod:`jaxsearch.app.registry`) from the configuration's ``game``::

    config = preset("tictactoe", simulations=64)      # the preset for this backend
    summary = trainer(config, out_dir="runs/ttt").run(minutes=5)
    big = preset("connect_four", "accelerator")        # or the one named
    trained, params = load_trained("runs/ttt")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from jaxsearch.app import registry
from jaxsearch.enums import coerce
from jaxsearch.train import loading
from jaxsearch.train import trainer as trainer_lib
from jaxsearch.enums import TrainPreset
from jaxsearch.train.config import TrainConfig


def games() -> tuple[str, ...]:
  """The named games with a training preset (and any pgx environment, ``"pgx:ENV_ID"``)."""
  return registry.names("training")


def preset(game: str, preset: Optional[TrainPreset | str] = None, **overrides) -> TrainConfig:
  """The default configuration for ``game`` (:mod:`jaxsearch.app.presets`), with
  ``overrides``.

  Args:
    game: the game's name in the registry.
    preset: which of the game's presets: a :class:`~jaxsearch.enums.TrainPreset`
      (``"cpu"`` or ``"accelerator"``); ``None``: the one for the backend JAX runs on
      (:meth:`TrainPreset.for_backend <jaxsearch.enums.TrainPreset.for_backend>`).
    overrides: :class:`~jaxsearch.train.config.TrainConfig` fields.

  Raises:
    ValueError: a game the registry cannot train, an unknown preset, or a bad override.
  """
  chosen = (TrainPreset.for_backend() if preset is None
            else coerce(TrainPreset, preset, "preset"))
  fields = registry.entry(game, "training").training.preset(game, chosen)
  fields.update(overrides)
  return TrainConfig(**fields)


def default_minutes(game: str) -> float:
  """``jaxsearch train``'s budget for ``game`` unless ``--minutes`` or ``--steps`` says
  otherwise."""
  return registry.entry(game, "training").training.minutes


def trainer(config: TrainConfig, out_dir: Optional[str | Path] = None,
            evaluator: Any = None) -> trainer_lib.Trainer:
  """The :class:`~jaxsearch.train.trainer.Trainer` of ``config``: the module of
  ``config.game`` and its evaluation (the game's oracles where it has them, else the
  library's matches) from the registry.

  Args:
    config: the run's configuration (e.g. from :func:`preset`).
    out_dir: where metrics, checkpoints and plots go (``None``: nothing is written).
    evaluator: ``None``: the game's; ``False``: no evaluation; else builds one from the
      trainer (:data:`jaxsearch.train.evaluators.MakeEvaluator`).
  """
  found = registry.entry(config.game, "training")
  if evaluator is None:
    evaluator = found.training.evaluator
  return trainer_lib.Trainer(config, found.load(), out_dir=out_dir, evaluator=evaluator)


def load_trained(out_dir: str | Path, step: Optional[int] = None) -> tuple[trainer_lib.Trainer, Any]:
  """``(trainer, params)`` of a run's newest checkpoint (or ``step``):
  :func:`jaxsearch.train.loading.load_trained` with the game looked up in the registry."""
  return loading.load_trained(out_dir, registry.game_module, step)
