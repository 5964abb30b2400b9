"""tests/conftest.py ends each pytest-xdist worker quickly: garbage is collected before the
worker reports, and what survives is frozen out of teardown's collections, so that execnet's
SIGINT to a worker still busy 5 seconds after the exit request never arrives (it used to land
in JAX's gc callback and print a PytestUnraisableExceptionWarning after every run)."""

import gc
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import conftest


def test_a_worker_settles_its_garbage_before_reporting(monkeypatch):
  monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
  before = gc.get_freeze_count()
  try:
    assert conftest.settle_garbage_before_reporting() is True
    assert gc.get_freeze_count() > before  # teardown's gc.collect will skip these
  finally:
    gc.unfreeze()  # this process goes on testing: let its objects be collected again


def test_the_controller_and_a_plain_run_keep_collecting(monkeypatch):
  monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
  before = gc.get_freeze_count()
  assert conftest.settle_garbage_before_reporting() is False
  assert gc.get_freeze_count() == before


@pytest.mark.slow
def test_an_xdist_run_holding_many_objects_ends_without_a_warning(tmp_path):
  """The whole story: a worker holding 20 million objects at the end (each full collection
  about 2 seconds on 2 CPU cores) ends without the warning. Without the hook this printed
  ``PytestUnraisableExceptionWarning ... _xla_gc_callback ... KeyboardInterrupt``. Needs
  about 2 GB of memory and a minute."""
  pytest.importorskip("xdist")
  shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
  (tmp_path / "test_many.py").write_text(textwrap.dedent("""\
      import jax.numpy as jnp

      KEPT = []

      def test_many_objects():
        KEPT.extend([i] for i in range(20_000_000))
        assert float(jnp.ones(3).sum()) == 3.0

      def test_another():
        assert True
      """))
  env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
  proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider",
                         "-q", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                        text=True, timeout=600)
  out = proc.stdout + proc.stderr
  assert proc.returncode == 0, out
  assert "2 passed" in out
  assert "Unraisable" not in out and "KeyboardInterrupt" not in out, out
