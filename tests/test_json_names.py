"""Names that say what they hold: the ``--json`` bounds (``achievable_total``,
``lower_bound_total``, ``lower_bound_scope``, with their old names as aliases for one
release), and command-line errors that name the flag typed (``--pegs``, ``--colours``), not
the function or the Python argument behind it."""

import json
import types

import pytest

from jaxsearch import cli
from jaxsearch.cli import solve as solve_cli
from jaxsearch.games import mastermind
from jaxsearch.guessing import report


def _result(bound, upper, scope, root=None):
  evaluation = types.SimpleNamespace(secrets=1296, total_guesses=5625,
                                     expected_guesses=5625 / 1296, worst_case=6)
  return types.SimpleNamespace(
      evaluation=evaluation, policy={"guess": "1122"}, proven_optimal=scope == "game",
      proven_given_first=True, bound_total=bound, upper_total=upper, upper_total_scope=scope,
      simulations=96, nodes=960, subproblems=None, memory=None, seconds=12.5,
      resumed_from_simulations=None, phases={}, root=root,
      history=[(32, 1.0, bound + 5, None), (96, 3.0, bound, upper)])


def test_the_bounds_have_names_that_say_what_they_hold():
  puzzle = types.SimpleNamespace(name="mastermind_4x6")
  found = report.summary(puzzle, _result(5630.0, 5610.0, "given_first"))
  # The achievable bound is above the lower bound on any policy's total: the names read so.
  assert found["achievable_total"] == 5630.0 and found["lower_bound_total"] == 5610.0
  assert found["achievable_total"] >= found["total_guesses"] >= found["lower_bound_total"]
  assert found["lower_bound_scope"] == "given_first"
  assert found["history"][-1] == [96, 3.0, 5630.0, 5610.0]
  json.dumps(found)  # all of it JSON


def test_the_old_names_stay_one_release_as_aliases():
  puzzle = types.SimpleNamespace(name="mastermind_4x6")
  for upper in (5625.0, None):
    found = report.summary(puzzle, _result(5625.0, upper, "game"))
    for new, old in report.OLD_NAMES.items():
      assert found[old] == found[new], (old, new)
    assert found["upper_total"] == upper and found["bound_total"] == 5625.0


def test_each_visited_first_guess_has_both_names():
  opening = types.SimpleNamespace(guess="tarse", visits=3, simulations=64,
                                  bound_total=11219.0, upper_total=float("inf"),
                                  estimate_total=11230.0, retired=False)
  root = types.SimpleNamespace(first_guesses=14855, ruled_out=11825, open=3029, visits=3,
                               openings=[opening])
  found = report.summary(types.SimpleNamespace(name="wordle"),
                         _result(11219.0, None, "game", root=root))
  visited = found["first_guesses"]["visited"][0]
  assert visited["achievable_total"] == visited["bound_total"] == 11219.0
  assert visited["lower_bound_total"] is visited["upper_total"] is None  # inf: none yet


@pytest.mark.parametrize("argv, flag", [(["--pegs", "0"], "--pegs"),
                                        (["--pegs", "22"], "--pegs"),
                                        (["--colours", "0"], "--colours"),
                                        (["--colours", "12"], "--colours")])
def test_a_size_out_of_range_is_refused_naming_its_flag(capsys, argv, flag):
  with pytest.raises(SystemExit) as exc:
    cli.main(["solve", "mastermind", *argv])
  assert exc.value.code == 2
  err = capsys.readouterr().err
  assert f"argument {flag}: expected an integer from 1 to" in err
  assert "mastermind.make" not in err


def test_too_many_codes_is_refused_naming_both_flags(capsys):
  assert cli.main(["solve", "mastermind", "--pegs", "6", "--colours", "6"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith("jaxsearch solve: --pegs 6 --colours 6 make 46656 codes, too many")
  assert "mastermind.make" not in err


def test_the_flags_limits_are_the_games():
  """What the command line lets through, the game builds; one beyond, the game refuses
  too (so the flags never refuse a size the game takes)."""
  assert mastermind.make(solve_cli.MAX_PEGS, 1).num_codes == 1
  assert mastermind.make(1, solve_cli.MAX_COLOURS).num_codes == solve_cli.MAX_COLOURS
  for pegs, colours in ((solve_cli.MAX_PEGS + 1, 1), (1, solve_cli.MAX_COLOURS + 1), (6, 6)):
    with pytest.raises(ValueError):
      mastermind.make(pegs, colours)
  # At the code limit itself the command line goes on (the game builds it: a 1 GiB table).
  solve_cli.check_sizes(types.SimpleNamespace(game="mastermind", pegs=5, colours=8))
  assert 8 ** 5 == solve_cli.MAX_CODES
  solve_cli.check_sizes(types.SimpleNamespace(game="wordle", pegs=9, colours=9))  # ignored


def test_evaluate_names_no_python_argument(tmp_path, capsys):
  path = tmp_path / "bad.json"
  path.write_text(json.dumps({"format": "jaxsearch-policy/1", "game": "mastermind",
                              "pegs": 2, "colours": 2,
                              "policy": {"guess": "13", "children": {}}}))
  assert cli.main(["evaluate", str(path)]) == 1
  err = capsys.readouterr().err
  assert "'13'" in err and "not a valid guess" in err
  assert "guesses=" not in err and "pass " not in err
