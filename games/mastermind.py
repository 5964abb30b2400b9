"""Mastermind as a single-agent guessing game with exact chance over feedbacks.

A secret code of ``P`` pegs, each one of ``C`` colours, is drawn uniformly; every guess is a
code and costs one move; the feedback is the pair ``(b, w)`` = (pegs right in colour and
place, pegs right in colour only). The game ends when the feedback is ``(P, 0)``. The value of
a state is minus the expected number of guesses still needed, so at the root
``-value * num_codes`` is the total number of guesses over all secrets (4 pegs x 6 colours:
optimum 5625, Koyama & Lai 1993).

    m = mastermind.make(pegs=4, colours=6)
    roots = jax.vmap(m.game.init)(keys)
    search = js.policies.puct(m.game, m.estimator, num_simulations=64)

This module also holds the machinery shared with :mod:`games.wordle`: any "guess the secret"
problem given by a feedback table (the code of the feedback of guess ``g`` for secret ``s``,
stored secret-major as ``by_secret: u8[S, G]``) becomes a :class:`jaxsearch.game.Game`
(:func:`guessing_game`) with pessimistic / optimistic bounds and the entropic estimator of
ALGORITHMS.md §2 (:func:`entropic_estimator`).

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

**Mastermind encodings.** Code index ``i`` in ``[0, C**P)`` is the base-``C`` number of the
code's pegs, first peg most significant, colours written ``1..C``: with ``P = 4, C = 6``,
index 0 is ``"1111"``, index 1 is ``"1112"``, index 1295 is ``"6666"``. Feedback ``(b, w)`` is
written ``"b<b>w<w>"`` (``"b1w2"``); its index is its position in :func:`feedback_keys`: all
pairs with ``b + w <= P`` except the impossible ``(P - 1, 1)``, by ``b`` then ``w`` ascending,
so the all-correct ``(P, 0)`` is last (``14`` codes for ``P = 4``; some are unreachable for
few colours, e.g. ``(0, 1)`` with ``P = C = 2``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsearch import policy_file
from jaxsearch.game import Estimate, Estimator, Game, StepResult

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
      colour-and-peg permutations that fix every guess made so far (:class:`Symmetry`),
      ``-1`` padded; ``[AT_START, -1, ...]`` before the first guess (the whole group).
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
  all-correct (see :func:`guessing_game`'s ``optimistic_value``)."""
  total, left = 0, int(n)
  for k, cap in enumerate(counting_bound_levels(n, branching).tolist()):
    take = min(cap, left)
    total += (k + 1) * take
    left -= take
  return total


def feedback_branching(by_secret, num_outcomes: int, solved_code: int) -> int:
  """``F``: how many feedback codes other than ``solved_code`` occur in the table (the
  branching of the counting bound, see :func:`guessing_game`)."""
  return len(_codes_present(by_secret, num_outcomes) - {int(solved_code)})


def feedback_parts(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """How every guess splits a set of secrets, from its feedback rows (numpy).

  Args:
    rows: ``u8[n, G]``, the feedback code of each guess (column) for each secret (row).
  Returns:
    ``(codes, sizes)``, both ``[n, G]``: the column's codes sorted, and at the last row of
    each run of equal codes (one feedback part) the part's size, 0 on the other rows — so
    ``sizes.sum(0) == n`` and the non-zero entries of a column are its part sizes. One sort
    of ``n × G`` codes: cheap for the small sets of a deep tree, where a histogram over all
    ``O`` codes of every guess would cost ``O × G``.
  """
  codes = np.sort(rows, axis=0)
  n = codes.shape[0]
  first = np.ones(codes.shape, bool)
  first[1:] = codes[1:] != codes[:-1]
  last = np.ones(codes.shape, bool)
  last[:-1] = first[1:]
  index = np.arange(n)[:, None]
  start = np.maximum.accumulate(np.where(first, index, 0), axis=0)
  return codes, np.where(last, index - start + 1, 0)


def greedy_guess(table: np.ndarray, guess_of_secret: np.ndarray, secrets: np.ndarray) -> int:
  """The entropic estimator's best guess for the remaining ``secrets`` (indices), in numpy:
  what a search tries first, and the policy that completes an exported one below the
  searched nodes. With one or two candidates, the first candidate (optimal).

  Args:
    table: ``u8[S, G]`` feedback of guess ``g`` for secret ``s``.
    guess_of_secret: ``int[S]``, the action that guesses each secret.
    secrets: ``int[n]``, ``n >= 1``.
  """
  if len(secrets) <= 2:
    return int(guess_of_secret[secrets[0]])
  n = len(secrets)
  _, sizes = feedback_parts(table[secrets])  # [n, G], one size per part
  p = sizes / n
  entropy = -np.sum(np.where(sizes > 0, p * np.log2(np.where(sizes > 0, p, 1.0)), 0.0),
                    axis=0)
  p_solve = np.zeros(sizes.shape[1])
  p_solve[guess_of_secret[secrets]] = 1.0 / n
  expected = np.where(entropy > 0, np.log2(n) / np.maximum(entropy, 1e-30) + 1.0, np.inf)
  cost = np.where(p_solve > 0, p_solve + (1 - p_solve) * expected, expected)
  return int(np.argmin(cost))


# The exact search behind certificates (:class:`games.guessing_exact.ExactSolver`) settles
# nodes of at most this many secrets, sorting at most this many feedback codes per question
# (a few seconds).
EXACT_MAX_SECRETS = 512
EXACT_MAX_WORK = 500_000_000
RADIX_SORT_FROM = 24  # secrets per node from which action_totals sorts by radix
PAIRWISE_UP_TO = 40  # secrets per node up to which it compares feedback rows pairwise instead


@dataclasses.dataclass(frozen=True, eq=False)
class ExactBounds:
  """The guessing game's admissible bounds in exact integers, on the host (numpy): what a
  certificate of optimality is checked with (:func:`jaxsearch.solve.certify`), so that
  "proven" never rests on float sums.

  Totals are numbers of guesses summed over a node's ``n`` remaining secrets:

  * :meth:`node_total` — ``T(n)``, the counting bound (see :func:`guessing_game`);
  * :meth:`action_totals` — for every guess ``g``: ``n + Σ_b T(|P_b|)`` over the feedback
    parts ``P_b`` it leaves unsolved (every secret pays for ``g``; each part then needs at
    least its counting bound). No policy starting with ``g`` needs fewer in total.

  Attributes:
    table: ``u8[S, G]`` feedback table, secret-major.
    solved_code: the all-correct code.
    caps, starts: the counting bound's levels (:func:`counting_bound_levels`,
      :func:`counting_bound_starts`).
    redundant: ``state -> bool[G]`` guesses equivalent to another one at that state (a
      symmetry), or ``None``: their totals equal their representatives', so a minimum over
      the others is the minimum over all.
    search_secrets: the exact search (:meth:`guess_at_least`, :meth:`optimum_within`)
      settles sets of at most this many secrets; 0 turns it off.
    guess_of_secret: ``int[S]`` the guess that names each secret, or ``None``: lets the
      exact search settle a set outright when one of its own secrets, guessed, tells all
      the others apart (``2n - 1`` guesses, the least possible).
  """

  table: np.ndarray
  solved_code: int
  caps: np.ndarray
  starts: np.ndarray
  redundant: Optional[Callable[[State], np.ndarray]] = None
  search_secrets: int = EXACT_MAX_SECRETS
  guess_of_secret: Optional[np.ndarray] = None

  def without_search(self) -> "ExactBounds":
    """The same bounds with the exact search of small sets off: certificates then rest on
    the search tree alone (what tests of the tree's proofs need)."""
    return dataclasses.replace(self, search_secrets=0)

  @classmethod
  def build(cls, table, num_outcomes: int, solved_code: int,
            branching: Optional[int] = None, redundant=None,
            guess_of_secret=None) -> "ExactBounds":
    table = np.asarray(table, np.uint8)
    if branching is None:
      branching = feedback_branching(table, num_outcomes, solved_code)
    caps = counting_bound_levels(table.shape[0], branching)
    return cls(table=table, solved_code=int(solved_code), caps=caps,
               starts=counting_bound_starts(caps), redundant=redundant,
               guess_of_secret=None if guess_of_secret is None else np.asarray(guess_of_secret))

  def counting_total(self, sizes) -> np.ndarray:
    """``int64[...]``: ``T(h)`` of every entry of ``sizes`` (integers)."""
    sizes = np.asarray(sizes, np.int64)
    total = np.zeros(sizes.shape, np.int64)
    for level, (cap, start) in enumerate(zip(self.caps.tolist(), self.starts.tolist())):
      total += (level + 1) * np.clip(sizes - start, 0, cap)
    return total

  @functools.cached_property
  def _node_totals(self) -> np.ndarray:
    """``int64[S + 1]``: ``T(n)`` for every ``n`` (looked up: certificates ask millions)."""
    return self.counting_total(np.arange(self.table.shape[0] + 1))

  def node_total(self, n: int) -> int:
    """``T(n)``: no policy finds ``n`` secrets in fewer guesses in total."""
    return int(self._node_totals[n])

  @functools.cached_property
  def _solver(self):
    from games.guessing_exact import ExactSolver
    return ExactSolver(self, max_secrets=self.search_secrets, max_work=EXACT_MAX_WORK)

  def guess_at_least(self, secrets: np.ndarray, guess: int, target: int) -> bool:
    """Whether, exactly, every policy opening with ``guess`` on ``secrets`` needs at least
    ``target`` guesses in total (a bounded depth-first search on small sets,
    :class:`games.guessing_exact.ExactSolver`; False where it cannot tell)."""
    return self._solver.guess_at_least(secrets, guess, target)

  def optimum_within(self, secrets: np.ndarray) -> Optional[int]:
    """The exact optimal total of a small set of secrets, or ``None`` where the bounded
    search cannot tell (:class:`games.guessing_exact.ExactSolver`)."""
    return self._solver.optimum_within(secrets)

  def best_policy(self, secrets: np.ndarray, below: int, deadline: Optional[float] = None):
    """An exactly optimal policy for a set of secrets where one beats ``below``, or the
    proof that none does, or ``None`` where the search cannot tell by ``deadline``
    (:meth:`games.guessing_exact.ExactSolver.best_policy`)."""
    return self._solver.best_policy(secrets, below, deadline)

  def action_totals(self, secrets: np.ndarray, state=None) -> tuple[np.ndarray, np.ndarray]:
    """``(totals int64[G], considered bool[G])`` at the node whose remaining secrets are
    ``secrets`` (``int[n]``, ``n >= 1``).

    ``considered`` is False for guesses that can never be optimal there: non-candidates
    whose feedback is the same for every remaining secret (they cost a guess and teach
    nothing, so ``opt = n + opt`` would follow) and, with ``state``, guesses the game's
    symmetry makes redundant. Cost: one sort of each guess's ``n`` feedbacks, or for small
    sets ``n²/2`` comparisons of feedback rows (:meth:`_small_action_totals`).
    """
    secrets = np.asarray(secrets, np.int64)
    if len(secrets) <= min(self._linear_up_to, PAIRWISE_UP_TO):
      totals, candidate, one_part = self._small_action_totals(secrets)
    else:
      totals, candidate, one_part = self._sorted_action_totals(secrets)
    considered = ~(one_part & ~candidate)  # one part, and not a candidate
    if self.redundant is not None and state is not None:
      considered &= ~np.asarray(self.redundant(state), bool)
    return totals, considered

  @functools.cached_property
  def _linear_up_to(self) -> int:
    """The largest ``m`` with ``T(j) = 2j - 1`` for every ``j <= m`` (one secret found
    first, every other second: the counting bound while a guess can split that many)."""
    sizes = np.arange(1, len(self._node_totals))
    off = np.flatnonzero(self._node_totals[1:] != 2 * sizes - 1)
    return int(off[0]) if len(off) else int(sizes[-1]) if len(sizes) else 0

  def _sorted_action_totals(self, secrets: np.ndarray):
    """``(totals, candidate, one_part)`` per guess, from each guess's feedbacks sorted."""
    # Each guess's feedbacks in one contiguous row, sorted: a part is a run of equal codes.
    codes = np.ascontiguousarray(self.table[secrets].T)  # [G, n]
    # numpy sorts 8-bit keys by radix when asked for a stable sort: linear in ``n``, 7-15x
    # faster than its default from 30 secrets up; below that the default wins.
    codes.sort(axis=1, kind="stable" if codes.shape[1] >= RADIX_SORT_FROM else "quicksort")
    num_guesses, n = codes.shape
    flat = codes.reshape(-1)
    first = np.ones(flat.shape, bool)  # where a part starts (every row starts one)
    first[1:] = flat[1:] != flat[:-1]
    first[::n] = True
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, flat.size))
    guess = starts // n
    solving = flat[starts] == self.solved_code
    totals = n + np.bincount(guess, weights=np.where(solving, 0, self._node_totals[sizes]),
                             minlength=num_guesses).astype(np.int64)
    candidate = np.bincount(guess, weights=solving, minlength=num_guesses) > 0
    one_part = np.bincount(guess, minlength=num_guesses) == 1
    return totals, candidate, one_part

  def _small_action_totals(self, secrets: np.ndarray):
    """The same for a set no larger than :attr:`_linear_up_to`: every part then has
    ``T(|P|) = 2|P| - 1``, so a guess's total is ``n + Σ (2|P| - 1)`` over its unsolved parts
    ``= 3n - candidate - parts``, and only the number of distinct feedbacks matters —
    counted by comparing the feedback rows pairwise, no sort (5-10x faster for small sets)."""
    rows = self.table[secrets]  # [n, G], each row contiguous
    n = len(secrets)
    parts = np.ones(rows.shape[1], np.int64)
    for i in range(1, n):
      seen = rows[i] == rows[0]
      for j in range(1, i):
        seen |= rows[i] == rows[j]
      parts += ~seen
    candidate = np.any(rows == self.solved_code, axis=0)
    return 3 * n - candidate - parts, candidate, parts == 1


# ---------------------------------------------------------------------------------------------
# The generic guessing game.
#
# Both the game and the estimator take the feedback table *secret-major*, ``by_secret[s, g]``
# (``u8[S, G]``): a remaining secret's feedbacks to every guess are one contiguous row, which
# makes compacting a small remaining set a cheap row gather. Pass the *same* array to both, so
# that a program using both (a search) embeds one constant.


def _codes_present(table, num_outcomes: int) -> set[int]:
  """The feedback codes that occur in ``table`` (numpy, in row chunks: ~0.1 s for 47 M)."""
  table = np.asarray(table)
  seen = np.zeros((max(num_outcomes, 256),), bool)
  step = max(1, (1 << 22) // max(table.shape[1], 1))
  for lo in range(0, table.shape[0], step):
    seen |= np.bincount(table[lo:lo + step].reshape(-1), minlength=seen.size) > 0
  return set(np.flatnonzero(seen).tolist())


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
      (ALGORITHMS.md uses ``(-6, 0)`` for Wordle). Not a hard bound: bad policies do worse.
    max_length: the game's ``max_length`` (default ``None``: a policy may guess forever).
    branching: ``F`` below (:func:`feedback_branching`); ``None`` reads it off the table,
      which must then be concrete. Given, ``by_secret`` may be a tracer: build the game
      inside a jitted function from a table passed as an argument, and the compiled program
      takes the table as an input instead of embedding it as a constant.

  Returns:
    The game (``num_actions = G``). Its bounds, both 0 at terminal states and at
    (unreachable) empty sets, with ``n`` the number of remaining secrets:

    * ``pessimistic_value = -(n + 1) / 2``, the exact value of the policy "guess the remaining
      candidates one by one in index order, ignoring feedback" (the ``k``-th candidate is
      found at guess ``k``).
    * ``optimistic_value = -T(n) / n``, the *counting bound*. Let ``F`` be the number of
      feedback codes other than ``solved_code`` that occur in the table. Under any
      deterministic policy the ``k``-th guess is a function of the ``k - 1`` earlier
      feedbacks, none of them all-correct, so it takes at most ``F**(k-1)`` distinct values
      over the secrets, and each value solves at most the one secret equal to it: at most
      ``F**(k-1)`` secrets are solved at guess ``k``. Filling the levels ``1, F, F**2, ...``
      in order gives the least total ``T(n)`` compatible with those caps (moving a secret to
      an earlier free slot only lowers the total), so every deterministic policy needs at
      least ``T(n)`` guesses in total and a randomised one (a mixture) at least as many on
      average: ``-T(n) / n`` is never below the optimal value. As every level holds at least
      one secret, ``T(n) <= n (n + 1) / 2``, so pessimistic <= optimistic.
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
  caps = counting_bound_levels(num_secrets, branching)
  caps_before = counting_bound_starts(caps)

  def init(key):
    del key
    return State(remaining=jnp.asarray(all_bits, jnp.uint32), solved=jnp.bool_(False))

  def legal_actions(state):
    return jnp.broadcast_to(~state.solved, (num_guesses,))

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

  return Game(name=name, num_actions=num_guesses, init=init, legal_actions=legal_actions,
              step=step, num_outcomes=num_outcomes, outcome_probs=outcome_probs,
              max_length=max_length, value_range=value_range,
              pessimistic_value=pessimistic_value, optimistic_value=optimistic_value)


# ---------------------------------------------------------------------------------------------
# The entropic estimator.

DEFAULT_TIERS = (16, 32, 64, 128, 256, 512, 1024, 2048)
# Mastermind's search nodes are mostly tiny (median 2 secrets after 1123): three more tiers
# make its estimator ~20 % faster. Wordle keeps DEFAULT_TIERS (each tier is one more compiled
# branch embedding its 47 MB table; the gain there was not measured).
MASTERMIND_TIERS = (2, 4, 8) + DEFAULT_TIERS
DEFAULT_GUESS_CHUNK = 128
PAIRWISE_MAX = 16  # compacted sets up to this size count matches pairwise, without a scatter


def _pairwise_stats(codes: jax.Array, weights: jax.Array, n: jax.Array,
                    bound_levels: Optional[tuple] = None):
  """Entropy statistics of the columns of ``codes`` by pairwise comparison (small ``K``).

  Args:
    codes: ``u8[K, c]``, feedback of ``c`` guesses (columns) for ``K`` secret slots.
    weights: ``f32[K]``, 1 for a slot holding a remaining secret, 0 for padding.
    n: ``f32[]``, the number of remaining secrets (``Σ weights``).
    bound_levels: ``(caps, caps_before)`` of the counting bound (:func:`_counting_total`);
      ``None``: no bounds.

  Returns:
    ``(info f32[c], top f32[c], parts f32[c])`` over each guess's histogram ``h`` of
    weighted feedbacks: ``info = n H ln 2 = Σ_b h_b ln(n / h_b)`` (each term computed as
    ``h_b log1p((n - h_b) / h_b)``: no cancellation, so small entropies keep their relative
    precision), ``top = max_b h_b`` and ``parts = Σ_b T(h_b)`` (zeros without levels).
  """
  # at[k, g] = h_g(code of slot k) = Σ_j w_j [code_j = code_k]; a Python loop over j keeps
  # the temporaries at [K, c] (a [K, K, c] comparison is much slower on CPU).
  at = sum(jnp.where(codes == codes[j][None, :], weights[j], 0.0)
           for j in range(codes.shape[0]))
  at = jnp.maximum(at, 1.0)
  info = jnp.sum(weights[:, None] * jnp.log1p((n - at) / at), axis=0)
  return (info, jnp.max(weights[:, None] * at, axis=0),
          _slot_parts(at, weights[:, None], bound_levels, axis=0))


def _counting_total(h: jax.Array, bound_levels: tuple) -> jax.Array:
  """:func:`counting_bound_total` of ``h`` secrets, elementwise (``f32``): the levels'
  closed form, a few fused clips (a table gather is several times slower on CPU)."""
  caps, before = bound_levels
  return sum((level + 1) * jnp.clip(h - float(start), 0.0, float(cap))
             for level, (cap, start) in enumerate(zip(caps, before)))


def _slot_parts(at, weights, bound_levels, axis):
  """``Σ_b T(h_b)`` as ``Σ_k w_k T(h_k) / h_k`` over the secret slots (``axis`` of ``at``)."""
  if bound_levels is None:
    return jnp.zeros((at.shape[1 - axis],), jnp.float32)
  return jnp.sum(weights * _counting_total(at, bound_levels) / at, axis=axis)


def _scatter_stats(codes: jax.Array, weights: jax.Array, n: jax.Array, num_outcomes: int,
                   bound_levels: Optional[tuple] = None):
  """Like :func:`_pairwise_stats`, by ``segment_sum`` into a ``[c, O]`` histogram."""
  size, width = codes.shape
  codes = codes.astype(jnp.int32)
  flat = codes + (jnp.arange(width, dtype=jnp.int32) * num_outcomes)[None, :]
  hist = jax.ops.segment_sum(jnp.broadcast_to(weights[:, None], codes.shape).reshape(-1),
                             flat.reshape(-1), num_segments=width * num_outcomes)
  hist = hist.reshape(width, num_outcomes)
  if size > num_outcomes:  # fewer bins than slots: sum over the bins
    safe = jnp.maximum(hist, 1.0)
    info = jnp.sum(jnp.where(hist > 0, hist * jnp.log1p((n - safe) / safe), 0.0), axis=-1)
    parts = (jnp.zeros((width,), jnp.float32) if bound_levels is None else
             jnp.sum(_counting_total(hist, bound_levels), axis=-1))
    return info, jnp.max(hist, axis=-1), parts
  # Σ_b h_b ln(n / h_b) = Σ_k w_k ln(n / h(code of slot k)): K logs per guess instead of O.
  at = jnp.maximum(jnp.take_along_axis(hist, codes.T, axis=1), 1.0)  # [c, K]
  info = jnp.sum(weights[None, :] * jnp.log1p((n - at) / at), axis=-1)
  return (info, jnp.max(weights[None, :] * at, axis=-1),
          _slot_parts(at, weights[None, :], bound_levels, axis=1))


def entropic_estimator(by_secret, secret_of_guess, num_outcomes: int,
                       tiers: Sequence[int] = DEFAULT_TIERS,
                       guess_chunk: int = DEFAULT_GUESS_CHUNK,
                       branching: Optional[int] = None) -> Estimator:
  """The entropic estimator q̂1 of ALGORITHMS.md §2, batched: ``(params, key, states[B])``.

  For a state with remaining set ``R`` (``n = |R|``) and guess ``g``: ``p(c)`` the histogram
  of ``g``'s feedbacks over ``R``, ``H = -Σ p log2 p``, ``expected = log2(n) / H + 1``,
  ``p_sol = 1/n`` if ``g ∈ R`` else 0, ``estimate = p_sol + (1 - p_sol) * expected`` and
  ``q̂1 = -estimate``. Guesses with ``H = 0`` (every remaining secret gives the same
  feedback) that are not candidates teach nothing: ``q̂1 = -inf`` (masked). With ``n = 1``
  the candidate gets ``-1`` and every other guess ``-inf`` (it has ``H = 0``). ``value`` is
  the best finite ``q̂1``; solved states (and empty sets) get ``value = 0`` and
  ``action_values = -inf``. ``H`` is computed in float32 from integer counts ``h`` as
  ``Σ_b h_b log1p((n - h_b) / h_b) / (n ln 2)``, a sum of non-negative terms, so even a
  small ``H`` (a large estimate) keeps a relative error of a few ulps (estimates agree with
  a float64 reference to ~1e-6 relative).

  Cost and memory. States are processed one after the other (``lax.map``), each by the
  cheapest of a few compiled variants (``lax.switch`` on ``n``): a state with ``n <= K``
  for a tier ``K`` in ``tiers`` first compacts its remaining secrets into ``K`` slots
  (``jnp.nonzero(size=K)``, then a row gather of ``by_secret``), so its histograms cost
  ``O(G * K)`` instead of ``O(G * S)``; larger sets use the whole table. Histograms are
  pairwise comparisons for ``K <= 16`` and otherwise ``segment_sum`` scatters over chunks of
  ``guess_chunk`` guesses (a ``[guess_chunk, O]`` histogram stays in cache; 128 was fastest
  on CPU). Working memory, independent of ``B``: the compacted rows ``u8[K, G]`` (at most
  ``2048 x G`` bytes) plus ``O(K * guess_chunk + G)`` words; XLA reports 31 MB of
  temporaries for Wordle at ``B = 1`` and ``B = 256`` alike (plus the ``f32[B, G]`` output).
  Wordle 3158 / 14855 on 2 CPU cores: ~0.1 s for the full set, ~1.3 ms for ``n <= 16``
  (figures in :mod:`games.wordle`). Under an outer ``jax.vmap``
  the ``switch`` becomes a ``select`` that runs every variant (correct, slower).

  Args:
    by_secret: ``u8[S, G]`` feedback table, secret-major. A concrete array is closed over as
      a constant, which XLA embeds in each compiled program (~2 s per compile and several GB
      of compile-time memory for Wordle's 47 MB); a tracer (the estimator built inside a
      jitted function from a table passed as an argument, see :attr:`Mastermind.bind`) keeps
      it an input of the program.
    secret_of_guess: ``int[G]``, the secret each guess is, or ``-1``.
    num_outcomes: ``O``.
    tiers: compaction sizes (those ``>= S`` are dropped; the whole table is always a tier).
    guess_chunk: guesses per histogram chunk.
    branching: ``F`` of the game's counting bound (:func:`feedback_branching`); given, the
      estimate also carries admissible ``action_bounds``: guess ``g`` costs itself plus, for
      each feedback part ``P_b`` it leaves unsolved, at least ``T(|P_b|)`` more guesses
      (:func:`counting_bound_total`), so no policy starting with ``g`` does better than
      ``-(n + Σ_b T(|P_b|)) / n`` — the one-step lookahead of the game's own counting bound,
      for a few elementwise clips per histogram bin (T in closed form).

  Returns:
    ``(params, key, states) -> Estimate(value f32[B], action_values f32[B, G],
    action_bounds f32[B, G] or None)`` (``prior_logits=None``); ``params`` and ``key`` are
    unused.
  """
  by_secret = jnp.asarray(by_secret, jnp.uint8)
  num_secrets, num_guesses = by_secret.shape
  sog = np.asarray(secret_of_guess, np.int64)
  if sog.shape != (num_guesses,):
    raise ValueError(f"entropic_estimator: secret_of_guess must have shape ({num_guesses},), "
                     f"got {sog.shape}")
  guess_is_secret = jnp.asarray(sog >= 0)
  guess_secret = jnp.asarray(np.where(sog >= 0, sog, 0), jnp.int32)
  sizes = sorted({int(k) for k in tiers if 1 < int(k) < num_secrets} | {num_secrets})
  upper = jnp.asarray([1] + sizes, jnp.int32)  # branch i handles n <= upper[i]
  num_outcomes = int(num_outcomes)
  chunk = max(1, min(num_guesses, int(guess_chunk)))
  bound_levels = None
  if branching is not None:
    caps = counting_bound_levels(num_secrets, branching)
    bound_levels = (caps.tolist(), counting_bound_starts(caps).tolist())

  def trivial(mask):
    # n <= 1: every histogram has at most one bin (T(1) = 1), nothing to count.
    n = jnp.sum(mask, dtype=jnp.int32).astype(jnp.float32)
    return (jnp.zeros((num_guesses,), jnp.float32), jnp.full((num_guesses,), n, jnp.float32),
            jnp.full((num_guesses,), n, jnp.float32))

  def make_branch(size):
    def branch(mask):
      n = jnp.sum(mask, dtype=jnp.int32)
      if size == num_secrets:
        rows, weights = by_secret, mask.astype(jnp.float32)
      else:
        rows = by_secret[jnp.nonzero(mask, size=size, fill_value=0)[0]]  # [K, G]
        weights = (jnp.arange(size) < n).astype(jnp.float32)
      n = n.astype(jnp.float32)
      if size <= PAIRWISE_MAX:
        return _pairwise_stats(rows, weights, n, bound_levels)

      def body(i, carry):
        # The last chunk is shifted back to fit: it recomputes a few guesses, identically.
        start = jnp.minimum(i * chunk, num_guesses - chunk)
        codes = jax.lax.dynamic_slice_in_dim(rows, start, chunk, axis=1)
        part = _scatter_stats(codes, weights, n, num_outcomes, bound_levels)
        return tuple(jax.lax.dynamic_update_slice_in_dim(acc, x, start, axis=0)
                     for acc, x in zip(carry, part))

      init = tuple(jnp.zeros((num_guesses,), jnp.float32) for _ in range(3))
      return jax.lax.fori_loop(0, -(-num_guesses // chunk), body, init)

    return branch

  branches = [trivial] + [make_branch(size) for size in sizes]

  def one(remaining, solved):
    mask = bits_to_mask(remaining, num_secrets)
    n = jnp.sum(mask, dtype=jnp.int32)
    which = jnp.searchsorted(upper, n, side="left")
    info, top, parts = jax.lax.switch(which, branches, mask)
    nf = jnp.maximum(n.astype(jnp.float32), 1.0)
    log_n = jnp.log2(nf)
    one_bin = top >= nf  # H = 0
    entropy = jnp.where(one_bin, 1.0, info / (nf * np.float32(np.log(2.0))))
    candidate = guess_is_secret & mask[guess_secret]
    p_sol = jnp.where(candidate, 1.0 / nf, 0.0)
    estimate = p_sol + (1.0 - p_sol) * (log_n / entropy + 1.0)
    estimate = jnp.where(candidate & (n == 1), 1.0, estimate)
    q = jnp.where(one_bin & ~candidate, -jnp.inf, -estimate)
    q = jnp.where(solved | (n == 0), -jnp.inf, q).astype(jnp.float32)
    value = jnp.max(q)
    # The guess's own part, when it is a candidate, is the one secret it solves (T(1) = 1).
    bounds = jnp.where(jnp.isfinite(q), -(nf + parts - candidate.astype(jnp.float32)) / nf,
                       -jnp.inf)
    return jnp.where(jnp.isfinite(value), value, 0.0).astype(jnp.float32), q, bounds

  def estimate(params, key, states) -> Estimate:
    del params, key
    value, q, bounds = jax.lax.map(lambda x: one(*x), (states.remaining, states.solved))
    return Estimate(value=value, action_values=q,
                    action_bounds=None if bound_levels is None else bounds.astype(jnp.float32))

  return estimate


# ---------------------------------------------------------------------------------------------
# Mastermind.


def feedback_keys(pegs: int) -> list[tuple[int, int]]:
  """The ``(b, w)`` feedbacks in index order: ``b + w <= P`` without ``(P - 1, 1)``, by ``b``
  then ``w``; the all-correct ``(P, 0)`` is last."""
  return [(b, w) for b in range(pegs + 1) for w in range(pegs + 1 - b)
          if (b, w) != (pegs - 1, 1)]


def code_digits(pegs: int, colours: int) -> np.ndarray:
  """``int32[C**P, P]``: colour ``0..C-1`` of each peg of each code, in index order."""
  return np.asarray(list(itertools.product(range(colours), repeat=pegs)),
                    np.int32).reshape(colours ** pegs, pegs)


def feedback_table(pegs: int, colours: int) -> jax.Array:
  """``u8[N, N]`` (``N = C**P``), index of the feedback of guess ``g`` for secret ``s``.

  ``b`` = pegs equal in place, ``w = Σ_c min(count_g(c), count_s(c)) - b``; computed in JAX,
  vectorised over secrets and over chunks of guesses.
  """
  digits = jnp.asarray(code_digits(pegs, colours))
  counts = jnp.sum(jax.nn.one_hot(digits, colours, dtype=jnp.int32), axis=1)  # [N, C]
  lut = np.zeros((pegs + 1, pegs + 1), np.int32)
  for i, (b, w) in enumerate(feedback_keys(pegs)):
    lut[b, w] = i
  lut = jnp.asarray(lut)

  def row(args):
    guess, guess_counts = args
    exact = jnp.sum(digits == guess, axis=-1)
    common = jnp.sum(jnp.minimum(counts, guess_counts), axis=-1)
    return lut[exact, common - exact].astype(jnp.uint8)

  return jax.jit(lambda d, c: jax.lax.map(row, (d, c), batch_size=256))(digits, counts)


# ---------------------------------------------------------------------------------------------
# Symmetry: colour and peg permutations.

AT_START = -2  # ``State.symmetries[0]`` before the first guess: the whole group
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

  def redundant(self, symmetries: jax.Array) -> jax.Array:
    """``bool[N]``: guesses some kept permutation maps to a smaller code (not canonical).

    A loop over the kept permutations only (they are compacted first): deep in a search
    most states keep one or two, so this costs ``O(N)`` there rather than ``O(M N)``.
    """
    codes = jnp.arange(self.digits.shape[0], dtype=jnp.int32)
    count = jnp.sum(symmetries >= 0)

    def smaller(m, found):
      return found | (self.images(symmetries[m][None], codes)[0] < codes)

    found = jax.lax.fori_loop(0, count, smaller, jnp.zeros(codes.shape, bool))
    return jnp.where(symmetries[0] == AT_START, ~jnp.asarray(self.canonical_at_start), found)


@dataclasses.dataclass(frozen=True, eq=False)
class Mastermind:
  """Mastermind with ``pegs`` pegs and ``colours`` colours as a guessing :class:`Game`.

  Attributes:
    pegs: ``P``.
    colours: ``C``.
    num_codes: ``N = C**P``, the number of secrets, of guesses (actions) and of table rows.
    by_secret: ``u8[N, N]``, feedback index for secret (row) of guess (column), the layout
      the game and the estimator close over. Mastermind's feedback is symmetric (scoring
      ``g`` against ``s`` or ``s`` against ``g`` gives the same pegs), so this is also the
      guess-major table.
    game: the :class:`jaxsearch.game.Game` (actions = guesses, outcomes = feedbacks).
    estimator: the batched entropic estimator (:func:`entropic_estimator`).
    bind: ``table -> (game, estimator)``, the same pair over a given ``u8[N, N]`` table
      (usually a tracer): call it inside a jitted function that takes ``by_secret`` as an
      argument, so that the compiled program does not embed the table as a constant.
  """

  pegs: int
  colours: int
  num_codes: int
  by_secret: jax.Array
  game: Game
  estimator: Estimator
  bind: Callable[[jax.Array], tuple[Game, Estimator]]
  symmetry: Optional["Symmetry"] = None

  @functools.cached_property
  def exact_bounds(self) -> ExactBounds:
    """The game's bounds in exact integers, for certificates (:class:`ExactBounds`); with
    symmetry, redundant guesses are left out as the estimator leaves them out."""
    redundant = None
    if self.symmetry is not None:
      check = jax.jit(self.symmetry.redundant)
      redundant = lambda state: np.asarray(check(jnp.asarray(state.symmetries)))  # noqa: E731
    return ExactBounds.build(self.by_secret, self.num_outcomes, self.solved_code,
                             redundant=redundant, guess_of_secret=np.arange(self.num_codes))

  @property
  def feedback(self) -> jax.Array:
    """``u8[N, N]``, feedback index of guess (row) for secret (column): ``by_secret``, as
    the table is symmetric."""
    return self.by_secret

  @property
  def num_outcomes(self) -> int:
    return self.game.num_outcomes

  @property
  def solved_code(self) -> int:
    return self.game.num_outcomes - 1

  def initial_state(self) -> State:
    """The state before any guess: every code is possible."""
    return self.game.init(jax.random.PRNGKey(0))

  def code_string(self, index: int) -> str:
    """``"1122"``-style code (colours ``1..C``, first peg first) of code ``index``."""
    index = int(index)
    if not 0 <= index < self.num_codes:
      raise ValueError(f"code index {index} not in [0, {self.num_codes})")
    digits = []
    for _ in range(self.pegs):
      index, d = divmod(index, self.colours)
      digits.append(str(d + 1))
    return "".join(reversed(digits))

  def code_index(self, code: str) -> int:
    """Inverse of :meth:`code_string`."""
    if (len(code) != self.pegs or not code.isdigit()
        or not all(1 <= int(c) <= self.colours for c in code)):
      raise ValueError(f"{code!r} is not a code of {self.pegs} pegs with colours "
                       f"1..{self.colours}")
    index = 0
    for c in code:
      index = index * self.colours + int(c) - 1
    return index

  def outcome_string(self, outcome: int) -> str:
    """``"b<exact>w<colour>"`` of feedback index ``outcome``."""
    b, w = feedback_keys(self.pegs)[int(outcome)]
    return f"b{b}w{w}"

  def outcome_index(self, key: str) -> int:
    """Inverse of :meth:`outcome_string`."""
    keys = [f"b{b}w{w}" for b, w in feedback_keys(self.pegs)]
    if key not in keys:
      raise ValueError(f"{key!r} is not a feedback of {self.pegs}-peg Mastermind ({keys})")
    return keys.index(key)

  def score(self, guess: str, secret: str) -> str:
    """Feedback string of ``guess`` for ``secret`` (both code strings), from the table."""
    return self.outcome_string(
        int(self.by_secret[self.code_index(secret), self.code_index(guess)]))

  def remaining_codes(self, state: State) -> list[str]:
    """The codes still possible in one (unbatched) state."""
    mask = np.asarray(bits_to_mask(state.remaining, self.num_codes))
    return [self.code_string(i) for i in np.flatnonzero(mask)]


def _with_symmetry(game: Game, estimator: Estimator, symmetry: Symmetry):
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
    redundant = jax.lax.map(symmetry.redundant, states.symmetries)
    return out.replace(action_values=jnp.where(redundant, -jnp.inf, out.action_values))

  return dataclasses.replace(game, init=init_with, step=step_with), estimate


def make(pegs: int = 4, colours: int = 6, value_range: tuple[float, float] = (-6.0, 0.0),
         max_length: Optional[int] = None, tiers: Sequence[int] = MASTERMIND_TIERS,
         guess_chunk: int = DEFAULT_GUESS_CHUNK, symmetry: bool = False) -> Mastermind:
  """Mastermind with ``pegs`` pegs and ``colours`` colours (``1 <= colours <= 9`` so codes
  are digit strings; ``colours**pegs <= 32768`` so the table stays within 1 GiB).

  ``value_range`` and ``max_length`` go to the :class:`Game` (see :func:`guessing_game`),
  ``tiers`` and ``guess_chunk`` to :func:`entropic_estimator`. With ``symmetry=True`` (and
  at most :data:`MAX_GROUP` colour-and-peg permutations) states carry the permutations that
  fix the guesses so far and the estimator masks guesses equivalent to a smaller one
  (:class:`Symmetry`): values are unchanged, the search just never spends a slot on a copy.
  """
  for label, value, hi in (("pegs", pegs, 21), ("colours", colours, 9)):
    if int(value) != value or not 1 <= value <= hi:
      raise ValueError(f"mastermind.make: {label} must be an integer in [1, {hi}], "
                       f"got {value!r}")
  pegs, colours = int(pegs), int(colours)
  num_codes = colours ** pegs
  if num_codes > 32768:
    raise ValueError(f"mastermind.make: {colours}**{pegs} = {num_codes} codes is too many "
                     "(at most 32768)")
  by_secret = feedback_table(pegs, colours)  # symmetric: also secret-major
  num_outcomes = len(feedback_keys(pegs))
  identity = np.arange(num_codes)
  branching = feedback_branching(by_secret, num_outcomes, num_outcomes - 1)
  symmetries = (Symmetry.build(pegs, colours) if symmetry and
                math.factorial(colours) * math.factorial(pegs) <= MAX_GROUP else None)

  def bind(table):
    game = guessing_game(f"mastermind_p{pegs}_c{colours}", table, num_outcomes,
                         num_outcomes - 1, value_range=value_range, max_length=max_length,
                         branching=branching)
    est = entropic_estimator(table, identity, num_outcomes, tiers=tiers,
                             guess_chunk=guess_chunk, branching=branching)
    if symmetries is not None:
      game, est = _with_symmetry(game, est, symmetries)
    return game, est

  game, est = bind(by_secret)
  return Mastermind(pegs=pegs, colours=colours, num_codes=num_codes, by_secret=by_secret,
                    game=game, estimator=est, bind=bind, symmetry=symmetries)


# ---------------------------------------------------------------------------------------------
# Solving and exported policies: the puzzle the solver plays (:mod:`jaxsearch.solve`) and the
# game's policy files (:mod:`jaxsearch.policy_file`).


def _partitions(total: int, largest: int, parts: int):
  """Partitions of ``total`` into at most ``parts`` parts, each ``<= largest``, decreasing."""
  if total == 0:
    yield ()
    return
  if parts == 0:
    return
  for first in range(min(total, largest), 0, -1):
    for rest in _partitions(total - first, first, parts - 1):
      yield (first,) + rest


def openings(pegs: int, colours: int) -> tuple[str, ...]:
  """One first guess per symmetry class of Mastermind (colour and peg permutations): colour 1
  on the first ``λ1`` pegs, colour 2 on the next ``λ2``... for each partition ``λ`` of the
  pegs into at most ``colours`` parts (4 × 6: 1111, 1112, 1122, 1123, 1234)."""
  return tuple("".join(str(colour + 1) * size for colour, size in enumerate(partition))
               for partition in _partitions(pegs, pegs, colours))


def puzzle(pegs: int = 4, colours: int = 6, symmetry: bool = True, exact_search: bool = True):
  """Mastermind with ``pegs`` × ``colours`` (default 4 × 6: 1296 codes, 14 feedbacks) as a
  :class:`jaxsearch.solve.Puzzle`; ``symmetry``: skip guesses equivalent under colour and peg
  permutations (:class:`Symmetry`); ``exact_search``: certificates may settle small sets by
  exact search (:meth:`ExactBounds.without_search` when False)."""
  from jaxsearch.solve import Puzzle

  game = make(pegs, colours, symmetry=symmetry)
  codes = tuple(game.code_string(i) for i in range(game.num_codes))
  table = np.asarray(game.by_secret)
  guess_of_secret = np.arange(game.num_codes)
  return Puzzle(name="mastermind", game=game.game, estimator=game.estimator, secrets=codes,
                guess_names=codes, outcome_name=game.outcome_string,
                solved_outcome=game.solved_code, score=MastermindScore(pegs, colours),
                valid_guesses=None, header=file_header(pegs, colours),
                initial_state=game.initial_state(), table=table,
                guess_of_secret=guess_of_secret,
                greedy_guess=functools.partial(greedy_guess, table, guess_of_secret),
                openings=openings(pegs, colours), tables=game.by_secret, bind=game.bind,
                exact=game.exact_bounds if exact_search else game.exact_bounds.without_search())


class MastermindScore:
  """``score(guess, secret) -> "b<b>w<w>"`` for ``pegs`` x ``colours`` Mastermind, looked up
  in :func:`feedback_table` (built once per size and process, ~0.3 s for 4x6).

  Attributes:
    codes: every code in index order (``"11..1"`` first), the secrets and the valid guesses.
  """

  def __init__(self, pegs: int, colours: int):
    _check_file_size(pegs, colours)
    self.pegs, self.colours = int(pegs), int(colours)
    self.codes, self._index, self._keys, self._table = _score_tables(self.pegs, self.colours)
    self._rows: dict[int, list[str]] = {}

  def __call__(self, guess: str, secret: str) -> str:
    try:
      g, s = self._index[guess], self._index[secret]
    except KeyError:
      bad = guess if guess not in self._index else secret
      raise ValueError(f"{bad!r} is not a code of {self.pegs} pegs with colours "
                       f"1..{self.colours}") from None
    row = self._rows.get(g)
    if row is None:
      row = self._rows[g] = [self._keys[x] for x in self._table[g].tolist()]
    return row[s]

  def prefetch(self, guesses) -> None:
    """Nothing to do (the whole table is there); for the ``WordleScore`` interface."""
    del guesses


@functools.lru_cache(maxsize=8)
def _score_tables(pegs: int, colours: int):
  codes = ["".join(str(d + 1) for d in row) for row in code_digits(pegs, colours)]
  keys = [f"b{b}w{w}" for b, w in feedback_keys(pegs)]
  table = np.asarray(feedback_table(pegs, colours))  # symmetric
  return tuple(codes), {c: i for i, c in enumerate(codes)}, tuple(keys), table


def _check_file_size(pegs, colours) -> None:
  """The limits of :func:`make` (digit colours, a table within 1 GiB), as a ``PolicyError``."""
  for label, value, hi in (("pegs", pegs, 21), ("colours", colours, 9)):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
      raise policy_file.PolicyError(f"mastermind {label} must be an integer in [1, {hi}], "
                                    f"got {value!r}")
  if colours ** pegs > 32768:
    raise policy_file.PolicyError(f"mastermind {colours}**{pegs} = {colours ** pegs} codes is "
                                  "too many (at most 32768)")


class PolicyFiles:
  """Mastermind's policy files (a :class:`jaxsearch.policy_file.FileGame`): the header keys
  ``pegs`` and ``colours``; the secrets and valid guesses are every code."""

  required_keys = ("pegs", "colours")

  def check_header(self, header: dict) -> None:
    _check_file_size(header["pegs"], header["colours"])

  def resolve(self, header: dict, base_dir=None):
    del base_dir
    score = MastermindScore(header["pegs"], header["colours"])
    return list(score.codes), None, score


POLICY_FILES = PolicyFiles()
policy_file.register_game("mastermind", POLICY_FILES)


def file_header(pegs: int, colours: int, **extra) -> dict:
  """The header of a Mastermind policy file (``extra`` keys are kept as they are)."""
  return policy_file.make_header("mastermind", pegs=int(pegs), colours=int(colours), **extra)
