"""The exact search's worker processes (``jaxsearch.guessing.workers``, the certificates' and
the whole game's) end with the process that started them: a ``jaxsearch solve`` killed with
``SIGKILL`` mid-certification leaves no worker, nor the resource tracker they share, running
on as an orphan."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TASKS = '''
import os, time

def started(folder):  # each worker's initializer: say who it is
  open(os.path.join(folder, f"worker-{os.getpid()}"), "w").close()

def nap(seconds):  # a certificate that takes long
  time.sleep(seconds)
'''

# The parent: a pool built as ``settle_each`` builds it, both workers busy, then "ready".
PARENT = '''
import os, sys, time
folder = sys.argv[1]
sys.path.insert(0, folder)  # the spawned workers get this path too: they import the tasks
import importlib
import tasks
workers = importlib.import_module("jaxsearch.guessing.workers")
with workers.worker_pool(2, tasks.started, (folder,)) as pool:
  futures = [pool.submit(tasks.nap, 120) for _ in range(2)]
  while len([n for n in os.listdir(folder) if n.startswith("worker-")]) < 2:
    time.sleep(0.05)
  from multiprocessing import resource_tracker
  tracker = resource_tracker._resource_tracker._pid
  with open(os.path.join(folder, "tracker"), "w") as f:
    f.write(str(tracker or ""))
  print("ready", flush=True)
  time.sleep(300)
'''


def _alive(pid: int) -> bool:
  """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
  try:
    stat = Path(f"/proc/{pid}/stat").read_text()
  except FileNotFoundError:
    return False
  except OSError:
    try:
      os.kill(pid, 0)
    except ProcessLookupError:
      return False
    return True
  return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _start(tmp_path, script: str) -> subprocess.Popen:
  (tmp_path / "tasks.py").write_text(textwrap.dedent(TASKS))
  (tmp_path / "parent.py").write_text(textwrap.dedent(script))
  env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, env=env)
  return parent


def _wait_gone(pids, seconds: float) -> list[int]:
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
    time.sleep(0.1)
  return [pid for pid in pids if _alive(pid)]


def test_workers_and_resource_tracker_end_when_the_parent_is_killed(tmp_path):
  parent = _start(tmp_path, PARENT)
  others = []
  try:
    assert parent.stdout.readline().strip() == "ready"
    workers = [int(n.split("-")[1]) for n in os.listdir(tmp_path) if n.startswith("worker-")]
    tracker = (tmp_path / "tracker").read_text()
    others = workers + ([int(tracker)] if tracker else [])
    assert len(workers) == 2 and all(_alive(pid) for pid in others)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)
    left = _wait_gone(others, 5.0)
    assert not left, f"still running 5 s after their parent was killed: {left}"
  finally:
    if parent.poll() is None:
      parent.kill()
      parent.wait()
    for pid in others:  # clean up after a failure: only the processes this test started
      if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_a_worker_polls_for_its_parent_where_the_system_does_not_tell_it(tmp_path):
  """Without ``PR_SET_PDEATHSIG`` (other systems than Linux), the worker's watch thread sees
  its parent gone and ends it."""
  script = '''
  import os, subprocess, sys, time
  child = subprocess.Popen([sys.executable, "-c", (
      "import importlib, os, sys, time; "
      "workers = importlib.import_module('jaxsearch.guessing.workers'); "
      "workers.kill_on_parent_death = lambda: False; "
      "workers.end_with_parent(os.getppid(), print, ('watching',)); "
      "sys.stdout.flush(); time.sleep(120)")], stdout=subprocess.PIPE, text=True)
  assert child.stdout.readline().strip() == "watching"
  with open(os.path.join(sys.argv[1], "worker-%d" % child.pid), "w"):
    pass
  print("ready", flush=True)
  time.sleep(300)
  '''
  parent = _start(tmp_path, script)
  workers = []
  try:
    assert parent.stdout.readline().strip() == "ready"
    workers = [int(n.split("-")[1]) for n in os.listdir(tmp_path) if n.startswith("worker-")]
    assert len(workers) == 1 and _alive(workers[0])
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)
    assert not _wait_gone(workers, 5.0)
  finally:
    if parent.poll() is None:
      parent.kill()
      parent.wait()
    for pid in workers:
      if _alive(pid):
        os.kill(pid, signal.SIGKILL)
