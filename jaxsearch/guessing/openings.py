"""Lower bounds on the best total each first guess ("opening") of a guessing game allows.

Which first guesses could still beat a known total (Wordle 3158 / 14855: 11219 guesses over
all answers, proven optimal given ``tarse``)? An opening ``o`` splits the ``S`` secrets into
its feedback parts ``P`` (the secrets that give the same feedback to ``o``); any policy that
opens with ``o`` pays ``S`` first guesses plus, on each part that ``o`` does not solve, at
least that part's optimum. Two admissible integer bounds on that total (never above the true
optimum given ``o``), both in the solver's own terms — ``T(n)`` is the counting bound of the
game's :class:`jaxsearch.guessing.exact.ExactBounds` (``node_total``,
``counting_total``), so they agree with its ``action_totals`` to the guess:

* **one step** (:func:`opening_bounds`): ``S + Σ_P T(|P|)``, exactly ``action_totals`` of the
  whole set of secrets, for every opening at once from one ``[G, O]`` histogram of each
  guess's feedbacks (numpy, ~1 s for Wordle's 14,855 guesses on this 2-core CPU).
* **two steps** (:func:`two_step_bounds`): ``S + Σ_P LB(P)`` with, for each part ``P``,
  ``LB(P) = min_g [|P| + Σ_Q T(|Q|)]`` over every second guess ``g``, ``Q`` ranging over the
  feedback parts of ``g`` within ``P`` other than the one ``g`` solves (if ``g ∈ P``, the
  secret ``g`` is found by the second guess and costs nothing more): ``LB(P)`` is the minimum
  of ``action_totals(P)``, the bound the solver itself puts on each second guess.

**Why the two-step bound is admissible.** Every secret of a part ``P`` has given the same
feedback to ``o``, so a (deterministic) policy plays one and the same second guess ``g`` on
all of ``P``, which costs ``|P|`` guesses, and then needs at least ``opt(Q) >= T(|Q|)`` more
on each part ``Q`` of ``P`` that ``g`` leaves unsolved — so its total on ``P`` is at least
``|P| + Σ_Q T(|Q|) >= LB(P)``. Summing over the parts, plus the ``S`` first guesses, bounds
every deterministic policy that opens with ``o``, hence also every randomised one (a mixture
of them). It is never below the one-step bound: in ``|P| + Σ_Q T(|Q|)`` one secret at most
(``g``) is counted at one guess and, as ``g`` leaves at most ``F`` unsolved parts and each
``T(|Q|)`` counts at most ``F**(j-1)`` of its secrets at ``j`` more guesses, at most
``F**j`` at ``j + 1`` guesses: the caps ``1, F, F**2, ...`` of ``T(|P|)``, the least total
those caps allow.

**The batched two-step kernel** (:func:`two_step_bounds`, ``engine="jax"``): for a chunk of
``C`` openings and ``K`` second guesses it builds, per (opening, guess), the joint histogram
of (part of the opening, feedback of the guess) over all ``S`` secrets — one ``segment_sum``
of ``S × C × K`` ones into ``C × K × P × O`` bins, ``P`` the largest number of parts of 3 or
more secrets of an opening (116 for Wordle, ``tarse``'s; parts of 1 or 2 secrets need no
search: ``LB = T = 2n - 1``) — then evaluates ``T`` on every bin in closed form, sums over
the guess's feedbacks and keeps a running minimum over guess chunks (``fori_loop``); opening
chunks are a ``lax.scan``. Memory is the ``[C, K, P, O]`` histogram (2 MB for ``C = 1,
K = 32, P = 128`` in 16-bit counts) and the ``[S, C, K]`` bin indices, independent of the
number of openings. Work per opening: ``S × G`` scatter-adds (47 M for Wordle) and
``G × P × O`` bins counted and bounded (0.43 G at ``P = 120``). On this shared 2-core CPU
(load 4-5) about 0.8 s an opening for Wordle, against 0.45 s for ``engine="numpy"`` (a sort
of each part's feedbacks per guess: the solver's ``ExactBounds.action_totals``, which
compares the rows of small parts pairwise instead), so the script uses numpy on a CPU. On a
GPU the bins of a chunk are one regular scatter and one elementwise pass, a shape that a wide
batch of openings fills (not measured yet; the estimate is in docs/solving.md, "Which first
guesses can still win").
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.guessing.exact import ExactBounds

SMALL_PART = 2  # parts of at most this many secrets have LB = T = 2n - 1: no search


def exact_bounds(puzzle) -> ExactBounds:
  """The puzzle's integer bounds (``puzzle.exact``, what certificates use), or the same built
  from its table where it has none: the one source of ``T`` for both bounds here."""
  if getattr(puzzle, "exact", None) is not None:
    return puzzle.exact
  return ExactBounds.build(puzzle.table, puzzle.game.num_outcomes, puzzle.solved_outcome)


def feedback_histogram(table, num_outcomes: int, rows_per_chunk: int = 256) -> np.ndarray:
  """``int64[G, O]``: ``hist[g, c]`` = how many secrets give feedback ``c`` to guess ``g``.

  Args:
    table: ``u8[S, G]`` feedback table, secret-major.
    num_outcomes: ``O``.
    rows_per_chunk: secrets per ``bincount`` (bounds the ``int64`` index temporaries to
      ``rows_per_chunk × G``; 256 rows of Wordle are 30 MB).
  """
  table = np.asarray(table)
  num_secrets, num_guesses = table.shape
  offsets = np.arange(num_guesses, dtype=np.int64) * num_outcomes
  hist = np.zeros(num_guesses * num_outcomes, np.int64)
  for lo in range(0, num_secrets, rows_per_chunk):
    flat = (table[lo:lo + rows_per_chunk].astype(np.int64) + offsets).reshape(-1)
    hist += np.bincount(flat, minlength=hist.size)
  return hist.reshape(num_guesses, num_outcomes)


def opening_bounds(puzzle, histogram: Optional[np.ndarray] = None) -> np.ndarray:
  """``int64[G]``: the one-step bound ``S + Σ_P T(|P|)`` of every opening (module docstring).

  Equal to ``exact_bounds(puzzle).action_totals(all secrets)[0]``, the solver's own bound on
  each first guess, computed from a histogram instead of a sort.

  Args:
    puzzle: a :class:`jaxsearch.guessing.Puzzle` (``table u8[S, G]``, ``solved_outcome``,
      ``game.num_outcomes``, ``exact``).
    histogram: :func:`feedback_histogram` of ``puzzle.table`` if already computed.
  """
  table = np.asarray(puzzle.table)
  if histogram is None:
    histogram = feedback_histogram(table, puzzle.game.num_outcomes)
  unsolved = np.array(histogram, np.int64)
  unsolved[:, puzzle.solved_outcome] = 0  # the opening's own secret: found, nothing more
  return table.shape[0] + exact_bounds(puzzle).counting_total(unsolved).sum(axis=1)


def searched_parts(histogram: np.ndarray, solved_code: int) -> np.ndarray:
  """``int64[G]``: how many unsolved parts of more than :data:`SMALL_PART` secrets each
  opening leaves (the ``P`` of the two-step kernel is their maximum over the openings)."""
  big = np.array(histogram) > SMALL_PART
  big[:, solved_code] = False
  return big.sum(axis=1)


def two_step_bounds(puzzle, openings: Sequence[int], engine: str = "jax",
                    opening_chunk: int = 1, guess_chunk: int = 32,
                    max_parts: Optional[int] = None,
                    count_dtype: Optional[str] = None) -> np.ndarray:
  """``int64[N]``: the two-step bound ``S + Σ_P min_g [|P| + Σ_Q T(|Q|)]`` of each opening
  (module docstring: definition, cost).

  Admissible: a policy opening with ``o`` plays one second guess ``g`` on all of a part ``P``
  (its secrets gave the same feedback), paying ``|P|`` for it and then at least
  ``opt(Q) >= T(|Q|)`` on each part ``Q`` of ``P`` that ``g`` leaves unsolved, so it needs at
  least ``LB(P)`` on ``P``; summed over the parts plus the ``S`` first guesses, no policy
  opening with ``o`` (nor a mixture of such policies) does better.

  Args:
    puzzle: as for :func:`opening_bounds`.
    openings: ``int[N]`` guess indices.
    engine: ``"jax"``, the batched kernel (the table goes in as an argument of the compiled
      program, never as a constant); ``"numpy"``, the minimum of the solver's
      ``ExactBounds.action_totals`` over each part, one part at a time (faster on a CPU, and
      the reference the kernel is tested against).
    opening_chunk, guess_chunk: ``C`` and ``K`` of the kernel (``jax`` only); ``N`` is padded
      to a multiple of ``C``, and the last guess chunk is shifted back to fit.
    max_parts: ``P`` of the kernel, at least :func:`searched_parts` of every opening given
      (default: that maximum, rounded up to a multiple of 8 so that nearby calls share a
      compiled program); a smaller one is refused.
    count_dtype: the histogram's counts (``jax`` only): default ``"int16"`` on a CPU where
      ``S < 2**15`` (half the memory traffic), ``"int32"`` elsewhere (GPU scatters add
      32-bit words atomically).
  """
  openings = np.asarray(openings, np.int64).reshape(-1)
  table = np.asarray(puzzle.table)
  num_secrets, num_guesses = table.shape
  if openings.size and (openings.min() < 0 or openings.max() >= num_guesses):
    raise ValueError(f"two_step_bounds: openings must be guess indices in [0, {num_guesses})")
  if openings.size == 0:
    return np.zeros((0,), np.int64)
  if engine == "numpy":
    return _two_step_numpy(puzzle, openings)
  if engine != "jax":
    raise ValueError(f"two_step_bounds: engine must be 'jax' or 'numpy', got {engine!r}")
  num_outcomes, solved = int(puzzle.game.num_outcomes), int(puzzle.solved_outcome)
  # The parts of the requested openings only: one column each.
  columns = table[:, openings].T.astype(np.int64)  # [N, S]
  sizes = np.stack([np.bincount(c, minlength=num_outcomes) for c in columns])
  needed = int(searched_parts(sizes, solved).max())
  if max_parts is None:
    max_parts = max(8, -(-needed // 8) * 8)
  if max_parts < needed:
    raise ValueError(f"two_step_bounds: max_parts={max_parts} but an opening leaves {needed} "
                     f"parts of more than {SMALL_PART} secrets")
  exact = exact_bounds(puzzle)
  levels = tuple(zip(exact.caps.tolist(), exact.starts.tolist()))
  if count_dtype is None:
    count_dtype = ("int16" if jax.default_backend() == "cpu" and num_secrets < 2 ** 15
                   else "int32")
  chunk = max(1, int(opening_chunk))
  padded = np.concatenate([openings, np.full((-len(openings)) % chunk, openings[0])])
  out = _two_step_kernel(_device_table(puzzle), jnp.asarray(padded, jnp.int32),
                         num_outcomes=num_outcomes, solved_code=solved, levels=levels,
                         max_parts=int(max_parts), opening_chunk=chunk,
                         guess_chunk=max(1, min(int(guess_chunk), num_guesses)),
                         count_dtype=count_dtype)
  return np.asarray(out, np.int64)[:len(openings)]


def _device_table(puzzle) -> jax.Array:
  """The puzzle's ``u8[S, G]`` table as a device array: its own ``tables`` where that is the
  table already (Wordle, Mastermind), else one copy."""
  tables = getattr(puzzle, "tables", None)
  if isinstance(tables, jax.Array) and tables.shape == np.shape(puzzle.table):
    return tables.astype(jnp.uint8)
  return jnp.asarray(puzzle.table, jnp.uint8)


def _two_step_numpy(puzzle, openings: np.ndarray) -> np.ndarray:
  """The two-step bound, one part at a time: ``LB(P) = min action_totals(P)``."""
  exact = exact_bounds(puzzle)
  table = np.asarray(puzzle.table)
  solved = int(puzzle.solved_outcome)
  out = np.zeros(len(openings), np.int64)
  for i, opening in enumerate(openings.tolist()):
    codes = table[:, opening]
    order = np.argsort(codes, kind="stable")
    runs = np.flatnonzero(np.diff(codes[order])) + 1
    total = table.shape[0]
    for part in np.split(order, runs):
      if codes[part[0]] == solved:
        continue
      if len(part) <= SMALL_PART:
        total += 2 * len(part) - 1
      else:
        total += int(exact.action_totals(part)[0].min())
    out[i] = total
  return out


def _counting_total(h: jax.Array, levels: tuple) -> jax.Array:
  """``T(h)`` elementwise in ``int32``: the counting bound's levels in closed form
  (``Σ_k (k + 1) clip(h - start_k, 0, cap_k)``, as ``ExactBounds.counting_total``)."""
  return sum((level + 1) * jnp.clip(h - start, 0, cap)
             for level, (cap, start) in enumerate(levels))


@functools.partial(jax.jit, static_argnames=("num_outcomes", "solved_code", "levels",
                                             "max_parts", "opening_chunk", "guess_chunk",
                                             "count_dtype"))
def _two_step_kernel(table, openings, *, num_outcomes, solved_code, levels, max_parts,
                     opening_chunk, guess_chunk, count_dtype):
  """``i32[N]`` two-step bounds of ``openings i32[N]`` (``N`` a multiple of
  ``opening_chunk``) over ``table u8[S, G]`` (an argument, not a constant).

  Per opening chunk (``C`` openings): each secret's part is a *slot* ``< P`` when its part is
  unsolved and has more than :data:`SMALL_PART` secrets, else the spare slot ``P`` (ignored);
  per guess chunk (``K`` guesses): ``hist[c, k, p, f]`` = secrets of slot ``p`` of opening
  ``c`` with feedback ``f`` to guess ``k``, and the guess's total on the part is
  ``|p| + Σ_{f ≠ solved} T(hist)``.
  """
  num_secrets, num_guesses = table.shape
  outcomes, parts = num_outcomes, max_parts
  chunk, width = opening_chunk, guess_chunk
  dtype = jnp.dtype(count_dtype)
  codes = jnp.arange(outcomes)
  unsolved_code = (codes != solved_code)[None, :]  # [1, O]
  # A part's total never exceeds S + T(S) (< 2**31 for any table that fits in memory).
  worst = jnp.iinfo(jnp.int32).max

  def one_chunk(carry, group):
    first = jnp.take(table, group, axis=1).astype(jnp.int32)  # [S, C] feedback to the opening
    sizes = jax.vmap(lambda c: jnp.bincount(c, length=outcomes))(first.T)  # [C, O]
    searched = unsolved_code & (sizes > SMALL_PART)
    slot_of_code = jnp.where(searched, jnp.cumsum(searched, axis=1) - 1, parts)  # [C, O]
    small = jnp.where(unsolved_code & (sizes <= SMALL_PART),
                      jnp.maximum(2 * sizes - 1, 0), 0).sum(axis=1)  # [C]
    slot = jnp.take_along_axis(slot_of_code, first.T, axis=1).T  # [S, C]
    slot_size = jax.vmap(lambda s: jnp.bincount(s, length=parts + 1))(slot.T)[:, :parts]
    # Bin of (opening c, guess k, slot p, feedback f), row-major over [C, K, P + 1, O].
    base = (jnp.arange(chunk)[None, :] * (width * (parts + 1)) + slot) * outcomes  # [S, C]
    stride = jnp.arange(width)[None, None, :] * ((parts + 1) * outcomes)

    def body(i, best):
      # The last chunk is shifted back to fit: it repeats a few guesses, harmlessly (a min).
      start = jnp.minimum(i * width, num_guesses - width)
      second = jax.lax.dynamic_slice_in_dim(table, start, width, axis=1).astype(jnp.int32)
      bins = (base[:, :, None] + stride + second[:, None, :]).reshape(-1)
      hist = jax.ops.segment_sum(jnp.ones(bins.shape, dtype), bins,
                                 num_segments=chunk * width * (parts + 1) * outcomes)
      hist = hist.reshape(chunk, width, parts + 1, outcomes)[:, :, :parts].astype(jnp.int32)
      bound = _counting_total(hist, levels)
      # The solved feedback (the guess is that secret) costs nothing more.
      after = bound.sum(axis=-1) - bound[..., solved_code]  # [C, K, P]
      return jnp.minimum(best, (slot_size[:, None, :] + after).min(axis=1))

    best = jax.lax.fori_loop(0, -(-num_guesses // width), body,
                             jnp.full((chunk, parts), worst, jnp.int32))
    used = jnp.arange(parts)[None, :] < searched.sum(axis=1)[:, None]
    return carry, num_secrets + small + jnp.where(used, best, 0).sum(axis=1)

  _, totals = jax.lax.scan(one_chunk, None, openings.reshape(-1, chunk))
  return totals.reshape(-1)
