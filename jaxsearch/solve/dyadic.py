"""Exact arithmetic for the solver's certificates: :class:`Dyadic` numbers (``n · 2^e``, which
every float32 of a game is, and which its sums and products stay) and the expected value of
an edge over its outcomes, exact (:func:`expected`) or in float64 (:func:`expected_float`)."""

from __future__ import annotations

from fractions import Fraction


class Dyadic:
  """An exact dyadic rational ``n · 2**e``: every finite float is one, and so are the sums and
  products of floats this module forms, so this is exact arithmetic like
  :class:`fractions.Fraction`, without its gcd at every step (values hundreds of moves deep
  have numerators of thousands of bits)."""

  __slots__ = ("n", "e")

  def __init__(self, n: int, e: int = 0):
    self.n, self.e = n, (e if n else 0)

  @staticmethod
  def of(x) -> "Dyadic":
    numerator, denominator = float(x).as_integer_ratio()  # the denominator is a power of 2
    return Dyadic(numerator, 1 - denominator.bit_length())

  def __add__(self, other: "Dyadic") -> "Dyadic":
    if self.e <= other.e:
      return Dyadic(self.n + (other.n << (other.e - self.e)), self.e)
    return Dyadic((self.n << (self.e - other.e)) + other.n, other.e)

  def __mul__(self, other: "Dyadic") -> "Dyadic":
    return Dyadic(self.n * other.n, self.e + other.e)

  def _aligned(self, other: "Dyadic") -> tuple[int, int]:
    if self.e <= other.e:
      return self.n, other.n << (other.e - self.e)
    return self.n << (self.e - other.e), other.n

  def __eq__(self, other) -> bool:
    a, b = self._aligned(other)
    return a == b

  def __lt__(self, other) -> bool:
    a, b = self._aligned(other)
    return a < b

  def __gt__(self, other) -> bool:
    a, b = self._aligned(other)
    return a > b

  __hash__ = None

  def reduced(self) -> "Dyadic":
    """The same number with an odd numerator (or 0), so that it stays small."""
    if not self.n:
      return self
    zeros = (self.n & -self.n).bit_length() - 1
    return Dyadic(self.n >> zeros, self.e + zeros)

  def fraction(self) -> Fraction:
    if self.e >= 0:
      return Fraction(self.n << self.e)
    return Fraction(self.n, 1 << -self.e)


ZERO = Dyadic(0)


def expected(edge, values) -> Dyadic:
  """``Σ_o p_o (r_o + d_o · values[child_o])`` exactly, 0 after an outcome that ends the game.
  ``edge`` is a tuple of ``(o, p, r, d, child or None)`` with :class:`Dyadic` numbers."""
  total = ZERO
  for _, p, r, d, child in edge:
    total = total + p * (r if child is None else r + d * values[child])
  return total.reduced()


def expected_float(edge, values, default) -> float:
  """:func:`expected` in float64 (``default[child]`` where ``values`` has no entry)."""
  total = 0.0
  for p, r, d, child in edge:
    if child is None:
      total += p * r
    else:
      value = values.get(child)
      value = default[child] if value is None else value
      # A discount of 0 hides the child's value, +inf included (0 · inf would be NaN).
      total += p * (r + d * value) if d else p * r
  return total
