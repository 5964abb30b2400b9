"""The solver's typed options and results (``jaxsearch.solve.options``): a bad option is refused
with a clear message before any work (here no puzzle is even looked at), keywords and
``options=`` are one thing, derived options never edit the caller's, the one
``SearchConfig`` builder makes what the solver always searched with, and the certificates'
view of a game checks its capabilities once."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import jaxsearch as js
from jaxsearch import guessing as guessing_lib
from jaxsearch import solve as solve_lib
from jaxsearch.enums import Variance
from jaxsearch.games import mastermind
from jaxsearch.guessing import puzzle as puzzle_lib
from jaxsearch.solve.options import Budget, Capacity, SearchRule, SolveOptions


@pytest.mark.parametrize("keywords, needle", [
    (dict(seconds=math.nan), "seconds must be a non-negative number"),
    (dict(seconds=-1), "seconds must be a non-negative number"),
    (dict(certify_seconds=-0.5), "certify_seconds"),
    (dict(max_simulations=0), "max_simulations must be an int >= 1 or None"),
    (dict(max_simulations=2.5), "max_simulations"),
    (dict(max_nodes=0), "max_nodes must be an int >= 1"),
    (dict(max_nodes=10, chunk=16), r"a tree needs chunk \+ 1 = 17 nodes"),
    (dict(num_slots=0), "num_slots"),
    (dict(bound_slots=-1), "bound_slots"),
    (dict(num_slots=4, bound_slots=4), r"bound_slots must be in \[0, num_slots\), got 4"),
    (dict(max_chance=0), "max_chance"),
    (dict(max_depth=0), "max_depth"),
    (dict(memory=0), "memory must be a positive finite number"),
    (dict(memory=math.inf), "memory must be a positive finite number"),
    (dict(chunk=0), "chunk must be an int >= 1"),
    (dict(chunk=True), "chunk must be an int >= 1"),
    (dict(seed=1.5), "seed must be an int"),
    (dict(variance="bogus"), "variance must be one of 'avts'"),
    (dict(proof_every=-1), "proof_every"),
    (dict(checkpoint_seconds=math.nan), "checkpoint_seconds must be a non-negative number"),
    (dict(resume=True), "resume needs a checkpoint directory"),
    (dict(devices=1, checkpoint="ck"), "a checkpoint cannot be kept of a search split over "
                                       "devices"),
])
def test_bad_options_are_refused_before_any_work(keywords, needle):
  """``puzzle=None``: the refusal comes before the puzzle is touched, let alone searched."""
  with pytest.raises(ValueError, match=needle):
    guessing_lib.solve_puzzle(None, **keywords)
  with pytest.raises(ValueError, match=needle):
    SolveOptions.from_keywords(**keywords)


def test_unknown_keywords_and_wrong_types_are_type_errors():
  with pytest.raises(TypeError, match=r"solve_puzzle: unknown option secs; the options are "
                                      r"seconds, max_simulations"):
    guessing_lib.solve_puzzle(None, secs=10)
  with pytest.raises(TypeError, match="solve: unknown options chunks, nodes"):
    guessing_lib.solve(None, chunks=4, nodes=100)
  with pytest.raises(TypeError, match="solve_game: unknown option"):
    solve_lib.solve_game(None, None, None, bogus=1)
  with pytest.raises(TypeError, match="options must be a SolveOptions"):
    guessing_lib.solve_puzzle(None, options={"seconds": 1})
  with pytest.raises(TypeError, match="selection must be a jaxsearch.selection rule"):
    SolveOptions.from_keywords(selection="thompson")
  with pytest.raises(TypeError, match="budget must be a Budget"):
    SolveOptions(budget=Capacity())


def test_keywords_and_options_are_one_thing():
  from_keywords = SolveOptions.from_keywords(seconds=5, chunk=8, max_nodes=400,
                                             num_slots=None, checkpoint="ck",
                                             checkpoint_seconds=0)
  assert from_keywords == SolveOptions(
      budget=Budget(seconds=5), capacity=Capacity(max_nodes=400, num_slots=None),
      search=SearchRule(chunk=8), checkpointing=solve_lib.Checkpointing("ck", False, 0))
  # Values are normalised once: ints, floats, the variance's enum member.
  assert isinstance(from_keywords.budget.seconds, float)
  assert from_keywords.search.variance is Variance.AVTS
  assert SolveOptions.from_keywords(max_nodes=np.int64(500)).capacity.max_nodes == 500
  # Keywords given with options= replace those fields, and only those.
  both = puzzle_lib._options("solve_puzzle", from_keywords, {"seconds": 9, "seed": 3})
  assert both.budget.seconds == 9 and both.search.seed == 3
  assert both.capacity == from_keywords.capacity and from_keywords.budget.seconds == 5


def test_a_batch_share_is_derived_not_an_edit():
  options = SolveOptions.from_keywords(max_nodes=1000, chunk=4)
  shared = options.for_trees(8, least=57)
  assert shared.capacity.max_nodes == 125 and options.capacity.max_nodes == 1000
  assert options.for_trees(52, least=57).capacity.max_nodes == 57  # raised to the least
  with pytest.raises(ValueError, match=r"chunk \+ 1 = 129 .*shared out between 40 trees"):
    SolveOptions.from_keywords(max_nodes=1000).for_trees(40, least=9)


def test_the_one_config_builder_makes_what_the_solver_searched_with():
  """The configs the solver searched with before it had typed options:
  ``policies.avts(...)`` with its defaults (widening, debiasing), Thompson sampling, and for
  the proof rule ``selection.optimistic()`` with the ``gap`` outcome rule. Equal configs
  build bit-identical trees; equal configs from equal options also key the compiled
  programs' cache."""
  puzzle = mastermind.puzzle(2, 3, exact_search=False)
  game = puzzle.game
  options = SolveOptions.from_keywords(chunk=16, max_nodes=400, num_slots=8, bound_slots=2,
                                       variance="centred")
  config, proof = options.search_config(game), options.search_config(game, proof=True)
  sizes = dict(num_simulations=16, max_nodes=400,
               max_depth=game.max_length or solve_lib.DEFAULT_MAX_DEPTH, num_slots=8,
               bound_slots=2, variance="centred", max_chance=200)
  assert config == js.policies.avts(game, puzzle.estimator, selection=config.selection,
                                    **sizes).config
  assert config.selection.name == "thompson"
  assert proof == js.policies.avts(game, puzzle.estimator, selection=proof.selection,
                                   outcome_rule="gap", **sizes).config
  assert proof.selection.name == "optimistic"
  assert config == SolveOptions.from_keywords(
      chunk=16, max_nodes=400, num_slots=8, bound_slots=2, variance="centred"
  ).search_config(game) and hash(config) == hash(options.search_config(game))
  # What a checkpoint's fingerprint compares: the same keys and values as ever.
  assert options.tree_options(game) == {**sizes, "variance": "centred"}


class _BoundsOnly:
  """Integer bounds without the exact search of small sets (an :class:`IntegerBounds` that
  is not an :class:`ExactSearch`)."""

  def __init__(self, exact):
    self.exact = exact

  def node_total(self, n):
    return self.exact.node_total(n)

  def action_totals(self, secrets, state=None):
    return self.exact.action_totals(secrets, state)


def test_the_certificates_check_the_games_capabilities_once():
  puzzle = mastermind.puzzle(2, 3)
  game = guessing_lib.CertificateGame.of(puzzle)
  assert game.searches and game.search_secrets == puzzle.exact.search_secrets
  assert game.num_secrets == 9 and game.solved_outcome == puzzle.solved_outcome
  # Mastermind's state symmetries are read by a function: its bounds stay in this process
  # (its certificates are quicker than starting workers); without them they are data.
  assert not game.portable
  assert guessing_lib.CertificateGame.of(mastermind.puzzle(2, 3, symmetry=False)).portable
  assert guessing_lib.CertificateGame.of(dataclasses.replace(puzzle, exact=None)) is None
  # Bounds alone: the documented fallback, the tree alone (no exact search is asked).
  alone = guessing_lib.CertificateGame.of(dataclasses.replace(puzzle,
                                                           exact=_BoundsOnly(puzzle.exact)))
  assert not alone.searches and alone.search_secrets is None and not alone.portable
  secrets = np.arange(3)
  assert alone.optimum_within(secrets) is None
  assert not alone.guess_at_least(secrets, 0, 1, None)
  assert alone.best_policy(secrets, 10, None) is None
  # One code takes one guess, two take three (one of them first, the other second).
  assert game.optimum_within(secrets[:1]) == 1 and game.optimum_within(secrets[:2]) == 3
  with pytest.raises(TypeError, match="puzzle.exact must provide node_total"):
    guessing_lib.CertificateGame.of(dataclasses.replace(puzzle, exact=object()))


def test_options_or_keywords_solve_the_same_and_trees_are_one_batch_per_root():
  puzzle = mastermind.puzzle(2, 2, exact_search=False)
  keywords = dict(seconds=60, chunk=8, max_nodes=400, num_slots=None)
  by_keywords = guessing_lib.solve_puzzle(puzzle, first="12", **keywords)
  by_options = guessing_lib.solve_puzzle(puzzle, first="12",
                                      options=SolveOptions.from_keywords(**keywords))
  for name in ("policy", "bound_total", "upper_total", "simulations", "nodes", "subproblems",
               "proven_given_first", "opening_rows"):
    assert getattr(by_options, name) == getattr(by_keywords, name), name
  assert by_keywords.evaluation.total_guesses == 8 and by_keywords.proven_given_first
  # One tree per feedback of 12 but the solved one (b1w0, b0w2), each a batch of one.
  start, stop = by_keywords.opening_rows
  assert len(by_keywords.trees) == stop - start == 2
  assert all(isinstance(tree.num_nodes, np.ndarray) and tree.num_nodes.shape == (1,)
             for tree in by_keywords.trees)
