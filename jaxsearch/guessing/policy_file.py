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
* An object never holds a key twice (JSON leaves that undefined; Python would keep the last
  copy silently): :func:`load` refuses a file where one does (a feedback with two children, a
  header key given twice...), naming the key and where it is, and so it refuses ``NaN`` and
  ``Infinity``, which are not JSON.
* A policy may waste guesses (repeat one, or play one that tells nothing): it is legal, and
  evaluated at its cost. Trees of any depth are read, written and evaluated (a tree deeper
  than Python's JSON module nests is read and written without recursion).
* Files are written atomically (a temporary file, then a rename) with the mode a plain
  ``open(path, "w")`` gives: an existing file's, else ``0o666`` less the umask (``0644``
  under the usual umask ``022``).
* **Mastermind** (``P = pegs``, ``C = colours``): the secrets, and the valid guesses, are all
  ``C**P`` codes, written as digit strings with colours ``1..C``, first peg first (``"1122"``);
  feedback keys are ``"b<exact>w<colour-only>"`` (``"b1w2"``), as in
  :meth:`games.mastermind.Mastermind.outcome_string`.
* **Wordle**: the secrets are the words of the ``answers`` list and the valid guesses those of
  the ``guesses`` list (which must hold every answer), read with
  :func:`games.wordle.load_words`. A ``null`` path means the list of
  :func:`games.wordle.default_paths` (``$WORDLE_DATA``, else the shipped copies): the pair
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
:func:`register_games` lookup). Which games have policy files is said in one place, the
application's registry: ``jaxsearch.app.registry.register_policy_files()`` registers them
(Mastermind and Wordle, each read by its module's ``POLICY_FILES``), as ``jaxsearch evaluate``
does.

**Evaluation** and completing trees: :mod:`jaxsearch.guessing.policy_tree` (:func:`evaluate`,
:func:`consistent_candidates_policy`; their names are importable from here too).

    registry.register_policy_files()  # jaxsearch.app's; or policy_file.register_game(name, g)
    header, policy = policy_file.load("mm46.json")
    result = policy_file.evaluate_file("mm46.json")
    result.total_guesses, result.expected_guesses, result.worst_case, result.histogram
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol

from jaxsearch.atomic_file import write_atomically
from jaxsearch.guessing.policy_tree import (
    Evaluation, PolicyError, Score, evaluate, format_path, walk_structure)
from jaxsearch.guessing.policy_tree import consistent_candidates_policy  # noqa: F401 (re-exported)

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
  text = dumps(body, indent) + "\n"
  path = Path(path)
  write_atomically(path, lambda f: f.write(text.encode("utf-8")), suffix=".tmp",
                   mode=_new_file_mode(path))


def _new_file_mode(path: Path) -> int:
  """The permission bits ``open(path, "w")`` would leave: the existing file's, else
  ``0o666`` less the process's umask."""
  try:
    return path.stat().st_mode & 0o7777
  except OSError:
    return 0o666 & ~_umask()


def _umask() -> int:
  """The process's umask (Linux: read, not changed; elsewhere set and restored at once)."""
  try:
    for line in Path("/proc/self/status").read_text().splitlines():
      if line.startswith("Umask:"):
        return int(line.split()[1], 8)
  except (OSError, ValueError, IndexError):
    pass
  mask = os.umask(0o022)
  os.umask(mask)
  return mask


# ---------------------------------------------------------------------------------------------
# JSON of any depth. Python's json module recurses once per level of nesting and fails (a
# RecursionError) on trees about a thousand guesses deep; these fall back to a loop there.


def dumps(value: Any, indent: Optional[int] = None) -> str:
  """``json.dumps(value, indent=indent)``, compact where ``indent`` is ``None``, for values
  nested to any depth (dicts, lists, strings, numbers, booleans, ``None``)."""
  separators = (",", ":") if indent is None else None
  try:
    return json.dumps(value, indent=indent, separators=separators)
  except RecursionError:
    return _dumps_deep(value, indent)


def loads(text: str, duplicates: Optional[list] = None) -> Any:
  """``json.loads(text)`` for documents nested to any depth; raises
  :class:`json.JSONDecodeError` as it does.

  With ``duplicates`` (a list), strict JSON: every key met twice in one object is appended
  to it as ``(the object, the key)`` (the object as read, for :func:`where_duplicate`), and
  ``NaN``, ``Infinity`` and ``-Infinity`` raise ``ValueError``."""
  if duplicates is None:
    hooks: dict = {}
  else:
    hooks = dict(object_pairs_hook=_recording(duplicates), parse_constant=_no_constant)
  try:
    return json.loads(text, **hooks)
  except RecursionError:
    return _loads_deep(text, duplicates)


def _recording(duplicates: list):
  """An ``object_pairs_hook`` that builds the object and notes each key it meets twice."""
  def hook(pairs):
    made: dict = {}
    for key, value in pairs:
      if key in made:
        duplicates.append((made, key))
      made[key] = value
    return made
  return hook


def _no_constant(name: str):
  raise ValueError(f"{name} is not a JSON number")


def where_duplicate(body: dict, container: dict, key: str) -> str:
  """Says where ``container`` (an object of ``body``, a policy file read by :func:`loads`)
  is, and that it holds ``key`` twice: the header, a node or a node's children (by the
  node's path of ``(guess, feedback)`` pairs), or another object (by its keys from the
  top)."""
  if container is body:
    return f"the header has the key {key!r} twice"
  nodes: list[tuple[Any, tuple]] = [(body.get("policy"), ())]
  while nodes:
    node, path = nodes.pop()
    if not isinstance(node, dict):
      continue
    children = node.get("children")
    if node is container:
      return f"the node at path {format_path(path)} has the key {key!r} twice"
    if children is container:
      return (f"the node at path {format_path(path)} has two children for the feedback "
              f"{key!r}")
    if isinstance(children, dict):
      nodes.extend((child, path + ((node.get("guess"), feedback),))
                   for feedback, child in children.items())
  values: list[tuple[Any, tuple]] = [(body, ())]
  while values:
    value, keys = values.pop()
    if value is container:
      return f"the object at {' → '.join(map(repr, keys))} has the key {key!r} twice"
    if isinstance(value, dict):
      values.extend((child, keys + (k,)) for k, child in value.items())
    elif isinstance(value, list):
      values.extend((child, keys + (i,)) for i, child in enumerate(value))
  return f"an object has the key {key!r} twice"


def _dumps_deep(value: Any, indent: Optional[int]) -> str:
  """What :func:`dumps` writes, by a loop over an explicit stack instead of recursion."""
  item_separator, key_separator = (",", ":") if indent is None else (",", ": ")
  pad = None if indent is None else (" " * indent if isinstance(indent, int) else str(indent))
  out: list[str] = []
  writing: set[int] = set()  # the containers being written (one inside itself never ends)
  stack: list[tuple[str, Any, int]] = [("value", value, 0)]
  while stack:
    kind, item, depth = stack.pop()
    if kind == "text":
      out.append(item)
    elif kind == "done":
      writing.discard(item)
    elif isinstance(item, (dict, list, tuple)):
      is_dict = isinstance(item, dict)
      entries = list(item.items()) if is_dict else list(item)
      opening, closing = "{}" if is_dict else "[]"
      if not entries:
        out.append(opening + closing)
        continue
      if id(item) in writing:
        raise ValueError("Circular reference detected")
      writing.add(id(item))
      inner = "" if pad is None else "\n" + pad * (depth + 1)
      outer = "" if pad is None else "\n" + pad * depth
      out.append(opening)
      stack.append(("text", outer + closing, 0))
      stack.append(("done", id(item), 0))
      for index in range(len(entries) - 1, -1, -1):  # pushed last first: popped in order
        prefix = (item_separator if index else "") + inner
        if is_dict:
          key, child = entries[index]
          stack.append(("value", child, depth + 1))
          stack.append(("text", prefix + _json_key(key) + key_separator, 0))
        else:
          stack.append(("value", entries[index], depth + 1))
          stack.append(("text", prefix, 0))
    else:
      out.append(json.dumps(item))
  return "".join(out)


def _json_key(key: Any) -> str:
  """An object key as :func:`json.dumps` writes it (numbers, booleans, ``None`` as strings)."""
  if isinstance(key, str):
    return json.dumps(key)
  if key is None or isinstance(key, (bool, int, float)):
    return json.dumps(json.dumps(key))
  raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


_WHITESPACE = json.decoder.WHITESPACE


def _loads_deep(text: str, duplicates: Optional[list] = None) -> Any:
  """What :func:`loads` reads, by a loop over an explicit stack of the objects and arrays
  being read (innermost last, each with the key its next value goes to)."""
  # A string, number, true, false or null at a place (strict: no NaN, Infinity).
  scalar = (json.JSONDecoder() if duplicates is None else
            json.JSONDecoder(parse_constant=_no_constant)).raw_decode
  stack: list[list] = []
  pos = _WHITESPACE.match(text, 0).end()
  while True:
    char = text[pos:pos + 1]  # a value starts here
    if char in ("{", "["):
      container: Any = {} if char == "{" else []
      pos = _WHITESPACE.match(text, pos + 1).end()
      if text[pos:pos + 1] != ("}" if char == "{" else "]"):
        stack.append([container, None])
        if char == "{":
          pos = _json_key_at(text, pos, stack[-1])
        continue
      value, pos = container, pos + 1
    else:
      value, pos = scalar(text, pos)
    while True:  # ``value`` is read: into its container; close those that end here
      if not stack:
        pos = _WHITESPACE.match(text, pos).end()
        if pos != len(text):
          raise json.JSONDecodeError("Extra data", text, pos)
        return value
      frame = stack[-1]
      container = frame[0]
      if isinstance(container, dict):
        if duplicates is not None and frame[1] in container:
          duplicates.append((container, frame[1]))
        container[frame[1]] = value
      else:
        container.append(value)
      pos = _WHITESPACE.match(text, pos).end()
      char = text[pos:pos + 1]
      if char == ",":
        pos = _WHITESPACE.match(text, pos + 1).end()
        if isinstance(container, dict):
          pos = _json_key_at(text, pos, frame)
        break  # the next value
      if char != ("}" if isinstance(container, dict) else "]"):
        raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
      stack.pop()
      value, pos = container, pos + 1


def _json_key_at(text: str, pos: int, frame: list) -> int:
  """Reads an object's ``"key":`` at ``pos`` into ``frame``; returns where its value
  starts."""
  if text[pos:pos + 1] != '"':
    raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
  frame[1], pos = json.decoder.scanstring(text, pos + 1)
  pos = _WHITESPACE.match(text, pos).end()
  if text[pos:pos + 1] != ":":
    raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
  return _WHITESPACE.match(text, pos + 1).end()


def load(path: os.PathLike | str) -> tuple[dict, dict]:
  """Reads a policy file: ``(header, policy_node)``, the header without ``"policy"``.

  Raises:
    FileNotFoundError: no such file.
    PolicyError: not JSON (``NaN`` and ``Infinity`` are not), an object with a key given
      twice (named, with where it is), not this format, missing keys, or a malformed tree.
  """
  path = Path(path)
  duplicates: list = []
  try:
    body = loads(path.read_text(encoding="utf-8"), duplicates)
  except ValueError as e:  # json.JSONDecodeError, or NaN / Infinity
    raise PolicyError(f"{path}: not a JSON policy file ({e})") from None
  if not isinstance(body, dict):
    raise PolicyError(f"{path}: a policy file is a JSON object, got {type(body).__name__}")
  if duplicates:
    more = f" (and {len(duplicates) - 1} more repeated keys)" if len(duplicates) > 1 else ""
    raise PolicyError(f"{path}: {where_duplicate(body, *duplicates[0])}{more}: each key "
                      f"may appear only once in an object")
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
