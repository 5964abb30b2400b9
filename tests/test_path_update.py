"""How a simulation walks its path (``SearchConfig.loops``): the running-mean backup's two ways
of writing it (a loop of one write per level, one write of the whole path buffer) and the
descent's levels per loop trip. Every setting must build the same tree, bit for bit, on deep
trees, two-player games and chance games alike; the defaults follow the backend."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet, hashed, stack_states, tictactoe

import bit_exact

GARNET = garnet.make_family(3, 4, 4, 2, 3, seed=7)


def _hashed_puct(**options):
  game = hashed.make(4, seed=1)
  roots = hashed.distinct_roots(game, 3)
  return js.policies.puct(game, hashed.estimator(4), num_simulations=24, **options), roots


def _tictactoe_puct(**options):
  roots = stack_states([tictactoe.state_from_moves(m) for m in ([], [4, 0])])
  return js.policies.puct(tictactoe.GAME, js.estimators.uniform(), num_simulations=16,
                          c=1.25, **options), roots


def _garnet_thompson(**options):
  estimator = garnet.estimator(GARNET, bias=0.2, noise=0.3, seed=3)
  return js.policies.custom(GARNET.game, estimator, selection=js.selection.thompson(),
                            num_simulations=16, outcome_rule="sample", **options), GARNET.roots()


@pytest.mark.parametrize("build", [_hashed_puct, pytest.param(_tictactoe_puct, marks=pytest.mark.slow),
                                   _garnet_thompson],
                         ids=["hashed_puct_deep", "tictactoe_two_player", "garnet_chance"])
def test_whole_path_writes_the_same_tree_as_the_level_loop(build):
  key = jax.random.PRNGKey(3)
  trees = {}
  # Three levels a trip on the deep trees, where trips end mid-way; two elsewhere.
  levels_per_trip = 3 if build is _hashed_puct else 2
  for layout, levels in (("per_level", 1), ("whole_path", levels_per_trip)):
    search, roots = build(path_update=layout, levels_per_trip=levels)
    trees[layout, levels] = bit_exact.jit(search)(None, key, roots).tree
  reference = trees.pop(("per_level", 1))
  if build is _hashed_puct:  # the case is meant to walk deep paths
    assert int(np.asarray(reference.nodes.depth).max()) >= 4
  leaves = jax.tree_util.tree_leaves_with_path(reference)
  for setting, tree in trees.items():
    for (name, left), right in zip(leaves, jax.tree.leaves(tree)):
      np.testing.assert_array_equal(np.asarray(left), np.asarray(right),
                                    err_msg=f"{setting} {jax.tree_util.keystr(name)}")


@pytest.mark.slow
def test_whole_path_under_vmap():
  """A search vmapped over a leading axis of batches (one batch of one root each) builds
  the same trees as the batched call."""
  search, roots = _hashed_puct(path_update="whole_path", levels_per_trip=2)
  key = jax.random.PRNGKey(0)
  batched = bit_exact.jit(search)(None, key, roots).tree
  per_root = bit_exact.jit(jax.vmap(lambda root: search(None, key, jax.tree.map(
      lambda x: x[None], root)).tree))(roots)
  for left, right in zip(jax.tree.leaves(batched), jax.tree.leaves(per_root)):
    np.testing.assert_array_equal(np.asarray(left), np.asarray(right)[:, 0])


def test_the_defaults_follow_the_backend():
  on_cpu = jax.default_backend() == "cpu"
  resolved = js.LoopOptions().resolved()
  assert resolved.path_update == ("per_level" if on_cpu else "whole_path")
  assert resolved.levels_per_trip == (1 if on_cpu else 2)
  given = js.LoopOptions(path_update="whole_path", levels_per_trip=4).resolved()
  assert (given.path_update, given.levels_per_trip) == (js.PathUpdate.WHOLE_PATH, 4)
  config = js.search.config_from_keywords(num_simulations=4, selection=js.selection.puct(),
                                          levels_per_trip=2)
  assert config.loops == js.LoopOptions(levels_per_trip=2)
  with pytest.raises(ValueError, match="path_update must be one of"):
    js.LoopOptions(path_update="columns")
  with pytest.raises(ValueError, match="levels_per_trip must be a positive int"):
    js.LoopOptions(levels_per_trip=0)
