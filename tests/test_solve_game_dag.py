""":func:`jaxsearch.solve.solve_game` works on states, not histories, and decides "proven" exactly.

* Its exact part is a graph with one entry per distinct state, walked without recursion: a
  Garnet MDP at horizon 100 (2^100 histories, 300 states) and at horizon 600 (past Python's
  recursion limit) are solved and proven, equal to the optimum computed here independently
  in :class:`fractions.Fraction` by backward induction over the game's float32 tables.
* The float tolerance only stops the search and steers the exact completion: where the float
  bounds are within it but the exact ones differ, the result is not proven, or the completion
  steps on until the exact bounds meet.
"""

import time
from fractions import Fraction

import jax
import numpy as np
import pytest

from jaxsearch.games import garnet
from jaxsearch import solve as solve_lib


def _tables(g):
  """The game's float32 tables as exact rationals: ``(next_state, p, r, discount)``."""
  nxt = np.asarray(g.next_state)
  probs, rewards = np.asarray(g.probs), np.asarray(g.rewards)
  p = [[[Fraction(float(x)) for x in row] for row in plane] for plane in probs]
  r = [[[Fraction(float(x)) for x in row] for row in plane] for plane in rewards]
  return nxt, p, r, Fraction(float(np.float32(g.discount)))


def _exact_v_star(g) -> Fraction:
  """V* at state 0, time 0, by backward induction in exact rationals."""
  nxt, p, r, gamma = _tables(g)
  num_states, num_actions, num_outcomes = nxt.shape
  v = [Fraction(0)] * num_states
  for _ in range(g.horizon):
    v = [max(sum(p[s][a][o] * (r[s][a][o] + gamma * v[nxt[s, a, o]])
                 for o in range(num_outcomes)) for a in range(num_actions))
         for s in range(num_states)]
  return v[0]


def _exact_always(g, action: int) -> Fraction:
  """The exact value at state 0, time 0, of always playing ``action``."""
  nxt, p, r, gamma = _tables(g)
  v = [Fraction(0)] * nxt.shape[0]
  for _ in range(g.horizon):
    v = [sum(p[s][action][o] * (r[s][action][o] + gamma * v[nxt[s, action, o]])
             for o in range(nxt.shape[2])) for s in range(nxt.shape[0])]
  return v[0]


def _root(g):
  return jax.tree.map(lambda x: x[None], g.game.init(jax.random.PRNGKey(0)))


def _distinct_dicts(policy) -> int:
  """How many distinct dicts the policy is made of (walked once each, by identity)."""
  seen, stack = {id(policy)}, [policy]
  while stack:
    for child in stack.pop()["children"].values():
      if id(child) not in seen:
        seen.add(id(child))
        stack.append(child)
  return len(seen)


def _check_solved(g, solution):
  root = solution.roots[0]
  v_star = _exact_v_star(g)
  assert root.proven and root.lower == root.upper == root.value == v_star
  # Against the float64 oracle too (float32 tables, so up to float64 rounding).
  _, v64 = garnet.backward_induction(np.asarray(g.next_state), np.asarray(g.probs, np.float64),
                                     np.asarray(g.rewards, np.float64), g.horizon, g.discount)
  assert float(root.value) == pytest.approx(v64[0, 0], rel=1e-12)
  # One dict per distinct (state, time): a DAG, not a tree of histories.
  assert root.states <= g.num_states * g.horizon + 1
  assert _distinct_dicts(root.policy) <= g.num_states * g.horizon
  state = jax.tree.map(lambda x: np.asarray(x)[0], _root(g))
  assert solve_lib.exact_value(g.game, state, root.policy) == root.value
  return root


def test_horizon_100_is_solved_exactly_over_states():
  # 3 states, 2 actions, 2 outcomes: 2^100 histories, 300 states. Searching it with 4
  # simulations leaves everything to the exact part, which must share identical states.
  g = garnet.make(num_states=3, num_actions=2, branching=2, horizon=100, seed=0)
  started = time.perf_counter()
  solution = solve_lib.solve_game(g.game, garnet.estimator(g), _root(g), max_simulations=4)
  elapsed = time.perf_counter() - started
  root = _check_solved(g, solution)
  print(f"horizon 100: {elapsed:.2f} s (compilation included), {root.states} states, "
        f"{root.completion} pairs stepped by the completion")


def test_horizon_600_needs_no_recursion():
  # Deeper than Python's recursion limit (1000 frames): any recursion over the depth fails.
  g = garnet.make(num_states=2, num_actions=2, branching=2, horizon=600, seed=3)
  solution = solve_lib.solve_game(g.game, garnet.estimator(g), _root(g), max_simulations=4)
  _check_solved(g, solution)


@pytest.fixture(scope="module")
def tolerance_case():
  g = garnet.make(num_states=8, num_actions=4, branching=3, horizon=4, seed=7)
  return g, garnet.estimator(g, noise=0.5, seed=2)


def test_the_default_tolerance_ends_proven_at_the_exact_optimum(tolerance_case):
  # The search stops once its float bounds are within 1e-6; the exact bounds then decide.
  g, estimator = tolerance_case
  solution = solve_lib.solve_game(g.game, estimator, _root(g))
  root = solution.roots[0]
  assert root.proven and root.lower == root.upper == _exact_v_star(g)


def test_a_float_tolerance_stops_the_search_but_never_proves(tolerance_case):
  g, estimator = tolerance_case
  # A coarse tolerance stops the search early: its float bounds are within 10%...
  alone = solve_lib.solve_game(g.game, estimator, _root(g), tolerance=0.1, completion=0)
  root = alone.roots[0]
  assert root.search_upper - root.search_bound <= 0.1 * abs(root.search_upper)
  # ... but the exact bounds have not met, so it is not proven.
  assert root.lower < root.upper and not root.proven and not alone.proven
  assert root.lower <= _exact_v_star(g) <= root.upper
  # With the exact completion (the default) the exact bounds are driven until they meet.
  completed = solve_lib.solve_game(g.game, estimator, _root(g), tolerance=0.1)
  root = completed.roots[0]
  assert root.completion > 0
  assert root.proven and root.lower == root.upper == root.value == _exact_v_star(g)


def test_a_completion_budget_too_small_leaves_it_unproven(tolerance_case):
  g, estimator = tolerance_case
  solution = solve_lib.solve_game(g.game, estimator, _root(g), tolerance=0.1, completion=3)
  root = solution.roots[0]
  assert root.completion <= 3 and not root.proven
  assert root.lower <= _exact_v_star(g) <= root.upper


def test_exact_value_of_a_shared_policy_is_taken_per_state():
  # One dict for every decision, its own child: "always play action a" as a cyclic DAG. It is
  # reached at many states; each (dict, state) pair is evaluated on its own.
  g = garnet.make(num_states=4, num_actions=3, branching=2, horizon=6, seed=5)
  state = jax.tree.map(lambda x: np.asarray(x)[0], _root(g))
  for action in range(3):
    node = {"action": action, "children": {}}
    node["children"] = {0: node, 1: node}
    assert solve_lib.exact_value(g.game, state, node) == _exact_always(g, action)


def test_completion_must_be_a_non_negative_integer(tolerance_case):
  g, estimator = tolerance_case
  for bad in (-1, 2.5):
    with pytest.raises(ValueError, match="completion"):
      solve_lib.solve_game(g.game, estimator, _root(g), completion=bad)


def test_dyadic_arithmetic_is_exact():
  # The exact part computes in dyadic rationals n·2^e (no gcds); they must agree with Fraction.
  from jaxsearch.solve.dyadic import Dyadic
  rng = np.random.default_rng(0)
  specials = np.array([0.0, -0.0, 1.0, -1.0, np.finfo(np.float32).tiny, 1e-45, 3.4e38, -2.5e-7],
                      np.float32)
  values = np.concatenate([specials, (rng.standard_normal(200) *
                                      10.0 ** rng.integers(-30, 30, 200)).astype(np.float32)])
  for _ in range(300):
    a, b, c = (float(x) for x in rng.choice(values, 3))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    mine = Dyadic.of(a) * Dyadic.of(b) + Dyadic.of(c)
    assert mine.fraction() == exact == mine.reduced().fraction()
    assert (mine < Dyadic.of(a)) == (exact < Fraction(a))
    assert (mine > Dyadic.of(a)) == (exact > Fraction(a))
    assert (mine == Dyadic.of(c)) == (exact == Fraction(c))
