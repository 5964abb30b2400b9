"""Worker processes for the exact search (the certificates' and the whole game's): a spawn
pool whose processes end with the process that started them, even when it is killed with
``SIGKILL``, and that neither re-run the caller's ``__main__`` nor touch an accelerator."""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import types


@contextlib.contextmanager
def worker_pool(workers: int, initializer, initargs: tuple = ()):
  """A pool of ``workers`` spawned processes (JAX's threads do not survive a fork), each
  started by ``initializer(*initargs)``, that end with this process: killed with it, even by
  ``SIGKILL``, they do not run on as orphans (nor, once they are gone, does the resource
  tracker they share). Shut down (its work done) on leaving the block.

  Linux's ``PR_SET_PDEATHSIG`` fires when the *thread* that started a worker ends: a spawn
  pool starts its workers in the thread that submits work, which stays in this block until
  they are shut down."""
  context = multiprocessing.get_context("spawn")
  with workers_skip_main(), concurrent.futures.ProcessPoolExecutor(
      workers, mp_context=context, initializer=end_with_parent,
      initargs=(os.getpid(), initializer, tuple(initargs))) as pool:
    yield pool


# How often a worker checks that its parent is alive, where the system does not tell it.
PARENT_POLL_SECONDS = 0.5


def end_with_parent(parent: int, initializer, initargs: tuple) -> None:
  """A worker's start (:func:`worker_pool`): makes it end when its parent process ``parent``
  does, then runs ``initializer(*initargs)``. On Linux the kernel sends it ``SIGKILL`` when
  its parent dies (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread also polls the
  parent (it is gone once the worker's parent process id changes) and ends the worker with
  ``os._exit``."""
  kill_on_parent_death()
  if os.getppid() != parent:  # the parent died before the request above took effect
    os._exit(1)

  def watch():
    while True:
      time.sleep(PARENT_POLL_SECONDS)
      if os.getppid() != parent:
        os._exit(1)

  threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
  initializer(*initargs)


def kill_on_parent_death() -> bool:
  """Asks Linux to send this process ``SIGKILL`` when its parent dies; whether it did."""
  if not sys.platform.startswith("linux"):
    return False
  try:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) == 0
  except (OSError, AttributeError):
    return False


@contextlib.contextmanager
def workers_skip_main():
  """Hides the caller's ``__main__`` while worker processes run, and keeps them off the
  accelerator. A spawned process re-imports the parent's main module, and a user's script
  without an ``if __name__ == "__main__"`` guard would then run again in every worker (and
  fail); the workers need only this module. Their exact search is numpy on the host: were
  one to touch JAX's GPU backend, each would reserve most of the GPU's memory."""
  main = sys.modules.get("__main__")
  sys.modules["__main__"] = types.ModuleType("__main__")
  saved = {name: os.environ.get(name) for name in WORKER_ENVIRONMENT}
  os.environ.update(WORKER_ENVIRONMENT)
  try:
    yield
  finally:
    sys.modules["__main__"] = main
    for name, value in saved.items():
      if value is None:
        os.environ.pop(name, None)
      else:
        os.environ[name] = value


# What a spawned worker inherits: JAX on the host only, and no memory reserved up front.
WORKER_ENVIRONMENT = {"JAX_PLATFORMS": "cpu", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
