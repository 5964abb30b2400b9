"""Where the installed packages' source lives, for the guard tests that read it (no import).

``pyproject.toml`` installs the top-level ``games/`` folder as ``jaxsearch.games``
(``package-dir``); every other package lives under ``jaxsearch/``. A *mount* maps an import
prefix to the folder that holds it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOUNTS = {"jaxsearch": ROOT / "jaxsearch", "jaxsearch.games": ROOT / "games"}


def modules(mounts: dict[str, Path] | Path = MOUNTS):
  """``(path, module name, is a package's __init__)`` of every module of ``mounts`` (or of
  the one package folder ``mounts``, named after the folder)."""
  if isinstance(mounts, Path):
    mounts = {mounts.name: mounts}
  for prefix, folder in mounts.items():
    for path in sorted(folder.rglob("*.py")):
      parts = (*prefix.split("."), *path.relative_to(folder).with_suffix("").parts)
      is_init = parts[-1] == "__init__"
      yield path, ".".join(parts[:-1] if is_init else parts), is_init


def packages(mounts: dict[str, Path] | Path = MOUNTS) -> set[str]:
  """The package names of ``mounts``: the folders that hold an ``__init__.py``."""
  return {name for _, name, is_init in modules(mounts) if is_init}
