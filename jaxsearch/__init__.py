"""jaxsearch: Monte-Carlo tree search as pure, batched, jit-compiled JAX.

Submodules and the names below load on first use, so that ``jaxsearch --help`` does not pay
for importing JAX.
"""

import importlib

__version__ = "0.1.0"

_SUBMODULES = ("compat", "enums", "estimators", "game", "guessing", "model", "policies", "search",
               "selection", "sharding", "solve", "tree", "validation", "viz")
_NAMES = {"Estimate": "game", "Estimator": "game", "Game": "game", "StepResult": "game",
          "PolicyOutput": "policies", "Search": "policies", "Tree": "tree", "reroot": "tree",
          "solve_game": "solve", "SearchConfig": "search", "RootNoise": "search",
          "AvtsOptions": "search", "EntropyOptions": "search", "LoopOptions": "search", "OutcomeRule": "enums",
          "Backup": "enums", "SubtreeEntropy": "enums", "EntropyPolicy": "enums",
          "Variance": "enums", "RootPolicy": "enums", "VisitConvention": "enums",
          "PriorSource": "enums", "QNormalize": "enums", "ValueSource": "enums",
          "PathUpdate": "enums"}

__all__ = sorted(_NAMES) + list(_SUBMODULES)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxsearch.{name}")
  if name in _NAMES:
    return getattr(importlib.import_module(f"jaxsearch.{_NAMES[name]}"), name)
  raise AttributeError(f"module 'jaxsearch' has no attribute {name!r}")


def __dir__():
  return sorted(list(globals()) + __all__)
