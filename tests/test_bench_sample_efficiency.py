"""``jaxsearch bench sample-efficiency``: the two metrics (recommendation optimal for good; the
achievable bound reaching V*) on hand-made histories, the recorded bound on tiny Garnets and the
Mastermind mode on 2 pegs × 2 colours (the last two are slow: compiles)."""

import json
import math

import jax
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.app.benchmarks import sample_efficiency as bench
from jaxsearch.games import garnet


def test_settle_and_reach_evaluations_on_hand_made_histories():
  # Three MDPs, four steps; action 1 is optimal everywhere.
  optimal = np.array([[False, True]] * 3)
  actions = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [1, 1, 1]])
  evaluations = np.array([[3, 3, 3], [5, 5, 5], [7, 7, 7], [9, 9, 9]])
  settled = bench.settle_evaluations(actions, evaluations, optimal, budget=9)
  np.testing.assert_array_equal(settled, [7, 7, 9])
  # Within a budget of 7 the last MDP's recommendation is wrong at the end: unsolved.
  assert math.isinf(bench.settle_evaluations(actions, evaluations, optimal, budget=7)[2])

  target = np.array([1.0, 2.0, 3.0])
  bounds = np.array([[0.5, 1.0, 0.0], [1.0 - 1e-6, 1.5, 0.0], [1.0, 2.0, 0.0],
                     [1.0, 2.0, 2.9]])
  reached = bench.reach_evaluations(bounds, evaluations, target, budget=9)
  np.testing.assert_array_equal(reached, [5, 7, np.inf])
  assert math.isinf(bench.reach_evaluations(bounds, evaluations, target, budget=5)[1])


@pytest.mark.slow
def test_recorded_bound_reaches_v_star_with_its_action_optimal():
  family = garnet.make_family(4, 4, 3, 2, 2, seed=0)
  estimator = garnet.estimator(family, bias_per_step=0.5, noise=0.1)
  search = js.policies.avts(family.game, estimator, num_simulations=1, max_nodes=200)
  _, evaluations, (bounds, bound_actions, _) = bench.trace(
      search, family.roots(), jax.random.key(0), 90, bench.root_record)
  v_star = np.asarray(family.v_star[:, 0, 0])
  reached = bench.reach_evaluations(bounds, evaluations, v_star, budget=200)
  assert np.all(np.isfinite(reached))  # a tiny MDP is solved within the budget
  assert np.all(np.asarray(bounds) <= v_star[None] + 1e-5)
  q_root = np.asarray(family.q_star[:, 0, 0])
  final = np.asarray(bound_actions)[-1]
  np.testing.assert_allclose(q_root[np.arange(4), final], v_star, atol=1e-5)


@pytest.mark.slow
def test_mastermind_mode_reaches_the_known_optimum(capsys):
  bench.main(["--mastermind", "2x2", "--budget", "96", "--repeats", "2",
              "--only", "thompson_avts,puct_value_prior"])
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["optimal_total"] == 8
  for rule in ("thompson_avts", "puct_value_prior"):
    assert line["rules"][rule]["solved"] == 1.0
    assert line["rules"][rule]["final_total"] == [8.0, 8.0]
  assert line["ratio_puct_over_avts_bound"] is not None


@pytest.mark.slow
def test_calibration_reports_sigma_and_errors_at_the_root():
  family = garnet.make_family(4, 4, 3, 2, 2, seed=0)
  estimator = garnet.estimator(family, bias_per_step=0.5, noise=0.1)
  search = js.policies.avts(family.game, estimator, num_simulations=1, max_nodes=200)
  report = bench.calibration(search, family.roots(), jax.random.key(0), 60,
                             family.q_star[:, 0, 0], checkpoints=(10, 50, 500))
  assert sorted(report) == [10, 50]  # checkpoints beyond the steps are left out
  figures = report[10]  # early on, some visited root slot is still unsolved
  assert figures["sigma"] >= 0 and figures["error"] >= 0 and figures["visited_slots"] >= 1


def test_the_command_on_tiny_garnets(capsys, tmp_path):
  """``jaxsearch bench sample-efficiency`` end to end on two tiny Garnets (one rule, one
  compile): one JSON line with both metrics, and the plot."""
  from jaxsearch import cli
  plot = tmp_path / "se.png"
  assert cli.main(["bench", "sample-efficiency", "--mdps", "2", "--states", "4", "--actions",
                   "3", "--horizon", "2", "--budget", "40", "--only", "thompson_avts",
                   "--plot", str(plot)]) == 0
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["benchmark"] == "sample_efficiency" and line["mdps"] == 2
  figures = line["rules"]["thompson_avts"]
  # Two tiny MDPs are solved well within 40 evaluations: both metrics reached on both.
  assert figures["solved"] == 1.0 and figures["bound_solved"] == 1.0
  assert figures["bound_median"] <= 40 and plot.stat().st_size > 1000
