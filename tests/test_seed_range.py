"""Seeds outside what ``jax.random.PRNGKey`` tells apart (0 .. 2**32 - 1) are refused before any
work: by the command line's ``--seed`` while parsing (``solve``, ``train``, ``play``), and by
the Python entry points (``TrainConfig``, ``SolveOptions`` and what builds one) with a
``ValueError`` naming the seed. ``solve --seed 18446744073709551616`` used to fail with an
``OverflowError`` traceback inside ``PRNGKey``, half a minute in."""

import jax
import numpy as np
import pytest

from jaxsearch import cli, seeds
from jaxsearch.solve import SolveOptions
from jaxsearch.train.config import ConfigError, TrainConfig

BAD_SEEDS = [2**64, 2**63, 2**32, -1, -(2**63) - 1]


def test_the_range_is_where_seeds_give_distinct_keys():
  """Why 2**32 - 1 is the largest seed: without x64, ``PRNGKey`` keeps 32 bits of it, so a
  larger seed (or a negative one) repeats a smaller seed's key, and beyond 64 bits it raises."""
  assert seeds.MAX_SEED == 2**32 - 1
  keys = {tuple(np.asarray(jax.random.PRNGKey(s)).tolist()) for s in (0, 1, seeds.MAX_SEED)}
  assert len(keys) == 3
  if not jax.config.jax_enable_x64:
    np.testing.assert_array_equal(jax.random.PRNGKey(2**32), jax.random.PRNGKey(0))
    np.testing.assert_array_equal(jax.random.PRNGKey(-1), jax.random.PRNGKey(seeds.MAX_SEED))
  with pytest.raises(OverflowError):
    jax.random.PRNGKey(2**64)


@pytest.mark.parametrize("seed", BAD_SEEDS + [1.5, True, "3"])
def test_check_seed_refuses_with_the_name(seed):
  with pytest.raises(ValueError, match=r"^my seed must be .*4294967295"):
    seeds.check_seed(seed, "my seed")


@pytest.mark.parametrize("seed", [0, 7, seeds.MAX_SEED, np.int64(5)])
def test_check_seed_keeps_seeds_in_range(seed):
  assert seeds.check_seed(seed) == int(seed) and type(seeds.check_seed(seed)) is int


@pytest.mark.parametrize("seed", BAD_SEEDS)
def test_python_entry_points_refuse_out_of_range_seeds(seed):
  with pytest.raises(ConfigError, match="seed must be from 0 to 4294967295") as info:
    TrainConfig(seed=seed)
  assert info.value.field == "seed"
  with pytest.raises(ValueError, match="SolveOptions: seed must be from 0 to 4294967295"):
    SolveOptions.from_keywords(seed=seed)
  assert TrainConfig(seed=seeds.MAX_SEED).seed == seeds.MAX_SEED
  assert SolveOptions.from_keywords(seed=seeds.MAX_SEED).search.seed == seeds.MAX_SEED


@pytest.mark.parametrize("argv", [
    ["solve", "mastermind", "--pegs", "2", "--colours", "2", "--quiet"],
    ["train", "tictactoe", "--steps", "1", "--quiet"],
    ["play", "tictactoe"],
])
@pytest.mark.parametrize("seed", ["18446744073709551616", "-1", "4294967296", "seven"])
def test_command_line_seed_is_a_usage_error(capsys, argv, seed):
  """argparse's usage error naming ``--seed`` and the range, exit status 2, before anything is
  imported or built."""
  with pytest.raises(SystemExit) as exc:
    cli.main(argv + ["--seed", seed])
  assert exc.value.code == 2
  err = capsys.readouterr().err
  assert "Traceback" not in err and "OverflowError" not in err
  first = err.splitlines()[0]
  assert "argument --seed" in first and "4294967295" in first and seed in first, err
