"""Sequential Halving with Gumbel at the root, in mctx's terms (visit schedules and scores).

The schedule itself is :func:`jaxsearch.gumbel.sequential_halving_visits`; this module gives
it mctx's names and conventions (tuples of Python ints; 0 or 1 considered action means the
single action is visited every time).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch import gumbel as gumbel_lib


def get_sequence_of_considered_visits(max_num_considered_actions: int,
                                      num_simulations: int) -> tuple:
  """The considered visit count before each root simulation (length ``num_simulations``).

  Simulation ``i`` visits one of the considered actions whose visit count equals entry
  ``i``: every survivor of a phase gets its share, then the better half goes on.
  """
  if max_num_considered_actions <= 1:
    return tuple(range(num_simulations))
  return tuple(int(v) for v in gumbel_lib.sequential_halving_visits(
      max_num_considered_actions, num_simulations))


def get_table_of_considered_visits(max_num_considered_actions: int,
                                   num_simulations: int) -> tuple:
  """Row ``m`` is :func:`get_sequence_of_considered_visits` for ``m`` considered actions
  (``max_num_considered_actions + 1`` rows)."""
  return tuple(get_sequence_of_considered_visits(m, num_simulations)
               for m in range(max_num_considered_actions + 1))


def score_considered(considered_visit, gumbel, logits, normalized_qvalues,
                     visit_counts) -> jax.Array:
  """``g + (logits − max logits) + q̂`` (floored at −1e9) for the actions whose visit count
  equals ``considered_visit``, ``-inf`` elsewhere; the argmax is the action to visit (all
  ``[..., A]``, ``considered_visit`` broadcastable)."""
  logits = logits - jnp.max(logits, keepdims=True, axis=-1)
  penalty = jnp.where(visit_counts == considered_visit, 0.0, -jnp.inf)
  return jnp.maximum(-1e9, gumbel + logits + normalized_qvalues) + penalty
