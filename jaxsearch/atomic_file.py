"""Files written atomically: a reader, or a run resumed after a kill, sees the old file or the
new one, never a part (policy exports, solver checkpoints)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Optional


def write_atomically(path, write: Callable[[BinaryIO], None], *, prefix: Optional[str] = None,
                     suffix: str = "", mode: Optional[int] = None) -> None:
  """``write(file)`` into a temporary file beside ``path`` (named ``prefix`` + random +
  ``suffix``; default prefix ``.NAME.``), flushed to the disk, given ``mode`` (default:
  ``mkstemp``'s private 0600), then renamed over ``path``; the rename is made durable too.
  The temporary file is removed if ``write`` fails; a kill may leave it behind (a caller that
  resumes can clean up by its prefix)."""
  path = Path(path)
  directory = path.parent if str(path.parent) else Path(".")
  fd, temporary = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=suffix,
                                   dir=directory)
  try:
    with os.fdopen(fd, "wb") as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    if mode is not None:
      os.chmod(temporary, mode)
    os.replace(temporary, path)
  except BaseException:
    Path(temporary).unlink(missing_ok=True)
    raise
  _sync_directory(directory)


def _sync_directory(directory: Path) -> None:
  """Makes a rename in ``directory`` durable, where the platform allows it."""
  try:
    handle = os.open(directory, os.O_RDONLY)
  except OSError:
    return
  try:
    os.fsync(handle)
  except OSError:
    pass
  finally:
    os.close(handle)
