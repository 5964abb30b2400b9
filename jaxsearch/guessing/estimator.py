"""The entropic estimator of guessing games (docs/algorithms.md §2), batched and in numpy.

:func:`entropic_estimator` scores every guess of a batch of :class:`jaxsearch.guessing.game.State`
by the entropy of its feedback over the remaining secrets; :func:`greedy_guess` is the same
choice for one set of secrets on the host, the policy that completes an exported search below
its searched nodes.

**The estimate.** For a state with remaining set ``R`` (``n = |R|``) and guess ``g``:
``p(c)`` the histogram of ``g``'s feedbacks over ``R``, ``H = -Σ p log2 p``,
``expected = log2(n) / H + 1``, ``p_sol = 1/n`` if ``g ∈ R`` else 0,
``estimate = p_sol + (1 - p_sol) * expected`` and ``q̂1 = -estimate``. Guesses with ``H = 0``
(every remaining secret gives the same feedback) that are not candidates teach nothing:
``q̂1 = -inf`` (masked). With ``n = 1`` the candidate gets ``-1`` and every other guess
``-inf`` (it has ``H = 0``). ``value`` is the best finite ``q̂1``; solved states (and empty
sets) get ``value = 0`` and ``action_values = -inf``. ``H`` is computed in float32 from
integer counts ``h`` as ``Σ_b h_b log1p((n - h_b) / h_b) / (n ln 2)``, a sum of non-negative
terms, so even a small ``H`` (a large estimate) keeps a relative error of a few ulps
(estimates agree with a float64 reference to ~1e-6 relative).

**Cost and memory.** States are processed one after the other (``lax.map``), each by the
cheapest of a few compiled variants (``lax.switch`` on ``n``): a state with ``n <= K`` for a
tier ``K`` in ``tiers`` first compacts its remaining secrets into ``K`` slots
(``jnp.nonzero(size=K)``, then a row gather of ``by_secret``), so its histograms cost
``O(G * K)`` instead of ``O(G * S)``; larger sets use the whole table. Histograms are pairwise
comparisons for ``K <= 16`` and otherwise ``segment_sum`` scatters over chunks of
``guess_chunk`` guesses (a ``[guess_chunk, O]`` histogram stays in cache; 128 was fastest on
CPU). Working memory, independent of ``B``: the compacted rows ``u8[K, G]`` (at most
``2048 x G`` bytes) plus ``O(K * guess_chunk + G)`` words; XLA reports 31 MB of temporaries
for Wordle at ``B = 1`` and ``B = 256`` alike (plus the ``f32[B, G]`` output). Wordle
3158 / 14855 on 2 CPU cores: ~0.1 s for the full set, ~1.3 ms for ``n <= 16`` (figures in
:mod:`jaxsearch.games.wordle`). Under an outer ``jax.vmap`` the ``switch`` becomes a ``select`` that
runs every variant (correct, slower).
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.guessing.game import bits_to_mask, counting_bound_levels, counting_bound_starts
from jaxsearch.game import Estimate, Estimator

DEFAULT_TIERS = (16, 32, 64, 128, 256, 512, 1024, 2048)
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
  """:func:`jaxsearch.guessing.game.counting_bound_total` of ``h`` secrets, elementwise (``f32``): the
  levels' closed form, a few fused clips (a table gather is several times slower on CPU)."""
  caps, before = bound_levels
  return sum((level + 1) * jnp.clip(h - float(start), 0.0, float(cap))
             for level, (cap, start) in enumerate(zip(caps, before)))


def _slot_parts(at, weights, bound_levels, axis):
  """``Σ_b T(h_b)`` as ``Σ_k w_k T(h_k) / h_k`` over the secret slots (``axis`` of ``at``)."""
  if bound_levels is None:
    return jnp.zeros((at.shape[1 - axis],), jnp.float32)
  return jnp.sum(weights * _counting_total(at, bound_levels) / at, axis=axis)


def _histogram_stats(hist: jax.Array, n, bound_levels: Optional[tuple]):
  """``(info, top, parts)`` of histograms ``hist`` ``f32[..., O]`` over the bins of sets of
  ``n`` secrets (``n`` broadcasting against ``hist[..., :1]``), each ``f32[...]``."""
  safe = jnp.maximum(hist, 1.0)
  info = jnp.sum(jnp.where(hist > 0, hist * jnp.log1p((n - safe) / safe), 0.0), axis=-1)
  parts = (jnp.zeros(info.shape, jnp.float32) if bound_levels is None else
           jnp.sum(_counting_total(hist, bound_levels), axis=-1))
  return info, jnp.max(hist, axis=-1), parts


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
    return _histogram_stats(hist, n, bound_levels)
  # Σ_b h_b ln(n / h_b) = Σ_k w_k ln(n / h(code of slot k)): K logs per guess instead of O.
  at = jnp.maximum(jnp.take_along_axis(hist, codes.T, axis=1), 1.0)  # [c, K]
  info = jnp.sum(weights[None, :] * jnp.log1p((n - at) / at), axis=-1)
  return (info, jnp.max(weights[None, :] * at, axis=-1),
          _slot_parts(at, weights[None, :], bound_levels, axis=1))


def entropic_estimator(by_secret, secret_of_guess, num_outcomes: int,
                       tiers: Sequence[int] = DEFAULT_TIERS,
                       guess_chunk: int = DEFAULT_GUESS_CHUNK,
                       branching: Optional[int] = None,
                       batched: Optional[bool] = None) -> Estimator:
  """The entropic estimator q̂1 of docs/algorithms.md §2, batched: ``(params, key, states[B])``.

  The estimate of each guess and its cost are described in the module's docstring.

  Args:
    by_secret: ``u8[S, G]`` feedback table, secret-major. A concrete array is closed over as
      a constant, which XLA embeds in each compiled program (~2 s per compile and several GB
      of compile-time memory for Wordle's 47 MB); a tracer (the estimator built inside a
      jitted function from a table passed as an argument, see
      :attr:`jaxsearch.games.mastermind.Mastermind.bind`) keeps it an input of the program.
    secret_of_guess: ``int[G]``, the secret each guess is, or ``-1``.
    num_outcomes: ``O``.
    tiers: compaction sizes (those ``>= S`` are dropped; the whole table is always a tier).
    guess_chunk: guesses per histogram chunk.
    branching: ``F`` of the game's counting bound (:func:`jaxsearch.guessing.game.feedback_branching`);
      given, the estimate also carries admissible ``action_bounds``: guess ``g`` costs itself
      plus, for each feedback part ``P_b`` it leaves unsolved, at least ``T(|P_b|)`` more
      guesses (:func:`jaxsearch.guessing.game.counting_bound_total`), so no policy starting with ``g``
      does better than ``-(n + Σ_b T(|P_b|)) / n`` — the one-step lookahead of the game's own
      counting bound, for a few elementwise clips per histogram bin (T in closed form).
    batched: how states are processed. ``False``: one after the other, each by its tier (the
      module's docstring: fastest on a CPU). ``True``: all at once, every histogram a product
      of the states' masks with the one-hot feedback table (:func:`_matmul_histograms`: a
      few large kernels, where an accelerator would otherwise run thousands of loop trips a
      batch). ``None`` (default): batched on an accelerator, one by one on a CPU. The two
      agree on every histogram; their floating-point sums over bins may differ in the last
      bits for sets small enough for a compact tier.

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
  guesses = (jnp.asarray(sog >= 0), jnp.asarray(np.where(sog >= 0, sog, 0), jnp.int32))
  sizes = sorted({int(k) for k in tiers if 1 < int(k) < num_secrets} | {num_secrets})
  upper = jnp.asarray([1] + sizes, jnp.int32)  # branch i handles n <= upper[i]
  bound_levels = None
  if branching is not None:
    caps = counting_bound_levels(num_secrets, branching)
    bound_levels = (caps.tolist(), counting_bound_starts(caps).tolist())
  branches = _histogram_branches(by_secret, sizes, int(num_outcomes),
                                 max(1, min(num_guesses, int(guess_chunk))), bound_levels)

  def one(remaining, solved):
    mask = bits_to_mask(remaining, num_secrets)
    n = jnp.sum(mask, dtype=jnp.int32)
    which = jnp.searchsorted(upper, n, side="left")
    return _guess_values(jax.lax.switch(which, branches, mask), mask, n, solved, guesses)

  def all_at_once(states):
    masks = jax.vmap(lambda bits: bits_to_mask(bits, num_secrets))(states.remaining)
    counts = jnp.sum(masks, axis=1, dtype=jnp.int32)
    stats = _matmul_histograms(by_secret, masks, counts, int(num_outcomes), bound_levels)
    return jax.vmap(_guess_values, in_axes=(0, 0, 0, 0, None))(stats, masks, counts,
                                                              states.solved, guesses)

  def estimate(params, key, states) -> Estimate:
    del params, key
    if all_states_at_once(batched):
      value, q, bounds = all_at_once(states)
    else:
      value, q, bounds = jax.lax.map(lambda x: one(*x), (states.remaining, states.solved))
    return Estimate(value=value, action_values=q,
                    action_bounds=None if bound_levels is None else bounds.astype(jnp.float32))

  return estimate


BATCHED_STATES_ENV = "JAXSEARCH_BATCHED_STATES"


def all_states_at_once(batched: Optional[bool] = None) -> bool:
  """Whether per-state work is batched (``True``, a few large kernels) or done one state
  after the other (``False``); ``None``: ``$JAXSEARCH_BATCHED_STATES`` where set (``1`` or
  ``0``: e.g. to run, and count, on a CPU the program an accelerator gets), else batched on
  an accelerator, where each trip of a loop over states costs a round trip to the host, one
  by one on a CPU (decided when the function is traced)."""
  if batched is not None:
    return batched
  forced = os.environ.get(BATCHED_STATES_ENV, "")
  if forced:
    if forced not in ("0", "1"):
      raise ValueError(f"${BATCHED_STATES_ENV} must be 1 (batched) or 0 (one state at a "
                       f"time), got {forced!r}")
    return forced == "1"
  return jax.default_backend() != "cpu"


# Bytes of one-hot feedback table (bf16) one histogram product reads: the guesses are taken
# in chunks of at most this much (Mastermind 4×6: one chunk; Wordle: ~170 guesses a chunk).
_ONE_HOT_BYTES = 1 << 28


def _matmul_histograms(by_secret: jax.Array, masks: jax.Array, counts: jax.Array,
                       num_outcomes: int, bound_levels: Optional[tuple]):
  """:func:`_scatter_stats`'s ``(info, top, parts)`` (each ``f32[B, G]``) of a batch of sets
  at once, the histograms as one matrix product per chunk of guesses.

  ``h[b, g, o] = Σ_s mask[b, s] · [by_secret[s, g] = o]``: the masks ``[B, S]`` times the
  one-hot table ``[S, G·O]``, in bfloat16 with float32 accumulation (0/1 entries and integer
  sums below 2^24: exact). ``counts``: ``i32[B]``, each set's size."""
  num_secrets, num_guesses = by_secret.shape
  weights = masks.astype(jnp.bfloat16)
  n = counts.astype(jnp.float32)[:, None, None]
  outcomes = jnp.arange(num_outcomes, dtype=jnp.uint8)

  def stats(codes):  # u8[S, c] -> three f32[B, c]
    one_hot = (codes[:, :, None] == outcomes).astype(jnp.bfloat16)  # [S, c, O]
    hist = jnp.einsum("bs,sco->bco", weights, one_hot, preferred_element_type=jnp.float32)
    return _histogram_stats(hist, n, bound_levels)

  chunk = max(1, min(num_guesses, _ONE_HOT_BYTES // (2 * num_secrets * num_outcomes)))
  if chunk == num_guesses:
    return stats(by_secret)

  def body(i, carry):
    # The last chunk is shifted back to fit: it recomputes a few guesses, identically.
    start = jnp.minimum(i * chunk, num_guesses - chunk)
    part = stats(jax.lax.dynamic_slice_in_dim(by_secret, start, chunk, axis=1))
    return tuple(jax.lax.dynamic_update_slice_in_dim(acc, x, start, axis=1)
                 for acc, x in zip(carry, part))

  init = tuple(jnp.zeros((masks.shape[0], num_guesses), jnp.float32) for _ in range(3))
  return jax.lax.fori_loop(0, -(-num_guesses // chunk), body, init)


def _histogram_branches(by_secret: jax.Array, sizes: Sequence[int], num_outcomes: int,
                        chunk: int, bound_levels: Optional[tuple]) -> list:
  """One ``mask bool[S] -> (info, top, parts)`` function (each ``f32[G]``, see
  :func:`_pairwise_stats`) per tier: branch 0 for ``n <= 1``, branch ``i`` for sets of at
  most ``sizes[i - 1]`` secrets, compacted into that many slots (no compaction for ``S``)."""
  num_secrets, num_guesses = by_secret.shape

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

  return [trivial] + [make_branch(size) for size in sizes]


def _guess_values(stats, mask, n, solved, guesses):
  """``(value f32[], q f32[G], bounds f32[G])`` of one state from its histogram statistics.

  Args:
    stats: ``(info, top, parts)``, each ``f32[G]`` (:func:`_pairwise_stats`).
    mask: ``bool[S]``, the remaining secrets; ``n``: ``i32[]``, how many.
    solved: ``bool[]``.
    guesses: ``(guess_is_secret bool[G], guess_secret i32[G])``, which guesses name a secret
      and which one (0 where none).
  """
  info, top, parts = stats
  guess_is_secret, guess_secret = guesses
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


def part_sizes_by_code(rows: np.ndarray, num_codes: int) -> np.ndarray:
  """``int[num_codes, G]``: how many of the secrets (rows of ``rows``, ``u8[n, G]``) give
  each feedback code (row) to each guess (column): one count per code instead of
  :func:`feedback_parts`'s sort, cheaper where the codes are few. The non-zero entries of a
  column are its part sizes in increasing order of their code, as :func:`feedback_parts`
  lists them."""
  num_guesses = rows.shape[1]
  if rows.size and int(rows.max()) >= num_codes:
    raise ValueError(f"feedback code {int(rows.max())} is not below num_codes={num_codes}")
  flat = rows.astype(np.int64) * num_guesses + np.arange(num_guesses)
  return np.bincount(flat.ravel(), minlength=num_codes * num_guesses).reshape(
      num_codes, num_guesses)


def entropic_costs(table: np.ndarray, guess_of_secret: np.ndarray, secrets: np.ndarray,
                   num_codes: Optional[int] = None) -> np.ndarray:
  """``f64[G]``: the entropic estimate of the guesses still needed (this one included) after
  each guess, for the remaining ``secrets`` (``n >= 2`` indices), in numpy; ``inf`` for a
  guess that tells nothing. The estimator's value q̂1 is its negation (docs/algorithms.md
  §2). Arguments as :func:`greedy_guess`'s."""
  n = len(secrets)
  rows = table[secrets]
  if num_codes is not None and num_codes <= max(2 * n, 16):
    sizes = part_sizes_by_code(rows, num_codes)  # [O, G], one row per code
  else:
    _, sizes = feedback_parts(rows)  # [n, G], one size per part
  # Summed down the columns, one part after another in increasing order of their code (the
  # zeros between them add nothing), so both layouts give the same float.
  p = sizes / n
  entropy = -np.sum(np.where(sizes > 0, p * np.log2(np.where(sizes > 0, p, 1.0)), 0.0),
                    axis=0)
  p_solve = np.zeros(sizes.shape[1])
  p_solve[guess_of_secret[secrets]] = 1.0 / n
  expected = np.where(entropy > 0, np.log2(n) / np.maximum(entropy, 1e-30) + 1.0, np.inf)
  return np.where(p_solve > 0, p_solve + (1 - p_solve) * expected, expected)


def greedy_guess(table: np.ndarray, guess_of_secret: np.ndarray, secrets: np.ndarray,
                 num_codes: Optional[int] = None) -> int:
  """The entropic estimator's best guess for the remaining ``secrets`` (indices), in numpy:
  what a search tries first, and the policy that completes an exported one below the
  searched nodes. With one or two candidates, the first candidate (optimal).

  Args:
    table: ``u8[S, G]`` feedback of guess ``g`` for secret ``s``.
    guess_of_secret: ``int[S]``, the action that guesses each secret.
    secrets: ``int[n]``, ``n >= 1``.
    num_codes: the number of feedback codes (``table``'s entries are below it), if known:
      where the codes are few (at most 16, or twice the secrets), the parts are counted per
      code (:func:`part_sizes_by_code`) rather than sorted. Measured: on a 1296 × 1296
      table of 15 codes, 0.3 against 0.8 ms at 8 secrets, 3.6 against 20 ms at 243; on a
      3158 × 14855 table of 243 codes the entropy over every code costs more than the sort
      below about 100 secrets. Either way the parts are summed in the same order, so the
      guess is the same.
  """
  if len(secrets) <= 2:
    return int(guess_of_secret[secrets[0]])
  return int(np.argmin(entropic_costs(table, guess_of_secret, secrets, num_codes)))
