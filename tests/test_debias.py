"""AVTS debias/variance statistics against plain-Python references (docs/algorithms.md §2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import debias

NUM_BUCKETS = 6


@jax.jit
def _record_all(visits, changes, debiased):
  """Records a sequence of visits into fresh statistics (one node), the AVTS article's variance."""
  def body(stats, item):
    return debias.record(stats, *item, centred=True), None
  return jax.lax.scan(body, debias.empty(NUM_BUCKETS), (visits, changes, debiased))[0]


def _reference(visits, changes, debiased, num_buckets):
  """Float64 statistics, σ² and corrections of a stream (``debiased`` under the old bias)."""
  count = [0] * num_buckets
  mean = [0.0] * num_buckets
  sq = [0.0] * num_buckets
  for v, c, d in zip(visits, changes, debiased):
    if v < 1:
      continue
    b = min(v, num_buckets) - 1
    count[b] += 1
    old = mean[b]
    mean[b] += (c - mean[b]) / count[b]
    # The debiased change re-centred on the updated bias, squared and scaled by c/(c - 1)
    # (Welford's product when d is the change minus the old bias).
    recentred = d - (mean[b] - old)
    sq[b] += recentred * recentred * (count[b] / (count[b] - 1) if count[b] > 1 else 1.0)
  # One record: no sample variance; the cold start uses its squared change (the mean).
  var = [m * m if n == 1 else s / max(n - 1, 1) for s, n, m in zip(sq, count, mean)]

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
  # Arbitrary debiased changes (as for slots the visit solves, whose Δ also holds later
  # buckets' corrections).
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


# ---- the variance is centred on the bucket's bias (the AVTS article's Δq̂3, algorithms §2) ----

MU, SIGMA = -0.3, 0.05  # a bucket's drift and noise: the second identity of docs/algorithms.md §2


def _search_style_record(stats, visits_before, change, centred=True):
  """Records an unsolved slot's visit as the Bellman backup does: the debiased change is
  ``Δq̂3`` with the corrections of the statistics before the record."""
  debiased = (change + debias.correction(stats, visits_before + 1)
              - debias.correction(stats, visits_before))
  return debias.record(stats, visits_before + 1, change, debiased, centred=centred)


@jax.jit
def _stream_variances(changes):
  """``f32[S, T]``: bucket 2's variance after each of ``T`` changes, ``S`` streams."""
  def one(changes):
    def body(stats, change):
      stats = _search_style_record(stats, jnp.int32(1), change)
      return stats, debias.bucket_variance(stats)[1]
    return jax.lax.scan(body, debias.empty(4), changes)[1]
  return jax.vmap(one)(changes)


def test_bucket_variance_is_the_sample_variance_of_drifting_changes():
  """Test vector: changes ``μ + σ·z`` in one bucket. After ``c`` records the bucket's variance
  is exactly the float64 sample variance (ddof 1) of those ``c`` changes — not inflated by
  ``μ²`` from the first record, which sees a mean of 0."""
  rng = np.random.default_rng(11)
  changes = (MU + SIGMA * rng.standard_normal((3, 20))).astype(np.float32)
  got = np.asarray(_stream_variances(jnp.asarray(changes)))
  for c in (2, 5, 20):
    expected = np.var(changes[:, :c].astype(np.float64), axis=1, ddof=1)
    np.testing.assert_allclose(got[:, c - 1], expected, rtol=2e-3, err_msg=f"c = {c}")
  # One record alone has no spread: the cold start stands in its squared change.
  np.testing.assert_allclose(got[:, 0], changes[:, 0] ** 2, rtol=1e-5)


def test_bucket_variance_tends_to_the_noise_whatever_the_drift():
  """In expectation over streams ``var[v] = σ²`` at every count, for two drifts; squaring the
  change under the bias from before each record (``centred=False``) instead gives
  ``σ²·(c + H_{c-1})/(c - 1) + μ²/(c - 1)``: 0.097, 0.027, 0.0078 at c = 2, 5, 20."""
  rng = np.random.default_rng(3)
  streams = 4000
  for mu in (MU, 0.7):
    changes = (mu + SIGMA * rng.standard_normal((streams, 20))).astype(np.float32)
    mean_var = np.asarray(_stream_variances(jnp.asarray(changes))).mean(axis=0)
    for c in (2, 5, 20):
      assert abs(mean_var[c - 1] - SIGMA ** 2) < 0.08 * SIGMA ** 2, (mu, c, mean_var[c - 1])

  @jax.jit
  def stale(changes):
    def one(changes):
      def body(stats, change):
        stats = _search_style_record(stats, jnp.int32(1), change, centred=False)
        return stats, debias.bucket_variance(stats)[1]
      return jax.lax.scan(body, debias.empty(4), changes)[1]
    return jax.vmap(one)(changes)

  changes = (MU + SIGMA * rng.standard_normal((streams, 20))).astype(np.float32)
  stale_var = np.asarray(stale(jnp.asarray(changes))).mean(axis=0)
  for c in (2, 5, 20):
    harmonic = sum(1.0 / k for k in range(1, c))
    expected = SIGMA ** 2 * (c + harmonic) / (c - 1) + MU ** 2 / (c - 1)
    assert abs(stale_var[c - 1] - expected) < 0.05 * expected, (c, stale_var[c - 1], expected)
  np.testing.assert_allclose(stale_var[[1, 4, 19]], [0.0975, 0.0269, 0.00784], rtol=0.05)


def test_sigma_squared_of_a_multi_bucket_stream_matches_float64():
  """Slots of one node visited in random order, each visit's change drawn with its bucket's
  own drift and noise: σ²(n) is the suffix sum of the float64 per-bucket sample variances,
  and q̂3's correction the suffix sum of the per-bucket means."""
  num_buckets, slots, visits_each = 5, 12, 5
  mu = np.array([-0.5, -0.3, -0.1, 0.05, 0.2])
  sigma = np.array([0.2, 0.1, 0.05, 0.05, 0.02])
  rng = np.random.default_rng(7)
  order = rng.permutation(np.repeat(np.arange(slots), visits_each))
  seen = np.zeros(slots, np.int64)
  before = np.empty(len(order), np.int32)
  for i, slot in enumerate(order):
    before[i] = seen[slot]
    seen[slot] += 1
  changes = (mu[before] + sigma[before] * rng.standard_normal(len(order))).astype(np.float32)

  @jax.jit
  def run(before, changes):
    def body(stats, item):
      return _search_style_record(stats, *item), None
    stats = jax.lax.scan(body, debias.empty(num_buckets), (before, changes))[0]
    n = jnp.arange(num_buckets + 1)
    return debias.variance(stats, n), debias.correction(stats, n)

  sigma2, corr = map(np.asarray, run(jnp.asarray(before), jnp.asarray(changes)))
  x = changes.astype(np.float64)
  var = np.array([np.var(x[before == b], ddof=1) for b in range(num_buckets)])
  means = np.array([x[before == b].mean() for b in range(num_buckets)])
  suffix = lambda v: np.array([v[n:].sum() for n in range(num_buckets + 1)])  # noqa: E731
  np.testing.assert_allclose(sigma2[:-1], suffix(var)[:-1], rtol=1e-3)
  np.testing.assert_allclose(corr, suffix(means), rtol=1e-4, atol=1e-6)
  # The drift dominates the squared changes here; σ² does not see it.
  assert sigma2[0] < 0.5 * suffix(mu ** 2 + sigma ** 2)[0]


def test_cold_start_keeps_a_node_with_one_record_per_bucket_exploring():
  """One action visited three times, its value drifting down: every bucket holds one record.
  The centred variance alone is 0 there (Thompson sampling would be greedy); the cold start
  gives each bucket its squared change, so σ² of a fresh slot is the sum of the squared
  drifts, and the visited slot keeps the nearest non-zero value (zero-fill)."""
  changes = [-0.3, -0.1, 0.05]
  stats = debias.empty(5)
  for before, change in enumerate(changes):
    stats = _search_style_record(stats, jnp.int32(before), jnp.float32(change))
  np.testing.assert_array_equal(np.asarray(debias.bucket_variance(stats, cold_start=False)), 0)
  np.testing.assert_allclose(np.asarray(debias.bucket_variance(stats)),
                             [0.09, 0.01, 0.0025, 0.0, 0.0], rtol=1e-5)
  sigma2 = np.asarray(debias.variance(stats, jnp.arange(5)))
  np.testing.assert_allclose(sigma2, [0.1025, 0.0125, 0.0025, 0.0025, 0.0025], rtol=1e-5)
  # A second record in bucket 1 replaces the stand-in by the sample variance of the two.
  stats = _search_style_record(stats, jnp.int32(0), jnp.float32(-0.5))
  np.testing.assert_allclose(float(debias.bucket_variance(stats)[0]),
                             np.var([-0.3, -0.5], ddof=1), rtol=1e-5)
