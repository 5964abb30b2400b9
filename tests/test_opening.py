"""The batched opening (``jaxsearch.search.opening``): Gumbel MuZero's first phase run as one
step builds the tree the simulation loop builds one simulation at a time."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch import gumbel
from jaxsearch.games import garnet, hashed, stack_states, tictactoe
from jaxsearch.search import opening
from jaxsearch.search.plan import plan_for

import bit_exact

KEY = jax.random.PRNGKey(11)


def _sequential_first_phase(noise, logits, legal, num_considered, num_simulations):
  """The root rule's choices one simulation at a time (σ is 0 before any visit and shared by
  every unvisited slot after)."""
  visits = np.zeros(len(legal), np.int32)
  chosen = []
  count = min(num_considered, int(np.sum(legal)), num_simulations)
  for _ in range(count):
    scores = gumbel.root_scores(noise, logits, jnp.zeros(len(legal)), jnp.asarray(visits),
                                legal, 0)
    slot = int(jnp.argmax(scores))
    chosen.append(slot)
    visits[slot] += 1
  return chosen


@pytest.mark.parametrize("num_considered, num_simulations", [(4, 12), (16, 32), (16, 3)])
def test_gumbel_top_m_is_the_root_rules_first_phase_under_jit_and_vmap(num_considered,
                                                                       num_simulations):
  rng = np.random.default_rng(num_considered + num_simulations)
  batch, num_slots = 6, 9
  noise = rng.gumbel(size=(batch, num_slots)).astype(np.float32)
  logits = rng.normal(size=(batch, num_slots)).astype(np.float32)
  legal = rng.random((batch, num_slots)) < 0.7
  legal[0] = False  # nothing legal: count 0
  legal[1] = True
  logits[2] = -np.inf  # every legal logit -inf: the legal slots in index order
  legal[2, :2] = False
  width = min(num_considered, num_slots, num_simulations)
  top_m = bit_exact.jit(jax.vmap(lambda g, x, l: gumbel.gumbel_top_m(
      g, x, l, num_considered, num_simulations, width)))
  slots, count = top_m(noise, logits, legal)
  assert slots.shape == (batch, width) and slots.dtype == jnp.int32
  for b in range(batch):
    expected = _sequential_first_phase(noise[b], logits[b], legal[b], num_considered,
                                       num_simulations)
    assert int(count[b]) == len(expected)
    assert list(np.asarray(slots[b, :len(expected)])) == expected


def _ttt_roots():
  """Roots with 9, 7, 5 and 4 legal moves and one won game (a root that does not walk)."""
  return stack_states([tictactoe.state_from_moves(m) for m in (
      [], [4, 0], [0, 4, 8, 2], [0, 1, 2, 4, 3], [0, 3, 1, 4, 2])])


def _noisy_hashed(num_actions):
  """The hashed estimator with a value drawn from the key (the key must match too)."""
  base = hashed.estimator(num_actions)

  def estimate(params, key, states):
    out = base(params, key, states)
    return out.replace(value=out.value + jax.random.normal(key, out.value.shape))

  return estimate


def _run(fn, *args):
  return bit_exact.jit(fn)(*args)


def _trees(game, estimator, roots, **options):
  """The trees of a Gumbel search with the batched opening and without."""
  found = []
  for batched in (True, False):
    search = js.policies.gumbel(game, estimator, batched_opening=batched, **options)
    found.append(_run(lambda key, states, s=search: s(None, key, states).tree, KEY, roots))
  return found


def _assert_same(with_opening, without, loose=()):
  """Every leaf equal bit for bit; those named in ``loose`` to within 4 ulp."""
  paths = jax.tree_util.tree_leaves_with_path(with_opening)
  for (path, left), right in zip(paths, jax.tree.leaves(without)):
    name = jax.tree_util.keystr(path)
    if any(part in name for part in loose):
      np.testing.assert_array_max_ulp(np.asarray(left), np.asarray(right), maxulp=4)
    else:
      np.testing.assert_array_equal(np.asarray(left), np.asarray(right), err_msg=name)


def test_the_opening_builds_the_simulations_tree_with_slot_cuts():
  game = hashed.make(7, seed=2)
  roots = hashed.distinct_roots(game, 5)
  opened, looped = _trees(game, hashed.estimator(7), roots, num_simulations=12,
                          max_num_considered_actions=4, num_slots=5, max_depth=6)
  assert np.all(np.asarray(opened.num_nodes) == 13)
  _assert_same(opened, looped)


def test_the_opening_gives_a_drawing_estimator_the_loops_keys():
  """The children get the keys their simulations would have had. The model runs vmapped over
  the m children, and XLA may round a draw's last bit differently for that shape, so values
  match to a few ulp (other keys would change them completely) and the rest bit for bit."""
  game = hashed.make(7, seed=2)
  roots = hashed.distinct_roots(game, 5)
  opened, looped = _trees(game, _noisy_hashed(7), roots, num_simulations=12,
                          max_num_considered_actions=4, num_slots=5, max_depth=6)
  _assert_same(opened, looped, loose=("value",))


def test_the_opening_with_fewer_legal_moves_than_m_and_a_finished_game_under_vmap():
  """Rows whose opening is shorter catch up in extra trips while the others sit them out; a
  won game's root does not walk, and gets its visits in the loop as before. Searches vmapped
  over a batch of batches: the opening runs per inner batch. K = A here: the children's prior
  softmax is reduced over a batch of B·m rows instead of B, which XLA may round differently in
  the last bit; everything else is the same bits."""
  roots = jax.tree.map(lambda x: jnp.stack([x, x]), _ttt_roots())  # [2, 5]
  keys = jax.random.split(KEY, 2)
  found = []
  for batched in (True, False):
    search = js.policies.gumbel(tictactoe.GAME, js.estimators.uniform(), num_simulations=10,
                                max_num_considered_actions=16, batched_opening=batched)
    found.append(_run(jax.vmap(lambda key, states, s=search: s(None, key, states).tree),
                      keys, roots))
  opened, looped = found
  assert np.all(np.asarray(opened.nodes.terminal[:, 4, 0]))
  assert np.all(np.asarray(opened.num_nodes[:, 4]) == 1)
  assert np.all(np.asarray(opened.nodes.visits[:, 4, 0]) == 11)
  _assert_same(opened, looped, loose=("prior_probs",))


def _plan(search):
  return plan_for(search.config, search.model)


def test_the_opening_applies_only_where_it_builds_the_same_tree():
  game = hashed.make(6)
  estimator = hashed.estimator(6)
  gumbel_search = js.policies.gumbel(game, estimator, num_simulations=10,
                                     max_num_considered_actions=4)
  assert opening.width(_plan(gumbel_search), reused=False) == 4
  assert opening.width(_plan(gumbel_search), reused=True) == 0  # a kept root has visits
  few = js.policies.gumbel(game, estimator, num_simulations=3, max_num_considered_actions=16)
  assert opening.width(_plan(few), reused=False) == 3
  off = js.policies.gumbel(game, estimator, num_simulations=10, batched_opening=False)
  assert opening.width(_plan(off), reused=False) == 0
  puct = js.policies.puct(game, estimator, num_simulations=10)
  assert opening.width(_plan(puct), reused=False) == 0  # no root rule
  family = garnet.make_family(2, 4, 3, 2, 3, seed=1)  # two outcomes per action
  chance = js.policies.gumbel(family.game, garnet.estimator(family), num_simulations=6)
  assert opening.width(_plan(chance), reused=False) == 0
  with pytest.raises(TypeError, match="batched_opening"):
    js.search.LoopOptions(batched_opening="yes")


def test_the_mctx_drop_in_opens_with_mctxs_q_transforms_only():
  """``compat.gumbel_muzero_policy`` takes its first phase in one step under mctx's own Q
  transforms (every unvisited action shares one value there) and builds the tree the loop
  builds, bit for bit; a transform of the user's runs every simulation in the loop."""
  import jaxsearch.compat as compat
  from jaxsearch.compat import action_selection, qtransforms

  game = hashed.make(6, seed=4)
  root_fn, recurrent_fn = compat.to_mctx(game, hashed.estimator(6))
  root, _ = root_fn(None, KEY, hashed.distinct_roots(game, 4))

  def own(tree, node):
    return qtransforms.qtransform_completed_by_mix_value(tree, node)

  def policy(qtransform):
    return _run(lambda key, r: compat.gumbel_muzero_policy(
        None, key, r, recurrent_fn, 10, max_num_considered_actions=4,
        qtransform=qtransform).search_tree, KEY, root)

  for qtransform, opens in ((qtransforms.qtransform_completed_by_mix_value, True),
                            (functools.partial(qtransforms.qtransform_completed_by_mix_value,
                                               rescale_values=False), True), (own, False)):
    rule, _ = action_selection.gumbel_rules(num_simulations=10, max_num_considered_actions=4,
                                            qtransform=qtransform)
    assert (rule.opening is not None) == opens
  _assert_same(policy(qtransforms.qtransform_completed_by_mix_value), policy(own))
