"""The package's boundaries, read from the source (no import): a private name is used only
inside its own package; the packages' ``__init__`` files export no private name; the engine
and the solver import no game (games plug in through ``jaxsearch.game.Game``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxsearch"
# The library proper: what a game plugs into. The application layer (the CLI, training presets
# and oracles, benchmarks) sits above it and may import games.
ENGINE = ("search", "selection", "solve", "compat")


def _modules():
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
      yield path, ".".join(parts[:-1]), ".".join(parts[:-1])
    else:
      yield path, ".".join(parts), ".".join(parts[:-1])


def _package_of(module: str) -> str:
  """The package a module belongs to (a package's own name for its ``__init__``)."""
  as_dir = PACKAGE.parent / module.replace(".", "/")
  return module if as_dir.is_dir() else module.rsplit(".", 1)[0]


def _imports(path: Path):
  """``(module, names)`` of every ``from jaxsearch... import`` in ``path``."""
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxsearch"):
      yield node.module, [alias.name for alias in node.names]
    elif isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith("jaxsearch"):
          yield alias.name, []


def test_no_private_name_crosses_a_package():
  crossing = []
  for path, _, package in _modules():
    for module, names in _imports(path):
      for name in names:
        private = name.startswith("_") and not name.startswith("__")
        if private and _package_of(module) != package:
          crossing.append(f"{path.relative_to(PACKAGE.parent)}: {module}.{name}")
  assert not crossing, "private names imported across packages:\n" + "\n".join(crossing)


@pytest.mark.parametrize("package", ["search", "solve", "selection", "train", "compat"])
def test_package_exports_no_private_name(package):
  init = PACKAGE / package / "__init__.py"
  exported = [name for module, names in _imports(init) for name in names
              if name.startswith("_") and not name.startswith("__")]
  assert not exported, f"jaxsearch.{package} re-exports private names: {exported}"


def test_the_engine_and_the_solver_import_no_game():
  offending = []
  for path, module, _ in _modules():
    if module.split(".")[1:2] and module.split(".")[1] in ENGINE:
      for imported, names in _imports(path):
        if imported.startswith("jaxsearch.games") or (imported == "jaxsearch" and
                                                      "games" in names):
          offending.append(f"{path.relative_to(PACKAGE.parent)}: {imported}")
  assert not offending, "engine modules importing games:\n" + "\n".join(offending)
