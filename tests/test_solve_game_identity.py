"""A :func:`jaxsearch.solve.solve_game` checkpoint is the state of one game: resuming it with
another game (a Garnet of another seed, whose class, sizes and roots are the same) is refused,
saying what differs in words, instead of reporting the other game's bounds, history and
trees."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from jaxsearch import solve as solve_lib
from jaxsearch.games import garnet
from jaxsearch.solve import game_identity

SHAPE = dict(num_states=4, num_actions=2, branching=2, horizon=3)
OPTIONS = dict(chunk=8, max_nodes=200, seconds=120, completion=0)


def _root(g):
  return jax.tree.map(lambda x: x[None], g.game.init(jax.random.PRNGKey(0)))


@pytest.fixture(scope="module")
def seeds():
  return garnet.make(seed=0, **SHAPE), garnet.make(seed=1, **SHAPE)


def test_the_identity_tells_garnets_of_other_seeds_apart(seeds):
  zero, one = seeds
  a = game_identity.game_identity(zero.game, garnet.estimator(zero), _root(zero))
  b = game_identity.game_identity(one.game, garnet.estimator(one), _root(one))
  again = game_identity.game_identity(garnet.make(seed=0, **SHAPE).game,
                                      garnet.estimator(zero), _root(zero))
  assert a["name"] == b["name"]  # the same class, name and sizes: only the rules differ
  assert a["transitions"] != b["transitions"] and a["estimator"] != b["estimator"]
  assert again == a  # the same game built again is the same game
  with pytest.raises(ValueError, match="game_key must be JSON-able"):
    game_identity.check_key(object())


def test_another_games_checkpoint_is_refused_in_words(seeds, tmp_path):
  zero, one = seeds
  first = solve_lib.solve_game(zero.game, garnet.estimator(zero), _root(zero),
                               max_simulations=8, checkpoint=tmp_path, **OPTIONS)
  with pytest.raises(solve_lib.CheckpointMismatch) as refused:
    solve_lib.solve_game(one.game, garnet.estimator(one), _root(one), max_simulations=16,
                         checkpoint=tmp_path, resume=True, **OPTIONS)
  message = str(refused.value)
  assert "the game differs" in message and "problem.game.transitions" in message, message
  assert message.index("the game differs") < message.index("the estimator differs")
  assert not re.search("[0-9a-f]{16}", message), message  # no hashes
  # A key given by the caller is compared, and shown, as given.
  with pytest.raises(solve_lib.CheckpointMismatch,
                     match="problem.game.key is \"garnet seed 0\" here, null there"):
    solve_lib.solve_game(zero.game, garnet.estimator(zero), _root(zero), max_simulations=16,
                         checkpoint=tmp_path, resume=True, game_key="garnet seed 0",
                         **OPTIONS)
  with pytest.raises(ValueError, match="game_key must be JSON-able"):
    solve_lib.solve_game(zero.game, garnet.estimator(zero), _root(zero), game_key={1, 2},
                         checkpoint=tmp_path, resume=True, **OPTIONS)
  # The same game (built again: another object) resumes its own checkpoint.
  again = garnet.make(seed=0, **SHAPE)
  resumed = solve_lib.solve_game(again.game, garnet.estimator(again), _root(again),
                                 max_simulations=16, checkpoint=tmp_path, resume=True,
                                 **OPTIONS)
  assert resumed.simulations == 16 and first.simulations == 8
  assert np.array_equal(resumed.history[0][2], first.history[0][2])
