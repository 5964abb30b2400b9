"""What a :func:`jaxsearch.solve.solve_game` checkpoint is a state *of*: the game itself, not
only its Python class and sizes.

A :class:`jaxsearch.game.Game` is a bundle of functions, often closures over tables (a
Garnet's transitions, drawn from its seed), so neither its class nor its name tells two games
apart. :func:`game_identity` identifies one by

* ``key``: what the caller says the game is (``solve_game(..., game_key="garnet seed 1")``),
  compared as given: the only complete identity, where the caller has one;
* its declared facts: name, sizes, ``max_length``, ``value_range``, ``value_bounds``, which
  bounds it has;
* ``transitions``: a digest of what the game *does* from the roots: at the roots and at the
  states up to :data:`LEVELS` moves below them (at most :data:`MAX_PAIRS` ``(state, action)``
  pairs and states per level, in order), the legal actions, the optimistic and pessimistic
  values, and for every pair the outcome probabilities, rewards, discounts, terminal flags
  and next states;
* ``estimator``: a digest of the estimator's estimates at the same states (key 0).

Two games that agree on everything sampled but differ deeper are not told apart by the
digests: give a ``game_key`` where that can happen. Games that differ in their transitions
from the roots (two Garnets of different seeds, a changed reward) are.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import jax
import numpy as np

from jaxsearch.game import Estimator, Game
from jaxsearch.solve.checkpoint import digest
from jaxsearch.solve.state_graph import Oracle, state_keys, take

LEVELS = 2  # moves below the roots that the transitions digest looks at
MAX_PAIRS = 256  # (state, action) pairs, and states, per level


def check_key(key: Any, where: str = "solve_game") -> Any:
  """``key`` as it reads back from JSON (a tuple becomes a list), or ``ValueError`` where it is
  not JSON-able data."""
  try:
    return json.loads(json.dumps(key, allow_nan=False))
  except (TypeError, ValueError) as error:
    raise ValueError(f"{where}: game_key must be JSON-able data (a string, numbers, lists, "
                     f"dicts), got {key!r}: {error}") from None


def game_identity(game: Game, estimator: Optional[Estimator], roots,
                  key: Any = None) -> dict:
  """The identity of ``game`` (with ``estimator``) from ``roots`` (``[B]``, a batched pytree)
  as JSON-able data (see the module's docstring); steps the game through its own functions,
  jitted (a few small compiled shapes, shared with the exact side of the solve)."""
  oracle = Oracle(game, estimator)
  rules, estimates = [], []
  states = jax.tree.map(np.asarray, roots)
  for level in range(LEVELS + 1):
    legal = oracle.legal(states)
    rules += [legal, oracle.optimistic(states), oracle.pessimistic(states)]
    if estimator is not None:
      estimates.append(jax.jit(lambda s: estimator(None, jax.random.PRNGKey(0), s))(states))
    pairs = np.argwhere(legal.reshape(legal.shape[0], -1))[:MAX_PAIRS]
    if level == LEVELS or not len(pairs):
      break
    probs, rewards, discounts, terminal, following = oracle.transitions(
        take(states, pairs[:, 0]), pairs[:, 1].astype(np.int32))
    rules += [pairs, probs, rewards, discounts, terminal, following]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), following)
    going_on = np.flatnonzero((probs > 0).reshape(-1) & ~terminal.reshape(-1))
    first: dict = {}  # each distinct next state's first row, in order
    for i, state in enumerate(state_keys(take(flat, going_on))):
      first.setdefault(state, i)
    rows = going_on[np.array(list(first.values())[:MAX_PAIRS], np.int64)]
    if not len(rows):
      break
    states = take(flat, rows)
  return {"key": key, "name": game.name, "num_actions": int(game.num_actions),
          "num_outcomes": int(game.num_outcomes), "max_length": game.max_length,
          "value_range": [float(v) for v in game.value_range],
          "value_bounds": (None if game.value_bounds is None else
                           [float(v) for v in game.value_bounds]),
          "bounds": {"pessimistic": game.pessimistic_value is not None,
                     "optimistic": game.optimistic_value is not None},
          "transitions": digest([x for x in rules if x is not None]),
          "estimator": None if estimator is None else digest(estimates)}
