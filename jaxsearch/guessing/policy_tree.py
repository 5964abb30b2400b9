"""Guessing-game policy trees: their structure checks, exact evaluation and completion.

A policy is a decision tree ``{"guess": g, "children": {feedback: node}}`` (the file format
and the games' registry are in :mod:`jaxsearch.guessing.policy_file`).

**Evaluation.** :func:`evaluate` partitions the secrets down the tree: at each node the
secrets that reach it are grouped by their feedback to the node's guess and each group follows
its child, so every (node, secret) pair is scored once. A secret reaching a node without a
child for its feedback, an invalid guess, a loop (a node that is its own descendant, possible
in Python objects, not in JSON) or a path longer than ``max_guesses`` raises
:class:`PolicyError`, whose message names the secret and the path of ``(guess, feedback)``
pairs that fails. A legal policy that wastes guesses (repeats one, or plays one that tells
nothing) is evaluated like any other, at its cost: the tree is finite, so every walk ends.
Nothing here recurses, so trees of any depth are evaluated. Mastermind 4x6 (1296 secrets,
~6 k scorings) takes ~10 ms once the table is built (~0.3 s, once per process and size);
Wordle (3158 secrets) ~0.4 s with a fresh ``games.wordle.WordleScore``, nearly all of it
computing the feedback rows of the tree's guesses (JAX, a few hundred at a time), then ~30 ms.

**Completing trees.** :func:`consistent_candidates_policy` builds the policy "guess the first
remaining candidate consistent with all feedback so far"; its total over ``n`` secrets is at
most ``n (n + 1) / 2`` (the games' pessimistic bound ``-(n + 1) / 2``): a guess solves one of
the ``m`` secrets that reach it and splits the other ``m - 1``, so ``T(m) <= m + T(m - 1)``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable, Iterable, Optional, Sequence

Score = Callable[[str, str], str]
TreePath = tuple[tuple[str, str], ...]  # ((guess, feedback), ...) from the root
# A path as walked: ``None`` at the root, else ``(parent's link, (guess, feedback))``; sharing
# the parent's keeps a deep tree's paths linear in its size (:func:`_path` spells it out).
_Link = Optional[tuple]


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


def _path(link: _Link) -> TreePath:
  """The :data:`TreePath` of a walk's link (see ``_Link``)."""
  pairs = []
  while link is not None:
    link, pair = link
    pairs.append(pair)
  return tuple(reversed(pairs))


# ---------------------------------------------------------------------------------------------
# Evaluation.


def walk_structure(policy: Any, valid: Optional[set[str]], valid_hint: str) -> list[str]:
  """Checks every node (reached or not): a dict with a valid string ``"guess"`` and a dict of
  string-keyed children, no node its own descendant (``valid=None``: any guess). Returns the
  distinct guesses."""
  guesses: dict[str, None] = {}
  on_path: set[int] = set()
  done: set[int] = set()
  stack: list[tuple[Any, _Link, bool]] = [(policy, None, False)]
  while stack:
    node, link, leaving = stack.pop()
    if leaving:
      on_path.discard(id(node))
      done.add(id(node))
      continue
    if id(node) in on_path:
      path = _path(link)
      raise PolicyError(f"the policy loops: the node at path {format_path(path)} is one of "
                        f"its own ancestors", path=path)
    if id(node) in done:
      continue  # a shared subtree (Python objects only), already checked
    guess = node.get("guess") if isinstance(node, dict) else None
    children = node.get("children", {}) if isinstance(node, dict) else None
    if children is None:
      children = {}
    if not (isinstance(guess, str) and (valid is None or guess in valid)
            and isinstance(children, dict)):
      _malformed(node, link, valid, valid_hint)
    guesses[guess] = None
    on_path.add(id(node))
    stack.append((node, link, True))
    for feedback, child in reversed(list(children.items())):
      if not isinstance(feedback, str):
        path = _path(link)
        raise PolicyError(f"the node at path {format_path(path)} has a non-string feedback "
                          f"key {feedback!r}", path=path)
      stack.append((child, (link, (guess, feedback)), False))
  return list(guesses)


def _malformed(node: Any, link: _Link, valid: Optional[set[str]], valid_hint: str) -> None:
  """Raises the :class:`PolicyError` that says what is wrong with ``node`` (reached by
  ``link``): not a dict, no string guess, an invalid one, or children not a dict."""
  path = _path(link)
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
  children = node.get("children")
  raise PolicyError(f"{where} has 'children' of type {type(children).__name__}, not an "
                    f"object {{feedback: node}}", path=path)


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
      secret is not solved within ``max_guesses``; the tree loops (possible in Python
      objects only). A policy that wastes guesses is no error: it is evaluated, at its cost.
    ValueError: ``secrets`` is empty or repeats.
  """
  secrets = _checked_secrets(secrets, max_guesses)
  if guesses is None:
    valid, hint = set(secrets), "guesses must be among the secrets; pass guesses= for others"
  else:
    valid, hint = set(guesses), "not in the list of allowed guesses"
  walk_structure(policy_node, valid, hint)
  prefetch = getattr(score, "prefetch", None)
  histogram: Counter = Counter()
  # Level by level (``depth`` = the number of this level's guess), so that a scorer with
  # ``prefetch`` gets each level's guesses at once. The walk ends: the tree is finite (no
  # loop, checked above), and every secret goes one node deeper per guess.
  level: list[tuple[dict, list[str], _Link]] = [(policy_node, secrets, None)]
  depth = 0
  while level:
    depth += 1
    if callable(prefetch):
      prefetch([node["guess"] for node, group, _ in level
                if len(group) > 1 or group[0] != node["guess"]])
    following = []
    for node, group, link in level:
      guess = node["guess"]
      children = node.get("children") or {}
      for feedback, sub in _split_by_feedback(guess, group, score, histogram, depth).items():
        here = (link, (guess, feedback))
        _check_step(children.get(feedback), feedback, guess, sub, here, depth, max_guesses)
        following.append((children[feedback], sub, here))
    level = following

  total = sum(k * v for k, v in histogram.items())
  return Evaluation(total_guesses=total, expected_guesses=total / len(secrets),
                    worst_case=max(histogram), secrets=len(secrets),
                    histogram=dict(sorted(histogram.items())))


def _checked_secrets(secrets: Sequence[str], max_guesses: Optional[int]) -> list[str]:
  """:func:`evaluate`'s ``secrets`` as a list, checked with ``max_guesses``."""
  secrets = list(secrets)
  if not secrets:
    raise ValueError("evaluate: no secrets")
  if len(set(secrets)) != len(secrets):
    dups = [s for s, k in Counter(secrets).items() if k > 1]
    raise ValueError(f"evaluate: repeated secrets, e.g. {dups[:5]!r}")
  if max_guesses is not None and int(max_guesses) < 1:
    raise ValueError(f"evaluate: max_guesses must be >= 1, got {max_guesses!r}")
  return secrets


def _split_by_feedback(guess: str, group: list[str], score: Score, histogram: Counter,
                       depth: int) -> dict[str, list[str]]:
  """The secrets of ``group`` that ``guess`` does not solve, by feedback (in order of first
  appearance); the one it solves is counted in ``histogram[depth]``."""
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
  return buckets


def _check_step(child: Optional[dict], feedback: str, guess: str, sub: list[str],
                here: _Link, depth: int, max_guesses: Optional[int]) -> None:
  """Raises :class:`PolicyError` where the secrets ``sub`` cannot go on from ``guess`` with
  ``feedback`` (the step ``here``): no child, or ``max_guesses`` reached."""
  if child is not None and (max_guesses is None or depth < max_guesses):
    return
  others = f" (and {len(sub) - 1} more secrets)" if len(sub) > 1 else ""
  path = _path(here)
  if child is None:
    raise PolicyError(
        f"secret {sub[0]!r}{others}: the policy has no child for feedback "
        f"{feedback!r} after guess {guess!r}; path (guess, feedback): "
        f"{format_path(path)}", secret=sub[0], path=path)
  raise PolicyError(
      f"secret {sub[0]!r}{others} is not solved within max_guesses={max_guesses}; "
      f"path (guess, feedback): {format_path(path)}", secret=sub[0], path=path)


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
