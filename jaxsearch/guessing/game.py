"""Guessing games: find a secret from the feedback to each guess, with exact chance.

Any "guess the secret" problem given by a feedback table (the code of the feedback of guess
``g`` for secret ``s``, stored secret-major as ``by_secret: u8[S, G]``) becomes a
:class:`jaxsearch.game.Game` (:func:`guessing_game`) with pessimistic / optimistic bounds.
Mastermind (:mod:`games.mastermind`) and Wordle (:mod:`games.wordle`) are two such tables; the
entropic estimator is in :mod:`games.guessing_estimator`, the exact integer bounds and search
behind certificates in :mod:`games.guessing_exact`.

**State.** The set of secrets still consistent with the feedback so far, as a packed bitset
``u32[W]`` (``W = ceil(S / 32)``; secret ``s`` is bit ``s % 32`` of word ``s // 32``; unused
high bits are 0), plus ``solved: bool[]``. The initial state holds every secret; a state is
terminal when solved. All guesses are legal at every non-terminal state (all ``False`` at
terminal states).

**Chance.** ``outcome_probs(state, g)[c]`` = fraction of the remaining secrets whose feedback
to ``g`` is ``c`` (zero where none; all zeros for an empty set, which no positive-probability
path reaches). ``step(state, g, c)`` keeps the remaining secrets whose feedback to ``g`` is
``c``, pays ``reward = -1``, and ends the game when ``c`` is the all-correct code. Following
:mod:`jaxsearch.game`'s single-agent convention ``discount`` is ``1`` on a move that does not
end the game and ``0`` on the one that does (terminal values are 0, so either choice gives the
same returns). Stepping a solved state is a no-op with ``reward = 0`` and ``discount = 0``.

**Bounds**, with ``n`` the number of remaining secrets:

* ``pessimistic_value = -(n + 1) / 2``, the exact value of the policy "guess the remaining
  candidates one by one in index order, ignoring feedback" (the ``k``-th candidate is found
  at guess ``k``).
* ``optimistic_value = -T(n) / n``, the *counting bound*. Let ``F`` be the number of feedback
  codes other than the all-correct one that occur in the table (:func:`feedback_branching`).
  Under any deterministic policy the ``k``-th guess is a function of the ``k - 1`` earlier
  feedbacks, none of them all-correct, so it takes at most ``F**(k-1)`` distinct values over
  the secrets, and each value solves at most the one secret equal to it: at most
  ``F**(k-1)`` secrets are solved at guess ``k``. Filling the levels ``1, F, F**2, ...`` in
  order (:func:`counting_bound_levels`) gives the least total ``T(n)`` compatible with those
  caps (moving a secret to an earlier free slot only lowers the total), so every
  deterministic policy needs at least ``T(n)`` guesses in total and a randomised one (a
  mixture) at least as many on average: ``-T(n) / n`` is never below the optimal value. As
  every level holds at least one secret, ``T(n) <= n (n + 1) / 2``, so pessimistic <=
  optimistic.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch.game import Game, StepResult

# ---------------------------------------------------------------------------------------------
# Packed bitsets over secrets.


@struct.dataclass
class State:
  """One state of a guessing game (unbatched; batched states have a leading ``[B]``).

  Attributes:
    remaining: ``u32[W]``, the secrets consistent with the feedback so far, as a bitset
      (secret ``s`` is bit ``s % 32`` of word ``s // 32``; bits past ``S`` are 0).
    solved: ``bool[]``, the last feedback was all-correct (terminal).
    symmetries: Mastermind with ``symmetry=True`` only (else ``None``): ``i32[M]``, ids of
      colour-and-peg permutations that fix every guess made so far
      (:class:`games.mastermind_symmetry.Symmetry`), ``-1`` padded; ``[AT_START, -1, ...]`` before the
      first guess (the whole group).
  """

  remaining: jax.Array
  solved: jax.Array
  symmetries: Optional[jax.Array] = None


def num_words(num_secrets: int) -> int:
  """``W = ceil(num_secrets / 32)``, the length of a bitset over ``num_secrets`` secrets."""
  return (int(num_secrets) + 31) // 32


def mask_to_bits(mask: jax.Array) -> jax.Array:
  """Packs ``bool[..., S]`` into ``u32[..., W]`` (bit ``s % 32`` of word ``s // 32``)."""
  mask = jnp.asarray(mask, bool)
  size = mask.shape[-1]
  words = num_words(size)
  pad = [(0, 0)] * (mask.ndim - 1) + [(0, words * 32 - size)]
  bits = jnp.pad(mask, pad).reshape(mask.shape[:-1] + (words, 32)).astype(jnp.uint32)
  # The 32 shifted bits are distinct, so their sum is their bitwise or.
  return jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)


def bits_to_mask(bits: jax.Array, num_secrets: int) -> jax.Array:
  """Unpacks ``u32[..., W]`` into ``bool[..., num_secrets]``."""
  bits = jnp.asarray(bits, jnp.uint32)
  flat = (bits[..., :, None] >> jnp.arange(32, dtype=jnp.uint32)) & jnp.uint32(1)
  return flat.reshape(bits.shape[:-1] + (bits.shape[-1] * 32,))[..., :num_secrets].astype(bool)


def popcount(bits: jax.Array) -> jax.Array:
  """``i32[...]``: number of set bits of ``u32[..., W]`` (= number of remaining secrets)."""
  return jnp.sum(jax.lax.population_count(jnp.asarray(bits, jnp.uint32)).astype(jnp.int32),
                 axis=-1)


# ---------------------------------------------------------------------------------------------
# Bounds.


def counting_bound_levels(num_secrets: int, branching: int) -> np.ndarray:
  """``int64[L]``: how many secrets at most are solved by the 1st, 2nd, ... guess.

  Level ``k`` (0-based) holds ``branching**k`` secrets, ``L`` levels hold ``num_secrets``.
  """
  branching = max(int(branching), 1)
  target = max(int(num_secrets), 1)
  caps, total = [], 0
  while total < target:
    cap = min(branching ** len(caps), target)  # Python ints: no overflow
    caps.append(cap)
    total += cap
  return np.asarray(caps, np.int64)


def counting_bound_starts(caps: np.ndarray) -> np.ndarray:
  """``int64[L]``: secrets on the levels before each of :func:`counting_bound_levels`."""
  return np.concatenate([[0], np.cumsum(caps)[:-1]]).astype(np.int64)


def counting_bound_total(n: int, branching: int) -> int:
  """Plain-Python counting bound: the least possible total number of guesses over ``n``
  equally likely secrets when each guess's feedback takes one of ``branching`` values besides
  all-correct (the module's **Bounds**)."""
  total, left = 0, int(n)
  for k, cap in enumerate(counting_bound_levels(n, branching).tolist()):
    take = min(cap, left)
    total += (k + 1) * take
    left -= take
  return total


def feedback_branching(by_secret, num_outcomes: int, solved_code: int) -> int:
  """``F``: how many feedback codes other than ``solved_code`` occur in the table (the
  branching of the counting bound, see the module's **Bounds**)."""
  return len(_codes_present(by_secret, num_outcomes) - {int(solved_code)})


def _codes_present(table, num_outcomes: int) -> set[int]:
  """The feedback codes that occur in ``table`` (numpy, in row chunks: ~0.1 s for 47 M)."""
  table = np.asarray(table)
  seen = np.zeros((max(num_outcomes, 256),), bool)
  step = max(1, (1 << 22) // max(table.shape[1], 1))
  for lo in range(0, table.shape[0], step):
    seen |= np.bincount(table[lo:lo + step].reshape(-1), minlength=seen.size) > 0
  return set(np.flatnonzero(seen).tolist())


# ---------------------------------------------------------------------------------------------
# The generic guessing game.
#
# Both the game and the estimator take the feedback table *secret-major*, ``by_secret[s, g]``
# (``u8[S, G]``): a remaining secret's feedbacks to every guess are one contiguous row, which
# makes compacting a small remaining set a cheap row gather. Pass the *same* array to both, so
# that a program using both (a search) embeds one constant.


def guessing_game(name: str, by_secret, num_outcomes: int, solved_code: int,
                  value_range: tuple[float, float] = (-6.0, 0.0),
                  max_length: Optional[int] = None, branching: Optional[int] = None) -> Game:
  """A "guess the secret" problem as a :class:`jaxsearch.game.Game` over :class:`State`.

  Args:
    name: the game's name.
    by_secret: ``u8[S, G]``, feedback code of guess ``g`` for secret ``s``, in
      ``[0, num_outcomes)``; the code is ``solved_code`` exactly when ``g`` is ``s``.
    num_outcomes: ``O <= 256``, number of feedback codes.
    solved_code: the all-correct code.
    value_range: ``(lo, hi)`` scale of values for range-normalised selection rules
      (docs/algorithms.md uses ``(-6, 0)`` for Wordle). Not a hard bound: bad policies do worse.
    max_length: the game's ``max_length`` (default ``None``: a policy may guess forever).
    branching: ``F`` of the counting bound (:func:`feedback_branching`); ``None`` reads it
      off the table, which must then be concrete. Given, ``by_secret`` may be a tracer: build
      the game inside a jitted function from a table passed as an argument, and the compiled
      program takes the table as an input instead of embedding it as a constant.

  Returns:
    The game (``num_actions = G``) with the module's **Bounds**: ``pessimistic_value =
    -(n + 1) / 2`` and ``optimistic_value = -T(n) / n`` for ``n`` remaining secrets, both 0
    at terminal states and at (unreachable) empty sets.
  """
  by_secret = jnp.asarray(by_secret, jnp.uint8)
  num_secrets, num_guesses = by_secret.shape
  if not 0 <= solved_code < num_outcomes <= 256:
    raise ValueError(f"guessing_game {name!r}: need 0 <= solved_code ({solved_code}) < "
                     f"num_outcomes ({num_outcomes}) <= 256")
  with jax.ensure_compile_time_eval():  # a constant even when called under a trace
    all_bits = np.asarray(mask_to_bits(np.ones((num_secrets,), bool)))
  if branching is None:
    branching = feedback_branching(by_secret, num_outcomes, solved_code)

  def init(key):
    del key
    return State(remaining=jnp.asarray(all_bits, jnp.uint32), solved=jnp.bool_(False))

  def legal_actions(state):
    return jnp.broadcast_to(~state.solved, (num_guesses,))

  step, outcome_probs = _feedback_chance(by_secret, num_outcomes, solved_code)
  pessimistic_value, optimistic_value = _value_bounds(num_secrets, branching)
  return Game(name=name, num_actions=num_guesses, init=init, legal_actions=legal_actions,
              step=step, num_outcomes=num_outcomes, outcome_probs=outcome_probs,
              max_length=max_length, value_range=value_range,
              pessimistic_value=pessimistic_value, optimistic_value=optimistic_value)


def _feedback_chance(by_secret: jax.Array, num_outcomes: int, solved_code: int):
  """``(step, outcome_probs)`` of :func:`guessing_game` over the table ``u8[S, G]``."""
  num_secrets = by_secret.shape[0]

  def step(state, action, outcome):
    action = jnp.asarray(action, jnp.int32)
    outcome = jnp.asarray(outcome, jnp.int32)
    keep = mask_to_bits(by_secret[:, action].astype(jnp.int32) == outcome)
    done = state.solved
    solved = done | (outcome == solved_code)
    remaining = jnp.where(done, state.remaining, state.remaining & keep)
    return StepResult(state=State(remaining=remaining.astype(jnp.uint32), solved=solved),
                      reward=jnp.where(done, 0.0, -1.0).astype(jnp.float32),
                      discount=jnp.where(solved, 0.0, 1.0).astype(jnp.float32),
                      terminal=solved)

  def outcome_probs(state, action):
    mask = bits_to_mask(state.remaining, num_secrets).astype(jnp.float32)
    codes = by_secret[:, jnp.asarray(action, jnp.int32)].astype(jnp.int32)
    counts = jax.ops.segment_sum(mask, codes, num_segments=num_outcomes)
    return counts / jnp.maximum(jnp.sum(mask), 1.0)

  return step, outcome_probs


def _value_bounds(num_secrets: int, branching: int):
  """``(pessimistic_value, optimistic_value)`` of :func:`guessing_game` (the module's
  **Bounds**), for ``num_secrets`` secrets and feedback branching ``F = branching``."""
  caps = counting_bound_levels(num_secrets, branching)
  caps_before = counting_bound_starts(caps)

  def pessimistic_value(state):
    n = popcount(state.remaining).astype(jnp.float32)
    return jnp.where(state.solved | (n == 0), 0.0, -(n + 1.0) / 2.0).astype(jnp.float32)

  def optimistic_value(state):
    n = popcount(state.remaining).astype(jnp.float32)
    take = jnp.clip(n - jnp.asarray(caps_before, jnp.float32), 0.0,
                    jnp.asarray(caps, jnp.float32))
    total = jnp.sum(take * jnp.arange(1, len(caps) + 1, dtype=jnp.float32))
    return jnp.where(state.solved | (n == 0), 0.0,
                     -total / jnp.maximum(n, 1.0)).astype(jnp.float32)

  return pessimistic_value, optimistic_value
