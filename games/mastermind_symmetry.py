"""Mastermind's symmetry: the colour and peg permutations that fix the guesses so far, and
the game and estimator that carry them (:func:`jaxsearch.games.mastermind.make`'s
``symmetry=True``). Codes are indexed as in :mod:`jaxsearch.games.mastermind`."""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.game import Estimate, Estimator, Game
from jaxsearch.guessing.estimator import all_states_at_once


def code_digits(pegs: int, colours: int) -> np.ndarray:
  """``int32[C**P, P]``: colour ``0..C-1`` of each peg of each code, in index order."""
  return np.asarray(list(itertools.product(range(colours), repeat=pegs)),
                    np.int32).reshape(colours ** pegs, pegs)


AT_START = -2  # ``State.symmetries[0]`` before the first guess: the whole group
# Kept permutations one trip of the batched symmetry mask checks (Symmetry.redundant's
# ``block``): at most 8 trips a batch instead of up to 64 on an accelerator.
BATCHED_BLOCK = 8
MAX_SYMMETRIES = 64  # permutations a state keeps (a subset is sound, see Symmetry)
MAX_GROUP = 200_000  # larger groups (C! P!) are not enumerated: symmetry is then off


@dataclasses.dataclass(frozen=True, eq=False)
class Symmetry:
  """Guesses that are equivalent under the permutations fixing the guesses so far.

  A permutation ``π = (σ, τ)`` of the colours (``σ``) and pegs (``τ``) maps code ``x`` to
  ``π(x)_i = σ(x_{τ(i)})`` and leaves feedback unchanged: ``f(π g, π s) = f(g, s)``. If ``π``
  fixes every earlier guess, it maps the remaining secrets ``R`` onto themselves, so guessing
  ``g`` or ``π(g)`` at ``R`` leads to isomorphic sub-problems with the same value. A guess is
  **canonical** when no kept ``π`` maps it to a smaller code index; every other guess is
  equivalent to a canonical one and the estimator masks it (``q̂1 = -inf``, "never needed"),
  so the search spreads its slots over genuinely different guesses. (Equal estimates do not
  make guesses equivalent — in Mastermind 4×6 after ``1123 → b1w0`` the guesses fall into 125
  classes by the sizes of their feedback parts but 128 by the labelled feedback counts, which
  equivalent guesses share — so merging ties would be unsound.) Any subset of the
  fixing permutations is sound — the smallest code of each orbit stays canonical — so a
  state keeps at most :data:`MAX_SYMMETRIES` of them; before the first guess the whole group
  applies (the canonical first guesses are :func:`openings`').

  Attributes:
    colour_perms: ``i32[E, C]``, ``σ`` of every group element (``E = C! P!``).
    peg_perms: ``i32[E, P]``, ``τ``.
    digits: ``i32[N, P]``, :func:`code_digits`.
    stabiliser: ``i32[N, M]``, ids of (up to ``M``) elements fixing each code, ``-1`` padded.
    canonical_at_start: ``bool[N]``, the smallest code of each orbit of the whole group.
  """

  colours: int
  colour_perms: np.ndarray
  peg_perms: np.ndarray
  digits: np.ndarray
  stabiliser: np.ndarray
  canonical_at_start: np.ndarray

  @classmethod
  def build(cls, pegs: int, colours: int, max_kept: int = MAX_SYMMETRIES) -> "Symmetry":
    colour_perms = np.asarray(list(itertools.permutations(range(colours))), np.int32)
    peg_perms = np.asarray(list(itertools.permutations(range(pegs))), np.int32)
    num_codes = colours ** pegs
    digits = code_digits(pegs, colours)
    powers = colours ** np.arange(pegs - 1, -1, -1)
    stabiliser = np.full((num_codes, max_kept), -1, np.int32)
    kept = np.zeros((num_codes,), np.int32)
    smallest = np.arange(num_codes)
    codes = np.arange(num_codes)
    for p, peg_perm in enumerate(peg_perms):
      moved = colour_perms[:, digits[:, peg_perm]]  # [C!, N, P]
      images = moved @ powers  # [C!, N]
      smallest = np.minimum(smallest, images.min(axis=0))
      for c, code in zip(*np.nonzero(images == codes[None, :])):
        if kept[code] < max_kept:
          stabiliser[code, kept[code]] = p * len(colour_perms) + c
          kept[code] += 1
    ids = np.arange(len(peg_perms) * len(colour_perms))
    return cls(colours=colours, colour_perms=colour_perms[ids % len(colour_perms)],
               peg_perms=peg_perms[ids // len(colour_perms)], digits=digits,
               stabiliser=stabiliser, canonical_at_start=smallest == codes)

  def images(self, ids: jax.Array, codes: jax.Array) -> jax.Array:
    """``i32[M, K]``: code indices ``π_m(codes_k)`` (``ids`` ``i32[M]``, clipped to valid)."""
    safe = jnp.maximum(ids, 0)
    sigma = jnp.asarray(self.colour_perms)[safe]  # [M, C]
    tau = jnp.asarray(self.peg_perms)[safe]  # [M, P]
    digits = jnp.asarray(self.digits)[codes]  # [K, P]
    moved = digits[:, tau]  # [K, M, P]: digit tau_m(i) of code k
    moved = jnp.take_along_axis(sigma[None], moved, axis=2)  # σ_m of it
    pegs = self.digits.shape[1]
    powers = jnp.asarray(self.colours ** np.arange(pegs - 1, -1, -1), jnp.int32)
    return jnp.swapaxes(jnp.sum(moved * powers, axis=-1), 0, 1)

  def start(self) -> jax.Array:
    return jnp.full((self.stabiliser.shape[1],), -1, jnp.int32).at[0].set(AT_START)

  def after(self, symmetries: jax.Array, guess: jax.Array) -> jax.Array:
    """The kept permutations that also fix ``guess`` (``i32[M]``, compacted)."""
    guess = jnp.asarray(guess, jnp.int32)
    fixes = (symmetries >= 0) & (self.images(symmetries, guess[None])[:, 0] == guess)
    order = jnp.argsort(~fixes, stable=True)
    later = jnp.where(fixes[order], symmetries[order], -1)
    return jnp.where(symmetries[0] == AT_START, jnp.asarray(self.stabiliser)[guess], later)

  def redundant(self, symmetries: jax.Array, block: int = 1) -> jax.Array:
    """``bool[N]``: guesses some kept permutation maps to a smaller code (not canonical).

    A loop over the kept permutations only (they are compacted first), ``block`` (static) of
    them a trip: deep in a search most states keep one or two, so this costs ``O(N)`` there
    rather than ``O(M N)``. Under ``vmap`` the loop runs as many trips as the state with the
    most kept permutations needs; a larger ``block`` trades fewer trips (each one a round
    trip to the host on an accelerator) for ``block`` times the work a trip.
    """
    codes = jnp.arange(self.digits.shape[0], dtype=jnp.int32)
    count = jnp.sum(symmetries >= 0)
    padded = jnp.concatenate([symmetries,
                              jnp.full((-symmetries.shape[0] % block,), -1, jnp.int32)])

    def smaller(trip, found):
      ids = jax.lax.dynamic_slice_in_dim(padded, trip * block, block)
      # One permutation at a time within the trip (unrolled): XLA turns each into a cheap
      # elementwise pass over the codes, where a [block, N] image is a gather of N·block·P.
      for index in range(block):
        found = found | ((self.images(ids[index][None], codes)[0] < codes) & (ids[index] >= 0))
      return found

    found = jax.lax.fori_loop(0, (count + block - 1) // block, smaller,
                              jnp.zeros(codes.shape, bool))
    return jnp.where(symmetries[0] == AT_START, ~jnp.asarray(self.canonical_at_start), found)



def with_symmetry(game: Game, estimator: Estimator, symmetry: Symmetry):
  """``game`` whose states carry :class:`Symmetry`'s kept permutations, and ``estimator``
  masking the redundant guesses."""
  init, step = game.init, game.step

  def init_with(key):
    return init(key).replace(symmetries=symmetry.start())

  def step_with(state, action, outcome):
    result = step(state.replace(symmetries=None), action, outcome)
    return result.replace(state=result.state.replace(
        symmetries=symmetry.after(state.symmetries, action)))

  def estimate(params, key, states) -> Estimate:
    out = estimator(params, key, states.replace(symmetries=None))
    redundant = (jax.vmap(lambda kept: symmetry.redundant(kept, BATCHED_BLOCK))(
        states.symmetries) if all_states_at_once()
                 else jax.lax.map(symmetry.redundant, states.symmetries))
    return out.replace(action_values=jnp.where(redundant, -jnp.inf, out.action_values))

  return dataclasses.replace(game, init=init_with, step=step_with), estimate
