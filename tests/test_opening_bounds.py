"""Lower bounds on each first guess's best total (:mod:`jaxsearch.guessing.openings`).

* the one-step bound is the solver's own bound on every first guess;
* both bounds are admissible — never above the exact optimum given the opening, by the exact
  search (:class:`jaxsearch.guessing.exact.ExactSolver`, itself checked against brute
  force in tests/test_guessing_exact.py) on every opening of tiny games — the two-step one is
  never weaker, and both are tight somewhere;
* the batched JAX kernel equals the part-by-part numpy reference, chunked in awkward sizes;
* on the shipped Wordle lists (slow), ``tarse``: 9408 (one step), 10911 (two steps) against
  its optimum 11219.
"""

import numpy as np
import pytest

from jaxsearch.guessing import openings
from jaxsearch.games import mastermind, wordle
from jaxsearch.guessing.exact import ExactSolver

ANSWERS = ["cigar", "rebut", "sissy", "humph", "awake", "blush", "focal", "evade", "naval",
           "serve", "heath", "dwarf", "model", "karma", "stink", "grade", "quiet", "bench",
           "eerie", "eater", "creek", "geese",
           "fight", "light", "might", "night", "right", "sight", "tight", "wight"]
EXTRA = ["tarse", "crane", "lymph", "eeeee", "zzzzz", "flmns"]


def _tiny_wordle(tmp_path):
  # Repeated letters (eerie, geese, eeeee) exercise yellows; "zzzzz" teaches nothing, so some
  # first guess leaves one part of every answer. The "-ight" answers split poorly on any of
  # themselves; "flmns", no answer, tells five of them apart: the best second guess after
  # some openings is not a candidate, so a bound that tried only candidates would overshoot.
  (tmp_path / "a.txt").write_text("\n".join(ANSWERS))
  (tmp_path / "g.txt").write_text("\n".join(ANSWERS + EXTRA))
  return wordle.puzzle(tmp_path / "a.txt", tmp_path / "g.txt")


@pytest.fixture(scope="module", params=["mastermind_2x3", "mastermind_2x4",
                                        "mastermind_3x3", "wordle_30"])
def game(request, tmp_path_factory):
  """``(puzzle, exact optimum given each opening int64[G])``."""
  if request.param == "wordle_30":
    puzzle = _tiny_wordle(tmp_path_factory.mktemp("wordle"))
  else:
    pegs, colours = (int(x) for x in request.param.split("_")[1].split("x"))
    puzzle = mastermind.puzzle(pegs, colours)
  solver = ExactSolver(puzzle.exact)
  table = np.asarray(puzzle.table)
  optimum = []
  for opening in range(table.shape[1]):
    codes = table[:, opening]
    optimum.append(len(codes) + sum(solver.optimum(np.flatnonzero(codes == code))
                                    for code in np.unique(codes)
                                    if code != puzzle.solved_outcome))
  return puzzle, np.asarray(optimum, np.int64)


def test_one_step_is_the_solvers_bound_on_every_first_guess(game):
  puzzle, _ = game
  table = np.asarray(puzzle.table)
  histogram = openings.feedback_histogram(table, puzzle.game.num_outcomes, rows_per_chunk=5)
  for g in range(table.shape[1]):
    assert histogram[g].tolist() == np.bincount(
        table[:, g], minlength=puzzle.game.num_outcomes).tolist()
  totals, _ = puzzle.exact.action_totals(np.arange(table.shape[0]))
  assert openings.opening_bounds(puzzle).tolist() == totals.tolist()
  assert openings.opening_bounds(puzzle).dtype == np.int64


def test_bounds_are_admissible_stronger_in_two_steps_and_tight(game):
  puzzle, optimum = game
  everything = np.arange(puzzle.table.shape[1])
  one = openings.opening_bounds(puzzle)
  two = openings.two_step_bounds(puzzle, everything, engine="numpy")
  assert np.all(one <= two) and np.all(two <= optimum), (one, two, optimum)
  assert np.any(two > one)  # the second step adds something
  assert np.any(two == optimum)  # and is exact somewhere: not a vacuous bound
  # So the best opening's optimum is never below the least bound (what the script's "cannot
  # beat" rests on).
  assert two.min() <= optimum.min()


def test_jax_kernel_equals_the_numpy_reference(game):
  puzzle, _ = game
  everything = np.arange(puzzle.table.shape[1])
  reference = openings.two_step_bounds(puzzle, everything, engine="numpy")
  # 4 openings a chunk and 7 guesses a chunk divide no game's G here: the openings are
  # padded, the last guess chunk shifted back.
  chunked = openings.two_step_bounds(puzzle, everything, engine="jax", opening_chunk=4,
                                     guess_chunk=7)
  assert chunked.tolist() == reference.tolist()
  wide = openings.two_step_bounds(puzzle, everything[::-1], engine="jax", guess_chunk=1000,
                                  count_dtype="int32")
  assert wide.tolist() == reference[::-1].tolist()


def test_kernel_refuses_too_few_part_slots():
  puzzle = mastermind.puzzle(2, 3)
  needed = openings.searched_parts(openings.feedback_histogram(puzzle.table, 5),
                                   puzzle.solved_outcome).max()
  assert needed >= 1
  with pytest.raises(ValueError, match="max_parts"):
    openings.two_step_bounds(puzzle, [0, 1], engine="jax", max_parts=int(needed) - 1)
  with pytest.raises(ValueError, match="guess indices"):
    openings.two_step_bounds(puzzle, [9], engine="numpy")


@pytest.mark.slow
def test_tarse_on_the_shipped_lists():
  """The figures of docs/solving.md: ``tarse``'s optimum is 11219; its one-step bound is 9408
  and its two-step bound 10911 (also the sum of its 158 sub-problems' one-step bounds);
  19 first guesses have a one-step bound of 11219 or more. Slow (``pytest -m slow``): about
  10 s to build the lists' table and 10 s for the kernel at the tests' XLA optimisation level
  0, on this shared 2-core CPU."""
  puzzle = wordle.puzzle(*wordle.default_paths())
  tarse = puzzle.guess_names.index("tarse")
  one = openings.opening_bounds(puzzle)
  assert one[tarse] == 9408
  assert int((one >= 11219).sum()) == 19
  assert openings.two_step_bounds(puzzle, [tarse], engine="numpy").tolist() == [10911]
  assert openings.two_step_bounds(puzzle, [tarse], engine="jax").tolist() == [10911]
