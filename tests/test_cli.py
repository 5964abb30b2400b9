"""Tests of the ``jaxsearch`` command line, calling ``cli.main([...])`` in-process.

Input is a monkeypatched ``sys.stdin`` (``input()`` reads it when it is not a terminal). The
play tests share one setting (tic-tac-toe, UCT, 50 simulations): ``cli._jitted`` caches the
compiled search per setting, so only the first of them pays the compilation.
"""

import importlib.util
import io
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


def test_bench_without_the_script(monkeypatch, tmp_path, capsys):
  monkeypatch.setattr(cli, "_BENCH_SCRIPT", tmp_path / "missing" / "bench_search.py")
  assert cli.main(["bench", "--quick"]) == 2
  assert "not found" in capsys.readouterr().err


def test_bench_forwards_its_help(capsys):
  with pytest.raises(SystemExit) as exc:
    cli.main(["bench", "--help"])
  assert exc.value.code == 0
  out = capsys.readouterr().out
  assert "jaxsearch bench" in out and "--quick" in out


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mctx") is None, reason="bench needs mctx")
def test_bench_quick_prints_json_lines(capsys):
  assert cli.main(["bench", "--quick", "--repeats", "1"]) == 0
  lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
  assert "jax" in lines[0]
  workloads = [line["workload"] for line in lines[1:]]
  assert "connect_four" in workloads and len(workloads) == 2
  assert all(line["sims_per_s_ours"] > 0 for line in lines[1:])


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
