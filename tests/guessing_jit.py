"""Jitted functions of a guessing game (Mastermind, Wordle), shared by their test files."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.guessing import game as guessing


class JittedGame:
  """A guessing game's functions jitted once (batched with vmap, and one-state versions).

  Subclasses set ``self.table`` and call :meth:`jit_game` with the game and its estimator.
  """

  def jit_game(self, game, estimator):
    self.step = jax.jit(jax.vmap(game.step))
    # All outcomes of one action at once: in_axes over the outcome only.
    self.step_outcomes = jax.jit(jax.vmap(game.step, in_axes=(None, None, 0)))
    self.probs = jax.jit(jax.vmap(game.outcome_probs))
    self.legal = jax.jit(jax.vmap(game.legal_actions))
    self.pessimistic = jax.jit(jax.vmap(game.pessimistic_value))
    self.optimistic = jax.jit(jax.vmap(game.optimistic_value))
    # Unbatched, jitted too (eager calls dispatch op by op, which is slow on CPU).
    self.one = {name: jax.jit(getattr(game, name)) for name in (
        "step", "outcome_probs", "legal_actions", "pessimistic_value", "optimistic_value")}
    self.estimate = jax.jit(estimator)

  def states(self, masks):
    """A batched state from ``bool[B, S]`` masks (not solved)."""
    masks = np.asarray(masks, bool)
    return guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(masks)),
                          solved=jnp.zeros((masks.shape[0],), bool))
