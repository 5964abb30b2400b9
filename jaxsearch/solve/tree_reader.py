"""One searched tree read on the host: what the policy extraction
(:mod:`jaxsearch.guessing.extract`), the integer certificates (:mod:`jaxsearch.guessing.certificates`) and
the exact state graph (:mod:`jaxsearch.solve.exact`) read of a tree, in one place."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def secrets_in(bits: np.ndarray, num_secrets: int) -> np.ndarray:
  """Secret indices set in a ``u32[W]`` bitset (bit ``s % 32`` of word ``s // 32``)."""
  words = np.asarray(bits, np.uint64)
  mask = ((words[:, None] >> np.arange(32, dtype=np.uint64)[None, :]) & 1).astype(bool)
  return np.flatnonzero(mask.reshape(-1)[:num_secrets])


class TreeReader:
  """The arrays of one searched tree as numpy (views where the tree is numpy already).

  Args:
    tree: a batch of one tree (:class:`jaxsearch.tree.Tree`), as the solver's results hold
      each root's (``SearchResult.trees[r]``).

  Attributes:
    num_nodes: the nodes the tree allocated (node 0 is the root).
    states: ``[N, ...]`` every node's game state (a pytree).
    terminal: ``bool[N]``. upper: ``f32[N]`` each node's optimistic bound.
    slot_action, slot_legal, slot_chance: ``[N, K]`` each slot's action, whether it may be
      chosen, and its chance record (``-1``: never expanded).
    chance_prob: ``f32[C, O]`` each record's outcome probabilities. chance_child:
      ``i32[C, O]`` the node each outcome leads to.
  """

  def __init__(self, tree):
    take = lambda x: np.asarray(x[0])  # noqa: E731
    self.num_nodes = int(np.asarray(tree.num_nodes)[0])
    self.states: Any = jax.tree.map(take, tree.nodes.state)
    self.terminal = take(tree.nodes.terminal)
    self.upper = take(tree.bounds.upper)
    self.slot_action = take(tree.slots.actions())
    self.slot_legal = take(tree.slots.legal)
    self.slot_chance = take(tree.slots.chance)
    self.chance_prob = take(tree.chance.prob)
    self.chance_child = take(tree.chance.child)

  def secrets_at(self, node: int, num_secrets: int) -> np.ndarray:
    """A guessing game's secrets (indices) remaining at ``node`` (its state's ``remaining``
    bitset)."""
    return secrets_in(self.states.remaining[node], num_secrets)

  def state(self, node: int) -> Any:
    """``node``'s game state (unbatched)."""
    return jax.tree.map(lambda x: x[node], self.states)

  def expanded_slots(self, node: int) -> np.ndarray:
    """``int[k]``: the slots of ``node`` that were expanded (hold a chance record)."""
    return np.flatnonzero(self.slot_chance[node] >= 0)

  def children(self, chance: int, skip=None) -> list[tuple[int, int]]:
    """``[(outcome, child node)]`` of chance record ``chance``: its outcomes of positive
    probability, but ``skip`` (e.g. a guessing game's all-correct feedback)."""
    return [(int(o), int(self.chance_child[chance, o]))
            for o in np.flatnonzero(self.chance_prob[chance] > 0) if o != skip]
