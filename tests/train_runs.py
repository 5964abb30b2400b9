"""Shared by the training tests: a compilation cache the tests' subprocesses share, and a run
killed with SIGKILL, resumed, and compared bit for bit with an uninterrupted one."""

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxsearch.train import checkpoint as checkpoint_lib
from jaxsearch.train import trainer as trainer_lib

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def compile_cache_at(path):
  """JAX's persistent compilation cache in ``path`` (every program cached), for this process
  and the subprocesses given :func:`subprocess_env`; restored afterwards."""
  saved = (jax.config.jax_compilation_cache_dir,
           jax.config.jax_persistent_cache_min_compile_time_secs)
  jax.config.update("jax_compilation_cache_dir", str(path))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  try:
    yield path
  finally:
    jax.config.update("jax_compilation_cache_dir", saved[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", saved[1])


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
  """A persistent compilation cache shared with the subprocesses of the module that imports
  this fixture."""
  with compile_cache_at(tmp_path_factory.mktemp("jax_cache")) as path:
    yield path


def subprocess_env(cache, **extra):
  """The environment of a training subprocess: this checkout first on ``PYTHONPATH``, the
  compilation cache ``cache``, and ``extra``."""
  env = dict(os.environ)
  env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
  env["JAX_COMPILATION_CACHE_DIR"] = str(cache)
  env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
  env.update(extra)
  return env


def deterministic(rows):
  """``metrics.jsonl`` rows without their wall-clock fields."""
  return [{k: v for k, v in r.items() if k not in ("time", "positions_per_s")} for r in rows]


def kill_and_resume(tmp_path, cache, trainer, argv, steps=12):
  """Runs ``trainer`` for ``steps`` in this process, and the same run through the CLI
  (``argv(out, *extra)``) killed with SIGKILL after its first checkpoint (step 4), then
  resumed: metrics and the final state (parameters, optimiser, replay, self-play games and
  their trees, key) must be equal, bit for bit. Returns the killed run's directory."""
  straight, killed = tmp_path / "straight", tmp_path / "killed"
  # The uninterrupted run, in this process (same configuration as the CLI's, compiled once).
  trainer.out_dir = straight
  try:
    summary = trainer.run(steps=steps, progress=False)
  finally:
    trainer.out_dir = None
  assert summary["steps"] == steps
  assert summary["positions"] == steps * trainer.config.batch_size
  # The same run, slowed down, killed with SIGKILL after its first checkpoint (step 4).
  proc = subprocess.Popen(argv(killed, "--steps", str(steps)),
                          env=subprocess_env(cache, **{trainer_lib.SLEEP_ENV: "0.5"}),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
  metrics = killed / "metrics.jsonl"
  deadline = time.time() + 240
  try:
    while time.time() < deadline:
      if (killed / "checkpoints" / "4").is_dir() and metrics.exists() and any(
          json.loads(line)["step"] >= 5 for line in metrics.read_text().splitlines()
          if line.strip()):
        break
      assert proc.poll() is None, proc.stderr.read()[-2000:]
      time.sleep(0.05)
    else:
      pytest.fail("the run to kill never reached its first checkpoint")
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
  assert proc.returncode == -signal.SIGKILL
  before = trainer_lib.read_metrics(metrics)
  assert 5 <= before[-1]["step"] < steps  # killed mid-run, after the checkpoint
  resumed = subprocess.run(argv(killed, "--steps", str(steps), "--resume"),
                           env=subprocess_env(cache),
                           capture_output=True, text=True, timeout=300, cwd=REPO)
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert json.loads(resumed.stdout.strip().splitlines()[-1])["steps"] == steps
  a = deterministic(trainer_lib.read_metrics(straight / "metrics.jsonl"))
  b = deterministic(trainer_lib.read_metrics(metrics))
  assert [r["step"] for r in b] == list(range(1, steps + 1))
  assert a == b
  # Final parameters and the whole state, bit for bit.
  final = {}
  for name, out in (("straight", straight), ("killed", killed)):
    ckpt = checkpoint_lib.Checkpointer(out, trainer.config.to_dict(), trainer_lib.MAY_CHANGE)
    final[name], step = ckpt.restore(jax.eval_shape(trainer.init_state))
    ckpt.close()
    assert step == steps
  for x, y in zip(jax.tree.leaves(final["straight"]), jax.tree.leaves(final["killed"])):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  return killed


def read_points(config, steps: int) -> set:
  """The steps after which a run of ``steps`` from step 0 may read the device: its first
  step, every multiple of ``metrics_every`` and of ``checkpoint_every`` and ``eval_every``
  (when positive), and its last step."""
  points = {1, steps}
  for every in (config.metrics_every, config.checkpoint_every, config.eval_every):
    if every > 0:
      points.update(range(every, steps + 1, every))
  return points


def run_counting_reads(trainer, monkeypatch, steps: int, **run_args) -> tuple[dict, int, int]:
  """``trainer.run(steps=steps)`` counting the host's reads of the device: ``(summary, waits,
  copies)``, ``waits`` the ``jax.device_get`` calls, ``copies`` the arrays JAX copied to the
  host (``jax.device_get``, ``int(array)``, ``float``, ``bool``, ``.item()``: each
  ``jax.Array`` materialised on the host for the first time). ``jax.transfer_guard`` does not
  apply to a CPU's arrays, so the copies are counted where JAX makes them (on a CPU,
  ``np.asarray(array)`` takes a view of host memory, no copy, and is not counted)."""
  from jax._src import array as array_lib
  waits, copies = [], []
  fetch, value = jax.device_get, array_lib.ArrayImpl._value

  def counting_fetch(tree):
    waits.append(1)
    return fetch(tree)

  def counting_value(self):
    if self._npy_value is None:
      copies.append(self.shape)
    return value.fget(self)

  monkeypatch.setattr(jax, "device_get", counting_fetch)
  monkeypatch.setattr(array_lib.ArrayImpl, "_value", property(counting_value))
  try:
    summary = trainer.run(steps=steps, progress=False, **run_args)
  finally:
    monkeypatch.undo()
  return summary, len(waits), len(copies)
