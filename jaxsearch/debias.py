"""AVTS per-visit bias and variance statistics of one decision node (ALGORITHMS.md §2, seed 000).

Pure functions over one node's ``[V]`` arrays (vmap them over nodes and trees). Visit counts are
bucketed ``v = 1..V``; a slot going from ``v - 1`` to ``v`` visits records its change in bucket
``min(v, V)`` (the last bucket absorbs the tail).

* bias: ``count[v] += 1``, ``bias_mean[v] += (change - bias_mean[v]) / count[v]`` (Welford);
  the debiased value of a slot with ``n`` visits is ``q̂3 = q̂2 + sum_{j = n+1}^{V} bias_mean[j]``.
* variance: ``sq_sum[v] += Δ²`` with ``Δ`` the change of the *debiased* value,
  ``var[v] = sq_sum[v] / max(count[v] - 1, 1)``, ``σ²(n) = sum_{j = n+1}^{V} var[j]``; where that
  is 0 for lack of data the nearest non-zero value toward fewer visits is used (zeros would
  stop Thompson sampling from exploring).

Used by the Bellman backup of :mod:`jaxsearch.search` (``SearchConfig(backup="bellman")``).

The reference implementation (Julia, ``espadrine/optimal-wordle``) differs in two ways; both
are available for reproduction (``variance="reference"``): it squares the raw change of q̂2
rather than of q̂3, and divides bucket ``v``'s sum by the number of actions with at least
``v - 1`` visits, minus one (:func:`reference_bucket_variance`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class DebiasStats:
  """One node's statistics, ``V`` visit buckets (bucket ``i`` holds visit count ``v = i + 1``).

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
           debiased_change: jax.Array | None, valid: jax.Array = True) -> DebiasStats:
  """Records one slot's visit: it went from ``visits_after - 1`` to ``visits_after`` visits.

  Args:
    stats: the node's statistics.
    visits_after: ``i32[]`` the slot's visit count after this visit (>= 1).
    change: ``f32[]`` new q̂2 minus old q̂2.
    debiased_change: ``f32[]`` new q̂3 minus old q̂3 (its square feeds the variance); ``None``
      feeds Welford's centred sum ``(change - old mean)(change - new mean)`` instead, so that
      ``sq_sum / (count - 1)`` is the sample variance of the bucket's changes.
    valid: ``bool[]``; when False nothing is recorded (for masked path entries).
  """
  bucket = jnp.clip(visits_after, 1, stats.num_buckets) - 1
  valid = jnp.asarray(valid) & (visits_after >= 1)
  count = stats.count[bucket] + 1
  mean = stats.bias_mean[bucket]
  new_mean = mean + (change - mean) / count
  if debiased_change is None:
    squared = (change - mean) * (change - new_mean)
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


def bucket_variance(stats: DebiasStats) -> jax.Array:
  """``f32[V]`` per-transition variance ``sq_sum / max(count - 1, 1)``."""
  return stats.sq_sum / jnp.maximum(stats.count - 1, 1).astype(jnp.float32)


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
