"""The README's Python example runs as written and prints what the README says it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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
def test_the_readme_example_prints_what_the_readme_shows(tmp_path):
  """Both Python blocks, in order, as one program run the way a user runs it (a fresh process,
  without the test suite's XLA flags, which change the last digit of a float); the output is
  the README's ``text`` block line for line, and the second block builds its config."""
  first, second = _blocks("python")[:2]
  program = tmp_path / "example.py"
  program.write_text(first + "\n" + second + "\nprint('backup:', config.backup.kind.value)\n")
  env = {name: value for name, value in os.environ.items() if name != "XLA_FLAGS"}
  done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                        env=env, timeout=600)
  assert done.returncode == 0, done.stderr[-2000:]
  expected = _blocks("text")[0].strip() + "\nbackup: bellman"
  assert done.stdout.strip() == expected
