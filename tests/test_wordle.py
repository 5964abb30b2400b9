"""jaxsearch.games.wordle: patterns, the feedback rule, word-list loading, the guessing game on small
synthetic lists (chance, partition, bounds against exhaustive optima, estimator against a
float64 reference, jit / vmap), and the entropic estimator's first-guess figures on the full
3158 / 14855 lists (the copies shipped with the package).
"""

import functools
import hashlib
import re
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.guessing import game as guessing
from jaxsearch.games import wordle
from jaxsearch.games import wordle_lists
from guessing_jit import JittedGame

VECTORS = [("erase", "melee", "YBBBG"), ("erase", "agree", "YYYBG"), ("erase", "widen", "YBBBB"),
           ("erase", "early", "GYYBB"), ("erase", "while", "BBBBG"), ("alias", "today", "BBBGB"),
           ("chuck", "chunk", "GGGBG")]
# Entropic estimates of the best first guesses on 3158 / 14855 (docs/algorithms.md §2).
FIGURES = {"tarse": 2.9744, "tiare": 2.9864, "sater": 2.9870, "raise": 2.9925, "roate": 2.9942}


def _py_score(guess: str, answer: str) -> str:
  """The rule, literally: greens first, then yellows left to right, each consuming the first
  unused matching answer letter."""
  result = ["B"] * 5
  unused = list(answer)
  for i in range(5):
    if guess[i] == answer[i]:
      result[i], unused[i] = "G", None
  for i in range(5):
    if result[i] == "G":
      continue
    for j in range(5):
      if unused[j] == guess[i]:
        result[i], unused[j] = "Y", None
        break
  return "".join(result)


def _random_words(rng, count, letters="abcde", exclude=()):
  """``count`` distinct random words over few letters (many repeated letters)."""
  words, seen = [], set(exclude)
  while len(words) < count:
    w = "".join(rng.choice(list(letters), 5))
    if w not in seen:
      seen.add(w)
      words.append(w)
  return words


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


def _solver(table, secret_of_guess):
  """Exhaustive optimum: ``solve(frozenset)`` = least total number of guesses that finds
  every secret of the set (``table`` is ``[G, S]``)."""

  @functools.lru_cache(maxsize=None)
  def solve(remaining):
    if len(remaining) == 1:
      return 1
    best = None
    for g in range(table.shape[0]):
      parts = defaultdict(list)
      for s in remaining:
        parts[int(table[g, s])].append(s)
      if len(parts) == 1 and int(secret_of_guess[g]) not in remaining:
        continue  # learns nothing
      total = len(remaining) + sum(solve(frozenset(p)) for c, p in parts.items()
                                   if c != wordle.SOLVED)
      best = total if best is None else min(best, total)
    return best

  return solve


class Small(JittedGame):
  """A small synthetic Wordle (60 answers over 5 letters, 100 guesses), jitted once."""

  def __init__(self):
    rng = np.random.default_rng(0)
    answers = _random_words(rng, 60)
    extra = _random_words(rng, 40, letters="abcdefg", exclude=answers)
    guesses = sorted(answers + extra)
    self.w = wordle.make(answers, guesses)
    self.table = np.asarray(self.w.feedback)
    self.jit_game(self.w.game, self.w.estimator)


@functools.lru_cache(maxsize=None)
def small() -> Small:
  return Small()


# --- patterns and feedback ----------------------------------------------------------------------


def test_pattern_strings_roundtrip():
  assert wordle.NUM_PATTERNS == 243 and wordle.SOLVED == 242
  assert wordle.pattern_string(242) == "GGGGG" and wordle.pattern_string(0) == "BBBBB"
  assert wordle.pattern_string(1) == "YBBBB" and wordle.pattern_index("GYBBB") == 2 + 1 * 3
  assert wordle.pattern_index("BBBBG") == 2 * 81
  assert all(wordle.pattern_index(wordle.pattern_string(i)) == i for i in range(243))
  for bad in ("GGGG", "GGGGGG", "GGXGG", "ggggg"):
    with pytest.raises(ValueError):
      wordle.pattern_index(bad)
  with pytest.raises(ValueError):
    wordle.pattern_string(243)


@pytest.mark.parametrize("guess,answer,pattern", VECTORS)
def test_feedback_vectors(guess, answer, pattern):
  assert _py_score(guess, answer) == pattern  # the reference implements the rule
  assert wordle.score(guess, answer) == pattern


def test_feedback_table_matches_the_rule():
  rng = np.random.default_rng(1)
  # Few letters: many repeated letters, the hard cases of the rule.
  guesses = _random_words(rng, 150, letters="abcd") + [g for g, _, _ in VECTORS[::2]]
  answers = _random_words(rng, 120, letters="abcde") + [a for _, a, _ in VECTORS]
  guesses, answers = list(dict.fromkeys(guesses)), list(dict.fromkeys(answers))
  table = np.asarray(wordle.feedback_table(guesses, answers))
  assert table.shape == (len(guesses), len(answers)) and table.dtype == np.uint8
  for i, g in enumerate(guesses):
    for j, a in enumerate(answers):
      assert wordle.pattern_string(table[i, j]) == _py_score(g, a), (g, a)


# --- word lists ---------------------------------------------------------------------------------


def test_load_words_and_errors(tmp_path, monkeypatch):
  good = tmp_path / "good"
  good.write_text("cigar\nrebut\n\nsissy\n")
  assert wordle.load_words(good) == ["cigar", "rebut", "sissy"]
  assert wordle.load_words(good, expected_count=3) == ["cigar", "rebut", "sissy"]
  with pytest.raises(ValueError, match="expected 4 words, found 3"):
    wordle.load_words(good, expected_count=4)
  for text in ("cigar\nRebut\n", "cigar\nrebuts\n", "cig4r\n", "cigar\ncigar\n"):
    bad = tmp_path / "bad"
    bad.write_text(text)
    with pytest.raises(ValueError):
      wordle.load_words(bad)
  monkeypatch.delenv("WORDLE_DATA", raising=False)
  shipped = wordle.shipped_data_dir()
  # A missing file: the message names it, the two lists needed, the overrides and the shipped
  # copies.
  with pytest.raises(FileNotFoundError) as err:
    wordle.load_words(tmp_path / "missing")
  text = str(err.value)
  for part in (str(tmp_path / "missing"), "exactly two files", "answers list",
               "guesses list", "wordlist_nyt20230701_hidden", "wordlist_nyt20220830_all",
               "--answers", "--guesses", "$WORDLE_DATA", "ships", str(shipped)):
    assert part in text, (part, text)
  assert "broken" not in text
  # default_paths: WORDLE_DATA wins (its files named in the error when missing) ...
  monkeypatch.setenv("WORDLE_DATA", str(tmp_path))
  assert wordle.default_paths("orig") == (tmp_path / "wordlist_orig_hidden",
                                          tmp_path / "wordlist_orig_all")
  with pytest.raises(FileNotFoundError) as err:
    wordle.load_default("orig")
  text = str(err.value)
  assert str(tmp_path / "wordlist_orig_hidden") in text and "wordlist_orig_all" in text
  assert f"$WORDLE_DATA is {str(tmp_path)!r}" in text
  # ... else the copies shipped with the package.
  monkeypatch.delenv("WORDLE_DATA")
  answers, guesses = wordle.default_paths()
  assert answers.parent == guesses.parent == shipped
  assert shipped.parts[-3:] == ("jaxsearch", "data", "wordle")
  assert (answers.name, guesses.name) == ("wordlist_nyt20230701_hidden",
                                          "wordlist_nyt20220830_all")
  for lists, files in wordle.LISTS.items():
    for path in wordle.default_paths(lists):
      assert path.name in files
      assert len(wordle.load_words(path, wordle.EXPECTED_COUNTS[path.name])) > 2000
  assert {"LICENSE", "README.md"} <= {p.name for p in shipped.iterdir()}
  with pytest.raises(ValueError):
    wordle.default_paths("nope")
  # A shipped file missing means a broken install.
  monkeypatch.setattr(wordle_lists, "shipped_data_dir", lambda: tmp_path)
  with pytest.raises(FileNotFoundError, match="the install is broken, reinstall jaxsearch"):
    wordle.load_default("nyt")


def test_shipped_lists_match_their_readme():
  """The checksums and word counts of the shipped README.md are those of the files."""
  shipped = wordle.shipped_data_dir()
  rows = re.findall(r"^\| (\S+) \| *(\d*) *\|.*\| ([0-9a-f]{64}) \|$",
                    (shipped / "README.md").read_text(), flags=re.M)
  assert {name for name, _, _ in rows} == set(wordle.EXPECTED_COUNTS) | {"LICENSE"}
  for name, count, digest in rows:
    assert hashlib.sha256((shipped / name).read_bytes()).hexdigest() == digest, name
    if name != "LICENSE":
      assert int(count) == wordle.EXPECTED_COUNTS[name]
      assert len(wordle.load_words(shipped / name, int(count))) == int(count)
  assert "8fd3f1bdf884ff6757c24ad1227dc561fab7787d" in (shipped / "README.md").read_text()
  assert (shipped / "LICENSE").read_text().startswith("MIT License")


def test_make_rejects_bad_lists():
  with pytest.raises(ValueError, match="must include the answers"):
    wordle.make(["cigar", "rebut"], ["cigar"])
  with pytest.raises(ValueError, match="repeated"):
    wordle.make(["cigar", "cigar"], ["cigar"])
  with pytest.raises(ValueError):
    wordle.make(["Cigar"], ["Cigar"])
  with pytest.raises(TypeError):
    wordle.make("cigar", ["cigar"])


# --- the game on small lists --------------------------------------------------------------------


def test_small_game_conventions():
  s = small()
  w = s.w
  assert (w.game.num_actions, w.game.num_outcomes) == (100, 243)
  assert w.game.name == "wordle_60_100" and w.game.value_range == (-6.0, 0.0)
  assert w.by_secret.shape == (60, 100) and w.feedback.shape == (100, 60)
  np.testing.assert_array_equal(np.asarray(w.by_secret).T, s.table)
  for g in range(100):
    a = w.secret_of_guess[g]
    assert (a >= 0) == (w.guesses[g] in w.answers)
    if a >= 0:
      assert w.answers[a] == w.guesses[g] and s.table[g, a] == wordle.SOLVED
  assert np.sum(s.table == wordle.SOLVED) == 60  # all green only for the answer itself
  guess, answer = w.guesses[7], w.answers[3]
  assert w.score(guess, answer) == _py_score(guess, answer)
  s0 = w.initial_state()
  assert len(w.remaining_answers(s0)) == 60 and bool(jnp.all(s.one["legal_actions"](s0)))
  # state_after follows the feedback.
  pattern = _py_score(guess, answer)
  state = w.state_after([(guess, pattern)])
  assert answer in w.remaining_answers(state)
  assert all(_py_score(guess, a) == pattern for a in w.remaining_answers(state))
  r = s.one["step"](state, w.guess_index(answer), wordle.SOLVED)
  assert (float(r.reward), float(r.discount), bool(r.terminal)) == (-1.0, 0.0, True)
  assert w.remaining_answers(r.state) == [answer]
  assert not bool(jnp.any(s.one["legal_actions"](r.state)))
  with pytest.raises(ValueError):
    w.guess_index("zzzzz")


def test_small_outcome_probs_and_step_partition():
  s = small()
  rng = np.random.default_rng(2)
  masks = np.ones((3, 60), bool)
  masks[1] = rng.random(60) < 0.4
  masks[2] = False
  masks[2, [3, 17, 40]] = True
  states = s.states(masks)
  actions = jnp.asarray([5, 50, 99], jnp.int32)
  probs = np.asarray(s.probs(states, actions))
  assert probs.shape == (3, 243)
  np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
  outcomes = jnp.arange(243, dtype=jnp.int32)
  for b in range(3):
    state = jax.tree.map(lambda x: x[b], states)
    out = s.step_outcomes(state, actions[b], outcomes)
    children = np.asarray(guessing.bits_to_mask(out.state.remaining, 60))  # [243, 60]
    np.testing.assert_array_equal(children.sum(0), masks[b].astype(int))
    np.testing.assert_allclose(children.sum(1) / masks[b].sum(), probs[b], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out.terminal), np.arange(243) == 242)
    np.testing.assert_array_equal(np.asarray(out.reward), -1.0)


def test_small_bounds_bracket_exhaustive_optima():
  s = small()
  rng = np.random.default_rng(3)
  masks = np.zeros((8, 60), bool)
  for b, n in enumerate([1, 2, 3, 5, 8, 10, 12, 14]):
    masks[b, rng.choice(60, n, replace=False)] = True
  states = s.states(masks)
  pess, opt = np.asarray(s.pessimistic(states)), np.asarray(s.optimistic(states))
  solve = _solver(s.table, s.w.secret_of_guess)
  for b in range(8):
    n = masks[b].sum()
    best = solve(frozenset(np.flatnonzero(masks[b]).tolist()))
    assert pess[b] == -(n + 1) / 2
    assert pess[b] <= -best / n <= opt[b] + 1e-6
  # Each guess's action bound is admissible: no policy starting with it does better.
  est = s.estimate(None, jax.random.PRNGKey(0), states)
  bounds, q = np.asarray(est.action_bounds), np.asarray(est.action_values)
  for b in range(8):
    secrets = np.flatnonzero(masks[b])
    for g in np.flatnonzero(np.isfinite(q[b])):
      parts = defaultdict(list)
      for secret in secrets:
        parts[int(s.table[g, secret])].append(int(secret))
      exact = len(secrets) + sum(solve(frozenset(part)) for code, part in parts.items()
                                 if code != wordle.SOLVED)
      assert -exact / len(secrets) <= bounds[b, g] + 1e-6


def test_small_estimator_matches_reference():
  s = small()
  rng = np.random.default_rng(4)
  sizes = [60, 40, 20, 9, 2, 1]  # the full table, scatter and pairwise tiers, special cases
  masks = np.zeros((len(sizes), 60), bool)
  for b, n in enumerate(sizes):
    masks[b, rng.choice(60, n, replace=False)] = True
  est = s.estimate(None, jax.random.PRNGKey(0), s.states(masks))
  q = np.asarray(est.action_values)
  assert q.shape == (len(sizes), 100)
  for b in range(len(sizes)):
    ref = _reference_estimates(s.table, masks[b], s.w.secret_of_guess)
    np.testing.assert_array_equal(np.isinf(q[b]), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(-q[b][finite], ref[finite], rtol=2e-6)
    np.testing.assert_allclose(float(est.value[b]), -ref[finite].min(), rtol=2e-6)
  assert float(est.value[-1]) == -1.0 and np.sum(np.isfinite(q[-1])) == 1
  # Action bounds on every tier: n + Σ over unsolved feedback parts of T(|part|).
  branching = len(set(s.table.reshape(-1).tolist()) - {wordle.SOLVED})
  totals = np.array([guessing.counting_bound_total(n, branching) for n in range(61)])
  bounds = np.asarray(est.action_bounds)
  for b in range(len(sizes)):
    idx = np.flatnonzero(masks[b])
    counts = np.stack([np.bincount(s.table[g, idx], minlength=256) for g in range(100)])
    counts[:, wordle.SOLVED] = 0
    ref = -(len(idx) + totals[counts].sum(axis=1)) / len(idx)
    finite = np.isfinite(q[b])
    np.testing.assert_array_equal(np.isfinite(bounds[b]), finite)
    np.testing.assert_allclose(bounds[b][finite], ref[finite], rtol=2e-6)


def test_small_batched_estimator_in_guess_chunks(monkeypatch):
  """The accelerator's way, its guesses taken in chunks (the last one shifted back to fit),
  gives the one-by-one estimates."""
  from jaxsearch.guessing import estimator as guessing_estimator
  s = small()
  monkeypatch.setattr(guessing_estimator, "_ONE_HOT_BYTES", 2 * 60 * 243 * 30)  # 30 a chunk
  branching = len(set(s.table.reshape(-1).tolist()) - {wordle.SOLVED})
  batched = guessing_estimator.entropic_estimator(
      s.w.by_secret, s.w.secret_of_guess, wordle.NUM_PATTERNS, branching=branching,
      batched=True)
  rng = np.random.default_rng(7)
  masks = rng.random((5, 60)) < np.asarray([1.0, 0.5, 0.2, 0.05, 0.0])[:, None]
  masks[:, 3] = True
  states = s.states(masks)
  a, b = s.estimate(None, None, states), jax.jit(batched)(None, None, states)
  finite = np.isfinite(np.asarray(a.action_values))
  np.testing.assert_array_equal(np.isfinite(np.asarray(b.action_values)), finite)
  np.testing.assert_allclose(np.asarray(b.action_values)[finite],
                             np.asarray(a.action_values)[finite], rtol=1e-6)
  np.testing.assert_allclose(np.asarray(b.action_bounds), np.asarray(a.action_bounds), rtol=1e-6)


def test_small_game_and_estimator_under_jit_and_vmap():
  s = small()
  rng = np.random.default_rng(5)
  masks = rng.random((4, 60)) < 0.5
  masks[:, 0] = True
  states = s.states(masks)
  actions = jnp.asarray(rng.integers(0, 100, 4), jnp.int32)
  outcomes = jnp.asarray([242, 0, 1, 2], jnp.int32)
  batched = (s.step(states, actions, outcomes), s.probs(states, actions), s.legal(states),
             s.pessimistic(states), s.optimistic(states))
  for b in range(4):
    state = jax.tree.map(lambda x: x[b], states)
    one = s.one
    single = (one["step"](state, actions[b], outcomes[b]),
              one["outcome_probs"](state, actions[b]), one["legal_actions"](state),
              one["pessimistic_value"](state), one["optimistic_value"](state))
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x)[b], np.asarray(y)),
                 batched, single)
  nested = jax.tree.map(lambda x: x.reshape((2, 2) + x.shape[1:]), states)
  vm = jax.jit(jax.vmap(s.w.estimator, in_axes=(None, None, 0)))(None, None, nested)
  flat = s.estimate(None, None, states)
  np.testing.assert_allclose(np.asarray(vm.action_values).reshape(4, 100),
                             np.asarray(flat.action_values), rtol=1e-6)


# --- full lists ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full():
  return wordle.load_default("nyt")


@pytest.mark.slow
def test_full_lists_first_guess_figures(full):
  w = full
  assert (w.num_answers, w.num_guesses) == (3158, 14855)
  table = np.asarray(w.by_secret).T  # a numpy view: no device transpose
  rng = np.random.default_rng(6)
  for g, a in zip(rng.integers(0, 14855, 2000), rng.integers(0, 3158, 2000)):
    assert wordle.pattern_string(table[g, a]) == _py_score(w.guesses[g], w.answers[a])
  assert w.score("tarse", "cigar") == _py_score("tarse", "cigar")
  # The root, the set left by tarse/BBYBY, and two small sets, in one batch (one compile).
  s0 = w.initial_state()
  after = w.state_after([("tarse", "BBYBY")])
  masks = np.zeros((4, 3158), bool)
  masks[0] = True
  masks[1] = np.asarray(guessing.bits_to_mask(after.remaining, 3158))
  masks[2, [w.answer_index("cigar"), w.answer_index("rebut")]] = True
  masks[3, rng.choice(3158, 12, replace=False)] = True
  states = guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(masks)),
                          solved=jnp.zeros(4, bool))
  est = jax.jit(w.estimator)(None, None, states)
  q = np.asarray(est.action_values)
  order = np.argsort(-q[0], kind="stable")[:5]
  assert [w.guesses[i] for i in order] == list(FIGURES)
  for word, figure in FIGURES.items():
    np.testing.assert_allclose(-q[0, w.guess_index(word)], figure, atol=1e-4)
  np.testing.assert_allclose(float(est.value[0]), -2.974444, atol=2e-5)
  for b in (1, 2, 3):
    ref = _reference_estimates(table, masks[b], w.secret_of_guess)
    np.testing.assert_array_equal(np.isinf(q[b]), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(-q[b][finite], ref[finite], rtol=2e-6)
  # Bounds at the root bracket the known optimum 11219 / 3158 (TARSE).
  pess, opt = float(w.game.pessimistic_value(s0)), float(w.game.optimistic_value(s0))
  assert pess == -(3158 + 1) / 2
  assert pess <= -11219 / 3158 <= opt
