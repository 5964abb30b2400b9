"""Moving a batch of trees into larger ones without holding two sets, and the proven roots'
trees kept at the size they use.

When every open tree of the solver's batch is full, the proven roots leave the batch and the
open ones move into larger trees (:meth:`jaxsearch.solve.chunked.ChunkedSearch.regrow`).
Done as one program, that holds the old trees and the new ones at once: twice the trees,
the run's peak (Wordle after ``tarse``: 0.65 GB more for a moment). Here it goes array by
array (:func:`grow_leafwise`): each of the larger trees' arrays is made, filled with the old
one's rows, and the old array freed before the next, so a regrowth holds one set of trees
and one array more.

The larger trees' arrays are those of fresh trees (:func:`jaxsearch.tree.allocate`) with the
old trees' contents written over their leading part. A fresh tree from the search's
initialiser differs from an allocated one only in its roots (node 0 and the per-tree
counters), which the old trees' rows overwrite; :func:`fresh_spec` checks that the two agree
in structure, shapes and dtypes before it is used (tests/test_solve_regrowth.py compares the
results with the one-program regrowth bit for bit).

A proven root's tree never changes again: it is kept on the host cut to the nodes and chance
records it allocated (:func:`kept_rows`; Wordle after ``tarse``: 0.14 GB instead of the
0.59 GB of its 144 proven trees' arrays). The search allocates both in order and never writes
past them (:mod:`jaxsearch.solve.checkpoint` saves trees so too), and every reader of a tree
(:class:`jaxsearch.solve.tree_reader.TreeReader`: the policy's extraction, the certificates)
reads only those.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import jax
import numpy as np

from jaxsearch import tree as tree_lib


def _spec_of(tree, batch: int, max_nodes: int, max_chance: int) -> tuple:
  """The hashable arguments of :func:`jaxsearch.tree.allocate` that make empty trees with
  ``tree``'s parts and state layout, ``batch`` trees of ``max_nodes`` nodes and
  ``max_chance`` chance records."""
  states, treedef = jax.tree.flatten(tree.nodes.state)
  layout = tuple((tuple(x.shape[2:]), np.dtype(x.dtype).str) for x in states)
  return (batch, max_nodes, tree.num_slots, tree.num_outcomes, treedef, layout,
          tree.num_buckets if tree.debias is not None else None,
          tree.slot_bounds is not None, tree.entropy is not None, max_chance,
          tree.slots.prior_probs is not None, tree.slots.action is not None,
          tree.slots.action_value is not None)


def _allocate(spec: tuple):
  """Empty trees of ``spec`` (:func:`_spec_of`)."""
  (batch, max_nodes, num_slots, num_outcomes, treedef, layout, num_buckets, slot_bounds,
   entropy, max_chance, prior_probs, slot_actions, action_values) = spec
  state = jax.tree.unflatten(treedef, [np.zeros(shape, dtype) for shape, dtype in layout])
  return tree_lib.allocate(batch, max_nodes, num_slots, num_outcomes, state,
                           num_buckets=num_buckets, slot_bounds=slot_bounds, entropy=entropy,
                           max_chance=max_chance, prior_probs=prior_probs,
                           slot_actions=slot_actions, action_values=action_values)


def fresh_spec(tree, fresh_shapes) -> Optional[tuple]:
  """The spec of empty trees shaped as ``fresh_shapes`` (``jax.eval_shape`` of the search's
  initialiser for the larger trees) with ``tree``'s parts, or ``None`` where allocating them
  would not give that structure, those shapes and dtypes (then the regrowth is done in one
  program)."""
  spec = _spec_of(tree, int(fresh_shapes.num_nodes.shape[0]),
                  int(fresh_shapes.nodes.visits.shape[1]),
                  int(fresh_shapes.chance.node.shape[1]))
  try:
    allocated = jax.eval_shape(functools.partial(_allocate, spec))
  except (TypeError, ValueError):
    return None
  if jax.tree.structure(allocated) != jax.tree.structure(fresh_shapes):
    return None
  same = all(a.shape == b.shape and a.dtype == b.dtype for a, b in
             zip(jax.tree.leaves(allocated), jax.tree.leaves(fresh_shapes)))
  return spec if same else None


@functools.partial(jax.jit, static_argnums=(0, 1))
def _grown_leaf(spec: tuple, index: int, old: jax.Array, keep: jax.Array) -> jax.Array:
  """Array ``index`` of empty trees of ``spec``, its leading part the rows ``keep`` of the
  old trees' array ``old`` (every index stays valid, the rest is fresh)."""
  fresh = jax.tree.leaves(_allocate(spec))[index]
  old = old[keep]
  return fresh.at[tuple(slice(0, size) for size in old.shape)].set(old)


def grow_leafwise(tree, spec: tuple, keep: jax.Array):
  """The larger trees of ``spec`` (:func:`fresh_spec`) holding ``tree``'s rows ``keep``
  (``int[B']``), made one array at a time, each of ``tree``'s arrays deleted once its
  larger one is made: the caller must hold no other reference to ``tree``'s arrays.

  Returns:
    The larger trees (``B'`` rows): equal, array for array, to fresh trees of the search's
    initialiser with ``tree``'s rows written over them.
  """
  leaves, treedef = jax.tree.flatten(tree)
  del tree
  grown: list[Any] = []
  done: dict = {}  # an array held twice is grown once
  for index, leaf in enumerate(leaves):
    if id(leaf) not in done:
      done[id(leaf)] = _grown_leaf(spec, index, leaf, keep)
      jax.block_until_ready(done[id(leaf)])
      if isinstance(leaf, jax.Array) and not leaf.is_deleted():
        leaf.delete()
    grown.append(done[id(leaf)])
    leaves[index] = None
  return jax.tree.unflatten(treedef, grown)


def _axis_of_leaves(tree) -> dict:
  """``{id(array): axis}`` of ``tree``'s arrays: ``"nodes"`` (``[B, N, ...]``), ``"chance"``
  (``[B, C, ...]``), or ``None`` (``[B]``, one figure per tree)."""
  axes = {id(x): "chance" for x in jax.tree.leaves(tree.chance)}
  for x in jax.tree.leaves(tree):
    if id(x) not in axes:
      axes[id(x)] = "nodes" if np.ndim(x) >= 2 else None
  return axes


def kept_bytes(tree, rows: np.ndarray, num_nodes: np.ndarray,
               num_chance: np.ndarray) -> int:
  """Bytes of the rows ``rows`` of ``tree`` as :func:`kept_rows` keeps them: cut to their
  ``num_nodes`` nodes and ``num_chance`` chance records (``int[B]``, per row of ``tree``)."""
  axes = _axis_of_leaves(tree)
  rows = np.asarray(rows, np.int64)
  count = {"nodes": int(np.sum(num_nodes[rows])), "chance": int(np.sum(num_chance[rows])),
           None: len(rows)}
  return sum(np.dtype(x.dtype).itemsize * int(np.prod(x.shape[1 if axes[id(x)] is None
                                                              else 2:]))
             * count[axes[id(x)]] for x in jax.tree.leaves(tree))


def kept_rows(tree, rows: np.ndarray, num_nodes: np.ndarray, num_chance: np.ndarray) -> list:
  """The trees of rows ``rows`` (``int[R]``) of ``tree``, each a batch of one tree of numpy
  arrays cut to the nodes and chance records it allocated (``num_nodes``, ``num_chance``:
  ``int[B]`` per row of ``tree``): all that any reader of the tree reads. One read per
  array of ``tree`` (its rows ``rows``, gathered where they are), each cut row a copy."""
  rows = np.asarray(rows, np.int64)
  axes = _axis_of_leaves(tree)
  used = {"nodes": num_nodes, "chance": num_chance}
  leaves, treedef = jax.tree.flatten(tree)
  kept: list = [[] for _ in rows]
  for leaf in leaves:
    host = np.asarray(leaf[rows]) if isinstance(leaf, jax.Array) else np.asarray(leaf)[rows]
    axis = axes[id(leaf)]
    for j, row in enumerate(rows):
      part = host[j:j + 1] if axis is None else host[j:j + 1, :int(used[axis][row])]
      kept[j].append(np.array(part))  # a copy: no view of the gathered rows
  return [jax.tree.unflatten(treedef, one) for one in kept]
