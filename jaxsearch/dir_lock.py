"""An exclusive lock on a run's directory (a solve's ``--checkpoint DIR``, a training run's
``--out DIR``), held for the life of the run, so that a second run on the same directory is
refused at once, naming the process that holds it, instead of overwriting the first run's
state or deleting the files it is writing.

The lock is ``fcntl.flock(LOCK_EX | LOCK_NB)`` on a file ``DIR/.jaxsearch.lock``, into which
the holder writes who it is (pid, host, command, start time) so that a refusal can say so.
The kernel releases a ``flock`` when its process ends, however it ends (``SIGKILL``
included): a lock file left by a process that is gone is simply taken over by the next run,
and no stale lock ever needs to be removed by hand. A run that ends removes the file while it
still holds the lock; a process that opened the file just before checks, once it holds a
lock, that it holds the file still at the path, and tries again if not.

Limits, honestly:

* the lock is advisory: it keeps out other jaxsearch runs, not other programs;
* on NFS, Linux emulates ``flock`` with the server's byte-range locks, which work where the
  client and server run a lock manager (NFSv4, or NFSv3 with ``lockd``); where the
  filesystem refuses locks (``ENOLCK``, ``EOPNOTSUPP``), the run goes on *without* a lock and
  warns (:class:`LockUnavailableWarning`);
* on platforms without ``fcntl`` (Windows) no lock is taken, and a warning says so.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Optional

try:
  import fcntl
except ImportError:  # Windows
  fcntl = None

LOCK_NAME = ".jaxsearch.lock"


class DirectoryLocked(RuntimeError):
  """Another live process holds the directory's lock.

  Attributes:
    directory: the directory. holder: what the holder wrote about itself (``pid``, ``host``,
      ``command``, ``since``), ``{}`` where it has not written it yet.
  """

  def __init__(self, message: str, directory: Path, holder: dict):
    super().__init__(message)
    self.directory, self.holder = directory, holder


class LockUnavailableWarning(UserWarning):
  """The directory could not be locked (no ``fcntl``, or a filesystem without locks)."""


def describe_holder(holder: dict) -> str:
  """``"pid 123 on host h since 2026-01-01 10:00:00 UTC (jaxsearch solve ...)"``, as far as
  ``holder`` tells."""
  if not holder.get("pid"):
    return "another process (which has not written its pid yet)"
  text = f"pid {holder['pid']}"
  if holder.get("host") and holder["host"] != socket.gethostname():
    text += f" on host {holder['host']}"
  if holder.get("since"):
    text += " since " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(holder["since"]))
  if holder.get("command"):
    command = str(holder["command"])
    text += f" ({command if len(command) <= 120 else command[:120] + '…'})"
  return text


class DirectoryLock:
  """The lock of one directory, taken by :meth:`acquire`, given back by :meth:`release` (or
  when the process ends). A context manager too::

      with DirectoryLock(directory).acquire():
        ...  # the run

  Args:
    directory: the directory (created if missing).
    what: how the refusal names the directory (e.g. ``"checkpoint DIR"``).
  """

  def __init__(self, directory, what: Optional[str] = None):
    self.directory = Path(directory)
    self.path = self.directory / LOCK_NAME
    self.what = what or f"directory {self.directory}"
    self._fd: Optional[int] = None

  @property
  def held(self) -> bool:
    return self._fd is not None

  def acquire(self) -> "DirectoryLock":
    """Takes the lock without waiting.

    Raises:
      DirectoryLocked: another live process holds it (the message names its pid).
    """
    if self._fd is not None:
      return self
    if fcntl is None:
      warnings.warn(f"{self.what}: this platform has no fcntl, so the directory is not "
                    f"locked: do not run two runs on it at once", LockUnavailableWarning,
                    stacklevel=2)
      return self
    self.directory.mkdir(parents=True, exist_ok=True)
    while True:
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except OSError as error:
        self._refuse(fd, error)  # raises, or warns that the filesystem has no locks
        return self
      # A holder that ended between our open and our flock removed the file we locked: the
      # lock is the file now at the path.
      try:
        if os.path.samestat(os.fstat(fd), os.stat(self.path)):
          break
      except FileNotFoundError:
        pass
      os.close(fd)
    # Ours now (a previous holder that died released it with its process): say who we are.
    command = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]) if sys.argv else ""
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
              "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)
    self._fd = fd
    return self

  def _refuse(self, fd: int, error: OSError) -> None:
    """After ``flock`` failed with ``error`` on ``fd`` (closed here): raises
    :class:`DirectoryLocked` where a live process holds the lock, else warns that the
    filesystem refused it (the run goes on unlocked)."""
    holder = _read_holder(fd)
    os.close(fd)
    if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
      raise DirectoryLocked(
          f"{self.what} is in use by another run: {describe_holder(holder)}; wait for it to "
          f"end (or stop it), or choose another directory", self.directory, holder) from None
    warnings.warn(f"{self.what}: the filesystem refused a lock ({error.strerror}), so the "
                  f"directory is not locked: do not run two runs on it at once",
                  LockUnavailableWarning, stacklevel=3)

  def release(self) -> None:
    """Gives the lock back, removing the lock file; nothing if not held."""
    fd, self._fd = self._fd, None
    if fd is None:
      return
    try:  # removed while held: a process that opened it before fails its check and retries
      os.unlink(self.path)
    except OSError:
      pass
    os.close(fd)  # closing the last descriptor releases the flock

  def __enter__(self) -> "DirectoryLock":
    return self.acquire()

  def __exit__(self, *exc) -> None:
    self.release()

  def __del__(self):
    try:
      self.release()
    except Exception:  # at interpreter shutdown: the process's end releases it anyway
      pass


def check_free(directory, what: Optional[str] = None) -> None:
  """Raises :class:`DirectoryLocked` at once where a live run holds ``directory``'s lock, so a
  command can refuse before it builds anything. Creates nothing: a directory without a lock
  file is free. A check, not a hold: the run takes the lock itself when it opens the
  directory (a run that starts in between is still refused then)."""
  directory = Path(directory)
  if fcntl is None or not (directory / LOCK_NAME).exists():
    return
  DirectoryLock(directory, what).acquire().release()


def _read_holder(fd: int) -> dict:
  """What the holder wrote in the lock file (``{}`` where nothing readable yet)."""
  try:
    data = os.pread(fd, 4096, 0)
    holder = json.loads(data.decode()) if data else {}
  except (OSError, ValueError):
    return {}
  return holder if isinstance(holder, dict) else {}
