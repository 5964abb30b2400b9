"""The README's Python example runs as written and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
  return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_its_example_and_its_output():
  python, text = _blocks("python"), _blocks("text")
  assert len(python) >= 2 and "print(" in python[0], "the example prints what it shows"
  assert text and "columns chosen:" in text[0]


@pytest.mark.slow
def test_the_readme_example_prints_what_the_readme_shows():
  """Both Python blocks, in order, in one namespace (the second continues the first); the
  first one's output equals the README's ``text`` block line for line (a CPU run)."""
  first, second = _blocks("python")[:2]
  namespace: dict = {}
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    exec(compile(first, "README.md (example)", "exec"), namespace)  # noqa: S102
  assert printed.getvalue().strip() == _blocks("text")[0].strip()
  exec(compile(second, "README.md (config)", "exec"), namespace)  # noqa: S102
  assert namespace["config"].backup.kind.value == "bellman"
  assert callable(namespace["search"])
