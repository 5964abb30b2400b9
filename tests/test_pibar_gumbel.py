"""π̄ (Grill et al. 2020, docs/algorithms.md §3) and the Gumbel MuZero building blocks (§5).

Pure functions of one node, checked against the §3 and §5 test vectors, the KKT conditions
and optimality of π̄, float64 NumPy references, and (where installed) mctx's own helpers;
each also under ``jax.jit`` and ``jax.vmap``.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import gumbel
from jaxsearch.selection import NodeView, masked_argmax, masked_softmax, q_minmax
from jaxsearch.selection.base import RootContext
from jaxsearch.selection.pibar import (lambda_n, pibar_argmax_visits, pibar_policy,
                                       pibar_sample, regularized_policy,
                                       regularized_policy_and_alpha)

f32 = lambda x: jnp.asarray(x, jnp.float32)

# Compiled once per shape: eager dispatch of the bisection loop costs more than compiling.
_solve = jax.jit(regularized_policy_and_alpha, static_argnames="num_steps")
_pibar = jax.jit(regularized_policy, static_argnames="num_steps")
_policy = jax.jit(pibar_policy, static_argnames=("c", "q_transform", "num_steps"))
_lambda_n = jax.jit(lambda_n)
_q_minmax = jax.jit(q_minmax)
_softmax = jax.jit(masked_softmax)
_mixed = jax.jit(gumbel.mixed_value)
_completed = jax.jit(gumbel.completed_q)
_sigma = jax.jit(gumbel.sigma_scale, static_argnames=("c_visit", "c_scale"))
_rescale = jax.jit(gumbel.rescale_q, static_argnames=("normalize", "epsilon"))
_improved = jax.jit(gumbel.improved_policy, static_argnames=("c_visit", "c_scale", "normalize"))
_interior_policy = jax.jit(gumbel.interior_policy,
                           static_argnames=("c_visit", "c_scale", "normalize", "value_source"))
_root = jax.jit(gumbel.root_scores)


def _score(rule, view, key=None):
  return jax.jit(rule.score)(view, key)


def _view(q, visits, legal, logits, value=0.0, node_visits=None):
  k = len(q)
  visits = jnp.asarray(visits, jnp.int32)
  return NodeView(visits=jnp.int32(1 + int(np.sum(visits))) if node_visits is None
                  else jnp.int32(node_visits),
                  value=f32(value), child_visits=visits, child_values=f32(q),
                  prior_logits=f32(logits), action_values=f32(np.zeros(k)),
                  legal=jnp.asarray(legal, bool), depth=jnp.int32(1),
                  debiased_values=f32(np.zeros(k)), value_variance=f32(np.zeros(k)),
                  upper_bounds=f32(np.zeros(k)))


def _stack(views):
  return jax.tree_util.tree_map(lambda *xs: jnp.asarray(np.stack(xs)), *views)


# ---- π̄: the §3 table, KKT, optimality, limits ------------------------------------------------

TABLE = [  # π_θ, q, λ, α, π̄
    ([0.999, 0.001], [0.0, 1.0], 0.1, 1.000111, [0.099889, 0.900111]),
    ([0.5, 0.5], [1.0, 1.0], 0.1, 1.1, [0.5, 0.5]),
    ([0.25, 0.75], [1.0, 0.25], 0.5, 1.205719, [0.607625, 0.392375]),
    ([0.5, 0.3, 0.2], [0.0, 0.0, 1.0], 0.25, 1.061606, [0.117746, 0.070648, 0.811606]),
]


@pytest.mark.parametrize("prior,q,lam,alpha,expected", TABLE)
def test_table_vectors_and_kkt(prior, q, lam, alpha, expected):
  legal = np.ones(len(q), bool)
  pi_bar, got_alpha = _solve(f32(q), f32(prior), legal, lam)
  pi_bar = np.asarray(pi_bar)
  np.testing.assert_allclose(float(got_alpha), alpha, atol=1e-5)
  np.testing.assert_allclose(pi_bar, expected, atol=1e-5)
  assert abs(pi_bar.sum() - 1.0) < 1e-6
  residual = np.asarray(q) + lam * np.asarray(prior) / pi_bar - float(got_alpha)
  np.testing.assert_allclose(residual, 0.0, atol=1e-5)
  # The bracket of docs/algorithms.md §3.
  assert max(np.add(q, lam * np.asarray(prior))) - 1e-6 <= float(got_alpha)
  assert float(got_alpha) <= max(q) + lam + 1e-6


def _reference(q, prior, valid, lam):
  """float64 bisection on α itself (a different parametrisation from the library's)."""
  q, prior = q[valid], prior[valid] / prior[valid].sum()
  lo, hi = np.max(q + lam * prior), np.max(q) + lam
  for _ in range(200):
    mid = 0.5 * (lo + hi)
    lo, hi = (mid, hi) if np.sum(lam * prior / (mid - q)) > 1 else (lo, mid)
  out = np.zeros(valid.shape)
  out[valid] = lam * prior / (0.5 * (lo + hi) - q)
  return out / out.sum(), 0.5 * (lo + hi)


def _objective(y, q, prior, lam):
  support = prior > 0
  return float(q @ y - lam * np.sum(prior[support] * np.log(prior[support] / y[support])))


def _random_problems(num, k, seed=0):
  rng = np.random.default_rng(seed)
  qs = rng.normal(size=(num, k)).astype(np.float32) * rng.choice([0.01, 1.0, 30.0], (num, 1))
  qs += rng.choice([0.0, 100.0], (num, 1)).astype(np.float32)  # big offsets: precision
  logits = rng.normal(size=(num, k)) * 2.0
  legal = rng.random((num, k)) < 0.75
  legal[:, 0] = True
  priors = np.where(legal, np.exp(logits), 0.0)
  priors[rng.random((num, k)) < 0.15] = 0.0  # zero-prior legal slots are excluded too
  priors[:, 0] = np.exp(logits[:, 0])
  priors = (priors / priors.sum(axis=1, keepdims=True)).astype(np.float32)
  lams = rng.choice([1e-3, 0.05, 0.5, 3.0], num).astype(np.float32) * np.abs(qs).max(1).clip(1)
  return qs, priors, legal, lams


def test_random_problems_against_float64_reference_under_vmap_and_jit():
  qs, priors, legal, lams = _random_problems(64, 7)
  solve = jax.jit(jax.vmap(regularized_policy_and_alpha))
  pi_bars, alphas = map(np.asarray, solve(f32(qs), f32(priors), jnp.asarray(legal), f32(lams)))
  rng = np.random.default_rng(1)
  for i in range(len(qs)):
    valid = legal[i] & (priors[i] > 0)
    expected, alpha = _reference(qs[i].astype(np.float64), priors[i].astype(np.float64), valid,
                                 float(lams[i]))
    np.testing.assert_allclose(pi_bars[i], expected, atol=2e-5, err_msg=f"problem {i}")
    assert abs(alphas[i] - alpha) <= 1e-6 * max(1.0, abs(alpha)) + 1e-5 * lams[i]
    assert np.all(pi_bars[i][~valid] == 0.0)
    assert abs(pi_bars[i].sum() - 1.0) < 1e-5
    # Optimality: no random distribution on the support does better.
    for y in rng.dirichlet(np.ones(valid.sum()), 16):
      full = np.zeros(7)
      full[valid] = y
      assert (_objective(pi_bars[i].astype(np.float64), qs[i].astype(np.float64),
                         priors[i] / priors[i][valid].sum(), float(lams[i]))
              >= _objective(full, qs[i].astype(np.float64),
                            priors[i] / priors[i][valid].sum(), float(lams[i])) - 1e-4)
  # Row by row (no vmap) gives the same answers.
  for i in range(3):
    single = _pibar(qs[i], priors[i], legal[i], lams[i])
    np.testing.assert_allclose(np.asarray(single), pi_bars[i], atol=1e-6)


def test_small_lambda_tends_to_one_hot_and_zero_is_the_limit():
  q = f32([0.3, 0.9, -1.0, 0.5])
  prior = f32([0.4, 0.1, 0.3, 0.2])
  legal = np.ones(4, bool)
  previous = 0.0
  for lam in [1.0, 0.1, 1e-2, 1e-3, 1e-5]:
    top = float(_pibar(q, prior, legal, lam)[1])
    assert top >= previous - 1e-7
    previous = top
  assert previous > 1.0 - 1e-4
  np.testing.assert_array_equal(np.asarray(_pibar(q, prior, legal, 0.0)),
                                [0.0, 1.0, 0.0, 0.0])
  np.testing.assert_array_equal(np.asarray(_pibar(q, prior, legal, -1.0)),
                                [0.0, 1.0, 0.0, 0.0])
  pi_bar, alpha = _solve(q, prior, legal, 0.0)
  assert float(alpha) == pytest.approx(0.9)
  # The best action illegal: the best legal one takes everything.
  np.testing.assert_array_equal(
      np.asarray(_pibar(q, prior, np.array([1, 0, 1, 1], bool), 0.0)), [0, 0, 0, 1])
  # Ties at λ = 0 share the mass in proportion to the prior: the λ → 0⁺ limit.
  tied = f32([0.9, 0.9, 0.1, 0.0])
  np.testing.assert_allclose(np.asarray(_pibar(tied, prior, legal, 0.0)),
                             [0.8, 0.2, 0.0, 0.0], atol=1e-6)
  np.testing.assert_allclose(np.asarray(_pibar(tied, prior, legal, 1e-7)),
                             [0.8, 0.2, 0.0, 0.0], atol=1e-5)


def test_support_large_lambda_and_degenerate_inputs():
  q = f32([5.0, np.nan, 0.2, 0.1, 7.0])  # NaN and the best value sit outside the support
  prior = f32([0.2, 0.3, 0.0, 0.5, 0.1])
  legal = np.array([True, False, True, True, False])
  pi_bar = np.asarray(_pibar(q, prior, legal, 0.3))
  assert np.all(np.isfinite(pi_bar))
  np.testing.assert_array_equal(pi_bar[[1, 2, 4]], 0.0)
  assert abs(pi_bar.sum() - 1.0) < 1e-6
  # The prior is renormalised over the valid slots; λ = inf gives it back.
  np.testing.assert_allclose(np.asarray(_pibar(q, prior, legal, jnp.inf)),
                             [0.2 / 0.7, 0, 0, 0.5 / 0.7, 0], atol=1e-6)
  # Nothing valid: all zeros, α = 0.
  none, alpha = _solve(q, prior, np.zeros(5, bool), 0.3)
  np.testing.assert_array_equal(np.asarray(none), 0.0)
  assert float(alpha) == 0.0


def test_lambda_n():
  assert float(_lambda_n(1.25, 0, 5)) == 0.0
  assert float(_lambda_n(1.0, 0, 0)) == 0.0
  np.testing.assert_allclose(float(_lambda_n(1.25, 16, 4)), 1.25 * 4 / 20, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(_lambda_n(2.0, jnp.array([1, 9]), jnp.array([3, 3]))),
                             [2.0 / 4, 2.0 * 3 / 12], rtol=1e-6)


# ---- π̄ from a NodeView and the selection rules ---------------------------------------------

Q = [0.2, -0.5, 0.4, 0.35, 0.1]
VISITS = [3, 0, 8, 1, 0]
LEGAL = [True, True, True, True, False]
LOGITS = [0.5, 1.5, -0.2, 0.0, 3.0]


def test_pibar_policy_from_view():
  view = _view(Q, VISITS, LEGAL, LOGITS, value=0.25)
  prior = np.asarray(_softmax(f32(LOGITS), np.asarray(LEGAL)))
  lam = 1.25 * math.sqrt(12) / (4 + 12)
  expected = _pibar(_q_minmax(view), prior, np.asarray(LEGAL), lam)
  got = np.asarray(_policy(view))
  np.testing.assert_allclose(got, np.asarray(expected), atol=1e-6)
  assert got[4] == 0.0 and abs(got.sum() - 1.0) < 1e-6
  # q_minmax: the unvisited legal slot 1 has q̄ = 0, slot 2 has q̄ = 1.
  assert got[2] == got.max()
  # The MuZero c schedule at N = 12 is barely above 1.25.
  c_sched = 1.25 + math.log((12 + 19652 + 1) / 19652)
  np.testing.assert_allclose(
      np.asarray(_policy(view, c=None)),
      np.asarray(_pibar(_q_minmax(view), prior, np.asarray(LEGAL),
                                    c_sched * math.sqrt(12) / 16)), atol=1e-6)
  # Visits to a slot that is no longer selectable still count in N (as in PUCT).
  solved = _view(Q, VISITS[:4] + [5], LEGAL, LOGITS, value=0.25)
  np.testing.assert_allclose(
      np.asarray(_policy(solved)),
      np.asarray(_pibar(_q_minmax(solved), prior, np.asarray(LEGAL),
                        1.25 * math.sqrt(17) / (4 + 17))), atol=1e-6)
  # A fresh node (N = 0) gives the prior.
  fresh = _view(Q, [0] * 5, LEGAL, LOGITS)
  np.testing.assert_allclose(np.asarray(_policy(fresh)), prior, atol=1e-7)


def test_pibar_argmax_visits_rule():
  rule = pibar_argmax_visits()
  assert not rule.needs_key and rule.name == "pibar_argmax_visits"
  view = _view(Q, VISITS, LEGAL, LOGITS, value=0.25)
  pi_bar = np.asarray(_policy(view))
  expected = pi_bar - np.asarray(VISITS) / 13.0
  score = np.asarray(_score(rule, view))
  np.testing.assert_allclose(score, expected, atol=1e-6)
  assert int(masked_argmax(f32(score), np.asarray(LEGAL))) == int(np.argmax(
      np.where(LEGAL, expected, -np.inf)))
  # Fresh node: argmax prior among legal (slot 4's larger logit is illegal).
  fresh = _view(Q, [0] * 5, LEGAL, LOGITS)
  assert int(masked_argmax(_score(rule, fresh), fresh.legal)) == 1
  # Following the rule makes the visit shares track π̄ (fixed q, the prior held).
  visits = np.zeros(5, np.int64)
  step = jax.jit(lambda v: masked_argmax(rule.score(v, None), v.legal))
  for _ in range(200):
    visits[int(step(_view(Q, visits, LEGAL, LOGITS, value=0.25)))] += 1
  final = np.asarray(_policy(_view(Q, visits, LEGAL, LOGITS, value=0.25)))
  np.testing.assert_allclose(visits / visits.sum(), final, atol=0.02)
  assert visits[4] == 0
  # A batch of nodes under vmap and jit.
  views = [view, fresh, _view(Q[::-1], VISITS[::-1], LEGAL[::-1], LOGITS)]
  batched = jax.jit(jax.vmap(lambda v: rule.score(v, None)))(_stack(views))
  for i, v in enumerate(views):
    np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(_score(rule, v)),
                               atol=1e-6)


def test_pibar_sample_frequencies_match_pibar():
  rule = pibar_sample()
  assert rule.needs_key and rule.name == "pibar_sample"
  view = _view(Q, VISITS, LEGAL, LOGITS, value=0.25)
  pi_bar = np.asarray(_policy(view))
  num = 20000
  keys = jax.random.split(jax.random.PRNGKey(0), num)
  picks = np.asarray(jax.jit(jax.vmap(lambda k: masked_argmax(rule.score(view, k),
                                                               view.legal)))(keys))
  freq = np.bincount(picks, minlength=5) / num
  assert freq[4] == 0.0
  # 4.5 standard errors.
  np.testing.assert_allclose(freq, pi_bar, atol=4.5 * math.sqrt(0.25 / num))
  # A batch of nodes, one key each.
  views = _stack([view, _view(Q, [0] * 5, LEGAL, LOGITS)])
  scores = jax.jit(jax.vmap(rule.score))(views, jax.random.split(jax.random.PRNGKey(1), 2))
  assert scores.shape == (2, 5) and np.all(np.asarray(scores)[:, 4] == -np.inf)


# ---- Gumbel MuZero: schedules ------------------------------------------------------------------

def test_sequential_halving_pinned_schedules():
  np.testing.assert_array_equal(gumbel.sequential_halving_visits(8, 24),
                                [0] * 8 + [1] * 4 + [2] * 4 + [3, 3, 4, 4, 5, 5, 6, 6])
  np.testing.assert_array_equal(gumbel.sequential_halving_visits(4, 10),
                                [0, 0, 0, 0, 1, 1, 2, 2, 3, 3])
  np.testing.assert_array_equal(gumbel.sequential_halving_visits(1, 5), [0, 1, 2, 3, 4])
  np.testing.assert_array_equal(gumbel.sequential_halving_visits(16, 4), [0, 0, 0, 0])
  assert gumbel.sequential_halving_visits(3, 0).shape == (0,)
  table = gumbel.sequential_halving_table(4, 10)
  assert table.shape == (5, 10) and table.dtype == np.int32
  np.testing.assert_array_equal(table[4], [0, 0, 0, 0, 1, 1, 2, 2, 3, 3])
  np.testing.assert_array_equal(table[0], table[1])
  with pytest.raises(ValueError):
    gumbel.sequential_halving_visits(0, 5)


def test_sequential_halving_matches_mctx():
  seq_halving = pytest.importorskip("mctx._src.seq_halving")
  for m in [1, 2, 3, 4, 5, 7, 8, 16, 32]:
    for n in [1, 2, 5, 10, 16, 24, 50, 64, 100, 200]:
      np.testing.assert_array_equal(
          gumbel.sequential_halving_visits(m, n),
          np.asarray(seq_halving.get_sequence_of_considered_visits(m, n)), err_msg=f"{m}, {n}")


# ---- Gumbel MuZero: v_mix, completed Q, σ, π′ ------------------------------------------------

VMIX_LOGITS = [-np.inf, -1.0, 2.0, -np.inf]
VMIX_VISITS = [0, 4, 4, 0]
VMIX_Q = list(10.0 / 54.0 * np.array([20.0, 3.0, -1.0, 10.0]))


@pytest.mark.parametrize("legal", [[True] * 4, [False, True, True, False]])
def test_mixed_value_vector(legal):
  v_mix = _mixed(-0.8, f32(VMIX_LOGITS), f32(VMIX_Q), jnp.asarray(VMIX_VISITS),
                             np.asarray(legal))
  np.testing.assert_allclose(float(v_mix), -0.2222710, atol=1e-6)
  # Nothing visited: v̂.
  assert float(_mixed(-0.8, f32(VMIX_LOGITS), f32(VMIX_Q), jnp.zeros(4, jnp.int32),
                                  np.asarray(legal))) == pytest.approx(-0.8)


def test_mixed_value_matches_mctx_and_vmaps():
  qtransforms = pytest.importorskip("mctx._src.qtransforms")
  rng = np.random.default_rng(3)
  logits = rng.normal(size=(16, 6)).astype(np.float32)
  q = rng.normal(size=(16, 6)).astype(np.float32)
  visits = rng.integers(0, 4, (16, 6)).astype(np.int32)
  raw = rng.normal(size=16).astype(np.float32)
  legal = np.ones((16, 6), bool)
  ours = jax.jit(jax.vmap(gumbel.mixed_value))(raw, logits, q, visits, legal)
  theirs = jax.jit(jax.vmap(qtransforms._compute_mixed_value))(raw, q, visits,
                                                               jax.nn.softmax(logits))
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-5)


def test_completed_q_sigma_and_improved_policy():
  q = f32([0.5, 9.0, -0.25, 2.0])
  visits = jnp.asarray([2, 0, 5, 0])
  np.testing.assert_allclose(np.asarray(_completed(q, visits, 0.125)),
                             [0.5, 0.125, -0.25, 0.125])
  np.testing.assert_allclose(np.asarray(_sigma(f32([0.0, 0.5, 1.0, 0.2]), visits)),
                             (50 + 5) * 0.1 * np.array([0.0, 0.5, 1.0, 0.2]), rtol=1e-6)
  np.testing.assert_allclose(
      np.asarray(_sigma(f32([1.0]), jnp.asarray([3]), c_visit=10.0, c_scale=1.0)),
      [13.0])
  completed = f32([0.5, 0.125, -0.25, 0.125])
  legal = np.array([True, True, True, False])
  logits = np.array([0.1, 0.2, -0.3, 5.0])
  got = np.asarray(_improved(f32(logits), completed, visits, legal))
  scaled = (np.array([0.5, 0.125, -0.25]) + 0.25) / 0.75
  z = logits[:3] + 5.5 * scaled
  expected = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
  np.testing.assert_allclose(got[:3], expected, atol=1e-6)
  assert got[3] == 0.0
  # Rescaling choices.
  np.testing.assert_allclose(np.asarray(_rescale(completed, legal)), [1, 0.5, 0, 0],
                             atol=1e-6)
  np.testing.assert_allclose(np.asarray(_rescale(completed, legal, "all")),
                             [1, 0.5, 0, 0.5], atol=1e-6)
  np.testing.assert_array_equal(np.asarray(_rescale(completed, legal, "none")),
                                np.asarray(completed))
  np.testing.assert_array_equal(np.asarray(_rescale(f32([3.0, 3.0]), [True, True])), 0)
  with pytest.raises(ValueError):
    _rescale(completed, legal, "tree")


def test_transformed_q_matches_mctx_rescale_and_sigma():
  qtransforms = pytest.importorskip("mctx._src.qtransforms")
  rng = np.random.default_rng(5)
  logits = rng.normal(size=(8, 5)).astype(np.float32)
  q = rng.normal(size=(8, 5)).astype(np.float32)
  visits = rng.integers(0, 3, (8, 5)).astype(np.int32)
  raw = rng.normal(size=8).astype(np.float32)
  legal = np.ones((8, 5), bool)
  ours = jax.jit(jax.vmap(lambda *a: gumbel.transformed_q(*a, normalize="all")))(
      raw, logits, q, visits, legal)

  @jax.jit
  def theirs_fn(raw, q, visits, logits):
    v_mix = jax.vmap(qtransforms._compute_mixed_value)(raw, q, visits, jax.nn.softmax(logits))
    completed = jnp.where(visits > 0, q, v_mix[:, None])
    return ((50 + visits.max(-1, keepdims=True)) * 0.1
            * jax.vmap(qtransforms._rescale_qvalues, (0, None))(completed, 1e-8))

  theirs = theirs_fn(raw, q, visits, logits)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-4)


# ---- Gumbel MuZero: interior rule and root -------------------------------------------------

def _interior_reference(q, visits, legal, logits, value, c_visit=50.0, c_scale=0.1):
  q, visits, legal = np.asarray(q, float), np.asarray(visits), np.asarray(legal)
  logits = np.asarray(logits, float)
  prior = np.where(legal, np.exp(logits - logits[legal].max()), 0.0)
  prior /= prior.sum()
  visited = legal & (visits > 0)
  n = visits[legal].sum()  # π′ uses the selectable slots only
  mean = (prior[visited] * q[visited]).sum() / prior[visited].sum() if n else 0.0
  v_mix = (value + n * mean) / (1 + n)
  completed = np.where(visited, q, v_mix)
  lo, hi = completed[legal].min(), completed[legal].max()
  scaled = (completed - lo) / max(hi - lo, 1e-8)
  z = np.where(legal, logits + (c_visit + visits[legal].max()) * c_scale * scaled, -np.inf)
  improved = np.exp(z - z.max())
  improved /= improved.sum()
  return improved - visits / (1.0 + visits.sum()), improved  # n/(1 + N) counts every slot


def test_gumbel_interior_rule_on_hand_built_view():
  rule = gumbel.gumbel_interior_rule()
  assert not rule.needs_key and rule.name == "gumbel_interior"
  view = _view(Q, VISITS, LEGAL, LOGITS, value=0.25)
  expected, improved = _interior_reference(Q, VISITS, LEGAL, LOGITS, 0.25)
  np.testing.assert_allclose(np.asarray(_score(rule, view)), expected, atol=1e-6)
  np.testing.assert_allclose(np.asarray(_interior_policy(view)), improved, atol=1e-6)
  # With c_scale = 1 (board games) the Q term dominates: slot 2 (best q) is chosen although
  # it has the most visits; with the default the prior favourite (slot 1, unvisited) wins.
  strong = gumbel.gumbel_interior_rule(c_scale=1.0)
  assert int(masked_argmax(_score(strong, view), view.legal)) == 2
  assert int(masked_argmax(_score(rule, view), view.legal)) == 1
  # Fresh node: argmax prior among legal.
  fresh = _view(Q, [0] * 5, LEGAL, LOGITS)
  assert int(masked_argmax(_score(rule, fresh), fresh.legal)) == 1
  # A batch of nodes under jit and vmap.
  # The third node has a visited slot that is no longer selectable (e.g. solved): it counts
  # in N but not in π′.
  cases = [(Q, VISITS, LEGAL, 0.25), (Q, [0] * 5, LEGAL, 0.0),
           (Q[::-1], [6, 0, 8, 1, 3], LEGAL[::-1], -0.3)]
  views = [_view(q, n, legal, LOGITS, value=value) for q, n, legal, value in cases]
  batched = np.asarray(jax.jit(jax.vmap(lambda v: rule.score(v, None)))(_stack(views)))
  for i, (q, n, legal, value) in enumerate(cases):
    np.testing.assert_allclose(batched[i], _interior_reference(q, n, legal, LOGITS, value)[0],
                               atol=1e-6)
  with pytest.raises(ValueError):
    gumbel.gumbel_interior_rule(value_source="raw")


def test_interior_rule_recovers_raw_value_from_running_mean():
  raw = -0.4
  n = np.asarray(VISITS)
  running = (raw + np.sum(np.where(LEGAL, n, 0) * np.asarray(Q))) / (1 + n.sum())
  view = _view(Q, VISITS, LEGAL, LOGITS, value=running)
  recovered = _score(gumbel.gumbel_interior_rule(value_source="recover"), view)
  expected, _ = _interior_reference(Q, VISITS, LEGAL, LOGITS, raw)
  np.testing.assert_allclose(np.asarray(recovered), expected, atol=1e-5)


def test_root_sequential_halving_on_a_bandit():
  """m = 4 of 6 actions, n = 10 simulations, deterministic q: the Gumbel-top-4 of the logits
  get one visit each, the two best of them by q get the rest, and the best is returned."""
  logits = f32([0.3, 0.2, 0.1, 0.0, -0.1, -0.2])
  true_q = np.array([0.0, 1.0, 0.2, 0.9, 5.0, 5.0], np.float32)
  legal = np.ones(6, bool)
  schedule = gumbel.sequential_halving_visits(4, 10)
  g = jnp.zeros(6)

  @jax.jit
  def pick(visits, considered):
    q = jnp.where(visits > 0, true_q, 0.0)
    sigma = gumbel.transformed_q(0.0, logits, q, visits, legal)
    return masked_argmax(_root(g, logits, sigma, visits, legal, considered), legal)

  visits = np.zeros(6, np.int32)
  for considered in schedule:
    a = int(pick(jnp.asarray(visits), considered))
    assert visits[a] == considered
    visits[a] += 1
  np.testing.assert_array_equal(visits, [1, 4, 1, 4, 0, 0])
  assert int(pick(jnp.asarray(visits), visits.max())) == 1
  # The Gumbel draw changes which four are considered.
  g2 = f32([0.0, 0.0, -5.0, 0.0, 0.0, 0.0])
  scores = _root(g2, logits, jnp.zeros(6), jnp.zeros(6, jnp.int32), legal, 0)
  assert set(np.argsort(-np.asarray(scores))[:4]) == {0, 1, 3, 4}
  # Illegal slots never score.
  masked = _root(g, logits, jnp.zeros(6), jnp.zeros(6, jnp.int32),
                              np.array([1, 0, 1, 1, 1, 1], bool), 0)
  assert float(masked[1]) == -np.inf and np.isfinite(np.asarray(masked)[[0, 2]]).all()


def test_root_rule_falls_back_to_the_least_visited_legal_slots():
  """Where no legal slot carries the simulation's considered visit count (a reused tree), the
  least visited legal slots compete; illegal slots never do, whatever their count."""
  rule = gumbel.gumbel_root_rule(num_simulations=8, max_num_considered_actions=4)
  legal = np.array([True, True, True, True, False])
  context = RootContext(noise=jnp.zeros(5), simulation=jnp.int32(0), raw_value=jnp.float32(0.0))

  def finite_slots(visits, legal=legal):
    view = _view(Q, visits, legal, LOGITS)
    return set(np.flatnonzero(np.isfinite(np.asarray(rule.score(view, context)))))

  # Simulation 0 considers unvisited slots: only the illegal slot 4 has none.
  assert finite_slots([3, 5, 3, 7, 0]) == {0, 2}
  assert finite_slots([3, 0, 3, 0, 0]) == {1, 3}  # the considered count is carried: no fallback
  assert finite_slots([3, 5, 3, 7, 0], np.zeros(5, bool)) == set()
  batched = jax.jit(jax.vmap(rule.score))(
      _stack([_view(Q, [3, 5, 3, 7, 0], legal, LOGITS), _view(Q, [3, 0, 3, 0, 0], legal, LOGITS)]),
      jax.tree.map(lambda x: jnp.stack([x, x]), context))
  assert [set(np.flatnonzero(np.isfinite(row))) for row in np.asarray(batched)] == [{0, 2},
                                                                                    {1, 3}]


@pytest.mark.parametrize("max_considered", [1, 2, 3, 4, 7, 16])
def test_from_a_fresh_root_the_schedule_always_has_a_slot_to_visit(max_considered):
  """What lets a search from fresh roots skip the fallback (``RootContext.reused=False``): for
  any number of legal slots and any budget, whichever carrier of the considered count each
  simulation picks, some legal slot carries the next one."""
  rng = np.random.default_rng(max_considered)
  for num_legal in range(1, 20):
    for num_simulations in (1, 5, 16, 32, 50, 128):
      table = gumbel.sequential_halving_table(max_considered, num_simulations)
      considered_row = table[min(max_considered, num_legal)]
      visits = np.zeros(num_legal, int)
      for considered in considered_row:
        carriers = np.flatnonzero(visits == considered)
        assert carriers.size, (num_legal, num_simulations, list(visits), considered)
        visits[rng.choice(carriers)] += 1


def test_the_root_rule_without_reuse_scores_what_the_fallback_would():
  """On a fresh search's visit counts the rule scores the same with and without the fallback."""
  rule = gumbel.gumbel_root_rule(num_simulations=8, max_num_considered_actions=4)
  legal = np.array([True, True, True, True, False])
  for visits, simulation in (([0, 0, 0, 0, 0], 0), ([1, 1, 0, 1, 0], 3), ([2, 1, 2, 1, 0], 6)):
    view = _view(Q, visits, legal, LOGITS)
    scores = [np.asarray(rule.score(view, RootContext(
        noise=jnp.arange(5.0), simulation=jnp.int32(simulation), raw_value=jnp.float32(0.0),
        reused=reused))) for reused in (True, False)]
    np.testing.assert_array_equal(*scores)
