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

**Evaluation.** :func:`evaluate` partitions the secrets down the tree: at each node the
secrets that reach it are grouped by their feedback to the node's guess and each group follows
its child, so every (node, secret) pair is scored once. A secret reaching a node without a
child for its feedback, an invalid guess, a loop (a node that is its own descendant, possible
in Python objects, not in JSON) or a path longer than ``len(secrets) + 1`` guesses (or than
``max_guesses``) raises :class:`PolicyError`, whose message names the secret and the path of
``(guess, feedback)`` pairs that fails. Mastermind 4x6 (1296 secrets, ~6 k scorings) takes
~10 ms once the table is built (~0.3 s, once per process and size); Wordle (3158 secrets)
~0.4 s with a fresh ``games.wordle.WordleScore``, nearly all of it computing the feedback
rows of the tree's guesses (JAX, a few hundred at a time), then ~30 ms.

    games.register_policy_files()  # or policy_file.register_game(name, file_game)
    header, policy = policy_file.load("mm46.json")
    result = policy_file.evaluate_file("mm46.json")
    result.total_guesses, result.expected_guesses, result.worst_case, result.histogram

**Completing trees.** :func:`consistent_candidates_policy` builds the policy "guess the first
remaining candidate consistent with all feedback so far"; its total over ``n`` secrets is at
most ``n (n + 1) / 2`` (the games' pessimistic bound ``-(n + 1) / 2``): a guess solves one of
the ``m`` secrets that reach it and splits the other ``m - 1``, so ``T(m) <= m + T(m - 1)``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol, Sequence

FORMAT = "jaxsearch-policy/1"

Score = Callable[[str, str], str]
TreePath = tuple[tuple[str, str], ...]  # ((guess, feedback), ...) from the root


class PolicyError(ValueError):
  """An invalid policy, policy file or header.

  Attributes:
    secret: the secret whose walk fails, or ``None``.
    path: the ``((guess, feedback), ...)`` pairs from the root to the failing node, or
      ``None``.
  """

  def __init__(self, message: str, secret: Optional[str] = None,
               path: Optional[TreePath] = None):
    super().__init__(message)
    self.secret = secret
    self.path = path


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """The exact performance of a policy over all secrets (each equally likely).

  Attributes:
    total_guesses: the number of guesses summed over all secrets (the final, correct guess
      counted).
    expected_guesses: ``total_guesses / secrets``.
    worst_case: the most guesses any secret needs.
    secrets: the number of secrets.
    histogram: ``{guesses: number of secrets solved with that many}``, by increasing guesses.
  """

  total_guesses: int
  expected_guesses: float
  worst_case: int
  secrets: int
  histogram: dict[int, int]

  def __str__(self) -> str:
    hist = ", ".join(f"{k}: {v}" for k, v in self.histogram.items())
    return (f"{self.total_guesses} guesses over {self.secrets} secrets "
            f"(mean {self.expected_guesses:.4f}, worst {self.worst_case}; {{{hist}}})")


def format_path(path: TreePath) -> str:
  """``"root"`` or ``"[('1122', 'b0w1'), ('3344', 'b1w0')]"``."""
  return "root" if not path else repr([tuple(p) for p in path])


# ---------------------------------------------------------------------------------------------
# Evaluation.


def _walk_structure(policy: Any, valid: Optional[set[str]], valid_hint: str) -> list[str]:
  """Checks every node (reached or not): a dict with a valid string ``"guess"`` and a dict of
  string-keyed children, no node its own descendant (``valid=None``: any guess). Returns the
  distinct guesses."""
  guesses: dict[str, None] = {}
  on_path: set[int] = set()
  done: set[int] = set()
  stack: list[tuple[Any, TreePath, bool]] = [(policy, (), False)]
  while stack:
    node, path, leaving = stack.pop()
    if leaving:
      on_path.discard(id(node))
      done.add(id(node))
      continue
    if id(node) in on_path:
      raise PolicyError(f"the policy loops: the node at path {format_path(path)} is one of "
                        f"its own ancestors", path=path)
    if id(node) in done:
      continue  # a shared subtree (Python objects only), already checked
    where = f"the node at path {format_path(path)}"
    if not isinstance(node, dict):
      raise PolicyError(f"{where} is a {type(node).__name__}, not an object "
                        f"{{'guess': ..., 'children': {{...}}}}", path=path)
    guess = node.get("guess")
    if not isinstance(guess, str):
      raise PolicyError(f"{where} has no string 'guess' (got {guess!r})", path=path)
    if valid is not None and guess not in valid:
      raise PolicyError(f"{where} guesses {guess!r}, which is not a valid guess "
                        f"({valid_hint})", path=path)
    children = node.get("children", {})
    if children is None:
      children = {}
    if not isinstance(children, dict):
      raise PolicyError(f"{where} has 'children' of type {type(children).__name__}, not an "
                        f"object {{feedback: node}}", path=path)
    guesses[guess] = None
    on_path.add(id(node))
    stack.append((node, path, True))
    for feedback, child in reversed(list(children.items())):
      if not isinstance(feedback, str):
        raise PolicyError(f"{where} has a non-string feedback key {feedback!r}", path=path)
      stack.append((child, path + ((guess, feedback),), False))
  return list(guesses)


def evaluate(policy_node: dict, secrets: Sequence[str], score: Score,
             max_guesses: Optional[int] = None, *,
             guesses: Optional[Iterable[str]] = None) -> Evaluation:
  """Evaluates a policy tree exactly over all ``secrets`` (each equally likely).

  Args:
    policy_node: the root ``{"guess": ..., "children": {feedback: node}}``.
    secrets: the distinct secrets.
    score: ``score(guess, secret) -> feedback key`` (e.g.
      ``games.mastermind.MastermindScore``, ``games.wordle.WordleScore``,
      :func:`games.wordle.score`). If it has a ``prefetch(guesses)`` method it is called
      once per depth with the guesses scored there (the tree is walked level by level).
    max_guesses: if given, a secret needing more guesses is an error (Wordle: 6).
    guesses: the valid guesses; default ``None``: the secrets (Mastermind). Every node of the
      tree is checked, reached or not.

  Returns:
    The :class:`Evaluation`.

  Raises:
    PolicyError: a node is malformed or guesses an invalid word/code; a secret reaches a node
      with no child for its feedback (the message names the secret and the failing path); a
      secret is not solved within ``max_guesses`` or within ``len(secrets) + 1`` guesses (a
      policy that wastes guesses); the tree loops.
    ValueError: ``secrets`` is empty or repeats.
  """
  secrets = list(secrets)
  if not secrets:
    raise ValueError("evaluate: no secrets")
  if len(set(secrets)) != len(secrets):
    dups = [s for s, k in Counter(secrets).items() if k > 1]
    raise ValueError(f"evaluate: repeated secrets, e.g. {dups[:5]!r}")
  if max_guesses is not None and int(max_guesses) < 1:
    raise ValueError(f"evaluate: max_guesses must be >= 1, got {max_guesses!r}")
  if guesses is None:
    valid, hint = set(secrets), "guesses must be among the secrets; pass guesses= for others"
  else:
    valid, hint = set(guesses), "not in the list of allowed guesses"
  _walk_structure(policy_node, valid, hint)
  prefetch = getattr(score, "prefetch", None)
  limit = len(secrets) + 1
  histogram: Counter = Counter()
  # Level by level (``depth`` = the number of this level's guess), so that a scorer with
  # ``prefetch`` gets each level's guesses at once.
  level: list[tuple[dict, list[str], TreePath]] = [(policy_node, secrets, ())]
  depth = 0
  while level:
    depth += 1
    if callable(prefetch):
      prefetch([node["guess"] for node, group, _ in level
                if len(group) > 1 or group[0] != node["guess"]])
    following = []
    for node, group, path in level:
      guess = node["guess"]
      buckets: dict[str, list[str]] = {}
      for secret in group:
        if secret == guess:
          histogram[depth] += 1
        else:
          feedback = score(guess, secret)
          bucket = buckets.get(feedback)
          if bucket is None:
            buckets[feedback] = [secret]
          else:
            bucket.append(secret)
      if not buckets:
        continue
      children = node.get("children") or {}
      for feedback, sub in buckets.items():
        here = path + ((guess, feedback),)
        others = f" (and {len(sub) - 1} more secrets)" if len(sub) > 1 else ""
        child = children.get(feedback)
        if child is None:
          raise PolicyError(
              f"secret {sub[0]!r}{others}: the policy has no child for feedback "
              f"{feedback!r} after guess {guess!r}; path (guess, feedback): "
              f"{format_path(here)}", secret=sub[0], path=here)
        if max_guesses is not None and depth >= max_guesses:
          raise PolicyError(
              f"secret {sub[0]!r}{others} is not solved within max_guesses={max_guesses}; "
              f"path (guess, feedback): {format_path(here)}", secret=sub[0], path=here)
        if depth >= limit:
          raise PolicyError(
              f"secret {sub[0]!r}{others} is not solved within {limit} guesses "
              f"(len(secrets) + 1; the policy wastes guesses); path (guess, feedback): "
              f"{format_path(here)}", secret=sub[0], path=here)
        following.append((child, sub, here))
    level = following

  total = sum(k * v for k, v in histogram.items())
  return Evaluation(total_guesses=total, expected_guesses=total / len(secrets),
                    worst_case=max(histogram), secrets=len(secrets),
                    histogram=dict(sorted(histogram.items())))


def consistent_candidates_policy(secrets: Sequence[str], score: Score,
                                 order: Optional[Sequence[str]] = None) -> dict:
  """The policy "guess the first remaining candidate consistent with all feedback so far".

  Args:
    secrets: the distinct secrets still possible (all of them at the root of a game, or the
      candidates left at a node of a larger tree that this policy completes).
    score: ``score(guess, secret) -> feedback key``; its ``prefetch(guesses)``, if any, is
      called once per level of the tree.
    order: the preference order of the guesses, a permutation of ``secrets`` (default: the
      order of ``secrets``).

  Returns:
    The tree (``{"guess": ..., "children": {...}}``; leaves have empty children). Its total
    over ``n`` secrets is at most ``n (n + 1) / 2``.
  """
  secrets = list(secrets)
  if not secrets:
    raise ValueError("consistent_candidates_policy: no secrets")
  if len(set(secrets)) != len(secrets):
    raise ValueError("consistent_candidates_policy: repeated secrets")
  if order is not None:
    order = list(order)
    if len(order) != len(secrets) or set(order) != set(secrets):
      raise ValueError("consistent_candidates_policy: order must be a permutation of the "
                       "secrets")
    secrets = order
  prefetch = getattr(score, "prefetch", None)
  root = {"guess": secrets[0], "children": {}}
  level = [(root, secrets)]
  while level:
    if callable(prefetch):
      prefetch([cands[0] for _, cands in level if len(cands) > 1])
    following = []
    for node, cands in level:
      guess = cands[0]
      groups: dict[str, list[str]] = {}
      for secret in cands[1:]:
        groups.setdefault(score(guess, secret), []).append(secret)
      for feedback, group in groups.items():
        child = {"guess": group[0], "children": {}}
        node["children"][feedback] = child
        following.append((child, group))
    level = following
  return root


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
  _walk_structure(policy_node, None, "")
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
    _walk_structure(policy, None, "")
  except PolicyError as e:
    raise PolicyError(f"{path}: {e}", path=e.path) from None
  return body, policy


def evaluate_file(path: os.PathLike | str, max_guesses: Optional[int] = None) -> Evaluation:
  """:func:`load`, :func:`game_from_file_header` (relative Wordle paths also looked up beside
  the file), :func:`evaluate`."""
  header, policy = load(path)
  secrets, guesses, score = game_from_file_header(header, base_dir=Path(path).parent)
  return evaluate(policy, secrets, score, max_guesses, guesses=guesses)
