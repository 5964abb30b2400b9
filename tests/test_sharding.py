"""Sharding the batch over devices (``jaxsearch.sharding``, ``devices=``): bit-identical
results on 1 and 8 devices (2 and 4 with ``-m slow``) for the same key, batch independence across shards, clear
errors, and a data-parallel training step whose gradient reduction equals one device's.

Runs on 8 simulated CPU devices (``--xla_force_host_platform_device_count=8``, set by
``tests/conftest.py`` before JAX starts). Every search configuration is compiled once
(``functools.lru_cache``); each device count is one more compile.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import linen as nn

import jaxsearch as js
from jaxsearch.games import garnet, hashed
from jaxsearch import sharding
from jaxsearch.game import per_item_keys

import bit_exact

pytestmark = pytest.mark.skipif(
    jax.device_count() < 8,
    reason="needs 8 devices: XLA_FLAGS=--xla_force_host_platform_device_count=8 before JAX "
           "starts (tests/conftest.py sets it)")

FAMILY = garnet.make_family(8, num_states=6, num_actions=4, branching=2, horizon=3, seed=3)
ESTIMATOR = garnet.estimator(FAMILY, bias=0.2, noise=0.3, seed=1)
B = 16


def _roots(shift=0):
  """``B = 16`` roots: two per member, at state ``(b + shift) % S``."""
  b = np.arange(B)
  return garnet.State(state=jnp.asarray((b + shift) % FAMILY.num_states, jnp.int32),
                      time=jnp.asarray(b % 2, jnp.int32),
                      mdp=jnp.asarray(b % FAMILY.num_members, jnp.int32))


@functools.lru_cache(maxsize=None)
def _puct(devices):
  """PUCT with everything that draws per-root randomness: Dirichlet root noise, actions
  sampled at temperature 1 and sampled chance outcomes."""
  search = js.policies.puct(FAMILY.game, ESTIMATOR, num_simulations=24, c=1.5,
                            dirichlet_fraction=0.25, temperature=1.0, outcome_rule="sample",
                            devices=devices)
  return bit_exact.jit(search)


@functools.lru_cache(maxsize=None)
def _avts(devices):
  """AVTS: Bellman backup, Thompson sampling (a key per root and level), widening."""
  return bit_exact.jit(js.policies.avts(FAMILY.game, ESTIMATOR, num_simulations=24,
                                  devices=devices))


def _assert_identical(a, b):
  leaves_a = jax.tree_util.tree_leaves_with_path(a)
  leaves_b = jax.tree.leaves(b)
  assert len(leaves_a) == len(leaves_b)
  for (path, x), y in zip(leaves_a, leaves_b):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y),
                                  err_msg=jax.tree_util.keystr(path))


@pytest.mark.parametrize("count", [pytest.param(2, marks=pytest.mark.slow),
                                   pytest.param(4, marks=pytest.mark.slow), 8])
def test_puct_is_bit_identical_on_any_number_of_devices(count):
  key = jax.random.PRNGKey(11)
  reference = _puct(None)(None, key, _roots())
  sharded = _puct(count)(None, key, _roots())
  assert sharded.tree.nodes.value.sharding.spec == jax.sharding.PartitionSpec("batch")
  assert len(sharded.tree.nodes.value.sharding.device_set) == count
  _assert_identical(reference, sharded)
  # The randomness is per root, not per shard: rows in different shards with the same root
  # would otherwise repeat each other's draws.
  assert len({tuple(np.asarray(sharded.visit_counts[b])) for b in range(B)}) > B // 2


@pytest.mark.slow
def test_avts_on_a_garnet_family_is_bit_identical_on_1_and_8_devices():
  key = jax.random.PRNGKey(5)
  reference = _avts(None)(None, key, _roots())
  sharded = _avts(8)(None, key, _roots())
  _assert_identical(reference, sharded)
  assert reference.root_bound is not None and int(reference.tree.num_nodes.min()) > 10
  # Another key gives other trees (the equality above is not vacuous).
  other = _avts(8)(None, jax.random.PRNGKey(7), _roots())
  assert not np.array_equal(np.asarray(other.tree.slots.visits),
                            np.asarray(sharded.tree.slots.visits))


def test_gumbel_and_its_batched_first_phase_are_bit_identical_on_1_and_8_devices():
  """Each shard takes its trees' first phase in one step (``jaxsearch.search.opening``)."""
  game = hashed.make(8, seed=2)
  roots = hashed.distinct_roots(game, B)
  key = jax.random.PRNGKey(9)
  reference, sharded = (
      bit_exact.jit(js.policies.gumbel(game, hashed.estimator(8), num_simulations=12,
                                 max_num_considered_actions=4, devices=devices))(None, key, roots)
      for devices in (None, 8))
  _assert_identical(reference, sharded)
  assert np.all(np.asarray(sharded.tree.num_nodes) == 13)


def test_a_tree_does_not_depend_on_its_neighbours_in_other_shards():
  key = jax.random.PRNGKey(3)
  base = _avts(8)(None, key, _roots())
  moved_roots = _roots(shift=1)
  keep = np.arange(B) % 4 == 0  # rows 0, 4, 8, 12: every other shard keeps one root
  mixed = jax.tree.map(lambda a, b: jnp.where(keep, a, b), _roots(), moved_roots)
  moved = _avts(8)(None, key, mixed)
  kept = np.flatnonzero(keep)
  _assert_identical(jax.tree.map(lambda x: x[kept], base), jax.tree.map(lambda x: x[kept], moved))
  assert not np.array_equal(np.asarray(base.tree.nodes.state.state[~keep]),
                            np.asarray(moved.tree.nodes.state.state[~keep]))


def test_init_tree_is_placed_like_the_search():
  search = js.policies.avts(FAMILY.game, ESTIMATOR, num_simulations=24, devices=8)
  tree = search.init_tree(None, jax.random.PRNGKey(0), _roots())
  assert tree.nodes.value.sharding.spec == jax.sharding.PartitionSpec("batch")
  np.testing.assert_array_equal(np.asarray(tree.num_nodes), 1)
  # Root slots hold the estimator's q̂1 of each root, best first (widening order).
  q1 = np.asarray(ESTIMATOR(None, None, _roots()).action_values)
  np.testing.assert_allclose(np.asarray(tree.slots.action_values()[:, 0]), -np.sort(-q1, -1),
                             rtol=1e-6)


def test_bad_device_options_raise_clear_errors():
  search = js.policies.puct(FAMILY.game, ESTIMATOR, num_simulations=4, devices=8)
  odd = jax.tree.map(lambda x: x[:12], _roots())
  with pytest.raises(ValueError, match=r"B=12 is not divisible by the 8 devices"):
    jax.eval_shape(search, None, jax.random.PRNGKey(0), odd)
  with pytest.raises(ValueError, match="jax.device_count"):
    js.policies.puct(FAMILY.game, ESTIMATOR, num_simulations=4, devices=jax.device_count() + 1)
  with pytest.raises(ValueError, match="between 1"):
    sharding.resolve_devices(0)
  with pytest.raises(TypeError, match="jax.Device"):
    sharding.resolve_devices(["cpu:0"])
  with pytest.raises(ValueError, match="twice"):
    sharding.resolve_devices([jax.devices()[0]] * 2)
  assert sharding.resolve_devices(None) is None
  assert sharding.resolve_devices(jax.devices()[:3]) == tuple(jax.devices()[:3])


def test_shard_batch_numbers_items_globally():
  """A generic batch-first function (here: one normal draw per row from per-item keys) gives
  the same rows on 1, 2 and 8 devices; its output is split along the batch."""

  def draw(key, x):
    return x + jax.vmap(jax.random.normal)(per_item_keys(key, x.shape[0]))

  x = jnp.arange(16, dtype=jnp.float32)
  key = jax.random.PRNGKey(0)
  reference = np.asarray(bit_exact.jit(draw)(key, x))
  for count in (2, 8):
    out = sharding.shard_batch(draw, count, batch_argnums=(1,))(key, x)
    assert len(out.sharding.device_set) == count
    np.testing.assert_array_equal(np.asarray(out), reference)
  placed = sharding.put_batch(x, 8)
  assert len(placed.addressable_shards) == 8 and placed.addressable_shards[0].data.shape == (2,)


class _Tiny(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.Dense(1)(nn.tanh(nn.Dense(8)(x)))[..., 0]


def _train_step(optimizer):
  model = _Tiny()

  def step(state, batch):
    params, opt_state = state
    inputs, targets = batch

    def loss_fn(p):
      return jnp.mean((model.apply(p, inputs) - targets) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), (loss, grads)

  return model, step


def test_data_parallel_step_reduces_gradients_like_one_device():
  optimizer = optax.adam(1e-2)
  model, step = _train_step(optimizer)
  rng = np.random.default_rng(0)
  inputs = jnp.asarray(rng.normal(size=(32, 3)), jnp.float32)
  targets = jnp.asarray(rng.normal(size=(32,)), jnp.float32)
  params = model.init(jax.random.PRNGKey(0), inputs[:1])
  state = (params, optimizer.init(params))
  single = bit_exact.jit(step)
  parallel = sharding.data_parallel(step, 8)
  batch = sharding.put_batch((inputs, targets), 8)
  assert len(batch[0].addressable_shards) == 8
  one, many = state, state
  for _ in range(3):
    one, (loss_one, grads_one) = single(one, (inputs, targets))
    many, (loss_many, grads_many) = parallel(many, batch)
    np.testing.assert_allclose(float(loss_many), float(loss_one), rtol=1e-6)
    for a, b in zip(jax.tree.leaves(grads_many), jax.tree.leaves(grads_one)):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
  for a, b in zip(jax.tree.leaves(many), jax.tree.leaves(one)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
  # The parameters come back replicated on all 8 devices.
  leaf = jax.tree.leaves(many[0])[0]
  assert leaf.sharding.is_fully_replicated and len(leaf.sharding.device_set) == 8
  # The reduction matters: one shard's gradient (its 4 rows alone) is not the batch's.
  _, (_, shard_grads) = single(state, (inputs[:4], targets[:4]))
  _, (_, full_grads) = single(state, (inputs, targets))
  assert not np.allclose(np.asarray(jax.tree.leaves(shard_grads)[0]),
                         np.asarray(jax.tree.leaves(full_grads)[0]), rtol=1e-3)


@pytest.mark.slow
def test_solve_is_identical_on_two_devices():
  """``solve(devices=2)``: Mastermind 2×3 after a fixed first guess, every feedback's
  sub-problem in one batch, the same figures and trees as on one device."""
  from jaxsearch.games import mastermind
  from jaxsearch import guessing as guessing_lib
  puzzle = mastermind.puzzle(2, 3)
  outcomes, states = guessing_lib.opening_roots(puzzle, "12")
  states = states[:len(states) // 2 * 2]
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  kwargs = dict(max_simulations=64, chunk=32, max_nodes=2000, seconds=600)
  found_one = guessing_lib.solve(puzzle, roots, **kwargs)
  found_two = guessing_lib.solve(puzzle, roots, devices=2, **kwargs)
  _assert_identical(found_one.trees, found_two.trees)
  assert found_one.policies == found_two.policies
  np.testing.assert_array_equal(found_one.bound, found_two.bound)
