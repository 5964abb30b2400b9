"""Exact certificates, bounded memory and the solver's compiled programs.

* :class:`jaxsearch.guessing.exact.ExactBounds` — the integer bounds a certificate is checked with —
  are admissible against brute-force optima, and the guesses they leave out are never needed;
* :func:`jaxsearch.guessing.certificates` accepts true claims and refuses false ones that a float
  tolerance would have accepted;
* a run whose memory estimate exceeds the budget is refused before it starts;
* the search's chunked expansion and its smaller chance-record capacity give the same trees;
* the solver's programs take the feedback table as an input instead of embedding it.
"""

import dataclasses
import re
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch.guessing import exact as guessing_exact
from jaxsearch.games import mastermind as mm
from jaxsearch.games import wordle
from jaxsearch import cli
from jaxsearch import guessing as guessing_lib
from jaxsearch import solve as solve_lib
from jaxsearch.guessing import extract
from jaxsearch.solve import chunked, tree_reader
from test_mastermind import _optimal_total  # the exhaustive optimum, [G, S] table

WORDS = ["cigar", "rebut", "sissy", "humph", "awake", "blush", "focal", "evade", "naval",
         "serve", "heath", "dwarf", "model", "karma", "stink", "grade", "quiet", "bench"]
EXTRA = ["tarse", "crane", "slate", "pious", "lymph"]


def _played_total(puzzle, policy: dict, secrets) -> int:
  """Guesses an exported policy takes over ``secrets`` (indices), played secret by secret."""
  total = 0
  for secret in secrets:
    node, answer = policy, puzzle.secrets[secret]
    total += 1
    while node["guess"] != answer:
      node = node["children"][puzzle.score(node["guess"], answer)]
      total += 1
  return total


def _split_total(table, solved, secrets, guess):
  """Exact optimum of the policies that start with ``guess`` (``table`` is ``[G, S]``)."""
  parts = defaultdict(list)
  for s in secrets:
    parts[int(table[guess, s])].append(int(s))
  return len(secrets) + sum(_optimal_total(table, solved, part)
                            for code, part in parts.items() if code != solved)


def _check_admissible(exact, table, solved, secret_sets, symmetric_state=None):
  tight = 0
  for secrets in secret_sets:
    optimum = _optimal_total(table, solved, list(secrets))
    assert exact.node_total(len(secrets)) <= optimum
    totals, considered = exact.action_totals(np.asarray(secrets), symmetric_state)
    best = None
    for guess in range(table.shape[0]):
      cost = _split_total(table, solved, secrets, guess)
      assert totals[guess] <= cost, (secrets, guess, totals[guess], cost)
      tight += totals[guess] == cost
      if considered[guess]:
        best = cost if best is None else min(best, cost)
    # The guesses left out are never needed: the optimum is reached among the others.
    assert best == optimum
  assert tight > 0  # the bound is attained somewhere: not trivially loose


def test_exact_bounds_are_admissible_on_mastermind_by_brute_force():
  m = mm.make(3, 3)
  table = np.asarray(m.feedback)
  rng = np.random.default_rng(3)
  sets = [np.flatnonzero(rng.random(27) < p) for p in (0.15, 0.25, 0.35, 0.5)]
  sets = [s for s in sets if len(s) >= 2] + [np.arange(27)]
  _check_admissible(m.exact_bounds, table, m.solved_code, sets)


def test_exact_bounds_are_admissible_on_wordle_by_brute_force():
  w = wordle.make(WORDS, WORDS + EXTRA)
  table = np.asarray(w.feedback)  # [G, S]
  rng = np.random.default_rng(5)
  sets = [np.sort(rng.choice(len(WORDS), size, replace=False)) for size in (3, 5, 8)]
  _check_admissible(w.exact_bounds, table, wordle.SOLVED, sets + [np.arange(len(WORDS))])


def test_symmetric_guesses_left_out_never_matter():
  """With Mastermind's symmetry, the guesses the state marks redundant are left out of the
  certificate; at the empty board of 2 × 3 only the two openings up to symmetry remain, and
  the optimum is still reached among them."""
  m = mm.make(2, 3, symmetry=True)
  state = jax.tree.map(np.asarray, m.initial_state())
  totals, considered = m.exact_bounds.action_totals(np.arange(9), state)
  assert sorted(m.code_string(g) for g in np.flatnonzero(considered)) == ["11", "12"]
  _check_admissible(m.exact_bounds, np.asarray(m.feedback), m.solved_code, [np.arange(9)],
                    state)


@pytest.fixture(scope="module")
def solved_3x3():
  puzzle = mm.puzzle(3, 3, exact_search=False)
  found = guessing_lib.solve(puzzle, seconds=120, chunk=32, max_nodes=4000, num_slots=None)
  return puzzle, found, found.trees


def test_certificate_accepts_the_optimum_and_refuses_more(solved_3x3):
  puzzle, found, trees = solved_3x3
  optimum = 73
  assert abs(float(found.upper[0]) - optimum) < 1e-3  # the float bounds met
  assert guessing_lib.certify(puzzle, trees, [0], optimum)
  assert not guessing_lib.certify(puzzle, trees, [0], optimum + 1)  # false: 73 is reachable


def test_a_float_tolerance_would_have_proven_a_false_claim(solved_3x3):
  """The claim "nothing beats 74" is false (73 is reachable). Make the root's float bound
  read 73.995 — the kind of error float32 sums over many outcomes make — and the old
  comparison with its 0.01 tolerance calls 74 proven; the exact certificate does not."""
  puzzle, _, trees = solved_3x3
  n = 27
  tree, = trees
  tampered = [tree.replace(bounds=tree.bounds.replace(upper=tree.bounds.upper.copy()))]
  tampered[0].bounds.upper[0, 0] = -np.float32(73.995) / n
  assert guessing_lib.meets(74.0, float(-tampered[0].bounds.upper[0, 0] * n))
  assert not guessing_lib.certify(puzzle, tampered, [0], 74)
  # Without the game's exact bounds nothing is certified, however the floats read.
  assert not guessing_lib.certify(dataclasses.replace(puzzle, exact=None), trees, [0], 73)


@pytest.mark.slow
def test_small_chunks_still_reach_every_depth():
  """Depth is independent of the chunk: with one simulation per call the proof still needs
  nodes four guesses deep, and gets them."""
  puzzle = mm.puzzle(2, 3, exact_search=False)
  result = guessing_lib.solve_puzzle(puzzle, seconds=120, chunk=1, max_simulations=64,
                                  max_nodes=2000, num_slots=None)
  assert result.proven_optimal and result.evaluation.total_guesses == 21


def test_a_run_over_the_memory_budget_is_refused_with_the_estimate(capsys):
  puzzle = mm.puzzle(2, 3, exact_search=False)
  with pytest.raises(solve_lib.MemoryBudgetError, match=r"50000 nodes × [0-9,]+ bytes.*--nodes"):
    guessing_lib.solve(puzzle, max_nodes=50_000, memory=1 << 20)
  assert cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "3", "--memory",
                   "0.01", "--quiet", "--method", "tree"]) == 2
  err = capsys.readouterr().err
  assert "refused" in err and "GB" in err and "--nodes" in err and "Traceback" not in err


def test_estimate_counts_the_allocated_trees():
  puzzle = mm.puzzle(2, 3, exact_search=False)
  options = solve_lib.SolveOptions.from_keywords(chunk=4, max_nodes=100, max_depth=8,
                                                 num_slots=None, max_chance=50)
  init, _ = chunked._program(puzzle, options.search_config(puzzle.game))
  roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  key = jax.random.PRNGKey(0)
  estimate = solve_lib.estimate_memory(puzzle, init, puzzle.tables, key, roots)
  trees = init(puzzle.tables, key, roots)
  assert estimate.trees == trees.nbytes() and estimate.nodes == 100
  assert trees.max_chance == 50


@pytest.fixture(scope="module")
def small_avts():
  m = mm.make(3, 3)
  roots = jax.tree.map(lambda x: jnp.stack([x] * 3), m.initial_state())

  def run(**kwargs):
    search = js.policies.avts(m.game, m.estimator, num_simulations=12, max_nodes=400,
                              num_slots=8, **kwargs)
    return jax.jit(search)(None, jax.random.PRNGKey(0), roots).tree

  return run


@pytest.mark.slow
def test_chunked_expansion_gives_the_same_trees(small_avts):
  """``expand_chunk`` smaller than ``B·O`` (here 3 · 9): the possible outcomes are evaluated
  a chunk at a time; the trees are bit-identical to one call for all. (Slow: the default suite
  pins chunked expansion bit for bit through the recorded ``avts_chance`` golden tree.)"""
  dense, chunked = small_avts(), small_avts(expand_chunk=5)
  same = jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), dense, chunked)
  assert all(jax.tree.leaves(same))
  assert int(np.asarray(dense.num_nodes).min()) > 12  # several outcomes per expansion


@pytest.mark.slow
def test_fewer_chance_records_stop_growth_and_keep_the_tree_consistent(small_avts):
  few = small_avts(max_chance=4)
  assert few.chance.prob.shape[1] == 4
  # 12 simulations would create up to 12 records: growth stops at the capacity, and with it
  # the nodes (every node but the root is an outcome of a record).
  np.testing.assert_array_equal(np.asarray(few.num_chance), 4)
  assert np.all(np.asarray(few.num_nodes) <= 1 + 4 * few.num_outcomes)
  # Every record's children exist and point back to the record's node.
  child = np.asarray(few.chance.child)
  parent = np.asarray(few.nodes.parent)
  owner = np.asarray(few.chance.node)
  for b in range(3):
    for c in range(int(few.num_chance[b])):
      kids = child[b, c][child[b, c] >= 0]
      assert np.all(kids < int(few.num_nodes[b])) and np.all(parent[b, kids] == owner[b, c])
  # Reroot keeps the smaller capacity.
  rerooted = js.reroot(few, jnp.asarray(np.asarray(few.slots.actions()[:, 0, 0])), 0)
  assert rerooted.chance.prob.shape == few.chance.prob.shape
  config = dict(num_simulations=4, max_nodes=8, max_depth=4, selection=js.selection.puct())
  options = js.search.AvtsOptions
  with pytest.raises(ValueError, match="max_chance needs backup='bellman'"):
    js.search.SearchConfig(**config, avts=options(max_chance=3))
  for bad in (0, 9, 2.5):
    with pytest.raises(ValueError, match="max_chance must be an int in"):
      js.search.SearchConfig(**config, backup="bellman", avts=options(max_chance=bad))
  with pytest.raises(ValueError, match="expand_chunk must be a positive int"):
    js.search.SearchConfig(**config, backup="bellman", avts=options(expand_chunk=0))


def test_solver_programs_take_the_table_as_an_input():
  """A closed-over table is embedded in the compiled program as a constant (for Wordle's
  47 MB, GBs of compile-time memory); the solver builds the game inside the traced function
  from the table passed as an argument."""
  puzzle = mm.puzzle(4, 4, exact_search=False)  # table u8[256, 256]
  options = solve_lib.SolveOptions.from_keywords(chunk=2, max_nodes=64, max_depth=8,
                                                 num_slots=8, max_chance=32)
  init, step = chunked._program(puzzle, options.search_config(puzzle.game))
  roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  key = jax.random.PRNGKey(0)
  trees = jax.eval_shape(init, puzzle.tables, key, roots)
  text = step.lower(puzzle.tables, key, roots, trees).as_text()
  constants = re.findall(r"constant[^\n]*tensor<256x256xui8>", text)
  assert not constants
  assert "tensor<256x256xui8>" in text  # the table is there, as an input
  # The closure version does embed it (what the solver avoids).
  closed = jax.jit(js.policies.avts(puzzle.game, puzzle.estimator, num_simulations=2,
                                    max_nodes=64, max_depth=8, num_slots=8).init_tree)
  assert re.findall(r"constant[^\n]*tensor<256x256xui8>",
                    closed.lower(None, key, roots).as_text())


def test_regrown_trees_keep_every_node_and_search_on(small_avts):
  """The solver moves open sub-problems into larger trees (more nodes and records): every
  existing entry keeps its index and value, the new entries are fresh, and the search
  continues in the larger trees."""
  m = mm.make(3, 3)
  roots = jax.tree.map(lambda x: jnp.stack([x] * 3), m.initial_state())
  small = small_avts()
  larger = js.policies.avts(m.game, m.estimator, num_simulations=12, max_nodes=800,
                            num_slots=8, max_chance=700)
  fresh = jax.jit(larger.init_tree)(None, jax.random.PRNGKey(1), roots)
  grown = chunked._regrow(small, fresh)
  assert grown.nodes.visits.shape == (3, 800) and grown.chance.prob.shape == (3, 700, 9)
  for old, new in zip(jax.tree.leaves(small), jax.tree.leaves(grown)):
    head = tuple(slice(0, size) for size in old.shape)
    assert np.array_equal(np.asarray(new)[head], np.asarray(old))
  assert np.all(np.asarray(grown.nodes.parent)[:, 400:] == -1)
  after = jax.jit(larger)(None, jax.random.PRNGKey(2), roots, grown).tree
  assert np.all(np.asarray(after.num_nodes) > np.asarray(small.num_nodes))
  assert np.all(np.asarray(after.nodes.visits)[:, 0] == np.asarray(small.nodes.visits)[:, 0] + 12)


def test_exact_search_closes_what_a_small_tree_cannot():
  """A tree of 4 simulations on Mastermind 3×4 (64 codes) proves nothing by itself; the game's
  exact search of small sets (:class:`jaxsearch.guessing.exact.ExactSolver`) settles the guesses
  it never expanded and the children it could not, and proves the optimum 206 — never 207."""
  tree_only = mm.puzzle(3, 4, symmetry=False, exact_search=False)
  with_search = dataclasses.replace(
      tree_only, exact=dataclasses.replace(tree_only.exact, search_secrets=64))
  assert tree_only.exact.search_secrets == 0
  trees = guessing_lib.solve(tree_only, seconds=60, max_simulations=4, chunk=4, max_nodes=1000,
                          num_slots=None).trees
  assert not guessing_lib.certify(tree_only, trees, [0], 206)
  assert guessing_lib.certify(with_search, trees, [0], 206)
  assert not guessing_lib.certify(with_search, trees, [0], 207)


@pytest.mark.slow
def test_sub_problems_certified_in_worker_processes_as_in_one(tmp_path):
  """Certificates of a fixed first guess's sub-problems, two worker processes against one
  (Wordle's exact bounds are plain arrays, so they can be sent to the workers)."""
  (tmp_path / "a.txt").write_text("\n".join(WORDS))
  (tmp_path / "g.txt").write_text("\n".join(WORDS + EXTRA))
  puzzle = wordle.puzzle(tmp_path / "a.txt", tmp_path / "g.txt")
  outcomes, states = guessing_lib.opening_roots(puzzle, "tarse")
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  trees = guessing_lib.solve(puzzle, roots, seconds=60, max_simulations=8, chunk=8,
                          max_nodes=600, num_slots=None, extract=False).trees
  targets = {row: extract.PolicyExtractor(puzzle, trees[row]).best(0)[0]
             for row in range(len(states))}
  serial = guessing_lib.settle_each(puzzle, trees, targets, workers=1)
  parallel = guessing_lib.settle_each(puzzle, trees, targets, workers=2)
  assert parallel == serial
  table = np.asarray(puzzle.table).T  # [G, S]
  for row, found in serial.items():
    secrets = tree_reader.TreeReader(trees[row]).secrets_at(0, len(WORDS))
    # Each sub-problem ends at its brute-force optimum, proven: the tree's policy where it
    # is optimal, else the exact search's, which plays out to the total it reports.
    assert found.proven and found.total == _optimal_total(table, puzzle.solved_outcome, secrets)
    assert (found.policy is None) == (found.total == targets[row])
    if found.policy is not None:
      named = solve_lib.puzzle.exported_policy(puzzle, found.policy)
      assert _played_total(puzzle, named, secrets) == found.total


def test_exact_search_replaces_a_tree_policy_that_is_not_optimal():
  """One simulation leaves Mastermind 3×4's tree policy above the optimum (206); the
  certificate's exact search finds the optimal policy, which is exported and evaluated."""
  options = dict(seconds=60, max_simulations=1, chunk=1, max_nodes=1000, num_slots=None)
  tree_only = guessing_lib.solve_puzzle(mm.puzzle(3, 4, exact_search=False), **options)
  assert tree_only.evaluation.total_guesses > 206 and not tree_only.proven_optimal
  result = guessing_lib.solve_puzzle(mm.puzzle(3, 4), **options)
  assert result.evaluation.total_guesses == 206 and result.proven_optimal
  assert result.upper_total == 206


@pytest.mark.slow
def test_exact_search_replaces_sub_problem_policies_after_a_first_guess():
  """The same with a fixed first guess (Mastermind 4×3 after ``1111``, where one simulation
  leaves 297 against 291): every feedback's sub-problem whose tree policy is not optimal
  gets the exact search's, and the whole is proven at the optimum (the exact solver's, which
  tests/test_guessing_exact.py checks against brute force)."""
  puzzle = mm.puzzle(4, 3)
  solver = guessing_exact.ExactSolver(puzzle.exact)
  feedback = puzzle.table[:, puzzle.guess_names.index("1111")]
  optimum = len(puzzle.secrets) + sum(solver.optimum(np.flatnonzero(feedback == code))
                                      for code in np.unique(feedback)
                                      if code != puzzle.solved_outcome)
  options = dict(seconds=60, max_simulations=1, chunk=1, max_nodes=1000, num_slots=None)
  tree_only = guessing_lib.solve_puzzle(mm.puzzle(4, 3, exact_search=False), first="1111",
                                     **options)
  assert tree_only.evaluation.total_guesses > optimum
  result = guessing_lib.solve_puzzle(puzzle, first="1111", **options)
  # Proven given the first guess (only: the other first guesses are not searched).
  assert result.evaluation.total_guesses == optimum and result.proven_given_first
  assert result.subproblems[0] == result.subproblems[1]


def test_worker_processes_do_not_rerun_an_unguarded_script(tmp_path):
  """A user's script that solves at top level, with no ``if __name__ == "__main__"`` guard,
  runs once: the spawned certificate workers do not re-import it."""
  (tmp_path / "a.txt").write_text("\n".join(WORDS))
  (tmp_path / "g.txt").write_text("\n".join(WORDS + EXTRA))
  script = tmp_path / "solve_it.py"
  script.write_text(
      "import sys\n"
      "from jaxsearch.games import wordle\n"
      "from jaxsearch import solve\n"
      "print('top level ran', flush=True)\n"
      f"puzzle = wordle.puzzle({str(tmp_path / 'a.txt')!r}, {str(tmp_path / 'g.txt')!r})\n"
      "result = solve.solve_puzzle(puzzle, first='tarse', seconds=60, max_simulations=4,\n"
      "                            chunk=4, max_nodes=600, num_slots=None)\n"
      "print('total', result.evaluation.total_guesses, result.proven_given_first)\n")
  import os
  import subprocess
  import sys
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(__import__("pathlib").Path(__file__).resolve().parents[1])] +
      os.environ.get("PYTHONPATH", "").split(os.pathsep)))
  done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                        env=env, timeout=600)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.count("top level ran") == 1
  assert "True" in done.stdout.splitlines()[-1]
