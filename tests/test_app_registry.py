"""The application layer's one registry of games (jaxsearch.app.registry): every name the
commands accept resolves there, to a module that has what the name's features need; the
training presets and the trainer's game and evaluation come from it; the policy-file reader
is plugged from it."""

import subprocess
import sys
import types

import pytest

from jaxsearch.guessing import policy_file
from jaxsearch.app import evaluators, presets, registry, training
from jaxsearch.enums import TrainPreset
from jaxsearch.train.config import TrainConfig


def test_the_registry_names_each_game_once_by_feature():
  assert registry.names() == ("tictactoe", "connect_four", "mastermind", "wordle")
  assert registry.names("training") == ("tictactoe", "connect_four")
  assert registry.names("play") == ("tictactoe", "connect_four")
  assert registry.names("policy_files") == ("mastermind", "wordle")
  with pytest.raises(ValueError, match="feature must be one of"):
    registry.names("solve")


def test_unknown_names_and_missing_features_are_refused_with_the_choices():
  with pytest.raises(ValueError, match="unknown game 'chess': expected one of tictactoe, "
                                       "connect_four, mastermind, wordle, pgx:ENV_ID"):
    registry.entry("chess")
  with pytest.raises(ValueError, match="unknown game to train 'wordle': expected one of "
                                       "tictactoe, connect_four, pgx:ENV_ID"):
    registry.entry("wordle", "training")
  with pytest.raises(ValueError, match="game with policy files 'pgx:go_9x9'"):
    registry.entry("pgx:go_9x9", "policy_files")
  for nameless in ("pgx:", "", None):
    with pytest.raises(ValueError, match="unknown game"):
      registry.entry(nameless)
  with pytest.raises(ValueError, match="no policy files"):
    registry.entry("tictactoe").file_game()


def test_a_pgx_name_is_the_pgx_entry_under_that_name():
  found = registry.entry("pgx:othello", "play")
  assert found.name == "pgx:othello" and found.module == "jaxsearch.games.pgx_env"
  assert found.build == "module_for" and found.play == registry.PGX.play
  assert found.training.preset is presets.pgx and found.training.evaluator is None


@pytest.mark.parametrize("name", registry.names())
def test_every_entry_loads_a_module_with_what_its_features_need(name):
  found = registry.entry(name)
  module = found.load()
  assert module is registry.game_module(name) and module.__name__ == found.module
  if found.training or found.play:
    assert module.GAME.num_actions > 0
  if found.training:
    assert callable(module.observe)
  if found.play:
    assert callable(module.render)
  if found.policy_files:
    assert found.file_game() is module.POLICY_FILES
    assert isinstance(module.POLICY_FILES.required_keys, tuple)


def test_the_policy_file_reader_is_plugged_from_the_registry():
  registry.register_policy_files()
  assert set(registry.names("policy_files")) <= set(policy_file.known_games())
  for name in registry.names("policy_files"):
    assert policy_file.file_game(name) is registry.entry(name).file_game()


@pytest.mark.parametrize("name", registry.names("training"))
def test_presets_are_the_registry_s(name):
  config = training.preset(name, seed=3)
  assert isinstance(config, TrainConfig) and config.game == name and config.seed == 3
  for which in TrainPreset:  # explicit: the default follows the backend the tests run on
    assert training.preset(name, preset=which) == TrainConfig(
        **registry.entry(name).training.preset(name, which))
  assert training.default_minutes(name) == {"tictactoe": 4.5, "connect_four": 30.0}[name]
  with pytest.raises(TypeError):
    training.preset(name, no_such_setting=1)


def test_a_preset_for_a_game_that_does_not_train_is_refused():
  with pytest.raises(ValueError, match="game to train 'mastermind'"):
    training.preset("mastermind")


@pytest.mark.parametrize("name, evaluator", [
    ("tictactoe", evaluators.tictactoe), ("connect_four", evaluators.connect_four)])
def test_the_trainer_gets_the_game_s_module_and_oracle_evaluation(monkeypatch, name, evaluator):
  """What :func:`training.trainer` hands the library's Trainer (recorded, not built)."""
  from jaxsearch.train import trainer
  seen = {}

  def record(config, module, out_dir=None, evaluator=None):
    seen.update(config=config, module=module, out_dir=out_dir, evaluator=evaluator)
    return types.SimpleNamespace(**seen)

  monkeypatch.setattr(trainer, "Trainer", record)
  config = training.preset(name)
  training.trainer(config, out_dir="somewhere")
  assert seen == dict(config=config, module=registry.game_module(name), out_dir="somewhere",
                      evaluator=evaluator)
  training.trainer(config, evaluator=False)
  assert seen["evaluator"] is False


def test_the_registry_and_the_command_line_parser_import_no_jax():
  """``jaxsearch --help`` lists the games from the registry without importing JAX."""
  code = ("import sys\nimport jaxsearch.app.registry, jaxsearch.cli\n"
          "assert 'jax' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m)\n")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120)
  assert done.returncode == 0, done.stderr
