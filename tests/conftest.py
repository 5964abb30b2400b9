"""Shared fixtures: data paths and jitted searches reused across tests (compiles are costly)."""

import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Tests run on the CPU; keep XLA from grabbing both cores' worth of threads per process.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# The tests' shapes are small, so their time goes to compiling, not running: LLVM's cheapest
# optimisation level compiles faster (the golden trees are the same bit for bit: it changes no
# floating-point semantics). Put --xla_backend_optimization_level=N in XLA_FLAGS for another.
if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
  os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=0"
# Eight simulated CPU devices for the sharding tests (tests/test_sharding.py); unsharded code
# still runs on device 0. Must be set before JAX starts.
if "xla_force_host_platform_device_count" not in os.environ["XLA_FLAGS"]:
  os.environ["XLA_FLAGS"] += " --xla_force_host_platform_device_count=8"


def _xla_accepts(flag: str) -> bool:
  """Whether this jaxlib's XLA knows ``flag`` (an unknown one in XLA_FLAGS aborts JAX)."""
  probe = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
  env = {**os.environ, "XLA_FLAGS": f"{os.environ['XLA_FLAGS']} {flag}"}
  try:
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          timeout=120).returncode == 0
  except (OSError, subprocess.TimeoutExpired):
    return False


# XLA's older CPU code generator compiles the tests' programs in about half the time (a small
# Gumbel search: 1.5 s against 2.7 s). Its code rounds a few floats differently, so the golden
# trees (tests/test_golden_trees.py) compile theirs with the default generator, the one users
# get, and pin its bits, as does every test that compares two programs bit for bit
# (``bit_exact.jit``, tests/bit_exact.py). Decided once, in pytest's first process: its
# workers and the command-line runs the tests start inherit XLA_FLAGS. Set --xla_cpu_use_fusion_emitters=true
# in XLA_FLAGS to run the whole suite on the default generator.
if "xla_cpu_use_fusion_emitters" not in os.environ["XLA_FLAGS"]:
  if _xla_accepts("--xla_cpu_use_fusion_emitters=false"):
    os.environ["XLA_FLAGS"] += " --xla_cpu_use_fusion_emitters=false"

import jax  # noqa: E402  (after XLA_FLAGS)

# Many tests build equal searches (the same program, new function objects): XLA's persistent
# cache compiles each distinct program once per session (measured: an 8.7 s Connect Four
# compile becomes 1.1 s on its repeats). A fresh folder per session unless
# JAXSEARCH_TEST_CACHE names one to keep between sessions.
# The folder is put in the environment, so that pytest-xdist's workers (started after this
# runs in the controller) share one cache instead of compiling every program once each.
if not os.environ.get("JAXSEARCH_TEST_CACHE"):
  os.environ["JAXSEARCH_TEST_CACHE"] = tempfile.mkdtemp(prefix="jaxsearch-xla-")
_CACHE_DIR = os.environ["JAXSEARCH_TEST_CACHE"]
jax.config.update("jax_compilation_cache_dir", _CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

# Under CI (``CI=true``, as GitHub Actions and most CI services set it) nothing may be skipped:
# a test skipped because an optional piece such as ``mctx`` is missing would hide that the claim it checks went untested. The hooks below turn every skip
# (``pytest.skip``, ``importorskip``, ``skipif``; tests and whole modules) into a failure
# there; locally a missing optional piece still skips. Deselected tests (``-m slow``) are not
# skips and are unaffected.
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _fail_skip_under_ci(report):
  if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, where nothing may be skipped: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
  outcome = yield
  _fail_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
  outcome = yield
  _fail_skip_under_ci(outcome.get_result())


# pytest-xdist ends a run by asking each worker to exit; execnet gives a worker 5 seconds to
# return, then sends it SIGINT. The last worker to finish gets that request as soon as it
# reports its results, and still has pytest's teardown ahead, which collects garbage at
# least twice (pytest's unraisable-exception check calls gc.collect). A full collection
# walks every live object, and a worker that ran a share of the suite holds millions
# (compiled programs, trees, cached data): on 2 CPU cores those collections took more than the
# 5 seconds, the SIGINT arrived inside one, and the KeyboardInterrupt it raised in JAX's
# ``_xla_gc_callback`` (a gc callback, where an exception cannot propagate) was printed as a
# PytestUnraisableExceptionWarning after every run. So each worker collects once before it
# reports (the controller waits for that report anyway), then freezes what survived
# (``gc.freeze``: later collections skip it), and its teardown is quick. Those objects are
# freed with the process.
def settle_garbage_before_reporting() -> bool:
  """In a pytest-xdist worker: collects garbage, then freezes the survivors out of later
  collections; returns whether it did (not in the controller or a plain run)."""
  if not os.environ.get("PYTEST_XDIST_WORKER"):
    return False
  gc.collect()
  gc.freeze()
  return True


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown, before xdist reports
def pytest_sessionfinish(session):
  settle_garbage_before_reporting()


@pytest.fixture(scope="session")
def connect4_data() -> Path:
  """The Connect Four test positions the package ships (``jaxsearch/data/connect4``)."""
  from jaxsearch.app.connect4_sets import DEFAULT_CONNECT4_DIR
  return Path(DEFAULT_CONNECT4_DIR)
