"""Resumable solving (``solve_puzzle(checkpoint=DIR, resume=True)``, ``jaxsearch solve
--checkpoint DIR --resume``): a run stopped or killed, then resumed, ends exactly as the run
never stopped (the same trees, bounds, policy and proof); a checkpoint of another problem or
other options is refused; certificates already saved are not redone.

Tiny Mastermind: 4×4 after the first guess 1122, 12 sub-problems in trees of 60 nodes, one
simulation per chunk. The trees fill up after 7 simulations: the 9 proven sub-problems leave
the batch and the 3 open ones move into larger trees, which a checkpoint must restore (their
sizes, and the trees kept aside). Every test shares the same two compiled programs (the
command line's too, through the session's compilation cache)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxsearch import guessing as guessing_lib
from jaxsearch import solve as solve_lib
from jaxsearch.games import mastermind
from jaxsearch.solve import checkpoint as checkpoint_lib
from jaxsearch.solve import chunked
from jaxsearch.guessing import finish as finish_lib

REPO = Path(__file__).resolve().parents[1]

# 4×4 after 1122: 12 trees of 60 nodes (the batch's budget 720 shared out); the same in
# the library and on the command line.
SMALL = dict(first="1122", chunk=1, max_nodes=720, num_slots=None, bound_slots=0,
             seconds=600.0)
SMALL_CLI = ["solve", "mastermind", "--pegs", "4", "--colours", "4", "--first", "1122",
             "--chunk", "1", "--nodes", "720", "--slots", "0", "--bound-slots", "0",
             "--seconds", "600"]
REGROWN_AT = 7  # simulations after which the proven trees leave the batch
TOTAL = 10  # simulations of the runs compared


@pytest.fixture(scope="module")
def small():
  return mastermind.puzzle(4, 4)


@pytest.fixture(scope="module")
def straight(small):
  """The uninterrupted run the resumed ones must equal."""
  result = guessing_lib.solve_puzzle(small, max_simulations=TOTAL, **SMALL)
  # One batch of one tree per root, whatever happened to them: here the open ones moved
  # into larger trees (what the tests need), the proven ones are kept cut to the nodes they use.
  assert len(result.trees) == 12 and all(t.num_nodes.shape == (1,) for t in result.trees)
  assert max(t.nodes.visits.shape[1] for t in result.trees) > 60, "no regrowth"
  assert result.simulations == TOTAL
  return result


def _assert_same(expected, actual) -> None:
  """Two :class:`SolveResult` of the same problem are the same solve: figures, policy,
  proof, history (but its seconds) and every array of every tree."""
  for name in ("simulations", "nodes", "bound_total", "upper_total", "proven_optimal",
               "proven_given_first", "subproblems", "policy", "upper_total_scope"):
    assert getattr(actual, name) == getattr(expected, name), name
  assert actual.evaluation.total_guesses == expected.evaluation.total_guesses
  assert [(h[0],) + tuple(h[2:]) for h in actual.history] == [
      (h[0],) + tuple(h[2:]) for h in expected.history]
  a, b = jax.tree.leaves(expected.trees), jax.tree.leaves(actual.trees)
  assert len(a) == len(b)
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)


def test_a_run_stopped_halfway_and_resumed_ends_as_one_never_stopped(small, straight,
                                                                     tmp_path):
  """Stopped at the chunk that fills the trees (saved as they were after it): the resumed
  run moves the open ones into larger trees first, as the run never stopped did."""
  half = guessing_lib.solve_puzzle(small, max_simulations=REGROWN_AT, checkpoint=tmp_path,
                                checkpoint_seconds=0, **SMALL)
  assert half.simulations == REGROWN_AT and half.resumed_from_simulations == 0
  assert checkpoint_lib.saved_progress(tmp_path)["simulations"] == REGROWN_AT
  resumed = guessing_lib.solve_puzzle(small, max_simulations=TOTAL, checkpoint=tmp_path,
                                   resume=True, **SMALL)
  assert resumed.resumed_from_simulations == REGROWN_AT
  _assert_same(straight, resumed)
  # The budget is the total: resumed again with the same one, nothing more is searched.
  again = guessing_lib.solve_puzzle(small, max_simulations=TOTAL, checkpoint=tmp_path,
                                 resume=True, **SMALL)
  assert again.resumed_from_simulations == TOTAL
  _assert_same(straight, again)


def test_a_resumed_run_draws_the_keys_the_run_never_stopped_would_have(small, tmp_path):
  """Thompson sampling alone (``proof_every=0``; the proof rule draws no random numbers):
  chunk ``i``'s key is ``fold_in(key, simulations before it)`` in a resumed run too."""
  options = {**SMALL, "proof_every": 0}
  straight = guessing_lib.solve_puzzle(small, max_simulations=6, **options)
  guessing_lib.solve_puzzle(small, max_simulations=3, checkpoint=tmp_path,
                         checkpoint_seconds=0, **options)
  resumed = guessing_lib.solve_puzzle(small, max_simulations=6, checkpoint=tmp_path,
                                   resume=True, **options)
  assert resumed.resumed_from_simulations == 3
  _assert_same(straight, resumed)


def test_regrown_trees_and_the_trees_that_left_the_batch_are_restored(small, straight,
                                                                      tmp_path, monkeypatch):
  """Stopped after the regrowth (12 trees → the open ones in larger trees, the proven ones
  kept aside), resumed: the same trees, kept and open, as the run never stopped; then a
  certificate lost in a kill during certification is redone, and only that one."""
  puzzle = small
  guessing_lib.solve_puzzle(puzzle, max_simulations=REGROWN_AT + 1, checkpoint=tmp_path,
                         checkpoint_seconds=0, **SMALL)
  assert sorted(tmp_path.glob("kept_*.npz")), "the checkpoint holds no kept tree"
  resumed = guessing_lib.solve_puzzle(puzzle, max_simulations=TOTAL, checkpoint=tmp_path,
                                   resume=True, **SMALL)
  assert resumed.resumed_from_simulations == REGROWN_AT + 1
  _assert_same(straight, resumed)
  # A kill during certification: two certificates of the saved search are missing.
  path = tmp_path / checkpoint_lib.CERTIFICATES
  saved = json.loads(path.read_text())
  assert len(saved["settled"]) == straight.subproblems[1]
  lost = sorted(saved["settled"])[:2]
  for row in lost:
    del saved["settled"][row]
  path.write_text(json.dumps(saved))
  settled_rows = []
  real = finish_lib.settle_each

  def counted(puzzle, trees, targets, *args, **kwargs):
    settled_rows.extend(targets)
    return real(puzzle, trees, targets, *args, **kwargs)

  monkeypatch.setattr(finish_lib, "settle_each", counted)
  again = guessing_lib.solve_puzzle(puzzle, max_simulations=TOTAL, checkpoint=tmp_path,
                                 resume=True, **SMALL)
  assert sorted(map(str, settled_rows)) == lost
  _assert_same(straight, again)
  settled_rows.clear()
  guessing_lib.solve_puzzle(puzzle, max_simulations=TOTAL, checkpoint=tmp_path, resume=True,
                         **SMALL)
  assert settled_rows == []  # every certificate saved: none redone


def _env(**extra) -> dict:
  env = dict(os.environ)
  env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
  # The session's compilation cache (tests/conftest.py): the command compiles nothing the
  # tests in this process compiled already.
  env["JAXSEARCH_CACHE_DIR"] = os.environ.get("JAXSEARCH_TEST_CACHE", "")
  env.update(extra)
  return env


def test_the_command_killed_mid_search_resumes_to_the_same_result(straight, tmp_path):
  directory = tmp_path / "checkpoint"
  argv = [sys.executable, "-m", "jaxsearch.cli", *SMALL_CLI, "--simulations", str(TOTAL),
          "--checkpoint", str(directory), "--checkpoint-seconds", "0", "--json", "--quiet"]
  # Slowed down (a second per chunk), killed with SIGKILL once two chunks are saved.
  proc = subprocess.Popen(argv, env=_env(**{chunked.SLEEP_ENV: "1"}), cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
  deadline = time.time() + 240
  try:
    while time.time() < deadline:
      saved = checkpoint_lib.saved_progress(directory)
      if saved is not None and saved["simulations"] >= 2:
        break
      assert proc.poll() is None, proc.stderr.read()[-2000:]
      time.sleep(0.05)
    else:
      pytest.fail("the run to kill never saved its second chunk")
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
  assert proc.returncode == -signal.SIGKILL
  saved = checkpoint_lib.saved_progress(directory)
  assert 2 <= saved["simulations"] < TOTAL
  done = subprocess.run(argv + ["--resume"], env=_env(), cwd=REPO, capture_output=True,
                        text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  assert f"holds a run saved at {saved['simulations']} simulations" in done.stderr
  summary = json.loads(done.stdout.strip().splitlines()[-1])
  assert summary["resumed_from_simulations"] == saved["simulations"]
  assert summary["simulations"] == straight.simulations == TOTAL
  assert summary["total_guesses"] == straight.evaluation.total_guesses
  assert summary["proven_given_first"] == straight.proven_given_first
  assert summary["subproblems_proven"] == list(straight.subproblems)
  assert summary["achievable_total"] == round(straight.bound_total, 3)
  assert summary["lower_bound_total"] == round(straight.upper_total, 3)


def _error(capsys, status: int, *phrases: str, lines: int = 1) -> None:
  """Status 2 and ``lines`` lines on stderr, the last (the error) holding ``phrases``."""
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 2 and len(err) == lines, err
  for phrase in phrases:
    assert phrase in err[-1], err


def test_a_checkpoint_of_another_problem_or_options_is_refused(small, straight, tmp_path,
                                                              capsys):
  from jaxsearch import cli
  guessing_lib.solve_puzzle(small, max_simulations=1, checkpoint=tmp_path, **SMALL)
  with pytest.raises(solve_lib.CheckpointMismatch, match="seed is 1 here, 0 there"):
    guessing_lib.solve_puzzle(small, max_simulations=2, checkpoint=tmp_path, resume=True,
                           **{**SMALL, "seed": 1})
  with pytest.raises(solve_lib.CheckpointMismatch, match="options.max_nodes"):
    guessing_lib.solve_puzzle(small, max_simulations=2, checkpoint=tmp_path, resume=True,
                           **{**SMALL, "max_nodes": 1000})
  with pytest.raises(solve_lib.CheckpointMismatch, match="problem.openings"):
    guessing_lib.solve_puzzle(small, max_simulations=2, checkpoint=tmp_path, resume=True,
                           **{**SMALL, "first": "1123"})
  # Another puzzle: said in words (its pegs and colours, not its secrets' digests).
  with pytest.raises(solve_lib.CheckpointMismatch,
                     match="problem.rules.colours is 3 here, 4 there.*the secrets differ"):
    guessing_lib.solve_puzzle(mastermind.puzzle(4, 3), max_simulations=2, checkpoint=tmp_path,
                           resume=True, **SMALL)
  # Without --resume a saved run is never overwritten; --resume needs a directory.
  with pytest.raises(solve_lib.CheckpointExists, match="pass --resume"):
    guessing_lib.solve_puzzle(small, max_simulations=2, checkpoint=tmp_path, **SMALL)
  with pytest.raises(ValueError, match="resume needs a checkpoint"):
    guessing_lib.solve_puzzle(small, max_simulations=2, resume=True, **SMALL)
  assert checkpoint_lib.saved_progress(tmp_path)["simulations"] == 1  # untouched
  # The command: status 2, a one-line error (resumed, after the line saying what DIR holds).
  argv = SMALL_CLI + ["--simulations", "2", "--quiet", "--checkpoint", str(tmp_path)]
  _error(capsys, cli.main(argv + ["--resume", "--seed", "1"]), "holds another solve",
         "seed is 1 here, 0 there", lines=2)
  _error(capsys, cli.main(argv), "already holds a solve's checkpoint", "--resume")
  _error(capsys, cli.main(SMALL_CLI + ["--resume"]), "--resume needs --checkpoint")


def test_a_corrupt_checkpoint_is_refused_and_a_write_cut_short_is_ignored(small, tmp_path):
  """A write killed midway leaves its temporary file beside the last complete state: it is
  removed, the state stands. A state that cannot be read is refused, never half-used."""
  guessing_lib.solve_puzzle(small, max_simulations=1, checkpoint=tmp_path, **SMALL)
  partial = tmp_path / ".partial-search.npz.abc123"
  partial.write_bytes(b"\0" * 100)
  resumed = guessing_lib.solve_puzzle(small, max_simulations=2, checkpoint=tmp_path,
                                   resume=True, **SMALL)
  assert resumed.resumed_from_simulations == 1 and not partial.exists()
  (tmp_path / checkpoint_lib.SEARCH).write_bytes(b"PK\3\4 not a zip")
  with pytest.raises(solve_lib.CheckpointCorrupt, match="unreadable"):
    guessing_lib.solve_puzzle(small, max_simulations=3, checkpoint=tmp_path, resume=True,
                           **SMALL)


def test_resume_of_an_empty_directory_starts_afresh(small, tmp_path):
  result = guessing_lib.solve_puzzle(small, max_simulations=1, checkpoint=tmp_path / "new",
                                  resume=True, **SMALL)
  assert result.resumed_from_simulations == 0
  assert checkpoint_lib.saved_progress(tmp_path / "new")["simulations"] == 1


def test_progress_labels_the_optimistic_bound_of_a_first_guess_run_as_conditional(capsys):
  """With ``--first`` the optimistic bound bounds only the policies that open so: the
  progress says so beside it (without, it would read as a bound on the game)."""
  from jaxsearch import cli
  assert cli.main(SMALL_CLI + ["--simulations", "1"]) == 0
  err = capsys.readouterr().err
  bounds = [line for line in err.splitlines() if "total guesses ≤" in line]
  assert len(bounds) == 2, err  # the chunk's and the result's
  assert all(" given the first guess 1122 · " in line for line in bounds), err


@pytest.mark.slow
def test_wordle_killed_mid_search_resumes_to_the_same_result(tmp_path):
  """``jaxsearch solve wordle --first tarse`` killed after its first save, resumed: the same
  total and proof as the run never stopped (a budget of simulations: deterministic)."""
  common = [sys.executable, "-m", "jaxsearch.cli", "solve", "wordle", "--first", "tarse",
            "--simulations", "16", "--seconds", "inf", "--certify-seconds", "60", "--json",
            "--quiet"]
  straight = subprocess.run(common, env=_env(), cwd=REPO, capture_output=True, text=True,
                            timeout=3600)
  assert straight.returncode == 0, straight.stderr[-2000:]
  expected = json.loads(straight.stdout.strip().splitlines()[-1])
  argv = common + ["--checkpoint", str(tmp_path), "--checkpoint-seconds", "0"]
  proc = subprocess.Popen(argv, env=_env(**{chunked.SLEEP_ENV: "2"}), cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
  try:
    while checkpoint_lib.saved_progress(tmp_path) is None:
      assert proc.poll() is None, proc.stderr.read()[-2000:]
      time.sleep(0.2)
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
  saved = checkpoint_lib.saved_progress(tmp_path)
  done = subprocess.run(argv + ["--resume"], env=_env(), cwd=REPO, capture_output=True,
                        text=True, timeout=3600)
  assert done.returncode == 0, done.stderr[-2000:]
  summary = json.loads(done.stdout.strip().splitlines()[-1])
  assert summary["resumed_from_simulations"] == saved["simulations"] > 0
  for name in ("simulations", "total_guesses", "proven_given_first", "achievable_total",
               "lower_bound_total", "subproblems_proven"):
    assert summary[name] == expected[name], name
