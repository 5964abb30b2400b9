"""What ``jaxsearch solve GAME`` needs of each guessing game it solves: the defaults of the
options the command line leaves out, the puzzle (and its title) from the command line, and
how many trees a run will search, counted without building the puzzle (for the node check).

The command reads them here by the game's name (:data:`SOLVABLE`) and names no game itself.
Importing this module is cheap: the game modules (and JAX) are imported when a game's puzzle
is built or its trees counted.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Callable, Optional


@dataclasses.dataclass(frozen=True)
class SolveDefaults:
  """A game's defaults for ``jaxsearch solve`` (the flags left out).

  Attributes:
    chunk: simulations per compiled call (``--chunk``): the time budget is checked between
      chunks, so a game whose chunks are long gets small ones.
    nodes: the node budget (``--nodes``), shared out between the trees of a batch.
    slots: guesses kept per node (``--slots``).
    bound_share: the share of the slots that hold the best admissible bounds instead
      (``--bound-slots``: ``floor(slots × bound_share)``).
    seconds: the whole run's time budget (``--seconds``): the search, the policy's
      extraction and the certificates.
    first_guess_seconds: the same where the first guess is searched too (a game without
      openings up to symmetry, no ``--first``): long enough to find the optimum.
    search_share: the share of ``--seconds`` the search may take (the rest is the
      extraction's and the certificates', unless ``--certify-seconds`` is less).
  """

  chunk: int
  nodes: int
  slots: int
  bound_share: Fraction = Fraction(0)
  seconds: float = 60.0
  first_guess_seconds: float = 600.0
  search_share: Fraction = Fraction(3, 4)

  def bound_slots(self, slots: int) -> int:
    """``--bound-slots``'s default for ``slots`` guesses per node."""
    return int(slots * self.bound_share)


@dataclasses.dataclass(frozen=True)
class TreeCount:
  """The trees a run of ``jaxsearch solve`` searches, counted before the puzzle is built.

  Attributes:
    trees: per first guess searched (``--first``, or the openings up to symmetry), its
      feedbacks but the solved one, a tree each; ``None``: one tree from the start.
    num_outcomes: the game's feedbacks (a sub-problem's tree gets at least
      ``4 × num_outcomes + 1`` nodes).
    what: which first guesses, in words (``"--first 1123"``, ``"one tree"``...).
  """

  trees: Optional[list]
  num_outcomes: int
  what: str


@dataclasses.dataclass(frozen=True)
class SolvableGame:
  """A guessing game as ``jaxsearch solve`` runs it.

  Attributes:
    name: the command's game argument.
    defaults: :class:`SolveDefaults`.
    openings_up_to_symmetry: without ``--first``, the run searches one batch of trees per
      first guess up to symmetry (the puzzle's ``openings``); otherwise the first guess is
      searched too, above them (:mod:`jaxsearch.guessing.root`).
    puzzle: ``args -> (puzzle, title)`` from the parsed command line (``args.pegs``,
      ``args.answers``...).
    count_trees: ``args -> TreeCount | None``: the trees the run searches, or ``None``
      where that cannot be told in advance (sizes or a ``--first`` the game will refuse in
      its own words, or the first guesses the search will visit).
    input_errors: errors the puzzle's build raises about input files (Wordle's word lists),
      which the command reports naming the game.
    sizes: ``args -> PuzzleSizes | None`` (:class:`jaxsearch.memory.PuzzleSizes`): what the
      run's memory depends on, without building the puzzle (``None``: unknown, e.g. sizes
      the game refuses), so that a run too large is refused before any work.
  """

  name: str
  defaults: SolveDefaults
  openings_up_to_symmetry: bool
  puzzle: Callable[[Any], tuple]
  count_trees: Callable[[Any], Optional[TreeCount]]
  input_errors: tuple = ()
  sizes: Callable[[Any], Any] = lambda args: None


def _mastermind_puzzle(args):
  from jaxsearch.games import mastermind
  return (mastermind.puzzle(args.pegs, args.colours),
          f"Mastermind {args.pegs}×{args.colours}")


def _mastermind_trees(args) -> Optional[TreeCount]:
  """The trees of ``solve mastermind``, or ``None`` where the game or ``--first`` will be
  refused."""
  from jaxsearch.games import mastermind
  pegs, colours = args.pegs, args.colours
  # mastermind.make's limits; outside them it raises its own message.
  if not (1 <= pegs <= 21 and 1 <= colours <= 9 and colours ** pegs <= 32768):
    return None
  num_outcomes = len(mastermind.feedback_keys(pegs))
  if args.first is not None:
    guesses, what = [args.first], f"--first {args.first}"
  elif args.openings:
    guesses = list(mastermind.openings(pegs, colours))
    what = f"the {len(guesses)} openings up to symmetry, {', '.join(guesses)}"
  else:
    return TreeCount(None, num_outcomes, "one tree")
  allowed = {str(c) for c in range(1, colours + 1)}
  if any(len(g) != pegs or not set(g) <= allowed for g in guesses):
    return None  # not a code: --first is refused with its own message
  solved = num_outcomes - 1  # all correct: the last feedback
  trees = [len(set(mastermind.guess_feedbacks(pegs, colours, guess).tolist()) - {solved})
           for guess in guesses]
  return TreeCount(trees, num_outcomes, what)


def _mastermind_sizes(args):
  """:class:`jaxsearch.memory.PuzzleSizes` of ``solve mastermind`` (its puzzle keeps the
  colour-and-peg symmetries in each state where the group is small enough), or ``None``."""
  import math
  from jaxsearch.guessing import game as guessing
  from jaxsearch.games import mastermind, mastermind_symmetry
  from jaxsearch.memory import PuzzleSizes
  pegs, colours = args.pegs, args.colours
  if not (1 <= pegs <= 21 and 1 <= colours <= 9 and colours ** pegs <= 32768):
    return None
  codes = colours ** pegs
  symmetric = (math.factorial(colours) * math.factorial(pegs)
               <= mastermind_symmetry.MAX_GROUP)
  state = 4 * guessing.num_words(codes) + 1 + (
      4 * mastermind_symmetry.MAX_SYMMETRIES if symmetric else 0)
  return PuzzleSizes(secrets=codes, actions=codes,
                     outcomes=len(mastermind.feedback_keys(pegs)), state_bytes=state,
                     table_bytes=codes * codes)


def _wordle_sizes(args):
  """:class:`jaxsearch.memory.PuzzleSizes` of ``solve wordle`` (its lists read, nothing
  built), or ``None`` where they cannot be read."""
  from jaxsearch.guessing import game as guessing
  from jaxsearch.games import wordle
  from jaxsearch.memory import PuzzleSizes
  try:
    answers_path, guesses_path = _wordle_lists(args)
    answers, guesses = wordle.load_words(answers_path), wordle.load_words(guesses_path)
  except (OSError, ValueError):
    return None
  return PuzzleSizes(secrets=len(answers), actions=len(guesses),
                     outcomes=wordle.NUM_PATTERNS,
                     state_bytes=4 * guessing.num_words(len(answers)) + 1,
                     table_bytes=len(answers) * len(guesses))


def _wordle_lists(args) -> tuple:
  """``(answers path, guesses path)``: the command line's, else the default lists."""
  from jaxsearch.games import wordle
  if args.answers is not None and args.guesses is not None:
    return args.answers, args.guesses
  default_answers, default_guesses = wordle.default_paths()
  return args.answers or default_answers, args.guesses or default_guesses


def _wordle_puzzle(args):
  from jaxsearch.games import wordle
  puzzle = wordle.puzzle(*_wordle_lists(args))
  return puzzle, f"Wordle {len(puzzle.secrets)}/{len(puzzle.guess_names)}"


def _wordle_trees(args) -> Optional[TreeCount]:
  """The trees of ``solve wordle``: one tree with ``--no-openings``; ``None`` for the search
  over first guesses (each visited first guess's trees get at least the per-tree minimum),
  or where the lists cannot be read or ``--first`` is not a guess (refused later, in its
  own words)."""
  from jaxsearch.games import wordle
  if args.first is None and args.openings:
    return None  # the search over first guesses: which it visits is not known in advance
  if args.first is None:
    return TreeCount(None, wordle.NUM_PATTERNS, "one tree")
  try:  # the lists as the puzzle reads them
    answers_path, guesses_path = _wordle_lists(args)
    answers = wordle.load_words(answers_path)
    guesses = wordle.load_words(guesses_path)
  except (OSError, ValueError):
    return None
  if not answers or args.first not in guesses or not set(answers) <= set(guesses):
    return None
  import numpy as np
  patterns = set(np.asarray(wordle.feedback_table([args.first], answers))[0].tolist())
  return TreeCount([len(patterns - {wordle.SOLVED})], wordle.NUM_PATTERNS,
                   f"--first {args.first}")


SOLVABLE = {
    # 128 slots, 96 of them for the best bounds, which certifies 4×6 in about a minute.
    "mastermind": SolvableGame(
        name="mastermind", openings_up_to_symmetry=True, puzzle=_mastermind_puzzle,
        count_trees=_mastermind_trees, sizes=_mastermind_sizes,
        defaults=SolveDefaults(chunk=32, nodes=200_000, slots=128,
                               bound_share=Fraction(3, 4), seconds=120.0)),
    # Larger nodes (243 feedbacks): 64 slots by q̂1 only. A chunk of one batch of trees is
    # ~150 expansions per simulation, each scoring every guess for up to 243 feedbacks.
    "wordle": SolvableGame(
        name="wordle", openings_up_to_symmetry=False, puzzle=_wordle_puzzle,
        count_trees=_wordle_trees, input_errors=(FileNotFoundError, ValueError),
        sizes=_wordle_sizes,
        # Half of the run for the certificates: their exact search of small sets is most of
        # a proof after a fixed first guess.
        defaults=SolveDefaults(chunk=4, nodes=120_000, slots=64, seconds=300.0,
                               first_guess_seconds=1200.0, search_share=Fraction(1, 2))),
}
