"""Certified solving (``jaxsearch.solve``) and the ``solve`` / ``evaluate`` commands.

The oracles are docs/algorithms.md §6's exact totals (found there by exhaustive search, and
re-derived by brute force in ``tests/test_mastermind.py``). Small instances only in the default
suite (2×3 three ways, 2×4 through a top-2 cut and through the command line's default bound
slots); ``-m slow`` certifies (2, 2), (3, 2), (2, 4), (3, 3), (4, 3) and (3, 4) and runs the
README's headline command (4×6: 5625, proven).
"""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np

import pytest

from jaxsearch.games import mastermind, wordle
from jaxsearch import cli
from jaxsearch.guessing import policy_file
from jaxsearch import guessing as guessing_lib

OPTIMA = {(2, 2): 8, (2, 3): 21, (3, 2): 18, (2, 4): 45, (3, 3): 73, (4, 3): 246, (3, 4): 206}


def _walk_total(policy, pegs, colours):
  """The exported policy played against every secret with Mastermind's own rule, scored here
  in plain Python: shares no code with the solver, its extraction or ``policy_file``'s
  evaluator (whose figure ``result.evaluation`` is)."""
  from test_policy_file import codes, mm_score, walk_total
  return walk_total(policy, codes(pegs, colours), mm_score)


def _check_certified(pegs, colours, result):
  optimum = OPTIMA[(pegs, colours)]
  assert result.proven_optimal and result.proven_given_first
  assert result.upper_total_scope == "game"
  assert result.evaluation.total_guesses == optimum
  assert _walk_total(result.policy, pegs, colours) == optimum
  # The evaluated policy is never worse than the achievable bound; proven: both are optimal.
  assert result.evaluation.total_guesses <= result.bound_total + 1e-3
  assert abs(result.bound_total - optimum) < 1e-3
  assert abs(result.upper_total - optimum) < 1e-3


def test_bounds_meet_on_integer_totals_despite_float_sums():
  # float32 sums measured on Mastermind 2×3: both are 21 up to rounding.
  assert guessing_lib.meets(21.0000014, 20.9999993)
  assert guessing_lib.meets(21.0, 20.5)  # the optimum is an integer >= 20.5
  assert not guessing_lib.meets(22.0, 21.0)
  assert not guessing_lib.meets(21.0000014, 19.98)
  assert not guessing_lib.meets(21.0, None)


def test_small_mastermind_is_solved_and_certified():
  puzzle = mastermind.puzzle(2, 3, exact_search=False)
  result = guessing_lib.solve_puzzle(puzzle, seconds=120, chunk=32, max_nodes=4000,
                                  num_slots=None)
  _check_certified(2, 3, result)
  # The bounds only tighten, chunk after chunk.
  bounds = [h[2] for h in result.history]
  uppers = [h[3] for h in result.history]
  assert all(a >= b - 1e-3 for a, b in zip(bounds, bounds[1:]))
  assert all(a <= b + 1e-3 for a, b in zip(uppers, uppers[1:]))
  assert all(u <= b + 1e-3 for b, u in zip(bounds, uppers))


@pytest.mark.slow
def test_fixed_first_guess_solves_every_feedback_as_one_batch():
  puzzle = mastermind.puzzle(2, 3, exact_search=False)
  result = guessing_lib.solve_puzzle(puzzle, first="12", seconds=120, chunk=32, max_nodes=2000,
                                  num_slots=None)
  assert result.policy["guess"] == "12"
  assert _walk_total(result.policy, 2, 3) == 21
  # Every non-solving feedback of "12" on the 9 codes has its own sub-policy.
  feedbacks = {puzzle.score("12", code) for code in puzzle.secrets} - {"b2w0"}
  assert set(result.policy["children"]) == feedbacks
  # 21 is reachable with "12" first (the optimal opening of docs/algorithms.md's 2×3 is any
  # two-colour code), and proven optimal given that opening — only given it: that no other
  # first guess does better is not searched, so the game's optimum is not claimed.
  assert result.proven_given_first and result.evaluation.total_guesses == 21
  assert not result.proven_optimal and result.upper_total_scope == "given_first"


def test_openings_up_to_symmetry_give_an_unconditional_proof():
  """2×3 has two first guesses up to symmetry (11, 12); searching both as one batch finds the
  optimum and proves it outright (the optimistic bound is the best opening's)."""
  puzzle = mastermind.puzzle(2, 3, exact_search=False)
  assert puzzle.openings == ("11", "12")
  assert mastermind.openings(4, 6) == ("1111", "1112", "1122", "1123", "1234")
  result = guessing_lib.solve_puzzle(puzzle, openings=puzzle.openings, seconds=120, chunk=32,
                                  max_nodes=4000, num_slots=None)
  _check_certified(2, 3, result)


# A cut search proving on action bounds is in the default suite
# (test_cli_solve_exports_and_evaluate_reads_it: 2×4 with 4 slots, 3 of them for bounds); the
# refusal to claim a proof without them is checked here, under -m slow.
@pytest.mark.slow
def test_cut_search_proves_with_action_bounds_and_not_without():
  """With 2 slots per node (a cutoff) the actions left out keep the estimator's per-action
  bounds, so the proof still closes; an estimator without ``action_bounds`` leaves cut nodes
  at the game's counting bound and no proof is claimed (on 2×4 that bound, 42, is below the
  optimum 45). Either way the reported figure is the exact evaluation of the exported policy."""
  puzzle = mastermind.puzzle(2, 4, exact_search=False)
  # bind=None: the search uses this estimator as it is (not one rebuilt over the tables).
  without = dataclasses.replace(puzzle, estimator=lambda params, key, states: puzzle.estimator(
      params, key, states).replace(action_bounds=None), bind=None, tables=None)
  options = dict(seconds=60, max_simulations=64, chunk=32, max_nodes=2000, num_slots=2)
  proven = guessing_lib.solve_puzzle(puzzle, **options)
  _check_certified(2, 4, proven)
  result = guessing_lib.solve_puzzle(without, **options)
  assert not result.proven_optimal
  assert result.upper_total < OPTIMA[(2, 4)] - 0.5
  assert result.evaluation.total_guesses >= OPTIMA[(2, 4)]
  assert result.evaluation.total_guesses <= result.bound_total + 1e-3
  # The reported figure is the exported policy's, re-walked secret by secret.
  assert result.evaluation.total_guesses == _walk_total(result.policy, 2, 4)


def test_cli_solve_exports_and_evaluate_reads_it(tmp_path, capsys):
  """The command's default layout on a small instance: ``--slots 4`` keeps 4 guesses a node,
  3 of them (the default three quarters) for the best bounds among the guesses q̂1 left out
  — the 4×6 default's proof mechanism — and 2×4 is certified through it (45), by the
  openings up to symmetry as the default command does."""
  policy = tmp_path / "mm24.json"
  plot = tmp_path / "mm24.png"
  # --exact-search 0: the certificate rests on the tree alone (the mechanism under test).
  status = cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "4", "--slots", "4",
                     "--exact-search", "0", "--chunk", "16", "--nodes", "4000",
                     "--export", str(policy),
                     "--plot", str(plot), "--json", "--quiet"])
  assert status == 0
  lines = capsys.readouterr().out.strip().splitlines()
  summary = json.loads(lines[-1])
  assert summary["game"] == "mastermind" and summary["secrets"] == 16
  assert summary["first_guess"] == policy_file.load(policy)[1]["guess"]
  assert summary["total_guesses"] == 45 and summary["proven_optimal"] is True
  assert summary["expected_guesses"] == 45 / 16 and summary["seconds"] > 0
  assert plot.stat().st_size > 1000
  assert _walk_total(policy_file.load(policy)[1], 2, 4) == 45
  assert cli.main(["evaluate", str(policy), "--json"]) == 0
  assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["total_guesses"] == 45

  # A policy that misses a secret is rejected with the failing path.
  header, node = policy_file.load(policy)
  node["children"].pop(next(iter(node["children"])))
  broken = tmp_path / "broken.json"
  policy_file.save(broken, header, node)
  assert cli.main(["evaluate", str(broken)]) == 1
  assert "path" in capsys.readouterr().err


def test_cli_solve_rejects_bad_input(capsys, tmp_path):
  assert cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "2", "--first", "99",
                   "--quiet"]) == 2
  assert "--first" in capsys.readouterr().err
  assert cli.main(["solve", "wordle", "--answers", str(tmp_path / "missing.txt"),
                   "--guesses", str(tmp_path / "missing.txt"), "--quiet"]) == 2
  assert "wordle" in capsys.readouterr().err.lower()
  assert cli.main(["evaluate", str(tmp_path / "nothing.json")]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("pegs, colours, openings", [(2, 2, False), (3, 2, False), (2, 4, False),
                                                     (3, 3, False), (4, 3, True), (3, 4, True)])
def test_mastermind_instances_are_certified(pegs, colours, openings):
  """All of algorithms §6's small instances, certified. 4×3 and 3×4 need the openings up to
  symmetry: from one tree the optimistic bound stalls at 234 and 200 within 60k nodes."""
  puzzle = mastermind.puzzle(pegs, colours, exact_search=False)
  # The proof of the openings runs shows only in the final exact evaluation (the search's own
  # achievable bound stays above it), so their search runs to its time budget.
  result = guessing_lib.solve_puzzle(puzzle, openings=puzzle.openings if openings else None,
                                  seconds=150 if openings else 600, chunk=64,
                                  max_nodes=60_000, num_slots=None)
  _check_certified(pegs, colours, result)


def test_small_wordle_reaches_the_brute_force_optimum(tmp_path):
  """A synthetic Wordle (12 answers, 20 guesses over few letters, so feedbacks collide): the
  solver's exact total equals an exhaustive search's, and it is certified."""
  from test_wordle import _random_words, _solver  # the brute force lives with the game tests
  rng = np.random.default_rng(3)
  answers = sorted(_random_words(rng, 12))
  guesses = sorted(answers + _random_words(rng, 8, letters="abcdefg", exclude=answers))
  (tmp_path / "answers.txt").write_text("\n".join(answers) + "\n")
  (tmp_path / "guesses.txt").write_text("\n".join(guesses) + "\n")
  puzzle = wordle.puzzle(tmp_path / "answers.txt", tmp_path / "guesses.txt",
                         exact_search=False)
  game = wordle.make(answers, guesses)
  optimum = _solver(np.asarray(game.feedback), game.secret_of_guess)(
      frozenset(range(len(answers))))
  result = guessing_lib.solve_puzzle(puzzle, seconds=120, chunk=32, max_nodes=3000,
                                  num_slots=None)
  assert result.evaluation.total_guesses == optimum
  from test_policy_file import walk_total, wordle_score
  assert walk_total(result.policy, answers, wordle_score) == optimum
  assert result.proven_optimal


def test_gap_outcome_rule_needs_the_bellman_backup():
  import jaxsearch as js
  with pytest.raises(ValueError, match="gap"):
    js.search.SearchConfig(num_simulations=1, max_nodes=2, max_depth=1,
                           selection=js.selection.uct(), outcome_rule="gap")


def test_gap_rule_prefers_the_widest_weighted_gap_then_balances_ties():
  from jaxsearch.search.descent import choose_outcome
  probs = jnp.full((4,), 0.25)
  visits = jnp.array([5, 0, 2, 0])
  pick = jax.jit(choose_outcome, static_argnums=3)
  # Equal gaps (even the huge no-bound sentinel): the balanced rule decides.
  assert int(pick(probs, visits, None, "gap", jnp.full((4,), 3e38))) == 1
  assert int(pick(probs, visits, None, "gap", jnp.array([2.0, 2.0, 2.0, 2.0]))) == 1
  # A wider gap wins whatever the visits; zero-probability outcomes never.
  assert int(pick(probs, visits, None, "gap", jnp.array([3.0, 1.0, 1.0, 1.0]))) == 0
  assert int(pick(jnp.array([0.0, 0.5, 0.5, 0.0]), visits, None, "gap",
                  jnp.array([9.0, 1.0, 2.0, 9.0]))) == 2


@pytest.mark.slow
def test_proof_rule_reaches_slots_widening_has_not_activated():
  """The optimistic rule sees every candidate slot: with q̂1 ranking the guesses in the
  reverse order of their bounds, progressive widening activates the worst-bound slot first,
  yet the first proof simulation goes to the best-bound guess (the last slot) and activates
  every slot up to it. Before, a node whose best bound sat on an inactive slot could never be
  proven and a better guess there never tried (the 4×6 sub-problem b0w1 stuck at 976)."""
  import jaxsearch as js
  puzzle = mastermind.puzzle(2, 4, exact_search=False)

  def reversed_estimator(params, key, states):
    estimate = puzzle.estimator(params, key, states)
    finite = jnp.isfinite(estimate.action_values)
    return estimate.replace(action_values=jnp.where(
        finite, -10.0 - estimate.action_bounds, -jnp.inf))

  search = js.policies.avts(puzzle.game, reversed_estimator, num_simulations=1, max_nodes=64,
                            num_slots=None, selection=js.selection.optimistic())
  assert search.config.avts.widening
  roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  key = jax.random.PRNGKey(0)
  by_key = jax.jit(jax.vmap(lambda k: search(None, k, roots).tree))(key[None])
  for tree in (jax.jit(search)(None, key, roots).tree, jax.tree.map(lambda x: x[0], by_key)):
    legal = np.asarray(tree.slots.legal[0, 0])
    bounds = np.asarray(reversed_estimator(None, None, roots).action_bounds[0])
    actions = np.asarray(tree.slots.actions()[0, 0])
    visited = int(np.flatnonzero(np.asarray(tree.slots.visits[0, 0]) > 0)[0])
    assert bounds[actions[visited]] == bounds[actions[legal]].max()
    assert visited == int(legal.sum()) - 1  # the last candidate slot
    assert int(tree.nodes.num_active[0, 0]) == visited + 1


def test_nonfinite_action_bounds_count_and_fall_back_to_the_node_bound():
  """NaN or ``+inf`` action bounds are misbehaviour: counted in ``nonfinite_estimates``, and
  the actions get no bound of their own (the node's counting bound stays), so nothing is
  certified through them: on 2×4 the result is the no-bounds one (42 < 45, unproven)."""
  puzzle = mastermind.puzzle(2, 4, exact_search=False)

  def broken(params, key, states):
    estimate = puzzle.estimator(params, key, states)
    bounds = estimate.action_bounds
    bad = jnp.where(jnp.arange(bounds.shape[-1]) % 2 == 0, jnp.nan, jnp.inf)
    return estimate.replace(action_bounds=jnp.where(jnp.isfinite(bounds), bad, bounds))

  found = guessing_lib.solve(dataclasses.replace(puzzle, estimator=broken, bind=None,
                                              tables=None), seconds=60,
                          max_simulations=64, chunk=32, max_nodes=2000, num_slots=2)
  tree, = found.trees
  assert int(np.asarray(tree.nonfinite_estimates)[0]) > 0
  assert np.all(np.isfinite(np.asarray(tree.bounds.upper)))
  assert float(found.upper[0]) < OPTIMA[(2, 4)] - 0.5 and not found.proven


@pytest.mark.slow
def test_bound_slots_hold_the_best_bounds_q1_left_out():
  """``bound_slots=2`` of ``K = 4``: slots 0-1 are the best q̂1, slots 2-3 the best action
  bounds among the other guesses; bad settings are refused. (Under jit only, to save a
  compile: the layout is computed row by row in ``node_update``, and searches run under vmap
  in the widening test above and in ``test_search.py``.)"""
  import jaxsearch as js
  puzzle = mastermind.puzzle(3, 3, symmetry=False, exact_search=False)  # 27 distinct guesses
  search = js.policies.avts(puzzle.game, puzzle.estimator, num_simulations=1, max_nodes=64,
                            num_slots=4, bound_slots=2)
  roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  estimate = puzzle.estimator(None, None, roots)
  q = np.asarray(estimate.action_values[0])
  bounds = np.asarray(estimate.action_bounds[0])
  tree = jax.jit(search)(None, jax.random.PRNGKey(0), roots).tree
  actions = np.asarray(tree.slots.actions()[0, 0])
  assert np.all(np.asarray(tree.slots.legal[0, 0]))
  assert len(set(actions.tolist())) == 4
  usable = np.isfinite(q)
  np.testing.assert_allclose(q[actions[:2]], np.sort(q[usable])[::-1][:2])
  rest = usable.copy()
  rest[actions[:2]] = False
  np.testing.assert_allclose(bounds[actions[2:]], np.sort(bounds[rest])[::-1][:2])
  for bad in (-1, 4, 5):
    with pytest.raises(ValueError, match="bound_slots"):
      js.search.SearchConfig(num_simulations=1, max_nodes=2, max_depth=1, num_slots=4,
                             avts=js.search.AvtsOptions(bound_slots=bad),
                             selection=js.selection.uct())


@pytest.mark.slow
@pytest.mark.parametrize("method", ["auto", "tree"])
def test_the_default_command_proves_5625(capsys, method):
  """The README's headline, exactly as a user types it: ``jaxsearch solve mastermind --json``
  finds 5625 and proves it, by the exact search of the whole game (seconds) or, with
  ``--method tree``, by the trees (128 slots, 96 of them bound slots, the five openings up
  to symmetry; about a minute on 2 cores and 2 GB; a slower machine may run out of its
  budget before the proof closes); the exported figure is re-walked secret by secret."""
  status = cli.main(["solve", "mastermind", "--json", "--quiet", "--export", "/dev/null",
                     "--method", method])
  assert status == 0
  summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert (summary["simulations"] > 0) == (method == "tree")
  assert summary["secrets"] == 1296
  assert summary["total_guesses"] == 5625 and summary["proven_optimal"] is True
  assert summary["worst_case"] == 6
  assert abs(summary["achievable_total"] - 5625) < 1e-3
  assert abs(summary["lower_bound_total"] - 5625) < 1e-3


@pytest.mark.slow
def test_solver_rows_do_not_depend_on_the_batch():
  """``solve`` on B = 3 sub-problems and on B = 8 whose first three are the same (3×3, the
  states after every feedback of the first guesses): the three trees and their bounds are
  identical (per-root keys, no statistic mixing rows; ``combine`` never proves, so both
  runs take the same chunks). Slow (30 s): the default suite checks the same property of the
  search itself after every simulation
  (``tests/test_properties.py::test_avts_rows_do_not_depend_on_the_batch``)."""
  puzzle = mastermind.puzzle(3, 3, exact_search=False)
  game, start = puzzle.game, puzzle.initial_state
  states = []
  for action in range(len(puzzle.guess_names)):
    probs = np.asarray(game.outcome_probs(start, jnp.int32(action)))
    states += [game.step(start, jnp.int32(action), jnp.int32(o)).state
               for o in np.flatnonzero(probs > 0) if o != puzzle.solved_outcome]
  assert len(states) >= 8
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states[:8])
  options = dict(seconds=600, max_simulations=16, chunk=8, max_nodes=128, num_slots=8,
                 bound_slots=4, extract=False, combine=lambda bound, upper: (0.0, None))
  wide = guessing_lib.solve(puzzle, roots, **options)
  narrow = guessing_lib.solve(puzzle, jax.tree.map(lambda x: x[:3], roots), **options)
  assert wide.simulations == narrow.simulations == 16
  np.testing.assert_array_equal(narrow.bound, wide.bound[:3])
  np.testing.assert_array_equal(narrow.upper, wide.upper[:3])
  assert len(narrow.trees) == 3 and len(wide.trees) == 8
  for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(narrow.trees),
                          jax.tree.leaves(wide.trees[:3]), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y),
                                  err_msg=jax.tree_util.keystr(path))
  assert all(int(tree.num_nodes[0]) > 1 for tree in narrow.trees)
