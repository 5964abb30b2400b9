"""The AVTS article's protocol on the host (jaxsearch.games.avts_article and its parts,
jaxsearch.games.avts_article_node): its bound, its iteration, its widening, its variances and
the solver's departures, on tiny instances with exact optima."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsearch import debias
from jaxsearch.enums import Variance
from jaxsearch.games import avts_article as aa
from jaxsearch.games import avts_article_node as an
from jaxsearch.guessing.estimator import greedy_guess
from jaxsearch.guessing.exact import ExactBounds, ExactSolver
from test_wordle import _random_words  # the word generator lives with the game tests


@functools.lru_cache(maxsize=None)
def tiny_wordle() -> an.Problem:
  rng = np.random.default_rng(3)
  answers = _random_words(rng, 24)
  extra = _random_words(rng, 16, letters="abcdef", exclude=answers)
  return an.Problem.wordle(answers, answers + extra)


@functools.lru_cache(maxsize=None)
def optimum(problem: an.Problem) -> int:
  bounds = ExactBounds.build(problem.table, problem.num_codes, problem.solved_code,
                             guess_of_secret=problem.guess_of_secret)
  return ExactSolver(bounds).optimum(np.arange(problem.num_secrets))


PROBLEMS = {"wordle": tiny_wordle, "mastermind": lambda: an.Problem.mastermind(3, 3)}


def _run(problem, config, cap):
  tree, bounds = aa.ArticleTree(problem, config), []
  target = optimum(problem)
  while tree.iterations < cap and (not bounds or bounds[-1] > target + 1e-9):
    tree.iterate()
    bounds.append(tree.bound_total())
  return tree, bounds, target


@pytest.mark.parametrize("game", sorted(PROBLEMS))
@pytest.mark.parametrize("rule", [r.value for r in aa.Rule])
def test_bound_is_valid_monotone_and_reaches_the_optimum(game, rule):
  problem = PROBLEMS[game]()
  tree, bounds, target = _run(problem, aa.Config(rule=rule, seed=1), cap=600)
  assert all(b >= target - 1e-9 for b in bounds), (min(bounds), target)
  assert all(b2 <= b1 + 1e-9 for b1, b2 in zip(bounds, bounds[1:]))
  assert bounds[-1] == pytest.approx(target), (bounds[-1], target, tree.iterations)
  assert tree.policy_total() >= target


@pytest.mark.parametrize("variance", [v.value for v in an.VARIANCES])
@pytest.mark.parametrize("child_bound", [c.value for c in aa.ChildBound])
def test_each_variance_and_child_bound_runs_to_the_optimum(variance, child_bound):
  problem = PROBLEMS["mastermind"]()
  config = aa.Config(rule="thompson_avts", variance=variance, child_bound=child_bound)
  tree, bounds, target = _run(problem, config, cap=400)
  assert min(bounds) >= target - 1e-9
  assert bounds[-1] == pytest.approx(target)
  assert tree.policy_total() >= target


def _parents(tree):
  """Every node with the (parent, choice) it hangs from."""
  out, stack = [], [tree.root]
  while stack:
    node = stack.pop()
    for i, children in enumerate(node.children):
      for child in children or ():
        if isinstance(child, an.Node):
          out.append((child, node, i))
          stack.append(child)
  return out


def test_one_iteration_visits_every_existing_state_under_the_chosen_actions():
  tree = aa.ArticleTree(PROBLEMS["wordle"](), aa.Config(rule="laplace"))
  for _ in range(40):
    before = {id(node): node.total for node, _, _ in _parents(tree)}
    before[id(tree.root)] = tree.root.total
    tree.iterate()
    links = _parents(tree)
    # A child is created by its choice's first visit and visited by every later one.
    assert all(child.total == parent.visits[i] - 1 for child, parent, i in links)
    assert tree.root.total == tree.iterations
    assert tree.count_nodes() == tree.nodes == len(links) + 1
    grew = sum(node.total > before.get(id(node), 0) for node, _, _ in links)
    assert tree.visited == grew + 1  # the root and every state below a chosen action


def test_widening_reaches_every_informative_guess_in_estimator_order():
  problem = PROBLEMS["wordle"]()
  tree = aa.ArticleTree(problem, aa.Config(cache=3))
  q = an.entropic_values(problem, tree.root.secrets)
  expected = [int(g) for g in np.lexsort((np.arange(len(q)), -q)) if np.isfinite(q[g])]
  while len(tree.root.guesses) < len(expected):
    tree._widen(tree.root)
  tree._widen(tree.root)  # nothing left: no change
  assert tree.root.guesses == expected
  assert tree.evaluations > 1 + len(expected) // 3 - 1  # orders re-sorted, not cut


def test_entropic_values_pick_the_greedy_guess():
  problem = PROBLEMS["wordle"]()
  rng = np.random.default_rng(0)
  for size in (3, 7, 15, 24):
    secrets = np.sort(rng.choice(problem.num_secrets, size, replace=False))
    q = an.entropic_values(problem, secrets)
    assert int(np.argmax(q)) == greedy_guess(problem.table, problem.guess_of_secret, secrets,
                                             problem.num_codes)


@pytest.mark.parametrize("variance", [v.value for v in an.VARIANCES])
def test_bucket_variances_match_the_library(variance):
  """The host statistics against jaxsearch.debias on the same records."""
  rng = np.random.default_rng(5)
  node = an.Node(np.arange(4))
  stats = debias.empty(8)
  num_active = 6
  node.reached[0] = num_active
  for visits in [1, 1, 2, 1, 3, 2, 1, 4, 2, 3, 1, 2]:
    change = float(rng.normal(-0.2, 0.1))
    mean = float(stats.bias_mean[visits - 1])
    if variance == "centred":
      stats = debias.record(stats, jnp.int32(visits), jnp.float32(change), None)
    else:
      given = change - mean if variance == "avts" else change
      stats = debias.record(stats, jnp.int32(visits), jnp.float32(change),
                            jnp.float32(given), centred=False)
    node.record(visits, change, Variance(variance))
  ours = node.bucket_variance(Variance(variance))
  if variance == "reference":
    theirs = debias.reference_bucket_variance(stats, jnp.int32(num_active))
  else:
    theirs = debias.bucket_variance(stats)
  np.testing.assert_allclose(ours, np.asarray(theirs)[:len(ours)], rtol=2e-5, atol=1e-7)
  np.testing.assert_allclose(node.mean, np.asarray(stats.bias_mean)[:len(ours)], rtol=1e-5)


def test_config_refuses_the_variance_off():
  with pytest.raises(ValueError, match="variance must be one of"):
    aa.Config(variance="off")
  with pytest.raises(ValueError, match="cache"):
    aa.Config(cache=0)


def test_jax_estimator_agrees_with_numpy_and_runs_the_tree():
  problem = PROBLEMS["mastermind"]()
  rng = np.random.default_rng(1)
  sets = [np.sort(rng.choice(problem.num_secrets, k, replace=False)) for k in (2, 6, 13, 27)]
  for batched in (False, True):
    ours = an.jax_estimator(problem, batched=batched, bucket=4)(problem, sets)
    for x, y in zip(ours, an.numpy_estimator(problem, sets)):
      np.testing.assert_array_equal(np.isfinite(x), np.isfinite(y))
      np.testing.assert_allclose(x[np.isfinite(x)], y[np.isfinite(y)], rtol=1e-5)
  target = optimum(problem)
  tree = aa.ArticleTree(problem, aa.Config(), estimator=an.jax_estimator(problem))
  while tree.iterations < 200 and tree.bound_total() > target + 1e-9:
    tree.iterate()
  assert tree.bound_total() == pytest.approx(target)


def _bench():
  """``jaxsearch bench article``'s module."""
  from jaxsearch.app.benchmarks import article
  return article


def test_bench_article_runs_every_rule_and_prints_one_json_line(capsys, tmp_path):
  import json
  bench = _bench()
  assert bench.main(["--game", "mastermind", "--pegs", "3", "--colours", "3", "--seeds", "0,1",
                     "--cap-iterations", "300", "--policy-every", "5",
                     "--plot", str(tmp_path / "p.png")]) == 0
  out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert out["target"] == optimum(PROBLEMS["mastermind"]())
  assert set(out["rules"]) == {r.value for r in aa.Rule}
  assert all(r["reached"] == 2 for r in out["rules"].values())
  assert "ratio_puct_over_thompson" in out and (tmp_path / "p.png").exists()


def test_bench_article_refuses_unknown_rules_and_seeds(capsys):
  bench = _bench()
  for argv, flag in ((["--rules", "thompson,uct"], "--rules"), (["--seeds", "a"], "--seeds"),
                     (["--cut", "-1"], "--cut"), (["--root-live", "1"], "--root-live")):
    with pytest.raises(SystemExit) as stop:
      bench.main(argv)
    assert stop.value.code == 2 and flag in capsys.readouterr().err


def test_one_path_and_cut_departures():
  problem = PROBLEMS["wordle"]()
  tree = aa.ArticleTree(problem, aa.Config(rule="laplace", one_path=True, cut=3))
  target = optimum(problem)
  for _ in range(60):
    tree.iterate()
    assert tree.bound_total() >= target - 1e-9
    # one path: at most one state per level of the tree
    stack, deepest, widest = [(tree.root, 1)], 1, 0
    while stack:
      node, d = stack.pop()
      deepest, widest = max(deepest, d), max(widest, len(node.guesses))
      for children in node.children:
        stack.extend((c, d + 1) for c in children or () if isinstance(c, an.Node))
    assert 1 <= tree.visited <= deepest
  assert widest == 3  # the cut, reached
  with pytest.raises(ValueError, match="cut"):
    aa.Config(cut=-1)


def _record_rules(tree):
  """Wraps ``tree``'s scoring: a list of ``(at the root, rule)`` filled as it chooses."""
  seen, score = [], tree._score_argmax

  def recorded(node, rule, excluded):
    seen.append((node is tree.root, aa.Rule(rule)))
    return score(node, rule, excluded)

  tree._score_argmax = recorded
  return seen


@pytest.mark.parametrize("rule", ["laplace", "puct_value_prior", "hoeffding"])
def test_thompson_root_chooses_by_thompson_and_the_rule_acts_below(rule):
  problem = PROBLEMS["mastermind"]()
  tree = aa.ArticleTree(problem, aa.Config(rule=rule, root="thompson", seed=2))
  seen, target = _record_rules(tree), optimum(problem)
  while tree.iterations < 600 and tree.bound_total() > target + 1e-9:
    tree.iterate()
  assert tree.bound_total() == pytest.approx(target)
  assert {r for at_root, r in seen if at_root} == {aa.Rule.THOMPSON}
  assert {r for at_root, r in seen if not at_root} == {aa.Rule(rule)}
  # The article's root (the default) scores the root by the rule under test.
  tree = aa.ArticleTree(problem, aa.Config(rule=rule))
  seen = _record_rules(tree)
  for _ in range(5):
    tree.iterate()
  assert {r for at_root, r in seen if at_root} == {aa.Rule(rule)}


def _live(tree):
  return [j for j, v in enumerate(tree.root.visits) if v > 0 and j not in tree.retired]


def test_root_live_retires_first_guesses_as_the_solver():
  problem = PROBLEMS["mastermind"]()
  tree = aa.ArticleTree(problem, aa.Config(rule="laplace", root="thompson", root_live=2))
  target, frozen = optimum(problem), {}
  while tree.iterations < 400 and tree.bound_total() > target + 1e-9:
    tree.iterate()
    root = tree.root
    assert len(_live(tree)) <= 2
    # A retired first guess is never visited again; the best bound is always a live one's.
    for j in tree.retired:
      assert root.visits[j] == frozen.setdefault(j, root.visits[j])
    assert root.best_bound == max(root.bound[j] for j in _live(tree))
    assert tree._exported_choice(root) in _live(tree)
  assert len(tree.retired) >= 2 and len(root.guesses) > 4
  assert tree.bound_total() == pytest.approx(target) and tree.policy_total() == target
  with pytest.raises(ValueError, match="root_live"):
    aa.Config(root_live=1)


def test_solver_root_is_not_cut_and_searches_every_feedback_under_one_path():
  problem = PROBLEMS["mastermind"]()
  config = aa.Config(rule="hoeffding", root="thompson", cut=2, one_path=True, seed=1)
  tree = aa.ArticleTree(problem, config)
  chosen, select = [], tree._select

  def recorded(node):
    i = select(node)
    if node is tree.root:
      chosen.append(i)
    return i

  tree._select = recorded
  for _ in range(60):
    expanded = [tree.root.children[i] is not None for i in range(len(tree.root.guesses))]
    tree.iterate()
    i = chosen[-1]
    if i < len(expanded) and expanded[i]:
      below = [c for c in tree.root.children[i] if isinstance(c, an.Node)]
      assert tree.visited >= 1 + len(below)  # every feedback, one path each
  assert len(tree.root.guesses) > 2  # the root is not cut
  widest = max(len(node.guesses) for node, _, _ in _parents(tree))
  assert widest <= 2  # below the root, the cut holds


def test_bench_article_exported_figure_stops_at_the_optimal_policy():
  bench = _bench()
  args = bench.build_parser().parse_args(
      ["--game", "mastermind", "--pegs", "3", "--colours", "3", "--figure", "exported",
       "--root", "thompson", "--root-live", "2", "--cap-iterations", "400"])
  problem, target = bench.problem_from(args)
  target = optimum(problem)
  for rule in ("thompson_avts", "laplace"):
    run = bench.run_one(problem, rule, 0, target, args)
    policies = [p["policy"] for p in run["curve"]]  # every iteration evaluated
    assert len(policies) == run["iterations"] and run["reached"]
    assert min(policies) >= target and policies[-1] == target
    assert all(p > target for p in policies[:-1])  # stopped at the first optimal policy
    assert run["policy"] == target
