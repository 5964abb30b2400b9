"""``scripts/gpu_check.py --smoke``: the prepared accelerator run, on tiny shapes on the CPU, so
that the script a GPU session relies on never rots. Every part must run to the end and report
the figures the full run reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _smoke(tmp_path, parts: list[str]) -> dict:
  """Runs ``gpu_check.py --smoke`` on ``parts``; every part must end ``ok``. Returns the
  records by part."""
  out = tmp_path / "out"
  done = subprocess.run(
      [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--smoke", "--out", str(out),
       "--parts", ",".join(parts), "--repeats", "1"],
      capture_output=True, text=True, timeout=600, cwd=tmp_path)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
  statuses = {r["part"]: r["status_record"] for r in records if "status_record" in r}
  assert {name: s["status"] for name, s in statuses.items()} == dict.fromkeys(parts, "ok")
  by_part = {"out": out}
  for record in records:
    if "status_record" not in record:
      by_part.setdefault(record["part"], []).append(record)
  assert by_part["env"][0]["backend"] and by_part["env"][0]["jax"]
  return by_part


def test_gpu_check_smoke_runs_the_core_parts(tmp_path):
  """The default suite's share: the environment and Mastermind's phases, the script's
  process-per-part frame (the benchmark grid, whose pieces tests/test_bench.py covers, and the
  other parts run behind ``-m slow``)."""
  by_part = _smoke(tmp_path, ["env", "mastermind"])
  cold, warm = by_part["mastermind"]
  assert (cold["run"], warm["run"]) == ("cold", "warm")
  for run in (cold, warm):
    assert run["status"] == 0
    assert run["proven_optimal"] is True and run["total_guesses"] == 21
  # The warm run loads what the cold one compiled (its first chunk took 0.9 s against 4.0 s
  # when this test was written).
  assert warm["phases"]["first_chunk_s"] < cold["phases"]["first_chunk_s"]
  summary = (by_part["out"] / "summary.md").read_text()
  assert "| env | ok |" in summary and "| mastermind | ok |" in summary


@pytest.mark.slow
def test_gpu_check_smoke_runs_every_part(tmp_path):
  by_part = _smoke(tmp_path, ["env", "variants", "bench", "profile", "mastermind", "train",
                              "wordle", "openings"])
  out = by_part["out"]
  bench_rows = [r for r in by_part["bench"] if "workload" in r]
  assert {r["workload"] for r in bench_rows} == {"hashed_A16", "connect_four"}
  for row in bench_rows:
    assert row["sims_per_s_ours"] > 0 and row["sims_per_s_ours_gumbel"] > 0
  settings = {r["setting"] for r in by_part["variants"]}
  assert settings == {"per_level/1", "whole_path/2"}
  mastermind, _ = by_part["mastermind"]
  assert mastermind["proven_optimal"] is True and mastermind["total_guesses"] == 21
  assert set(mastermind["phases"]) >= {"setup_s", "first_chunk_s", "search_s", "extract_s",
                                       "certify_s", "host_share"}
  train, = by_part["train"]
  assert train["status"] == 0 and train["steps"] == 3
  wordle, = by_part["wordle"]
  # A fixed first guess proves the best total given it, not the game's optimum.
  assert wordle["status"] == 0 and wordle["proven_given_first"] is True
  assert wordle["proven_optimal"] is False
  assert wordle["search_reached_target_s"] is not None
  openings, = by_part["openings"]
  assert openings["openings"] == 14855 and openings["two_step"]["engine"] == "jax"
  assert openings["two_step"]["bounded"] >= 1 and openings["two_step"]["seconds_per_opening"] > 0
  assert (out / "profile.tar.gz").stat().st_size > 0
  summary = (out / "summary.md").read_text()
  assert "| bench | ok |" in summary and "connect_four" in summary
