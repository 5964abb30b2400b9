"""scripts/bench_gumbel_parts.py's ``--scan``: ours (and mctx where installed) at several
simulation counts, with the cost of each added simulation; tiny shapes."""

import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "scripts" / "bench_gumbel_parts.py"
_SPEC = importlib.util.spec_from_file_location("bench_gumbel_parts", _PATH)
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_scan_times_each_count_and_the_added_simulations(capsys):
  assert bench.main(["--batch", "2", "--scan", "3,1", "--repeats", "2"]) == 0
  result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert result["simulation_counts"] == [1, 3]  # sorted
  assert len(result["ms_ours"]) == 2 and min(result["ms_ours"]) > 0
  added = result["ms_per_added_simulation_ours"]["1-3"]
  assert added == pytest.approx((result["ms_ours"][1] - result["ms_ours"][0]) / 2, abs=1e-3)
  if bench.has_mctx():
    assert len(result["ms_mctx"]) == 2 and len(result["mctx_over_ours"]) == 2
    assert "1-3" in result["ms_per_added_simulation_mctx"]


def test_scan_refuses_counts_below_one():
  with pytest.raises(SystemExit):
    bench.main(["--scan", "0,4"])
