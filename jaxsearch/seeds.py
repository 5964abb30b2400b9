"""Seeds: the integers a run's PRNG key is made from (``jax.random.PRNGKey(seed)``).

A seed is an integer from 0 to :data:`MAX_SEED` = 2**32 - 1. That is the range in which
distinct seeds give distinct keys: unless ``jax_enable_x64`` is set, ``PRNGKey`` keeps 32 bits
of the seed, so ``2**32`` made seed 0's key and ``-1`` made ``2**32 - 1``'s, and a seed beyond
64 bits raised ``OverflowError`` deep inside a run. Every entry point that takes a seed
(``TrainConfig``, ``SolveOptions``, the command line's ``--seed``) refuses one outside the
range with :func:`check_seed` before any work (docs/bad_input.md).

This module imports nothing heavy: the command line checks ``--seed`` while parsing.
"""

from __future__ import annotations

import numbers

MAX_SEED = 2**32 - 1


def seed_problem(seed) -> str | None:
  """Why ``seed`` is not a seed (a phrase), or ``None`` when it is one."""
  if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
    return f"must be an integer from 0 to {MAX_SEED}, got {seed!r}"
  if not 0 <= seed <= MAX_SEED:
    return (f"must be from 0 to {MAX_SEED} (2**32 - 1: the PRNG key holds 32 bits of it), "
            f"got {seed}")
  return None


def check_seed(seed, name: str = "seed") -> int:
  """``seed`` as an ``int``, checked.

  Raises:
    ValueError: ``seed`` is not an integer in ``[0, MAX_SEED]`` (the message starts with
      ``name``).
  """
  problem = seed_problem(seed)
  if problem is not None:
    raise ValueError(f"{name} {problem}")
  return int(seed)
