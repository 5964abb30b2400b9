"""Anytime solving of guessing games with certified bounds (Mastermind, Wordle).

``solve`` runs AVTS (:func:`jaxsearch.policies.avts`) on one or a batch of root states, in
chunks of simulations that continue the same trees, and after every chunk reads two numbers at
each root:

* the **achievable bound** — the exact value of a concrete policy held by the tree (AVTS's
  "best lower bound"): a number of guesses that *is* reached;
* the **optimistic bound** — no policy does better (the game's admissible ``optimistic_value``
  and the estimator's per-guess ``action_bounds``, tightened by the Bellman backup); where it
  meets the achievable bound the result is **proven optimal**.

By default the trees are grown by the proof-directed rule alone
(:func:`jaxsearch.selection.optimistic`, best bound first, with the ``gap`` outcome rule):
on Mastermind 4×6 it reaches the optimum sooner than any mix with Thompson sampling, and
with ``bound_slots`` it proves it (5625, about 50 s on 2 CPU cores).

At the end the achievable policy is extracted from the tree (where the tree has no better
action than the game's pessimistic policy, that policy — guess the first remaining candidate —
completes it), exported in the format of :mod:`jaxsearch.policy_file`, and **evaluated exactly
by enumeration over every secret**: the reported figure is the evaluated one, never the
search's own estimate. The evaluated total is never worse than the achievable bound.

Guesses cost 1 each: a root's value is minus its expected number of guesses, so totals over
``n`` secrets are ``-value · n``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch import policy_file
from jaxsearch.game import Estimator, Game
from jaxsearch.memory import (  # noqa: F401  (part of this module's interface)
    RUNTIME_BYTES, MemoryBudgetError, MemoryEstimate, available_memory, check_memory)



# Simulations descend at most this many guesses below a root unless the game has a
# ``max_length``: far more than an optimal guessing policy needs (Mastermind 4×6 and Wordle
# take at most 6 guesses), cheap (a path is ``O(D)``), and independent of the chunk size.
DEFAULT_MAX_DEPTH = 24


def meets(bound_total: float, upper_total: Optional[float]) -> bool:
  """Whether the achievable bound meets the optimistic one, in total guesses.

  Totals of guesses are integers: the achievable one is a policy's total, and the optimum is
  at least ``upper_total``, hence at least its ceiling. Both are float32 sums whose rounding
  errors grow with the number of secrets (21.0000014 against 20.9999993 on Mastermind 2×3),
  so each is rounded to its integer with a 0.01 tolerance before they are compared.
  """
  if upper_total is None:
    return False
  return math.floor(bound_total + 1e-2) <= math.ceil(upper_total - 1e-2)


@dataclasses.dataclass(frozen=True)
class Puzzle:
  """A guessing game as the solver sees it.

  Attributes:
    name: ``"mastermind"`` or ``"wordle"``.
    game, estimator: the JAX game (states hold the remaining secrets as a bitset) and its
      action-value estimator.
    secrets: the secrets in state-bit order.
    guess_names: the name of every action (a code or a word).
    outcome_name: feedback index -> feedback key of the export format.
    solved_outcome: the all-correct feedback.
    score: ``(guess, secret) -> feedback key``, for exact evaluation.
    valid_guesses: allowed guesses for evaluation (``None``: the secrets).
    header: the export file's header (:mod:`jaxsearch.policy_file`).
    initial_state: the unbatched state before any guess.
    table: ``u8[S, G]`` (numpy) feedback index of guess ``g`` for secret ``s``.
    guess_of_secret: ``int[S]`` (numpy) the action that guesses each secret.
    openings: first guesses that cover every first guess up to the game's symmetries
      (Mastermind: one code per partition of the pegs into colours), or ``None``.
    tables: large arrays the game and estimator read (a pytree, e.g. the feedback table), or
      ``None``. With ``bind``, the solver passes them to its compiled programs as arguments
      instead of letting ``game``/``estimator`` close over them: a closed-over array is
      embedded in every compiled program as a constant (for Wordle's 47 MB table, several GB
      of memory while compiling).
    bind: ``tables -> (game, estimator)``, the same pair built over the given (traced)
      tables, or ``None`` to use ``game`` and ``estimator`` as they are.
    exact: the game's admissible bounds in exact integers (an object with ``node_total(n)``
      and ``action_totals(secrets, state)``, e.g. :class:`games.mastermind.ExactBounds`),
      which :func:`certify` checks a proof of optimality with; ``None``: nothing is ever
      claimed proven.
  """

  name: str
  game: Game
  estimator: Estimator
  secrets: tuple[str, ...]
  guess_names: Sequence[str]
  outcome_name: Callable[[int], str]
  solved_outcome: int
  score: Callable[[str, str], str]
  valid_guesses: Optional[Sequence[str]]
  header: dict
  initial_state: Any
  table: np.ndarray
  guess_of_secret: np.ndarray
  openings: Optional[tuple[str, ...]] = None
  tables: Any = None
  bind: Optional[Callable[[Any], tuple[Game, Estimator]]] = None
  exact: Any = None


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


def mastermind_openings(pegs: int, colours: int) -> tuple[str, ...]:
  """One first guess per symmetry class of Mastermind (colour and peg permutations): colour 1
  on the first ``λ1`` pegs, colour 2 on the next ``λ2``... for each partition ``λ`` of the
  pegs into at most ``colours`` parts (4 × 6: 1111, 1112, 1122, 1123, 1234)."""
  return tuple("".join(str(colour + 1) * size for colour, size in enumerate(partition))
               for partition in _partitions(pegs, pegs, colours))


def mastermind_puzzle(pegs: int = 4, colours: int = 6, symmetry: bool = True) -> Puzzle:
  """Mastermind with ``pegs`` × ``colours`` (default 4 × 6: 1296 codes, 14 feedbacks);
  ``symmetry``: skip guesses equivalent under colour and peg permutations
  (:class:`games.mastermind.Symmetry`)."""
  from games import mastermind
  game = mastermind.make(pegs, colours, symmetry=symmetry)
  codes = tuple(game.code_string(i) for i in range(game.num_codes))
  return Puzzle(name="mastermind", game=game.game, estimator=game.estimator, secrets=codes,
                guess_names=codes, outcome_name=game.outcome_string,
                solved_outcome=game.solved_code,
                score=policy_file.MastermindScore(pegs, colours), valid_guesses=None,
                header=policy_file.mastermind_header(pegs, colours),
                initial_state=game.initial_state(), table=np.asarray(game.by_secret),
                guess_of_secret=np.arange(game.num_codes),
                openings=mastermind_openings(pegs, colours), tables=game.by_secret,
                bind=game.bind, exact=game.exact_bounds)


def wordle_puzzle(answers_path, guesses_path) -> Puzzle:
  """Wordle over the word lists in the given files (see ``games.wordle.load_words``)."""
  from games import wordle
  answers = wordle.load_words(answers_path)
  guesses = wordle.load_words(guesses_path)
  game = wordle.make(answers, guesses)
  return Puzzle(name="wordle", game=game.game, estimator=game.estimator,
                secrets=tuple(game.answers), guess_names=tuple(game.guesses),
                outcome_name=wordle.pattern_string, solved_outcome=wordle.SOLVED,
                score=policy_file.WordleScore(game.answers), valid_guesses=tuple(game.guesses),
                header=policy_file.wordle_header(str(answers_path), str(guesses_path),
                                                 len(answers), len(guesses)),
                initial_state=game.initial_state(), table=np.asarray(game.by_secret),
                guess_of_secret=np.array([game.guess_index(w) for w in game.answers]),
                tables=game.by_secret, bind=game.bind, exact=game.exact_bounds)


@dataclasses.dataclass
class SolveResult:
  """What :func:`solve` found.

  Attributes:
    policy: the exported decision tree (a :mod:`jaxsearch.policy_file` node).
    evaluation: its exact evaluation over every secret (``total_guesses`` is *the* figure).
    bound_total: the achievable bound in total guesses: the search's, or the exported
      policy's exact total where that is better.
    upper_total: the optimistic bound in total guesses (no policy does better), or ``None``.
    proven_optimal: the two bounds meet (so ``evaluation.total_guesses`` is optimal).
    simulations, nodes, seconds: work done (nodes summed over the batch of trees).
    history: ``(simulations, seconds, bound_total, upper_total)`` after every chunk.
    memory: the run's memory estimate (:class:`MemoryEstimate`), or ``None``.
    trees: the final batch of search trees (numpy arrays, leading ``[B]``; with openings,
      every opening's sub-problems in order), e.g. to draw (:func:`jaxsearch.viz.draw`).
    subproblems: with a fixed first guess (or openings), ``(proven, total)``: how many of
      the chosen opening's feedback sub-problems are certified solved optimally by the
      policy found (:func:`certify`); ``None`` otherwise.
  """

  policy: dict
  evaluation: policy_file.Evaluation
  bound_total: float
  upper_total: Optional[float]
  proven_optimal: bool
  simulations: int
  nodes: int
  seconds: float
  history: list
  memory: Optional["MemoryEstimate"] = None
  subproblems: Optional[tuple[int, int]] = None
  trees: Any = None


def feedback_parts(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """How every guess splits a set of secrets, from its feedback rows (numpy).

  Args:
    rows: ``u8[n, G]``, the feedback code of each guess (column) for each secret (row).
  Returns:
    ``(codes, sizes)``, both ``[n, G]``: the column's codes sorted, and at the last row of
    each run of equal codes (one feedback part) the part's size, 0 on the other rows — so
    ``sizes.sum(0) == n`` and the non-zero entries of a column are its part sizes. One sort
    of ``n × G`` codes: cheap for the small sets of a deep tree, where a histogram over all
    ``O`` codes of every guess would cost ``O × G``.
  """
  codes = np.sort(rows, axis=0)
  n = codes.shape[0]
  first = np.ones(codes.shape, bool)
  first[1:] = codes[1:] != codes[:-1]
  last = np.ones(codes.shape, bool)
  last[:-1] = first[1:]
  index = np.arange(n)[:, None]
  start = np.maximum.accumulate(np.where(first, index, 0), axis=0)
  return codes, np.where(last, index - start + 1, 0)


def _remaining(bits: np.ndarray, num_secrets: int) -> np.ndarray:
  """Secret indices set in a ``u32[W]`` bitset (bit ``s % 32`` of word ``s // 32``)."""
  words = np.asarray(bits, np.uint64)
  mask = ((words[:, None] >> np.arange(32, dtype=np.uint64)[None, :]) & 1).astype(bool)
  return np.flatnonzero(mask.reshape(-1)[:num_secrets])


class _TreeReader:
  """Extracts the best policy one tree of a batch holds (numpy copies of its arrays).

  At every node it compares, **exactly**, each expanded guess (completed recursively the same
  way) with the estimator-greedy policy (always the best entropic guess; the first candidate
  when at most two remain) on the node's remaining secrets, and keeps the cheapest. The tree's
  own policy is one of the candidates, so the result is never worse than the achievable
  bound's policy — usually much better, since the bound charges every unexplored node the
  pessimistic value ``(n + 1) / 2`` per secret.
  """

  def __init__(self, tree, row: int, puzzle: Puzzle):
    tree, row = _row_of(tree, row)
    take = lambda x: np.asarray(x[row])  # noqa: E731
    self.puzzle = puzzle
    self.bits = take(tree.node_state.remaining)
    self.slot_action = take(tree.slot_action)
    self.slot_legal = take(tree.slot_legal)
    self.slot_chance = take(tree.slot_chance)
    self.chance_prob = take(tree.chance_prob)
    self.chance_child = take(tree.chance_child)
    self.num_nodes = int(np.asarray(tree.num_nodes)[row])
    self._best: dict[int, tuple[int, Any]] = {}
    self._greedy: dict[bytes, int] = {}
    self._guess: dict[bytes, int] = {}

  def secrets_at(self, node: int) -> np.ndarray:
    return _remaining(self.bits[node], len(self.puzzle.secrets))

  def _greedy_guess(self, secrets: np.ndarray) -> int:
    """The estimator's best guess for ``secrets`` (the entropic q̂1, in numpy): what the
    search would try first. With one or two candidates, the first candidate (optimal).
    Memoised: the extraction asks for the same sets when it totals and when it exports."""
    if len(secrets) <= 2:
      return int(self.puzzle.guess_of_secret[secrets[0]])
    key = secrets.tobytes()
    if key in self._guess:
      return self._guess[key]
    n = len(secrets)
    _, sizes = feedback_parts(self.puzzle.table[secrets])  # [n, G], one size per part
    p = sizes / n
    entropy = -np.sum(np.where(sizes > 0, p * np.log2(np.where(sizes > 0, p, 1.0)), 0.0),
                      axis=0)
    num_guesses = sizes.shape[1]
    p_solve = np.zeros(num_guesses)
    p_solve[self.puzzle.guess_of_secret[secrets]] = 1.0 / n
    expected = np.where(entropy > 0, np.log2(n) / np.maximum(entropy, 1e-30) + 1.0, np.inf)
    cost = np.where(p_solve > 0, p_solve + (1 - p_solve) * expected, expected)
    self._guess[key] = guess = int(np.argmin(cost))
    return guess

  def _split(self, secrets: np.ndarray, guess: int):
    """``(feedback, group)`` pairs of the secrets the guess does not solve."""
    feedback = self.puzzle.table[secrets, guess]
    solved = self.puzzle.solved_outcome
    return [(int(v), secrets[feedback == v]) for v in np.unique(feedback) if v != solved]

  def _greedy_total(self, secrets: np.ndarray) -> int:
    """Total guesses of the estimator-greedy policy over ``secrets`` (memoised)."""
    key = secrets.tobytes()
    if key not in self._greedy:
      guess = self._greedy_guess(secrets)
      self._greedy[key] = len(secrets) + sum(
          self._greedy_total(group) for _, group in self._split(secrets, guess))
    return self._greedy[key]

  def _greedy_policy(self, secrets: np.ndarray) -> dict:
    guess = self._greedy_guess(secrets)
    return {"guess": self.puzzle.guess_names[guess], "children": {
        self.puzzle.outcome_name(v): self._greedy_policy(group)
        for v, group in self._split(secrets, guess)}}

  def best(self, node: int) -> tuple[int, Any]:
    """``(total guesses, choice)`` of the cheapest policy from ``node``; choice is a slot or
    ``None`` (the estimator-greedy completion)."""
    if node in self._best:
      return self._best[node]
    secrets = self.secrets_at(node)
    choice = (self._greedy_total(secrets), None)
    for slot in np.flatnonzero(self.slot_legal[node] & (self.slot_chance[node] >= 0)):
      chance = self.slot_chance[node, slot]
      total = len(secrets)
      for outcome in np.flatnonzero(self.chance_prob[chance] > 0):
        if outcome != self.puzzle.solved_outcome:
          total += self.best(int(self.chance_child[chance, outcome]))[0]
      if total < choice[0]:
        choice = (total, int(slot))
    self._best[node] = choice
    return choice

  def policy(self, node: int) -> dict:
    _, slot = self.best(node)
    if slot is None:
      return self._greedy_policy(self.secrets_at(node))
    chance = self.slot_chance[node, slot]
    children = {}
    for outcome in np.flatnonzero(self.chance_prob[chance] > 0):
      if outcome != self.puzzle.solved_outcome:
        children[self.puzzle.outcome_name(int(outcome))] = self.policy(
            int(self.chance_child[chance, outcome]))
    return {"guess": self.puzzle.guess_names[int(self.slot_action[node, slot])],
            "children": children}


class _Certifier:
  """Checks, in exact integers, that no policy from a node of one tree needs fewer than a
  target number of guesses in total (over the node's secrets).

  ``holds(node, target)`` is a proof by the game's exact admissible bounds
  (``puzzle.exact``, :class:`games.mastermind.ExactBounds`): the target is met outright when
  the node's counting bound reaches it; otherwise every guess that could still do better —
  its exact action bound below the target — must have been expanded in the tree, and for
  each such guess the targets of its feedbacks' children, summed with the ``n`` guesses it
  costs, must reach the target and hold recursively. The search's float bounds only choose
  the children's targets (rounded to integers, lowered where there is slack); every
  comparison that decides is between integers, so a float rounding error can make a true
  claim fail to certify, never a false one pass.
  """

  def __init__(self, puzzle: Puzzle, trees, row: int):
    trees, row = _row_of(trees, row)
    take = lambda x: np.asarray(x[row])  # noqa: E731
    self.puzzle = puzzle
    self.exact = puzzle.exact
    self.states = jax.tree.map(take, trees.node_state)
    self.node_upper = take(trees.node_upper).astype(np.float64)
    self.node_terminal = take(trees.node_terminal)
    self.slot_action = take(trees.slot_action)
    self.slot_chance = take(trees.slot_chance)
    self.chance_prob = take(trees.chance_prob)
    self.chance_child = take(trees.chance_child)
    self.num_nodes = int(np.asarray(trees.num_nodes)[row])
    self._proven: dict[int, int] = {}  # node -> largest target shown to hold
    self._failed: dict[int, int] = {}  # node -> smallest target that did not certify

  def secrets_at(self, node: int) -> np.ndarray:
    return _remaining(self.states.remaining[node], len(self.puzzle.secrets))

  def claim(self, node: int) -> int:
    """The integer total the tree's float optimistic bound suggests for ``node``."""
    n = len(self.secrets_at(node))
    total = -self.node_upper[node] * n
    floor = self.exact.node_total(n) if n else 0
    return max(floor, int(round(total))) if np.isfinite(total) and abs(total) < 1e15 else floor

  def holds(self, node: int, target: int) -> bool:
    if target <= self._proven.get(node, 0):
      return True
    if target >= self._failed.get(node, 1 << 62):
      return False
    proven = self._holds(node, target)
    if proven:
      self._proven[node] = max(self._proven.get(node, 0), target)
    else:
      self._failed[node] = min(self._failed.get(node, 1 << 62), target)
    return proven

  def _holds(self, node: int, target: int) -> bool:
    secrets = self.secrets_at(node)
    n = len(secrets)
    if n == 0 or bool(self.states.solved[node]) or self.node_terminal[node]:
      return target <= 0
    if target <= self.exact.node_total(n):
      return True
    state = jax.tree.map(lambda x: x[node], self.states)
    totals, considered = self.exact.action_totals(secrets, state)
    expanded = {int(self.slot_action[node, slot]): int(self.slot_chance[node, slot])
                for slot in np.flatnonzero(self.slot_chance[node] >= 0)}
    for action in np.flatnonzero(considered & (totals < target)):
      chance = expanded.get(int(action))
      if chance is None:
        return False  # a guess that might beat the target was never searched
      children = [int(self.chance_child[chance, o])
                  for o in np.flatnonzero(self.chance_prob[chance] > 0)
                  if o != self.puzzle.solved_outcome]
      if not self.children_hold(children, target - n):
        return False
    return True

  def children_hold(self, children: Sequence[int], target: int) -> bool:
    """Whether the totals of ``children`` provably sum to at least ``target``: each child is
    given the target its float bound suggests, the slack above ``target`` taken off the
    largest ones first (down to their counting bounds), then each is certified."""
    claims = {child: self.claim(child) for child in children}
    slack = sum(claims.values()) - target
    if slack < 0:
      return False
    for child in sorted(children, key=lambda c: -claims[c]):
      floor = self.exact.node_total(len(self.secrets_at(child)))
      cut = min(slack, max(claims[child] - floor, 0))
      claims[child] -= cut
      slack -= cut
    return all(self.holds(child, claims[child]) for child in children)


def certify(puzzle: Puzzle, trees, rows: Sequence[int], target: int,
            cost: int = 0) -> bool:
  """Whether, in exact integers, no policy does better than ``target`` total guesses, where a
  policy's total is ``cost`` plus the totals of the sub-problems at the roots ``rows`` of
  ``trees`` (one root: ``rows = [0]``, ``cost = 0``; a fixed first guess: every feedback's
  root, ``cost`` = the number of secrets, who all pay for it). See :class:`_Certifier`.
  Needs ``puzzle.exact``; ``False`` without it."""
  if puzzle.exact is None:
    return False
  certifiers = {row: _Certifier(puzzle, trees, row) for row in rows}
  claims = {row: certifiers[row].claim(0) for row in rows}
  slack = cost + sum(claims.values()) - target
  if slack < 0:
    return False
  for row in sorted(rows, key=lambda r: -claims[r]):
    floor = puzzle.exact.node_total(len(certifiers[row].secrets_at(0)))
    cut = min(slack, max(claims[row] - floor, 0))
    claims[row] -= cut
    slack -= cut
  return all(certifiers[row].holds(0, claims[row]) for row in rows)


def solve(puzzle: Puzzle, roots=None, *, seconds: float = 60.0,
          max_simulations: Optional[int] = None, chunk: int = 128,
          max_nodes: int = 100_000, num_slots: Optional[int] = 64, bound_slots: int = 0,
          max_depth: Optional[int] = None, max_chance: Optional[int] = None,
          memory: Optional[float] = None, seed: int = 0,
          selection=None, variance: str = "avts", proof_every: int = 1,
          on_chunk: Optional[Callable[[dict], None]] = None,
          combine: Optional[Callable] = None, devices=None, extract: bool = True):
  """Searches until proven optimal, out of time, out of simulations or out of nodes.

  Args:
    puzzle: the game (:func:`mastermind_puzzle`, :func:`wordle_puzzle`).
    roots: ``[B]`` root states (default: the initial state, ``B = 1``); a batch of
      sub-problems is searched as one batch of trees.
    seconds: wall-clock budget (checked between chunks).
    max_simulations: budget per tree (default: none).
    chunk: simulations per jitted call.
    max_nodes, num_slots: tree capacity ``N`` and slots per node ``K`` (``None``: every
      action; a cutoff ``K < A`` keeps the top-``K`` guesses by q̂1 and forgoes the proof at
      nodes where it cut).
    bound_slots: of the ``K`` slots, how many hold the best action bounds instead of the best
      q̂1 (:class:`jaxsearch.search.SearchConfig`): what a proof through cut nodes needs.
    max_chance: chance records per tree (``C``; default ``max_nodes // 2``, ``// 4`` for
      games with at least 64 outcomes: one record holds every possible outcome of an
      expanded guess, so a tree has far fewer records than nodes — 5.4 nodes a record on
      Wordle; a tree that runs out of either stops growing). See :class:`SearchConfig`.
    memory: bytes the run may use (default: the memory available now). A run whose
      estimate (:func:`estimate_memory`) exceeds it raises :class:`MemoryBudgetError`
      before anything is compiled.
    max_depth: the longest path a simulation descends (static ``D``; default the game's
      ``max_length``, else :data:`DEFAULT_MAX_DEPTH`). Independent of ``chunk``: a node at
      depth ``D`` is never expanded, so ``D`` must exceed the depth any proof needs.
    seed: PRNG seed.
    selection: AVTS selection rule (default Thompson sampling).
    variance: AVTS variance model.
    proof_every: where the game has an optimistic bound, every ``proof_every``-th chunk runs
      the proof-directed rule (:func:`jaxsearch.selection.optimistic`, best-first on the
      optimistic bound) on the same trees, the others ``selection``; 0 never. The default,
      1, runs only the proof rule: with the estimators' per-action bounds
      (``Estimate.action_bounds``) it finds Mastermind 4×6's optimum sooner than any mix
      with Thompson sampling, and compiles one program instead of two.
    on_chunk: called after every chunk with a dict of progress figures.
    combine: ``(bound f64[B], upper f64[B] | None) -> (bound, upper)`` totals shown to
      ``on_chunk`` and used to stop once proven (default: sums over the batch).
    devices: split the batch of trees over devices (:mod:`jaxsearch.sharding`; ``B`` must
      be divisible by their number); the same seed gives the same trees on any number.
    extract: extract every root's policy (``False``: ``policies`` is ``None``; use
      :func:`extract_policy` on the roots wanted).
  Returns:
    ``(found, trees)``: ``found`` is a dict — ``policies`` (one exported policy node per
    root), ``bound`` and ``upper`` (``f64[B]`` totals per root; ``upper`` ``None`` without an
    optimistic bound), ``sizes`` (secrets per root), ``proven`` (by ``combine``'s totals),
    ``simulations``, ``nodes``, ``seconds``, ``history`` (``(simulations, seconds, bound[B],
    upper[B])`` per chunk); ``trees`` is the final batch or, where the open sub-problems
    were moved into larger trees (when every open tree is full and some roots are proven,
    the proven ones leave the batch and the node budget ``B × max_nodes`` is shared among the
    rest; one recompile), a list with one batch of one tree per root.
  """
  if roots is None:
    roots = jax.tree.map(lambda x: jnp.asarray(x)[None], puzzle.initial_state)
  batch = int(jax.tree.leaves(roots)[0].shape[0])
  if max_depth is None:
    max_depth = puzzle.game.max_length or DEFAULT_MAX_DEPTH
  from jaxsearch import selection as selection_lib
  if max_chance is None:
    # Nodes per record = possible outcomes per expansion: measured 5.4 on Wordle after
    # tarse (243 feedbacks), 2.7 on Mastermind 3×3 (9).
    max_chance = max(max_nodes // (4 if puzzle.game.num_outcomes >= 64 else 2), 1)
  options = dict(num_simulations=chunk, max_nodes=max_nodes, max_depth=max_depth,
                 num_slots=num_slots, bound_slots=bound_slots, variance=variance,
                 max_chance=min(max_chance, max_nodes), devices=devices)
  prove = puzzle.game.optimistic_value is not None and proof_every > 0

  def programs(**sizes):
    """``(init, step, proof_step)`` for trees of the given sizes."""
    config = {**options, **sizes}
    init, step = _program(puzzle, selection=selection, **config)
    proof_step = (_program(puzzle, selection=selection_lib.optimistic(), outcome_rule="gap",
                           **config)[1] if prove else None)
    return init, step, proof_step

  init, step, proof_step = programs()
  tables = puzzle.tables if puzzle.bind is not None and devices is None else None
  key = jax.random.PRNGKey(seed)
  memory_estimate = estimate_memory(puzzle, init, tables, key, roots)
  check_memory(memory_estimate, memory)
  tree = init(tables, key, roots)
  sizes = np.array([len(_remaining(np.asarray(b), len(puzzle.secrets)))
                    for b in np.asarray(roots.remaining)])
  # The trees searched now are the roots ``rows`` of the batch; sub-problems proven while
  # others are stuck in full trees leave the batch (``kept``), and the rest go on with the
  # whole node budget shared among fewer, larger trees (:func:`_regrow`).
  rows = np.arange(batch)
  kept: dict[int, Any] = {}
  current_roots, nodes_per_tree = roots, max_nodes
  bound = np.zeros(batch)
  upper = None
  start = time.perf_counter()
  history = []
  simulations = 0
  chunks = 0
  while True:
    chunks += 1
    run = proof_step if prove and chunks % proof_every == 0 else step
    out = run(tables, jax.random.fold_in(key, simulations), current_roots, tree)
    tree = out.tree
    simulations += chunk
    bound[rows] = -np.asarray(out.root_bound, np.float64) * sizes[rows]
    if out.root_upper is not None:
      upper = np.zeros(batch) if upper is None else upper
      upper[rows] = -np.asarray(out.root_upper, np.float64) * sizes[rows]
    nodes = int(np.asarray(tree.num_nodes).sum()) + sum(
        int(np.asarray(t.num_nodes).sum()) for t in kept.values())
    elapsed = time.perf_counter() - start
    stuck = ((np.asarray(tree.num_nodes) + puzzle.game.num_outcomes > nodes_per_tree)
             | (np.asarray(tree.num_chance) >= tree.max_chance))
    history.append((simulations, elapsed, bound.copy(), None if upper is None else upper.copy()))
    shown_bound, shown_upper = (
        combine(bound, upper) if combine is not None else
        (float(bound.sum()), None if upper is None else float(upper.sum())))
    proven = meets(shown_bound, shown_upper)
    if on_chunk is not None:
      on_chunk({"simulations": simulations, "seconds": elapsed, "bound": shown_bound,
                "upper": shown_upper, "nodes": nodes, "proven": proven})
    if (proven or elapsed >= seconds or
        (max_simulations is not None and simulations >= max_simulations)):
      break
    closed = np.array([upper is not None and meets(bound[r], upper[r]) for r in rows])
    open_stuck = stuck[~closed]
    if open_stuck.size == 0 or not np.all(open_stuck):
      continue  # some open tree can still grow
    larger = max_nodes * batch // max(int((~closed).sum()), 1)
    if not closed.any() or larger < 2 * nodes_per_tree or devices is not None:
      break  # every open tree is full and there is no room to give them
    for index in np.flatnonzero(closed):
      kept[int(rows[index])] = jax.tree.map(lambda x: np.asarray(x[index:index + 1]), tree)
    keep = np.flatnonzero(~closed)
    rows, nodes_per_tree = rows[keep], larger
    current_roots = jax.tree.map(lambda x: x[keep], current_roots)
    ratio = max(max_nodes // max(options["max_chance"], 1), 1)
    init, step, proof_step = programs(max_nodes=larger, max_chance=max(larger // ratio, 1))
    tree = _regrow(jax.tree.map(lambda x: x[keep], tree),
                   init(tables, key, current_roots))
  if kept:  # per root: its own batch of one (the rows that left) or a row of the last batch
    final = [kept[r] if r in kept else None for r in range(batch)]
    for index, r in enumerate(rows):
      final[int(r)] = jax.tree.map(lambda x: np.asarray(x[index:index + 1]), tree)
    tree = final
  policies_per_root = ([extract_policy(puzzle, tree, b) for b in range(batch)] if extract
                       else None)
  return dict(policies=policies_per_root, bound=bound, upper=upper, sizes=sizes,
              proven=proven, simulations=simulations, nodes=nodes, memory=memory_estimate,
              seconds=time.perf_counter() - start, history=history), tree


def _regrow(trees, fresh):
  """``trees`` copied into the larger ``fresh`` trees (more nodes and chance records, same
  batch): every index stays valid, the new entries are fresh."""
  return jax.tree.map(
      lambda new, old: new.at[tuple(slice(0, size) for size in old.shape)].set(old),
      fresh, trees)


def _row_of(trees, row: int):
  """``(batch, index)`` of root ``row``: ``trees`` is a batch of trees, or a list with one
  batch of one tree per root (after :func:`solve` regrew the open ones)."""
  return (trees[row], 0) if isinstance(trees, list) else (trees, row)


def _program(puzzle: Puzzle, **options):
  """``(init, step)``, jitted: ``init(tables, key, roots) -> trees`` and
  ``step(tables, key, roots, trees) -> PolicyOutput`` of one AVTS configuration
  (:func:`jaxsearch.policies.avts` ``options``). The game and estimator are built inside the
  traced functions from ``tables`` (``puzzle.bind``), so the programs take the tables as
  inputs instead of embedding them; ``tables`` is ``None`` where the puzzle has no ``bind``
  (or the batch is split over devices) and the closures are used as they are."""
  from jaxsearch import policies

  def search(tables):
    if tables is None:
      return policies.avts(puzzle.game, puzzle.estimator, **options)
    game, estimator = puzzle.bind(tables)
    return policies.avts(game, estimator, **options)

  def init(tables, key, roots):
    return search(tables).init_tree(None, key, roots)

  def step(tables, key, roots, trees):
    return search(tables)(None, key, roots, trees)

  if options.get("devices") is not None:  # the sharded search jits itself, per device
    return init, step
  return jax.jit(init), jax.jit(step)


def estimate_memory(puzzle: Puzzle, init, tables, key, roots) -> MemoryEstimate:
  """What a solve with the initialiser ``init`` (:func:`_program`) will hold, from the shapes
  of the trees it allocates (``jax.eval_shape``: nothing is computed)."""
  shapes = jax.eval_shape(init, tables, key, roots)
  trees = sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in jax.tree.leaves(shapes))
  nodes = int(shapes.node_visits.shape[0] * shapes.node_visits.shape[1])
  table_bytes = sum(int(np.asarray(x).nbytes) for x in jax.tree.leaves(puzzle.tables))
  from jaxsearch.search import SearchConfig
  expand_chunk = SearchConfig.__dataclass_fields__["expand_chunk"].default
  # Regrowing the open trees holds the old rows, the fresh larger trees and the copy at once.
  working = 8 * 4 * expand_chunk * puzzle.game.num_actions + 3 * trees
  return MemoryEstimate(trees=trees, per_node=trees / max(nodes, 1), tables=2 * table_bytes,
                        working=working, runtime=RUNTIME_BYTES, nodes=nodes)


def extract_policy(puzzle: Puzzle, trees, row: int) -> dict:
  """The exported policy of root ``row`` of a batch of trees (see :class:`_TreeReader`)."""
  return _TreeReader(trees, row, puzzle).policy(0)


def evaluate(puzzle: Puzzle, policy: dict) -> policy_file.Evaluation:
  """Exact evaluation of ``policy`` over every secret of ``puzzle``."""
  return policy_file.evaluate(policy, puzzle.secrets, puzzle.score,
                              guesses=puzzle.valid_guesses)


def _opening_roots(puzzle: Puzzle, first: str):
  """``(outcomes, states)``: the non-solving feedbacks of ``first`` at the start and the state
  after each (unbatched states, in outcome order)."""
  if first not in puzzle.guess_names:
    raise ValueError(f"first guess {first!r} is not an allowed guess")
  action = jnp.int32(list(puzzle.guess_names).index(first))
  state = puzzle.initial_state
  probs = np.asarray(puzzle.game.outcome_probs(state, action))
  outcomes = [int(o) for o in np.flatnonzero(probs > 0) if o != puzzle.solved_outcome]
  return outcomes, [puzzle.game.step(state, action, jnp.int32(o)).state for o in outcomes]


def solve_puzzle(puzzle: Puzzle, first: Optional[str] = None,
                 openings: Optional[Sequence[str]] = None, **kwargs) -> SolveResult:
  """Solves the whole puzzle, in one of three ways:

  * default: one tree from the initial state;
  * ``first``: the first guess is fixed and every feedback's sub-problem is a tree of one
    batch; "proven optimal" then means optimal *given that first guess*;
  * ``openings``: the same for several first guesses at once (all their sub-problems in one
    batch of trees, ``max_nodes`` shared out); the best opening by exact evaluation wins.
    When the openings cover every first guess up to symmetry (``puzzle.openings``), the
    optimistic bound — the best opening's — is unconditional.

  ``kwargs`` go to :func:`solve`. Returns a :class:`SolveResult` whose figure is the exact
  evaluation of the exported policy.
  """
  num_secrets = len(puzzle.secrets)
  if first is not None:
    openings = [first]
  subproblems = None
  if openings is None:
    found, trees = solve(puzzle, **kwargs)
    found["history"] = [(sims, secs, float(bound.sum()),
                         None if upper is None else float(upper.sum()))
                        for sims, secs, bound, upper in found["history"]]
    policy = found["policies"][0]
    bound_total = float(found["bound"].sum())
    upper_total = None if found["upper"] is None else float(found["upper"].sum())
    evaluation = evaluate(puzzle, policy)
    proven = certify(puzzle, trees, [0], evaluation.total_guesses)
  else:
    openings = list(openings)
    groups = [_opening_roots(puzzle, guess) for guess in openings]
    states = [state for _, opening_states in groups for state in opening_states]
    roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    # ``max_nodes`` is the budget of the whole batch, shared out between the trees.
    kwargs["max_nodes"] = max(kwargs.get("max_nodes", 100_000) // len(states),
                              4 * puzzle.game.num_outcomes + 1)
    sizes = [len(outcomes) for outcomes, _ in groups]
    offsets = np.cumsum([0] + sizes)

    def totals(bound, upper):
      """Per opening: every secret pays the first guess, the sub-problems' totals come on
      top. The achievable bound is the best opening's; the optimistic one too (no policy
      beats every opening's bound)."""
      bounds = [num_secrets + bound[a:b].sum() for a, b in zip(offsets, offsets[1:])]
      uppers = (None if upper is None else
                [num_secrets + upper[a:b].sum() for a, b in zip(offsets, offsets[1:])])
      return float(min(bounds)), None if uppers is None else float(min(uppers))

    found, trees = solve(puzzle, roots, combine=totals, extract=False, **kwargs)
    found["history"] = [(sims, secs) + totals(bound, upper)
                        for sims, secs, bound, upper in found["history"]]
    trees = jax.tree.map(np.asarray, trees)
    # Openings in order of their achievable bound; one whose optimistic bound cannot beat the
    # best policy evaluated so far is proven no better and is not extracted.
    opening_bounds = [float(found["bound"][a:b].sum()) for a, b in zip(offsets, offsets[1:])]
    best = None
    for index in np.argsort(opening_bounds, kind="stable"):
      guess, (outcomes, _) = openings[index], groups[index]
      if best is not None and found["upper"] is not None and meets(
          best[0].total_guesses, num_secrets + found["upper"][
              offsets[index]:offsets[index + 1]].sum()):
        continue
      readers = [_TreeReader(trees, row, puzzle)
                 for row in range(offsets[index], offsets[index + 1])]
      candidate = {"guess": guess, "children": {
          puzzle.outcome_name(o): reader.policy(0) for o, reader in zip(outcomes, readers)}}
      evaluated = evaluate(puzzle, candidate)
      if best is None or evaluated.total_guesses < best[0].total_guesses:
        best = (evaluated, candidate, index, [reader.best(0)[0] for reader in readers])
    evaluation, policy, chosen, sub_totals = best
    # Which of the chosen opening's sub-problems are solved optimally (exact certificates).
    a, b = offsets[chosen], offsets[chosen + 1]
    subproblems = (int(sum(certify(puzzle, trees, [row], total)
                           for row, total in zip(range(a, b), sub_totals))), int(b - a))
    bound_total, upper_total = totals(found["bound"], found["upper"])
    # Optimal (given the openings) when no opening can do better than the policy found.
    proven = all(certify(puzzle, trees, range(a, b), evaluation.total_guesses, num_secrets)
                 for a, b in zip(offsets, offsets[1:]))
  # The achievable bound is the exported policy's exact total where that is better; "proven"
  # comes from the exact certificate, never from comparing the float totals.
  bound_total = min(bound_total, float(evaluation.total_guesses))
  return SolveResult(policy=policy, evaluation=evaluation, bound_total=bound_total,
                     upper_total=upper_total, proven_optimal=bool(proven),
                     simulations=found["simulations"], nodes=found["nodes"],
                     seconds=found["seconds"], history=found["history"],
                     memory=found.get("memory"), subproblems=subproblems,
                     trees=jax.tree.map(np.asarray, trees))


def plot_history(result: SolveResult, path, title: str) -> None:
  """PNG of the bounds (total guesses) against simulations, like seed 000's graph."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  sims = [h[0] for h in result.history]
  fig, ax = plt.subplots(figsize=(7, 4))
  ax.plot(sims, [h[2] for h in result.history], label="achievable bound (a policy reaches it)")
  if result.upper_total is not None:
    ax.plot(sims, [h[3] for h in result.history], label="optimistic bound (none does better)")
  ax.axhline(result.evaluation.total_guesses, color="grey", linestyle=":",
             label=f"exported policy, evaluated: {result.evaluation.total_guesses}")
  ax.set_xlabel("simulations per tree")
  ax.set_ylabel("total guesses over all secrets")
  ax.set_yscale("log")
  ax.set_title(title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def summary(puzzle: Puzzle, result: SolveResult) -> dict:
  """The ``--json`` object."""
  ev = result.evaluation
  return {"game": puzzle.name, "secrets": ev.secrets, "total_guesses": ev.total_guesses,
          "expected_guesses": round(ev.expected_guesses, 6), "worst_case": ev.worst_case,
          "proven_optimal": result.proven_optimal,
          "bound_total": round(result.bound_total, 3),
          "upper_total": None if result.upper_total is None else round(result.upper_total, 3),
          "simulations": result.simulations, "nodes": result.nodes,
          "subproblems_proven": (None if result.subproblems is None else
                                 list(result.subproblems)),
          "bytes_per_node": None if result.memory is None else round(result.memory.per_node),
          "memory_estimate_gb": (None if result.memory is None else
                                 round(result.memory.total / (1 << 30), 2)),
          "seconds": round(result.seconds, 2)}
