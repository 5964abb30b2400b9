"""The numbers a game gives the exact side of :func:`jaxsearch.solve.solve_game`, checked:
its bounds (``optimistic_value``, ``pessimistic_value``) and its transitions' probabilities,
rewards and discounts, wherever a state is met.

* NaN is refused everywhere (:class:`BadGameNumber`, naming the function, the value and the
  state);
* an optimistic bound of ``+inf`` is admissible: it says nothing, and is carried exactly as
  :data:`INFINITE` by the upper bounds (:func:`expected_upper`); one of ``-inf`` at a state
  with a legal action is refused (no value of a game with finite rewards is that low), and so
  is a pessimistic bound of ``+inf`` there (``-inf`` is admissible and says nothing);
* the rewards, discounts and probabilities of the outcomes with ``p > 0`` must be finite
  (exact rationals are).

Bounds at finished states (no legal action) are never used, and not checked.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxsearch.solve.dyadic import ZERO, Dyadic


class BadGameNumber(ValueError):
  """A number the game gave cannot be used by exact certificates (NaN, or an infinity that
  is not admissible there); the message names the function, the value and the state."""


class _Infinite:
  """``+inf`` as an exact upper bound (an optimistic value of ``+inf``: no information)."""

  def __repr__(self) -> str:
    return "INFINITE"


INFINITE = _Infinite()


def describe_state(states, row: int) -> str:
  """Row ``row`` of a batch of states, briefly (``.state=3 .time=1``; large leaves by
  shape)."""
  parts = []
  for path, leaf in jax.tree_util.tree_flatten_with_path(states)[0]:
    value = np.asarray(leaf)[row]
    shown = (np.array2string(value, separator=",") if value.size <= 8 else
             f"{value.dtype}{list(value.shape)}")
    parts.append(f"{jax.tree_util.keystr(path) or 'state'}={shown}")
  return " ".join(parts) if parts else "()"


def check_bounds(name: str, values: np.ndarray, playable: np.ndarray, states,
                 refused_infinity: float) -> None:
  """Refuses a NaN, or ``refused_infinity``, among ``values`` (``f[n]``, the game's
  ``name`` at ``states``) where ``playable`` (``bool[n]``; a finished state's bound is never
  used)."""
  bad = playable & (np.isnan(values) | (values == refused_infinity))
  if bad.any():
    row = int(np.flatnonzero(bad)[0])
    why = ("NaN is no bound" if np.isnan(values[row]) else
           "no value of a game with finite rewards is that" + (
               " low" if refused_infinity < 0 else " high"))
    raise BadGameNumber(f"the game's {name} is {float(values[row])} at the state "
                        f"{describe_state(states, row)}, which has legal actions: {why} "
                        f"({int(bad.sum())} such state(s) in this batch)")


def check_transitions(probs, rewards, discounts, states, actions) -> None:
  """Refuses NaN probabilities, and non-finite rewards or discounts of outcomes with
  ``p > 0`` (``[n, O]`` each): exact arithmetic needs finite numbers."""
  live = probs > 0
  for name, values, bad in (("outcome_probs", probs, np.isnan(probs)),
                            ("reward", rewards, live & ~np.isfinite(rewards)),
                            ("discount", discounts, live & ~np.isfinite(discounts))):
    if bad.any():
      k, o = (int(i) for i in np.argwhere(bad)[0])
      raise BadGameNumber(
          f"the game's {name} is {float(values[k, o])} for action {int(actions[k])}, outcome "
          f"{o} at the state {describe_state(states, k)}: exact certificates need finite "
          f"probabilities, rewards and discounts")


def expected_upper(edge, values) -> "Dyadic | _Infinite":
  """:func:`~jaxsearch.solve.dyadic.expected` where a child's value may be :data:`INFINITE`:
  infinite where an outcome with ``p > 0`` leads there with a discount ``> 0`` (an outcome
  whose discount is 0 does not see its child's value)."""
  total = ZERO
  for _, p, r, d, child in edge:
    if child is None or not d.n:
      total = total + p * r
    else:
      value = values[child]
      if value is INFINITE:
        return INFINITE
      total = total + p * (r + d * value)
  return total.reduced()
