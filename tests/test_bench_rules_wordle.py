"""scripts/bench_rules_wordle.py, scripts/bench_rules_wordle_full.py,
scripts/bench_wordle_default_rule.py and scripts/wordle_exact.py: the exact solver against the
plain exhaustive recursion of tests/test_wordle.py on tiny synthetic lists, the feedback
classes, the reach / ratio / summary figures on hand-made histories, and (slow: several
compiles) the whole scripts on tiny word lists."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxsearch.games import wordle
from test_wordle import _random_words, _solver

_SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
sys.path.insert(0, str(_SCRIPTS))
_SPEC = importlib.util.spec_from_file_location("bench_rules_wordle",
                                               _SCRIPTS / "bench_rules_wordle.py")
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)
from wordle_exact import Exact  # noqa: E402


def _tiny(seed, num_answers=24, num_extra=16):
  rng = np.random.default_rng(seed)
  answers = _random_words(rng, num_answers)
  guesses = sorted(answers + _random_words(rng, num_extra, letters="abcdefg",
                                           exclude=answers))
  w = wordle.make(answers, guesses)
  return w, np.asarray(w.feedback)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_solver_matches_the_plain_recursion(seed):
  w, table = _tiny(seed)
  exact = Exact(table, w.secret_of_guess, wordle.SOLVED)
  plain = _solver(table, w.secret_of_guess)
  rng = np.random.default_rng(seed + 10)
  for n in (1, 2, 3, 5, 8, 12):
    secrets = rng.choice(w.num_answers, n, replace=False)
    assert exact.solve(secrets) == plain(frozenset(secrets.tolist())), n
  # The optimum is attained by some first guess, and no first guess beats it.
  secrets = rng.choice(w.num_answers, 10, replace=False)
  best = exact.solve(secrets)
  totals = [exact.total_after(secrets, g) for g in range(len(w.guesses))]
  assert min(t for t in totals if t > 0) == best


def test_exact_solver_with_a_cutoff_is_never_better():
  w, table = _tiny(2)
  secrets = np.arange(14)
  full = Exact(table, w.secret_of_guess, wordle.SOLVED).solve(secrets)
  # Allow only the secrets themselves as guesses ("hard mode"-like): never better.
  only_secrets = Exact(table, w.secret_of_guess, wordle.SOLVED,
                       candidates=lambda s: np.flatnonzero(np.isin(w.secret_of_guess, s)))
  restricted = only_secrets.solve(secrets)
  assert restricted >= full
  # No useful guess at all: no strategy.
  nothing = Exact(table, w.secret_of_guess, wordle.SOLVED, candidates=lambda s: [])
  assert nothing.solve(secrets) is None


def test_feedback_classes_partition_by_the_first_guess():
  rng = np.random.default_rng(4)
  answers = _random_words(rng, 40)
  classes = bench.feedback_classes(answers, answers[0], 2, 40)
  sizes = [len(m) for _, m in classes]
  assert sizes == sorted(sizes, reverse=True) and min(sizes) >= 2
  for pattern, members in classes:
    assert all(wordle.score(answers[0], answers[i]) == pattern for i in members)
  # Every answer of every class of size >= 2 is listed exactly once.
  listed = np.concatenate([m for _, m in classes])
  assert len(set(listed.tolist())) == len(listed)


def test_first_reach_summary_and_ratio_on_hand_made_histories():
  bounds = np.array([[-3.0, -2.0], [-2.5, -2.0], [-2.0, -1.9], [-2.0, -1.9]])
  target = np.array([-2.0, -1.5])
  within = np.ones(bounds.shape, bool)
  np.testing.assert_array_equal(bench.first_reach(bounds, target, within), [2, -1])
  within[2:, 0] = False  # beyond the budget from step 2 on
  np.testing.assert_array_equal(bench.first_reach(bounds, target, within), [-1, -1])
  s = bench.summary([3.0, 5.0, np.inf, 9.0])
  assert s["median"] == 5.0 and s["reached"] == 0.75 and s["q3"] == 9.0
  assert bench.summary([1.0, np.inf, np.inf])["median"] is None
  report = {"thompson_avts": {"evaluations": {"median": 40.0}},
            "puct_value_prior": {"evaluations": {"median": 500.0}}}
  assert bench.ratio_line(report, 1000) == {"ratio_puct_over_thompson": 12.5}
  report["puct_value_prior"]["evaluations"]["median"] = None
  assert bench.ratio_line(report, 1000) == {"ratio_puct_over_thompson": None,
                                            "ratio_puct_over_thompson_at_least": 25.0}


@pytest.mark.slow
def test_script_on_a_tiny_word_list(tmp_path, capsys):
  rng = np.random.default_rng(0)
  answers = _random_words(rng, 40)
  guesses = sorted(answers + _random_words(rng, 20, letters="abcdefg", exclude=answers))
  (tmp_path / "answers").write_text("\n".join(answers) + "\n")
  (tmp_path / "guesses").write_text("\n".join(guesses) + "\n")
  bench.main(["--answers", str(tmp_path / "answers"), "--guesses", str(tmp_path / "guesses"),
              "--first", answers[0], "--min-answers", "3", "--max-answers", "12",
              "--max-problems", "3", "--budget", "300", "--num-slots", "16",
              "--only", "thompson_avts,puct_value_prior,optimistic",
              "--plot", str(tmp_path / "p.png")])
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["kept"] >= 1 and (tmp_path / "p.png").is_file()
  for problem in line["sub_problems"]:
    assert problem["optimum"] == problem["optimum_within_cut"]
    assert problem["optimum"] >= 2 * problem["answers"] - 1
  for rule in ("thompson_avts", "puct_value_prior", "optimistic"):
    figures = line["rules"][rule]
    # Tiny sub-problems are solved exactly well within the budget by every rule, and no
    # bound ever claims better than the exhaustive optimum.
    assert figures["evaluations"]["reached"] == 1.0, rule
    assert all(x >= -1e-3 for x in figures["final_total_minus_optimum"]), rule
  assert "ratio_puct_over_thompson" in line
  assert not math.isnan(line["rules"]["thompson_avts"]["idle_simulations"])


_FULL_SPEC = importlib.util.spec_from_file_location("bench_rules_wordle_full",
                                                    _SCRIPTS / "bench_rules_wordle_full.py")
full = importlib.util.module_from_spec(_FULL_SPEC)
_FULL_SPEC.loader.exec_module(full)


def test_full_scale_ratio_is_exact_or_a_lower_bound():
  """scripts/bench_rules_wordle_full.py: PUCT over Thompson in iterations, exact where both
  reached the target, a lower bound where only Thompson did, nothing where it did not."""
  reached = {"reached": True, "iterations": 1000, "spent": {"iterations": 1000}}
  assert full.ratio({"thompson_avts": reached,
                     "puct_value_prior": {**reached, "iterations": 23600}},
                    "puct_value_prior", "thompson_avts") == {"ratio_puct_over_thompson": 23.6}
  capped = {"reached": False, "iterations": None, "spent": {"iterations": 12000}}
  assert full.ratio({"thompson_avts": reached, "puct_value_prior": capped},
                    "puct_value_prior", "thompson_avts") == {
                        "ratio_puct_over_thompson_at_least": 12.0}
  assert full.ratio({"thompson_avts": capped, "puct_value_prior": reached},
                    "puct_value_prior", "thompson_avts") == {}


def _tiny_lists(tmp_path, seed: int):
  """12 answers and 20 guesses written to ``tmp_path/a.txt`` and ``g.txt``; returns
  ``(answers, guesses, game)``."""
  rng = np.random.default_rng(seed)
  answers = sorted(_random_words(rng, 12))
  guesses = sorted(answers + _random_words(rng, 8, letters="abcdefg", exclude=answers))
  (tmp_path / "a.txt").write_text("\n".join(answers) + "\n")
  (tmp_path / "g.txt").write_text("\n".join(guesses) + "\n")
  return answers, guesses, wordle.make(answers, guesses)


@pytest.mark.slow
def test_full_scale_script_on_a_tiny_word_list(tmp_path, capsys):
  """Every rule from the empty board of a tiny Wordle until the brute-force optimum."""
  answers, guesses, w = _tiny_lists(tmp_path, seed=3)
  optimum = _solver(np.asarray(w.feedback), w.secret_of_guess)(frozenset(range(12)))
  plot = tmp_path / "rules.png"
  assert full.main(["--answers", str(tmp_path / "a.txt"), "--guesses", str(tmp_path / "g.txt"),
                    "--target", str(optimum), "--cap-seconds", "60", "--check-every", "2",
                    "--chunk", "4", "--nodes", "4000", "--slots", "0",
                    "--plot", str(plot)]) == 0
  found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert set(found["rules"]) == set(full.RULES)
  for name, rule in found["rules"].items():
    assert rule["best_total"] >= optimum, name  # no policy beats the brute force
    assert rule["reached"] == (rule["best_total"] == optimum), name
  assert found["rules"]["thompson_avts"]["reached"]
  assert plot.stat().st_size > 1000


_RULE_SPEC = importlib.util.spec_from_file_location("bench_wordle_default_rule",
                                                    _SCRIPTS / "bench_wordle_default_rule.py")
default_rule = importlib.util.module_from_spec(_RULE_SPEC)
_RULE_SPEC.loader.exec_module(default_rule)


def test_default_rule_bench_reads_the_first_chunk_at_the_target_and_summarises():
  """scripts/bench_wordle_default_rule.py: the first chunk whose achievable bound is at most
  the target; per rule, medians over the runs that reached it and nothing where none did."""
  history = [(4, 10.0, 11230.0, 9000.0), (8, 20.04, 11219.0, 9000.0), (12, 30.0, 11219.0, 9.0)]
  assert default_rule.first_reached(history, 11219) == (8, 20.0)
  assert default_rule.first_reached(history, 11218) == (None, None)

  def run(rule, seed, simulations, seconds, total):
    return {"rule": rule, "seed": seed, "reached_in_search": simulations is not None,
            "simulations_to_target": simulations, "search_seconds_to_target": seconds,
            "search_bound": 11219.0 if simulations else 11221.0, "total": total,
            "proven_given_first": total == 11219, "wall_seconds": 100.0 + seed}

  found = default_rule.summary([run("a", 0, 8, 20.0, 11219), run("b", 0, None, None, 11220),
                                run("a", 1, 16, 40.0, 11219), run("b", 1, None, None, 11219),
                                run("a", 2, None, None, 11219), run("b", 2, 4, 9.0, 11219)])
  assert list(found) == ["a", "b"]
  assert found["a"]["reached_in_search"] == 2 and found["a"]["median_simulations_to_target"] == 12
  assert found["a"]["median_search_seconds_to_target"] == 30.0
  assert found["b"]["reached_in_search"] == 1 and found["b"]["median_simulations_to_target"] == 4
  assert found["b"]["totals"] == [11220, 11219, 11219] and found["b"]["proven_given_first"] == 2
  assert found["a"]["median_wall_seconds"] == 101.0


@pytest.mark.slow
def test_default_rule_script_on_a_tiny_word_list(tmp_path, capsys):
  """Both rules with a fixed first guess of a tiny Wordle reach the brute-force optimum given
  that guess, proven, end to end."""
  answers, guesses, w = _tiny_lists(tmp_path, seed=4)
  table = np.asarray(w.feedback)
  solve = _solver(table, w.secret_of_guess)
  first = guesses.index(answers[0])
  # The optimum given the first guess: one guess, then each feedback's class solved.
  classes = {}
  for secret in range(12):
    classes.setdefault(int(table[first, secret]), set()).add(secret)
  given = 12 + sum(solve(frozenset(c)) for pattern, c in classes.items()
                   if pattern != wordle.SOLVED)
  assert default_rule.main(["--answers", str(tmp_path / "a.txt"), "--guesses",
                            str(tmp_path / "g.txt"), "--first", answers[0], "--target",
                            str(given), "--seconds", "20", "--seeds", "0",
                            "--nodes", "4000"]) == 0
  found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  for rule in ("optimistic", "hoeffding"):
    assert found["rules"][rule]["totals"] == [given], rule
    assert found["rules"][rule]["proven_given_first"] == 1, rule
