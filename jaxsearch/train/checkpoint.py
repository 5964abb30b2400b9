"""Orbax checkpoints of a whole training state (any pytree of arrays), with mismatch checks.

A checkpoint is one orbax step directory under ``DIR/checkpoints/`` holding

* ``state``: every array leaf of the training state (parameters, optimiser state, replay
  buffer, self-play games and trees, RNG key, step), saved as ``leaf_00000 ...``;
* ``meta`` (JSON): the format, the run's configuration, each leaf's path, shape and dtype,
  the SHA-256 of each leaf's bytes (``sha256``) and of the metadata itself (``digest``);
* ``jaxsearch_files.json`` (:data:`FILES`): the SHA-256 of every file orbax wrote for the
  step, written atomically once orbax has committed it, so that a changed file is found
  before orbax decodes it (a step without it, killed in between or older, is checked by its
  arrays' checksums alone).

Orbax writes a step to a temporary directory and renames it when complete, so a run killed
mid-save (even by SIGKILL) leaves the previous checkpoint intact. :func:`restore` checks the
configuration and every leaf against the run that resumes and raises
:class:`CheckpointMismatch` naming what differs (game, network size, ...), or
:class:`CheckpointCorrupt` when the files cannot be read or what they hold differs from the
checksums written with them: orbax's compressed arrays decode flipped bytes into wrong values
without an error. Asked for the newest step, :meth:`Checkpointer.restore` falls back to the
newest step that is intact and records the ones it skipped (:attr:`Checkpointer.skipped`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Optional

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxsearch import dir_lock
from jaxsearch.atomic_file import write_atomically

FORMAT = "jaxsearch-train/1"
FILES = "jaxsearch_files.json"  # in each step's folder: {relative path: SHA-256} of its files


class CheckpointError(Exception):
  """Base class of checkpoint problems."""


class CheckpointMismatch(CheckpointError, ValueError):
  """The checkpoint was written by a run of another configuration or shape."""


class CheckpointCorrupt(CheckpointError):
  """The checkpoint's files are missing, truncated or unreadable."""


class CheckpointLocked(CheckpointError):
  """Another live run holds the output directory (the message names its pid)."""


def _leaves(state: Any) -> list[tuple[str, Any]]:
  flat, _ = jax.tree_util.tree_flatten_with_path(state)
  return [(jax.tree_util.keystr(path), leaf) for path, leaf in flat]


def _shape(leaf) -> tuple[int, ...]:
  return tuple(leaf.shape) if hasattr(leaf, "shape") else np.shape(leaf)


def array_digest(array: np.ndarray) -> str:
  """SHA-256 (hex) of an array's bytes in C order: what :meth:`Checkpointer.save` records per
  leaf and :meth:`Checkpointer.restore` checks."""
  return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def meta_digest(meta: dict) -> str:
  """SHA-256 (hex) of a checkpoint's metadata but its ``digest`` entry, as canonical JSON: a
  flipped byte in the metadata would otherwise read as another configuration."""
  body = {key: value for key, value in meta.items() if key != "digest"}
  return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class SkippedStep:
  """A checkpoint :meth:`Checkpointer.restore` passed over for an older one: its ``step`` and
  why (``reason``, the :class:`CheckpointCorrupt` message)."""

  step: int
  reason: str

  def brief(self, limit: int = 300) -> str:
    """``reason``, cut to ``limit`` characters (orbax's messages carry whole specs)."""
    return self.reason if len(self.reason) <= limit else self.reason[:limit] + " …"


def _describe(leaf) -> tuple[list[int], str]:
  """``(shape, dtype name)`` of an array or a ``jax.ShapeDtypeStruct``."""
  dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
  return list(_shape(leaf)), str(np.dtype(dtype))


def file_digest(path: Path) -> str:
  """SHA-256 (hex) of a file's bytes, read in blocks."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def _step_files(step_dir: Path) -> dict[str, str]:
  """``{path relative to step_dir: SHA-256}`` of the files orbax wrote for a step."""
  return {str(p.relative_to(step_dir)): file_digest(p) for p in sorted(step_dir.rglob("*"))
          if p.is_file() and not p.name.startswith((FILES, f".{FILES}."))}


def _verify_files(step_dir: Path, where: str) -> None:
  """Raises :class:`CheckpointCorrupt` naming a file of the step that is missing or changed
  since :meth:`Checkpointer.save` listed it in :data:`FILES` (no list: nothing to check)."""
  listing = step_dir / FILES
  if not listing.is_file():
    return
  try:
    files = json.loads(listing.read_text())
  except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
    raise CheckpointCorrupt(f"{where} is corrupt: its {FILES} cannot be read "
                            f"({type(error).__name__})") from None
  if not isinstance(files, dict):
    raise CheckpointCorrupt(f"{where} is corrupt: its {FILES} is not a listing of files")
  for name, digest in files.items():
    path = step_dir / name
    if not path.is_file():
      raise CheckpointCorrupt(f"{where} is corrupt: its file {name} is missing")
    if file_digest(path) != digest:
      raise CheckpointCorrupt(f"{where} is corrupt: its file {name} changed since it was saved "
                              "(its SHA-256 differs)")


class Checkpointer:
  """Saves and restores training states in ``directory`` (``DIR/checkpoints``).

  Attributes:
    skipped: the newer steps the last :meth:`restore` of the newest checkpoint skipped as
      corrupt (:class:`SkippedStep`, newest first; empty when it restored the newest).

  Args:
    directory: the run's output directory.
    config: a JSON-able dict identifying the run; on restore, every key not in
      ``may_change`` must be equal.
    may_change: configuration keys a resumed run may change (e.g. the stop condition).
    max_to_keep: checkpoints kept on disk (older ones are deleted).
    defaults: the value each configuration key had before it existed: a key missing from
      a checkpoint's configuration (written by an older version) counts as this value, so
      adding a setting does not orphan the checkpoints written before it.
    lock: hold the output directory's lock (:mod:`jaxsearch.dir_lock`) until :meth:`close`,
      as a training run does; raises :class:`CheckpointLocked` where another live run holds
      it. Readers (``jaxsearch play`` of a run in progress) do not lock.
  """

  def __init__(self, directory: str | Path, config: dict,
               may_change: Iterable[str] = (), max_to_keep: int = 2,
               defaults: Optional[dict] = None, lock: bool = False):
    self._lock = dir_lock.DirectoryLock(Path(directory), what=f"output directory {directory}")
    if lock:
      try:
        self._lock.acquire()
      except dir_lock.DirectoryLocked as error:
        raise CheckpointLocked(str(error)) from None
    self.directory = Path(directory).resolve() / "checkpoints"
    self.config = json.loads(json.dumps(config))  # tuples -> lists, as read back
    self.defaults = json.loads(json.dumps(defaults or {}))
    self.may_change = set(may_change)
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  skipped: tuple[SkippedStep, ...] = ()

  def latest_step(self) -> Optional[int]:
    """The newest complete checkpoint's step, or ``None``."""
    self._manager.reload()
    return self._manager.latest_step()

  def save(self, step: int, state: Any) -> None:
    """Writes ``state`` as checkpoint ``step`` (synchronously), with each leaf's checksum.

    Checkpoints of this step or later are deleted first: a run that resumed from an older
    step (past corrupt newer ones, :meth:`restore`) replaces them as it goes."""
    leaves = _leaves(state)
    arrays = {f"leaf_{i:05d}": np.asarray(jax.device_get(leaf))
              for i, (_, leaf) in enumerate(leaves)}
    meta = dict(format=FORMAT, step=int(step), config=self.config,
                leaves=[[path, *_describe(leaf)] for path, leaf in leaves],
                sha256=[array_digest(array) for array in arrays.values()])
    meta["digest"] = meta_digest(meta)
    self._manager.reload()
    for stale in self._manager.all_steps():
      if stale >= step:
        self._manager.delete(stale)
    self._manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)), force=True)
    self._manager.wait_until_finished()
    step_dir = self.directory / str(step)
    listing = json.dumps(_step_files(step_dir), indent=0, sort_keys=True).encode()
    write_atomically(step_dir / FILES, lambda f: f.write(listing), mode=0o644)

  def restore(self, template: Any, step: Optional[int] = None) -> tuple[Any, int]:
    """Restores the newest intact checkpoint (or ``step``) into the structure of ``template``
    (a state of the run's shapes, or its ``jax.eval_shape``).

    Without ``step``, a corrupt newest checkpoint is passed over for the next older one, and
    so on; the steps passed over are in :attr:`skipped` afterwards (the caller says so).

    Returns:
      ``(state, step)``.
    Raises:
      FileNotFoundError: no checkpoint in the directory (or none of that ``step``).
      CheckpointMismatch: the configuration or a leaf's shape/dtype differs (named).
      CheckpointCorrupt: the files of ``step`` (without ``step``: of every checkpoint in the
        directory) cannot be read or do not match their checksums.
    """
    self.skipped = ()
    self._manager.reload()
    if step is not None:
      return self._restore_step(template, step)
    steps = sorted(self._manager.all_steps(), reverse=True)
    if not steps:
      raise FileNotFoundError(f"no checkpoint found in {self.directory}")
    skipped = []
    for candidate in steps:
      try:
        result = self._restore_step(template, candidate)
      except CheckpointCorrupt as error:
        skipped.append(SkippedStep(int(candidate), str(error)))
        continue
      self.skipped = tuple(skipped)
      return result
    raise CheckpointCorrupt(f"every checkpoint in {self.directory} is corrupt (steps "
                            f"{', '.join(str(s.step) for s in skipped)}): "
                            + "; ".join(s.brief() for s in skipped))

  def _restore_step(self, template: Any, step: int) -> tuple[Any, int]:
    """:meth:`restore` of checkpoint ``step``: the metadata checked, then the arrays read and
    checked against their checksums."""
    where = f"checkpoint {self.directory / str(step)}"
    if step not in self._manager.all_steps():
      raise FileNotFoundError(f"no {where}")
    _verify_files(self.directory / str(step), where)
    meta = self._read_meta(step, where)
    leaves = _leaves(template)
    self._check_leaves(meta.get("leaves", []), leaves, where)
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
    _verify_arrays(meta, [path for path, _ in leaves], values, where)
    return jax.tree.unflatten(treedef, values), int(meta.get("step", step))

  def _read_meta(self, step: int, where: str) -> dict:
    """Checkpoint ``step``'s metadata, its format, digest and configuration checked."""
    try:
      meta = self._manager.restore(step, args=ocp.args.Composite(
          meta=ocp.args.JsonRestore()))["meta"]
    except Exception as error:  # orbax raises many kinds; all mean the same here
      raise CheckpointCorrupt(f"{where} is corrupt or unreadable (its metadata): "
                              f"{type(error).__name__}: {error}") from error
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
      raise CheckpointCorrupt(f"{where} is not a {FORMAT} checkpoint (metadata {meta!r:.200})")
    # Written since checksums were: an older checkpoint has none and is read unchecked.
    if "digest" in meta and meta["digest"] != meta_digest(meta):
      raise CheckpointCorrupt(f"{where} is corrupt: its metadata does not match the checksum "
                              "written with it")
    self.check_config(meta.get("config", {}), where)
    return meta

  @staticmethod
  def _check_leaves(saved: list, leaves: list, where: str) -> None:
    """Raises :class:`CheckpointMismatch` naming the arrays whose path, shape or dtype in the
    checkpoint (``saved``) differ from this run's (``leaves``)."""
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
    self._lock.release()


def _verify_arrays(meta: dict, paths: list[str], values: list[np.ndarray], where: str) -> None:
  """Raises :class:`CheckpointCorrupt` unless every array read back has the checksum
  :meth:`Checkpointer.save` recorded for it (a checkpoint from before checksums has none)."""
  digests = meta.get("sha256")
  if digests is None:
    return
  if not isinstance(digests, list) or len(digests) != len(values):
    raise CheckpointCorrupt(f"{where} is corrupt: {len(values)} arrays but checksums "
                            f"{digests!r:.80}")
  bad = [path for path, value, digest in zip(paths, values, digests)
         if array_digest(value) != digest]
  if bad:
    raise CheckpointCorrupt(f"{where} is corrupt: {len(bad)} of {len(values)} arrays differ "
                            f"from the checksums written with them ({', '.join(bad[:3])}"
                            f"{', ...' if len(bad) > 3 else ''})")
