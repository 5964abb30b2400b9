"""Pure-JAX games for jaxsearch.

The games install with the library, as ``jaxsearch.games`` (no top-level package of their
own that could clash with another project's). Each game module
(``jaxsearch.games.tictactoe``, ``jaxsearch.games.connect_four``) exposes a module constant
``GAME`` (a :class:`jaxsearch.game.Game`) built from pure, unbatched functions over a small
frozen ``State`` pytree, plus plain-Python helpers (``render``, ``state_from_moves``, oracles).
Families of games are built by a constructor instead: ``hashed.make(num_actions)`` and
``garnet.make(num_states, num_actions, branching, horizon, seed)`` (random MDPs with exact
values; ``garnet.make_family(M, ...)`` puts M of them in one batch), ``mastermind.make(pegs,
colours)`` and ``wordle.make(answers, guesses)`` (guessing games with exact chance over
feedbacks).

Importing this package is cheap on purpose: game modules are imported explicitly
(``from jaxsearch.games import connect_four``). The library proper imports no game: games
plug in through :class:`jaxsearch.game.Game` (and, for policy files,
:class:`jaxsearch.guessing.policy_file.FileGame`). The games import the library only, never the
application layer; which name means which game is the application's registry
(:mod:`jaxsearch.app.registry`).
"""

from __future__ import annotations

from typing import Any, Sequence


def stack_states(states: Sequence[Any]) -> Any:
  """Stacks a list of unbatched states (same pytree structure) into one batched state.

  Args:
    states: ``P`` states, each leaf of shape ``S``.

  Returns:
    One state whose leaves have shape ``[P, *S]`` (``jax.Array``).
  """
  # Imported lazily so that importing the package stays cheap.
  import jax
  import jax.numpy as jnp
  import numpy as np

  if len(states) == 0:
    raise ValueError("stack_states: need at least one state to stack")

  def stack(*leaves):
    # One host-side np.stack + one transfer is much cheaper than jnp.stack over P small
    # device arrays; fall back to jnp.stack for tracers (stacking inside a jit).
    try:
      host = [np.asarray(x) for x in leaves]
    except jax.errors.TracerArrayConversionError:
      return jnp.stack(leaves)
    return jnp.asarray(np.stack(host))

  return jax.tree.map(stack, *states)
