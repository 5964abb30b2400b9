"""The engine's flat-index row reads and writes (``jaxsearch.search.rows``) index exactly like
NumPy-style indexing of JAX arrays: negative indices count from the end, reads clamp, writes
drop what is out of range."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsearch.search import rows

_SHAPE = (3, 4, 5, 2)  # [B, N, K, extra]


@st.composite
def _indices(draw, depth):
  """``depth`` index arrays ``i32[B]``, each reaching one past either end of its axis."""
  return tuple(np.array(draw(st.lists(st.integers(-size - 1, size), min_size=_SHAPE[0],
                                      max_size=_SHAPE[0])), np.int32)
               for size in _SHAPE[1:1 + depth])


def _array():
  return jnp.arange(np.prod(_SHAPE), dtype=jnp.float32).reshape(_SHAPE)


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 2), data=st.data())
def test_take_and_put_index_like_numpy_style_indexing(depth, data):
  indices = data.draw(_indices(depth))
  array = _array()
  batch_ids = jnp.arange(_SHAPE[0])
  values = -1.0 - jnp.arange(_SHAPE[0] * int(np.prod(_SHAPE[1 + depth:])),
                             dtype=jnp.float32).reshape((_SHAPE[0],) + _SHAPE[1 + depth:])
  np.testing.assert_array_equal(rows.take(array, *indices), array[(batch_ids,) + indices])
  np.testing.assert_array_equal(rows.put(array, indices, values),
                                array.at[(batch_ids,) + indices].set(values, mode="drop"))
  np.testing.assert_array_equal(rows.put(array, indices, 1.0, add=True),
                                array.at[(batch_ids,) + indices].add(1.0, mode="drop"))


def test_take_and_put_under_jit_and_vmap():
  array = _array()
  node = jnp.array([0, 3, -1], jnp.int32)
  slot = jnp.array([4, 0, 7], jnp.int32)  # 7 is out of range: dropped, clamped to 4 on read
  expected_take = array[jnp.arange(3), node, slot]
  expected_put = array.at[jnp.arange(3), node, slot].add(1.0, mode="drop")
  np.testing.assert_array_equal(jax.jit(rows.take)(array, node, slot), expected_take)
  np.testing.assert_array_equal(
      jax.jit(lambda a, n, s: rows.put(a, (n, s), 1.0, add=True))(array, node, slot),
      expected_put)
  # One precomputed flat index serves every array of the shape.
  at = jax.jit(rows.flat_index, static_argnums=0)(array.shape[:3], node, slot)
  np.testing.assert_array_equal(rows.put_flat(array, at, 1.0, depth=2, add=True), expected_put)
  # A batch of batches: vmapped over a leading axis of two.
  stacked = jnp.stack([array, array + 100.0])
  taken = jax.vmap(rows.take, in_axes=(0, None, None))(stacked, node, slot)
  np.testing.assert_array_equal(taken, jnp.stack([expected_take, expected_take + 100.0]))
  put = jax.vmap(lambda a: rows.put(a, (node, slot), 1.0, add=True))(stacked)
  np.testing.assert_array_equal(put[1], expected_put + 100.0)
  assert float(put[0, 0, 0, 4, 0]) == float(array[0, 0, 4, 0]) + 1.0
  np.testing.assert_array_equal(put[0, 2], array[2])  # slot 7 of 5: nothing written
  assert float(taken[0, 2, 0]) == float(array[2, 3, 4, 0])  # node -1 is the last, slot 7 reads 4
