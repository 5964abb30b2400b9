"""Mastermind as a single-agent guessing game with exact chance over feedbacks.

A secret code of ``P`` pegs, each one of ``C`` colours, is drawn uniformly; every guess is a
code and costs one move; the feedback is the pair ``(b, w)`` = (pegs right in colour and
place, pegs right in colour only). The game ends when the feedback is ``(P, 0)``. The value of
a state is minus the expected number of guesses still needed, so at the root
``-value * num_codes`` is the total number of guesses over all secrets (4 pegs x 6 colours:
optimum 5625, Koyama & Lai 1993).

    m = mastermind.make(pegs=4, colours=6)
    roots = jax.vmap(m.game.init)(keys)
    search = js.policies.puct(m.game, m.estimator, num_simulations=64)

State, chance, rewards and bounds are the generic guessing game of :mod:`jaxsearch.guessing.game`
(:func:`~games.guessing.guessing_game`, over the feedback table ``by_secret: u8[S, G]``), the
estimator is :func:`jaxsearch.guessing.estimator.entropic_estimator` and the exact integer bounds
behind certificates are :class:`jaxsearch.guessing.exact.ExactBounds`.

**Mastermind encodings.** Code index ``i`` in ``[0, C**P)`` is the base-``C`` number of the
code's pegs, first peg most significant, colours written ``1..C``: with ``P = 4, C = 6``,
index 0 is ``"1111"``, index 1 is ``"1112"``, index 1295 is ``"6666"``. Feedback ``(b, w)`` is
written ``"b<b>w<w>"`` (``"b1w2"``); its index is its position in :func:`feedback_keys`: all
pairs with ``b + w <= P`` except the impossible ``(P - 1, 1)``, by ``b`` then ``w`` ascending,
so the all-correct ``(P, 0)`` is last (``14`` codes for ``P = 4``; some are unreachable for
few colours, e.g. ``(0, 1)`` with ``P = C = 2``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.guessing.game import State, bits_to_mask, feedback_branching, guessing_game
from jaxsearch.guessing.estimator import (DEFAULT_GUESS_CHUNK, DEFAULT_TIERS,
                                                entropic_estimator, greedy_guess)
from jaxsearch.guessing.exact import ExactBounds
# Re-exported: the symmetry's names were this module's.
from jaxsearch.games.mastermind_symmetry import (AT_START, MAX_GROUP, MAX_SYMMETRIES,  # noqa: F401
                                                 Symmetry, code_digits, with_symmetry)
from jaxsearch.games.mastermind_set_symmetry import SetSymmetry
from jaxsearch.guessing import policy_file
from jaxsearch.game import Estimator, Game

# Mastermind's search nodes are mostly tiny (median 2 secrets after 1123): three more tiers
# make its estimator ~20 % faster. Wordle keeps DEFAULT_TIERS (each tier is one more compiled
# branch embedding its 47 MB table; the gain there was not measured).
MASTERMIND_TIERS = (2, 4, 8) + DEFAULT_TIERS
# The exact search's two-step floors for parts of at least this many codes
# (:class:`ExactBounds`'s ``lookahead``): 4×6 solved outright with half the work.
EXACT_LOOKAHEAD = 3


# ---------------------------------------------------------------------------------------------
# Mastermind.


def feedback_keys(pegs: int) -> list[tuple[int, int]]:
  """The ``(b, w)`` feedbacks in index order: ``b + w <= P`` without ``(P - 1, 1)``, by ``b``
  then ``w``; the all-correct ``(P, 0)`` is last."""
  return [(b, w) for b in range(pegs + 1) for w in range(pegs + 1 - b)
          if (b, w) != (pegs - 1, 1)]


def _scoring(pegs: int, colours: int):
  """``(digits i32[N, P], counts i32[N, C], row)``: every code's pegs and colour counts, and
  ``row((guess digits [P], guess counts [C])) -> u8[N]``, the feedback index of that guess for
  every secret (the one scoring rule of :func:`feedback_table` and :func:`guess_feedbacks`)."""
  digits = jnp.asarray(code_digits(pegs, colours))
  counts = jnp.sum(jax.nn.one_hot(digits, colours, dtype=jnp.int32), axis=1)  # [N, C]
  lut = np.zeros((pegs + 1, pegs + 1), np.int32)
  for i, (b, w) in enumerate(feedback_keys(pegs)):
    lut[b, w] = i
  lut = jnp.asarray(lut)

  def row(args):
    guess, guess_counts = args
    exact = jnp.sum(digits == guess, axis=-1)
    common = jnp.sum(jnp.minimum(counts, guess_counts), axis=-1)
    return lut[exact, common - exact].astype(jnp.uint8)

  return digits, counts, row


def feedback_table(pegs: int, colours: int) -> jax.Array:
  """``u8[N, N]`` (``N = C**P``), index of the feedback of guess ``g`` for secret ``s``.

  ``b`` = pegs equal in place, ``w = Σ_c min(count_g(c), count_s(c)) - b``; computed in JAX,
  vectorised over secrets and over chunks of guesses.
  """
  digits, counts, row = _scoring(pegs, colours)
  return jax.jit(lambda d, c: jax.lax.map(row, (d, c), batch_size=256))(digits, counts)


def guess_feedbacks(pegs: int, colours: int, guess: str) -> np.ndarray:
  """``u8[N]``: the feedback index of one guess (``"1122"``) for every secret, the guess's
  row of :func:`feedback_table` without building the whole table (``N**2`` entries)."""
  _, _, row = _scoring(pegs, colours)
  guess_digits = jnp.asarray([int(ch) - 1 for ch in guess], jnp.int32)
  guess_counts = jnp.sum(jax.nn.one_hot(guess_digits, colours, dtype=jnp.int32), axis=0)
  return np.asarray(row((guess_digits, guess_counts)))


@dataclasses.dataclass(frozen=True, eq=False)
class Mastermind:
  """Mastermind with ``pegs`` pegs and ``colours`` colours as a guessing :class:`Game`.

  Attributes:
    pegs: ``P``.
    colours: ``C``.
    num_codes: ``N = C**P``, the number of secrets, of guesses (actions) and of table rows.
    by_secret: ``u8[N, N]``, feedback index for secret (row) of guess (column), the layout
      the game and the estimator close over. Mastermind's feedback is symmetric (scoring
      ``g`` against ``s`` or ``s`` against ``g`` gives the same pegs), so this is also the
      guess-major table.
    game: the :class:`jaxsearch.game.Game` (actions = guesses, outcomes = feedbacks).
    estimator: the batched entropic estimator (:func:`entropic_estimator`).
    bind: ``table -> (game, estimator)``, the same pair over a given ``u8[N, N]`` table
      (usually a tracer): call it inside a jitted function that takes ``by_secret`` as an
      argument, so that the compiled program does not embed the table as a constant.
  """

  pegs: int
  colours: int
  num_codes: int
  by_secret: jax.Array
  game: Game
  estimator: Estimator
  bind: Callable[[jax.Array], tuple[Game, Estimator]]
  symmetry: Optional["Symmetry"] = None

  @functools.cached_property
  def exact_bounds(self) -> ExactBounds:
    """The game's bounds in exact integers, for certificates (:class:`ExactBounds`): with
    symmetry, the guesses a state's kept permutations make redundant are left out as the
    estimator leaves them out; the exact search leaves out the guesses each set's own
    colour-and-peg symmetries make redundant (:class:`SetSymmetry`, numpy: the bounds go to
    the certificates' worker processes)."""
    symmetry = SetSymmetry.build(
        self.pegs, self.colours,
        [self.code_index(code) for code in openings(self.pegs, self.colours)],
        with_history=self.symmetry is not None)
    # With the states' symmetries, ``redundant`` is given as a function on purpose: the
    # certificates then settle the tree's sub-problems in this process (bounds with a
    # function among their fields are not sent to worker processes). With this exact search
    # they take a few seconds up to 5×4, less than starting the workers (``exact_game``
    # starts its own for whole games).
    redundant = None if self.symmetry is None else symmetry.state_redundant
    return ExactBounds.build(self.by_secret, self.num_outcomes, self.solved_code,
                             redundant=redundant,
                             guess_of_secret=np.arange(self.num_codes), symmetry=symmetry,
                             lookahead=EXACT_LOOKAHEAD)

  @property
  def feedback(self) -> jax.Array:
    """``u8[N, N]``, feedback index of guess (row) for secret (column): ``by_secret``, as
    the table is symmetric."""
    return self.by_secret

  @property
  def num_outcomes(self) -> int:
    return self.game.num_outcomes

  @property
  def solved_code(self) -> int:
    return self.game.num_outcomes - 1

  def initial_state(self) -> State:
    """The state before any guess: every code is possible."""
    return self.game.init(jax.random.PRNGKey(0))

  def code_string(self, index: int) -> str:
    """``"1122"``-style code (colours ``1..C``, first peg first) of code ``index``."""
    index = int(index)
    if not 0 <= index < self.num_codes:
      raise ValueError(f"code index {index} not in [0, {self.num_codes})")
    digits = []
    for _ in range(self.pegs):
      index, d = divmod(index, self.colours)
      digits.append(str(d + 1))
    return "".join(reversed(digits))

  def code_index(self, code: str) -> int:
    """Inverse of :meth:`code_string`."""
    if (len(code) != self.pegs or not code.isdigit()
        or not all(1 <= int(c) <= self.colours for c in code)):
      raise ValueError(f"{code!r} is not a code of {self.pegs} pegs with colours "
                       f"1..{self.colours}")
    index = 0
    for c in code:
      index = index * self.colours + int(c) - 1
    return index

  def outcome_string(self, outcome: int) -> str:
    """``"b<exact>w<colour>"`` of feedback index ``outcome``."""
    b, w = feedback_keys(self.pegs)[int(outcome)]
    return f"b{b}w{w}"

  def outcome_index(self, key: str) -> int:
    """Inverse of :meth:`outcome_string`."""
    keys = [f"b{b}w{w}" for b, w in feedback_keys(self.pegs)]
    if key not in keys:
      raise ValueError(f"{key!r} is not a feedback of {self.pegs}-peg Mastermind ({keys})")
    return keys.index(key)

  def score(self, guess: str, secret: str) -> str:
    """Feedback string of ``guess`` for ``secret`` (both code strings), from the table."""
    return self.outcome_string(
        int(self.by_secret[self.code_index(secret), self.code_index(guess)]))

  def remaining_codes(self, state: State) -> list[str]:
    """The codes still possible in one (unbatched) state."""
    mask = np.asarray(bits_to_mask(state.remaining, self.num_codes))
    return [self.code_string(i) for i in np.flatnonzero(mask)]


def make(pegs: int = 4, colours: int = 6, value_range: tuple[float, float] = (-6.0, 0.0),
         max_length: Optional[int] = None, tiers: Sequence[int] = MASTERMIND_TIERS,
         guess_chunk: int = DEFAULT_GUESS_CHUNK, symmetry: bool = False) -> Mastermind:
  """Mastermind with ``pegs`` pegs and ``colours`` colours (``1 <= colours <= 9`` so codes
  are digit strings; ``colours**pegs <= 32768`` so the table stays within 1 GiB).

  ``value_range`` and ``max_length`` go to the :class:`Game` (see
  :func:`jaxsearch.guessing.game.guessing_game`), ``tiers`` and ``guess_chunk`` to
  :func:`jaxsearch.guessing.estimator.entropic_estimator`. With ``symmetry=True`` (and at most
  :data:`MAX_GROUP` colour-and-peg permutations) states carry the permutations that fix the
  guesses so far and the estimator masks guesses equivalent to a smaller one
  (:class:`Symmetry`): values are unchanged, the search just never spends a slot on a copy.
  """
  for label, value, hi in (("pegs", pegs, 21), ("colours", colours, 9)):
    # A number that is not a whole one (2.5, NaN, inf) is a ValueError; anything else (None,
    # "4", True) a TypeError, not int()'s message that names neither argument.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
      raise TypeError(f"mastermind.make: {label} must be an integer in [1, {hi}], got "
                      f"{value!r} of type {type(value).__name__}")
    if not float(value).is_integer() or not 1 <= value <= hi:
      raise ValueError(f"mastermind.make: {label} must be an integer in [1, {hi}], "
                       f"got {value!r}")
  pegs, colours = int(pegs), int(colours)
  num_codes = colours ** pegs
  if num_codes > 32768:
    raise ValueError(f"mastermind.make: {colours}**{pegs} = {num_codes} codes is too many "
                     "(at most 32768)")
  by_secret = feedback_table(pegs, colours)  # symmetric: also secret-major
  num_outcomes = len(feedback_keys(pegs))
  identity = np.arange(num_codes)
  branching = feedback_branching(by_secret, num_outcomes, num_outcomes - 1)
  symmetries = (Symmetry.build(pegs, colours) if symmetry and
                math.factorial(colours) * math.factorial(pegs) <= MAX_GROUP else None)

  def bind(table):
    game = guessing_game(f"mastermind_p{pegs}_c{colours}", table, num_outcomes,
                         num_outcomes - 1, value_range=value_range, max_length=max_length,
                         branching=branching)
    est = entropic_estimator(table, identity, num_outcomes, tiers=tiers,
                             guess_chunk=guess_chunk, branching=branching)
    if symmetries is not None:
      game, est = with_symmetry(game, est, symmetries)
    return game, est

  game, est = bind(by_secret)
  return Mastermind(pegs=pegs, colours=colours, num_codes=num_codes, by_secret=by_secret,
                    game=game, estimator=est, bind=bind, symmetry=symmetries)


# ---------------------------------------------------------------------------------------------
# Solving and exported policies: the puzzle the solver plays (:mod:`jaxsearch.solve`) and the
# game's policy files (:mod:`jaxsearch.guessing.policy_file`).


def _partitions(total: int, largest: int, parts: int):
  """Partitions of ``total`` into at most ``parts`` parts, each ``<= largest``, decreasing."""
  if total == 0:
    yield ()
    return
  if parts == 0:
    return
  for first in range(min(total, largest), 0, -1):
    for rest in _partitions(total - first, first, parts - 1):
      yield (first,) + rest


def openings(pegs: int, colours: int) -> tuple[str, ...]:
  """One first guess per symmetry class of Mastermind (colour and peg permutations): colour 1
  on the first ``λ1`` pegs, colour 2 on the next ``λ2``... for each partition ``λ`` of the
  pegs into at most ``colours`` parts (4 × 6: 1111, 1112, 1122, 1123, 1234)."""
  return tuple("".join(str(colour + 1) * size for colour, size in enumerate(partition))
               for partition in _partitions(pegs, pegs, colours))


def puzzle(pegs: int = 4, colours: int = 6, symmetry: bool = True, exact_search: bool = True):
  """Mastermind with ``pegs`` × ``colours`` (default 4 × 6: 1296 codes, 14 feedbacks) as a
  :class:`jaxsearch.guessing.Puzzle`; ``symmetry``: skip guesses equivalent under colour and peg
  permutations (:class:`Symmetry`); ``exact_search``: certificates may settle small sets by
  exact search (:meth:`ExactBounds.without_search` when False)."""
  from jaxsearch.guessing import Puzzle

  game = make(pegs, colours, symmetry=symmetry)
  codes = tuple(game.code_string(i) for i in range(game.num_codes))
  table = np.asarray(game.by_secret)
  guess_of_secret = np.arange(game.num_codes)
  return Puzzle(name="mastermind", game=game.game, estimator=game.estimator, secrets=codes,
                guess_names=codes, outcome_name=game.outcome_string,
                solved_outcome=game.solved_code, score=MastermindScore(pegs, colours),
                valid_guesses=None, header=file_header(pegs, colours),
                initial_state=game.initial_state(), table=table,
                guess_of_secret=guess_of_secret,
                greedy_guess=functools.partial(greedy_guess, table, guess_of_secret,
                                             num_codes=game.num_outcomes),
                openings=openings(pegs, colours), tables=game.by_secret, bind=game.bind,
                exact=game.exact_bounds if exact_search else game.exact_bounds.without_search())


class MastermindScore:
  """``score(guess, secret) -> "b<b>w<w>"`` for ``pegs`` x ``colours`` Mastermind, looked up
  in :func:`feedback_table` (built once per size and process, ~0.3 s for 4x6).

  Attributes:
    codes: every code in index order (``"11..1"`` first), the secrets and the valid guesses.
  """

  def __init__(self, pegs: int, colours: int):
    _check_file_size(pegs, colours)
    self.pegs, self.colours = int(pegs), int(colours)
    self.codes, self._index, self._keys, self._table = _score_tables(self.pegs, self.colours)
    self._rows: dict[int, list[str]] = {}

  def __call__(self, guess: str, secret: str) -> str:
    try:
      g, s = self._index[guess], self._index[secret]
    except KeyError:
      bad = guess if guess not in self._index else secret
      raise ValueError(f"{bad!r} is not a code of {self.pegs} pegs with colours "
                       f"1..{self.colours}") from None
    row = self._rows.get(g)
    if row is None:
      row = self._rows[g] = [self._keys[x] for x in self._table[g].tolist()]
    return row[s]

  def prefetch(self, guesses) -> None:
    """Nothing to do (the whole table is there); for the ``WordleScore`` interface."""
    del guesses


@functools.lru_cache(maxsize=8)
def _score_tables(pegs: int, colours: int):
  codes = ["".join(str(d + 1) for d in row) for row in code_digits(pegs, colours)]
  keys = [f"b{b}w{w}" for b, w in feedback_keys(pegs)]
  table = np.asarray(feedback_table(pegs, colours))  # symmetric
  return tuple(codes), {c: i for i, c in enumerate(codes)}, tuple(keys), table


def _check_file_size(pegs, colours) -> None:
  """The limits of :func:`make` (digit colours, a table within 1 GiB), as a ``PolicyError``."""
  for label, value, hi in (("pegs", pegs, 21), ("colours", colours, 9)):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
      raise policy_file.PolicyError(f"mastermind {label} must be an integer in [1, {hi}], "
                                    f"got {value!r}")
  if colours ** pegs > 32768:
    raise policy_file.PolicyError(f"mastermind {colours}**{pegs} = {colours ** pegs} codes is "
                                  "too many (at most 32768)")


class PolicyFiles:
  """Mastermind's policy files (a :class:`jaxsearch.guessing.policy_file.FileGame`): the header keys
  ``pegs`` and ``colours``; the secrets and valid guesses are every code."""

  required_keys = ("pegs", "colours")

  def check_header(self, header: dict) -> None:
    _check_file_size(header["pegs"], header["colours"])

  def resolve(self, header: dict, base_dir=None):
    del base_dir
    score = MastermindScore(header["pegs"], header["colours"])
    return list(score.codes), None, score


POLICY_FILES = PolicyFiles()
policy_file.register_game("mastermind", POLICY_FILES)


def file_header(pegs: int, colours: int, **extra) -> dict:
  """The header of a Mastermind policy file (``extra`` keys are kept as they are)."""
  return policy_file.make_header("mastermind", pegs=int(pegs), colours=int(colours), **extra)
