"""The generic solver (:func:`jaxsearch.solve.solve_game`) on Garnet MDPs, whose optimal values
are known exactly by backward induction.

One :class:`jaxsearch.games.garnet.GarnetFamily` holds every MDP, so each root of one batch is a
different MDP and every solve below shares one compiled program (the search is jitted and
vmapped over the batch). Certificates are exact rationals; only the comparison with the float64
oracle ``V*`` uses a tolerance.
"""

from fractions import Fraction

import jax
import numpy as np
import pytest

from jaxsearch.games import garnet
from jaxsearch import solve as solve_lib

MEMBERS = 4
SHAPE = dict(num_states=6, num_actions=3, branching=2, horizon=3)
OPTIONS = dict(chunk=16, max_nodes=400, seconds=60)


@pytest.fixture(scope="module")
def family():
  return garnet.make_family(MEMBERS, seed=11, **SHAPE)


@pytest.fixture(scope="module")
def estimator(family):
  return garnet.estimator(family, bias_per_step=0.2, noise=0.1, seed=1)


@pytest.fixture(scope="module")
def solved(family, estimator):
  return solve_lib.solve_game(family.game, estimator, family.roots(), max_simulations=512,
                              **OPTIONS)


def _decisions(policy, member, family):
  """The Markov policy ``int[H, S]`` that the policy tree plays (0 where it never plays), by
  walking its histories; ``None`` if two histories of the same ``(t, s)`` differ."""
  g = family.members[member]
  table = np.zeros((g.horizon, g.num_states), np.int64)
  seen = {}
  stack = [(policy, 0, 0)]
  while stack:
    node, t, s = stack.pop()
    action = node["action"]
    if seen.setdefault((t, s), action) != action:
      return None
    table[t, s] = action
    for o, child in node["children"].items():
      stack.append((child, t + 1, int(g.next_state[s, action, o])))
  return table


def test_garnets_are_solved_and_proven_exactly(family, solved):
  assert solved.proven and len(solved.roots) == MEMBERS
  for m, root in enumerate(solved.roots):
    v_star = float(family.members[m].v_star[0, 0])
    assert root.proven and root.lower == root.upper == root.value
    assert isinstance(root.value, Fraction)
    # The tables are float32: V* in float64 from them agrees up to rounding.
    q_star, v64 = garnet.backward_induction(
        np.asarray(family.next_state[m]), np.asarray(family.probs[m], np.float64),
        np.asarray(family.rewards[m], np.float64), SHAPE["horizon"], 1.0)
    assert abs(float(root.value) - v64[0, 0]) < 1e-5
    assert abs(float(root.value) - v_star) < 1e-5


def test_the_policy_evaluates_to_its_lower_bound(family, solved):
  for m, root in enumerate(solved.roots):
    state = jax.tree.map(lambda x: np.asarray(x)[m], family.roots())
    assert solve_lib.exact_value(family.game, state, root.policy) == root.lower
    decisions = _decisions(root.policy, m, family)
    if decisions is not None:  # the same decisions as a Markov policy, evaluated in float64
      g = family.members[m]
      v = garnet.evaluate_policy(np.asarray(g.next_state), np.asarray(g.probs, np.float64),
                                 np.asarray(g.rewards, np.float64), g.horizon, g.discount,
                                 decisions)
      assert abs(v[0, 0] - float(root.lower)) < 1e-5


def test_an_under_budgeted_solve_is_not_proven_and_brackets_v_star(family, estimator):
  # completion=0: the bounds of the searched trees alone, which 16 simulations cannot close.
  few = solve_lib.solve_game(family.game, estimator, family.roots(), max_simulations=16,
                             completion=0, **OPTIONS)
  assert not few.proven
  assert all(root.completion == 0 for root in few.roots)
  for m, root in enumerate(few.roots):
    v_star = float(family.members[m].v_star[0, 0])
    assert root.upper is not None and root.lower <= root.upper
    assert float(root.lower) <= v_star + 1e-5 and v_star - 1e-5 <= float(root.upper)
    assert root.proven == (root.lower == root.upper)
    state = jax.tree.map(lambda x: np.asarray(x)[m], family.roots())
    assert solve_lib.exact_value(family.game, state, root.policy) == root.lower


def test_the_exact_completion_proves_what_the_search_left_open(family, estimator):
  few = solve_lib.solve_game(family.game, estimator, family.roots(), max_simulations=16,
                             **OPTIONS)
  assert few.proven
  for m, root in enumerate(few.roots):
    assert root.lower == root.upper == root.value and root.completion > 0
    assert abs(float(root.value) - float(family.members[m].v_star[0, 0])) < 1e-5
    state = jax.tree.map(lambda x: np.asarray(x)[m], family.roots())
    assert solve_lib.exact_value(family.game, state, root.policy) == root.lower


def test_exact_value_rejects_incomplete_or_illegal_policies(family):
  state = jax.tree.map(lambda x: np.asarray(x)[0], family.roots())
  with pytest.raises(ValueError, match="no child for outcome"):
    solve_lib.exact_value(family.game, state, {"action": 0, "children": {}})
  with pytest.raises(ValueError, match="not legal"):
    solve_lib.exact_value(family.game, state, {"action": 7, "children": {}})
