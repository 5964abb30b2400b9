"""``jaxsearch bench rules``: the exact optima it measures against (the project's exact solver,
and the same within a search's top-K cut, against the plain exhaustive recursion of
tests/test_wordle.py on tiny synthetic lists), the feedback classes, the reach / ratio /
summary figures on hand-made histories, and the command on tiny word lists."""

import json
import math

import numpy as np
import pytest

from jaxsearch.app.benchmarks import rules as bench
from jaxsearch.app.benchmarks.wordle_problems import (CutoffBounds, exact_optimum,
                                                      exact_solvers, feedback_classes)
from jaxsearch.games import wordle
from jaxsearch.guessing.exact import ExactSolver
from test_wordle import _random_words, _solver


def _tiny(seed, num_answers=24, num_extra=16):
  rng = np.random.default_rng(seed)
  answers = _random_words(rng, num_answers)
  guesses = sorted(answers + _random_words(rng, num_extra, letters="abcdefg",
                                           exclude=answers))
  w = wordle.make(answers, guesses)
  return w, np.asarray(w.feedback)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_optima_match_the_plain_recursion(seed):
  w, table = _tiny(seed)
  exact, cut = exact_solvers(w, num_slots=len(w.guesses))  # a cut that keeps every guess
  plain = _solver(table, w.secret_of_guess)
  rng = np.random.default_rng(seed + 10)
  for n in (1, 2, 3, 5, 8, 12):
    secrets = rng.choice(w.num_answers, n, replace=False)
    expected = plain(frozenset(secrets.tolist()))
    assert exact_optimum(exact, secrets) == expected, n
    assert exact_optimum(cut, secrets) == expected, n


def test_a_cut_optimum_is_the_optimum_over_the_guesses_kept():
  """With the same guesses kept at every set, the cut optimum is the plain recursion over
  those guesses alone; never better than the optimum over all; None where no guess is
  useful."""
  w, table = _tiny(2)
  secrets = np.arange(14)
  bounds = w.exact_bounds
  full = exact_optimum(ExactSolver(bounds), secrets)
  kept = np.flatnonzero(np.isin(w.secret_of_guess, secrets))  # the secrets themselves
  only = ExactSolver(CutoffBounds(bounds, lambda _: kept))
  restricted = exact_optimum(only, secrets)
  assert restricted == _solver(table[kept], w.secret_of_guess[kept])(frozenset(range(14)))
  assert restricted >= full
  nothing = ExactSolver(CutoffBounds(bounds, lambda _: []))
  assert exact_optimum(nothing, secrets) is None


def test_feedback_classes_partition_by_the_first_guess():
  rng = np.random.default_rng(4)
  answers = _random_words(rng, 40)
  classes = feedback_classes(answers, answers[0], 2, 40)
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


def _lists(tmp_path) -> tuple:
  """40 answers and 60 guesses written to ``tmp_path``; the command's list flags."""
  rng = np.random.default_rng(0)
  answers = _random_words(rng, 40)
  guesses = sorted(answers + _random_words(rng, 20, letters="abcdefg", exclude=answers))
  (tmp_path / "answers").write_text("\n".join(answers) + "\n")
  (tmp_path / "guesses").write_text("\n".join(guesses) + "\n")
  return answers, ["--answers", str(tmp_path / "answers"), "--guesses",
                   str(tmp_path / "guesses"), "--first", answers[0], "--min-answers", "3",
                   "--max-answers", "12", "--max-problems", "3", "--num-slots", "16"]


def _check_line(line: dict, rules) -> None:
  for problem in line["sub_problems"]:
    assert problem["optimum"] == problem["optimum_within_cut"]
    assert problem["optimum"] >= 2 * problem["answers"] - 1
  for rule in rules:
    figures = line["rules"][rule]
    # Tiny sub-problems are solved exactly well within the budget by every rule, and no
    # bound ever claims better than the exhaustive optimum.
    assert figures["evaluations"]["reached"] == 1.0, rule
    assert all(x >= -1e-3 for x in figures["final_total_minus_optimum"]), rule


def test_the_command_on_a_tiny_word_list(tmp_path, capsys):
  """``jaxsearch bench rules`` end to end, one rule (one compile)."""
  from jaxsearch import cli
  _, flags = _lists(tmp_path)
  assert cli.main(["bench", "rules", *flags, "--budget", "200", "--only", "thompson_avts",
                   "--plot", ""]) == 0
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["benchmark"] == "rules_wordle" and line["kept"] >= 1
  _check_line(line, ["thompson_avts"])


@pytest.mark.slow
def test_three_rules_on_a_tiny_word_list(tmp_path, capsys):
  _, flags = _lists(tmp_path)
  assert bench.main([*flags, "--budget", "300",
                     "--only", "thompson_avts,puct_value_prior,optimistic",
                     "--plot", str(tmp_path / "p.png")]) == 0
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["kept"] >= 1 and (tmp_path / "p.png").is_file()
  _check_line(line, ("thompson_avts", "puct_value_prior", "optimistic"))
  assert "ratio_puct_over_thompson" in line
  assert not math.isnan(line["rules"]["thompson_avts"]["idle_simulations"])
