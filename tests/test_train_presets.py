"""The training presets per backend (``cpu``, ``accelerator``) and the device loop: the
accelerator presets build and train on the CPU at tiny sizes, the host reads the device once
per ``metrics_every`` steps, a killed run resumes bit for bit, and bfloat16 convolutions stay
close to float32. One tiny accelerator trainer is shared by the tests of this module."""

import io
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.app import training
from jaxsearch.cli import train as cli_train
from jaxsearch.games import connect_four
from jaxsearch.train import networks
from jaxsearch.train.config import ComputeDtype, TrainPreset
from train_runs import (compile_cache, kill_and_resume, read_points,  # noqa: F401  (a fixture)
                        run_counting_reads)

# The tic-tac-toe accelerator preset at tiny sizes: the device loop over 3 steps a read.
TINY = dict(batch_size=4, simulations=4, hidden=(16,), replay_capacity=256, min_replay=8,
            train_batch=8, warmup_steps=2, eval_every=-1, checkpoint_every=4,
            temperature_moves=2, random_opening=2, metrics_every=3)
TINY_SET = [f"--set={k}={json.dumps(list(v) if isinstance(v, tuple) else v)}"
            for k, v in TINY.items()]
# Connect Four's (ResNet, bfloat16 convolutions, Gumbel) at tiny sizes.
C4_TINY = dict(TINY, channels=4, blocks=1, head_hidden=8)
del C4_TINY["hidden"]


@pytest.fixture(scope="module")
def accelerator(compile_cache):
  """The tiny tic-tac-toe accelerator trainer (compiled once for the module)."""
  return training.trainer(training.preset("tictactoe", "accelerator", **TINY), evaluator=False)


def _samples_per_position(config) -> float:
  return config.train_batch * config.updates_per_step / (config.batch_size *
                                                         config.moves_per_step)


@pytest.mark.parametrize("game", ["tictactoe", "connect_four", "pgx:connect_four"])
def test_every_trainable_game_has_both_presets(game):
  if game.startswith("pgx:"):
    pytest.importorskip("pgx")
  cpu, big = training.preset(game, "cpu"), training.preset(game, TrainPreset.ACCELERATOR)
  assert (cpu.preset, big.preset) == ("cpu", "accelerator")
  assert not cpu.device_loop and cpu.compute_dtype == "float32" and cpu.metrics_every > 1
  assert big.device_loop and big.metrics_every > 1
  assert big.batch_size >= 1024 and big.batch_size >= 8 * cpu.batch_size
  # The update batch and the updates a step follow the games: each self-play position is
  # sampled as often as on the CPU.
  assert _samples_per_position(big) == _samples_per_position(cpu)
  # Checkpoints and evaluations fall on read boundaries.
  for every in (big.checkpoint_every, big.eval_every, cpu.checkpoint_every, cpu.eval_every):
    assert every % big.metrics_every == 0 or every % cpu.metrics_every == 0
  # The same recipe otherwise (search, targets, openings).
  for field in ("policy", "value_target", "simulations", "random_opening", "network"):
    assert getattr(big, field) == getattr(cpu, field), field
  if game == "connect_four":
    assert big.channels >= 64 and big.blocks >= 5 and big.batch_size >= 2048
    assert big.compute_dtype is ComputeDtype.BFLOAT16
    assert (cpu.channels, cpu.blocks, cpu.batch_size) == (32, 2, 128)


def test_the_backend_picks_the_preset_and_a_resume_keeps_it(monkeypatch, tmp_path):
  assert TrainPreset.for_backend("cpu") is TrainPreset.CPU
  assert TrainPreset.for_backend("gpu") is TrainPreset.for_backend("tpu") is (
      TrainPreset.ACCELERATOR)
  assert training.preset("connect_four").preset is TrainPreset.CPU  # this machine's
  with pytest.raises(ValueError, match="preset must be one of 'cpu', 'accelerator'"):
    training.preset("connect_four", "gpu")
  parser = cli_train.argparse.ArgumentParser()
  cli_train.add_parser(parser.add_subparsers())
  parse = lambda *argv: parser.parse_args(["train", "connect_four", *argv])  # noqa: E731
  config = lambda *argv: cli_train.run_config(parse(*argv), training, tmp_path)  # noqa: E731
  assert config("--preset", "accelerator").channels == 64
  assert config("--set", "preset=accelerator").preset == "accelerator"
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert config().preset == "accelerator" and config().batch_size == 4096
  # A resume takes the preset its run recorded (a run from before presets: the CPU's).
  (tmp_path / "config.json").write_text(json.dumps({"preset": "cpu"}))
  assert config("--resume").preset == "cpu"
  (tmp_path / "config.json").write_text(json.dumps({"game": "connect_four"}))
  assert config("--resume").preset == "cpu"
  assert config("--resume", "--preset", "accelerator").preset == "accelerator"
  with pytest.raises(SystemExit):
    parse("--preset", "gpu")


def test_bfloat16_convolutions_stay_close_to_float32():
  """The same parameters (float32, also under bfloat16 compute) give values and logits within
  0.02 of float32 on Connect Four positions, and float32 gradients."""
  states = [connect_four.state_from_moves(moves)
            for moves in ("", "444", "1234567", "4433225", "7654321234")]
  states = jax.tree.map(lambda *x: jnp.stack(x), *states)
  obs = jax.vmap(connect_four.observe)(states)
  sizes = dict(channels=8, blocks=2, head_hidden=8, ones_plane=True)
  full, params = networks.init("resnet", obs.shape[1:], 7, seed=0, **sizes)
  half, same = networks.init("resnet", obs.shape[1:], 7, seed=0, compute_dtype="bfloat16",
                             **sizes)
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(same)):
    assert b.dtype == jnp.float32 and np.array_equal(a, b)
  exact, rounded = networks.apply(full, params, obs), networks.apply(half, params, obs)
  assert rounded.value.dtype == rounded.logits.dtype == jnp.float32
  assert 0 < float(jnp.max(jnp.abs(exact.value - rounded.value))) < 0.02
  assert float(jnp.max(jnp.abs(exact.logits - rounded.logits))) < 0.02
  grads = jax.grad(lambda p: jnp.sum(networks.apply(half, p, obs).value))(params)
  assert all(g.dtype == jnp.float32 for g in jax.tree.leaves(grads))


def test_the_accelerator_preset_trains_in_its_device_loop(accelerator):
  """The accelerator preset's device loop trains; splitting the steps into other intervals
  gives the same run, bit for bit (the loop's trip count is an argument: one program)."""
  assert accelerator.config.device_loop
  runs = []
  for split in ((3, 3, 3, 3), (1, 2, 3, 1, 2, 3)):
    ts, rows = accelerator.init_state(), []
    for count in split:
      ts, pending = accelerator.advance(ts, count)
      rows += accelerator.fetch_metrics(pending)
    runs.append((jax.device_get(ts), rows))
  (ts, rows), (other, other_rows) = runs
  assert len(rows) == 12 and int(ts.step) == 12 and int(ts.updates) > 0
  assert [r["updates"] for r in rows] == [r["updates"] for r in other_rows]
  assert rows[-1]["updates"] == int(ts.updates) and rows[-1]["buffer"] == int(ts.buffer.size)
  assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(ts.params))
  for a, b in zip(jax.tree.leaves(ts), jax.tree.leaves(other)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_the_connect_four_accelerator_preset_trains():
  """Connect Four's accelerator preset (a ResNet with bfloat16 convolutions, Gumbel
  self-play, the device loop) trains a few steps at tiny sizes, float32 parameters."""
  trainer = training.trainer(training.preset("connect_four", "accelerator", **C4_TINY),
                             evaluator=False)
  assert trainer.config.device_loop and trainer.config.compute_dtype == "bfloat16"
  summary = trainer.run(steps=9, progress=False)
  ts = jax.device_get(trainer.state)
  assert summary["steps"] == 9 and summary["preset"] == "accelerator"
  assert summary["updates"] > 0 and int(ts.buffer.size) > 0
  assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(ts.params))
  assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(ts.params))


def test_the_device_loop_copies_a_few_arrays_per_read(accelerator, monkeypatch):
  """With the device loop, the host waits for the device once per read interval and copies
  one array per metric (the interval's steps stacked), not one per step: for 24 steps at
  ``metrics_every`` = 3 and ``checkpoint_every`` = 4, 13 reads of a dozen arrays each."""
  config, steps = accelerator.config, 24
  points = read_points(config, steps)  # {1, 3, 4, 6, 8, 9, 12, ..., 24}: 13
  # (Compiled first: the constants a compilation copies are not the loop's reads.)
  first = accelerator.fetch_metrics(accelerator.advance(accelerator.init_state(), 1)[1])
  metrics = len(first[0])
  summary, waits, copies = run_counting_reads(accelerator, monkeypatch, steps)
  assert summary["steps"] == steps and summary["preset"] == "accelerator"
  assert waits <= len(points) + 2 and copies <= len(points) * metrics + 2 + 3, (waits, copies)
  assert copies < steps * metrics  # fewer than one copy per metric and step
  assert summary["positions_per_s"] > 0 and summary["updates_per_s"] > 0


def test_the_progress_bar_and_the_summary_name_the_preset(accelerator):
  from rich.console import Console
  console = Console(file=io.StringIO(), force_terminal=True, width=200)
  summary = accelerator.run(steps=3, progress=True, console=console)
  assert summary["preset"] == "accelerator"
  assert "training (accelerator preset)" in console.file.getvalue()


def test_a_killed_accelerator_run_resumes_bit_for_bit(tmp_path, compile_cache, accelerator):
  """The tiny accelerator preset through the command line (``--preset accelerator``), killed
  with SIGKILL after its first checkpoint and resumed: the same metrics and final state as an
  uninterrupted run, bit for bit."""

  def argv(out, *extra):
    return [sys.executable, "-m", "jaxsearch.cli", "train", "tictactoe", "--preset",
            "accelerator", "--out", str(out), "--quiet", "--json", *TINY_SET, *extra]

  killed = kill_and_resume(tmp_path, compile_cache, accelerator, argv)
  recorded = json.loads((killed / "config.json").read_text())
  assert recorded["preset"] == "accelerator" and recorded["device_loop"] is True
