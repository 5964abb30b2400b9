"""The root decision: one strategy per search, composed of what it plays and what it learns."""

import dataclasses
import functools

import jax
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.decision import GumbelRoot, RootDecision
from jaxsearch.enums import PolicyTarget, RootPolicy
from jaxsearch.games import hashed

GAME = hashed.make(6, seed=3)
ESTIMATOR = hashed.estimator(6)
ROOTS = hashed.distinct_roots(GAME, 4)
KEY = jax.random.PRNGKey(5)


def _gumbel(**options):
  return js.policies.gumbel(GAME, ESTIMATOR, num_simulations=16,
                            max_num_considered_actions=4, **options)


def test_each_search_gets_its_decision():
  assert js.policies.puct(GAME, ESTIMATOR, num_simulations=8).decision == RootDecision()
  gumbel = _gumbel().decision
  assert (gumbel.play, gumbel.target) == (RootPolicy.SEQUENTIAL_HALVING, PolicyTarget.IMPROVED)
  assert gumbel.gumbel == GumbelRoot() and gumbel.reads_root_noise
  act = js.policies.pibar(GAME, ESTIMATOR, num_simulations=8, root_policy="pibar",
                          pibar_target=True).decision
  assert (act.play, act.target, act.gumbel) == (RootPolicy.PIBAR, PolicyTarget.PIBAR, None)


def test_a_gumbel_decision_without_a_gumbel_root_is_refused():
  with pytest.raises(ValueError, match="need a Gumbel root"):
    js.policies.puct(GAME, ESTIMATOR, num_simulations=8, root_policy="sequential_halving")
  with pytest.raises(ValueError, match="need a Gumbel root"):
    RootDecision(target="improved")
  with pytest.raises(ValueError, match="temperature must be >= 0"):
    RootDecision(temperature=-1.0)


@functools.lru_cache(maxsize=None)
def _searched():
  """One Gumbel search (π̄ as the target, so both targets are computed), its trees, and the
  root draw and action key it used (drawn as :class:`Search` draws them)."""
  search = _gumbel(pibar_target=True)
  out = jax.jit(search)(None, KEY, ROOTS)
  search_key, action_key = jax.random.split(KEY)
  noise = js.search.draw_root_noise(search.config, jax.random.split(search_key)[0],
                                    jax.tree.leaves(ROOTS)[0].shape[0], search.plan.num_slots)
  return search, out, noise, action_key


def test_gumbel_root_composes_with_the_other_plays_and_targets():
  """The same trees (same key, same draw) under three decisions: Sequential Halving with π′,
  the most visited action, and π̄ as the target."""
  search, learn_pibar, noise, action_key = _searched()
  def decide(**options):  # jitted: op by op, a decision takes seconds
    decision = dataclasses.replace(search.decision, **options)
    return jax.jit(lambda tree: decision(tree, search.plan, action_key, noise))(learn_pibar.tree)

  default = decide(target=PolicyTarget.IMPROVED)
  by_visits = decide(play=RootPolicy.VISITS, target=PolicyTarget.IMPROVED)
  # Visits play: the most visited action (ties by Q), the improved policy still the target.
  counts = np.asarray(by_visits.visit_counts)
  assert all(counts[b, a] == counts[b].max() for b, a in enumerate(np.asarray(by_visits.action)))
  np.testing.assert_allclose(by_visits.policy_target, default.policy_target)
  # π̄ as the target (what the search returned): the Sequential Halving winner is still
  # played; π̄ differs from π′.
  np.testing.assert_array_equal(learn_pibar.action, default.action)
  np.testing.assert_allclose(learn_pibar.policy_target, learn_pibar.pibar)
  assert not np.allclose(learn_pibar.policy_target, default.policy_target, atol=1e-3)
  np.testing.assert_allclose(np.asarray(default.action_weights).sum(-1), 1.0, rtol=1e-5)
  with pytest.raises(ValueError, match="needs the search's root_noise"):
    search.decision(learn_pibar.tree, search.plan, action_key)


def test_the_decision_runs_under_jit_and_vmap():
  """A decision vmapped over action keys (π̄ sampled at τ = 1) gives each key's own output."""
  search, out, noise, _ = _searched()
  decision = dataclasses.replace(search.decision, play=RootPolicy.PIBAR, temperature=1.0)
  decide = lambda key: decision(out.tree, search.plan, key, noise)  # noqa: E731
  keys = jax.random.split(KEY, 3)
  batched = jax.jit(jax.vmap(decide))(keys)
  single = jax.jit(decide)(keys[1])
  np.testing.assert_array_equal(batched.action[1], single.action)
  np.testing.assert_allclose(batched.action_weights[1], single.action_weights, atol=1e-6)
  np.testing.assert_allclose(np.asarray(single.action_weights).sum(-1), 1.0, rtol=1e-5)


def test_replacing_options_rebuilds_the_decision():
  search = dataclasses.replace(_gumbel(), root_policy="pibar", temperature=1.0)
  assert search.decision.play is RootPolicy.PIBAR and search.decision.temperature == 1.0
  assert search.decision.gumbel is not None
