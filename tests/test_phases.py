"""Batched phases (``jaxsearch.search.phases``): each stretch of Sequential Halving's later
phases run as one step builds the tree the simulation loop builds one simulation at a time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.games import garnet, hashed, stack_states, tictactoe
from jaxsearch.search import opening, phases
from jaxsearch.search.plan import plan_for

import bit_exact

KEY = jax.random.PRNGKey(5)


def _trees(game, estimator, roots, batched_over=None, **options):
  """The trees of a Gumbel search with the batched phases and without (``batched_over``:
  vmapped over that many inner batches, a key each)."""
  found = []
  for batched in (True, False):
    search = js.policies.gumbel(game, estimator, batched_phases=batched, **options)
    run = lambda key, states, s=search: s(None, key, states).tree  # noqa: E731
    if batched_over:
      found.append(bit_exact.jit(jax.vmap(run))(jax.random.split(KEY, batched_over), roots))
    else:
      found.append(bit_exact.jit(run)(KEY, roots))
  return found


def _assert_same(with_phases, without):
  """Every leaf equal bit for bit, but the children's prior probabilities: their softmax is
  reduced over ``B·W`` rows instead of ``B``, which XLA may round differently in the last bit
  (as with the opening)."""
  paths = jax.tree_util.tree_leaves_with_path(with_phases)
  for (path, left), right in zip(paths, jax.tree.leaves(without)):
    name = jax.tree_util.keystr(path)
    if "prior_probs" in name:
      np.testing.assert_array_max_ulp(np.asarray(left), np.asarray(right), maxulp=4)
    else:
      np.testing.assert_array_equal(np.asarray(left), np.asarray(right), err_msg=name)


def _stretches(search, reused=False):
  plan = plan_for(search.config, search.model)
  return phases.stretches(plan, opening.width(plan, reused))


def test_the_stretches_of_sequential_halving_and_where_there_are_none():
  game, estimator = hashed.make(16), hashed.estimator(16)
  search = js.policies.gumbel(game, estimator, num_simulations=32,
                              max_num_considered_actions=16, batched_phases=True)
  assert [(s.start, s.length, s.level, s.width) for s in _stretches(search)] == [
      (16, 8, 1, 16), (24, 4, 2, 8), (28, 4, 3, 4)]
  assert _stretches(search, reused=True) == ()  # a kept root: no opening, no schedule
  longer = js.policies.gumbel(game, estimator, num_simulations=128,
                              max_num_considered_actions=16, batched_phases=True)
  assert [(s.start, s.length, s.level, s.width) for s in _stretches(longer)] == [
      (16, 16, 1, 16), (32, 8, 2, 16), (40, 8, 3, 8), (48, 8, 4, 8)]  # the first four
  off = js.policies.gumbel(game, estimator, num_simulations=32)
  assert _stretches(off) == ()  # the default
  puct = js.policies.puct(game, estimator, num_simulations=32, batched_phases=True)
  assert _stretches(puct) == ()  # no root rule
  family = garnet.make_family(2, 4, 3, 2, 3, seed=1)  # two outcomes per action
  chance = js.policies.gumbel(family.game, garnet.estimator(family), num_simulations=12,
                              batched_phases=True)
  assert _stretches(chance) == ()
  with pytest.raises(TypeError, match="batched_phases"):
    js.search.LoopOptions(batched_phases="yes")


@pytest.mark.parametrize("num_simulations, considered, options", [
    (32, 16, {}),
    (40, 4, {"num_slots": 5, "max_depth": 3}),  # slot cuts, walks stopped by the depth limit
])
def test_the_phases_build_the_loops_tree(num_simulations, considered, options):
  num_actions = 16 if considered == 16 else 7
  game = hashed.make(num_actions, seed=3)
  roots = hashed.distinct_roots(game, 5)
  batched, looped = _trees(game, hashed.estimator(num_actions), roots,
                           num_simulations=num_simulations,
                           max_num_considered_actions=considered, **options)
  assert np.all(np.asarray(batched.num_nodes) > considered + 1)
  _assert_same(batched, looped)


def test_the_phases_with_fewer_legal_moves_and_a_finished_game_under_vmap():
  """Roots with fewer legal moves than the full opening sit the stretches out and run their
  simulations in the loop; a won game's root does not walk."""
  roots = stack_states([tictactoe.state_from_moves(m) for m in (
      [], [4, 0], [], [0, 1, 2, 4, 3], [0, 3, 1, 4, 2])])
  roots = jax.tree.map(lambda x: jnp.stack([x, x]), roots)  # [2, 5]
  batched, looped = _trees(tictactoe.GAME, js.estimators.uniform(), roots, batched_over=2,
                           num_simulations=24, max_num_considered_actions=16)
  assert np.all(np.asarray(batched.nodes.visits[:, :, 0]) == 25)
  _assert_same(batched, looped)


def test_a_drawing_estimator_gets_a_stretchs_keys_by_candidate():
  """The estimator's keys follow the candidates, not the picks: a valid search of the same
  size, with other draws than the loop's."""
  base = hashed.estimator(8)

  def noisy(params, key, states):
    out = base(params, key, states)
    return out.replace(value=out.value + jax.random.normal(key, out.value.shape))

  game = hashed.make(8, seed=1)
  batched, looped = _trees(game, noisy, hashed.distinct_roots(game, 3), num_simulations=20,
                           max_num_considered_actions=8)
  assert np.all(np.asarray(batched.num_nodes) == 21)
  assert np.all(np.asarray(batched.nodes.visits[:, 0]) == 21)
  assert not np.array_equal(np.asarray(batched.nodes.value), np.asarray(looped.nodes.value))


def test_the_phases_walk_into_finished_games():
  """Positions five moves from the end, every move considered: the stretches' walks reach won
  and drawn games (terminal leaves, re-backed values) as the loop's do."""
  roots = stack_states([tictactoe.state_from_moves(m) for m in (
      [0, 4, 8, 2], [4, 0, 2, 6], [1, 4, 7, 3], [0, 1, 3, 4])])
  batched, looped = _trees(tictactoe.GAME, js.estimators.uniform(), roots,
                           num_simulations=40, max_num_considered_actions=5)
  terminal = np.asarray(batched.nodes.terminal) & (
      np.arange(batched.nodes.terminal.shape[1]) < np.asarray(batched.num_nodes)[:, None])
  assert terminal.any(axis=1).all()
  _assert_same(batched, looped)
