"""The package's boundaries, read from the source (no import): a private name is used only
inside its own package; the packages' ``__init__`` files export no private name; the engine
and the solver import no game (games plug in through ``jaxsearch.game.Game``).

The layers (docs/architecture.md): the library proper (``jaxsearch`` but for ``games``, ``app``
and ``cli``) imports no game and nothing of the application layer, anywhere in a file; the
games import the library only; the application layer (``app``, ``cli``) may import both."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import source_tree

PACKAGE = source_tree.ROOT / "jaxsearch"
# The engine and the solver: what a game plugs into.
ENGINE = ("search", "selection", "solve", "compat")
# The packages outside the library proper: the games, and the application layer (the CLI, the
# registry of games, training presets and oracles, the benchmark) that sits above both.
GAMES = "jaxsearch.games"
APPLICATION = ("jaxsearch.app", "jaxsearch.cli")


def _modules():
  """``(path, module, its package)`` of every module of the installed packages."""
  for path, module, is_init in source_tree.modules():
    yield path, module, module if is_init else module.rsplit(".", 1)[0]


def _package_of(module: str) -> str:
  """The package a module belongs to (a package's own name for its ``__init__``)."""
  return module if module in source_tree.packages() else module.rsplit(".", 1)[0]


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
          crossing.append(f"{path.relative_to(source_tree.ROOT)}: {module}.{name}")
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
          offending.append(f"{path.relative_to(source_tree.ROOT)}: {imported}")
  assert not offending, "engine modules importing games:\n" + "\n".join(offending)


def _under(module: str, packages) -> bool:
  """``module`` is one of ``packages`` or inside one."""
  return any(module == package or module.startswith(package + ".") for package in packages)


def _full_imports(path: Path, module: str):
  """Every module ``path`` (the module ``module``) imports, anywhere in the file (inside
  functions too), as full names: ``from jaxsearch import games`` counts as
  ``jaxsearch.games``, a relative import is resolved, and ``importlib.import_module`` (or
  ``__import__``) of a literal or f-string counts as the literal's start."""
  package = module if path.name == "__init__.py" else module.rpartition(".")[0]
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
      yield base
      yield from (f"{base}.{alias.name}" for alias in node.names)
    elif isinstance(node, ast.Call) and node.args and (
        getattr(node.func, "attr", None) == "import_module" or
        getattr(node.func, "id", None) in ("import_module", "__import__")):
      name = node.args[0]
      if isinstance(name, ast.JoinedStr) and name.values:
        name = name.values[0]  # f"jaxsearch.games.{name}": its literal start
      if isinstance(name, ast.Constant) and isinstance(name.value, str):
        yield name.value


def _layer_violations(of_module, forbidden) -> list[str]:
  """``path: imported`` for every import of a module of ``forbidden`` by a module for which
  ``of_module(name)`` holds."""
  found = []
  for path, module, _ in _modules():
    if of_module(module):
      for imported in _full_imports(path, module):
        if _under(imported.rstrip("."), forbidden):
          found.append(f"{path.relative_to(source_tree.ROOT)}: {imported}")
  return found


def test_the_library_proper_imports_no_game_and_no_application():
  """No module of the library proper imports a game, the app or the CLI: not at import time,
  not lazily inside a function, not by ``importlib`` from a name."""
  offending = _layer_violations(lambda module: not _under(module, (GAMES,) + APPLICATION),
                                (GAMES,) + APPLICATION)
  assert not offending, ("the library proper imports a game or the application layer:\n"
                         + "\n".join(offending))


def test_the_games_import_nothing_of_the_application():
  offending = _layer_violations(lambda module: _under(module, (GAMES,)), APPLICATION)
  assert not offending, "games importing the application layer:\n" + "\n".join(offending)


@pytest.mark.parametrize("source, module, expected", [
    ("from jaxsearch import games\n", "jaxsearch.train.trainer", "jaxsearch.games"),
    ("def f():\n  from jaxsearch.games import pgx_env\n", "jaxsearch.train.config",
     "jaxsearch.games.pgx_env"),
    ("from ..games import tictactoe\n", "jaxsearch.train.agents", "jaxsearch.games.tictactoe"),
    ("from . import registry\n", "jaxsearch.app", "jaxsearch.app.registry"),
    ("import importlib\nimportlib.import_module(f'jaxsearch.games.{name}')\n",
     "jaxsearch.train.config", "jaxsearch.games."),
    ("import jaxsearch.cli.common\n", "jaxsearch.bench", "jaxsearch.cli.common"),
])
def test_the_layer_check_sees_every_kind_of_import(tmp_path, source, module, expected):
  """What the layer tests read: each way the library once imported a game (or could)."""
  path = tmp_path / ("__init__.py" if module == "jaxsearch.app" else "m.py")
  path.write_text(source)
  imported = list(_full_imports(path, module))
  assert expected in imported, imported
  assert _under(expected.rstrip("."), (GAMES,) + APPLICATION)


def test_pyproject_installs_every_package_from_its_folder():
  """``pyproject.toml`` lists its packages by hand (the games install from ``games/``): the
  list is every folder with an ``__init__.py``, and each maps to the folder it lives in."""
  import tomllib
  setuptools = tomllib.loads((source_tree.ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
  assert sorted(setuptools["packages"]) == sorted(source_tree.packages())
  assert {prefix: source_tree.ROOT / folder
          for prefix, folder in setuptools["package-dir"].items()} == {
              prefix: folder for prefix, folder in source_tree.MOUNTS.items()
              if prefix != "jaxsearch"}


def test_the_generic_solver_imports_nothing_of_the_guessing_games():
  """``jaxsearch.solve`` solves any game; the guessing-game application sits on it. The one
  exception: the package's lazy aliases of the names that moved to ``jaxsearch.guessing``."""
  offending = _layer_violations(lambda module: _under(module, ("jaxsearch.solve",)),
                                ("jaxsearch.guessing",))
  alias = f"{Path('jaxsearch', 'solve', '__init__.py')}: jaxsearch.guessing"
  assert offending == [alias], offending


def test_the_moved_guessing_names_still_resolve_from_the_solver():
  import jaxsearch.guessing
  import jaxsearch.solve
  assert jaxsearch.solve.solve_puzzle is jaxsearch.guessing.solve_puzzle
  assert jaxsearch.solve.RootOptions is jaxsearch.guessing.RootOptions
  with pytest.raises(AttributeError, match="no attribute 'nothing'"):
    jaxsearch.solve.nothing
