"""The validation layer (``jaxsearch.validation``): trace-time errors naming the argument, and
runtime checks (``checkify``) that catch what the engine otherwise repairs and counts.

Trace-time errors are raised while tracing (``jax.eval_shape``), so they cost no compile. The
runtime checks share one compiled checked search: the misbehaviour is chosen by the data (the
roots' member MDP, the estimator's ``params``), not by the program.
"""

import dataclasses
import functools
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import jaxsearch as js
from jaxsearch.games import garnet
from jaxsearch import validation
from jaxsearch.game import Estimate, StepResult

FAMILY = garnet.make_family(4, num_states=5, num_actions=3, branching=2, horizon=3, seed=8)
CLEAN = garnet.estimator(FAMILY, bias=0.2, noise=0.2)
BAD_PROBS_MEMBER = 3  # its outcome probabilities sum to 0.9 in the game below


def _roots(members):
  members = jnp.asarray(members, jnp.int32)
  zeros = jnp.zeros_like(members)
  return garnet.State(state=zeros, time=zeros, mdp=members)


def _search(game=FAMILY.game, estimator=CLEAN, **kwargs):
  options = dict(num_simulations=8)
  options.update(kwargs)
  return js.policies.avts(game, estimator, **options)


def _trace(search, key=None, root=None, tree=None):
  key = jax.random.PRNGKey(0) if key is None else key
  root = _roots([0, 1]) if root is None else root
  return jax.eval_shape(search, None, key, root, tree)


# ---- trace time ------------------------------------------------------------------------

def test_selection_factory_instead_of_rule():
  """Refused when the search is configured, before anything is traced."""
  with pytest.raises(TypeError, match=r"selection must be .*call it"):
    js.policies.custom(FAMILY.game, CLEAN, selection=js.selection.puct, num_simulations=4)


def test_batch_of_keys_instead_of_one():
  with pytest.raises(ValueError, match="key must be one PRNG key.*a batch of keys"):
    _trace(_search(), key=jax.random.split(jax.random.PRNGKey(0), 2))
  with pytest.raises(ValueError, match="a batch of keys"):
    _trace(_search(), key=jax.random.split(jax.random.key(0), 2))
  with pytest.raises(TypeError, match="key must be a PRNG key"):
    validation.check_key(None)
  _trace(_search(), key=jax.random.key(0))  # typed keys are fine


def test_root_without_a_shared_batch_axis():
  with pytest.raises(ValueError, match=r"root\.state is a scalar"):
    _trace(_search(), root=garnet.State(state=jnp.int32(0), time=jnp.int32(0),
                                        mdp=jnp.int32(0)))
  with pytest.raises(ValueError, match=r"share one leading batch size.*root\.state has 2"):
    _trace(_search(), root=garnet.State(state=jnp.zeros((2,), jnp.int32),
                                        time=jnp.zeros((3,), jnp.int32),
                                        mdp=jnp.zeros((3,), jnp.int32)))
  with pytest.raises(ValueError, match="batch size 0"):
    _trace(_search(), root=_roots(np.zeros((0,), np.int32)))


def test_policy_output_passed_as_tree():
  search = _search()
  out = jax.eval_shape(search, None, jax.random.PRNGKey(0), _roots([0, 1]))
  with pytest.raises(TypeError, match=r"pass out\.tree, not the PolicyOutput"):
    _trace(search, tree=out)
  _trace(search, tree=out.tree)


def _wrapped_game(step=None, outcome_probs=None, legal_actions=None):
  game = FAMILY.game
  return dataclasses.replace(game, step=step or game.step,
                             outcome_probs=outcome_probs or game.outcome_probs,
                             legal_actions=legal_actions or game.legal_actions)


def test_game_step_that_changes_the_state_dtype_or_shape():
  def narrow_step(state, action, outcome):
    result = FAMILY.game.step(state, action, outcome)
    return result.replace(state=result.state.replace(time=result.state.time.astype(jnp.int16)))

  with pytest.raises(ValueError, match=r"game step changed state\.time from int32\[\] to int16"):
    _trace(_search(_wrapped_game(step=narrow_step)))

  def wide_step(state, action, outcome):
    result = FAMILY.game.step(state, action, outcome)
    return result.replace(state=result.state.replace(state=jnp.stack([result.state.state] * 2)))

  def blind(params, key, states):  # never looks at the states it cannot read
    zeros = jnp.zeros((states.mdp.shape[0], FAMILY.num_actions), jnp.float32)
    return Estimate(value=zeros[:, 0], action_values=zeros)

  game = dataclasses.replace(_wrapped_game(step=wide_step), pessimistic_value=None,
                             optimistic_value=None)
  with pytest.raises(ValueError, match=r"changed state\.state from int32\[\] to int32\[2\]"):
    _trace(_search(game, blind))


def test_game_step_with_a_non_scalar_reward():
  def vector_reward(state, action, outcome):
    result = FAMILY.game.step(state, action, outcome)
    return result.replace(reward=jnp.stack([result.reward] * 3))

  with pytest.raises(ValueError, match=r"StepResult\.reward .*must have shape \[2\], got \[2, 3\]"):
    _trace(_search(_wrapped_game(step=vector_reward)))


def test_outcome_probs_of_the_wrong_shape():
  game = _wrapped_game(outcome_probs=lambda s, a: jnp.ones((3,)) / 3)
  with pytest.raises(ValueError, match=r"outcome_probs .*must have shape \[2, 2\], got \[2, 3\]"):
    _trace(_search(game))


def test_legal_actions_of_the_wrong_shape_and_estimates_of_the_wrong_shape():
  game = _wrapped_game(legal_actions=lambda s: jnp.ones((4,), bool))
  with pytest.raises(ValueError, match=r"legal_actions must return bool\[A\]=\(3,\)"):
    _trace(_search(game))

  def short_values(params, key, states):
    estimate = CLEAN(params, key, states)
    return estimate.replace(action_values=estimate.action_values[:, :2])

  with pytest.raises(ValueError, match=r"Estimate\.action_values must have shape \[B, A\]"):
    _trace(_search(estimator=short_values))


def test_sizes_checked_when_the_search_is_built():
  with pytest.raises(ValueError, match="num_simulations must be a positive int"):
    _search(num_simulations=0)
  with pytest.raises(ValueError, match="max_depth must be a positive int"):
    _search(max_depth=0)
  with pytest.raises(ValueError, match="num_buckets must be a positive int"):
    _search(num_buckets=0)
  with pytest.raises(ValueError, match="temperature must be >= 0"):
    _search(temperature=-1.0)
  with pytest.raises(ValueError, match="max_nodes=8 is smaller than num_simulations"):
    _search(max_nodes=8)
  with pytest.raises(ValueError, match="dirichlet_fraction must be in"):
    _search(dirichlet_fraction=1.5)
  with pytest.raises(ValueError, match="dirichlet_alpha must be > 0"):
    _search(dirichlet_alpha=0.0)


def test_full_tree_with_all_outcomes_stops_growing():
  """Bellman backup with room for less than one expansion per simulation: the tree stops
  growing at ``max_nodes``, no error (the runtime checks pass too), consistent counts
  (docs/bad_input.md)."""
  err, out = _checked()(jnp.int32(-1), jax.random.PRNGKey(0), _roots([0, 1, 2, 0]))
  assert err.get() is None
  assert np.all(np.asarray(out.tree.num_nodes) <= 13)
  assert np.all(np.asarray(out.tree.num_nodes) + 2 > 13)  # it did fill up
  np.testing.assert_array_equal(np.asarray(out.tree.nodes.visits[:, 0]), 13)


# ---- run time (checkify) -------------------------------------------------------------------

def _bad_probs_game():
  def outcome_probs(state, action):
    probs = FAMILY.game.outcome_probs(state, action)
    return jnp.where(state.mdp == BAD_PROBS_MEMBER, 0.9, 1.0) * probs

  return _wrapped_game(outcome_probs=outcome_probs)


def _nan_estimator(params, key, states):
  """``params`` = the member whose action value 1 is NaN (-1: none)."""
  estimate = CLEAN(None, key, states)
  bad = (states.mdp == params)[:, None] & (jnp.arange(FAMILY.num_actions) == 1)
  return estimate.replace(action_values=jnp.where(bad, jnp.nan, estimate.action_values))


@functools.lru_cache(maxsize=None)
def _checked():
  """The one compiled checked search of this file: 12 simulations, room for 13 nodes (the
  trees fill up), misbehaviour chosen by the data."""
  return jax.jit(validation.checked(_search(_bad_probs_game(), _nan_estimator,
                                            num_simulations=12, max_nodes=13)))


def test_checked_search_passes_clean_input():
  err, out = _checked()(jnp.int32(-1), jax.random.PRNGKey(0), _roots([0, 1, 2, 0]))
  assert err.get() is None
  err.throw()  # no-op
  assert np.all(np.asarray(out.action) >= 0)


def test_checked_search_reports_nan_estimates():
  err, out = _checked()(jnp.int32(1), jax.random.PRNGKey(0), _roots([0, 1, 2, 0]))
  message = err.get()
  assert message is not None and "estimator returned NaN/inf" in message
  assert "first tree with any: 1" in message
  # Unchecked, the same search repairs and counts it.
  assert int(out.tree.nonfinite_estimates[1]) > 0
  with pytest.raises(checkify.JaxRuntimeError, match="NaN/inf"):
    err.throw()


def test_checked_search_reports_probabilities_that_do_not_sum_to_one():
  err, _ = _checked()(jnp.int32(-1), jax.random.PRNGKey(0), _roots([0, 1, BAD_PROBS_MEMBER, 0]))
  message = err.get()
  assert message is not None and "not a distribution" in message and "in tree 2" in message
  assert "summing to 0.899" in message


def _doctored_output():
  return _checked()(jnp.int32(-1), jax.random.PRNGKey(1), _roots([0, 1, 2, 0]))[1]


def test_runtime_checks_of_illegal_visits_illegal_actions_and_nan():
  check = jax.jit(checkify.checkify(validation.check_output))
  out = _doctored_output()
  assert check(out)[0].get() is None
  tree = out.tree
  # An illegal slot that was visited (a game or engine bug).
  illegal = tree.replace(slots=tree.slots.replace(
      legal=tree.slots.legal.at[1, 0, :].set(False).at[1, 0, 0].set(True),
      visits=tree.slots.visits.at[1, 0, 1].set(3)))
  assert "visited an illegal action" in check(out.replace(tree=illegal))[0].get()
  # A chosen action that is not legal at its root (outside the action range here).
  message = check(out.replace(action=out.action.at[0].set(7)))[0].get()
  assert "chosen action 7 of tree 0 is not legal" in message
  # -1 only where nothing is legal.
  assert "not legal" in check(out.replace(action=out.action.at[1].set(-1)))[0].get()
  # NaN inside a tree.
  nan_tree = tree.replace(nodes=tree.nodes.replace(value=tree.nodes.value.at[0, 0].set(jnp.nan)))
  assert "NaN/inf in tree.nodes.value" in check(out.replace(tree=nan_tree))[0].get()
  # -inf is a legitimate zero prior or a deliberately masked action value; +inf is not.
  for field in ("prior_logits", "action_value"):
    def slots_with(value):
      return tree.replace(slots=tree.slots.replace(
          **{field: getattr(tree.slots, field).at[0, 0, 1].set(value)}))

    assert check(out.replace(tree=slots_with(-jnp.inf)))[0].get() is None, field
    wrong = check(out.replace(tree=slots_with(jnp.inf)))[0].get()
    assert f"NaN/+inf in tree.slots.{field}" in wrong
  minus_inf = tree.replace(nodes=tree.nodes.replace(
      value=tree.nodes.value.at[0, 0].set(-jnp.inf)))
  assert "NaN/inf in tree.nodes.value" in check(out.replace(tree=minus_inf))[0].get()
  nan_out = out.replace(q_values=out.q_values.at[0, 0].set(jnp.inf))
  assert "NaN/inf in the output's q_values" in check(nan_out)[0].get()


def test_every_row_of_the_bad_input_table_names_an_existing_test():
  """docs/bad_input.md: every row names at least one test, and every named test exists."""
  root = Path(__file__).resolve().parents[1]
  table = (root / "docs" / "bad_input.md").read_text()
  rows = [line for line in table.splitlines()
          if line.startswith("| ") and not line.startswith(("| input", "|---"))]
  assert len(rows) >= 35
  for row in rows:
    names = re.findall(r"`(test_\w+\.py)::(test_\w+)", row)
    assert names, row
    for file, test in names:
      source = (root / "tests" / file).read_text()
      assert re.search(rf"^def {test}\(", source, re.M), f"{file}::{test} ({row[:60]})"
