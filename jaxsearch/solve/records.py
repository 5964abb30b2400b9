"""What the host reads of a solver chunk: one small record, so that the trees stay on the
device from chunk to chunk (:mod:`jaxsearch.solve.chunked`).

A chunk's program returns its trees (donated to the next chunk) and :func:`chunk_record`, one
``i32[6, B]`` array; :func:`read_record` is the chunk's one device-to-host transfer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


# The rows of a chunk's record (chunk_record): what the host reads of a chunk.
RECORD_ROWS = ("value", "bound", "upper", "num_nodes", "num_chance", "present")
_HAS_BOUND, _HAS_UPPER = 1, 2  # bits of the record's "present" row


def chunk_record(out) -> jax.Array:
  """``i32[6, B]``: what the host reads of a chunk (``out``, its ``PolicyOutput``), in one
  array so that a chunk costs one small device-to-host transfer (:data:`RECORD_ROWS`): the
  roots' backed-up values, achievable and optimistic bounds (``f32``, their bits), the
  trees' allocated nodes and chance records, and which bounds the search gives (bits)."""
  batch = out.tree.num_nodes.shape[0]
  missing = jnp.full((batch,), jnp.nan, jnp.float32)

  def bits(values):
    values = missing if values is None else jnp.asarray(values, jnp.float32)
    return jax.lax.bitcast_convert_type(values, jnp.int32)

  present = ((0 if out.root_bound is None else _HAS_BOUND)
             | (0 if out.root_upper is None else _HAS_UPPER))
  return jnp.stack([bits(out.root_value), bits(out.root_bound), bits(out.root_upper),
                    out.tree.num_nodes.astype(jnp.int32), out.tree.num_chance.astype(jnp.int32),
                    jnp.full((batch,), present, jnp.int32)])


def read_record(record) -> dict:
  """The host's copy of a chunk's record (:func:`chunk_record`): the chunk's one
  device-to-host transfer (it waits for the chunk). ``{"value", "bound", "upper": f32[B] or
  None, "num_nodes", "num_chance": i32[B]}``."""
  host = np.asarray(record)
  floats = host[:3].view(np.float32)
  present = int(host[5, 0])
  return {"value": floats[0], "bound": floats[1] if present & _HAS_BOUND else None,
          "upper": floats[2] if present & _HAS_UPPER else None,
          "num_nodes": host[3], "num_chance": host[4]}
