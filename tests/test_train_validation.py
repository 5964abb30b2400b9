"""Training configurations are checked once, when built (as ``SolveOptions`` are): every
numeric field finite and in range, refused with a ``ConfigError`` naming the field, and on the
command line naming the flag that set it (``--set learning_rate=nan``), before anything is
built. ``jaxsearch train --set learning_rate=NaN`` used to train a NaN network and exit 0;
``learning_rate=-1`` too."""

import dataclasses
import math

import pytest

from jaxsearch import cli
from jaxsearch.app import training
from jaxsearch.train.config import (BOOL_FIELDS, FLOAT_FIELDS, INT_FIELDS, ConfigError,
                                    TrainConfig)

NAN, INF = math.nan, math.inf

BAD = [
    ("learning_rate", NAN), ("learning_rate", -1), ("learning_rate", 0), ("learning_rate", INF),
    ("learning_rate", "nan"), ("learning_rate", True),
    ("dirichlet_fraction", 1.5), ("dirichlet_fraction", -0.1), ("dirichlet_fraction", NAN),
    ("dirichlet_alpha", 0.0), ("dirichlet_alpha", NAN), ("gumbel_c_scale", -0.1),
    ("gumbel_c_scale", INF), ("weight_decay", -1e-4), ("weight_decay", NAN), ("l2", NAN),
    ("l2", -1), ("action_value_weight", NAN), ("minutes", NAN), ("minutes", -1),
    ("minutes", INF), ("c", NAN), ("c", -1.0), ("c", INF),
    ("steps", 1.5), ("steps", -1), ("warmup_steps", -1), ("decay_steps", NAN),
    ("checkpoint_every", -4), ("log_every", -1), ("temperature_moves", -1),
    ("random_opening", -2), ("min_replay", -1), ("channels", 0), ("head_hidden", 0),
    ("blocks", -1), ("eval_uct_simulations", -1), ("batch_size", 2.5), ("eval_every", 0.5),
    ("simulations", True), ("hidden", (16, 0)), ("hidden", "wide"), ("network", "cnn"),
    ("max_nodes", 3), ("reuse", 0), ("ones_plane", "yes"), ("seed", 2**64),
]


@pytest.mark.parametrize("field, value", BAD, ids=[f"{f}={v!r}" for f, v in BAD])
def test_bad_fields_are_refused_naming_the_field(field, value):
  with pytest.raises(ConfigError) as info:
    TrainConfig(**{field: value})
  assert info.value.field == field
  assert str(info.value).startswith(field), str(info.value)
  assert isinstance(info.value, ValueError)  # what callers caught before


def test_every_numeric_field_is_checked():
  """The tables cover every int and float field of the configuration (a field added later
  without a range fails here)."""
  checked = set(INT_FIELDS) | set(FLOAT_FIELDS) | set(BOOL_FIELDS)
  for field in dataclasses.fields(TrainConfig):
    if field.type in ("int", "float", "bool", "Optional[float]"):
      assert field.name in checked or field.name == "seed", field.name


@pytest.mark.parametrize("field, value", [
    ("learning_rate", 1), ("dirichlet_fraction", 0), ("dirichlet_fraction", 1),
    ("c", None), ("c", 0), ("weight_decay", 0), ("minutes", 0), ("eval_every", -1),
    ("checkpoint_every", 0), ("max_nodes", 0), ("blocks", 0), ("hidden", [8, 8])])
def test_edges_in_range_are_kept_and_normalised(field, value):
  config = TrainConfig(**{field: value})
  kept = getattr(config, field)
  assert kept == (tuple(value) if isinstance(value, list) else value)
  if field in FLOAT_FIELDS and value is not None:
    assert type(kept) is float
  if field in INT_FIELDS:
    assert type(kept) is int


def test_every_preset_passes():
  for game in ("tictactoe", "connect_four"):
    assert training.preset(game) == TrainConfig(**training.preset(game).to_dict())


@pytest.mark.parametrize("argv, needles", [
    (["--set", "learning_rate=NaN"], ["--set learning_rate=NaN", "learning_rate must be a "
                                      "positive finite number, got nan"]),
    (["--set", "learning_rate=-1"], ["--set learning_rate=-1", "got -1"]),
    (["--set", "learning_rate=nan"], ["--set learning_rate=nan", "got 'nan'"]),
    (["--set", "dirichlet_fraction=2"], ["--set dirichlet_fraction=2", "[0, 1]"]),
    (["--set", "steps=1.5"], ["--set steps=1.5", "an integer >= 0"]),
    (["--set", "learning_rate=1", "--set", "learning_rate=Infinity"],
     ["--set learning_rate=Infinity"]),
    (["--devices", "-1"], ["--devices -1", "devices must be >= 0"]),
    (["--set", "seed=18446744073709551616"], ["--set seed=18446744073709551616",
                                              "seed must be from 0 to 4294967295"]),
])
def test_cli_names_the_flag_and_builds_nothing(capsys, tmp_path, argv, needles):
  out = tmp_path / "run"
  status = cli.main(["train", "tictactoe", "--steps", "2", "--quiet", "--out", str(out),
                     *argv])
  err = capsys.readouterr().err
  assert status == 2, err
  lines = err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("jaxsearch train: "), err
  for needle in needles:
    assert needle in lines[0], err
  assert not out.exists()  # refused before the run made its folder
