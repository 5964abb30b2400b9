"""Orbax checkpoints of a whole training state (any pytree of arrays), with mismatch checks.

A checkpoint is one orbax step directory under ``DIR/checkpoints/`` holding

* ``state``: every array leaf of the training state (parameters, optimiser state, replay
  buffer, self-play games and trees, RNG key, step), saved as ``leaf_00000 ...``;
* ``meta`` (JSON): the format, the run's configuration, and each leaf's path, shape and dtype.

Orbax writes a step to a temporary directory and renames it when complete, so a run killed
mid-save (even by SIGKILL) leaves the previous checkpoint intact. :func:`restore` checks the
configuration and every leaf against the run that resumes and raises
:class:`CheckpointMismatch` naming what differs (game, network size, ...), or
:class:`CheckpointCorrupt` when the files cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

import jax
import numpy as np
import orbax.checkpoint as ocp

FORMAT = "jaxsearch-train/1"


class CheckpointError(Exception):
  """Base class of checkpoint problems."""


class CheckpointMismatch(CheckpointError, ValueError):
  """The checkpoint was written by a run of another configuration or shape."""


class CheckpointCorrupt(CheckpointError):
  """The checkpoint's files are missing, truncated or unreadable."""


def _leaves(state: Any) -> list[tuple[str, Any]]:
  flat, _ = jax.tree_util.tree_flatten_with_path(state)
  return [(jax.tree_util.keystr(path), leaf) for path, leaf in flat]


def _shape(leaf) -> tuple[int, ...]:
  return tuple(leaf.shape) if hasattr(leaf, "shape") else np.shape(leaf)


def _describe(leaf) -> tuple[list[int], str]:
  """``(shape, dtype name)`` of an array or a ``jax.ShapeDtypeStruct``."""
  dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
  return list(_shape(leaf)), str(np.dtype(dtype))


class Checkpointer:
  """Saves and restores training states in ``directory`` (``DIR/checkpoints``).

  Args:
    directory: the run's output directory.
    config: a JSON-able dict identifying the run; on restore, every key not in
      ``may_change`` must be equal.
    may_change: configuration keys a resumed run may change (e.g. the stop condition).
    max_to_keep: checkpoints kept on disk (older ones are deleted).
    defaults: the value each configuration key had before it existed: a key missing from
      a checkpoint's configuration (written by an older version) counts as this value, so
      adding a setting does not orphan the checkpoints written before it.
  """

  def __init__(self, directory: str | Path, config: dict,
               may_change: Iterable[str] = (), max_to_keep: int = 2,
               defaults: Optional[dict] = None):
    self.directory = Path(directory).resolve() / "checkpoints"
    self.config = json.loads(json.dumps(config))  # tuples -> lists, as read back
    self.defaults = json.loads(json.dumps(defaults or {}))
    self.may_change = set(may_change)
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def latest_step(self) -> Optional[int]:
    """The newest complete checkpoint's step, or ``None``."""
    self._manager.reload()
    return self._manager.latest_step()

  def save(self, step: int, state: Any) -> None:
    """Writes ``state`` as checkpoint ``step`` (synchronously; replaces one of that step)."""
    leaves = _leaves(state)
    arrays = {f"leaf_{i:05d}": np.asarray(jax.device_get(leaf))
              for i, (_, leaf) in enumerate(leaves)}
    meta = dict(format=FORMAT, step=int(step), config=self.config,
                leaves=[[path, *_describe(leaf)] for path, leaf in leaves])
    if step in self._manager.all_steps():
      self._manager.delete(step)
    self._manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)), force=True)
    self._manager.wait_until_finished()

  def restore(self, template: Any, step: Optional[int] = None) -> tuple[Any, int]:
    """Restores the newest checkpoint (or ``step``) into the structure of ``template`` (a
    state of the run's shapes, or its ``jax.eval_shape``).

    Returns:
      ``(state, step)``.
    Raises:
      FileNotFoundError: no checkpoint in the directory.
      CheckpointMismatch: the configuration or a leaf's shape/dtype differs (named).
      CheckpointCorrupt: the files cannot be read.
    """
    if step is None:
      step = self.latest_step()
    if step is None:
      raise FileNotFoundError(f"no checkpoint found in {self.directory}")
    where = f"checkpoint {self.directory / str(step)}"
    try:
      meta = self._manager.restore(step, args=ocp.args.Composite(
          meta=ocp.args.JsonRestore()))["meta"]
    except Exception as error:  # orbax raises many kinds; all mean the same here
      raise CheckpointCorrupt(f"{where} is corrupt or unreadable (its metadata): "
                              f"{type(error).__name__}: {error}") from error
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
      raise CheckpointCorrupt(f"{where} is not a {FORMAT} checkpoint (metadata {meta!r:.200})")
    self.check_config(meta.get("config", {}), where)
    leaves = _leaves(template)
    saved = meta.get("leaves", [])
    problems = []
    if len(saved) != len(leaves):
      problems.append(f"{len(saved)} arrays in the checkpoint, {len(leaves)} in this run")
    for (path, leaf), entry in zip(leaves, saved):
      want = [path, *_describe(leaf)]
      if list(entry) != want:
        problems.append(f"{entry[0]}: checkpoint {entry[2]}{tuple(entry[1])}, this run "
                        f"{want[2]}{tuple(want[1])}")
    if problems:
      raise CheckpointMismatch(f"{where} does not fit this run: " + "; ".join(problems[:5]) +
                               (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
    abstract = {f"leaf_{i:05d}": jax.ShapeDtypeStruct(_shape(leaf), _describe(leaf)[1])
                for i, (_, leaf) in enumerate(leaves)}
    try:
      arrays = self._manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(abstract)))["state"]
    except Exception as error:
      raise CheckpointCorrupt(f"{where} is corrupt or unreadable (its arrays): "
                              f"{type(error).__name__}: {error}") from error
    treedef = jax.tree.structure(template)
    values = [np.asarray(arrays[f"leaf_{i:05d}"]) for i in range(len(leaves))]
    for (path, leaf), value in zip(leaves, values):
      if value.shape != _shape(leaf):
        raise CheckpointCorrupt(f"{where}: {path} has shape {value.shape}, its metadata says "
                                f"{_shape(leaf)}")
    return jax.tree.unflatten(treedef, values), int(meta.get("step", step))

  def check_config(self, saved: dict, where: str) -> None:
    """Raises :class:`CheckpointMismatch` naming every configuration key that differs."""
    saved = {**{k: v for k, v in self.defaults.items() if k not in saved}, **saved}
    keys = (set(saved) | set(self.config)) - self.may_change
    diffs = [f"{k}: checkpoint {saved.get(k, '<absent>')!r}, this run "
             f"{self.config.get(k, '<absent>')!r}"
             for k in sorted(keys) if saved.get(k) != self.config.get(k)]
    if diffs:
      raise CheckpointMismatch(f"{where} was written by a different configuration — "
                               + "; ".join(diffs) + ". Resume with the same settings, or "
                               "start a new run in another --out directory.")

  def close(self) -> None:
    self._manager.close()
