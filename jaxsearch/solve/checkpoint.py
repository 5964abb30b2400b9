"""Resumable solving: the search loop's state and the certificates' results, saved to a
directory as a solve goes, so that a killed run (``jaxsearch solve --checkpoint DIR``, then
``--resume``) goes on where it stopped instead of starting again.

A checkpoint directory holds

* ``search.npz`` — the search loop's state after a chunk (:class:`SearchState`): the open
  trees, each tree cut to the nodes and chance records it has allocated (the rest of a tree
  is what a fresh one holds, and is rebuilt so on loading), the roots still searched, the
  per-root bounds, the counters, the history, and ``meta``: the format and the *fingerprint*
  of what is solved (game, roots, options, seed, selection rule);
* ``kept_ROW.npz`` — the tree of root ``ROW`` once it left the batch proven (written once);
* ``certificates.json`` — after the search, each sub-problem's certificate as it completes.

Every file is written to a temporary file in the directory, flushed to the disk (``fsync``)
and renamed over the old one (``os.replace``), so that a run killed at any moment, even by
``SIGKILL``, leaves the previous complete state. ``search.npz`` is the one source of truth:
kept trees and certificates count only where it names them (the same fingerprint; the
certificates, of the same final search). Nothing is pickled: arrays are ``.npz`` members,
the rest JSON, and the trees' structure comes from the run that loads them.

A run holds the directory's lock (:mod:`jaxsearch.dir_lock`, the file ``.jaxsearch.lock``)
from the moment it opens the checkpoint to its end: a second run on the directory is refused
at once (:class:`CheckpointLocked`, naming the first run's pid), and the files a killed write
left behind are removed only under the lock, never while another run is writing them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import numpy as np

from jaxsearch import dir_lock
from jaxsearch.atomic_file import write_atomically
from jaxsearch.solve import fingerprint as fingerprint_lib

FORMAT = "jaxsearch-solve-checkpoint/1"
SEARCH, CERTIFICATES = "search.npz", "certificates.json"
_TEMPORARY = ".partial-"  # prefix of the files being written (left behind by a kill)

# Saving never takes more than about this share of the search's time: a save of a large
# batch of trees (Mastermind 4×6: up to 1 GB) pushes the next one back.
_MAX_SAVE_SHARE = 0.2


class CheckpointError(ValueError):
  """A checkpoint directory that cannot be used as asked (the message says why)."""


class CheckpointExists(CheckpointError):
  """The directory holds a run's state and ``resume`` was not asked."""


class CheckpointMismatch(CheckpointError):
  """The directory holds the state of another problem, or of other options."""


class CheckpointCorrupt(CheckpointError):
  """The checkpoint's files are unreadable or do not fit the run's trees."""


class CheckpointLocked(CheckpointError):
  """Another live run holds the directory (the message names its pid)."""


@dataclasses.dataclass
class SearchState:
  """The search loop's state after a chunk (:class:`jaxsearch.solve.chunked.ChunkedSearch`).

  Attributes:
    simulations, chunks: simulations per tree and chunks run so far, every run's.
    seconds: search seconds spent so far, every run's.
    rows: ``int[B']`` the roots still searched, in the order of ``tree``'s rows.
    nodes_per_tree: the open trees' node capacity.
    sizes: the open trees' program sizes after a regrowth (``max_nodes``, ``max_chance``);
      ``{}`` before any (the run's own).
    bound, upper: ``f64[B]`` per-root figures (``upper`` ``None`` before any).
    history: ``(simulations, seconds, bound f64[B], upper f64[B] | None)`` per chunk.
    tree: the open trees (a :class:`jaxsearch.tree.Tree` batch); on loading, a
      :class:`_Packed` until :meth:`trees` rebuilds it.
    kept: ``{row: tree}`` the batches of one tree of the roots that left the batch; on
      loading, ``{row: [leaves]}``.
  """

  simulations: int
  chunks: int
  seconds: float
  rows: np.ndarray
  nodes_per_tree: int
  sizes: dict
  bound: np.ndarray
  upper: Optional[np.ndarray]
  history: list
  tree: Any
  kept: dict

  def trees(self, template) -> tuple[Any, dict]:
    """``(tree, kept)`` rebuilt on ``template``: fresh trees of the saved sizes (the run's
    ``init``), whose structure the saved leaves take and whose values fill what was cut."""
    treedef = jax.tree.structure(template)
    tree = self.tree.unpack(template)
    kept = {}
    for row, leaves in self.kept.items():
      if len(leaves) != treedef.num_leaves:
        raise CheckpointCorrupt(f"the kept tree of root {row} has {len(leaves)} arrays, the "
                                f"run's trees {treedef.num_leaves}")
      kept[row] = jax.tree.unflatten(treedef, leaves)
    return tree, kept


@dataclasses.dataclass
class _Packed:
  """A batch of trees, each row cut to what it allocated: ``leaves[i]`` is leaf ``i``'s rows
  ``r`` concatenated, each cut on axis 1 to ``nodes[r]`` (an ``[B, N, ...]`` leaf) or
  ``chance[r]`` (``[B, C, ...]``); ``[B]`` leaves are whole.

  The search allocates nodes and chance records in order and never writes past the ones it
  allocated, so the rest of a tree is as a fresh tree holds it: Mastermind 4×6 saves 0.2 to
  0.5 GB instead of its trees' 1.07 GB. (tests/test_solve_resume.py compares every array of
  resumed trees with the trees of a run never stopped.)"""

  leaves: list
  nodes: np.ndarray
  chance: np.ndarray

  @staticmethod
  def pack(tree) -> "_Packed":
    nodes, chance = np.asarray(tree.num_nodes), np.asarray(tree.num_chance)
    sizes = (tree.max_nodes, tree.max_chance)
    leaves = []
    for leaf in jax.tree.leaves(tree):
      leaf = np.asarray(leaf)
      used = _used(leaf.shape, sizes, nodes, chance)
      leaves.append(leaf if used is None else np.concatenate(
          [leaf[r, :n] for r, n in enumerate(used)]))
    return _Packed(leaves, nodes, chance)

  def unpack(self, template):
    """The trees, on ``template``'s structure and fill (see :meth:`SearchState.trees`)."""
    sizes = (template.max_nodes, template.max_chance)
    fresh = jax.tree.leaves(template)
    if len(fresh) != len(self.leaves):
      raise CheckpointCorrupt(f"the saved trees have {len(self.leaves)} arrays, the run's "
                              f"{len(fresh)}")
    leaves = []
    for i, (saved, leaf) in enumerate(zip(self.leaves, fresh)):
      leaf = np.array(leaf)  # a writable copy of the fresh values
      used = _used(leaf.shape, sizes, self.nodes, self.chance)
      cut = leaf.shape if used is None else (int(sum(used)),) + leaf.shape[2:]
      if saved.shape != cut or saved.dtype != leaf.dtype:
        raise CheckpointCorrupt(f"saved tree array {i} is {saved.dtype}{list(saved.shape)}, "
                                f"the run expects {leaf.dtype}{list(cut)}")
      if used is None:
        leaf = saved
      else:
        for r, start in enumerate(np.cumsum([0] + list(used))[:-1]):
          leaf[r, :used[r]] = saved[start:start + used[r]]
      leaves.append(jax.device_put(leaf))
    return jax.tree.unflatten(jax.tree.structure(template), leaves)


def _used(shape, sizes, nodes, chance):
  """Per row, how much of axis 1 a leaf of ``shape`` uses (``None``: keep it whole)."""
  if len(shape) < 2:
    return None
  max_nodes, max_chance = sizes
  if shape[1] == max_nodes and shape[1] == max_chance:
    return np.maximum(nodes, chance)
  if shape[1] == max_nodes:
    return nodes
  return chance if shape[1] == max_chance else None


def digest(tree) -> str:
  """sha256 of a pytree of arrays (or of a string): its shapes, dtypes and bytes."""
  h = hashlib.sha256()
  if isinstance(tree, str):
    h.update(tree.encode())
    return h.hexdigest()
  for leaf in jax.tree.leaves(tree):
    leaf = np.ascontiguousarray(np.asarray(leaf))
    h.update(f"{leaf.dtype}{leaf.shape}".encode())
    h.update(leaf.tobytes())
  return h.hexdigest()


def holds_state(directory) -> bool:
  """Whether ``directory`` holds a saved search (``--resume`` would go on from it)."""
  return (Path(directory) / SEARCH).is_file()


def saved_progress(directory) -> Optional[dict]:
  """``{"simulations", "seconds", "chunks"}`` of the search saved in ``directory`` (read from
  its metadata alone), or ``None`` where none is."""
  if not holds_state(directory):
    return None
  meta = _read_meta(Path(directory) / SEARCH)
  return {key: meta[key] for key in ("simulations", "seconds", "chunks")}


class Checkpoint:
  """A solve's checkpoint directory (see the module's docstring), opened for one run, which
  holds the directory's lock until :meth:`close` (or the end of a ``with`` block, or of the
  process).

  Args:
    directory: where the state goes (created if missing).
    resume: go on from the state the directory holds; where it holds none, the run starts
      afresh (``found`` is then ``False``). Without ``resume``, a directory that holds a state
      is refused, never overwritten.
    identity: JSON-able facts of what is solved that the search loop cannot see (a puzzle's
      name, its secrets' and guesses' digests, its openings...): part of the fingerprint.
  Raises:
    CheckpointLocked: another live run holds the directory (named by its pid).
    CheckpointExists: the directory holds a state and ``resume`` is false.
    CheckpointError: ``directory`` is a file.
  """

  def __init__(self, directory, resume: bool = False, identity: Optional[dict] = None):
    self.directory = Path(directory)
    if self.directory.exists() and not self.directory.is_dir():
      raise CheckpointError(f"checkpoint {directory} is not a directory")
    self._lock = dir_lock.DirectoryLock(self.directory, what=f"checkpoint {directory}")
    try:
      self._lock.acquire()
    except dir_lock.DirectoryLocked as error:
      raise CheckpointLocked(str(error)) from None
    self.found = holds_state(self.directory)
    if self.found and not resume:
      self.close()
      raise CheckpointExists(
          f"{directory} already holds a solve's checkpoint: pass --resume (resume=True) to go "
          f"on with that run, or choose another directory")
    # A write cut short by a kill; removed under the lock, so never another run's write.
    for leftover in self.directory.glob(_TEMPORARY + "*"):
      leftover.unlink(missing_ok=True)
    self.resume, self.identity = bool(resume), dict(identity or {})
    self.digest: Optional[str] = None  # the fingerprint of the search saved or loaded last
    self.simulations: Optional[int] = None  # and its simulations
    self._kept: set = set()  # roots whose kept tree is on disk for that search
    self._certificates: Optional[dict] = None

  def close(self) -> None:
    """Ends the run's hold on the directory (its lock); the files stay."""
    self._lock.release()

  def __enter__(self) -> "Checkpoint":
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def fingerprint(self, search: dict) -> dict:
    """The whole fingerprint: the search loop's (``search``) and this run's ``identity``."""
    return json.loads(json.dumps({"problem": self.identity, **search}, sort_keys=True))

  def load_search(self, search: dict) -> Optional[SearchState]:
    """The saved search state, or ``None`` without ``resume`` or a saved state.

    Raises:
      CheckpointMismatch: it was saved for another problem or other options (named).
      CheckpointCorrupt: its files cannot be read.
    """
    if not (self.resume and self.found):
      return None
    path = self.directory / SEARCH
    meta = _read_meta(path)
    _check_fingerprint(self.directory, meta["fingerprint"], self.fingerprint(search))
    try:
      with np.load(path, allow_pickle=False) as data:
        state = _search_state(meta, data)
      state.kept = {row: self._load_kept(row, meta["digest"]) for row in meta["kept"]}
    except CheckpointError:
      raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
      raise CheckpointCorrupt(f"{path} is unreadable: {type(error).__name__}: {error}") from None
    self.digest, self.simulations, self._kept = meta["digest"], state.simulations, set(state.kept)
    return state

  def save_search(self, search: dict, state: SearchState) -> None:
    """Saves ``state`` (atomically; see the module's docstring)."""
    fingerprint = self.fingerprint(search)
    key = digest(json.dumps(fingerprint, sort_keys=True))
    if key != self.digest:
      self._kept = set()
    for row, tree in state.kept.items():  # a tree that left the batch never changes again
      if row not in self._kept:
        leaves = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(tree))}
        self._write_npz(f"kept_{row}.npz", {"digest": key, "row": int(row)}, leaves)
        self._kept.add(row)
    meta = {"format": FORMAT, "fingerprint": fingerprint, "digest": key,
            "simulations": int(state.simulations), "chunks": int(state.chunks),
            "seconds": float(state.seconds), "nodes_per_tree": int(state.nodes_per_tree),
            "sizes": {k: int(v) for k, v in state.sizes.items()},
            "kept": sorted(int(row) for row in state.kept)}
    self._write_npz(SEARCH, meta, _search_arrays(state))
    self.digest, self.simulations = key, int(state.simulations)

  def _write_npz(self, name: str, meta: dict, arrays: dict) -> None:
    meta = {"format": FORMAT, **meta}
    _write_atomically(self.directory / name, lambda f: np.savez(
        f, meta=np.array(json.dumps(meta)), **arrays))

  def _load_kept(self, row: int, key: str) -> list:
    path = self.directory / f"kept_{row}.npz"
    if not path.is_file() or _read_meta(path).get("digest") != key:
      raise CheckpointCorrupt(f"{path}, the tree of a root that left the batch, is missing "
                              f"or of another run")
    with np.load(path, allow_pickle=False) as data:
      return [data[name] for name in sorted(n for n in data.files if n.startswith("leaf_"))]

  def settled(self, targets: dict, record: Callable) -> dict:
    """``{row: record(proven, total, policy)}``: the certificates saved for the final search
    of this checkpoint whose target was ``targets[row]`` (``record`` builds the caller's type,
    e.g. :class:`jaxsearch.guessing.certificates.Settled`)."""
    saved = self._read_certificates()["settled"]
    found = {}
    for row, target in targets.items():
      one = saved.get(str(row))
      if one is not None and one["target"] == int(target):
        found[row] = record(one["proven"], one["total"], _policy_from_json(one["policy"]))
    return found

  def save_settled(self, row: int, target: int, settled) -> None:
    """Adds one sub-problem's certificate (``proven``, ``total``, ``policy``) to ``certificates.json``."""
    data = self._read_certificates()
    data["settled"][str(row)] = {"target": int(target), "proven": bool(settled.proven),
                                 "total": int(settled.total),
                                 "policy": _policy_to_json(settled.policy)}
    self._write_certificates(data)

  def certified(self, name: str, target: int) -> Optional[bool]:
    """A saved :func:`jaxsearch.guessing.certificates.certify` answer ``name`` for ``target``."""
    one = self._read_certificates()["certified"].get(name)
    return None if one is None or one["target"] != int(target) else one["proven"]

  def save_certified(self, name: str, target: int, proven: bool) -> None:
    data = self._read_certificates()
    data["certified"][name] = {"target": int(target), "proven": bool(proven)}
    self._write_certificates(data)

  def _read_certificates(self) -> dict:
    """What ``certificates.json`` holds for the search saved last (empty for another)."""
    if self._certificates is None:
      path = self.directory / CERTIFICATES
      data = {}
      if self.resume and path.is_file():
        try:
          data = json.loads(path.read_text())
        except (OSError, ValueError):
          data = {}  # unreadable: certify again (nothing is lost but time)
      if (data.get("format") != FORMAT or data.get("digest") != self.digest or
          data.get("simulations") != self.simulations):
        data = {}
      self._certificates = {"format": FORMAT, "digest": self.digest,
                            "simulations": self.simulations,
                            "settled": data.get("settled", {}),
                            "certified": data.get("certified", {})}
    return self._certificates

  def _write_certificates(self, data: dict) -> None:
    text = json.dumps(data).encode()
    _write_atomically(self.directory / CERTIFICATES, lambda f: f.write(text))


class SearchSaver:
  """When and what :func:`jaxsearch.solve.chunked.run` saves to a :class:`Checkpoint`: after a
  chunk once ``every`` seconds of search have passed since the last save (0: after every
  chunk), and at the end of the search. A save that took long pushes the next one back, so
  that saving takes at most about a fifth of the search's time."""

  def __init__(self, checkpoint: Checkpoint, fingerprint: dict, every: float):
    self.checkpoint, self.fingerprint, self.every = checkpoint, fingerprint, float(every)
    self.seconds, self.chunks, self.cost = 0.0, 0, 0.0  # at the last save; its duration
    self.spent = 0.0  # seconds spent saving in this run

  def load(self) -> Optional[SearchState]:
    state = self.checkpoint.load_search(self.fingerprint)
    if state is not None:
      self.seconds, self.chunks = state.seconds, state.chunks
    return state

  def due(self, seconds: float) -> bool:
    wait = max(self.every, self.cost * (1 - _MAX_SAVE_SHARE) / _MAX_SAVE_SHARE)
    return seconds - self.seconds >= wait

  def save(self, state: SearchState) -> None:
    started = time.perf_counter()
    self.checkpoint.save_search(self.fingerprint, state)
    self.cost = time.perf_counter() - started
    self.spent += self.cost
    self.seconds, self.chunks = state.seconds, state.chunks


def _search_arrays(state: SearchState) -> dict:
  """The ``.npz`` members of a search state (its ``tree`` packed, see :class:`_Packed`)."""
  history = state.history
  batch = len(state.bound)
  packed = _Packed.pack(state.tree)
  arrays = {"rows": np.asarray(state.rows, np.int64), "bound": np.asarray(state.bound),
            "history_simulations": np.array([h[0] for h in history], np.int64),
            "history_seconds": np.array([h[1] for h in history], np.float64),
            "history_bound": np.array([h[2] for h in history], np.float64).reshape(-1, batch),
            "history_has_upper": np.array([h[3] is not None for h in history], bool),
            "history_upper": np.array([np.zeros(batch) if h[3] is None else h[3]
                                       for h in history], np.float64).reshape(-1, batch),
            "tree_nodes": packed.nodes, "tree_chance": packed.chance}
  if state.upper is not None:
    arrays["upper"] = np.asarray(state.upper)
  arrays.update({f"tree_{i:05d}": leaf for i, leaf in enumerate(packed.leaves)})
  return arrays


def _search_state(meta: dict, data) -> SearchState:
  """A :class:`SearchState` from ``search.npz``'s ``meta`` and members ``data``."""
  has_upper = data["history_has_upper"]
  history = [(int(sims), float(secs), bound, upper if has else None) for sims, secs, bound,
             upper, has in zip(data["history_simulations"], data["history_seconds"],
                               data["history_bound"], data["history_upper"], has_upper)]
  names = sorted(n for n in data.files if n.startswith("tree_0"))
  packed = _Packed([data[name] for name in names], data["tree_nodes"], data["tree_chance"])
  return SearchState(simulations=meta["simulations"], chunks=meta["chunks"],
                     seconds=meta["seconds"], rows=data["rows"],
                     nodes_per_tree=meta["nodes_per_tree"], sizes=dict(meta["sizes"]),
                     bound=data["bound"], upper=data["upper"] if "upper" in data.files else None,
                     history=history, tree=packed, kept={})


def _read_meta(path: Path) -> dict:
  try:
    with np.load(path, allow_pickle=False) as data:
      meta = json.loads(str(data["meta"]))
  except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
    raise CheckpointCorrupt(f"{path} is unreadable: {type(error).__name__}: {error}") from None
  if not isinstance(meta, dict) or meta.get("format") != FORMAT:
    raise CheckpointCorrupt(f"{path} is not a solve checkpoint of this version ({FORMAT})")
  return meta


def _check_fingerprint(directory, saved: dict, current: dict) -> None:
  """Raises :class:`CheckpointMismatch` naming what differs between two fingerprints."""
  named = fingerprint_lib.differences(saved, current)
  if named:
    raise CheckpointMismatch(f"checkpoint {directory} holds another solve ({named}): resume "
                             f"with the same problem and options, or choose another "
                             f"directory")


def _policy_to_json(policy: Optional[dict]):
  """An exact search's policy (guess indices, integer feedback codes) as JSON-able data."""
  if policy is None:
    return None
  return {"guess": int(policy["guess"]), "children": {
      str(int(code)): _policy_to_json(child) for code, child in policy["children"].items()}}


def _policy_from_json(policy) -> Optional[dict]:
  if policy is None:
    return None
  return {"guess": int(policy["guess"]), "children": {
      int(code): _policy_from_json(child) for code, child in policy["children"].items()}}


def _write_atomically(path: Path, write) -> None:
  """Atomically, named so that a resumed run can clean up what a kill left."""
  write_atomically(path, write, prefix=f"{_TEMPORARY}{path.name}.")
