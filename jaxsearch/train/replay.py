"""A replay buffer held as device arrays: fixed capacity ``C``, FIFO, jitted add and sample.

    buffer = replay.init(capacity, example)            # example: one unbatched Sample
    buffer = jax.jit(replay.add)(buffer, rows, mask)   # rows: Sample [R, ...], mask bool[R]
    batch = jax.jit(replay.sample, static_argnums=2)(buffer, key, 256)
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Sample:
  """One training position (unbatched; leading ``[R]`` or ``[C]`` when batched).

  Attributes:
    obs: ``f32[*obs_shape]`` the network input (mover's view).
    policy: ``f32[A]`` the policy target (the search's visit distribution), sums to 1.
    legal: ``bool[A]`` legal actions (the loss's softmax runs over them).
    value: ``f32[]`` the value target ``z`` (mover's view).
    action_values: ``f32[A]`` action-value target (the search's q̂3; NaN for actions the
      search did not visit: no target), or ``None``.
  """

  obs: jax.Array
  policy: jax.Array
  legal: jax.Array
  value: jax.Array
  action_values: Optional[jax.Array] = None


@struct.dataclass
class Buffer:
  """A FIFO ring of samples.

  Attributes:
    data: :class:`Sample` with leading ``[C]``.
    next: ``i32[]`` where the next row is written.
    size: ``i32[]`` rows held (``<= C``).
    added: ``i32[]`` rows ever added (mod 2³¹).
  """

  data: Sample
  next: jax.Array
  size: jax.Array
  added: jax.Array

  @property
  def capacity(self) -> int:
    return self.data.value.shape[0]


def init(capacity: int, example: Sample) -> Buffer:
  """An empty buffer of ``capacity`` rows shaped like ``example`` (one unbatched sample)."""
  if not isinstance(capacity, int) or capacity < 1:
    raise ValueError(f"capacity must be a positive int, got {capacity!r}")
  data = jax.tree.map(
      lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example)
  zero = jnp.zeros((), jnp.int32)
  return Buffer(data=data, next=zero, size=zero, added=zero)


def add(buffer: Buffer, rows: Sample, mask: jax.Array) -> Buffer:
  """Appends the rows where ``mask`` (``bool[R]``) holds, in order, overwriting the oldest.

  If more than ``C`` rows are added at once, the last ``C`` of them are kept.
  """
  capacity = buffer.capacity
  mask = jnp.asarray(mask, bool)
  count = jnp.sum(mask, dtype=jnp.int32)
  order = jnp.cumsum(mask, dtype=jnp.int32) - 1  # position among the added rows
  # Rows that would be overwritten by later rows of the same call are dropped.
  keep = mask & (order >= count - capacity)
  index = jnp.where(keep, (buffer.next + order) % capacity, capacity)  # capacity = dropped
  data = jax.tree.map(lambda old, new: old.at[index].set(new.astype(old.dtype), mode="drop"),
                      buffer.data, rows)
  return Buffer(data=data, next=(buffer.next + count) % capacity,
                size=jnp.minimum(buffer.size + count, capacity), added=buffer.added + count)


def sample(buffer: Buffer, key: jax.Array, batch_size: int) -> Sample:
  """``batch_size`` rows drawn uniformly with replacement from the rows held (row 0 of an
  empty buffer, all zeros, when nothing was added yet)."""
  index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
  return jax.tree.map(lambda x: x[index], buffer.data)
