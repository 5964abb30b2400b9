"""The best policy a guessing game's search tree holds, as an exported decision tree."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxsearch.solve.tree_reader import TreeReader


class PolicyExtractor:
  """Extracts the best policy one tree holds (read by a :class:`TreeReader`).

  At every node it compares, **exactly**, each expanded guess (completed recursively the same
  way) with the game's greedy policy (``puzzle.greedy_guess``: for Mastermind and Wordle the
  best entropic guess, the first candidate when at most two remain) on the node's remaining
  secrets, and keeps the cheapest. The tree's own policy is one of the candidates, so the
  result is never worse than the achievable bound's policy — usually much better, since the
  bound charges every unexplored node the pessimistic value ``(n + 1) / 2`` per secret.

  Args:
    puzzle: the :class:`jaxsearch.guessing.Puzzle`.
    tree: one root's tree, a batch of one (``SearchResult.trees[r]``).
  """

  def __init__(self, puzzle, tree):
    self.puzzle = puzzle
    self.reader = TreeReader(tree)
    self._best: dict[int, tuple[int, Any]] = {}
    self._greedy: dict[bytes, int] = {}
    self._guess: dict[bytes, int] = {}

  def secrets_at(self, node: int) -> np.ndarray:
    return self.reader.secrets_at(node, len(self.puzzle.secrets))

  def _greedy_guess(self, secrets: np.ndarray) -> int:
    """The game's greedy guess for ``secrets``, memoised: the extraction asks for the same
    sets when it totals and when it exports."""
    key = secrets.tobytes()
    if key not in self._guess:
      self._guess[key] = int(self.puzzle.greedy_guess(secrets))
    return self._guess[key]

  def _split(self, secrets: np.ndarray, guess: int):
    """``(feedback, group)`` pairs of the secrets the guess does not solve."""
    feedback = self.puzzle.table[secrets, guess]
    solved = self.puzzle.solved_outcome
    return [(int(v), secrets[feedback == v]) for v in np.unique(feedback) if v != solved]

  def _greedy_total(self, secrets: np.ndarray) -> int:
    """Total guesses of the greedy policy over ``secrets`` (memoised)."""
    key = secrets.tobytes()
    if key not in self._greedy:
      guess = self._greedy_guess(secrets)
      self._greedy[key] = len(secrets) + sum(
          self._greedy_total(group) for _, group in self._split(secrets, guess))
    return self._greedy[key]

  def _greedy_policy(self, secrets: np.ndarray) -> dict:
    guess = self._greedy_guess(secrets)
    return {"guess": self.puzzle.guess_names[guess], "children": {
        self.puzzle.outcome_name(v): self._greedy_policy(group)
        for v, group in self._split(secrets, guess)}}

  def best(self, node: int) -> tuple[int, Any]:
    """``(total guesses, choice)`` of the cheapest policy from ``node``; choice is a slot or
    ``None`` (the greedy completion)."""
    if node in self._best:
      return self._best[node]
    reader, solved = self.reader, self.puzzle.solved_outcome
    secrets = self.secrets_at(node)
    choice = (self._greedy_total(secrets), None)
    for slot in reader.expanded_slots(node):
      if not reader.slot_legal[node, slot]:
        continue
      total = len(secrets) + sum(self.best(child)[0] for _, child in
                                 reader.children(reader.slot_chance[node, slot], solved))
      if total < choice[0]:
        choice = (total, int(slot))
    self._best[node] = choice
    return choice

  def policy(self, node: int) -> dict:
    _, slot = self.best(node)
    if slot is None:
      return self._greedy_policy(self.secrets_at(node))
    reader = self.reader
    children = {self.puzzle.outcome_name(outcome): self.policy(child) for outcome, child in
                reader.children(reader.slot_chance[node, slot], self.puzzle.solved_outcome)}
    return {"guess": self.puzzle.guess_names[int(reader.slot_action[node, slot])],
            "children": children}


def extract_policy(puzzle, trees, row: int) -> dict:
  """The exported policy of root ``row`` (``trees``: one batch of one tree per root, as
  :class:`jaxsearch.solve.chunked.SearchResult` holds them; see :class:`PolicyExtractor`)."""
  return PolicyExtractor(puzzle, trees[row]).policy(0)
