"""The solver's alternation of Thompson-AVTS and the proof rule as
``jaxsearch bench rules`` reproduces it (``solver_alternating``): the simulation schedule
matches ``jaxsearch.guessing.solve(..., proof_every=k)`` (every k-th chunk by the proof rule,
Thompson sampling first), checked with stand-in searches that only record who ran."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch.app.benchmarks import rules as bench


class _Stub:
  """A stand-in search: its "tree" is a counter of simulations; it reports its own tag."""

  def __init__(self, tag):
    self.tag = tag

  def __call__(self, params, key, roots, tree):
    return tree + 1, self.tag


def _schedule(block, every, steps):
  alternating = bench.Alternating(_Stub(0), _Stub(1), block, every)

  def step(search, tree, key):
    tree, tag = search(None, key, None, tree)
    return tree, (tree, jnp.int32(tag))

  keys = jax.random.split(jax.random.key(0), steps)
  tree, (counts, tags) = jax.jit(lambda k: alternating.scan(step, jnp.int32(0), k))(keys)
  return alternating, int(tree), np.asarray(counts), np.asarray(tags)


@pytest.mark.parametrize("block,every,steps", [(4, 2, 19), (1, 2, 6), (3, 3, 20), (2, 1, 5)])
def test_alternating_schedule_matches_the_solver(block, every, steps):
  alternating, _, counts, tags = _schedule(block, every, steps)
  assert counts.tolist() == list(range(1, steps + 1))  # one simulation a step, in order
  # The solver's loop: chunk c (1-based) of `block` simulations runs the proof rule where
  # c % proof_every == 0.
  expected = [int(((i // block) + 1) % every == 0) for i in range(steps)]
  assert tags.tolist() == expected
  assert [int(alternating.uses_proof(i)) for i in range(steps)] == expected
  if every > 1:
    assert tags[:block].tolist() == [0] * min(block, steps)  # Thompson sampling first


def test_alternating_rejects_empty_blocks():
  with pytest.raises(ValueError):
    bench.Alternating(_Stub(0), _Stub(1), 0, 2)
