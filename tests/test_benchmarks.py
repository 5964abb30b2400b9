"""``jaxsearch bench``'s subcommands and their one timing harness (``jaxsearch.app.timing``):
the harness on hand-made calls, the dispatch (plain ``jaxsearch bench`` is the engine
benchmark), and each of ``ab``, ``compat``, ``scaling``, ``tictactoe`` and ``solve`` end to end
on tiny shapes (``sample-efficiency``, ``rules`` and ``article``: their own test files;
``engine``: tests/test_cli.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import cli
from jaxsearch.app import benchmarks, timing

ROOT = Path(__file__).resolve().parents[1]


def _last_json(capsys) -> dict:
  return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


# --- the harness -------------------------------------------------------------------------------

def test_time_calls_warms_up_then_times_each_call():
  calls = []

  def fn(x):
    calls.append(x)
    time.sleep(0.01 if len(calls) > 2 else 0.0)
    return jnp.asarray(x)

  seconds = timing.time_calls(fn, (7,), repeats=3, warmup=2)
  assert calls == [7] * 5 and len(seconds) == 3
  assert all(s >= 0.009 for s in seconds)  # the timed calls are the sleeping ones


def test_interleaved_alternates_the_systems_round_by_round():
  order = []
  systems = {name: (lambda name=name: order.append(name) or jnp.zeros(()), ())
             for name in ("a", "b")}
  seconds = timing.interleaved(systems, rounds=2, warmup=1)
  assert order == ["a", "a", "b", "b", "a", "a", "b", "b"]
  assert {name: len(s) for name, s in seconds.items()} == {"a": 2, "b": 2}
  timing.interleaved(systems, rounds=1, warmup=0)
  assert order[-2:] == ["a", "b"]


def test_timing_summarises_median_fastest_and_spread():
  found = timing.Timing((0.3, 0.1, 0.2, 0.5))
  assert found.median == pytest.approx(0.25) and found.fastest == 0.1 and found.slowest == 0.5
  assert found.spread == pytest.approx(0.4 / 0.25)
  assert found.record("x_") == {"x_seconds": 0.25, "x_fastest_seconds": 0.1,
                                "x_spread": 1.6, "x_repeats": 4}


def test_stopwatch_and_peak_memory():
  with timing.Stopwatch() as watch:
    time.sleep(0.02)
    assert watch.elapsed >= 0.02
  assert watch.seconds >= 0.02
  assert timing.peak_rss_bytes() > 10 << 20  # this process holds JAX: tens of MB at least
  subprocess.run([sys.executable, "-c", "x = bytearray(64 << 20)"], check=True)
  assert timing.peak_rss_bytes(children=True) >= 64 << 20  # the child's 64 MiB block
  assert timing.gib(3 << 29) == 1.5 and timing.gib(None) is None


def test_emit_prints_one_flushed_json_line(capsys):
  timing.emit({"a": 1, "b": [1.5, None]})
  assert capsys.readouterr().out == '{"a": 1, "b": [1.5, null]}\n'


# --- dispatch ----------------------------------------------------------------------------------

def test_bench_help_lists_every_subcommand(capsys):
  with pytest.raises(SystemExit) as stop:
    cli.main(["bench", "--help"])
  assert stop.value.code == 0
  out = capsys.readouterr().out
  assert all(f"  {name} " in out for name in benchmarks.SUBCOMMANDS)
  assert "--quick" in out and "--only" in out  # and the engine benchmark's own options


@pytest.mark.parametrize("name", list(benchmarks.SUBCOMMANDS))
def test_every_subcommand_has_its_help_and_quick(name, capsys):
  with pytest.raises(SystemExit) as stop:
    cli.main(["bench", name, "--help"])
  assert stop.value.code == 0
  out = capsys.readouterr().out
  assert f"jaxsearch bench {name}" in out and "--quick" in out


def test_plain_bench_is_the_engine_benchmark(capsys):
  """``jaxsearch bench ARGS`` is ``jaxsearch bench engine ARGS``, named as before."""
  for argv, prog in ((["bench", "--only", "chess"], "jaxsearch bench:"),
                     (["bench", "engine", "--only", "chess"], "jaxsearch bench engine:")):
    with pytest.raises(SystemExit) as stop:
      cli.main(argv)
    assert stop.value.code == 2 and capsys.readouterr().err.startswith(prog)


def test_an_unknown_subcommand_is_named(capsys):
  assert cli.main(["bench", "chess"]) == 2
  err = capsys.readouterr().err
  assert "'chess'" in err and "sample-efficiency" in err


# --- the subcommands ---------------------------------------------------------------------------

def test_ab_times_two_checkouts_in_processes_of_their_own(capsys):
  """Both sides are this checkout: each side's process imports jaxsearch and its games from
  the checkout named, times its calls, and reports its kernels."""
  assert cli.main(["bench", "ab", "--base", str(ROOT), "--new", str(ROOT), "--batch", "2",
                   "--simulations", "2", "--rounds", "1", "--repeats", "2"]) == 0
  found = _last_json(capsys)
  assert found["benchmark"] == "ab" and found["seconds_base"] > 0 and found["seconds_new"] > 0
  assert found["new_over_base"] > 0 and found["fastest_new_over_base"] > 0
  assert found["jaxsearch_base"] == found["jaxsearch_new"] == str(ROOT / "jaxsearch")
  assert found["games_base"] == str(ROOT / "games")
  assert found["kernels_base"] == found["kernels_new"]  # the same program
  assert found["kernels_new"]["per_simulation"] > 0


def test_ab_sends_the_harness_and_refuses_a_folder_without_jaxsearch(tmp_path, capsys):
  from jaxsearch.app.benchmarks import ab
  program = ab.child_program({"batch": 2})
  ast.parse(program)
  assert "def time_calls(" in program and '"batch": 2' in program
  with pytest.raises(SystemExit) as stop:
    cli.main(["bench", "ab", "--base", str(tmp_path)])
  assert stop.value.code == 2 and "not a checkout" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("mctx") is None, reason="needs mctx")
def test_compat_times_mctx_compat_and_the_engine(capsys):
  assert cli.main(["bench", "compat", "--batch", "2", "--simulations", "2",
                   "--repeats", "1"]) == 0
  found = _last_json(capsys)
  assert set(found["ms"]) == {"mctx_muzero", "compat_muzero", "engine_puct", "mctx_gumbel",
                              "compat_gumbel", "engine_gumbel"}
  assert all(ms > 0 for ms in found["ms"].values())
  assert found["engine_puct_over_mctx"] == pytest.approx(
      found["ms"]["engine_puct"] / found["ms"]["mctx_muzero"], abs=1e-3)


def test_compat_without_mctx_says_how_to_get_it(monkeypatch, capsys):
  monkeypatch.setitem(sys.modules, "mctx", None)
  assert cli.main(["bench", "compat", "--quick"]) == 2
  assert "jaxsearch[mctx]" in capsys.readouterr().err


def test_scaling_over_one_and_two_devices(capsys):
  """The tests' process has eight simulated CPU devices (tests/conftest.py)."""
  assert cli.main(["bench", "scaling", "--min-batch", "2", "--max-batch", "2", "--devices",
                   "1,2,64", "--simulations", "2", "--repeats", "1"]) == 0
  found = _last_json(capsys)
  assert [(r["devices"], r["batch"]) for r in found["results"]] == [(1, 2), (2, 2)]
  assert all(r["sims_per_s"] > 0 for r in found["results"])
  assert set(found["speedup_vs_1_device"]) == {"2"}
  assert found["skipped"][0]["devices"] == 64


def test_tictactoe_sweeps_the_first_positions(capsys):
  from jaxsearch.app.benchmarks import tictactoe
  assert cli.main(["bench", "tictactoe", "--limit", "6", "--simulations", "16", "--chunk",
                   "4", "--show", "10"]) == 0
  found = _last_json(capsys)
  assert found["positions"] == 6 and found["decisive"] == 5
  assert len(found["failures"]) == found["mistakes"] <= 6
  # The mistake count on hand-made values: illegal, worse, best.
  qs = np.array([[-np.inf, 1.0, 0.0], [0.0, 1.0, -np.inf], [0.0, 1.0, -np.inf]])
  assert tictactoe.mistakes(np.array([0, 0, 1]), qs).tolist() == [True, True, False]


def test_solve_reports_the_solve_and_its_peak_memory(tmp_path, capsys):
  (tmp_path / "answers.txt").write_text("cigar\n")
  (tmp_path / "guesses.txt").write_text("cigar\nrebut\n")
  assert cli.main(["bench", "solve", "--first", "cigar", "--",
                   "--answers", str(tmp_path / "answers.txt"),
                   "--guesses", str(tmp_path / "guesses.txt")]) == 0
  found = _last_json(capsys)
  assert found["total_guesses"] == 1 and found["proven_optimal"] is True
  assert found["peak_rss_gib"] > 0 and found["wall_seconds"] > 0
  assert found["command"].startswith("jaxsearch solve wordle --first cigar --json --quiet")
  from jaxsearch.app.benchmarks import solve
  report = {"count": 3, "ruled_out": 1, "open": 1, "root_visits": 9,
            "visited": [{"guess": "a", "visits": 2}, {"guess": "b", "visits": 7}]}
  assert solve.first_guesses(report)["most_visited"] == [["b", 7], ["a", 2]]
