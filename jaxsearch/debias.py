"""AVTS per-visit bias and variance statistics of one decision node (the AVTS article;
docs/algorithms.md §2).

Pure functions over one node's ``[V]`` arrays (vmap them over nodes and trees). Visit counts are
bucketed ``v = 1..V``; a slot going from ``v - 1`` to ``v`` visits records its change in bucket
``min(v, V)`` (the last bucket absorbs the tail).

* bias: ``count[v] += 1``, ``bias_mean[v] += (change - bias_mean[v]) / count[v]`` (Welford);
  the debiased value of a slot with ``n`` visits is ``q̂3 = q̂2 + sum_{j = n+1}^{V} bias_mean[j]``.
* variance (:func:`bucket_variance`): ``sq_sum[v]`` sums the squared changes ``Δ`` of the
  *debiased* value, centred on the bucket's bias — the AVTS article's ``Δq̂3`` is centred on the
  converged bias, ``E[Δq̂3] = 0`` — so ``var[v] = sq_sum[v] / (count[v] - 1)`` is the sample
  variance of the bucket's changes (Bessel's ``- 1``, as the article's ``|Â| - 1``) and tends to
  the noise ``σ_v²`` whatever the drift ``μ_v``. Streamed with Welford's product: the change
  under the bias estimate before this record times the change under the updated one. A
  bucket with one record has no sample variance; it counts its squared change (cold start,
  see :func:`bucket_variance`). ``σ²(n) = sum_{j = n+1}^{V} var[j]``; where that is 0 for
  lack of data the nearest non-zero value toward fewer visits is used (zeros would stop
  Thompson sampling from exploring).

  Squaring the change under the bias estimate from *before* the record instead
  (:func:`record` with ``centred=False``, what ``AvtsOptions(variance="avts")`` does) is not
  the article's variance: a bucket's first record sees a mean of 0 and adds the whole ``μ_v²``,
  so ``E[var[v]] = σ_v²·(c + H_{c-1})/(c - 1) + μ_v²/(c - 1)`` after ``c`` records (``H``
  harmonic numbers): 0.097, 0.027, 0.0078 at ``c = 2, 5, 20`` for ``μ = -0.3``, ``σ = 0.05``,
  against ``σ² = 0.0025``. It is kept, and is the search's default, because Thompson sampling
  does better with that drift-inflated width on the article's own kind of problem (Wordle
  sub-problems, Mastermind 4×3: docs/rules_wordle.md); the article's variance is
  ``AvtsOptions(variance="centred")``, the better one on random Garnet MDPs.

Used by the Bellman backup of :mod:`jaxsearch.search` (``SearchConfig(backup="bellman")``).

The reference implementation (Julia, ``espadrine/optimal-wordle``) differs in two ways: it
squares the raw change of q̂2, not centred on any bias (:func:`record` with ``centred=False``
and the raw change), and divides bucket ``v``'s sum by the number of actions with at least
``v - 1`` visits, minus one (:func:`reference_bucket_variance`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class DebiasStats:
  """One node's statistics, ``V`` visit buckets (bucket ``i`` holds visit count ``v = i + 1``).

  The functions here take one node's ``[V]`` arrays; a tree keeps every node's as
  ``Tree.debias`` with leading ``[B, N]`` axes.

  Attributes:
    count: ``i32[V]`` changes recorded per bucket.
    bias_mean: ``f32[V]`` running mean of the change of q̂2 per bucket.
    sq_sum: ``f32[V]`` sum of squared changes of the debiased value per bucket.
  """

  count: jax.Array
  bias_mean: jax.Array
  sq_sum: jax.Array

  @property
  def num_buckets(self) -> int:
    return self.count.shape[-1]


def empty(num_buckets: int) -> DebiasStats:
  """Fresh statistics with ``V = num_buckets`` buckets."""
  if not isinstance(num_buckets, int) or num_buckets < 1:
    raise ValueError(f"num_buckets must be a positive int, got {num_buckets!r}")
  return DebiasStats(count=jnp.zeros((num_buckets,), jnp.int32),
                     bias_mean=jnp.zeros((num_buckets,), jnp.float32),
                     sq_sum=jnp.zeros((num_buckets,), jnp.float32))


def record(stats: DebiasStats, visits_after: jax.Array, change: jax.Array,
           debiased_change: jax.Array | None, valid: jax.Array = True, *,
           centred: bool | None = None) -> DebiasStats:
  """Records one slot's visit: it went from ``visits_after - 1`` to ``visits_after`` visits.

  Args:
    stats: the node's statistics.
    visits_after: ``i32[]`` the slot's visit count after this visit (>= 1).
    change: ``f32[]`` new q̂2 minus old q̂2.
    debiased_change: ``f32[]`` new q̂3 minus old q̂3, both corrected with ``stats`` as they are
      *before* this record (for a slot that stays unsolved that is ``change`` minus the
      bucket's current mean); ``None`` means exactly that, ``change - bias_mean[bucket]``.
    valid: ``bool[]``; when False nothing is recorded (for masked path entries).
    centred: True: the AVTS article's variance, the change re-centred on the bucket's *updated* bias
      estimate before squaring. With ``Δ`` the debiased change under the old estimate and
      ``Δ' = Δ - (new_mean - old_mean)`` under the new one, the term added is Welford's
      ``Δ·Δ' = Δ'²·c/(c - 1)`` (``c`` the bucket's count after this record), so for unsolved
      slots ``sq_sum / (c - 1)`` is the sample variance of the bucket's changes; the ``Δ'²``
      form stays non-negative when the slot is solved (its q̂3 then jumps to the exact value
      and ``Δ`` also holds the later buckets' corrections). False: ``Δ²`` as given (the
      drift-inflated variance of the module docstring, or the reference code's raw squares
      when ``debiased_change`` is the raw change). ``None`` (default): True exactly when
      ``debiased_change`` is ``None`` — how :mod:`jaxsearch.search` tells its ``"centred"``
      variance model from the others.
  """
  bucket = jnp.clip(visits_after, 1, stats.num_buckets) - 1
  valid = jnp.asarray(valid) & (visits_after >= 1)
  count = stats.count[bucket] + 1
  mean = stats.bias_mean[bucket]
  new_mean = mean + (change - mean) / count
  if centred is None:
    centred = debiased_change is None
  if debiased_change is None:
    debiased_change = change - mean
  if centred:
    recentred = debiased_change - (new_mean - mean)
    c = count.astype(jnp.float32)
    squared = recentred ** 2 * jnp.where(count > 1, c / jnp.maximum(c - 1.0, 1.0), 1.0)
  else:
    squared = debiased_change ** 2
  index = jnp.where(valid, bucket, stats.num_buckets)  # out of range: dropped
  return DebiasStats(
      count=stats.count.at[index].set(count, mode="drop"),
      bias_mean=stats.bias_mean.at[index].set(new_mean, mode="drop"),
      sq_sum=stats.sq_sum.at[index].add(squared, mode="drop"))


def _suffix_from(values: jax.Array, visits: jax.Array) -> jax.Array:
  """``sum_{j = n+1}^{V} values[j]`` for each visit count ``n`` in ``visits`` (0 for n >= V)."""
  suffix = jnp.cumsum(values[::-1])[::-1]  # suffix[i] = sum over buckets i.. (v = i + 1 ..)
  padded = jnp.concatenate([suffix, jnp.zeros((1,), values.dtype)])
  return padded[jnp.clip(visits, 0, values.shape[-1])]


def correction(stats: DebiasStats, visits: jax.Array) -> jax.Array:
  """Expected remaining drift ``sum_{j = n+1}^{V} bias_mean[j]`` for slots with ``visits`` ``n``
  (any shape); add it to q̂2 to get q̂3."""
  return _suffix_from(stats.bias_mean, visits)


def bucket_variance(stats: DebiasStats, cold_start: bool = True) -> jax.Array:
  """``f32[V]`` per-transition variance: ``sq_sum / (count - 1)`` where a bucket holds two
  records or more.

  A bucket with a single record has no sample variance (its centred sum is 0). With
  ``cold_start`` (default) it gets that record's squared change ``bias_mean²`` instead: the
  only scale of the change known so far. Without it such buckets give 0, and a node whose
  buckets all hold one record has ``σ² = 0`` for every slot, so Thompson sampling is greedy
  there; the debias correction lowers a fresh slot's q̂3 by the drift its visited sibling
  showed, so a second action is often never tried, no bucket reaches two records, and the
  node stays greedy for good (measured on Wordle sub-problems: one root action took 2274 of
  3000 simulations with σ = 0; docs/rules_wordle.md).
  """
  count = stats.count
  centred = stats.sq_sum / jnp.maximum(count - 1, 1).astype(jnp.float32)
  if not cold_start:
    return centred
  return jnp.where(count == 1, jnp.square(stats.bias_mean), centred)


def reference_bucket_variance(stats: DebiasStats, num_active: jax.Array) -> jax.Array:
  """``f32[V]`` the reference code's per-transition variance: bucket ``v``'s squared sum over
  (actions with ``>= v - 1`` visits) ``- 1`` — ``num_active`` slots for ``v = 1``, else
  ``count[v - 1]`` — floored at 1."""
  reached_before = jnp.concatenate([jnp.reshape(num_active, (1,)).astype(jnp.int32),
                                    stats.count[:-1]])
  return stats.sq_sum / jnp.maximum(reached_before - 1, 1).astype(jnp.float32)


def variance(stats: DebiasStats, visits: jax.Array,
             per_bucket: jax.Array | None = None) -> jax.Array:
  """``σ²(s, n)`` for slots with ``visits`` ``n`` (any shape), with the zero-fill rule: where the
  suffix sum is 0, the nearest non-zero value toward fewer visits (0 if there is none).

  ``per_bucket`` overrides :func:`bucket_variance` (e.g. :func:`reference_bucket_variance`)."""
  num_buckets = stats.num_buckets
  if per_bucket is None:
    per_bucket = bucket_variance(stats)
  sums = _suffix_from(per_bucket, jnp.arange(num_buckets + 1))  # σ² for n = 0..V
  # σ² is a suffix sum of non-negative terms, so it only decreases with n; the fill value for
  # a zero at n is the last non-zero entry before it.
  nonzero = sums > 0
  last_nonzero = jax.lax.cummax(jnp.where(nonzero, jnp.arange(num_buckets + 1), -1))
  filled = jnp.where(last_nonzero >= 0, sums[jnp.maximum(last_nonzero, 0)], 0.0)
  return filled[jnp.clip(visits, 0, num_buckets)]
