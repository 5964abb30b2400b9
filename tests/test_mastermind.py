"""jaxsearch.games.mastermind: encodings, the feedback table, the guessing game's rules (chance,
partition, conventions), the bounds against exhaustive optima, and the entropic estimator
against a float64 numpy reference; all under jit and vmap.

Jitted functions are built once per instance (compiles dominate on CPU).
"""

import functools
import itertools
import re
from collections import Counter, defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.guessing import game as guessing, estimator as guessing_estimator
from jaxsearch.games import mastermind_symmetry
from jaxsearch.games import mastermind as mm
from guessing_jit import JittedGame

# Optimal total guesses over all secrets (docs/algorithms.md §6, found by exhaustive search).
OPTIMA = {(2, 2): 8, (2, 3): 21, (3, 2): 18, (2, 4): 45, (3, 3): 73}


class Jitted(JittedGame):
  """One instance with its game functions jitted (batched with vmap) once."""

  def __init__(self, pegs, colours, **kwargs):
    self.m = mm.make(pegs, colours, **kwargs)
    self.table = np.asarray(self.m.feedback)
    self.jit_game(self.m.game, self.m.estimator)


@functools.lru_cache(maxsize=None)
def instance(pegs, colours) -> Jitted:
  return Jitted(pegs, colours)


def _py_score(guess, secret, colours):
  exact = sum(g == s for g, s in zip(guess, secret))
  common = sum(min(guess.count(c), secret.count(c)) for c in range(colours))
  return exact, common - exact


def _optimal_total(table, solved, secrets):
  """Exhaustive optimum: least total number of guesses to find every secret of ``secrets``."""

  @functools.lru_cache(maxsize=None)
  def solve(remaining):
    if len(remaining) == 1:
      return 1
    best = None
    for g in range(table.shape[0]):
      parts = defaultdict(list)
      for s in remaining:
        parts[int(table[g, s])].append(s)
      if len(parts) == 1 and g not in remaining:
        continue  # learns nothing
      total = len(remaining) + sum(solve(frozenset(p)) for c, p in parts.items() if c != solved)
      best = total if best is None else min(best, total)
    return best

  return solve(frozenset(secrets))


def _reference_estimates(table, mask, secret_of_guess):
  """float64 numpy entropic estimates (``+inf`` = masked) for one remaining set; ``table`` is
  ``[G, S]``."""
  idx = np.flatnonzero(mask)
  n, num_guesses = len(idx), table.shape[0]
  flat = (np.arange(num_guesses)[:, None] * 256 + table[:, idx]).reshape(-1)
  p = np.bincount(flat, minlength=num_guesses * 256).reshape(num_guesses, 256) / n
  h = -np.sum(p * np.log2(np.where(p > 0, p, 1.0)), axis=1)
  sog = np.asarray(secret_of_guess)
  cand = (sog >= 0) & mask[np.maximum(sog, 0)]
  p_sol = np.where(cand, 1.0 / n, 0.0)
  with np.errstate(divide="ignore", invalid="ignore"):
    out = p_sol + (1 - p_sol) * (np.log2(n) / h + 1)
  out = np.where(cand & (n == 1), 1.0, out)
  return np.where((h == 0) & ~cand, np.inf, out)


# --- encodings and table ------------------------------------------------------------------------


def test_feedback_keys_order():
  keys = mm.feedback_keys(4)
  assert len(keys) == 14 and keys[-1] == (4, 0) and (3, 1) not in keys
  assert keys == sorted(keys) and all(b + w <= 4 for b, w in keys)
  assert mm.feedback_keys(1) == [(0, 0), (1, 0)]
  assert [len(mm.feedback_keys(p)) for p in (2, 3, 5)] == [5, 9, 20]


def test_codes_and_outcome_strings_roundtrip():
  m = instance(4, 6).m
  assert (m.num_codes, m.num_outcomes, m.solved_code) == (1296, 14, 13)
  assert m.game.name == "mastermind_p4_c6" and m.game.num_actions == 1296
  assert [m.code_string(i) for i in (0, 1, 6, 1295)] == ["1111", "1112", "1121", "6666"]
  assert all(m.code_index(m.code_string(i)) == i for i in range(m.num_codes))
  assert [m.outcome_string(i) for i in (0, 1, 13)] == ["b0w0", "b0w1", "b4w0"]
  assert all(m.outcome_index(m.outcome_string(i)) == i for i in range(14))
  for bad in ("111", "11117", "1170", "abcd"):
    with pytest.raises(ValueError):
      m.code_index(bad)
  with pytest.raises(ValueError):
    m.outcome_index("b3w1")
  with pytest.raises(ValueError):
    m.code_string(1296)


def test_feedback_table_matches_python_scoring():
  m = instance(4, 6).m
  table = instance(4, 6).table
  assert table.shape == (1296, 1296) and table.dtype == np.uint8
  np.testing.assert_array_equal(table, table.T)  # Mastermind scoring is symmetric
  np.testing.assert_array_equal(np.asarray(m.by_secret), table.T)
  np.testing.assert_array_equal(np.diag(table), 13)
  digits = mm.code_digits(4, 6).tolist()
  keys = {k: i for i, k in enumerate(mm.feedback_keys(4))}
  rng = np.random.default_rng(0)
  for g, s in rng.integers(0, 1296, size=(3000, 2)):
    assert table[g, s] == keys[_py_score(digits[g], digits[s], 6)]
  assert m.score("1122", "1213") == "b1w2"
  assert m.score("1234", "4321") == "b0w4"
  assert m.score("1122", "1122") == "b4w0"
  # Knuth's partition of the 1296 codes by the feedback to 1122.
  sizes = sorted(Counter(table[m.code_index("1122")].tolist()).values())
  assert sizes == sorted([256, 256, 96, 16, 1, 256, 208, 36, 114, 32, 4, 20, 1])


@pytest.mark.parametrize("size", [1, 32, 33, 100])
def test_bitsets_roundtrip(size):
  rng = np.random.default_rng(size)
  masks = rng.random((7, size)) < 0.5
  masks[0] = True
  bits = jax.jit(guessing.mask_to_bits)(masks)
  assert bits.shape == (7, guessing.num_words(size)) and bits.dtype == jnp.uint32
  np.testing.assert_array_equal(np.asarray(guessing.bits_to_mask(bits, size)), masks)
  np.testing.assert_array_equal(np.asarray(guessing.popcount(bits)), masks.sum(1))
  # Unbatched calls agree with the batched ones.
  np.testing.assert_array_equal(np.asarray(guessing.mask_to_bits(masks[1])), np.asarray(bits[1]))


def test_make_rejects_bad_sizes():
  for kwargs in (dict(pegs=0), dict(colours=0), dict(colours=10), dict(pegs=2.5),
                 dict(pegs=6, colours=6)):
    with pytest.raises(ValueError):
      mm.make(**kwargs)


# --- rules ---------------------------------------------------------------------------------------


def test_initial_state_legal_and_conventions():
  j = instance(4, 6)
  s0 = j.m.initial_state()
  assert s0.remaining.shape == (41,) and s0.remaining.dtype == jnp.uint32
  assert int(guessing.popcount(s0.remaining)) == 1296 and not bool(s0.solved)
  assert bool(jnp.all(j.one["legal_actions"](s0)))
  # A wrong guess: reward -1, discount 1, not terminal.
  g, o = j.m.code_index("1122"), j.m.outcome_index("b1w0")
  r = j.one["step"](s0, g, o)
  assert (float(r.reward), float(r.discount), bool(r.terminal)) == (-1.0, 1.0, False)
  assert len(j.m.remaining_codes(r.state)) == 256
  assert all(j.m.score("1122", c) == "b1w0" for c in j.m.remaining_codes(r.state))
  # The all-correct feedback ends the game: reward -1, discount 0, terminal, one code left.
  r = j.one["step"](s0, g, j.m.solved_code)
  assert (float(r.reward), float(r.discount), bool(r.terminal)) == (-1.0, 0.0, True)
  assert j.m.remaining_codes(r.state) == ["1122"]
  # Terminal: no legal action, stepping is a no-op, bounds are 0 (estimator: see the vmap
  # test).
  t = r.state
  assert not bool(jnp.any(j.one["legal_actions"](t)))
  r2 = j.one["step"](t, 5, 3)
  assert (float(r2.reward), float(r2.discount), bool(r2.terminal)) == (0.0, 0.0, True)
  np.testing.assert_array_equal(np.asarray(r2.state.remaining), np.asarray(t.remaining))
  assert float(j.one["pessimistic_value"](t)) == 0.0
  assert float(j.one["optimistic_value"](t)) == 0.0


def test_outcome_probs_and_step_partition():
  j = instance(4, 6)
  rng = np.random.default_rng(1)
  masks = np.ones((4, 1296), bool)
  masks[1] = rng.random(1296) < 0.3
  masks[2] = False
  masks[2, rng.choice(1296, 7, replace=False)] = True
  masks[3] = False
  masks[3, 100] = True
  states = j.states(masks)
  actions = jnp.asarray(rng.integers(0, 1296, 4), jnp.int32)
  probs = np.asarray(j.probs(states, actions))
  assert probs.shape == (4, 14) and probs.dtype == np.float32
  np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
  outcomes = jnp.arange(14, dtype=jnp.int32)
  for b in range(4):
    state = jax.tree.map(lambda x: x[b], states)
    out = j.step_outcomes(state, actions[b], outcomes)
    children = np.asarray(guessing.bits_to_mask(out.state.remaining, 1296))  # [O, S]
    # The children partition the remaining set, and their sizes are the probabilities.
    np.testing.assert_array_equal(children.sum(0), masks[b].astype(int))
    np.testing.assert_allclose(children.sum(1) / masks[b].sum(), probs[b], rtol=1e-6)
    expected = j.table[int(actions[b])][None, :] == np.arange(14)[:, None]
    np.testing.assert_array_equal(children, expected & masks[b])
    np.testing.assert_array_equal(np.asarray(out.reward), -1.0)
    np.testing.assert_array_equal(np.asarray(out.terminal), np.arange(14) == 13)
    np.testing.assert_array_equal(np.asarray(out.discount), np.where(np.arange(14) == 13, 0, 1))


def _game_expectimax(j: Jitted) -> float:
  """Optimal value by exhaustive expectimax over the Game's own step / outcome_probs."""
  game, num = j.m.game, j.m.num_outcomes
  outcomes = jnp.arange(num, dtype=jnp.int32)
  step = jax.jit(jax.vmap(game.step, in_axes=(None, None, 0)))
  probs = jax.jit(game.outcome_probs)

  @functools.lru_cache(maxsize=None)
  def value(bits: tuple, solved: bool) -> float:
    if solved:
      return 0.0
    state = guessing.State(remaining=jnp.asarray(bits, jnp.uint32), solved=jnp.bool_(False))
    best = -np.inf
    for a in range(game.num_actions):
      p = np.asarray(probs(state, a), np.float64)
      out = step(state, jnp.int32(a), outcomes)
      nxt = np.asarray(out.state.remaining)
      q = 0.0
      for o in np.flatnonzero(p > 0):
        if tuple(nxt[o]) == bits and not bool(out.terminal[o]):
          q = -np.inf  # learns nothing
          break
        q += p[o] * (float(out.reward[o]) + float(out.discount[o]) *
                     value(tuple(nxt[o].tolist()), bool(out.terminal[o])))
      best = max(best, q)
    return best

  s0 = j.m.initial_state()
  return value(tuple(np.asarray(s0.remaining).tolist()), False)


@pytest.mark.parametrize("spec", [(2, 2), (2, 3)])
def test_game_expectimax_matches_optimum(spec):
  j = instance(*spec)
  np.testing.assert_allclose(_game_expectimax(j), -OPTIMA[spec] / j.m.num_codes, rtol=1e-6)


# --- bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", sorted(OPTIMA))
def test_bounds_bracket_exhaustive_optima(spec):
  j = instance(*spec)
  n = j.m.num_codes
  optimum = _optimal_total(j.table, j.m.solved_code, range(n))
  assert optimum == OPTIMA[spec]
  s0 = jax.tree.map(lambda x: x[None], j.m.initial_state())
  pess, opt = float(j.pessimistic(s0)[0]), float(j.optimistic(s0)[0])
  assert pess == -(n + 1) / 2
  assert pess <= -optimum / n <= opt + 1e-6
  # Random sub-sets (reachable or not, the bounds hold for any candidate set).
  rng = np.random.default_rng(sum(spec))
  masks = rng.random((12, n)) < rng.random((12, 1))
  masks[:, 0] = True
  states = j.states(masks)
  pess, opt = np.asarray(j.pessimistic(states)), np.asarray(j.optimistic(states))
  for b in range(12):
    k = masks[b].sum()
    best = _optimal_total(j.table, j.m.solved_code, np.flatnonzero(masks[b]).tolist())
    assert pess[b] == -(k + 1) / 2
    assert pess[b] <= -best / k <= opt[b] + 1e-6, (b, k, best, pess[b], opt[b])


def test_action_bounds_are_admissible_by_brute_force():
  """No policy that starts with guess ``g`` beats ``action_bounds[g]``: checked against the
  exhaustive optimum of every guess on random candidate sets of 3 × 3."""
  j = instance(3, 3)
  rng = np.random.default_rng(7)
  masks = rng.random((8, 27)) < rng.uniform(0.15, 0.5, (8, 1))
  masks[:, 0] = True
  est = j.estimate(None, jax.random.PRNGKey(0), j.states(masks))
  bounds, q = np.asarray(est.action_bounds), np.asarray(est.action_values)
  tight = 0
  for b in range(len(masks)):
    secrets = np.flatnonzero(masks[b])
    n = len(secrets)
    for g in np.flatnonzero(np.isfinite(q[b])):
      parts = defaultdict(list)
      for s in secrets:
        parts[int(j.table[g, s])].append(int(s))
      exact = n + sum(_optimal_total(j.table, j.m.solved_code, part)
                      for code, part in parts.items() if code != j.m.solved_code)
      assert -exact / n <= bounds[b, g] + 1e-6, (b, g, exact, -bounds[b, g] * n)
      tight += abs(-exact / n - bounds[b, g]) < 1e-6
    # The node's best action bound is never looser than the game's counting bound.
    assert np.max(bounds[b]) <= float(j.optimistic(j.states(masks[b:b + 1]))[0]) + 1e-6
  assert tight > 0  # and the bound is attained somewhere: it is not trivially loose


def test_counting_bound_values():
  # F = 13 non-solved feedbacks for 4 x 6: 1 + 13 * 2 + 169 * 3 + (1296 - 183) * 4.
  assert guessing.counting_bound_total(1296, 13) == 1 + 26 + 507 + 1113 * 4
  assert [guessing.counting_bound_total(n, 3) for n in range(1, 6)] == [1, 3, 5, 7, 10]
  assert guessing.counting_bound_total(5, 1) == 15  # one level per secret: 1 + 2 + ... + 5
  j = instance(4, 6)
  # The jnp bound at n = 1..1296 (first n codes) agrees with the Python one, and lies above
  # the pessimistic bound.
  sizes = np.asarray([1, 2, 3, 13, 14, 15, 183, 184, 700, 1296])
  masks = np.arange(1296)[None, :] < sizes[:, None]
  states = j.states(masks)
  opt = np.asarray(j.optimistic(states))
  expected = [-guessing.counting_bound_total(n, 13) / n for n in sizes]
  np.testing.assert_allclose(opt, expected, rtol=1e-6)
  np.testing.assert_allclose(opt[-1], -4986 / 1296, rtol=1e-6)
  assert np.all(np.asarray(j.pessimistic(states)) <= opt)
  # Below the known optimum 5625 / 1296 (Koyama & Lai).
  assert opt[-1] >= -5625 / 1296


def test_branching_counts_only_reachable_feedbacks():
  # With 2 pegs and 2 colours (0, 1) never occurs: F = 3, not 4.
  j = instance(2, 2)
  assert 1 not in set(j.table.reshape(-1).tolist())
  s0 = jax.tree.map(lambda x: x[None], j.m.initial_state())
  np.testing.assert_allclose(float(j.optimistic(s0)[0]), -(1 + 3 * 2) / 4)


# --- estimator ----------------------------------------------------------------------------------


def test_estimator_matches_reference_on_every_tier():
  j = instance(4, 6)
  rng = np.random.default_rng(3)
  sizes = [1296, 1000, 300, 200, 70, 40, 20, 16, 9, 3, 2, 1]
  masks = np.zeros((len(sizes), 1296), bool)
  for b, n in enumerate(sizes):
    masks[b, rng.choice(1296, n, replace=False)] = True
  est = j.estimate(None, jax.random.PRNGKey(0), j.states(masks))
  q = np.asarray(est.action_values)
  assert q.shape == (len(sizes), 1296) and q.dtype == np.float32
  identity = np.arange(1296)
  for b in range(len(sizes)):
    ref = _reference_estimates(j.table, masks[b], identity)
    np.testing.assert_array_equal(np.isinf(q[b]), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(-q[b][finite], ref[finite], rtol=2e-6)
    np.testing.assert_allclose(float(est.value[b]), -ref[finite].min(), rtol=2e-6)
  # The action bounds: n + Σ over unsolved feedback parts of the counting bound T(|part|).
  bounds = np.asarray(est.action_bounds)
  totals = np.array([guessing.counting_bound_total(n, 13) for n in range(1297)])
  for b in range(len(sizes)):
    idx = np.flatnonzero(masks[b])
    counts = np.stack([np.bincount(j.table[g, idx], minlength=14) for g in range(1296)])
    counts[:, j.m.solved_code] = 0
    ref = -(len(idx) + totals[counts].sum(axis=1)) / len(idx)
    finite = np.isfinite(q[b])
    np.testing.assert_array_equal(np.isfinite(bounds[b]), finite)
    np.testing.assert_allclose(bounds[b][finite], ref[finite], rtol=2e-6)
  # One remaining code: it scores -1, every other guess is masked.
  last = q[-1]
  only = int(np.flatnonzero(masks[-1])[0])
  assert last[only] == -1.0 and np.sum(np.isfinite(last)) == 1
  # Two remaining codes: guessing one of them costs 1.5 on average.
  pair = np.flatnonzero(masks[-2])
  np.testing.assert_allclose(q[-2][pair], -1.5)
  np.testing.assert_allclose(float(est.value[-2]), -1.5)


def test_estimator_root_and_tiers_agree():
  j = instance(4, 6)
  # Without compaction tiers, in big guess chunks: same numbers (same batch shape as above,
  # so the default estimator is not compiled again).
  plain = jax.jit(guessing_estimator.entropic_estimator(j.m.by_secret, np.arange(1296), 14,
                                                       tiers=(), guess_chunk=1000))
  rng = np.random.default_rng(4)
  fill = np.asarray([1.0, 0.5, 0.05, 0.03, 0.02, 0.01, 0.01, 0.005, 0.003, 0.002, 0.001, 0])
  masks = rng.random((12, 1296)) < fill[:, None]
  masks[:, 7] = True
  states = j.states(masks)
  a = j.estimate(None, None, states)
  b = plain(None, None, states)
  np.testing.assert_allclose(np.asarray(a.action_values), np.asarray(b.action_values),
                             rtol=1e-6)
  np.testing.assert_allclose(np.asarray(a.value), np.asarray(b.value), rtol=1e-6)
  # Root: every code with four distinct colours is best (1/1296 + (1295/1296) * (log2 1296 /
  # H(1234) + 1)).
  q0 = np.asarray(a.action_values[0])
  best = {j.m.code_string(i) for i in np.flatnonzero(q0 == q0.max())}
  assert best == {"".join(p) for p in itertools.permutations("123456", 4)}


# --- jit / vmap ---------------------------------------------------------------------------------


def test_game_functions_under_jit_and_vmap_match_unbatched():
  j = instance(3, 3)
  game = j.m.game
  rng = np.random.default_rng(5)
  masks = rng.random((6, 27)) < 0.6
  masks[:, 0] = True
  states = j.states(masks)
  actions = jnp.asarray(rng.integers(0, 27, 6), jnp.int32)
  outcomes = jnp.asarray([game.num_outcomes - 1, 0, 1, 2, 3, 4], jnp.int32)
  batched = (j.step(states, actions, outcomes), j.probs(states, actions), j.legal(states),
             j.pessimistic(states), j.optimistic(states))
  for b in range(6):
    state = jax.tree.map(lambda x: x[b], states)
    one = j.one
    single = (one["step"](state, actions[b], outcomes[b]),
              one["outcome_probs"](state, actions[b]), one["legal_actions"](state),
              one["pessimistic_value"](state), one["optimistic_value"](state))
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x)[b], np.asarray(y)),
                 batched, single)
  keys = jax.random.split(jax.random.PRNGKey(0), 3)
  roots = jax.jit(jax.vmap(game.init))(keys)
  assert roots.remaining.shape == (3, 1) and int(roots.remaining[2, 0]) == (1 << 27) - 1


def test_batched_estimator_agrees_with_the_one_by_one_default():
  """The accelerator's way (every histogram at once, a product with the one-hot table) gives
  the CPU's estimates: the same values and bounds to float rounding, under
  jit and under an outer vmap; with symmetry, the same guesses are masked."""
  j = instance(4, 6)
  rng = np.random.default_rng(4)
  fill = np.asarray([1.0, 0.5, 0.05, 0.03, 0.02, 0.01, 0.01, 0.005, 0.003, 0.002, 0.001, 0])
  masks = rng.random((12, 1296)) < fill[:, None]
  masks[:, 7] = True
  masks[-1] = np.arange(1296) == 5  # one code left
  states = j.states(masks)
  batched = guessing_estimator.entropic_estimator(j.m.by_secret, np.arange(1296), 14,
                                                  branching=13, batched=True)
  a, b = j.estimate(None, None, states), jax.jit(batched)(None, None, states)
  np.testing.assert_array_equal(np.isfinite(a.action_values), np.isfinite(b.action_values))
  finite = np.isfinite(np.asarray(a.action_values))
  np.testing.assert_allclose(np.asarray(b.action_values)[finite],
                             np.asarray(a.action_values)[finite], rtol=1e-6)
  np.testing.assert_allclose(np.asarray(b.value), np.asarray(a.value), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(b.action_bounds), np.asarray(a.action_bounds), rtol=1e-6)
  pairs = jax.tree.map(lambda x: x.reshape((6, 2) + x.shape[1:]), states)
  vm = jax.jit(jax.vmap(batched, in_axes=(None, None, 0)))(None, None, pairs)
  np.testing.assert_array_equal(np.asarray(vm.action_values).reshape(12, 1296),
                                np.asarray(b.action_values))


def test_symmetry_masks_the_same_guesses_batched(monkeypatch):
  sym = mm.make(3, 4, symmetry=True)
  state = sym.initial_state()
  for guess, feedback in [("112", "b1w0"), ("134", "b0w1")]:
    state = sym.game.step(state, jnp.int32(sym.code_index(guess)),
                          jnp.int32(sym.outcome_index(feedback))).state
  states = jax.tree.map(lambda *x: jnp.stack(x), sym.initial_state(), state)
  one_by_one = sym.estimator(None, None, states)
  monkeypatch.setattr(mastermind_symmetry, "all_states_at_once", lambda batched=None: True)
  at_once = jax.jit(sym.estimator)(None, None, states)
  np.testing.assert_array_equal(np.isfinite(at_once.action_values),
                                np.isfinite(one_by_one.action_values))


def test_batched_states_env_var_picks_the_program(monkeypatch):
  from jaxsearch.guessing import estimator as guessing_estimator

  def loops():
    """One state at a time: a lax.map (a scan) over the states, a lax.switch (cond) on each
    one's size; batched: neither (the symmetry mask keeps its loop over kept permutations).
    A new estimator each time: the choice is made when it is first traced."""
    sym = mm.make(3, 4, symmetry=True)
    states = jax.tree.map(lambda *x: jnp.stack(x), sym.initial_state(), sym.initial_state())
    jaxpr = str(jax.make_jaxpr(sym.estimator)(None, None, states))
    return {"scan", "cond"} <= set(re.findall(r"\b(scan|cond)\[", jaxpr))

  monkeypatch.delenv("JAXSEARCH_BATCHED_STATES", raising=False)
  assert guessing_estimator.all_states_at_once() is (jax.default_backend() != "cpu")
  monkeypatch.setenv("JAXSEARCH_BATCHED_STATES", "1")
  assert guessing_estimator.all_states_at_once() is True and not loops()
  assert guessing_estimator.all_states_at_once(False) is False  # an explicit choice wins
  monkeypatch.setenv("JAXSEARCH_BATCHED_STATES", "0")
  assert guessing_estimator.all_states_at_once() is False and loops()
  monkeypatch.setenv("JAXSEARCH_BATCHED_STATES", "yes")
  with pytest.raises(ValueError, match="JAXSEARCH_BATCHED_STATES must be 1"):
    guessing_estimator.all_states_at_once()


def test_estimator_under_outer_vmap():
  j = instance(3, 3)
  rng = np.random.default_rng(6)
  masks = rng.random((2, 3, 27)) < 0.5
  masks[..., 0] = True
  states = guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(masks)),
                          solved=jnp.asarray([[False, True, False], [False, False, False]]))
  vm = jax.jit(jax.vmap(j.m.estimator, in_axes=(None, None, 0)))(None, None, states)
  for i in range(2):
    one = j.estimate(None, None, jax.tree.map(lambda x: x[i], states))
    np.testing.assert_allclose(np.asarray(vm.action_values[i]),
                               np.asarray(one.action_values), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(vm.value[i]), np.asarray(one.value), rtol=1e-6)
  # A solved state: value 0, every action masked.
  assert float(vm.value[0, 1]) == 0.0 and bool(jnp.all(vm.action_values[0, 1] == -jnp.inf))


# ---- symmetry: colour and peg permutations ---------------------------------------------------

def _apply(pegs, colours, colour_perm, peg_perm, code):
  digits = mm.code_digits(pegs, colours)[code]
  moved = [colour_perm[digits[peg_perm[i]]] for i in range(pegs)]
  return int(sum(d * colours ** (pegs - 1 - i) for i, d in enumerate(moved)))


def test_symmetry_stabilisers_and_canonical_openings_by_brute_force():
  """Every kept permutation fixes its code and preserves feedback; every fixing permutation
  is kept (the group is small here); the canonical first guesses are one per partition."""
  pegs, colours = 3, 3
  sym = mm.Symmetry.build(pegs, colours)
  table = np.asarray(mm.feedback_table(pegs, colours))
  elements = list(zip(sym.colour_perms, sym.peg_perms))
  for code in range(colours ** pegs):
    fixing = {e for e, (c, p) in enumerate(elements)
              if _apply(pegs, colours, c, p, code) == code}
    kept = set(sym.stabiliser[code][sym.stabiliser[code] >= 0].tolist())
    assert kept == fixing
  for c, p in elements[::7]:
    image = np.array([_apply(pegs, colours, c, p, x) for x in range(colours ** pegs)])
    np.testing.assert_array_equal(table[np.ix_(image, image)], table)
  starts = [mm.make(pegs, colours).code_string(i) for i in np.flatnonzero(sym.canonical_at_start)]
  assert starts == ["111", "112", "123"]


def test_symmetry_masks_only_equivalent_guesses_and_keeps_values():
  """With ``symmetry=True`` the estimator masks guesses some kept permutation maps to a
  smaller code; every masked guess has a canonical twin with the same q̂1, and the state
  value is unchanged. Stepping keeps exactly the permutations fixing every guess made."""
  plain, sym = mm.make(3, 4), mm.make(3, 4, symmetry=True)
  elements = list(zip(*(lambda b: (b.colour_perms, b.peg_perms))(mm.Symmetry.build(3, 4))))
  steps = [("112", "b1w0"), ("134", "b0w1")]
  state_plain, state_sym = plain.initial_state(), sym.initial_state()
  for guess, feedback in [(None, None)] + steps:
    if guess is not None:
      action, outcome = jnp.int32(plain.code_index(guess)), jnp.int32(plain.outcome_index(feedback))
      state_plain = plain.game.step(state_plain, action, outcome).state
      state_sym = sym.game.step(state_sym, action, outcome).state
      np.testing.assert_array_equal(state_sym.remaining, state_plain.remaining)
    batch = lambda s: jax.tree.map(lambda x: x[None], s)  # noqa: E731
    q_plain = np.asarray(plain.estimator(None, None, batch(state_plain)).action_values)[0]
    out = sym.estimator(None, None, batch(state_sym))
    q_sym = np.asarray(out.action_values)[0]
    assert float(out.value[0]) == pytest.approx(float(np.max(q_plain)), abs=1e-6)
    kept = np.isfinite(q_sym)
    np.testing.assert_allclose(q_sym[kept], q_plain[kept], atol=1e-6)
    masked = np.flatnonzero(~kept & np.isfinite(q_plain))
    if guess is None:
      assert kept.sum() == 3  # one first guess per partition of the pegs
    else:
      assert 0 < kept.sum() < len(kept)
    ids = np.asarray(state_sym.symmetries)
    ids = ids[ids >= 0] if ids[0] != mm.AT_START else np.arange(len(elements))
    for g in masked:
      twins = {_apply(3, 4, *elements[e], g) for e in ids}
      assert any(kept[t] and abs(q_plain[t] - q_plain[g]) < 1e-5 for t in twins)
  made = [plain.code_index(g) for g, _ in steps]
  ids = np.asarray(state_sym.symmetries)
  fixing = [e for e, (c, p) in enumerate(elements)
            if all(_apply(3, 4, c, p, g) == g for g in made)]
  assert sorted(ids[ids >= 0].tolist()) == fixing


@pytest.mark.parametrize("block", [3, mastermind_symmetry.BATCHED_BLOCK, 64])
def test_symmetry_mask_by_blocks_of_kept_permutations_is_the_same(block):
  """``Symmetry.redundant`` checking several kept permutations a trip marks the same guesses
  as one at a time, vmapped over states keeping 0 to 64 permutations and the whole group."""
  symmetry = mm.Symmetry.build(4, 6)
  start = symmetry.start()
  kept = [start] + [symmetry.after(start, jnp.int32(guess)) for guess in (0, 1, 7, 21, 300)]
  kept.append(symmetry.after(kept[2], jnp.int32(14)))
  kept = jnp.stack(kept)
  counts = np.sum(np.asarray(kept) >= 0, axis=1)
  assert counts.max() == mm.MAX_SYMMETRIES and counts.min() == 0 and len(set(counts)) > 3
  one_at_a_time = jax.jit(jax.vmap(symmetry.redundant))(kept)
  by_block = jax.jit(jax.vmap(lambda k: symmetry.redundant(k, block)))(kept)
  np.testing.assert_array_equal(np.asarray(by_block), np.asarray(one_at_a_time))
  assert np.asarray(one_at_a_time).any(axis=1).all()
