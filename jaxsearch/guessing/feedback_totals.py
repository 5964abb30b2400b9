"""The one-step bound of every guess at a set of secrets, three ways (the exact search's inner
loop: :meth:`jaxsearch.guessing.exact.ExactBounds.action_totals` picks the cheapest).

Each takes ``rows``, the feedbacks ``u8[n, k]`` of ``k`` guesses for the ``n`` secrets of the
set, and returns ``(totals, candidate, one_part)``, each ``[k]``: ``n + Σ_b T(|P_b|)`` over
the guess's parts ``P_b`` other than the solved one (``T``: the counting bound of a part's
size, ``node_totals[size]``), whether the guess is one of the secrets (it gets the solving
feedback from one), and whether it leaves the set in one part (it teaches nothing).
"""

from __future__ import annotations

import numpy as np

RADIX_SORT_FROM = 24  # secrets per set from which the sort is numpy's radix sort


def histogram_totals(rows: np.ndarray, node_totals: np.ndarray, solved_code: int,
                     num_codes: int):
  """From the ``[k, O]`` histogram of the guesses' feedbacks (one ``bincount``, no sort; ``O
  = num_codes``): the fastest where the game has few feedbacks (Mastermind's 14)."""
  n, num_guesses = rows.shape
  offsets = np.arange(num_guesses, dtype=np.intp) * num_codes
  bins = (rows + offsets).reshape(-1)  # [n·k]
  sizes = np.bincount(bins, minlength=num_guesses * num_codes).reshape(num_guesses, num_codes)
  candidate = sizes[:, solved_code] > 0
  one_part = np.count_nonzero(sizes, axis=1) == 1
  parts = node_totals[sizes]
  parts[:, solved_code] = 0
  return n + parts.sum(axis=1), candidate, one_part


def sorted_totals(rows: np.ndarray, node_totals: np.ndarray, solved_code: int):
  """From each guess's feedbacks sorted: a part is a run of equal codes (any number of
  feedbacks: Wordle's 243)."""
  # Each guess's feedbacks in one contiguous row, sorted.
  codes = np.ascontiguousarray(rows.T)  # [k, n]
  # numpy sorts 8-bit keys by radix when asked for a stable sort: linear in ``n``, 7-15x
  # faster than its default from 30 secrets up; below that the default wins.
  codes.sort(axis=1, kind="stable" if codes.shape[1] >= RADIX_SORT_FROM else "quicksort")
  num_guesses, n = codes.shape
  flat = codes.reshape(-1)
  first = np.ones(flat.shape, bool)  # where a part starts (every row starts one)
  first[1:] = flat[1:] != flat[:-1]
  first[::n] = True
  starts = np.flatnonzero(first)
  sizes = np.diff(np.append(starts, flat.size))
  guess = starts // n
  solving = flat[starts] == solved_code
  totals = n + np.bincount(guess, weights=np.where(solving, 0, node_totals[sizes]),
                           minlength=num_guesses).astype(np.int64)
  candidate = np.bincount(guess, weights=solving, minlength=num_guesses) > 0
  one_part = np.bincount(guess, minlength=num_guesses) == 1
  return totals, candidate, one_part


def pairwise_totals(rows: np.ndarray, solved_code: int):
  """For a set small enough that every part's bound is ``T(|P|) = 2|P| - 1``: a guess's
  total is then ``n + Σ (2|P| - 1)`` over its unsolved parts ``= 3n - candidate - parts``,
  and only the number of distinct feedbacks matters, counted by comparing the feedback rows
  pairwise, no sort (5-10x faster for small sets)."""
  n = rows.shape[0]
  parts = np.ones(rows.shape[1], np.int64)
  for i in range(1, n):
    seen = rows[i] == rows[0]
    for j in range(1, i):
      seen |= rows[i] == rows[j]
    parts += ~seen
  candidate = np.any(rows == solved_code, axis=0)
  return 3 * n - candidate - parts, candidate, parts == 1
