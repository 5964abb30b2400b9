"""``scripts/bench_solve_scaling.py``: the Mastermind sweep's exact way on tiny sizes, end to
end (a child process per size, the policy exported and re-evaluated, the plot)."""

import json

from script_modules import load_script


def _bench():
  return load_script("bench_solve_scaling")


def test_the_exact_way_proves_tiny_sizes_and_plots(tmp_path, capsys):
  bench = _bench()
  plot = tmp_path / "scaling.png"
  assert bench.main(["--sizes", "2x3,3x3", "--ways", "exact", "--timeout", "300",
                     "--export", str(tmp_path), "--plot", str(plot)]) == 0
  summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  by_size = {record["size"]: record for record in summary["sizes"]}
  for size, optimum in (("2x3", 21), ("3x3", 73)):
    record = by_size[size]
    assert record["proven_optimal"] and not record["timed_out"]
    assert record["total_guesses"] == record["evaluated_total"] == optimum
    assert record["lower_bound_total"] == optimum
    assert 0 < record["time_to_optimum_s"] <= record["time_to_proof_s"] <= record["wall_s"]
    assert record["peak_rss_gib"] > 0
    assert (tmp_path / f"mastermind_{size}.json").exists()
  assert plot.stat().st_size > 0
