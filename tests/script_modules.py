"""The repository's ``scripts/`` imported as modules, so their tests call ``main`` and their
functions directly."""

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str):
  """``scripts/NAME.py`` as the module ``NAME`` (registered in ``sys.modules``, as dataclasses
  and pickling need)."""
  spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module
