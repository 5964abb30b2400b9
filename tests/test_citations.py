"""Guards on what the code cites and how the scripts import.

A reader of the installed package has its docstrings, the README and ``docs/``; the code must
not send them to files that never ship (the engineers' own notes) or to numbered source
documents they cannot see. And a script runs against the installed package, like a user's
program: none edits ``sys.path`` to reach the checkout.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Names of documents that exist only beside the engineers' checkout, never in a release.
# A name may wrap onto the next line of a docstring or a comment ("seed\n    # 000").
_UNSHIPPED = re.compile(r"ALGORITHMS\.md|DESIGN\.md|\bseeds?/|\bseed(?:[\s#]+)0\d\d\b|\.\./shared/")


def _texts():
  folders = [ROOT / "jaxsearch", ROOT / "games", ROOT / "scripts", ROOT / "tests", ROOT / "docs"]
  for folder in folders:
    for path in sorted(folder.rglob("*")):
      if path.suffix in (".py", ".md") and path != Path(__file__).resolve():
        yield path
  yield ROOT / "README.md"


def _unshipped_citations(text: str) -> list[tuple[int, str]]:
  """``(line number, line)`` where each citation starts (the whole text is searched, so a
  citation wrapped over two lines is found too)."""
  lines = text.splitlines()
  found = []
  for match in _UNSHIPPED.finditer(text):
    number = text.count("\n", 0, match.start()) + 1
    found.append((number, lines[number - 1].strip()))
  return found


def test_the_checker_finds_a_citation_of_an_unshipped_file():
  assert _unshipped_citations('"""PUCT (ALGORITHMS.md §1)."""\nx = 1\n') == [
      (1, '"""PUCT (ALGORITHMS.md §1)."""')]
  assert _unshipped_citations("# from seed 000, the article\n")
  assert _unshipped_citations("see ../shared/data/wordle\n")
  assert _unshipped_citations('x = 1\n"""the slots: seed\n      000\'s PUCT."""\n') == [
      (2, '"""the slots: seed')]
  assert _unshipped_citations("# as in seed\n# 004, the issue\n")
  assert not _unshipped_citations('"""PUCT (docs/algorithms.md §1)."""\n')
  assert not _unshipped_citations("seed = 7  # the seed 7 run\n")


def test_no_file_cites_a_document_that_does_not_ship():
  found = []
  for path in _texts():
    for number, line in _unshipped_citations(path.read_text(encoding="utf-8")):
      found.append(f"{path.relative_to(ROOT)}:{number}: {line[:90]}")
  assert not found, ("cite a paper or a docs/ page instead (docs/algorithms.md holds the "
                     "formulas):\n" + "\n".join(found))


def _edits_sys_path(source: str) -> list[int]:
  """Lines of ``source`` that change ``sys.path`` (``insert``, ``append``, assignment)."""
  lines = []
  for node in ast.walk(ast.parse(source)):
    target = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
      target = node.func.value
    elif isinstance(node, (ast.Assign, ast.AugAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      target = next((t for t in targets if isinstance(t, ast.Attribute)), None)
    if (isinstance(target, ast.Attribute) and target.attr == "path"
        and isinstance(target.value, ast.Name) and target.value.id == "sys"):
      lines.append(node.lineno)
  return lines


def test_the_checker_finds_a_sys_path_edit():
  assert _edits_sys_path("import sys\nsys.path.insert(0, '..')\n") == [2]
  assert _edits_sys_path("import sys\nsys.path += ['..']\n") == [2]
  assert _edits_sys_path("import sys\nsys.path = ['..']\n") == [2]
  assert _edits_sys_path("import sys\nprint(sys.path)\n") == []


@pytest.mark.parametrize("path", sorted((ROOT / "scripts").rglob("*.py")),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_no_script_edits_sys_path(path):
  lines = _edits_sys_path(path.read_text(encoding="utf-8"))
  assert not lines, (f"{path.relative_to(ROOT)} edits sys.path on lines {lines}: install the "
                     "package (pip install -e .) and import it as a user would")
