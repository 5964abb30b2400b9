"""AVTS debias/variance statistics against plain-Python references (ALGORITHMS.md §2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import debias

NUM_BUCKETS = 6


@jax.jit
def _record_all(visits, changes, debiased):
  """Records a sequence of visits into fresh statistics (one node)."""
  def body(stats, item):
    return debias.record(stats, *item), None
  return jax.lax.scan(body, debias.empty(NUM_BUCKETS), (visits, changes, debiased))[0]


def _reference(visits, changes, debiased, num_buckets):
  count = [0] * num_buckets
  mean = [0.0] * num_buckets
  sq = [0.0] * num_buckets
  for v, c, d in zip(visits, changes, debiased):
    if v < 1:
      continue
    b = min(v, num_buckets) - 1
    count[b] += 1
    mean[b] += (c - mean[b]) / count[b]
    sq[b] += d * d
  var = [s / max(n - 1, 1) for s, n in zip(sq, count)]

  def suffix(values, n):
    return sum(values[j - 1] for j in range(n + 1, num_buckets + 1))

  sigma = [suffix(var, n) for n in range(num_buckets + 1)]
  filled = []
  for n, s in enumerate(sigma):
    if s > 0:
      filled.append(s)
    else:
      earlier = [x for x in sigma[:n] if x > 0]
      filled.append(earlier[-1] if earlier else 0.0)
  return count, mean, sq, [suffix(mean, n) for n in range(num_buckets + 2)], filled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_welford_suffix_sums_and_zero_fill_match_python(seed):
  rng = np.random.default_rng(seed)
  length = 60
  top = 4 if seed == 2 else NUM_BUCKETS + 3  # seed 2 leaves high buckets empty (zero-fill)
  visits = rng.integers(0, top, size=length).astype(np.int32)
  changes = rng.normal(size=length).astype(np.float32)
  debiased = rng.normal(size=length).astype(np.float32)
  stats = _record_all(visits, changes, debiased)
  count, mean, sq, corrections, sigma = _reference(visits, changes, debiased, NUM_BUCKETS)
  np.testing.assert_array_equal(np.asarray(stats.count), count)
  np.testing.assert_allclose(np.asarray(stats.bias_mean), mean, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(stats.sq_sum), sq, rtol=1e-5, atol=1e-6)
  ns = jnp.arange(NUM_BUCKETS + 2)
  np.testing.assert_allclose(np.asarray(debias.correction(stats, ns)), corrections,
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(np.asarray(debias.variance(stats, ns[:-1])), sigma,
                             rtol=1e-5, atol=1e-5)
  if seed == 2:  # the zero-fill rule was exercised: high visit counts reuse a lower value
    assert sigma[-1] > 0 and np.asarray(debias.variance(stats, NUM_BUCKETS)) == sigma[-1]


def test_drift_identity_for_running_means():
  """For the running mean of i.i.d. samples with variance σ², the change from i to i + 1
  samples has E[Δ²] = σ²/(i(i+1)), so σ²(n) = Σ_{i=n}^{V-1} σ²/(i(i+1)) = σ²(1/n - 1/V)."""
  num_buckets, streams, sigma = 8, 4000, 1.5
  rng = np.random.default_rng(0)
  samples = rng.normal(scale=sigma, size=(streams, num_buckets))
  means = np.cumsum(samples, axis=1) / np.arange(1, num_buckets + 1)
  deltas = np.diff(means, axis=1)  # deltas[:, i - 1]: from i to i + 1 samples, i = 1..V-1
  visits = np.tile(np.arange(2, num_buckets + 1), streams).astype(np.int32)
  flat = deltas.reshape(-1).astype(np.float32)

  @jax.jit
  def record_all(visits, changes):
    def body(stats, item):
      return debias.record(stats, item[0], item[1], item[1]), None
    return jax.lax.scan(body, debias.empty(num_buckets), (visits, changes))[0]

  stats = record_all(visits, flat)
  for n in range(1, num_buckets):
    expected = sigma ** 2 * (1.0 / n - 1.0 / num_buckets)
    got = float(debias.variance(stats, n))
    assert abs(got - expected) < 0.08 * expected, (n, got, expected)
  # Unbiased changes of a running mean: the mean change per bucket is ~0.
  np.testing.assert_allclose(np.asarray(stats.bias_mean[1:]), 0.0, atol=0.05)


def test_record_under_vmap_and_masking():
  nodes = 3
  stats = jax.vmap(lambda _: debias.empty(NUM_BUCKETS))(jnp.arange(nodes))
  visits = jnp.array([1, 2, 9])
  changes = jnp.array([0.5, -1.0, 2.0])
  valid = jnp.array([True, False, True])
  out = jax.jit(jax.vmap(debias.record))(stats, visits, changes, changes, valid)
  np.testing.assert_array_equal(np.asarray(out.count[0]), [1, 0, 0, 0, 0, 0])
  np.testing.assert_array_equal(np.asarray(out.count[1]), 0)  # masked
  np.testing.assert_array_equal(np.asarray(out.count[2]), [0, 0, 0, 0, 0, 1])  # tail bucket
  np.testing.assert_allclose(np.asarray(out.bias_mean[2, -1]), 2.0)
  # A fresh slot (n = 0) is corrected by every bucket; n >= V by none.
  np.testing.assert_allclose(np.asarray(debias.correction(
      jax.tree.map(lambda x: x[2], out), jnp.array([0, 5, 6, 40]))), [2.0, 2.0, 0.0, 0.0])
  with pytest.raises(ValueError, match="num_buckets"):
    debias.empty(0)


def test_centred_record_accumulates_welford_m2():
  """``debiased_change=None``: ``sq_sum / (count - 1)`` is the sample variance of the changes
  recorded in a bucket (Welford's M2), whatever their mean."""
  rng = np.random.default_rng(5)
  changes = rng.normal(-0.4, 0.3, size=25).astype(np.float32)
  stats = debias.empty(3)
  record = jax.jit(debias.record)
  for change in changes:
    stats = record(stats, jnp.int32(2), jnp.float32(change), None)
  assert int(stats.count[1]) == 25
  np.testing.assert_allclose(float(stats.bias_mean[1]), changes.mean(), rtol=1e-5)
  np.testing.assert_allclose(float(debias.bucket_variance(stats)[1]), changes.var(ddof=1),
                             rtol=1e-4)
