"""The code's shape, read from the source (no import): no private ``_name`` is imported from
another module, no package's modules import each other in a cycle, and no function of the
engine (``jaxsearch/search/``) has a body (its docstring included) longer than 60 lines.

Each check runs over the whole package; the violations left elsewhere are listed in the
allow-lists below, so that they can only shrink: a new one fails, and so does an entry that no
longer occurs (remove it). ``jaxsearch/search/`` has none. An import under
``if TYPE_CHECKING:`` is not an import at run time (a module's annotations may name a type
from a module above it) and is not counted as an edge of the import graph."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import source_tree

PACKAGE = source_tree.MOUNTS
MAX_FUNCTION_LINES = 60
# The packages whose every function is held to MAX_FUNCTION_LINES, with no allow-list.
STRICT = ("jaxsearch.search",)

# Private names still imported from another module (importer: module._name).
PRIVATE_IMPORTS_ALLOWED: set[str] = set()
# Import cycles among the modules of one package (the sorted modules of each cycle).
CYCLES_ALLOWED: set[tuple[str, ...]] = set()
# Functions longer than MAX_FUNCTION_LINES outside STRICT ("module.function: lines" when
# listed; only the name is compared).
LONG_FUNCTIONS_ALLOWED = {
    "jaxsearch.guessing.estimator.entropic_estimator: 72",
    "jaxsearch.solve.exact.solve_game: 67",
    "jaxsearch.solve.chunked.run: 63",
    "jaxsearch.guessing.puzzle.solve_puzzle: 79",
}


def _modules(root):
  """``(path, module name, is a package's __init__)`` of every module under ``root`` (a
  package folder, or a mapping of import prefixes to folders: :data:`source_tree.MOUNTS`)."""
  return source_tree.modules(root)


def _is_type_checking(node: ast.AST) -> bool:
  test = getattr(node, "test", None)
  return isinstance(node, ast.If) and (
      (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or
      (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runtime_nodes(tree: ast.AST):
  """Every node of ``tree`` but those under ``if TYPE_CHECKING:``."""
  stack = [tree]
  while stack:
    node = stack.pop()
    yield node
    for child in ast.iter_child_nodes(node):
      if _is_type_checking(child):
        stack.extend(child.orelse)
      else:
        stack.append(child)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
  """The module an ``import from`` names, relative imports resolved."""
  if not node.level:
    return node.module or ""
  base = module.split(".") if is_package else module.split(".")[:-1]
  base = base[:len(base) - (node.level - 1)]
  return ".".join(base + ([node.module] if node.module else []))


def private_imports(root: Path, prefix: str = "jaxsearch") -> set[str]:
  """``"importer: module._name"`` for every private name of another module of ``root``
  imported by name (``from m import _x``) or read from an imported module (``m._x``)."""
  modules = {name for _, name, _ in _modules(root)}
  found = set()
  for path, module, is_package in _modules(root):
    tree = ast.parse(path.read_text())
    aliases = {}  # local name -> module of root it is bound to
    for node in ast.walk(tree):
      if isinstance(node, ast.ImportFrom):
        for alias, source, submodule in _from_imports(node, module, is_package, modules,
                                                      prefix):
          if submodule is not None:
            aliases[alias.asname or alias.name] = submodule
          elif alias.name.startswith("_") and not alias.name.startswith("__"):
            if source != module:
              found.add(f"{module}: {source}.{alias.name}")
      elif isinstance(node, ast.Import):
        for alias in node.names:
          if alias.name.startswith(prefix) and alias.asname:
            aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
      if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and
          node.value.id in aliases and node.attr.startswith("_") and
          not node.attr.startswith("__") and aliases[node.value.id] != module):
        found.add(f"{module}: {aliases[node.value.id]}.{node.attr}")
  return found


def _from_imports(node: ast.ImportFrom, module: str, is_package: bool, modules: set[str],
                  prefix: str):
  """``(alias, source, submodule)`` for each name of a ``from source import ...`` of the
  package (``submodule``: the module the name is, where it is one, else ``None``)."""
  source = _absolute(node, module, is_package)
  if not source.startswith(prefix):
    return
  for alias in node.names:
    submodule = f"{source}.{alias.name}"
    yield alias, source, submodule if submodule in modules else None


def import_graph(root: Path, prefix: str = "jaxsearch") -> dict[str, set[str]]:
  """Module -> the modules of ``root`` it imports at run time (anywhere in the file, a
  function's body included; ``from package import submodule`` is an edge to the submodule)."""
  modules = {name for _, name, _ in _modules(root)}
  graph = {}
  for path, module, is_package in _modules(root):
    edges = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
      if isinstance(node, ast.ImportFrom):
        edges.update(submodule or source for _, source, submodule in
                     _from_imports(node, module, is_package, modules, prefix))
      elif isinstance(node, ast.Import):
        edges.update(alias.name for alias in node.names if alias.name in modules)
    graph[module] = {edge for edge in edges if edge in modules and edge != module}
  return graph


def _package(module: str, packages: set[str]) -> str:
  return module if module in packages else module.rsplit(".", 1)[0]


def package_cycles(root: Path, prefix: str = "jaxsearch") -> set[tuple[str, ...]]:
  """The import cycles among the modules of each package of ``root`` (a package's
  ``__init__`` counts as one of its modules): the sorted modules of each strongly connected
  component of more than one module."""
  graph = import_graph(root, prefix)
  packages = {name for _, name, is_package in _modules(root) if is_package}
  inside = {module: {edge for edge in edges
                     if _package(edge, packages) == _package(module, packages)}
            for module, edges in graph.items()}
  return {component for component in _components(inside) if len(component) > 1}


def _components(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
  """Strongly connected components (Tarjan's algorithm, iterative), each sorted."""
  index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
  for start in sorted(graph):
    if start in index:
      continue
    work = [(start, iter(sorted(graph[start])))]
    index[start] = low[start] = counter[0]
    counter[0] += 1
    stack.append(start)
    on_stack.add(start)
    while work:
      node, edges = work[-1]
      for edge in edges:
        if edge not in index:
          index[edge] = low[edge] = counter[0]
          counter[0] += 1
          stack.append(edge)
          on_stack.add(edge)
          work.append((edge, iter(sorted(graph[edge]))))
          break
        if edge in on_stack:
          low[node] = min(low[node], index[edge])
      else:
        work.pop()
        if work:
          low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
          component = []
          while True:
            member = stack.pop()
            on_stack.discard(member)
            component.append(member)
            if member == node:
              break
          found.append(tuple(sorted(component)))
  return found


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
  """``"module.function": lines`` of every function (methods and nested functions
  included) whose body, its docstring included, spans more than ``limit`` lines."""
  found = {}
  for path, module, _ in _modules(root):
    for node in ast.walk(ast.parse(path.read_text())):
      if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        continue
      lines = node.body[-1].end_lineno - node.body[0].lineno + 1
      if lines > limit:
        found[f"{module}.{node.name}"] = lines
  return found


def _strict(module: str) -> bool:
  return any(module == package or module.startswith(package + ".") for package in STRICT)


# ---- the package ----------------------------------------------------------------------------

def test_no_private_name_is_imported_from_another_module():
  found = private_imports(PACKAGE)
  strict = sorted(entry for entry in found if _strict(entry.split(":")[0]))
  assert not strict, "private names imported across modules of the engine:\n" + "\n".join(strict)
  new = sorted(found - PRIVATE_IMPORTS_ALLOWED)
  assert not new, ("private names imported from another module (make them public in their "
                   "module):\n" + "\n".join(new))
  gone = sorted(PRIVATE_IMPORTS_ALLOWED - found)
  assert not gone, "allow-listed imports that no longer occur (remove them):\n" + "\n".join(gone)


def test_no_package_imports_itself_in_a_cycle():
  cycles = package_cycles(PACKAGE)
  strict = sorted(c for c in cycles if any(_strict(module) for module in c))
  assert not strict, f"import cycles inside the engine: {strict}"
  assert cycles == CYCLES_ALLOWED, (f"new cycles: {sorted(cycles - CYCLES_ALLOWED)}; "
                                    f"allow-listed ones gone: {sorted(CYCLES_ALLOWED - cycles)}")


def test_no_function_of_the_engine_is_longer_than_60_lines():
  found = long_functions(PACKAGE)
  strict = sorted(f"{name}: {lines}" for name, lines in found.items() if _strict(name))
  assert not strict, "functions of jaxsearch/search/ over 60 lines:\n" + "\n".join(strict)
  rest = {f"{name}: {lines}" for name, lines in found.items() if not _strict(name)}
  new = sorted(entry for entry in rest
               if entry.split(":")[0] not in {e.split(":")[0] for e in LONG_FUNCTIONS_ALLOWED})
  assert not new, "functions over 60 lines (split them):\n" + "\n".join(new)
  gone = sorted(entry for entry in LONG_FUNCTIONS_ALLOWED
                if entry.split(":")[0] not in {e.split(":")[0] for e in rest})
  assert not gone, ("allow-listed functions no longer over 60 lines (remove them):\n" +
                    "\n".join(gone))


# ---- the checks themselves, on a package made for them ----------------------------------------

def _write(root: Path, files: dict[str, str]) -> Path:
  for name, source in files.items():
    path = root / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
  return root / "pkg"


def test_the_checks_see_private_imports_cycles_and_long_functions(tmp_path):
  long_body = "\n".join(f"  x{i} = {i}" for i in range(61))
  root = _write(tmp_path, {
      "__init__.py": "",
      "a.py": "from pkg.b import _helper, public\nfrom pkg import b as b_lib\n"
              "def f():\n  return b_lib._other()\n",
      "b.py": "import pkg.a\n_helper = public = 1\ndef _other():\n  return _helper\n",
      "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n  from pkg.d import X\n"
              f"def long():\n{long_body}\n"
              "def documented():\n  '''A docstring counts.'''\n"
              + "\n".join(f"  z{i} = {i}" for i in range(60)) + "\n",
      "d.py": "from pkg import c\ndef short():\n"
              + "\n".join(f"  y{i} = {i}" for i in range(60)) + "\n",
      "sub/__init__.py": "from pkg.sub.e import g\n",
      "sub/e.py": "def g():\n  from pkg.sub import h\n",
      "sub/h.py": "from . import e\n",
  })
  assert private_imports(root, "pkg") == {"pkg.a: pkg.b._helper", "pkg.a: pkg.b._other"}
  # a <-> b; c -> d only under TYPE_CHECKING (no cycle); in pkg.sub, e <-> h (relative too).
  assert package_cycles(root, "pkg") == {("pkg.a", "pkg.b"), ("pkg.sub.e", "pkg.sub.h")}
  assert long_functions(root) == {"pkg.c.long": 61, "pkg.c.documented": 61}


@pytest.mark.parametrize("source,expected", [
    ("from jaxsearch.search.nodes import node_update\n", set()),
    ("from jaxsearch.search.nodes import _sanitise\n",
     {"jaxsearch.search.x: jaxsearch.search.nodes._sanitise"}),
    ("from jaxsearch.search import nodes\nnodes._sanitise(1)\n",
     {"jaxsearch.search.x: jaxsearch.search.nodes._sanitise"}),
])
def test_the_private_check_reads_the_engine_as_it_imports(tmp_path, source, expected):
  root = _write(tmp_path, {"__init__.py": ""}).parent / "jaxsearch"
  (root / "search").mkdir(parents=True)
  for name in ("__init__.py", "nodes.py"):
    (root / "search" / name).write_text("")
  (root / "__init__.py").write_text("")
  (root / "search" / "x.py").write_text(source)
  assert private_imports(root) == expected
