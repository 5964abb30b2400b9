"""The parts of the AVTS article's tree (:mod:`jaxsearch.games.avts_article`): the game on the
host, the entropic estimator q̂1 as a batched backend, and one node with its statistics
(*Wordle Perfect Play with Generic Methods*, T. Tyl 2024; docs/algorithms.md §2).

* **A node** (:class:`Node`) is a set of remaining secrets (``n >= 2``). It keeps *choices*
  (guesses), each with q̂1 (the entropic estimator, :func:`entropic_values`), q̂2 (its Bellman
  value), its visits and its bound.
* **Debiasing** as the article: bucket ``v`` (a choice's ``v``-th visit) keeps the streamed
  mean of the changes of q̂2; ``q̂3 = q̂2 + Σ_{j > n} mean[j]``. Histories are never cut: the
  buckets grow with the most visited choice.
* **Variances** (:class:`~jaxsearch.enums.Variance`), per bucket ``v`` with ``c`` records:
  ``AVTS`` the change minus the bucket's mean from before the record, squared, over
  ``max(c − 1, 1)`` (the library's default, :mod:`jaxsearch.debias`); ``CENTRED`` the
  article's text, Welford's centred sum over ``c − 1`` (one record: its mean squared);
  ``REFERENCE`` the article's code, the raw change of q̂2 squared, over (choices with at
  least ``v − 1`` visits) ``− 1``. ``σ²(n) = Σ_{j > n} var[j]``, a zero replaced by the
  nearest non-zero value toward fewer visits.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

from jaxsearch.enums import Variance
from jaxsearch.guessing.estimator import entropic_costs

VARIANCES = (Variance.AVTS, Variance.CENTRED, Variance.REFERENCE)

@dataclasses.dataclass(frozen=True, eq=False)
class Problem:
  """A guessing game on the host: ``table u8[S, G]`` (feedback of guess ``g`` for secret
  ``s``), ``guess_of_secret int[S]``, the all-correct ``solved_code``, ``num_codes``."""

  table: np.ndarray
  guess_of_secret: np.ndarray
  solved_code: int
  num_codes: int
  name: str
  guess_names: Optional[Sequence[str]] = None

  @property
  def num_secrets(self) -> int:
    return self.table.shape[0]

  @classmethod
  def wordle(cls, answers: Sequence[str], guesses: Sequence[str]) -> "Problem":
    """Wordle over the given lists (the guesses must include the answers)."""
    from jaxsearch.games import wordle
    index = {w: i for i, w in enumerate(guesses)}
    missing = [w for w in answers if w not in index]
    if missing:
      raise ValueError(f"{len(missing)} answers are not allowed guesses, e.g. {missing[:3]}")
    table = np.asarray(wordle.feedback_table(guesses, answers, secret_major=True), np.uint8)
    return cls(table, np.asarray([index[w] for w in answers]), wordle.SOLVED,
               wordle.NUM_PATTERNS, f"wordle {len(answers)}/{len(guesses)}", tuple(guesses))

  @classmethod
  def mastermind(cls, pegs: int, colours: int) -> "Problem":
    """Mastermind ``pegs`` × ``colours`` (every code a secret and a guess)."""
    from jaxsearch.games import mastermind
    table = np.asarray(mastermind.feedback_table(pegs, colours), np.uint8)
    num_codes = len(mastermind.feedback_keys(pegs))
    return cls(table, np.arange(table.shape[0]), num_codes - 1, num_codes,
               f"mastermind {pegs}x{colours}")


def entropic_values(problem: Problem, secrets: np.ndarray) -> np.ndarray:
  """``f64[G]``: q̂1 of every guess for the set ``secrets`` (``n >= 2`` indices), the
  entropic estimator of docs/algorithms.md §2 in float64; ``-inf`` for a guess that tells
  nothing and is not a candidate."""
  return -entropic_costs(problem.table, problem.guess_of_secret, secrets, problem.num_codes)


Estimator = Callable[[Problem, Sequence[np.ndarray]], list]


def numpy_estimator(problem: Problem, sets: Sequence[np.ndarray]) -> list:
  """The batched estimator's host form: :func:`entropic_values` of each set."""
  return [entropic_values(problem, s) for s in sets]


def jax_estimator(problem: Problem, batched: Optional[bool] = None,
                  bucket: int = 64) -> Estimator:
  """The library's estimator (:func:`jaxsearch.guessing.estimator.entropic_estimator`)
  as a batched backend: each call is one jitted program over the sets (padded to a multiple
  of ``bucket`` so that few shapes compile). ``batched=True`` computes every histogram of the
  batch as one matrix product, the form an accelerator wants; ``None`` decides by backend.
  float32 estimates, so ties may order differently from :func:`numpy_estimator`."""
  import jax
  import jax.numpy as jnp
  from jaxsearch.guessing.game import State, mask_to_bits
  from jaxsearch.guessing.estimator import entropic_estimator

  table = jnp.asarray(problem.table)
  secret_of_guess = np.full(problem.table.shape[1], -1, np.int64)
  secret_of_guess[problem.guess_of_secret] = np.arange(problem.num_secrets)

  @jax.jit
  def run(tbl, masks):
    est = entropic_estimator(tbl, secret_of_guess, problem.num_codes, batched=batched)
    states = State(remaining=mask_to_bits(masks), solved=jnp.zeros(masks.shape[0], bool))
    return est(None, None, states).action_values

  def estimate(_, sets: Sequence[np.ndarray]) -> list:
    size = -(-len(sets) // bucket) * bucket
    masks = np.zeros((size, problem.num_secrets), bool)
    for k, secrets in enumerate(sets):
      masks[k, secrets] = True
    values = np.asarray(run(table, jnp.asarray(masks)), np.float64)
    return [values[k] for k in range(len(sets))]

  return estimate


class Node:
  """One state of the tree: its secrets, its choices and their statistics."""

  __slots__ = ("secrets", "guesses", "q1", "q2", "visits", "bound", "parts", "children",
               "order", "order_q1", "cursor", "active", "count", "mean", "sq", "reached",
               "total", "best_bound")

  def __init__(self, secrets: np.ndarray):
    self.secrets = secrets
    self.guesses, self.q1, self.q2, self.visits, self.bound = [], [], [], [], []
    self.parts, self.children = [], []
    self.order, self.order_q1, self.cursor, self.active = None, None, 0, set()
    self.count, self.mean, self.sq = [], [], []  # bucket j (index j - 1): the j-th visits
    self.reached = [0]  # reached[k]: choices with at least k visits
    self.total = 0
    self.best_bound = -float(len(secrets))

  @property
  def n(self) -> int:
    return len(self.secrets)

  def q3(self) -> np.ndarray:
    """``f64[A]`` debiased values of the choices."""
    suffix = np.concatenate([np.cumsum(self.mean[::-1])[::-1], [0.0]])
    visits = np.asarray(self.visits)
    return np.asarray(self.q2) + suffix[np.minimum(visits, len(self.mean))]

  def bucket_variance(self, variance: Variance) -> np.ndarray:
    """``f64[V]`` per-bucket variance of the chosen model (module docstring)."""
    count = np.asarray(self.count, np.float64)
    sq = np.asarray(self.sq)
    if variance == Variance.REFERENCE:
      before = np.asarray(self.reached[:len(count)], np.float64)
      return sq / np.where(before > 1, before - 1, 1.0)
    var = sq / np.maximum(count - 1, 1)
    if variance == Variance.CENTRED:
      var = np.where(count == 1, np.square(self.mean), var)
    return var

  def sigma2(self, variance: Variance) -> np.ndarray:
    """``f64[A]`` σ² of each choice (zero-filled toward fewer visits)."""
    per = self.bucket_variance(variance)
    if len(per) == 0:
      best = float(np.max(self.q3())) if variance == Variance.REFERENCE else 0.0
      return np.full(len(self.guesses), best * best)
    sums = np.concatenate([np.cumsum(per[::-1])[::-1], [0.0]])  # σ² for n = 0..V
    last = np.maximum.accumulate(np.where(sums > 0, np.arange(len(sums)), -1))
    filled = np.where(last >= 0, sums[np.maximum(last, 0)], 0.0)
    return filled[np.minimum(np.asarray(self.visits), len(per))]

  def record(self, visits_after: int, change: float, variance: Variance) -> None:
    """Bucket ``visits_after`` records one change of q̂2 (histories grow, never cut)."""
    j = visits_after - 1
    if j == len(self.count):
      self.count.append(0)
      self.mean.append(0.0)
      self.sq.append(0.0)
    self.count[j] += 1
    c = self.count[j]
    old = self.mean[j]
    new = old + (change - old) / c
    self.mean[j] = new
    if variance == Variance.AVTS:
      self.sq[j] += (change - old) ** 2
    elif variance == Variance.CENTRED:
      recentred = (change - old) - (new - old)
      self.sq[j] += recentred ** 2 * (c / (c - 1) if c > 1 else 1.0)
    else:
      self.sq[j] += change ** 2
    if visits_after == len(self.reached):
      self.reached.append(0)
    self.reached[visits_after] += 1
