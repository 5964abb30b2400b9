"""A first guess's feedback sub-problems, and when two bounds on a total of guesses meet.

Shared by the solve of fixed openings (:mod:`jaxsearch.guessing.puzzle`) and the search over
first guesses (:mod:`jaxsearch.guessing.root`).
"""

from __future__ import annotations

import math
from typing import Optional

import jax.numpy as jnp
import numpy as np


def meets(bound_total: float, upper_total: Optional[float]) -> bool:
  """Whether the achievable bound meets the optimistic one, in total guesses.

  Totals of guesses are integers: the achievable one is a policy's total, and the optimum is
  at least ``upper_total``, hence at least its ceiling. Both are float32 sums whose rounding
  errors grow with the number of secrets (21.0000014 against 20.9999993 on Mastermind 2×3),
  so each is rounded to its integer with a 0.01 tolerance before they are compared.
  """
  if upper_total is None or not math.isfinite(bound_total):
    return False
  return math.floor(bound_total + 1e-2) <= math.ceil(upper_total - 1e-2)


def opening_roots(puzzle, first: str):
  """The sub-problems a first guess leaves: ``(outcomes, states)``, the feedback codes of
  ``first`` at the start other than the solved one (``list[int]``, ascending) and the state
  after each (unbatched states; stack them for a batch of roots, as
  :func:`jaxsearch.guessing.solve_puzzle` does with ``first=``).

  Raises:
    ValueError: ``first`` is not an allowed guess.
  """
  if first not in puzzle.guess_names:
    raise ValueError(f"first guess {first!r} is not an allowed guess")
  action = jnp.int32(list(puzzle.guess_names).index(first))
  state = puzzle.initial_state
  probs = np.asarray(puzzle.game.outcome_probs(state, action))
  outcomes = [int(o) for o in np.flatnonzero(probs > 0) if o != puzzle.solved_outcome]
  return outcomes, [puzzle.game.step(state, action, jnp.int32(o)).state for o in outcomes]


def subproblem_min_nodes(num_outcomes: int) -> int:
  """The fewest nodes a sub-problem's tree is given when a batch's node budget is shared out
  (room for a few expansions of every outcome); a smaller share is raised to it."""
  return 4 * num_outcomes + 1
