"""``scripts/compare_connect_four_runs.py``: runs side by side from their ``metrics.jsonl``
(final and recent errors, the plot), bad arguments refused, and a checkpoint searched at
several budgets (slow: a tiny run is trained first)."""

import json
from pathlib import Path

import pytest

from script_modules import load_script


def _script():
  return load_script("compare_connect_four_runs")


def _write_run(directory: Path, net_errors: list[float]) -> None:
  """A run of 100 steps a minute, evaluated every minute with the given network errors."""
  directory.mkdir()
  rows = []
  for minute in range(1, len(net_errors) + 1):
    rows.append(dict(step=100 * minute, positions=12800 * minute, updates=200 * minute,
                     time=60.0 * minute))
    rows[-1].update({"net_error/Test_L3_R1": net_errors[minute - 1],
                     "net_error/Test_L2_R2": 0.3, "search_error/Test_L3_R1": 0.05,
                     "search_error/Test_L2_R2": 0.1})
  rows.append(dict(step=100 * len(net_errors) + 5, positions=12800 * len(net_errors) + 640,
                   updates=200 * len(net_errors) + 10, time=60.0 * len(net_errors) + 3))
  (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_runs_side_by_side_with_recent_means_and_a_plot(tmp_path, capsys):
  _write_run(tmp_path / "a", [0.30, 0.20, 0.20, 0.10])
  _write_run(tmp_path / "b", [0.25, 0.25])
  png = tmp_path / "runs.png"
  script = _script()
  assert script.main([f"small={tmp_path / 'a'}", f"big={tmp_path / 'b'}",
                      "--last-minutes", "1", "--plot", str(png)]) == 0
  summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["runs"]
  small = summary["small"]
  assert small["steps"] == 405 and small["positions"] == 51840 and small["updates"] == 810
  assert small["final"]["net_error"]["Test_L3_R1"] == 10.0
  # The evaluations at minutes 3 and 4 fall in the last minute before the final one.
  assert small["recent_evaluations"] == 2
  assert small["recent"]["net_error"]["Test_L3_R1"] == 15.0
  assert summary["big"]["final"]["search_error"]["Test_L2_R2"] == 10.0
  assert png.stat().st_size > 0


def test_bad_arguments_are_refused_before_any_work(tmp_path, capsys):
  script = _script()
  with pytest.raises(SystemExit):
    script.main([str(tmp_path)])  # no LABEL=
  assert "LABEL=DIR" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    script.main([f"x={tmp_path}"])  # no metrics.jsonl there
  assert "no metrics.jsonl" in capsys.readouterr().err
  _write_run(tmp_path / "a", [0.2])
  with pytest.raises(SystemExit):
    script.main([f"x={tmp_path / 'a'}", "--budgets", "16,0"])
  assert "positive integers" in capsys.readouterr().err


@pytest.mark.slow
def test_a_checkpoint_searched_at_several_budgets(tmp_path):
  """A tiny Connect Four run's checkpoint, searched at 2 and 8 simulations: error rates on
  both sets, each a share of 1,000 positions."""
  from jaxsearch.app import training
  config = training.preset("connect_four", batch_size=4, simulations=4, channels=4,
                           head_hidden=8, replay_capacity=256, min_replay=8, train_batch=8,
                           eval_every=-1, checkpoint_every=2, metrics_every=2)
  training.trainer(config, out_dir=tmp_path, evaluator=False).run(steps=2, progress=False)
  found = _script().budget_errors(tmp_path, [2, 8])
  assert set(found) == {2, 8}
  for errors in found.values():
    assert set(errors) == {"Test_L3_R1", "Test_L2_R2"}
    assert all(0 <= e <= 100 and abs(10 * e - round(10 * e)) < 1e-6 for e in errors.values())
