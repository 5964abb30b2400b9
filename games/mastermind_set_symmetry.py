"""Mastermind's colour and peg symmetries in numpy, for the exact integer bounds and search
(:class:`jaxsearch.guessing.exact.ExactBounds`, :class:`jaxsearch.guessing.exact.ExactSolver`).

A permutation ``π = (σ, τ)`` of the colours and pegs maps code ``x`` to ``π(x)_i =
σ(x_{τ(i)})`` and leaves feedback unchanged, ``f(π g, π s) = f(g, s)``. If ``π`` maps a set of
secrets ``S`` onto itself (it is in the set's *stabiliser*), guessing ``g`` or ``π(g)`` at
``S`` splits it into parts that ``π`` maps onto each other, so both guesses have the same
optimal total: only one guess of each orbit needs searching. Keeping the guesses that no
element of a subset ``K`` of the stabiliser maps to a smaller code index keeps the smallest
guess of every orbit, so any subset is sound (Koyama and Lai 1993 and Ville 2013 prune
Mastermind's exhaustive search with the same equivalence of guesses).

Two sources of such permutations:

* :meth:`SetSymmetry.history_redundant` — the permutations the game's states carry (those
  that fix every guess so far, :class:`games.mastermind_symmetry.Symmetry`), the same
  guesses the search's estimator masks, so that a certificate asks for the guesses the tree
  expanded;
* :meth:`SetSymmetry.set_redundant` — the set's own stabiliser, found from the set alone
  (what the exact search has): colours absent from every secret may be permuted freely
  (handled in closed form: a guess is kept only if it uses the absent colours in increasing
  order of first appearance), and the other elements are found by matching each colour's
  per-peg counts, then checked code by code.

Everything is numpy arrays and plain numbers, so the bounds holding it can be sent to the
certificates' worker processes.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

import numpy as np

# A set of fewer secrets is not searched for its stabiliser (its exact search is cheap).
MIN_STABILISER_SECRETS = 6
# At most this many candidate colour permutations are checked per peg permutation (a
# subset of the stabiliser is still sound).
MAX_CANDIDATES = 720


def _code_digits(pegs: int, colours: int) -> np.ndarray:
  """``int8[C**P, P]``: colour ``0..C-1`` of each peg of each code, in index order."""
  return np.asarray(list(itertools.product(range(colours), repeat=pegs)),
                    np.int8).reshape(colours ** pegs, pegs)


@dataclasses.dataclass(frozen=True, eq=False)
class SetSymmetry:
  """Guesses equivalent at a set of Mastermind codes (numpy; module docstring).

  Attributes:
    pegs, colours: ``P`` and ``C``.
    digits: ``int8[N, P]`` the colour of each peg of each code (``N = C**P``).
    peg_perms: ``int8[P!, P]`` every peg permutation, in :func:`itertools.permutations`
      order (the order of the ids the game's states carry).
    colour_perms: ``int8[C!, C]`` the same for the colours, or ``None`` where the game's
      states carry no permutations (a group too large to enumerate).
    openings: ``int64[k]`` the first guesses up to symmetry (the canonical guesses before
      any guess).
  """

  pegs: int
  colours: int
  digits: np.ndarray
  peg_perms: np.ndarray
  colour_perms: Optional[np.ndarray]
  openings: np.ndarray

  @classmethod
  def build(cls, pegs: int, colours: int, openings, with_history: bool) -> "SetSymmetry":
    """``openings``: the first guesses up to symmetry as code indices; ``with_history``:
    the game's states carry their permutations' ids (decoded by
    :meth:`history_redundant`)."""
    colour_perms = (np.asarray(list(itertools.permutations(range(colours))), np.int8)
                    if with_history else None)
    return cls(pegs=pegs, colours=colours, digits=_code_digits(pegs, colours),
               peg_perms=np.asarray(list(itertools.permutations(range(pegs))), np.int8),
               colour_perms=colour_perms, openings=np.asarray(openings, np.int64))

  @property
  def powers(self) -> np.ndarray:
    return self.colours ** np.arange(self.pegs - 1, -1, -1, dtype=np.int64)

  def _images(self, sigma: np.ndarray, tau: np.ndarray, digits=None) -> np.ndarray:
    """``int64[K]``: the indices of ``π(x)`` for the codes ``digits`` (default every code),
    ``π = (sigma, tau)``."""
    digits = self.digits if digits is None else digits
    return sigma[digits[:, tau]].astype(np.int64) @ self.powers

  def history_redundant(self, symmetries) -> Optional[np.ndarray]:
    """``bool[N]``: the guesses one of the permutations ``symmetries`` (a state's
    ``i32[M]`` ids, ``-1`` padded; ``[AT_START, -1...]`` before any guess: the whole group)
    maps to a smaller code — what :meth:`games.mastermind_symmetry.Symmetry.redundant`
    computes in JAX, here in numpy. ``None`` where there are no ids."""
    if symmetries is None or self.colour_perms is None:
      return None
    symmetries = np.asarray(symmetries).reshape(-1)
    codes = np.arange(len(self.digits))
    if symmetries[0] == -2:  # AT_START: every permutation applies
      return ~np.isin(codes, self.openings)
    redundant = np.zeros(len(codes), bool)
    for ident in symmetries[symmetries >= 0].tolist():
      peg, colour = divmod(int(ident), len(self.colour_perms))
      redundant |= self._images(self.colour_perms[colour], self.peg_perms[peg]) < codes
    return redundant

  def state_redundant(self, state) -> Optional[np.ndarray]:
    """:meth:`history_redundant` of a game state (its ``symmetries``)."""
    return self.history_redundant(getattr(state, "symmetries", None))

  def merged_redundant(self, secrets: np.ndarray) -> Optional[np.ndarray]:
    """``bool[N]``: guesses with a peg of a colour absent from every one of ``secrets``
    other than the smallest such colour, or ``None`` where fewer than two are absent. Such
    a peg never scores (``b`` counts equal pegs, ``w`` the colours both codes hold), so the
    guess gets, from every secret of the set, the feedback of the guess with that peg in
    the smallest absent colour, which is kept."""
    present = np.bincount(self.digits[np.asarray(secrets)].reshape(-1),
                          minlength=self.colours) > 0
    absent = np.flatnonzero(~present)
    if len(absent) < 2:
      return None
    other = np.zeros(self.colours, bool)
    other[absent[1:]] = True
    return other[self.digits].any(axis=1)

  def set_redundant(self, secrets: np.ndarray) -> Optional[np.ndarray]:
    """``bool[N]``: guesses that an element of the stabiliser of ``secrets`` (``int[n]``
    code indices, ascending) maps to a smaller code, or ``None`` where none is found or the
    set is too small to be worth it (every guess is then kept)."""
    secrets = np.asarray(secrets, np.int64)
    if len(secrets) < MIN_STABILISER_SECRETS:
      return None
    digits = self.digits[secrets]  # [n, P]
    counts = np.stack([np.bincount(digits[:, i], minlength=self.colours)
                       for i in range(self.pegs)], axis=1)  # [C, P]: colour c at peg i
    absent = np.flatnonzero(counts.sum(axis=1) == 0)
    elements = self._stabiliser(secrets, digits, counts)
    if not elements and len(absent) < 2:
      return None
    codes = np.arange(len(self.digits))
    smallest = self._relabel_absent(self.digits, absent)
    for sigma, tau in elements:
      smallest = np.minimum(smallest, self._relabel_absent(sigma[self.digits[:, tau]], absent))
    redundant = smallest < codes
    return redundant if redundant.any() else None

  def _stabiliser(self, secrets, digits, counts) -> list:
    """``[(sigma int8[C], tau int8[P])]``: the elements other than the identity that map
    ``secrets`` onto itself and fix every colour absent from it.

    ``π = (σ, τ)`` maps the set onto itself only if each colour ``c`` of ``τ(S)`` has, peg
    by peg, the counts of ``σ(c)`` in ``S``: each colour's counts are one integer key, the
    peg permutations whose keys are not those of ``S`` are dropped at once, and for the
    others only the colour permutations that match keys are checked, code by code."""
    present = np.flatnonzero(counts.sum(axis=1) > 0)
    if (len(secrets) + 1) ** self.pegs >= 1 << 62:
      return []  # keys would overflow: no symmetry (sound, only slower)
    base = (len(secrets) + 1) ** np.arange(self.pegs, dtype=np.int64)
    used = counts[present].astype(np.int64)  # [p, P]
    own = used @ base  # [p]: each present colour's key in S
    moved = used[:, self.peg_perms] @ base  # [p, T]: its key in τ(S), for every τ
    valid = np.all(np.sort(moved, axis=0) == np.sort(own)[:, None], axis=0)
    member = np.zeros(len(self.digits), bool)
    member[secrets] = True
    elements = []
    for t in np.flatnonzero(valid).tolist():
      tau = self.peg_perms[t]
      for sigma in self._colour_candidates(own, moved[:, t], present, skip_identity=t == 0):
        if member[self._images(sigma, tau, digits)].all():  # a bijection into S: onto S
          elements.append((sigma, tau))
    return elements

  def _colour_candidates(self, own: np.ndarray, keys: np.ndarray, present: np.ndarray,
                         skip_identity: bool):
    """Colour permutations ``σ`` (absent colours fixed) mapping each present colour ``c``
    (key ``keys[c]`` in ``τ(S)``) to one whose key in ``S`` (``own``) is the same: the only
    ones that can map ``τ(S)`` onto ``S`` (at most :data:`MAX_CANDIDATES`; the identity left
    out where ``skip_identity``)."""
    sources = present[np.argsort(keys, kind="stable")]
    targets = present[np.argsort(own, kind="stable")]
    sorted_keys = np.sort(keys)
    starts = np.flatnonzero(np.diff(sorted_keys)) + 1
    runs = [(a, b) for a, b in zip(np.append(0, starts), np.append(starts, len(keys)))]
    sigma = np.arange(self.colours, dtype=np.int8)
    sigma[sources] = targets
    free = [(a, b) for a, b in runs if b - a > 1]
    if not free:
      if not (skip_identity and np.array_equal(sigma, np.arange(self.colours))):
        yield sigma
      return
    made = 0
    for choice in itertools.product(*(itertools.permutations(targets[a:b])
                                      for a, b in free)):
      candidate = sigma.copy()
      for (a, b), image in zip(free, choice):
        candidate[sources[a:b]] = image
      if skip_identity and np.array_equal(candidate, np.arange(self.colours)):
        continue
      yield candidate
      made += 1
      if made >= MAX_CANDIDATES:
        return

  def _relabel_absent(self, digits: np.ndarray, absent: np.ndarray) -> np.ndarray:
    """``int64[K]``: the smallest code index each code (``digits`` ``[K, P]``) takes under
    the permutations of the ``absent`` colours (ascending): they are renamed, in order of
    first appearance, the smallest absent colours."""
    if len(absent) < 2:
      return digits.astype(np.int64) @ self.powers
    out = digits.astype(np.int64).copy()
    rows = np.arange(len(digits))
    is_absent = np.zeros(self.colours, bool)
    is_absent[absent] = True
    mapping = np.full((len(digits), self.colours), -1, np.int64)
    used = np.zeros(len(digits), np.int64)
    for peg in range(self.pegs):
      colour = digits[:, peg].astype(np.int64)
      hit = is_absent[colour]
      new = hit & (mapping[rows, colour] < 0)
      mapping[rows[new], colour[new]] = absent[used[new]]
      used[new] += 1
      out[hit, peg] = mapping[rows[hit], colour[hit]]
    return out @ self.powers
