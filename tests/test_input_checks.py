"""Bad input is refused before any work starts: exit status 2 and one line naming the option
(docs/bad_input.md), or a clear ``TypeError``/``ValueError`` naming the argument in the Python
API.

The command-line tests call ``cli.main([...])`` in-process. Where a refusal must come before
the work, the work is replaced by a stub that fails the test if it is reached (building the
puzzle, the solver, the trainer, importing the game), so that a check that comes too late, or
not at all, fails here in a second rather than running a search.
"""

import argparse
import math
import os
import sys

import pytest

from jaxsearch import cli
from jaxsearch.cli import common


class _Reached(Exception):
  """A stub of the work was called: the input was not refused before it."""


def _refuse_work(monkeypatch):
  """Every verb's work fails the test if reached: the puzzles, the solver, the trainer, the
  game ``play`` imports."""
  def reached(*args, **kwargs):
    raise _Reached("the work started: the input was not refused before it")
  from jaxsearch import solve as solve_lib
  from jaxsearch.games import mastermind, wordle
  from jaxsearch.train import trainer
  for target, name in ((mastermind, "puzzle"), (wordle, "puzzle"), (solve_lib, "solve_puzzle"),
                       (trainer, "Trainer"), (cli.play, "_game_module")):
    monkeypatch.setattr(target, name, reached)


def _one_line_error(capsys, status, *needles):
  """Exit status 2, exactly one non-empty stderr line holding every needle, no traceback."""
  err = capsys.readouterr().err
  assert status == 2, err
  lines = [line for line in err.splitlines() if line.strip()]
  assert len(lines) == 1 and "Traceback" not in err, err
  for needle in needles:
    assert needle in lines[0], err
  return lines[0]


def _parsed(monkeypatch, argv):
  """The namespace ``cli.main(argv)`` hands to its verb (the verb is not run)."""
  seen = {}
  for verb in (cli.solve, cli.train, cli.play, cli.evaluate):
    monkeypatch.setattr(verb, "run", lambda args: seen.setdefault("args", args) and 0)
  assert cli.main(argv) == 0
  return seen["args"]


# ---- 1. numbers: negative, NaN, inf ---------------------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["solve", "mastermind", "--seconds", "nan"], "--seconds"),
    (["solve", "mastermind", "--seconds", "-1"], "--seconds"),
    (["solve", "mastermind", "--seconds=-inf"], "--seconds"),
    (["solve", "mastermind", "--certify-seconds", "nan"], "--certify-seconds"),
    (["solve", "mastermind", "--certify-seconds", "-0.5"], "--certify-seconds"),
    (["solve", "mastermind", "--memory", "-1"], "--memory"),
    (["solve", "mastermind", "--memory", "0"], "--memory"),
    (["solve", "mastermind", "--memory", "nan"], "--memory"),
    (["solve", "mastermind", "--memory", "inf"], "--memory"),
    (["solve", "mastermind", "--draw-depth", "-1"], "--draw-depth"),
    (["solve", "mastermind", "--slots", "-1"], "--slots"),
    (["solve", "mastermind", "--bound-slots", "-1"], "--bound-slots"),
    (["train", "tictactoe", "--minutes", "-1"], "--minutes"),
    (["train", "tictactoe", "--minutes", "0"], "--minutes"),
    (["train", "tictactoe", "--minutes", "nan"], "--minutes"),
    (["train", "tictactoe", "--minutes", "inf"], "--minutes"),
])
def test_bad_numbers_are_usage_errors(monkeypatch, capsys, argv, option):
  """Refused while parsing: argparse's error naming the option, then where to read more
  (status 2). The verb is a stub that passes: a type that lets the value through (``float``,
  ``int``, as before) fails here without running anything. Before: ``--seconds nan`` searched
  with no time limit (every comparison with NaN is false), ``--minutes -1`` trained 0 steps
  and exited 0, ``--memory -1`` was refused only after compiling."""
  monkeypatch.setattr(cli.solve, "run", lambda args: 0)
  monkeypatch.setattr(cli.train, "run", lambda args: 0)
  with pytest.raises(SystemExit) as exc:
    cli.main(argv)
  assert exc.value.code == 2
  err = capsys.readouterr().err
  lines = err.splitlines()
  assert len(lines) == 2 and "Traceback" not in err, err
  assert f"argument {option}: expected" in lines[0] and "--help` lists" in lines[1], err


def test_time_limits_take_zero_and_inf_the_rest_finite(monkeypatch):
  """``--seconds`` and ``--certify-seconds`` take 0 (one chunk; no exact search) and ``inf``
  (no time limit); ``--memory`` and ``--minutes`` are positive and finite."""
  args = _parsed(monkeypatch, ["solve", "mastermind", "--seconds", "inf", "--certify-seconds",
                               "0", "--memory", "0.5"])
  assert math.isinf(args.seconds) and args.certify_seconds == 0.0 and args.memory == 0.5
  args = _parsed(monkeypatch, ["solve", "mastermind", "--seconds", "0", "--certify-seconds",
                               "inf"])
  assert args.seconds == 0.0 and math.isinf(args.certify_seconds)
  assert _parsed(monkeypatch, ["train", "tictactoe", "--minutes", "0.25"]).minutes == 0.25


def test_float_types_directly():
  """The types themselves: NaN always refused, +inf only by ``time_limit``, ``-inf`` never,
  non-numbers quoted in the message."""
  for parse in (common.positive_float, common.non_negative_float, common.time_limit):
    for text in ("nan", "NaN", "-inf", "-1", "x"):
      with pytest.raises(argparse.ArgumentTypeError):
        parse(text)
  with pytest.raises(argparse.ArgumentTypeError, match="got 'soon'"):
    common.time_limit("soon")
  for parse in (common.positive_float, common.non_negative_float):
    with pytest.raises(argparse.ArgumentTypeError):
      parse("inf")
  with pytest.raises(argparse.ArgumentTypeError):
    common.positive_float("0")
  assert common.non_negative_float("0") == 0.0 and common.time_limit("1e999") == math.inf
  assert common.positive_float("2.5") == 2.5


@pytest.mark.parametrize("argv, needles", [
    (["play", "tictactoe", "--draw-depth", "-1"], ["jaxsearch play", "--draw-depth"]),
    (["play", "tictactoe", "--simulations", "0"], ["jaxsearch play", "--simulations"]),
])
def test_play_options_refused_before_the_game_is_imported(monkeypatch, capsys, argv, needles):
  """``--draw-depth -1`` is refused even without ``--draw`` (it was ignored there), and both
  before the game (and JAX, pgx) is imported; ``--simulations 0`` names the verb."""
  _refuse_work(monkeypatch)
  _one_line_error(capsys, cli.main(argv), *needles)


# ---- 2. solve --nodes below what the trees need ---------------------------------------------

@pytest.mark.parametrize("argv, minimum, needles", [
    # 4×6: 52 trees (the five openings' feedbacks but the solved one), 4 × 14 + 1 = 57 each.
    ([], 2964, ["52 trees", "4 × 14 feedbacks + 1 = 57", "--no-openings"]),
    (["--first", "1123"], 741, ["13 trees", "--first 1123"]),
    (["--no-openings"], 33, ["one tree", "--chunk + 1 = 33"]),
    (["--no-openings", "--chunk", "100"], 101, ["--chunk + 1 = 101"]),
])
def test_solve_nodes_below_the_minimum_are_refused_with_it(monkeypatch, capsys, argv, minimum,
                                                           needles):
  """Before: ``--nodes 3`` was silently grown to 2964 (``_solve_openings`` gives each tree
  at least ``4 * num_outcomes + 1`` nodes). Now refused, with the minimum, before the puzzle
  is built."""
  _refuse_work(monkeypatch)
  line = _one_line_error(capsys, cli.main(["solve", "mastermind", "--nodes", str(minimum - 1),
                                           "--quiet", *argv]),
                         "jaxsearch solve", f"--nodes {minimum - 1} is too small",
                         f"pass --nodes {minimum} or more", *needles)
  assert "--no-openings" not in line or not argv


def _solve_args(*argv):
  """The ``solve`` namespace of ``argv`` (parsed by the real parser; not run)."""
  parser = cli._parser()
  return parser.parse_args(["solve", *argv])


def test_solve_node_minimum_is_exact(monkeypatch):
  """At the minimum the check passes, one below it refuses; one secret (an opening that
  solves it) needs no tree, so any budget passes."""
  for argv, minimum in ((["mastermind"], 2964), (["mastermind", "--pegs", "2", "--colours",
                                                  "3", "--chunk", "4"], 6 * 21)):
    args = _solve_args(*argv)
    assert common.solve_node_minimum(args)[0] == minimum
    args.nodes = minimum
    common.check_solve_input(args)
    args.nodes = minimum - 1
    with pytest.raises(common.CommandError, match=f"pass --nodes {minimum} or more"):
      common.check_solve_input(args)
  assert common.solve_node_minimum(_solve_args("mastermind", "--pegs", "1", "--colours",
                                               "1")) is None
  # Sizes the game refuses, a --first that is not a code: left to their own messages.
  assert common.solve_node_minimum(_solve_args("mastermind", "--pegs", "9", "--colours",
                                               "9")) is None
  assert common.solve_node_minimum(_solve_args("mastermind", "--first", "99")) is None


@pytest.mark.parametrize("pegs, colours, first", [(2, 3, None), (3, 3, None), (2, 4, "12"),
                                                  (3, 2, None)])
def test_the_node_minimum_mirrors_the_solver(monkeypatch, pegs, colours, first):
  """The CLI counts the trees and the per-tree minimum without building the puzzle; here
  the solver itself (``_solve_openings``, its search stubbed) takes the minimum as is and
  grows one node less (the growth the CLI now refuses). ``--chunk 4``: the per-tree minimum
  is the solver's ``4 * num_outcomes + 1``, not ``chunk + 1``."""
  from jaxsearch.games import mastermind
  from jaxsearch.guessing import puzzle as puzzle_lib
  argv = ["mastermind", "--pegs", str(pegs), "--colours", str(colours), "--chunk", "4"]
  args = _solve_args(*argv, *(["--first", first] if first else []))
  minimum = common.solve_node_minimum(args)[0]
  puzzle = mastermind.puzzle(pegs, colours, exact_search=False)
  openings = [first] if first else list(puzzle.openings)
  trees = sum(len(puzzle_lib.opening_roots(puzzle, guess)[0]) for guess in openings)
  assert minimum == trees * (4 * puzzle.game.num_outcomes + 1)

  def searched(nodes):
    seen = {}

    def stub(puzzle, roots, *, options, **kwargs):
      seen.update(trees=len(roots.remaining), per_tree=options.capacity.max_nodes)
      raise _Reached
    monkeypatch.setattr(puzzle_lib, "solve", stub)
    options = puzzle_lib.SolveOptions.from_keywords(max_nodes=nodes, chunk=4)
    with pytest.raises(_Reached):
      puzzle_lib._solve_openings(puzzle, openings, options, None, None)
    return seen["trees"] * seen["per_tree"]
  assert searched(minimum) == minimum  # shared out as given
  assert searched(minimum - 1) > minimum - 1  # grown


def test_the_chunk_defaults_mirror_solve():
  """``solve_node_minimum`` uses ``--chunk``'s defaults before ``solve`` fills them in."""
  from jaxsearch.games.solve_defaults import SOLVABLE
  for name, game in SOLVABLE.items():
    args = argparse.Namespace(game=name, slots=None, bound_slots=None, nodes=None, chunk=None,
                              seconds=None, first=None, openings=True)
    cli.solve._fill_budget_defaults(args)
    assert args.chunk == game.defaults.chunk
    # Wordle's search over first guesses gets the time it needs to find the optimum (the
    # whole run's: half of it for the search).
    assert args.seconds == (1200.0 if name == "wordle" else 120.0)


def test_wordle_first_node_minimum(tmp_path):
  """Wordle with ``--first``: one tree per pattern of the first guess but the solved one,
  each of 4 × 243 + 1 nodes; counted from the lists as the solver does."""
  from jaxsearch.games import wordle
  from jaxsearch.guessing import puzzle as puzzle_lib
  answers = ["cigar", "rebut", "sissy", "humph", "awake", "blush"]
  (tmp_path / "a.txt").write_text("\n".join(answers) + "\n")
  (tmp_path / "g.txt").write_text("\n".join(answers + ["crane", "slate"]) + "\n")
  argv = ["wordle", "--answers", str(tmp_path / "a.txt"), "--guesses", str(tmp_path / "g.txt")]
  # One tree (--no-openings, --chunk 4); the search over first guesses visits first guesses
  # not known in advance, each tree given at least the minimum: nothing to check up front.
  assert common.solve_node_minimum(_solve_args(*argv, "--no-openings"))[0] == 4 + 1
  assert common.solve_node_minimum(_solve_args(*argv)) is None
  minimum = common.solve_node_minimum(_solve_args(*argv, "--first", "crane"))[0]
  puzzle = wordle.puzzle(tmp_path / "a.txt", tmp_path / "g.txt", exact_search=False)
  trees = len(puzzle_lib.opening_roots(puzzle, "crane")[0])
  assert trees > 1 and minimum == trees * (4 * 243 + 1)
  # A --first that is not an allowed guess: left to the solve command's own message.
  assert common.solve_node_minimum(_solve_args(*argv, "--first", "zzzzz")) is None


def _set_default_nodes(monkeypatch, nodes: int) -> None:
  """``solve mastermind``'s default ``--nodes`` is ``nodes`` for the test."""
  import dataclasses
  from jaxsearch.games.solve_defaults import SOLVABLE
  game = SOLVABLE["mastermind"]
  monkeypatch.setitem(SOLVABLE, "mastermind", dataclasses.replace(
      game, defaults=dataclasses.replace(game.defaults, nodes=nodes)))


def test_a_default_node_budget_below_the_minimum_is_raised_and_said(tmp_path, monkeypatch,
                                                                    capsys):
  """The default ``--nodes`` is not the user's: below what the run needs it is raised to the
  minimum, with a line on stderr (not grown silently by the solver); an explicit one too small
  is refused (above)."""
  _set_default_nodes(monkeypatch, 100)
  args = _solve_args("mastermind", "--pegs", "2", "--colours", "3", "--chunk", "4")
  common.check_solve_input(args)
  assert args.nodes == 6 * 21
  assert "default node budget 100" in capsys.readouterr().err
  args = _solve_args("mastermind", "--pegs", "2", "--colours", "3", "--chunk", "4")
  _set_default_nodes(monkeypatch, 10_000)
  common.check_solve_input(args)
  assert args.nodes is None and capsys.readouterr().err == ""  # the default suffices


# ---- 3. output paths, and --plot without matplotlib -----------------------------------------

def test_check_writable(tmp_path, monkeypatch):
  """A missing folder, a folder given as a file, a file given as a folder, no permission."""
  monkeypatch.chdir(tmp_path)
  file = tmp_path / "file.txt"
  file.write_text("x")
  common.check_writable(tmp_path / "new.json", "--export")
  common.check_writable(file, "--export")  # overwritten
  common.check_writable("relative.json", "--export")  # in the working folder
  common.check_writable(tmp_path / "a" / "b", "--out", folder=True)  # made, parents too
  common.check_writable(tmp_path, "--out", folder=True)
  with pytest.raises(FileNotFoundError, match=r"--export .*: the folder .*missing does not "):
    common.check_writable(tmp_path / "missing" / "x.json", "--export")
  with pytest.raises(IsADirectoryError, match="--plot .*: is a folder"):
    common.check_writable(tmp_path, "--plot")
  with pytest.raises(NotADirectoryError, match="is not a folder"):
    common.check_writable(file / "x.json", "--export")
  with pytest.raises(NotADirectoryError, match="--out .*: is a file, not a folder"):
    common.check_writable(file, "--out", folder=True)
  with pytest.raises(NotADirectoryError, match="cannot make the folder"):
    common.check_writable(file / "run", "--out", folder=True)
  # No permission (simulated: root may write anywhere, and the tests may run as root).
  real_access = os.access
  locked = str(tmp_path)
  monkeypatch.setattr(common.os, "access",
                      lambda path, mode: str(path) != locked and real_access(path, mode))
  with pytest.raises(PermissionError, match="no permission to write in"):
    common.check_writable(tmp_path / "new.json", "--export")
  common.check_writable(file, "--plot")  # the file itself may be written
  with pytest.raises(PermissionError):  # but not replaced by a rename in its folder
    common.check_writable(file, "--export", replaced=True)
  with pytest.raises(PermissionError, match="--out"):
    common.check_writable(tmp_path / "run", "--out", folder=True)
  monkeypatch.setattr(common.os, "access", real_access)
  if os.geteuid() != 0:  # the real thing, where permissions apply
    locked_dir = tmp_path / "locked"
    locked_dir.mkdir()
    locked_dir.chmod(0o500)
    try:
      with pytest.raises(PermissionError):
        common.check_writable(locked_dir / "x.json", "--export")
    finally:
      locked_dir.chmod(0o700)


@pytest.mark.parametrize("make_argv, needles", [
    (lambda d: ["solve", "mastermind", "--export", str(d / "no" / "p.json")],
     ["--export", "does not exist"]),
    (lambda d: ["solve", "mastermind", "--export", str(d)], ["--export", "is a folder"]),
    (lambda d: ["solve", "mastermind", "--plot", str(d / "no" / "p.png")], ["--plot"]),
    (lambda d: ["solve", "mastermind", "--plot", str(d / "p.xyz")], ["--plot", ".xyz"]),
    (lambda d: ["solve", "mastermind", "--draw", str(d / "no" / "t.dot")], ["--draw"]),
    (lambda d: ["solve", "mastermind", "--draw", str(d / "t.jpeg")], ["--draw", ".svg"]),
    (lambda d: ["solve", "wordle", "--export", str(d / "no" / "p.json")], ["--export"]),
    (lambda d: ["play", "tictactoe", "--draw", str(d / "no" / "t.dot")], ["jaxsearch play",
                                                                         "--draw"]),
    (lambda d: ["train", "tictactoe", "--out", str(d / "f.txt"), "--quiet"],
     ["jaxsearch train", "--out", "is a file"]),
    (lambda d: ["train", "tictactoe", "--out", str(d / "f.txt" / "run"), "--quiet"],
     ["--out", "cannot make the folder"]),
])
def test_unwritable_outputs_are_refused_before_the_run(monkeypatch, capsys, tmp_path,
                                                       make_argv, needles):
  """Before: the file was written after the search, which raised there and lost the
  result (or, for ``train --out``, after importing and building the trainer)."""
  (tmp_path / "f.txt").write_text("not a folder")
  _refuse_work(monkeypatch)
  verb = make_argv(tmp_path)[0]
  _one_line_error(capsys, cli.main(make_argv(tmp_path)), f"jaxsearch {verb}", *needles)


def test_solve_checkpoint_folder_is_checked_with_the_outputs(tmp_path):
  """``solve --checkpoint DIR`` is written as the search goes: a file given as the folder is
  refused up front too (``check_solve_input``, on a namespace as ``solve`` parses it)."""
  (tmp_path / "f.txt").write_text("x")
  args = _solve_args("mastermind")
  args.checkpoint = str(tmp_path / "f.txt")
  with pytest.raises(NotADirectoryError, match="--checkpoint .*: is a file, not a folder"):
    common.check_solve_input(args)
  args.checkpoint = str(tmp_path / "run" / "state")
  common.check_solve_input(args)


@pytest.mark.parametrize("argv", [["solve", "mastermind", "--plot", "bounds.png", "--quiet"],
                                  ["train", "tictactoe", "--plot", "--quiet"]])
def test_plot_without_matplotlib_is_refused_with_the_install_command(monkeypatch, capsys,
                                                                     tmp_path, argv):
  """``import matplotlib`` fails (``None`` in ``sys.modules``): refused up front, saying how
  to install it, instead of failing after the run."""
  monkeypatch.chdir(tmp_path)
  _refuse_work(monkeypatch)
  monkeypatch.setitem(sys.modules, "matplotlib", None)
  _one_line_error(capsys, cli.main(argv), f"jaxsearch {argv[0]}: --plot needs matplotlib",
                  "pip install matplotlib")


# ---- 4. the Python API: make and the loaders --------------------------------------------------

def test_mastermind_make_names_a_bad_argument():
  from jaxsearch.games import mastermind
  with pytest.raises(TypeError, match=r"mastermind.make: pegs must be an integer .* got None"):
    mastermind.make(None, 3)
  with pytest.raises(TypeError, match="colours .* got '6'"):
    mastermind.make(4, "6")
  with pytest.raises(TypeError, match="pegs"):
    mastermind.make(True, 3)
  for bad in (float("nan"), float("inf"), 2.5):
    with pytest.raises(ValueError, match="pegs must be an integer"):
      mastermind.make(bad, 3)
  with pytest.raises(TypeError, match="pegs"):
    mastermind.puzzle(None, 3)
  assert mastermind.make(2.0, 2).num_codes == 4  # a whole float is a whole number


def test_wordle_make_takes_any_iterable_of_words_and_names_a_bad_one(tmp_path):
  from jaxsearch.games import wordle
  words = ["cigar", "rebut", "sissy"]
  game = wordle.make((w for w in words), iter(words + ["crane"]))  # generators: read once
  assert game.answers == tuple(words) and game.guesses == tuple(words + ["crane"])
  with pytest.raises(TypeError, match="wordle.make: answers must be a list of 5-letter"):
    wordle.make(None, words)
  with pytest.raises(TypeError, match="wordle.make: guesses must be .* got None"):
    wordle.make(words, None)
  with pytest.raises(TypeError, match=r"guesses .*\(a string: put it in a list\)"):
    wordle.make(words, "cigar")
  with pytest.raises(TypeError, match=r"fixed order, got a set: pass sorted\(answers\)"):
    wordle.make(set(words), words)
  with pytest.raises(ValueError, match="wordle.make: answers is empty"):
    wordle.make(iter([]), words)
  # Paths, not words: exported policies name the lists' files.
  with pytest.raises(TypeError, match="wordle.puzzle: answers_path must be the path .* got a "
                                      "generator; for words in memory use wordle.make"):
    wordle.puzzle((w for w in words), tmp_path / "g.txt")
  with pytest.raises(TypeError, match="guesses_path .* got None"):
    (tmp_path / "a.txt").write_text("cigar\n")
    wordle.puzzle(tmp_path / "a.txt", None)
  with pytest.raises(TypeError, match="wordle.load_words: path must be the path"):
    wordle.load_words(words)
