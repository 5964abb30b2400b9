"""The solver's regrowth (the proven roots leave the batch, the open ones move into larger
trees) made array by array (:mod:`jaxsearch.solve.regrowth`): the same trees, bit for bit,
as the regrowth in one program, the old arrays freed as it goes, one compiled step per tree
size.

Tiny Mastermind, as tests/test_solve_resume.py: 4×4 after the first guess 1122, 12
sub-problems in trees of 60 nodes, one simulation per chunk; the trees fill up after 7
simulations, the 9 proven sub-problems leave the batch and the 3 open ones move into larger
trees."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import guessing as guessing_lib
from jaxsearch.games import mastermind
from jaxsearch.solve import SolveOptions, chunked, regrowth

SMALL = dict(first="1122", chunk=1, max_nodes=720, num_slots=None, bound_slots=0,
             seconds=600.0, max_simulations=10, certify_seconds=0)


@pytest.fixture(scope="module")
def small():
  return mastermind.puzzle(4, 4)


def test_array_by_array_gives_the_one_program_trees(small, monkeypatch):
  """Every figure and every array of every tree as the regrowth in one program gave (the
  open trees larger, the proven ones cut to what they allocated); each tree size's step
  compiled once."""
  chunked._PROGRAMS.clear()
  grown = []
  real = regrowth.grow_leafwise

  def counted(tree, spec, keep):
    grown.append(spec)
    return real(tree, spec, keep)

  monkeypatch.setattr(regrowth, "grow_leafwise", counted)
  leafwise = guessing_lib.solve_puzzle(small, **SMALL)
  assert len(grown) == 1, "no regrowth, or not array by array"
  open_trees = [t for t in leafwise.trees if t.nodes.visits.shape[1] == 240]
  assert len(open_trees) == 3  # 720 nodes shared out between the 3 open ones
  for tree in leafwise.trees:  # the proven ones: what they allocated, of their 60 and 30
    if tree.nodes.visits.shape[1] != 240:
      assert tree.nodes.visits.shape[1] == int(tree.num_nodes[0]) <= 60
      assert tree.chance.node.shape[1] == int(tree.num_chance[0]) <= 30
  steps = [programs[1]._cache_size() for _, programs in chunked._PROGRAMS.values()]
  assert len(steps) >= 2 and max(steps) == 1, steps  # one compile per tree size
  monkeypatch.setattr(regrowth, "fresh_spec", lambda tree, shapes: None)
  whole = guessing_lib.solve_puzzle(small, **SMALL)
  assert len(grown) == 1  # the one-program path this time
  for name in ("simulations", "nodes", "bound_total", "upper_total", "proven_given_first",
               "subproblems", "policy"):
    assert getattr(leafwise, name) == getattr(whole, name), name
  a, b = jax.tree.leaves(whole.trees), jax.tree.leaves(leafwise.trees)
  assert len(a) == len(b)
  for x, y in zip(a, b):
    assert x.dtype == y.dtype
    np.testing.assert_array_equal(x, y)


def test_each_old_array_is_freed_once_its_larger_one_is_made(small):
  """The old trees' arrays are deleted as the larger ones are made (no second set of trees
  is held); the larger trees hold the old rows ``keep`` at the same indices, fresh entries
  after them, as the search's initialiser makes them."""
  options = SolveOptions.from_keywords(chunk=1, max_nodes=60, num_slots=None,
                                                    bound_slots=0)
  _, states = guessing_lib.opening_roots(small, "1122")
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  batch = int(roots.remaining.shape[0])
  loop = chunked.ChunkedSearch(small, roots, -np.ones(batch), options)
  key = jax.random.PRNGKey(0)
  old = loop.init(loop.tables, key, roots)
  keep = np.array([1, 4, 7])
  init, _, _ = loop.programs(options.with_capacity(max_nodes=240, max_chance=240))
  kept_roots = jax.tree.map(lambda x: x[keep], roots)
  shapes = jax.eval_shape(init, loop.tables, key, kept_roots)
  spec = regrowth.fresh_spec(old, shapes)
  assert spec is not None
  expected = chunked._regrow(old, init(loop.tables, key, kept_roots), jnp.asarray(keep))
  expected = jax.tree.map(np.asarray, expected)
  leaves = jax.tree.leaves(old)
  larger = regrowth.grow_leafwise(old, spec, jnp.asarray(keep))
  assert all(leaf.is_deleted() for leaf in leaves)
  for x, y in zip(jax.tree.leaves(expected), jax.tree.leaves(larger), strict=True):
    np.testing.assert_array_equal(x, np.asarray(y))
  # Refused where allocating would not give the initialiser's shapes and dtypes.
  visits = shapes.nodes.visits
  other = shapes.replace(nodes=shapes.nodes.replace(
      visits=jax.ShapeDtypeStruct(visits.shape, jnp.int16)))
  assert regrowth.fresh_spec(larger, other) is None


def test_kept_rows_are_the_proven_rows_cut_to_what_they_allocated(small):
  """The proven roots' trees kept on the host: each a batch of one, its node arrays cut to
  its nodes, its chance records to its records, its per-tree figures whole; equal to its
  row there, and as many bytes as :func:`regrowth.kept_bytes` says."""
  options = SolveOptions.from_keywords(chunk=1, max_nodes=60, num_slots=None, bound_slots=0)
  _, states = guessing_lib.opening_roots(small, "1122")
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  loop = chunked.ChunkedSearch(small, roots, -np.ones(len(states)), options)
  key = jax.random.PRNGKey(0)
  loop.begin(loop.init(loop.tables, key, roots))
  for chunk in range(3):
    loop.advance(key, chunk, proof=False)
  trees, rows = loop.tree, np.array([0, 5, 11])
  nodes, chance = loop.num_nodes, loop.num_chance
  assert np.array_equal(nodes, np.asarray(trees.num_nodes)) and nodes.min() > 1
  kept = regrowth.kept_rows(trees, rows, nodes, chance)
  assert sum(t.nbytes() for t in kept) == regrowth.kept_bytes(trees, rows, nodes, chance)
  for row, tree in zip(rows, kept):
    assert tree.nodes.visits.shape == (1, nodes[row])
    assert tree.chance.prob.shape == (1, chance[row], trees.num_outcomes)
    for whole, one in zip(jax.tree.leaves(trees), jax.tree.leaves(tree), strict=True):
      assert isinstance(one, np.ndarray)
      head = tuple(slice(0, size) for size in one.shape[1:])
      np.testing.assert_array_equal(one[0], np.asarray(whole)[row][head])
