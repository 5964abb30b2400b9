"""What differs between two checkpoint fingerprints (:mod:`jaxsearch.solve.checkpoint`),
said in words: the facts with their values here and there, the digests by what they digest
(``the secrets differ``), never as hashes."""

from __future__ import annotations

import json
from typing import Optional


def differences(saved: dict, current: dict, shown: int = 4) -> Optional[str]:
  """``"seed is 1 here, 0 there; the secrets differ (problem.secrets, compared by digest)"``:
  up to ``shown`` differences between two (nested) fingerprints, the problem's identity
  first, readable facts before digests; ``None`` where they are equal."""
  saved, current = _flat(saved), _flat(current)
  differs = sorted((key for key in set(saved) | set(current)
                    if saved.get(key, _ABSENT) != current.get(key, _ABSENT)),
                   key=lambda key: (not key.startswith("problem."),
                                    _is_digest(saved.get(key)) or _is_digest(current.get(key)),
                                    list(_DIGESTS).index(key) if key in _DIGESTS else 0, key))
  if not differs:
    return None
  return "; ".join(_difference(key, current.get(key, _ABSENT), saved.get(key, _ABSENT))
                   for key in differs[:shown]) + ("; …" if len(differs) > shown else "")


_ABSENT = object()  # a key one fingerprint lacks (written by another version)

# What a digest of the fingerprint digests, said in words.
_DIGESTS = {
    "problem.game.transitions": ("the game differs: its rules give other transitions, "
                                 "rewards or bounds from the roots"),
    "problem.secrets": "the secrets differ",
    "problem.guesses": "the allowed guesses differ",
    "problem.game.estimator": "the estimator differs: it gives other estimates at the roots",
    "roots": "the roots differ",
    "weights": "the roots' weights differ",
}


def _difference(key: str, here, there) -> str:
  if _is_digest(here) or _is_digest(there):
    return f"{_DIGESTS.get(key, key + ' differs')} ({key}, compared by digest)"
  return f"{key} is {_shown(here)} here, {_shown(there)} there"


def _is_digest(value) -> bool:
  return (isinstance(value, str) and len(value) == 64 and
          all(c in "0123456789abcdef" for c in value))


def _shown(value) -> str:
  if value is _ABSENT:
    return "absent"
  text = json.dumps(value)
  return text if len(text) <= 40 else text[:40] + "…"


def _flat(tree: dict, prefix: str = "") -> dict:
  flat = {}
  for key, value in tree.items():
    if isinstance(value, dict) and value:
      flat.update(_flat(value, f"{prefix}{key}."))
    else:
      flat[f"{prefix}{key}"] = value
  return flat
