"""A finished (or interrupted) training run read back from its folder: the trainer its
``config.json`` describes and the parameters of a checkpoint, for play and evaluation."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from jaxsearch.train import checkpoint as checkpoint_lib
from jaxsearch.train.config import TrainConfig
from jaxsearch.train.trainer import Trainer


def load_trained(out_dir: str | Path, game_module: Callable[[str], Any],
                 step: Optional[int] = None) -> tuple[Trainer, Any]:
  """``(trainer, params)`` of a run's newest checkpoint (or ``step``), the configuration read
  from its ``config.json``; no evaluator is built.

  Args:
    out_dir: the run's output directory.
    game_module: the game's module from its name (``config.game``), e.g.
      :func:`jaxsearch.app.registry.game_module` (:func:`jaxsearch.app.training.load_trained`
      passes it).
    step: the checkpoint to read (default: the newest).

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
  config = TrainConfig(**fields)
  trainer = Trainer(config, game_module(config.game), out_dir=out_dir, evaluator=False)
  ckpt = trainer.checkpointer()
  try:
    state, restored = ckpt.restore(jax.eval_shape(trainer.init_state), step)
  finally:
    ckpt.close()
  for note in ckpt.skipped:
    warnings.warn(f"checkpoint step {note.step} is corrupt and was skipped; using step "
                  f"{restored}. ({note.brief()})", stacklevel=2)
  return trainer, jax.tree.map(jnp.asarray, state.params)
