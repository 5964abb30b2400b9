"""jaxsearch.guessing.policy_file: the exported policy format and its exact evaluator.

Totals are checked against plain-Python references written here (a Mastermind and a Wordle
scorer, an exhaustive optimum, a "first consistent candidate" tree builder and a per-secret
walk), independent of the module's partitioning evaluator and table scorers.
"""

import dataclasses
import functools
import itertools
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from jaxsearch.app import registry
from jaxsearch.games import mastermind, wordle
from jaxsearch.guessing import policy_file as pf

registry.register_policy_files()  # as `jaxsearch evaluate` does: the games' files are readable

SHARED_WORDLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wordle"

# Optimal totals (also in tests/test_mastermind.py, from exhaustive search).
OPTIMA = {(2, 2): 8, (2, 3): 21, (3, 3): 73}

# --- plain-Python references ------------------------------------------------------------------


def codes(pegs, colours):
  return ["".join(p) for p in itertools.product("123456789"[:colours], repeat=pegs)]


def mm_score(guess, secret):
  exact = sum(g == s for g, s in zip(guess, secret))
  common = sum(min(guess.count(c), secret.count(c)) for c in set(guess))
  return f"b{exact}w{common - exact}"


def wordle_score(guess, answer):
  """Greens first, then yellows left to right, each answer letter used once."""
  out = ["B"] * 5
  left = Counter()
  for i, (g, a) in enumerate(zip(guess, answer)):
    if g == a:
      out[i] = "G"
    else:
      left[a] += 1
  for i, g in enumerate(guess):
    if out[i] != "G" and left[g] > 0:
      out[i] = "Y"
      left[g] -= 1
  return "".join(out)


def naive_tree(cands, score):
  """"Guess the first remaining candidate consistent with the feedback so far", recursively."""
  guess, groups = cands[0], {}
  for s in cands[1:]:
    groups.setdefault(score(guess, s), []).append(s)
  return {"guess": guess, "children": {f: naive_tree(g, score) for f, g in groups.items()}}


def walk_total(tree, secrets, score):
  """Per-secret walk from the root: the total number of guesses."""
  total = 0
  for s in secrets:
    node, n = tree, 1
    while node["guess"] != s:
      node = node["children"][score(node["guess"], s)]
      n += 1
    total += n
  return total


def optimal_tree(secrets, guesses, score):
  """Exhaustive optimum (least total guesses) as a tree; for tiny games only."""

  @functools.lru_cache(maxsize=None)
  def solve(remaining):
    if len(remaining) == 1:
      return 1, next(iter(remaining))
    best = None
    for g in guesses:
      parts = {}
      for s in remaining:
        if s != g:
          parts.setdefault(score(g, s), []).append(s)
      if len(parts) == 1 and g not in remaining:
        continue  # learns nothing
      total = len(remaining) + sum(solve(frozenset(p))[0] for p in parts.values())
      if best is None or total < best[0]:
        best = (total, g)
    return best

  def build(remaining):
    _, g = solve(remaining)
    parts = {}
    for s in sorted(remaining):
      if s != g:
        parts.setdefault(score(g, s), []).append(s)
    return {"guess": g, "children": {f: build(frozenset(p)) for f, p in parts.items()}}

  return solve(frozenset(secrets))[0], build(frozenset(secrets))


# The optimal (2, 2) policy, by hand: 11 solves 11 (1); 12 and 21 give b1w0: guess 12 (2), then
# 21 (3); 22 gives b0w0: guess 22 (2). Total 1 + 2 + 3 + 2 = 8.
def mm22_policy():
  return {"guess": "11", "children": {
      "b1w0": {"guess": "12", "children": {"b0w2": {"guess": "21", "children": {}}}},
      "b0w0": {"guess": "22"}}}


# --- scorers --------------------------------------------------------------------------------


def test_mastermind_score_matches_reference():
  for pegs, colours in ((2, 2), (2, 3), (3, 3)):
    score = mastermind.MastermindScore(pegs, colours)
    assert list(score.codes) == codes(pegs, colours)
    for g, s in itertools.product(score.codes, repeat=2):
      assert score(g, s) == mm_score(g, s)
  score = mastermind.MastermindScore(4, 6)
  assert len(score.codes) == 1296 and score.codes[0] == "1111" and score.codes[-1] == "6666"
  assert score("1122", "1213") == "b1w2" and score("1234", "4321") == "b0w4"
  assert score("1122", "1122") == "b4w0"
  for g, s in itertools.islice(itertools.product(score.codes[::7], score.codes[::5]), 5000):
    assert score(g, s) == mm_score(g, s)
  with pytest.raises(ValueError, match="'1117'"):
    score("1117", "1111")


# --- evaluation -----------------------------------------------------------------------------


def test_optimal_2x2_policy_total_8():
  score = mastermind.MastermindScore(2, 2)
  result = pf.evaluate(mm22_policy(), score.codes, score)
  assert result == pf.Evaluation(total_guesses=8, expected_guesses=2.0, worst_case=3,
                                 secrets=4, histogram={1: 1, 2: 2, 3: 1})
  assert list(result.histogram) == [1, 2, 3]
  with pytest.raises(dataclasses.FrozenInstanceError):
    result.total_guesses = 7
  assert "8 guesses over 4 secrets" in str(result)
  # A plain function works as well as the table scorer.
  assert pf.evaluate(mm22_policy(), codes(2, 2), mm_score).total_guesses == 8


@pytest.mark.parametrize("pegs,colours", [(2, 2), (2, 3)])
def test_brute_force_optimum(pegs, colours):
  secrets = codes(pegs, colours)
  total, tree = optimal_tree(secrets, secrets, mm_score)
  assert total == OPTIMA[(pegs, colours)]
  result = pf.evaluate(tree, secrets, mastermind.MastermindScore(pegs, colours))
  assert result.total_guesses == total == walk_total(tree, secrets, mm_score)
  assert result.expected_guesses == total / len(secrets)


@pytest.mark.parametrize("pegs,colours", [(2, 2), (2, 3), (3, 3)])
def test_naive_consistent_policy_totals(pegs, colours):
  secrets = codes(pegs, colours)
  tree = naive_tree(secrets, mm_score)
  expected = walk_total(tree, secrets, mm_score)
  hist = Counter()
  for s in secrets:  # a third way: simulate the strategy itself, no tree
    cands, n = list(secrets), 0
    while True:
      g = cands[0]
      n += 1
      if g == s:
        break
      cands = [c for c in cands if mm_score(g, c) == mm_score(g, s)]
    hist[n] += 1
  assert sum(k * v for k, v in hist.items()) == expected
  score = mastermind.MastermindScore(pegs, colours)
  result = pf.evaluate(tree, secrets, score)
  assert result.total_guesses == expected
  assert result.histogram == dict(sorted(hist.items()))
  assert result.worst_case == max(hist)
  # The module's builder makes the same tree.
  assert pf.consistent_candidates_policy(secrets, score) == tree


@pytest.mark.parametrize("pegs,colours", [(2, 3), (3, 3)])
def test_consistent_candidates_within_pessimistic_bound(pegs, colours):
  score = mastermind.MastermindScore(pegs, colours)
  n = len(score.codes)
  for order in (None, list(reversed(score.codes)), sorted(score.codes, key=lambda c: c[::-1])):
    tree = pf.consistent_candidates_policy(score.codes, score, order=order)
    total = pf.evaluate(tree, score.codes, score).total_guesses
    assert OPTIMA[(pegs, colours)] <= total <= n * (n + 1) // 2
    assert total == walk_total(tree, score.codes, mm_score)
  # On a subset (completing a tree below a node), every secret still comes out right.
  subset = score.codes[3::4]
  tree = pf.consistent_candidates_policy(subset, score)
  result = pf.evaluate(tree, subset, score, guesses=score.codes)
  assert result.secrets == len(subset)
  assert result.total_guesses <= len(subset) * (len(subset) + 1) // 2
  with pytest.raises(ValueError, match="permutation"):
    pf.consistent_candidates_policy(subset, score, order=subset[:-1])


def test_mastermind_4x6_consistent_policy_is_fast():
  score = mastermind.MastermindScore(4, 6)
  tree = pf.consistent_candidates_policy(score.codes, score)
  start = time.perf_counter()
  result = pf.evaluate(tree, score.codes, score)
  elapsed = time.perf_counter() - start
  assert result.total_guesses == walk_total(naive_tree(list(score.codes), mm_score),
                                            score.codes, mm_score)
  assert result.secrets == 1296 and sum(result.histogram.values()) == 1296
  assert 5625 <= result.total_guesses <= 1296 * 1297 // 2  # 5625: the optimum
  assert elapsed < 1.0, f"evaluating 1296 secrets took {elapsed:.3f} s"


def test_missing_child_names_secret_and_path():
  score = mastermind.MastermindScore(2, 2)
  policy = mm22_policy()
  del policy["children"]["b1w0"]["children"]["b0w2"]
  with pytest.raises(pf.PolicyError) as info:
    pf.evaluate(policy, score.codes, score)
  err = info.value
  assert isinstance(err, ValueError)
  assert err.secret == "21" and err.path == (("11", "b1w0"), ("12", "b0w2"))
  assert "'21'" in str(err) and "[('11', 'b1w0'), ('12', 'b0w2')]" in str(err)
  # Missing at the root: the group of two is named by its first secret.
  policy = {"guess": "11", "children": {"b0w0": {"guess": "22"}}}
  with pytest.raises(pf.PolicyError, match=r"'12' \(and 1 more secrets\).*\('11', 'b1w0'\)"):
    pf.evaluate(policy, score.codes, score)


def test_invalid_guesses_and_malformed_nodes():
  score = mastermind.MastermindScore(2, 2)
  policy = mm22_policy()
  policy["children"]["b1w0"]["guess"] = "13"
  with pytest.raises(pf.PolicyError, match=r"\[\('11', 'b1w0'\)\] guesses '13'") as info:
    pf.evaluate(policy, score.codes, score)
  assert info.value.path == (("11", "b1w0"),)
  # An invalid guess where no secret goes (b0w1 cannot happen with 2 pegs, 2 colours).
  policy = mm22_policy()
  policy["children"]["b0w1"] = {"guess": "111"}
  with pytest.raises(pf.PolicyError, match="'111'"):
    pf.evaluate(policy, score.codes, score)
  # ...while a valid unreachable child is fine.
  policy["children"]["b0w1"] = {"guess": "21"}
  assert pf.evaluate(policy, score.codes, score).total_guesses == 8
  for bad, pattern in (([], "list"), ({"children": {}}, "no string 'guess'"),
                       ({"guess": 11}, "no string 'guess'"),
                       ({"guess": "11", "children": []}, "'children' of type list"),
                       ({"guess": "11", "children": {"b0w0": "22"}},
                        r"\('11', 'b0w0'\)\] is a str")):
    with pytest.raises(pf.PolicyError, match=pattern):
      pf.evaluate(bad, score.codes, score)
  # Non-secret guesses need guesses=.
  with pytest.raises(pf.PolicyError, match="pass guesses="):
    pf.evaluate({"guess": "11", "children": {"b0w0": {"guess": "22"}}}, ["22"], score)
  result = pf.evaluate({"guess": "11", "children": {"b0w0": {"guess": "22"}}}, ["22"], score,
                       guesses=score.codes)
  assert result.total_guesses == 2
  with pytest.raises(ValueError, match="repeated"):
    pf.evaluate(mm22_policy(), ["11", "11"], score)
  with pytest.raises(ValueError, match="no secrets"):
    pf.evaluate(mm22_policy(), [], score)


def test_loops_and_wasted_guesses_and_max_guesses():
  score = mastermind.MastermindScore(2, 2)
  loop = {"guess": "11", "children": {}}
  loop["children"]["b0w0"] = loop
  with pytest.raises(pf.PolicyError, match="loops"):
    pf.evaluate(loop, ["22"], score, guesses=score.codes)
  # A chain of distinct nodes guessing 11 again and again, then 22: legal, and wasteful; it
  # is evaluated at its cost (more guesses than there are secrets), not rejected.
  chain = {"guess": "22"}
  for _ in range(3):
    chain = {"guess": "11", "children": {"b0w0": chain}}
  wasteful = pf.evaluate(chain, ["22"], score, guesses=score.codes)
  assert wasteful.total_guesses == 4 and wasteful.histogram == {4: 1}
  # ...unless a guess limit says otherwise.
  with pytest.raises(pf.PolicyError, match="max_guesses=2") as info:
    pf.evaluate(chain, ["22"], score, max_guesses=2, guesses=score.codes)
  assert info.value.secret == "22" and info.value.path == (("11", "b0w0"), ("11", "b0w0"))
  with pytest.raises(pf.PolicyError, match="max_guesses=2") as info:
    pf.evaluate(mm22_policy(), score.codes, score, max_guesses=2)
  assert info.value.secret == "21"
  assert pf.evaluate(mm22_policy(), score.codes, score, max_guesses=3).worst_case == 3


# --- Wordle on tiny lists -------------------------------------------------------------------

ANSWERS = ["cigar", "rebut", "sissy", "humph", "awake", "blush", "focal", "evade", "naval",
           "serve", "heath", "dwarf", "melee", "erase"]
EXTRA = ["stare", "crane", "slate", "audio", "pious", "eerie"]


@pytest.fixture()
def tiny_lists(tmp_path):
  answers = tmp_path / "answers.txt"
  guesses = tmp_path / "guesses.txt"
  answers.write_text("\n".join(ANSWERS) + "\n")
  guesses.write_text("\n".join(sorted(ANSWERS + EXTRA)) + "\n")
  return answers, guesses


def test_wordle_score_matches_reference():
  from jaxsearch.games import wordle

  score = wordle.WordleScore(ANSWERS)
  guesses = ANSWERS + EXTRA
  score.prefetch(guesses)
  for g, a in itertools.product(guesses, ANSWERS):
    assert score(g, a) == wordle_score(g, a)
  assert score("erase", "melee") == wordle.score("erase", "melee") == "YBBBG"
  assert score("eerie", "serve") == wordle.score("eerie", "serve")
  with pytest.raises(ValueError, match="not one of"):
    score("stare", "zzzzz")


def test_wordle_tiny_policy(tiny_lists):
  from jaxsearch.games import wordle

  score = wordle.WordleScore(ANSWERS)
  guesses = ANSWERS + EXTRA
  # Open with a non-answer, then first consistent candidates.
  groups = {}
  for a in ANSWERS:
    groups.setdefault(wordle_score("stare", a), []).append(a)
  tree = {"guess": "stare",
          "children": {f: naive_tree(g, wordle_score) for f, g in groups.items()}}
  expected = walk_total(tree, ANSWERS, wordle_score)
  result = pf.evaluate(tree, ANSWERS, score, guesses=guesses)
  assert result.total_guesses == expected and result.secrets == len(ANSWERS)
  assert pf.evaluate(tree, ANSWERS, wordle.score, guesses=guesses) == result
  with pytest.raises(pf.PolicyError, match="not in the list of allowed guesses"):
    pf.evaluate({"guess": "zzzzz"}, ANSWERS, score, guesses=guesses)
  cc = pf.consistent_candidates_policy(ANSWERS, score)
  assert cc == naive_tree(ANSWERS, wordle_score)
  n = len(ANSWERS)
  assert pf.evaluate(cc, ANSWERS, score, guesses=guesses).total_guesses <= n * (n + 1) // 2


# --- files ----------------------------------------------------------------------------------


def test_save_load_roundtrip(tmp_path):
  header = mastermind.file_header(2, 2, note="by hand")
  path = tmp_path / "mm22.json"
  pf.save(path, header, mm22_policy())
  loaded_header, policy = pf.load(path)
  assert loaded_header == {"format": pf.FORMAT, "game": "mastermind", "pegs": 2,
                           "colours": 2, "note": "by hand"}
  assert policy == mm22_policy()
  assert json.loads(path.read_text())["format"] == "jaxsearch-policy/1"
  pf.save(path, {"game": "mastermind", "pegs": 2, "colours": 2}, policy, indent=1)
  assert pf.load(path) == ({"format": pf.FORMAT, "game": "mastermind", "pegs": 2,
                            "colours": 2}, mm22_policy())
  assert "\n " in path.read_text()  # indented
  assert sorted(p.name for p in tmp_path.iterdir()) == ["mm22.json"]  # no temporaries left
  assert pf.evaluate_file(path).total_guesses == 8


@pytest.mark.parametrize("body,pattern", [
    ("not json", "not a JSON policy file"),
    ("[1, 2]", "JSON object"),
    ('{"format": "jaxsearch-policy/2", "game": "mastermind"}', "is not 'jaxsearch-policy/1'"),
    ('{"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 2, "colours": 2}',
     "no 'policy' key"),
    ('{"format": "jaxsearch-policy/1", "game": "chess", "policy": {}}', "'game' must be"),
    ('{"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 2, "policy": {}}',
     r"missing keys \['colours'\]"),
    ('{"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 2, "colours": 12, '
     '"policy": {}}', "colours must be an integer in"),
    ('{"format": "jaxsearch-policy/1", "game": "wordle", "answers": null, "guesses": null, '
     '"answers_count": 10, "policy": {}}', r"missing keys \['guesses_count'\]"),
    ('{"format": "jaxsearch-policy/1", "game": "wordle", "answers": 3, "guesses": null, '
     '"answers_count": 10, "guesses_count": 10, "policy": {}}', "path string or null"),
    ('{"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 2, "colours": 2, '
     '"policy": {"guess": "11", "children": {"b0w0": 5}}}', "is a int"),
])
def test_load_rejects(tmp_path, body, pattern):
  path = tmp_path / "bad.json"
  path.write_text(body)
  with pytest.raises(pf.PolicyError, match=pattern):
    pf.load(path)


def test_save_rejects_bad_header_or_tree(tmp_path):
  with pytest.raises(pf.PolicyError, match="'game' must be"):
    pf.save(tmp_path / "x.json", {"pegs": 2, "colours": 2}, mm22_policy())
  with pytest.raises(pf.PolicyError, match="unsupported policy format"):
    pf.save(tmp_path / "x.json", {"format": "v0", "game": "mastermind", "pegs": 2,
                                  "colours": 2}, mm22_policy())
  with pytest.raises(pf.PolicyError, match="no string 'guess'"):
    pf.save(tmp_path / "x.json", mastermind.file_header(2, 2), {"children": {}})
  assert not list(tmp_path.iterdir())
  with pytest.raises(FileNotFoundError):
    pf.load(tmp_path / "missing.json")


def test_evaluate_file_mastermind(tmp_path):
  score = mastermind.MastermindScore(3, 3)
  tree = pf.consistent_candidates_policy(score.codes, score)
  path = tmp_path / "mm33.json"
  pf.save(path, mastermind.file_header(3, 3), tree)
  result = pf.evaluate_file(path)
  assert result.total_guesses == walk_total(tree, codes(3, 3), mm_score)
  secrets, guesses, file_score = pf.game_from_file_header(pf.load(path)[0])
  assert secrets == codes(3, 3) and guesses is None and file_score("123", "321") == "b1w2"
  # A file for another size fails on the codes it cannot know.
  pf.save(path, mastermind.file_header(3, 2), tree)
  with pytest.raises(pf.PolicyError, match="not a valid guess"):
    pf.evaluate_file(path)


def test_evaluate_file_wordle(tiny_lists, tmp_path, monkeypatch):
  answers, guesses = tiny_lists
  score = wordle.WordleScore(ANSWERS)
  tree = pf.consistent_candidates_policy(ANSWERS, score)
  expected = walk_total(tree, ANSWERS, wordle_score)
  n_guesses = len(ANSWERS + EXTRA)
  path = tmp_path / "tiny.json"
  pf.save(path, wordle.file_header(answers, guesses, len(ANSWERS), n_guesses), tree)
  assert pf.evaluate_file(path).total_guesses == expected
  secrets, allowed, _ = pf.game_from_file_header(pf.load(path)[0])
  assert secrets == ANSWERS and allowed == sorted(ANSWERS + EXTRA)
  # Relative paths: from the current directory, then beside the policy file.
  pf.save(path, wordle.file_header("answers.txt", "guesses.txt", len(ANSWERS), n_guesses), tree)
  elsewhere = tmp_path / "elsewhere"
  elsewhere.mkdir()
  monkeypatch.chdir(elsewhere)
  assert pf.evaluate_file(path).total_guesses == expected
  with pytest.raises(FileNotFoundError, match="answers.txt"):
    pf.game_from_file_header(pf.load(path)[0])  # no base_dir: the current directory only
  # Counts that differ from the lists.
  pf.save(path, wordle.file_header(answers, guesses, len(ANSWERS) + 1, n_guesses), tree)
  with pytest.raises(pf.PolicyError, match=r"has 14 words but the policy file says "
                                           r"answers_count=15"):
    pf.evaluate_file(path)
  # Missing lists.
  pf.save(path, wordle.file_header(tmp_path / "nope.txt", guesses, len(ANSWERS), n_guesses),
          tree)
  with pytest.raises(FileNotFoundError, match="nope.txt"):
    pf.evaluate_file(path)
  # Guesses that miss answers.
  guesses.write_text("\n".join(EXTRA + ANSWERS[1:]) + "\n")
  pf.save(path, wordle.file_header(answers, guesses, len(ANSWERS), n_guesses - 1), tree)
  with pytest.raises(pf.PolicyError, match="not allowed guesses"):
    pf.evaluate_file(path)


def test_evaluate_file_wordle_default_lists(tmp_path):
  if not SHARED_WORDLE.is_dir():
    pytest.skip(f"Wordle word lists not found at {SHARED_WORDLE}")
  header = wordle.file_header(None, None, 3158, 14855)
  secrets, guesses, score = pf.game_from_file_header(header)
  assert (len(secrets), len(guesses)) == (3158, 14855)
  orig = pf.game_from_file_header(wordle.file_header(None, None, 2315, 12972))
  assert (len(orig[0]), len(orig[1])) == (2315, 12972)
  with pytest.raises(pf.PolicyError, match="answers_count=3000"):
    pf.game_from_file_header(wordle.file_header(None, None, 3000, 14855))
  tree = pf.consistent_candidates_policy(secrets, score)
  path = tmp_path / "wordle.json"
  pf.save(path, header, tree)
  start = time.perf_counter()
  result = pf.evaluate_file(path)  # a fresh scorer: computes the tree's feedback rows
  elapsed = time.perf_counter() - start
  assert result.secrets == 3158 and 11219 <= result.total_guesses <= 3158 * 3159 // 2
  assert result == pf.evaluate(tree, secrets, score, guesses=guesses)
  assert elapsed < 5.0, f"evaluating the Wordle file took {elapsed:.2f} s"
  with pytest.raises(pf.PolicyError, match="max_guesses=6"):
    pf.evaluate_file(path, max_guesses=6)  # this policy needs up to 10 guesses


def test_any_game_plugs_in_through_the_registry(tmp_path):
  """The format knows no game: a :class:`pf.FileGame` registered under a name reads its
  files (header keys, their checks, the secrets and the scorer)."""

  class Coin:
    required_keys = ("sides",)

    def check_header(self, header):
      if header["sides"] != 2:
        raise pf.PolicyError("coin: sides must be 2")

    def resolve(self, header, base_dir):
      return ["h", "t"], None, lambda guess, secret: "miss"

  pf.register_game("coin", Coin())
  assert "coin" in pf.known_games()
  path = tmp_path / "coin.json"
  pf.save(path, pf.make_header("coin", sides=2), {"guess": "h", "children": {"miss": {
      "guess": "t"}}})
  assert pf.evaluate_file(path).total_guesses == 3
  with pytest.raises(pf.PolicyError, match="sides must be 2"):
    pf.make_header("coin", sides=3)
  with pytest.raises(pf.PolicyError, match=r"missing keys \['sides'\]"):
    pf.make_header("coin")
  with pytest.raises(pf.PolicyError, match="'game' must be one of .*'coin'.*got 'dice'"):
    pf.make_header("dice")


MM22 = '"format": "jaxsearch-policy/1", "game": "mastermind", "pegs": 2, "colours": 2'


@pytest.mark.parametrize("body,named", [
    # Two children for one feedback: which one a reader follows would be undefined.
    ('{%s, "policy": {"guess": "11", "children": {"b1w0": {"guess": "12"}, "b0w0": '
     '{"guess": "22"}, "b1w0": {"guess": "21"}}}}' % MM22,
     "the node at path root has two children for the feedback 'b1w0'"),
    ('{%s, "policy": {"guess": "11", "children": {"b1w0": {"guess": "12", "children": '
     '{"b0w2": {"guess": "21"}, "b0w2": {"guess": "22"}}}}}}' % MM22,
     "the node at path [('11', 'b1w0')] has two children for the feedback 'b0w2'"),
    ('{%s, "colours": 3, "policy": {"guess": "11"}}' % MM22,
     "the header has the key 'colours' twice"),
    ('{%s, "policy": {"guess": "11", "guess": "22"}}' % MM22,
     "the node at path root has the key 'guess' twice"),
    ('{%s, "note": {"by": "a", "by": "b"}, "policy": {"guess": "11"}}' % MM22,
     "the object at 'note' has the key 'by' twice"),
    ('{%s, "note": NaN, "policy": {"guess": "11"}}' % MM22, "NaN is not a JSON number"),
])
def test_load_refuses_repeated_keys_naming_the_key_and_where(tmp_path, body, named):
  path = tmp_path / "dup.json"
  path.write_text(body)
  with pytest.raises(pf.PolicyError) as refused:
    pf.load(path)
  assert named in str(refused.value) and str(path) in str(refused.value)


def test_deep_files_refuse_repeated_keys_too(tmp_path):
  """Past the depth Python's JSON module recurses to, the loop that reads files checks the
  same: a repeated feedback 1,500 guesses deep is found and placed."""
  depth = 1500
  text = ('{%s, "policy": ' % MM22 + '{"guess": "12", "children": {"b0w2": ' * depth +
          '{"guess": "11"}, "b0w2": {"guess": "22"}' + "}}" * depth + "}")
  path = tmp_path / "deep.json"
  path.write_text(text)
  with pytest.raises(pf.PolicyError, match=r"has two children for the feedback 'b0w2'") as e:
    pf.load(path)
  assert str(e.value).count("('12', 'b0w2')") == depth - 1


def test_the_command_refuses_a_policy_with_a_repeated_feedback(tmp_path, capsys):
  from jaxsearch import cli
  path = tmp_path / "dup.json"
  # Read with the last copy winning, this policy is complete (total 8, the optimum).
  path.write_text('{%s, "policy": {"guess": "12", "children": {"b0w2": {"guess": "21"}, '
                  '"b1w0": {"guess": "22"}, "b1w0": {"guess": "11", "children": '
                  '{"b0w0": {"guess": "22"}}}}}}' % MM22)
  status = cli.main(["evaluate", str(path)])
  err = capsys.readouterr().err
  assert status == 1 and "two children for the feedback 'b1w0'" in err, err
