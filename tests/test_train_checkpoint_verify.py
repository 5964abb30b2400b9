"""Training checkpoints are verified when restored: the SHA-256 of each array and of the
metadata are written with the step, and of each of its files beside it; a step whose files
changed is corrupt, and a resume falls back to the newest intact step, saying so (stderr, and
``skipped_checkpoints`` / ``resumed_from`` in the run's JSON); with none intact, a clear
error. Orbax's compressed arrays decode flipped bytes into wrong values without an error: 32
flipped bytes in each data file of the newest step used to resume silently with 1,363 of
180,000 replay elements changed."""

import json
import shutil
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from jaxsearch import cli
from jaxsearch.app import training
from jaxsearch.train import checkpoint as checkpoint_lib

RNG = np.random.default_rng(0)
# Random floats: incompressible, so orbax stores them nearly raw and flipped bytes decode.
STATES = {step: {"x": RNG.standard_normal(180_000).astype(np.float32),
                 "y": np.arange(7, dtype=np.int32) + step} for step in (4, 8)}
TEMPLATE = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), STATES[4])


def _flip(step_dir: Path, count: int = 32) -> None:
  """Flips ``count`` bytes in the middle of the biggest file of a step's arrays (their data)."""
  files = [f for f in (step_dir / "state").rglob("*") if f.is_file()]
  biggest = max(files, key=lambda f: f.stat().st_size)
  data = bytearray(biggest.read_bytes())
  for i in range(count):
    data[len(data) // 2 + 97 * i] ^= 0xFF
  biggest.write_bytes(bytes(data))


def _saved(tmp_path) -> checkpoint_lib.Checkpointer:
  ckpt = checkpoint_lib.Checkpointer(tmp_path, {"run": 1})
  for step, state in STATES.items():
    ckpt.save(step, state)
  return ckpt


def _assert_state(restored, step):
  for name in ("x", "y"):
    np.testing.assert_array_equal(np.asarray(restored[name]), STATES[step][name])


def test_intact_checkpoints_restore_with_nothing_skipped(tmp_path):
  ckpt = _saved(tmp_path)
  listing = json.loads((tmp_path / "checkpoints" / "8" / checkpoint_lib.FILES).read_text())
  assert "meta/metadata" in listing and any(name.startswith("state/") for name in listing)
  for _ in range(2):  # restoring changes no file
    restored, step = ckpt.restore(TEMPLATE)
    assert step == 8 and ckpt.skipped == ()
    _assert_state(restored, 8)
  ckpt.close()


def test_flipped_bytes_in_the_newest_step_fall_back_to_the_previous_one(tmp_path):
  ckpt = _saved(tmp_path)
  _flip(tmp_path / "checkpoints" / "8")
  try:  # what orbax alone makes of it: wrong values, or at best an error
    arrays = ckpt._manager.restore(8, args=ocp.args.Composite(state=ocp.args.StandardRestore(
        {"leaf_00000": TEMPLATE["x"], "leaf_00001": TEMPLATE["y"]})))["state"]
    assert not np.array_equal(np.asarray(arrays["leaf_00000"]), STATES[8]["x"])
  except ValueError:
    pass
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 4
  _assert_state(restored, 4)
  assert [s.step for s in ckpt.skipped] == [8]
  assert "checkpoints/8 is corrupt: its file state/" in ckpt.skipped[0].reason
  assert "changed since it was saved" in ckpt.skipped[0].reason
  # Asked for that step by number: no fallback, the error.
  with pytest.raises(checkpoint_lib.CheckpointCorrupt, match="checkpoints/8 is corrupt"):
    ckpt.restore(TEMPLATE, step=8)
  # Every step corrupt: one error naming each.
  _flip(tmp_path / "checkpoints" / "4")
  with pytest.raises(checkpoint_lib.CheckpointCorrupt,
                     match=r"every checkpoint in .* is corrupt \(steps 8, 4\)"):
    ckpt.restore(TEMPLATE)
  ckpt.close()


def test_readable_files_of_another_step_are_caught_by_the_checksums(tmp_path):
  """Files that decode without any error but are not what was written with the step (step
  4's arrays under step 8): the file listing finds them; without it (a run killed between
  orbax's commit and the listing, or an older checkpoint), the arrays' checksums do."""
  ckpt = _saved(tmp_path)
  steps = tmp_path / "checkpoints"
  shutil.rmtree(steps / "8" / "state")
  shutil.copytree(steps / "4" / "state", steps / "8" / "state")
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 4 and [s.step for s in ckpt.skipped] == [8]
  assert "checkpoints/8 is corrupt: its file state/" in ckpt.skipped[0].reason
  (steps / "8" / checkpoint_lib.FILES).unlink()
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 4 and [s.step for s in ckpt.skipped] == [8]
  assert "differ from the checksums written with them (['x'], ['y'])" in ckpt.skipped[0].reason
  ckpt.close()


def _meta_file(step_dir: Path) -> Path:
  return step_dir / "meta" / "metadata"


def test_a_changed_metadata_is_corrupt_not_another_configuration(tmp_path):
  """A flipped byte in the metadata's configuration would read as a configuration mismatch
  (refusing the resume); its own checksum makes it a corrupt step, passed over."""
  ckpt = _saved(tmp_path)
  path = _meta_file(tmp_path / "checkpoints" / "8")
  path.write_text(path.read_text().replace('"run": 1', '"run": 7'))
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 4 and "its file meta/metadata changed" in ckpt.skipped[0].reason
  (tmp_path / "checkpoints" / "8" / checkpoint_lib.FILES).unlink()
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 4 and "metadata does not match the checksum" in ckpt.skipped[0].reason
  ckpt.close()


def test_checkpoints_written_before_checksums_still_restore(tmp_path):
  ckpt = _saved(tmp_path)
  for step in (4, 8):
    (tmp_path / "checkpoints" / str(step) / checkpoint_lib.FILES).unlink()
    path = _meta_file(tmp_path / "checkpoints" / str(step))
    meta = json.loads(path.read_text())
    assert len(meta.pop("sha256")) == 2 and meta.pop("digest")
    path.write_text(json.dumps(meta))
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 8 and ckpt.skipped == ()
  _assert_state(restored, 8)
  ckpt.close()


def test_saving_after_a_fallback_replaces_the_corrupt_newer_steps(tmp_path):
  ckpt = _saved(tmp_path)
  _flip(tmp_path / "checkpoints" / "8")
  assert ckpt.restore(TEMPLATE)[1] == 4
  ckpt.save(6, STATES[8])
  assert ckpt.latest_step() == 6
  restored, step = ckpt.restore(TEMPLATE)
  assert step == 6 and ckpt.skipped == ()
  _assert_state(restored, 8)
  ckpt.close()


# ---- the command line: a tiny tic-tac-toe run ---------------------------------------------

TINY = dict(batch_size=4, simulations=4, hidden=[16], replay_capacity=256, min_replay=8,
            train_batch=8, warmup_steps=2, eval_every=-1, checkpoint_every=4,
            temperature_moves=2, random_opening=2)
TINY_SET = [f"--set={k}={json.dumps(v)}" for k, v in TINY.items()]


def _train(capsys, out, *extra):
  status = cli.main(["train", "tictactoe", "--out", str(out), "--quiet", "--json", "--steps",
                     "8", *TINY_SET, *extra])
  captured = capsys.readouterr()
  return status, captured.out, captured.err


def _arrays(out, step):
  """Checkpoint ``step`` of a run as numpy arrays (read without a template)."""
  manager = ocp.CheckpointManager(Path(out).resolve() / "checkpoints")
  try:
    return manager.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore()))["state"]
  finally:
    manager.close()


def test_train_resume_falls_back_and_says_so_then_refuses_when_none_is_intact(capsys,
                                                                             tmp_path):
  out = tmp_path / "run"
  status, _, err = _train(capsys, out)
  assert status == 0, err
  assert sorted(int(p.name) for p in (out / "checkpoints").iterdir()) == [4, 8]
  uninterrupted = _arrays(out, 8)
  _flip(out / "checkpoints" / "8")
  status, stdout, err = _train(capsys, out, "--resume")
  assert status == 0, err
  assert "checkpoint step 8 is corrupt and was skipped; resuming from step 4" in err
  summary = json.loads(stdout.strip().splitlines()[-1])
  assert summary["skipped_checkpoints"] == [8] and summary["resumed_from"] == 4
  assert summary["steps"] == 8
  assert "8 steps (resumed from step 4: corrupt checkpoints skipped: 8)" in stdout
  # The replayed steps 5..8 rewrote step 8 as the uninterrupted run had it.
  resumed = _arrays(out, 8)
  assert resumed.keys() == uninterrupted.keys()
  for name in uninterrupted:
    np.testing.assert_array_equal(resumed[name], uninterrupted[name], err_msg=name)
  # Read back to play (`play --checkpoint`): the same fallback, as a warning.
  _flip(out / "checkpoints" / "8")
  with pytest.warns(UserWarning, match="checkpoint step 8 is corrupt and was skipped; using "
                                       "step 4"):
    training.load_trained(out)
  # Both steps corrupt: a clear error, exit status 2, nothing trained.
  _flip(out / "checkpoints" / "4")
  status, stdout, err = _train(capsys, out, "--resume")
  assert status == 2 and not stdout
  assert "jaxsearch train: cannot resume: every checkpoint in" in err
  assert "(steps 8, 4)" in err and "changed since it was saved" in err
  assert "Traceback" not in err
