"""Exported guessing-game policies: the file format, and an exact evaluator by enumeration.

A *policy* for a "guess the secret" game (:mod:`games.mastermind`, :mod:`games.wordle`) is a
decision tree: a guess, then for every feedback it may get the policy to follow. This module
writes and reads such trees as JSON and evaluates them exactly, secret by secret, in plain
Python (no search, no sampling): the total number of guesses over all secrets, its mean, the
worst case and the histogram.

**File format** (``"jaxsearch-policy/1"``), one JSON object::

    {"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 4, "colours": 6,
     "policy": NODE}
    {"format": "jaxsearch-policy/1", "game": "wordle",
     "answers": "<path or null>", "guesses": "<path or null>",
     "answers_count": 3158, "guesses_count": 14855, "policy": NODE}

    NODE = {"guess": "<code or word>", "children": {"<feedback>": NODE, ...}}

* A secret is solved when the guess equals it: the all-correct feedback needs no child (one
  there is never followed), and a leaf may omit ``"children"`` or leave it empty. Every other
  feedback that some secret gives at a node must have a child. Children that no secret reaches
  are allowed (they are validated, never followed). Nodes may carry other keys (annotations);
  they are ignored. The header may carry other keys too; they are kept.
* **Mastermind** (``P = pegs``, ``C = colours``): the secrets, and the valid guesses, are all
  ``C**P`` codes, written as digit strings with colours ``1..C``, first peg first (``"1122"``);
  feedback keys are ``"b<exact>w<colour-only>"`` (``"b1w2"``), as in
  :meth:`games.mastermind.Mastermind.outcome_string`.
* **Wordle**: the secrets are the words of the ``answers`` list and the valid guesses those of
  the ``guesses`` list (which must hold every answer), read with
  :func:`games.wordle.load_words`. A ``null`` path means the list of
  :func:`games.wordle.default_paths` (``$WORDLE_DATA`` or ``shared/data/wordle``): the pair
  of lists whose known sizes equal ``answers_count`` / ``guesses_count`` (``"orig"``:
  2315 / 12972), else ``"nyt"`` (3158 / 14855). A relative path is looked up from the current
  directory, then from the policy file's folder. The counts are checked against the lists read.
  Feedback keys are five letters of ``G`` (right letter, right place), ``Y`` (right letter,
  elsewhere) and ``B`` (absent), scored greens first, then yellows left to right
  (:func:`games.wordle.score`, e.g. ``score("erase", "melee") == "YBBBG"``).

Feedback is always computed with the games' own scoring (their feedback tables, looked up by
``games.mastermind.MastermindScore`` and ``games.wordle.WordleScore``), so there is one
definition of it.

**Games plug in.** This module knows no game: what a header's ``game`` means — its required
keys, their checks, and the secrets, guesses and scorer it describes — comes from a
:class:`FileGame` registered under that name (:func:`register_game`, or a lazy
:func:`register_games` lookup; ``games.register_policy_files()`` registers Mastermind and
Wordle, as ``jaxsearch evaluate`` does).

**Evaluation** and completing trees: :mod:`jaxsearch.policy_tree` (:func:`evaluate`,
:func:`consistent_candidates_policy`; their names are importable from here too).

    games.register_policy_files()  # or policy_file.register_game(name, file_game)
    header, policy = policy_file.load("mm46.json")
    result = policy_file.evaluate_file("mm46.json")
    result.total_guesses, result.expected_guesses, result.worst_case, result.histogram
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol

from jaxsearch.policy_tree import Evaluation, PolicyError, Score, evaluate, walk_structure
from jaxsearch.policy_tree import consistent_candidates_policy  # noqa: F401 (re-exported)

FORMAT = "jaxsearch-policy/1"


# ---------------------------------------------------------------------------------------------
# Files.


class FileGame(Protocol):
  """How a game reads its policy files (registered with :func:`register_game`).

  Attributes:
    required_keys: the header keys the game needs besides ``format``, ``game``, ``policy``.
  """

  required_keys: tuple[str, ...]

  def check_header(self, header: dict) -> None:
    """Raises :class:`PolicyError` unless the game's keys are well typed (they are there)."""

  def resolve(self, header: dict, base_dir: Optional[Path]
              ) -> tuple[list[str], Optional[list[str]], Score]:
    """``(secrets, guesses, score)`` of the game the header describes (``guesses`` ``None``:
    the secrets); ``base_dir`` is where relative paths are looked up after the current
    directory."""


_GAMES: dict[str, FileGame] = {}
_LOOKUPS: dict[str, Callable[[str], FileGame]] = {}


def register_game(name: str, game: FileGame) -> None:
  """Makes ``name`` a known ``"game"`` of policy files, read with ``game``."""
  _GAMES[str(name)] = game


def register_games(names: Iterable[str], lookup: Callable[[str], FileGame]) -> None:
  """Makes every name of ``names`` a known game, its :class:`FileGame` given by
  ``lookup(name)`` when first needed (so that registering imports nothing)."""
  for name in names:
    _LOOKUPS.setdefault(str(name), lookup)


def known_games() -> list[str]:
  """The registered games' names, sorted."""
  return sorted(set(_GAMES) | set(_LOOKUPS))


def file_game(name: Any) -> FileGame:
  """The :class:`FileGame` registered as ``name``; :class:`PolicyError` if none is."""
  if isinstance(name, str) and name not in _GAMES and name in _LOOKUPS:
    _GAMES[name] = _LOOKUPS[name](name)
  if not isinstance(name, str) or name not in _GAMES:
    raise PolicyError(f"policy header: 'game' must be one of {known_games()}, got {name!r}")
  return _GAMES[name]


def check_header(header: Any) -> None:
  """Raises :class:`PolicyError` unless ``header`` is a valid header (with or without
  ``"format"`` / ``"policy"``): a known game with its required keys, well typed."""
  if not isinstance(header, dict):
    raise PolicyError(f"policy header must be a JSON object, got {type(header).__name__}")
  if "format" in header and header["format"] != FORMAT:
    raise PolicyError(f"unsupported policy format {header['format']!r}; expected {FORMAT!r}")
  name = header.get("game")
  game = file_game(name)
  missing = [k for k in game.required_keys if k not in header]
  if missing:
    raise PolicyError(f"policy header for {name}: missing keys {missing} (required: "
                      f"{list(game.required_keys)})")
  game.check_header(header)


def make_header(game: str, **keys) -> dict:
  """The header of a policy file of ``game`` with the given keys (checked)."""
  header = {"format": FORMAT, "game": game, **keys}
  check_header(header)
  return header


def resolve_path(value: str, base_dir: Optional[Path], what: str) -> Path:
  """``value`` as a path: absolute, or found from the current directory, then ``base_dir``
  (the policy file's folder). ``FileNotFoundError`` names every place tried."""
  path = Path(value).expanduser()
  if path.is_absolute():
    return path
  tried = [Path.cwd() / path]
  if base_dir is not None:
    tried.append(Path(base_dir) / path)
  for candidate in tried:
    if candidate.is_file():
      return candidate
  raise FileNotFoundError(
      f"{what} {value!r} of the policy file not found (tried "
      f"{', '.join(str(t) for t in tried)})")


def game_from_file_header(header: dict, base_dir: Optional[os.PathLike | str] = None
                          ) -> tuple[list[str], Optional[list[str]], Score]:
  """``(secrets, guesses, score)`` of the game a header describes, by its registered
  :class:`FileGame`.

  ``guesses`` is ``None`` where the valid guesses are the secrets (Mastermind). ``base_dir``
  (the policy file's folder) is where relative paths are looked up after the current
  directory.

  Raises:
    PolicyError: an invalid header or an unknown game, or files that do not match it.
    FileNotFoundError: a file the header names is missing.
  """
  check_header(header)
  return file_game(header["game"]).resolve(header, None if base_dir is None else
                                           Path(base_dir))


def save(path: os.PathLike | str, header: dict, policy_node: dict, indent: Optional[int] = None
         ) -> None:
  """Writes a policy file (atomically: a temporary file, then a rename).

  ``header`` holds ``game`` and its keys (``format`` is added if absent; a ``policy`` key in
  it is ignored). The tree's structure is checked (not its guesses: that needs the game; see
  :func:`evaluate_file`). ``indent`` goes to :func:`json.dumps` (default: compact).
  """
  check_header(header)
  walk_structure(policy_node, None, "")
  body = {"format": FORMAT}
  body.update({k: v for k, v in header.items() if k not in ("format", "policy")})
  body["policy"] = policy_node
  separators = (",", ":") if indent is None else None
  text = json.dumps(body, indent=indent, separators=separators) + "\n"
  path = Path(path)
  fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
  try:
    with os.fdopen(fd, "w", encoding="utf-8") as f:
      f.write(text)
    os.replace(tmp, path)
  except BaseException:
    try:
      os.unlink(tmp)
    except OSError:
      pass
    raise


def load(path: os.PathLike | str) -> tuple[dict, dict]:
  """Reads a policy file: ``(header, policy_node)``, the header without ``"policy"``.

  Raises:
    FileNotFoundError: no such file.
    PolicyError: not JSON, not this format, missing keys, or a malformed tree.
  """
  path = Path(path)
  try:
    body = json.loads(path.read_text(encoding="utf-8"))
  except json.JSONDecodeError as e:
    raise PolicyError(f"{path}: not a JSON policy file ({e})") from None
  if not isinstance(body, dict):
    raise PolicyError(f"{path}: a policy file is a JSON object, got {type(body).__name__}")
  if body.get("format") != FORMAT:
    raise PolicyError(f"{path}: format {body.get('format')!r} is not {FORMAT!r}")
  if "policy" not in body:
    raise PolicyError(f"{path}: no 'policy' key")
  try:
    check_header(body)
  except PolicyError as e:
    raise PolicyError(f"{path}: {e}") from None
  policy = body.pop("policy")
  try:
    walk_structure(policy, None, "")
  except PolicyError as e:
    raise PolicyError(f"{path}: {e}", path=e.path) from None
  return body, policy


def evaluate_file(path: os.PathLike | str, max_guesses: Optional[int] = None) -> Evaluation:
  """:func:`load`, :func:`game_from_file_header` (relative Wordle paths also looked up beside
  the file), :func:`evaluate`."""
  header, policy = load(path)
  secrets, guesses, score = game_from_file_header(header, base_dir=Path(path).parent)
  return evaluate(policy, secrets, score, max_guesses, guesses=guesses)
