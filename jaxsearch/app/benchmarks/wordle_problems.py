"""Wordle sub-problems with exact optima, for ``jaxsearch bench rules``: the feedback classes
of a first guess, and each class's exact optimum over every guess and within a search's
top-``K`` cut (:class:`CutoffBounds` on :class:`jaxsearch.guessing.exact.ExactSolver`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.games import wordle
from jaxsearch.guessing import game as guessing
from jaxsearch.guessing.exact import ExactBounds, ExactSolver


def feedback_classes(answers, first: str, low: int, high: int):
  """``[(pattern string, int[n] answer indices)]``: the classes of ``first``'s feedback on
  ``answers`` with ``low <= n <= high`` answers, largest first (ties by pattern)."""
  codes = np.asarray(wordle.feedback_table([first], answers))[0]
  found = []
  for code in np.unique(codes):
    members = np.flatnonzero(codes == code)
    if low <= len(members) <= high and code != wordle.SOLVED:
      found.append((wordle.pattern_string(int(code)), members))
  found.sort(key=lambda item: (-len(item[1]), item[0]))
  return found


def top_k_candidates(w, num_slots: int):
  """``secrets tuple -> int[k]``: the guesses a node of ``w``'s search keeps, the top
  ``num_slots`` finite q̂1 of the game's own estimator (ties by index, as the search)."""
  estimate = jax.jit(lambda states: w.estimator(None, jax.random.key(0), states).action_values)

  def candidates(secrets):
    mask = np.zeros(w.num_answers, bool)
    mask[list(secrets)] = True
    state = guessing.State(remaining=guessing.mask_to_bits(jnp.asarray(mask))[None],
                           solved=jnp.zeros((1,), bool))
    q = np.asarray(estimate(state))[0]
    finite = np.flatnonzero(np.isfinite(q))
    order = finite[np.argsort(-q[finite], kind="stable")]
    return order[:num_slots]

  return candidates


class CutoffBounds:
  """A guessing game's exact bounds (:class:`jaxsearch.guessing.exact.ExactBounds`) with the
  guesses allowed at each set of secrets cut to ``candidates(secrets)`` (e.g. a search's
  top-``K`` by q̂1, :func:`top_k_candidates`): given to
  :class:`jaxsearch.guessing.exact.ExactSolver`, the exact optimum of the policies that only
  ever guess within the cut. Sets of one or two secrets are taken as solved by guessing a
  secret (any cut that ranks the secrets first agrees), and the shortcut by a secret that tells
  the others apart is off (that secret may be cut)."""

  guess_of_secret = None

  def __init__(self, bounds, candidates):
    self.bounds, self.candidates = bounds, candidates

  def __getattr__(self, name):  # table, solved_code, node_total: the game's own
    return getattr(self.bounds, name)

  def action_totals(self, secrets, state=None):
    """The game's totals, with every guess outside the cut not considered."""
    totals, considered = self.bounds.action_totals(secrets, state)
    allowed = np.zeros(considered.shape, bool)
    allowed[np.asarray(self.candidates(tuple(int(s) for s in secrets)), np.int64)] = True
    return totals, considered & allowed

  def search_totals(self, secrets, symmetric=True):
    """The exact search's totals: :meth:`action_totals`, the cut applied. The game's
    symmetries are not used: the guess a symmetry keeps may lie outside the cut where the
    one it drops does not."""
    del symmetric
    return self.action_totals(secrets)


def exact_optimum(solver, secrets):
  """The exact optimal total of ``secrets`` (``ExactSolver``, no work cap), or ``None`` where
  no policy within a cut (:class:`CutoffBounds`) finds them all."""
  total = solver.optimum(np.asarray(secrets, np.int64))
  return None if total is None or total >= 1 << 60 else int(total)


def exact_solvers(w, num_slots: int):
  """``(every guess, the top num_slots by q̂1)``: two exact solvers of ``w``'s sets."""
  secret_of_guess = np.asarray(w.secret_of_guess)
  named = {int(s): g for g, s in enumerate(secret_of_guess) if s >= 0}
  guess_of_secret = ([named[s] for s in range(w.num_answers)]
                     if len(named) == w.num_answers else None)
  bounds = ExactBounds.build(np.asarray(w.by_secret), wordle.NUM_PATTERNS, wordle.SOLVED,
                             guess_of_secret=guess_of_secret)
  cut = CutoffBounds(bounds, top_k_candidates(w, num_slots))
  return ExactSolver(bounds, max_secrets=1 << 30), ExactSolver(cut, max_secrets=1 << 30)
