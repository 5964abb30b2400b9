"""Wordle as a single-agent guessing game with exact chance over feedbacks.

The secret is one of the ``S`` answers, drawn uniformly; every guess is one of the ``G``
allowed words (which include the answers) and costs one move; the feedback is a pattern of
five colours; the game ends when the pattern is all green. The value of a state is minus the
expected number of guesses still needed, so at the root ``-value * S`` is the total number of
guesses over all answers (3158 answers / 14855 guesses: 11219 with TARSE; 2315 / 12972:
7920 with SALET).

    w = wordle.load_default("nyt")   # or wordle.make(answers, guesses)
    state = w.state_after([("tarse", "BBYBY")])
    search = js.policies.puct(w.game, w.estimator, num_simulations=64)

State, chance, rewards, bounds and the entropic estimator are the generic guessing game of
:mod:`jaxsearch.guessing.game` (:func:`~games.guessing.guessing_game`,
:func:`~games.guessing_estimator.entropic_estimator`): the state is the set of answers still
consistent with the feedback (a bitset ``u32[ceil(S / 32)]``) plus ``solved``; action ``g``
guesses ``guesses[g]``; outcome = feedback pattern index.

**Feedback** (docs/algorithms.md §2): greens first (each consumes its answer letter), then yellows
left to right, each consuming the first unused matching answer letter; other letters are grey.
Equivalently a non-green guess letter at position ``i`` is yellow iff fewer earlier non-green
guess positions hold the same letter than there are non-green answer positions holding it.
**Pattern index** = ``Σ_i digit_i * 3**i`` over positions ``i = 0..4`` (leftmost first),
grey ``B = 0``, yellow ``Y = 1``, green ``G = 2``: 243 patterns, all green = 242
(:data:`SOLVED`); ``pattern_string(242) == "GGGGG"``, ``pattern_string(1) == "YBBBB"``.

**Estimator cost** (:func:`jaxsearch.guessing.estimator.entropic_estimator`; 3158 / 14855 lists,
XLA on 2 shared CPU cores, so +-50%): building the ``u8[3158, 14855]`` table (47 MB) ~2 s; one
estimate of the full answer set ~0.1 s (all 47 M (guess, answer) pairs); compacted states
~1.3 ms for ``n <= 16``, ~3-4 ms for ``n <= 64``, ~15 ms for ``n <= 256``, ~45 ms for
``n <= 1024``; all 158 children of TARSE in one batch 0.39 s. XLA's temporaries are 31 MB at
``B = 1`` and at ``B = 256`` alike (states are done one after the other), plus the
``f32[B, G]`` output. Compiling the estimator takes 5-7 s, ~2 s of which is XLA embedding the
47 MB table constant (paid by every program that closes over it; the game and the estimator
share one array, so a search embeds it once).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.guessing.game import State, bits_to_mask, feedback_branching, guessing_game
from jaxsearch.guessing.estimator import (DEFAULT_GUESS_CHUNK, DEFAULT_TIERS, entropic_estimator,
                                      greedy_guess)
from jaxsearch.guessing.exact import ExactBounds
from jaxsearch.games.wordle_lists import (EXPECTED_COUNTS, LISTS, default_data_dir,  # noqa: F401
                                          default_paths, load_words, shipped_data_dir,
                                          check_words, word_list, word_list_path)
from jaxsearch.guessing import policy_file
from jaxsearch.game import Estimator, Game

WORD_LENGTH = 5
NUM_PATTERNS = 3 ** WORD_LENGTH  # 243
SOLVED = NUM_PATTERNS - 1  # all green
_DIGITS = {"B": 0, "Y": 1, "G": 2}
_POW3 = 3 ** np.arange(WORD_LENGTH)


# ---------------------------------------------------------------------------------------------
# Patterns and feedback.


def pattern_string(index: int) -> str:
  """``"GYBBB"``-style pattern of pattern index ``index`` (position 0 = least digit)."""
  index = int(index)
  if not 0 <= index < NUM_PATTERNS:
    raise ValueError(f"pattern index {index} not in [0, {NUM_PATTERNS})")
  return "".join("BYG"[(index // 3 ** i) % 3] for i in range(WORD_LENGTH))


def pattern_index(pattern: str) -> int:
  """Inverse of :func:`pattern_string` (``"GYBBB"`` -> ``2 + 1 * 3 = 5``)."""
  if len(pattern) != WORD_LENGTH or any(c not in _DIGITS for c in pattern):
    raise ValueError(f"{pattern!r} is not a pattern of {WORD_LENGTH} letters from B, Y, G")
  return sum(_DIGITS[c] * 3 ** i for i, c in enumerate(pattern))


def encode_words(words: Sequence[str]) -> np.ndarray:
  """``int8[len(words), 5]``: letters as ``0..25``."""
  check_words(words, "encode_words")
  return (np.frombuffer("".join(words).encode("ascii"), np.uint8).reshape(-1, WORD_LENGTH)
          - ord("a")).astype(np.int8)


def _patterns(guess: jax.Array, answer: jax.Array) -> jax.Array:
  """``u8[...]`` pattern indices for broadcastable ``int8[..., 5]`` guesses and answers."""
  green = guess == answer
  open_ = ~green
  # avail[..., i]: non-green answer positions j holding guess letter i.
  avail = jnp.sum((answer[..., None, :] == guess[..., :, None]) & open_[..., None, :], axis=-1)
  # before[..., i]: earlier non-green guess positions j < i holding guess letter i.
  pos = jnp.arange(WORD_LENGTH)
  earlier = pos[None, :] < pos[:, None]  # [i, j]
  before = jnp.sum((guess[..., None, :] == guess[..., :, None]) & earlier & open_[..., None, :],
                   axis=-1)
  yellow = open_ & (before < avail)
  digits = jnp.where(green, 2, jnp.where(yellow, 1, 0))
  return jnp.sum(digits * jnp.asarray(_POW3, jnp.int32), axis=-1).astype(jnp.uint8)


@functools.partial(jax.jit, static_argnames="secret_major")
def _feedback_table(guesses: jax.Array, answers: jax.Array, secret_major: bool) -> jax.Array:
  if secret_major:
    return jax.lax.map(lambda a: _patterns(guesses, a[None, :]), answers, batch_size=64)
  return jax.lax.map(lambda g: _patterns(g[None, :], answers), guesses, batch_size=256)


def feedback_table(guesses: Sequence[str], answers: Sequence[str],
                   secret_major: bool = False) -> jax.Array:
  """Pattern index of ``guesses[g]`` for ``answers[s]``: ``u8[G, S]``, or ``u8[S, G]`` with
  ``secret_major`` (the layout of :attr:`Wordle.by_secret`). JAX, vectorised over one list
  and over chunks of the other; ~2 s on CPU for 14855 x 3158."""
  return _feedback_table(jnp.asarray(encode_words(guesses)),
                         jnp.asarray(encode_words(answers)), secret_major)


def score(guess: str, answer: str) -> str:
  """The pattern string of ``guess`` for ``answer`` (``score("erase", "melee") ==
  "YBBBG"``)."""
  return pattern_string(int(feedback_table([guess], [answer])[0, 0]))


# ---------------------------------------------------------------------------------------------
# The game.


@dataclasses.dataclass(frozen=True, eq=False)
class Wordle:
  """Wordle over given lists as a guessing :class:`Game`.

  Attributes:
    answers: the ``S`` secrets, in state (bit) order.
    guesses: the ``G`` allowed guesses, in action order (they include every answer).
    by_secret: ``u8[S, G]`` pattern index for answer (row) of guess (column), the layout the
      game and the estimator close over (see :attr:`feedback` for guess-major).
    secret_of_guess: ``int32[G]`` (numpy), the answer index of each guess, ``-1`` if none.
    game: the :class:`jaxsearch.game.Game` (``num_actions = G``, ``num_outcomes = 243``).
    estimator: the batched entropic estimator
      (:func:`jaxsearch.guessing.estimator.entropic_estimator`), ``action_values f32[B, G]``.
    bind: ``table -> (game, estimator)``, the same pair over a given ``u8[S, G]`` table
      (usually a tracer): call it inside a jitted function that takes ``by_secret`` as an
      argument, so that the compiled program does not embed the 47 MB table as a constant
      (which costs several GB of memory while compiling).
  """

  answers: tuple[str, ...]
  guesses: tuple[str, ...]
  by_secret: jax.Array
  secret_of_guess: np.ndarray
  game: Game
  estimator: Estimator
  bind: Callable[[jax.Array], tuple[Game, Estimator]]

  @functools.cached_property
  def exact_bounds(self) -> ExactBounds:
    """The game's bounds in exact integers, for certificates
    (:class:`jaxsearch.guessing.exact.ExactBounds`)."""
    return ExactBounds.build(
        self.by_secret, NUM_PATTERNS, SOLVED,
        guess_of_secret=[self.guess_index(word) for word in self.answers])

  @functools.cached_property
  def feedback(self) -> jax.Array:
    """``u8[G, S]`` pattern index of guess (row) for answer (column) (made on first use)."""
    return jnp.asarray(self.by_secret.T)

  @property
  def num_answers(self) -> int:
    return len(self.answers)

  @property
  def num_guesses(self) -> int:
    return len(self.guesses)

  def initial_state(self) -> State:
    """The state before any guess: every answer is possible."""
    return self.game.init(jax.random.PRNGKey(0))

  def guess_index(self, word: str) -> int:
    """Action index of guess ``word``."""
    try:
      return self._guess_ids[word]
    except KeyError:
      raise ValueError(f"{word!r} is not an allowed guess") from None

  def answer_index(self, word: str) -> int:
    """Secret (bit) index of answer ``word``."""
    try:
      return self._answer_ids[word]
    except KeyError:
      raise ValueError(f"{word!r} is not an answer") from None

  def score(self, guess: str, answer: str) -> str:
    """Pattern string of ``guess`` for ``answer``, from the table."""
    return pattern_string(int(self.by_secret[self.answer_index(answer),
                                             self.guess_index(guess)]))

  def remaining_answers(self, state: State) -> list[str]:
    """The answers still possible in one (unbatched) state."""
    mask = np.asarray(bits_to_mask(state.remaining, self.num_answers))
    return [self.answers[i] for i in np.flatnonzero(mask)]

  def state_after(self, history: Sequence[tuple[str, str]]) -> State:
    """The state after ``[(guess, pattern), ...]`` from the initial state."""
    state = self.initial_state()
    for guess, pattern in history:
      state = self.game.step(state, self.guess_index(guess),
                             pattern_index(pattern)).state
    return state

  @functools.cached_property
  def _guess_ids(self) -> dict[str, int]:
    return {w: i for i, w in enumerate(self.guesses)}

  @functools.cached_property
  def _answer_ids(self) -> dict[str, int]:
    return {w: i for i, w in enumerate(self.answers)}


def make(answers: Sequence[str], guesses: Sequence[str],
         value_range: tuple[float, float] = (-6.0, 0.0), max_length: Optional[int] = None,
         tiers: Sequence[int] = DEFAULT_TIERS,
         guess_chunk: int = DEFAULT_GUESS_CHUNK,
         name: Optional[str] = None) -> Wordle:
  """Wordle with secrets ``answers`` and actions ``guesses`` (which must contain every
  answer; no repeats in either).

  ``value_range`` (default ``(-6, 0)``, docs/algorithms.md) and ``max_length`` go to the
  :class:`Game`; ``tiers`` and ``guess_chunk`` to the estimator. ``name`` defaults to
  ``wordle_<S>_<G>``.
  """
  answers = word_list(answers, "wordle.make", "answers")
  guesses = word_list(guesses, "wordle.make", "guesses")
  for label, words in (("answers", answers), ("guesses", guesses)):
    if not words:
      raise ValueError(f"wordle.make: {label} is empty; need at least one answer and one "
                       f"guess")
  for label, words in (("answers", answers), ("guesses", guesses)):
    if len(set(words)) != len(words):
      raise ValueError(f"wordle.make: {label} contain repeated words")
  guess_ids = {w: i for i, w in enumerate(guesses)}
  missing = [w for w in answers if w not in guess_ids]
  if missing:
    raise ValueError(f"wordle.make: {len(missing)} answers are not allowed guesses, e.g. "
                     f"{missing[:5]!r}; the guesses must include the answers")
  answer_ids = {w: i for i, w in enumerate(answers)}
  secret_of_guess = np.asarray([answer_ids.get(w, -1) for w in guesses], np.int32)
  by_secret = feedback_table(guesses, answers, secret_major=True)
  if name is None:
    name = f"wordle_{len(answers)}_{len(guesses)}"
  branching = feedback_branching(by_secret, NUM_PATTERNS, SOLVED)

  def bind(table):
    game = guessing_game(name, table, NUM_PATTERNS, SOLVED, value_range=value_range,
                         max_length=max_length, branching=branching)
    # One state at a time on every backend: batched, the full lists' histograms would be
    # ~6 TFLOP of products per 256 states whatever their sizes, where most states of a
    # search hold a few secrets that the compact tiers count cheaply.
    est = entropic_estimator(table, secret_of_guess, NUM_PATTERNS, tiers=tiers,
                             guess_chunk=guess_chunk, branching=branching, batched=False)
    return game, est

  game, est = bind(by_secret)
  return Wordle(answers=tuple(answers), guesses=tuple(guesses), by_secret=by_secret,
                secret_of_guess=secret_of_guess, game=game, estimator=est, bind=bind)


def load_default(lists: str = "nyt", **kwargs) -> Wordle:
  """:func:`make` over the lists of :func:`default_paths` (``"nyt"``: 3158 / 14855,
  ``"orig"``: 2315 / 12972), with their word counts checked. ``kwargs`` go to :func:`make`."""
  answers_path, guesses_path = default_paths(lists)
  answers = load_words(answers_path, EXPECTED_COUNTS[answers_path.name])
  guesses = load_words(guesses_path, EXPECTED_COUNTS[guesses_path.name])
  return make(answers, guesses, **kwargs)


# ---------------------------------------------------------------------------------------------
# Solving and exported policies: the puzzle the solver plays (:mod:`jaxsearch.solve`) and the
# game's policy files (:mod:`jaxsearch.guessing.policy_file`).


def puzzle(answers_path, guesses_path, exact_search: bool = True):
  """Wordle over the word lists in the given files (see :func:`load_words`) as a
  :class:`jaxsearch.guessing.Puzzle`; ``exact_search``: certificates may settle small sets of
  answers by exact search (see :meth:`jaxsearch.guessing.exact.ExactBounds.without_search`)."""
  from jaxsearch.guessing import Puzzle

  # The paths go into exported policies' headers, where `jaxsearch evaluate` reads the lists
  # again: a list of words (or a generator) cannot stand in for them.
  answers = load_words(word_list_path(answers_path, "wordle.puzzle", "answers_path"))
  guesses = load_words(word_list_path(guesses_path, "wordle.puzzle", "guesses_path"))
  game = make(answers, guesses)
  table = np.asarray(game.by_secret)
  guess_of_secret = np.array([game.guess_index(w) for w in game.answers])
  return Puzzle(name="wordle", game=game.game, estimator=game.estimator,
                secrets=tuple(game.answers), guess_names=tuple(game.guesses),
                outcome_name=pattern_string, solved_outcome=SOLVED,
                score=WordleScore(game.answers), valid_guesses=tuple(game.guesses),
                header=file_header(str(answers_path), str(guesses_path), len(answers),
                                   len(guesses)),
                initial_state=game.initial_state(), table=table,
                guess_of_secret=guess_of_secret,
                greedy_guess=functools.partial(greedy_guess, table, guess_of_secret,
                                             num_codes=NUM_PATTERNS),
                tables=game.by_secret, bind=game.bind,
                exact=game.exact_bounds if exact_search else game.exact_bounds.without_search())


class WordleScore:
  """``score(guess, answer) -> "GYBBB"`` for answers of a fixed list, by rows of
  :func:`feedback_table` computed on demand, many guesses at a time with :meth:`prefetch`
  (padded to a few sizes so that JAX compiles a few shapes only), and kept.
  """

  _BUCKETS = (16, 64, 256)  # chunks of at most 256 guesses

  def __init__(self, answers: Sequence[str]):
    self.answers = tuple(answers)
    check_words(self.answers, "WordleScore answers")
    self._index = {w: i for i, w in enumerate(self.answers)}
    self._patterns = tuple(pattern_string(i) for i in range(NUM_PATTERNS))
    self._rows: dict[str, list[str]] = {}

  def __call__(self, guess: str, answer: str) -> str:
    row = self._rows.get(guess)
    if row is None:
      self.prefetch([guess])
      row = self._rows[guess]
    try:
      return row[self._index[answer]]
    except KeyError:
      raise ValueError(f"{answer!r} is not one of the {len(self.answers)} answers") from None

  def prefetch(self, guesses) -> None:
    """Computes (one JAX call per chunk) the rows of the given guesses not yet known."""
    missing = [g for g in dict.fromkeys(guesses) if g not in self._rows]
    while missing:
      size = next((b for b in self._BUCKETS if b >= len(missing)), self._BUCKETS[-1])
      chunk, missing = missing[:size], missing[size:]
      if len(chunk) < size and len(chunk) > 1:
        padded = chunk + [chunk[0]] * (size - len(chunk))
      else:
        padded = chunk  # one guess: its own (cheap) shape
      table = np.asarray(feedback_table(padded, list(self.answers)))
      for g, row in zip(chunk, table.tolist()):
        self._rows[g] = [self._patterns[x] for x in row]


class PolicyFiles:
  """Wordle's policy files (a :class:`jaxsearch.guessing.policy_file.FileGame`): the header keys
  ``answers`` and ``guesses`` (paths, or ``null`` for the default lists of the given counts)
  and ``answers_count`` / ``guesses_count``."""

  required_keys = ("answers", "guesses", "answers_count", "guesses_count")

  def check_header(self, header: dict) -> None:
    for key in ("answers", "guesses"):
      if header[key] is not None and not isinstance(header[key], str):
        raise policy_file.PolicyError(f"policy header for wordle: {key!r} must be a path "
                                      f"string or null, got {header[key]!r}")
    for key in ("answers_count", "guesses_count"):
      value = header[key]
      if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise policy_file.PolicyError(f"policy header for wordle: {key!r} must be a "
                                      f"positive integer, got {value!r}")

  def resolve(self, header: dict, base_dir=None):
    counts = (header["answers_count"], header["guesses_count"])
    lists = next((name for name, files in LISTS.items()
                  if tuple(EXPECTED_COUNTS[f] for f in files) == counts), "nyt")
    words = []
    for key, what, default, count in zip(("answers", "guesses"), ("answer", "guess"),
                                         default_paths(lists), counts):
      path = default if header[key] is None else _resolve(header[key], base_dir, what)
      found = load_words(path)
      if len(found) != count:
        raise policy_file.PolicyError(
            f"Wordle {what} list {path} has {len(found)} words but the policy file says "
            f"{key}_count={count}: not the list the policy was made for")
      words.append(found)
    answers, guesses = words
    allowed = set(guesses)
    missing = [w for w in answers if w not in allowed]
    if missing:
      raise policy_file.PolicyError(
          f"Wordle: {len(missing)} answers are not allowed guesses, e.g. {missing[:5]!r}; "
          f"the guess list must include the answers")
    return answers, guesses, WordleScore(answers)


def _resolve(value: str, base_dir, what: str) -> Path:
  try:
    return policy_file.resolve_path(value, base_dir, f"Wordle {what} list")
  except FileNotFoundError as error:
    raise FileNotFoundError(
        f"{error}. Pass an existing path, or null for the default lists ($WORDLE_DATA if "
        f"set, else the copies shipped with the package in {shipped_data_dir()}).") from None


POLICY_FILES = PolicyFiles()
policy_file.register_game("wordle", POLICY_FILES)


def file_header(answers, guesses, answers_count: int, guesses_count: int, **extra) -> dict:
  """The header of a Wordle policy file; ``None`` paths mean the default lists."""
  return policy_file.make_header(
      "wordle", answers=None if answers is None else str(answers),
      guesses=None if guesses is None else str(guesses), answers_count=int(answers_count),
      guesses_count=int(guesses_count), **extra)
