"""Tests of the ``jaxsearch`` command line, calling ``cli.main([...])`` in-process.

Input is a monkeypatched ``sys.stdin`` (``input()`` reads it when it is not a terminal). The
play tests share one setting (tic-tac-toe, UCT, 50 simulations): ``cli.play._jitted`` caches the
compiled search per setting, so only the first of them pays the compilation.
"""

import importlib.util
import io
import sys
import json

import pytest

from jaxsearch import cli

SIMS = ["--simulations", "50"]
RESULTS = ("You win!", "The search wins.", "Draw.")


def _run(monkeypatch, argv, stdin=""):
  monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
  return cli.main(argv)


def test_help_lists_subcommands(capsys):
  with pytest.raises(SystemExit) as exc:
    cli.main(["--help"])
  assert exc.value.code == 0
  out = capsys.readouterr().out
  assert "play" in out and "bench" in out
  assert "solve" in out and "evaluate" in out


def test_play_help_and_bad_arguments(capsys):
  with pytest.raises(SystemExit) as exc:
    cli.main(["play", "--help"])
  assert exc.value.code == 0
  assert "--simulations" in capsys.readouterr().out
  for argv in (["play", "chess"], ["play", "tictactoe", "--rule", "ucb"], ["play", "tictactoe",
                                                                            "--bogus"], []):
    with pytest.raises(SystemExit) as exc:
      cli.main(argv)
    assert exc.value.code == 2, argv


def test_play_quit_and_eof_before_any_search(monkeypatch, capsys):
  # The human moves first and leaves at once: no search is compiled.
  assert _run(monkeypatch, ["play", "tictactoe", *SIMS], "q\n") == 0
  out = capsys.readouterr().out
  assert "Your move (1-9, q to quit): " in out and "Bye." in out
  assert "search plays" not in out
  assert _run(monkeypatch, ["play", "tictactoe", *SIMS], "xyz\n") == 0  # then end of input
  out = capsys.readouterr().out
  assert "'xyz' is not a number" in out and "Bye." in out


def test_play_tictactoe_rejects_bad_input_and_finishes(monkeypatch, capsys):
  # Garbage, 0 and 10 (out of range), then the centre, the centre again (occupied), then every
  # cell in order: each is either legal or already taken, and every free cell lies at or after
  # the pointer, so the human always finds a move and the game ends before the input does.
  moves = ["abc", "0", "10", "5", "5"] + [str(c) for c in range(1, 10)]
  assert _run(monkeypatch, ["play", "tictactoe", *SIMS], "\n".join(moves) + "\n") == 0
  out = capsys.readouterr().out
  assert "'abc' is not a number: type a cell 1-9" in out
  assert "0 is out of range: cells are numbered 1-9." in out
  assert "10 is out of range: cells are numbered 1-9." in out
  assert "cell 5 is already taken; legal cells:" in out
  assert "search plays" in out and "visits)" in out
  last = out.rstrip().splitlines()[-1]
  assert last in RESULTS, out
  assert "Bye." not in out


def test_play_search_first_then_quit(monkeypatch, capsys):
  assert _run(monkeypatch, ["play", "tictactoe", *SIMS, "--first", "search", "--seed", "3"],
              "q\n") == 0
  out = capsys.readouterr().out
  first_search = out.index("search plays")
  assert first_search < out.index("Your move")
  assert out.count("search plays") == 1 and "Bye." in out
  # One move on the board, and the summary's visits are out of the 50 simulations.
  assert "/50 visits)" in out
  assert "O to move" in out


def test_bench_without_mctx(monkeypatch, capsys):
  # mctx is an optional extra: without it the benchmark says how to get it, exit 2.
  monkeypatch.setitem(sys.modules, "mctx", None)
  assert cli.main(["bench", "--quick"]) == 2
  assert "jaxsearch[mctx]" in capsys.readouterr().err


def test_bench_forwards_its_help(capsys):
  with pytest.raises(SystemExit) as exc:
    cli.main(["bench", "--help"])
  assert exc.value.code == 0
  out = capsys.readouterr().out
  assert "jaxsearch bench" in out and "--quick" in out


def test_bench_table_says_what_a_ratio_means():
  """Without --json the benchmark prints a table and one line on what its ratios mean."""
  import io

  from rich.console import Console

  from jaxsearch.app import bench
  record = {"workload": "hashed_A16", "batch": 64, "simulations": 32,
            "sims_per_s_ours": 408000, "sims_per_s_mctx_muzero": 92000,
            "speedup_vs_mctx_muzero": 4.42, "sims_per_s_ours_gumbel": 934000,
            "sims_per_s_mctx_gumbel": 831000, "speedup_gumbel_vs_mctx_gumbel": 1.12,
            "compile_s_ours": 1.8}
  buffer = io.StringIO()
  bench._table([record], Console(file=buffer, width=200))
  text = buffer.getvalue()
  assert "hashed_A16" in text and "4.42×" in text and "1.12×" in text and "408" in text
  assert "above 1: ours is faster" in text


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mctx") is None, reason="bench needs mctx")
def test_bench_quick_prints_json_lines(capsys):
  assert cli.main(["bench", "--quick", "--repeats", "1", "--json"]) == 0
  lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
  assert "jax" in lines[0]
  workloads = [line["workload"] for line in lines[1:]]
  assert "connect_four" in workloads and len(workloads) == 2
  assert all(line["sims_per_s_ours"] > 0 for line in lines[1:])
  assert all(line["speedup_gumbel_vs_mctx_gumbel"] > 0 for line in lines[1:])
  for line in lines[1:]:  # one round: the range is that round's ratio
    low, high = line["speedup_gumbel_vs_mctx_gumbel_range"]
    assert low == high == pytest.approx(line["speedup_gumbel_vs_mctx_gumbel"], abs=0.01)
    assert line["speedup_vs_mctx_muzero_range"][0] <= line["speedup_vs_mctx_muzero"]
  assert all(line["kernels_per_simulation_ours"] > 0 for line in lines[1:])


@pytest.mark.slow
def test_play_connect_four_search_first(monkeypatch, capsys):
  argv = ["play", "connect_four", "--simulations", "100", "--first", "search"]
  # Column 8 is out of range; then the human stacks column 1 until q.
  assert _run(monkeypatch, argv, "8\n1\n1\nq\n") == 0
  out = capsys.readouterr().out
  assert "8 is out of range: columns are numbered 1-7." in out
  assert out.count("search plays") == 3 and "Bye." in out
  assert "1 2 3 4 5 6 7" in out


def test_compile_cache_dir_follows_the_environment(monkeypatch, tmp_path):
  monkeypatch.setenv("JAXSEARCH_CACHE_DIR", str(tmp_path / "xla"))
  assert cli.compile_cache_dir() == str(tmp_path / "xla")
  monkeypatch.setenv("JAXSEARCH_CACHE_DIR", "")
  assert cli.compile_cache_dir() is None  # off
  monkeypatch.delenv("JAXSEARCH_CACHE_DIR")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert cli.compile_cache_dir() == str(tmp_path / "jaxsearch" / "xla")


# ---- bad input on every verb: one line on stderr, a non-zero status, no traceback ----------

def _one_line_error(capsys, status, expected_status, *needles):
  """The verb's error is exactly one non-empty stderr line holding every needle."""
  err = capsys.readouterr().err
  assert status == expected_status, err
  lines = [line for line in err.splitlines() if line.strip()]
  assert len(lines) == 1, err
  assert "Traceback" not in err
  for needle in needles:
    assert needle in lines[0], err
  return lines[0]


@pytest.mark.parametrize("argv, needles", [
    # Sizes each allowed, too many codes together: refused naming both flags, before any work.
    (["solve", "mastermind", "--pegs", "9", "--colours", "9"],
     ["jaxsearch solve: --pegs 9 --colours 9", "too many"]),
    (["solve", "mastermind", "--pegs", "2", "--colours", "2", "--bound-slots", "9", "--slots",
      "4", "--quiet"], ["jaxsearch solve", "--bound-slots"]),
    (["play", "tictactoe", "--simulations", "0"], ["--simulations"]),
    (["train", "tictactoe", "--set", "simulations=0", "--quiet"], ["jaxsearch train",
                                                                  "simulations"]),
    (["train", "tictactoe", "--set", "bogus=1", "--quiet"], ["jaxsearch train", "bogus"]),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, needles):
  _one_line_error(capsys, cli.main(argv), 2, *needles)


def test_bad_play_checkpoint_and_train_out(capsys, tmp_path):
  _one_line_error(capsys, cli.main(["play", "connect_four", "--checkpoint",
                                    str(tmp_path / "none")]), 2, "jaxsearch play", "--checkpoint")
  (tmp_path / "run" / "checkpoints" / "1").mkdir(parents=True)
  _one_line_error(capsys, cli.main(["train", "tictactoe", "--out", str(tmp_path / "run"),
                                    "--quiet"]), 2, "jaxsearch train", "--resume")


@pytest.mark.parametrize("argv", [
    ["solve", "mastermind", "--chunk", "0"], ["solve", "mastermind", "--nodes", "-5"],
    ["solve", "mastermind", "--simulations", "x"], ["solve", "mastermind", "--pegs", "2.5"],
    ["solve", "mastermind", "--pegs", "0"], ["solve", "mastermind", "--colours", "12"],
    ["train", "tictactoe", "--steps", "-2"], ["train", "tictactoe", "--steps", "1.5"],
    ["play", "tictactoe", "--simulations", "many"], ["bench", "--only", "chess"],
    ["bench", "--repeats", "two"], ["evaluate"],
    ["solve", "mastermind", "--exact-search", "-1"],
    ["solve", "mastermind", "--certify-seconds", "soon"],
])
def test_non_positive_or_non_int_sizes_are_usage_errors(capsys, argv):
  """argparse's usage error (usage line + one error line naming the option), status 2;
  ``--steps -2`` used to train 0 steps and evaluate as if nothing were wrong."""
  with pytest.raises(SystemExit) as exc:
    cli.main(argv)
  assert exc.value.code == 2
  err = capsys.readouterr().err
  assert "Traceback" not in err and "usage:" not in err
  lines = err.splitlines()
  assert len(lines) == 2 and "--help` lists the options" in lines[1], err
  assert "error: argument" in lines[0] or "required" in lines[0], err


def test_solve_wordle_with_a_bad_wordle_data_exits_2(monkeypatch, capsys, tmp_path):
  """docs/bad_input.md: a ``$WORDLE_DATA`` without the lists is exit status 2 and one line
  naming the missing file, the two lists needed, the overrides and the shipped copies (and
  malformed lists too)."""
  from jaxsearch.games import wordle
  monkeypatch.setenv("WORDLE_DATA", str(tmp_path / "nowhere"))
  _one_line_error(capsys, cli.main(["solve", "wordle", "--quiet"]), 2, "jaxsearch solve wordle",
                  str(tmp_path / "nowhere" / "wordlist_nyt20230701_hidden"), "exactly two files",
                  "wordlist_nyt20220830_all", "--answers", "--guesses", "$WORDLE_DATA",
                  "ships", str(wordle.shipped_data_dir()))
  (tmp_path / "a.txt").write_text("Cigar\n")
  _one_line_error(capsys, cli.main(["solve", "wordle", "--answers", str(tmp_path / "a.txt"),
                                    "--guesses", str(tmp_path / "a.txt"), "--quiet"]), 2,
                  "jaxsearch solve wordle")


def test_evaluate_exit_codes(capsys, tmp_path):
  """docs/bad_input.md's ``evaluate`` rows at the command line: a missing file or a folder
  (status 2); an invalid guess, a missing secret, a malformed file (status 1, the reason and
  the path on one line); a guess repeated many times is legal, evaluated at its cost."""
  def write(name, policy, pegs=2):
    path = tmp_path / name
    path.write_text(json.dumps({"format": "jaxsearch-policy/1", "game": "mastermind",
                                "pegs": pegs, "colours": 2, "policy": policy}))
    return str(path)

  good = {"guess": "11", "children": {
      "b1w0": {"guess": "12", "children": {"b0w2": {"guess": "21", "children": {}}}},
      "b0w0": {"guess": "22"}}}
  assert cli.main(["evaluate", write("good.json", good), "--json"]) == 0
  assert json.loads(capsys.readouterr().out.splitlines()[-1])["total_guesses"] == 8
  _one_line_error(capsys, cli.main(["evaluate", str(tmp_path / "missing.json")]), 2,
                  "jaxsearch evaluate", "missing.json")
  _one_line_error(capsys, cli.main(["evaluate", str(tmp_path)]), 2, "jaxsearch evaluate")
  invalid = json.loads(json.dumps(good))
  invalid["children"]["b1w0"]["guess"] = "13"
  _one_line_error(capsys, cli.main(["evaluate", write("invalid.json", invalid)]), 1,
                  "'13'", "('11', 'b1w0')")
  # 22 is only reached by guessing 11 again and again: wasteful, not invalid (7 guesses).
  chain = {"guess": "22"}
  for _ in range(6):
    chain = {"guess": "11", "children": {"b0w0": chain, "b1w0": good["children"]["b1w0"]}}
  assert cli.main(["evaluate", write("wasteful.json", chain), "--json"]) == 0
  assert json.loads(capsys.readouterr().out.splitlines()[-1])["total_guesses"] == 13
  missing = json.loads(json.dumps(good))
  del missing["children"]["b0w0"]
  _one_line_error(capsys, cli.main(["evaluate", write("missing_secret.json", missing)]), 1,
                  "'22'", "('11', 'b0w0')")
  (tmp_path / "garbage.json").write_text("not json")
  _one_line_error(capsys, cli.main(["evaluate", str(tmp_path / "garbage.json")]), 1,
                  "not a JSON policy file")


def test_the_installed_command_prints_no_traceback():
  """The example from a new user's first try, through the real entry point (a subprocess):
  one stderr line, status 2."""
  import subprocess
  import sys
  done = subprocess.run([sys.executable, "-m", "jaxsearch.cli", "solve", "mastermind",
                         "--pegs", "9", "--colours", "9"], capture_output=True, text=True,
                        timeout=120)
  assert done.returncode == 2, done.stderr
  assert done.stderr.strip().splitlines() == [
      "jaxsearch solve: --pegs 9 --colours 9 make 387420489 codes, too many (at most 32768); "
      "lower --pegs or --colours"]
