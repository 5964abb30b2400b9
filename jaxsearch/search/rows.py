"""Reading and writing one entry per tree of a batched tree array, by flat index.

``array[batch_ids, node]`` and ``array.at[batch_ids, node].set(x)`` index two dimensions at
once. XLA's CPU backend runs a gather or scatter with one index dimension over a
``[B·N, ...]`` view faster than the same with two, also where the gather is fused into the
elementwise work that reads it (the search's A/B figures are in ``docs/benchmarks.md``). The
engine's hot paths (the descent's reads, the backup's writes) go through :func:`take` and
:func:`put` (:func:`put_flat`), which keep the semantics of NumPy-style indexing with ``mode="drop"`` writes.
"""

from __future__ import annotations

import math
import jax
import jax.numpy as jnp


def flat_index(shape, *indices, drop: bool = True) -> jax.Array:
  """``i32[B]`` the flat index of entry ``(b, *indices)`` of an array of ``shape``
  (``[B, D1, ..., Dm, ...]``, each index ``i32[B]``) viewed as ``[B·D1·…·Dm, ...]``.

  Negative indices count from the end, as in NumPy. Out-of-range ones are sent past the end
  (``drop=True``), each row to an index of its own, where :func:`put` writes nothing, or
  clamped (``drop=False``, what a gather does). The result's entries are distinct either
  way (one per row), which lets :func:`put_flat` tell XLA that its indices are unique.
  Compute it once where several arrays of one shape are written at the same entries.
  """
  flat = jnp.arange(shape[0], dtype=jnp.int32)
  batch_size = flat.shape[0]
  valid = jnp.ones((batch_size,), bool)
  for size, index in zip(shape[1:], indices):
    index = jnp.asarray(index, jnp.int32)
    index = jnp.where(index < 0, index + size, index)
    if drop:
      valid = valid & (index >= 0) & (index < size)
    else:
      index = jnp.clip(index, 0, size - 1)
    flat = flat * size + index
  if drop:
    past_end = math.prod(shape[:1 + len(indices)]) + jnp.arange(batch_size, dtype=jnp.int32)
    flat = jnp.where(valid, flat, past_end)
  return flat


def flat_view(array: jax.Array, depth: int) -> jax.Array:
  """``array`` ``[B, D1, ..., Ddepth, ...]`` viewed as ``[B·D1·…·Ddepth, ...]`` (a bitcast)."""
  return array.reshape((-1,) + array.shape[1 + depth:])


def take(array: jax.Array, *indices) -> jax.Array:
  """``array[arange(B), *indices]`` (``array`` ``[B, D1, ..., Dm, ...]``, each index
  ``i32[B]``): entry ``b`` of the result is ``array[b, indices[0][b], ...]``, shape
  ``[B, ...]``. Out-of-range indices are clamped, as in a JAX gather."""
  return flat_view(array, len(indices))[flat_index(array.shape, *indices, drop=False)]


def put(array: jax.Array, indices, values, *, add: bool = False) -> jax.Array:
  """``array.at[arange(B), *indices].set(values, mode="drop")`` (``.add`` where ``add``),
  ``indices`` a tuple of ``i32[B]``, ``values`` ``[B, ...]`` or a scalar; out-of-range
  indices write nothing."""
  return put_flat(array, flat_index(array.shape, *indices), values, depth=len(indices),
                  add=add)


def put_flat(array: jax.Array, at: jax.Array, values, *, depth: int,
             add: bool = False) -> jax.Array:
  """:func:`put` at entries whose :func:`flat_index` ``at`` (``i32[B]``, over the first
  ``1 + depth`` dimensions) is already computed: one index for several arrays of one shape.

  The indices are distinct (one entry per row, :func:`flat_index`), and XLA is told so: a
  GPU then writes each entry directly, with no atomic update or sort for repeated indices.
  """
  flat = flat_view(array, depth)
  flat = (flat.at[at].add(values, mode="drop", unique_indices=True) if add
          else flat.at[at].set(values, mode="drop", unique_indices=True))
  return flat.reshape(array.shape)
