"""The best policy a guessing game's search tree holds, as an exported decision tree."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxsearch.solve.loop import _row_of


def _remaining(bits: np.ndarray, num_secrets: int) -> np.ndarray:
  """Secret indices set in a ``u32[W]`` bitset (bit ``s % 32`` of word ``s // 32``)."""
  words = np.asarray(bits, np.uint64)
  mask = ((words[:, None] >> np.arange(32, dtype=np.uint64)[None, :]) & 1).astype(bool)
  return np.flatnonzero(mask.reshape(-1)[:num_secrets])


class _TreeReader:
  """Extracts the best policy one tree of a batch holds (numpy copies of its arrays).

  At every node it compares, **exactly**, each expanded guess (completed recursively the same
  way) with the game's greedy policy (``puzzle.greedy_guess``: for Mastermind and Wordle the
  best entropic guess, the first candidate when at most two remain) on the node's remaining
  secrets, and keeps the cheapest. The tree's own policy is one of the candidates, so the
  result is never worse than the achievable bound's policy — usually much better, since the
  bound charges every unexplored node the pessimistic value ``(n + 1) / 2`` per secret.
  """

  def __init__(self, tree, row: int, puzzle):
    tree, row = _row_of(tree, row)
    take = lambda x: np.asarray(x[row])  # noqa: E731
    self.puzzle = puzzle
    self.bits = take(tree.nodes.state.remaining)
    self.slot_action = take(tree.slots.action)
    self.slot_legal = take(tree.slots.legal)
    self.slot_chance = take(tree.slots.chance)
    self.chance_prob = take(tree.chance.prob)
    self.chance_child = take(tree.chance.child)
    self.num_nodes = int(np.asarray(tree.num_nodes)[row])
    self._best: dict[int, tuple[int, Any]] = {}
    self._greedy: dict[bytes, int] = {}
    self._guess: dict[bytes, int] = {}

  def secrets_at(self, node: int) -> np.ndarray:
    return _remaining(self.bits[node], len(self.puzzle.secrets))

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
    secrets = self.secrets_at(node)
    choice = (self._greedy_total(secrets), None)
    for slot in np.flatnonzero(self.slot_legal[node] & (self.slot_chance[node] >= 0)):
      chance = self.slot_chance[node, slot]
      total = len(secrets)
      for outcome in np.flatnonzero(self.chance_prob[chance] > 0):
        if outcome != self.puzzle.solved_outcome:
          total += self.best(int(self.chance_child[chance, outcome]))[0]
      if total < choice[0]:
        choice = (total, int(slot))
    self._best[node] = choice
    return choice

  def policy(self, node: int) -> dict:
    _, slot = self.best(node)
    if slot is None:
      return self._greedy_policy(self.secrets_at(node))
    chance = self.slot_chance[node, slot]
    children = {}
    for outcome in np.flatnonzero(self.chance_prob[chance] > 0):
      if outcome != self.puzzle.solved_outcome:
        children[self.puzzle.outcome_name(int(outcome))] = self.policy(
            int(self.chance_child[chance, outcome]))
    return {"guess": self.puzzle.guess_names[int(self.slot_action[node, slot])],
            "children": children}


def extract_policy(puzzle, trees, row: int) -> dict:
  """The exported policy of root ``row`` of a batch of trees (see :class:`_TreeReader`)."""
  return _TreeReader(trees, row, puzzle).policy(0)
