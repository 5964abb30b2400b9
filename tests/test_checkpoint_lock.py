"""A run's directory is locked for the life of the run (:mod:`jaxsearch.dir_lock`): a second
run on a solve checkpoint (``--checkpoint DIR``) or a training output directory (``--out
DIR``) is refused at once, naming the first run's pid; a lock left by a process that is gone
is taken over; and the clean-up of a killed write never touches the files of a live run.

The first run is another process (a tiny script holding the lock, not a whole solve)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxsearch import dir_lock
from jaxsearch.solve import checkpoint as checkpoint_lib

REPO = Path(__file__).resolve().parents[1]

# Takes the lock of argv[1] the way argv[2] says, says so, and holds it until stdin closes.
HOLDER = """
import sys
directory, how = sys.argv[1], sys.argv[2]
if how == "solve":
  from jaxsearch.solve.checkpoint import Checkpoint
  held = Checkpoint(directory, resume=True)
else:
  from jaxsearch.dir_lock import DirectoryLock
  held = DirectoryLock(directory).acquire()
print("held", flush=True)
sys.stdin.read()
"""


def _env() -> dict:
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
  return env


class _Holder:
  """Another process holding ``directory``'s lock (``how``: ``"solve"`` through a solve
  :class:`~jaxsearch.solve.checkpoint.Checkpoint`, else the bare lock)."""

  def __init__(self, directory: Path, how: str = "lock"):
    self.process = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), how],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    env=_env(), text=True)
    line = self.process.stdout.readline()
    assert line.strip() == "held", line

  @property
  def pid(self) -> int:
    return self.process.pid

  def end(self) -> None:
    self.process.stdin.close()
    assert self.process.wait(timeout=60) == 0


@pytest.fixture
def holder(tmp_path):
  held = _Holder(tmp_path / "run")
  yield held
  held.end()


def test_a_second_run_is_refused_naming_the_first_ones_pid(holder, tmp_path):
  with pytest.raises(checkpoint_lib.CheckpointLocked,
                     match=rf"in use by another run: pid {holder.pid} "):
    checkpoint_lib.Checkpoint(tmp_path / "run", resume=True)
  with pytest.raises(dir_lock.DirectoryLocked) as refused:
    dir_lock.DirectoryLock(tmp_path / "run").acquire()
  assert refused.value.holder["pid"] == holder.pid
  assert "-c" in refused.value.holder["command"]  # what the holder runs, for the message


def test_a_training_run_on_a_locked_directory_is_refused(holder, tmp_path):
  from jaxsearch.train import checkpoint as train_checkpoint
  with pytest.raises(train_checkpoint.CheckpointLocked, match=rf"pid {holder.pid}"):
    train_checkpoint.Checkpointer(tmp_path / "run", {"run": 1}, lock=True)
  # A reader (playing the network of a run in progress) does not lock, and is not refused.
  train_checkpoint.Checkpointer(tmp_path / "run", {"run": 1}).close()


def test_the_lock_is_released_at_the_end_of_the_run(tmp_path):
  held = _Holder(tmp_path / "run")
  held.end()
  lock = dir_lock.DirectoryLock(tmp_path / "run").acquire()
  assert json.loads((tmp_path / "run" / dir_lock.LOCK_NAME).read_text())["pid"] == os.getpid()
  lock.release()
  assert not (tmp_path / "run" / dir_lock.LOCK_NAME).exists()  # nothing left behind
  with checkpoint_lib.Checkpoint(tmp_path / "run"):  # taken and given back in turn
    pass
  checkpoint_lib.Checkpoint(tmp_path / "run").close()


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
  """A run killed with SIGKILL cannot clean up: its lock file still names it, but the kernel
  released its flock with the process, so the next run goes on."""
  held = _Holder(tmp_path / "run")
  held.process.kill()
  held.process.wait(timeout=60)
  lock_file = tmp_path / "run" / dir_lock.LOCK_NAME
  assert json.loads(lock_file.read_text())["pid"] == held.pid  # the dead run's name is there
  with checkpoint_lib.Checkpoint(tmp_path / "run", resume=True):
    assert json.loads(lock_file.read_text())["pid"] == os.getpid()


def test_a_refused_run_cleans_up_nothing_of_the_live_ones(tmp_path):
  """The first run is writing its state (a temporary ``.partial-`` file); a second run's
  clean-up of writes cut short by a kill must not delete it."""
  directory = tmp_path / "run"
  held = _Holder(directory, how="solve")
  try:
    writing = directory / ".partial-search.npz.abc123"
    writing.write_bytes(b"the first run's save in progress")
    with pytest.raises(checkpoint_lib.CheckpointLocked, match=rf"pid {held.pid}"):
      checkpoint_lib.Checkpoint(directory, resume=True)
    assert writing.exists()
  finally:
    held.end()
  # Once the first run is gone, what it left half-written is a kill's leftover: removed.
  checkpoint_lib.Checkpoint(directory, resume=True).close()
  assert not writing.exists()


def test_the_command_refuses_a_second_solve_on_the_same_checkpoint(holder, tmp_path, capsys,
                                                                   monkeypatch):
  """``jaxsearch solve --checkpoint DIR`` while another run holds DIR: status 2 and one line
  naming the holder, before the puzzle is even built."""
  from jaxsearch import cli
  from jaxsearch.cli import solve as solve_cli

  def never(args):
    raise AssertionError("the puzzle was built before the refusal")

  monkeypatch.setattr(solve_cli, "_puzzle", never)
  status = cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "2", "--quiet",
                     "--simulations", "1", "--checkpoint", str(tmp_path / "run")])
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 2, err
  assert f"pid {holder.pid}" in err[-1] and "--checkpoint" in err[-1], err


def test_the_command_refuses_a_second_training_run_on_the_same_directory(holder, tmp_path,
                                                                         capsys):
  from jaxsearch import cli
  status = cli.main(["train", "tictactoe", "--out", str(tmp_path / "run"), "--steps", "1",
                     "--quiet"])
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 2, err
  assert f"pid {holder.pid}" in err[-1], err
  assert not (tmp_path / "run" / "config.json").exists()  # nothing of the live run touched


def test_without_locks_the_run_goes_on_and_warns(tmp_path, monkeypatch):
  """No ``fcntl`` (Windows), or a filesystem that refuses locks (NFS without a lock manager):
  documented as a warning, the run unlocked, rather than refused."""
  import errno

  class NoLocks:
    LOCK_EX = LOCK_NB = 0

    @staticmethod
    def flock(fd, operation):
      raise OSError(errno.ENOLCK, "No locks available")

  monkeypatch.setattr(dir_lock, "fcntl", NoLocks)
  with pytest.warns(dir_lock.LockUnavailableWarning, match="No locks available"):
    lock = dir_lock.DirectoryLock(tmp_path).acquire()
  assert not lock.held
  monkeypatch.setattr(dir_lock, "fcntl", None)
  with pytest.warns(dir_lock.LockUnavailableWarning, match="no fcntl"):
    checkpoint_lib.Checkpoint(tmp_path / "run").close()
