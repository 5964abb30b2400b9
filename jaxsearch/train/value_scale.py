"""Value scales: how a game's values are put in the network's value-head range and back.

The networks' value heads end in ``tanh`` (:mod:`jaxsearch.train.networks`), so they can only
say values in ``[-1, 1]``. Wins and losses fit; pgx's 2048 (returns in the thousands) and
backgammon (gammons and backgammons score 2 and 3) do not, and trained on their raw returns the
head saturates and learns little. A :class:`ValueScale` is the small invertible map between the
two units:

* ``encode(x)``: a value ``x`` in the game's units -> the head's units, in ``[-1, 1]``; applied
  to the value (and action-value) *targets* in the loss (:mod:`jaxsearch.train.losses`);
* ``decode(y)``: the head's output ``y`` -> the game's units; applied by the estimator
  (:func:`jaxsearch.train.networks.estimator_from_network`) before the search sees it.

So the search, the replay buffer and self-play's targets stay in the game's units and from the
player to move's view — the search adds rewards to decoded values (``r + γ v``), which only
means something in the game's units. The search's selection rules need no scale of their own:
PUCT's Q is min-max normalised per node (``q_minmax``, as mctx) and Gumbel's completed Q is
rescaled to ``[0, 1]`` per node (``gumbel.rescale_q``); AVTS's Thompson draws take their spread
from the values themselves.

The kinds (:func:`for_game` picks one per game):

* ``identity``: nothing is done — not even ``x * 1 + 0`` — so games in ``[-1, 1]``
  (tic-tac-toe, Connect Four, the pgx board games) train bit for bit as before;
* ``linear(lo, hi)``: the affine map of ``[lo, hi]`` onto ``[-1, 1]``. Used where the game
  declares true ``value_bounds`` (backgammon ``(-3, 3)``): nothing is lost, and the mean of
  encoded targets is the encoding of the mean, so a squared loss still learns the expected
  value;
* ``muzero(lo, hi)``: MuZero's invertible transform
  ``h(x) = sign(x) (sqrt(|x| + 1) − 1) + εx`` (Schrittwieser et al. 2020, "Mastering Atari,
  Go, Chess and Shogi by Planning with a Learned Model", Appendix F; from Pohlen et al. 2018),
  then the affine map of ``[h(lo), h(hi)]`` onto ``[-1, 1]``. Used where the game gives only a
  rough scale (``value_range``, e.g. 2048's ``(0, 10000)``): ``h`` compresses large returns,
  so a return of 100 and one of 1,000 are both well apart in the head's range. Targets past
  ``[lo, hi]`` are clipped (the head saturates there). With a squared loss the head learns the
  mean of ``h(z)``, which decodes to somewhat less than the mean of ``z`` when returns are
  noisy (Jensen); MuZero accepts this too (its categorical head has the same bias).
"""

from __future__ import annotations

import dataclasses
import jax
import jax.numpy as jnp

from jaxsearch.enums import ValueScaleKind, coerce

EPSILON = 1e-3  # MuZero's ε (Appendix F): keeps h⁻¹ Lipschitz and h strictly monotone


def h(x: jax.Array, epsilon: float = EPSILON) -> jax.Array:
  """MuZero's value transform ``sign(x)(sqrt(|x| + 1) − 1) + εx`` (elementwise, any shape).

  ``sqrt(a + 1) − 1`` is computed as ``a / (sqrt(a + 1) + 1)``: the same number, without the
  float32 cancellation that loses every digit of a small ``|x|``.
  """
  x = jnp.asarray(x, jnp.float32)
  a = jnp.abs(x)
  return jnp.sign(x) * a / (jnp.sqrt(a + 1.0) + 1.0) + epsilon * x


def h_inverse(y: jax.Array, epsilon: float = EPSILON) -> jax.Array:
  """The inverse of :func:`h` (elementwise, any shape).

  The closed form ``sign(y)(((sqrt(1 + 4ε(|y| + 1 + ε)) − 1) / 2ε)² − 1)`` cancels
  catastrophically in float32 for small ``|y|`` (or small ``ε``); it is rearranged here so that
  nothing close is subtracted: with ``s = sqrt((1 + 2ε)² + 4ε|y|)`` the bracket ``u`` has
  ``u − 1 = |y| (2 − 4ε / (s + 1 + 2ε)) / (s + 1)`` and ``u² − 1 = (u − 1)(u − 1 + 2)``.
  """
  y = jnp.asarray(y, jnp.float32)
  a = jnp.abs(y)
  s = jnp.sqrt((1.0 + 2.0 * epsilon) ** 2 + 4.0 * epsilon * a)
  u_minus_1 = a * (2.0 - 4.0 * epsilon / (s + 1.0 + 2.0 * epsilon)) / (s + 1.0)
  return jnp.sign(y) * u_minus_1 * (u_minus_1 + 2.0)


@dataclasses.dataclass(frozen=True)
class ValueScale:
  """An invertible map between a game's values and the value head's ``[-1, 1]``.

  Hashable and immutable (part of the trainer's static configuration). Build one with
  :func:`identity`, :func:`linear`, :func:`muzero` or :func:`for_game`.

  Attributes:
    kind: ``"identity"``, ``"linear"`` or ``"muzero"``.
    lo, hi: the game's values mapped onto ``-1`` and ``1`` (unused by ``identity``).
    epsilon: MuZero's ε (``muzero`` only).
  """

  kind: ValueScaleKind = ValueScaleKind.IDENTITY
  lo: float = -1.0
  hi: float = 1.0
  epsilon: float = EPSILON

  def __post_init__(self):
    object.__setattr__(self, "kind", coerce(ValueScaleKind, self.kind, "value scale kind"))
    if self.kind is ValueScaleKind.AUTO:
      raise ValueError("value scale kind 'auto' is resolved by for_game, not a scale itself")
    if self.kind is not ValueScaleKind.IDENTITY and not float(self.hi) > float(self.lo):
      raise ValueError(f"value scale {self.kind.value!r} needs hi > lo, got ({self.lo}, "
                       f"{self.hi})")
    if self.kind is ValueScaleKind.MUZERO and not float(self.epsilon) >= 0.0:
      raise ValueError(f"muzero's epsilon must be >= 0, got {self.epsilon}")

  @property
  def is_identity(self) -> bool:
    return self.kind is ValueScaleKind.IDENTITY

  def _inner(self, x: jax.Array) -> jax.Array:
    """The monotone part before the affine map (``h`` for muzero)."""
    return h(x, self.epsilon) if self.kind is ValueScaleKind.MUZERO else jnp.asarray(x, jnp.float32)

  def encode(self, x: jax.Array) -> jax.Array:
    """``f32[...]``: game values ``x`` in the head's units, clipped to ``[-1, 1]``
    (``identity``: ``x`` itself). NaN stays NaN (the loss masks missing targets)."""
    if self.is_identity:
      return x
    lo, hi = self._inner(self.lo), self._inner(self.hi)
    y = 2.0 * (self._inner(x) - lo) / (hi - lo) - 1.0
    return jnp.clip(y, -1.0, 1.0)

  def decode(self, y: jax.Array) -> jax.Array:
    """``f32[...]``: head outputs ``y`` (clipped to ``[-1, 1]`` first) in the game's units,
    within ``[lo, hi]`` (``identity``: ``y`` itself)."""
    if self.is_identity:
      return y
    lo, hi = self._inner(self.lo), self._inner(self.hi)
    inner = lo + (jnp.clip(jnp.asarray(y, jnp.float32), -1.0, 1.0) + 1.0) * 0.5 * (hi - lo)
    if self.kind is ValueScaleKind.MUZERO:
      # h is monotone, so the result lies in [lo, hi] up to rounding; clip that away.
      return jnp.clip(h_inverse(inner, self.epsilon), self.lo, self.hi)
    return inner

  def describe(self) -> str:
    """A short text: ``"identity"``, ``"linear(-3, 3)"``, ``"muzero(0, 10000)"``."""
    if self.is_identity:
      return "identity"
    return f"{self.kind}({self.lo:g}, {self.hi:g})"


IDENTITY = ValueScale()


def identity() -> ValueScale:
  """The identity: for games whose values lie in ``[-1, 1]``."""
  return IDENTITY


def linear(lo: float, hi: float) -> ValueScale:
  """The affine map of ``[lo, hi]`` onto ``[-1, 1]``."""
  return ValueScale(ValueScaleKind.LINEAR, float(lo), float(hi))


def muzero(lo: float, hi: float, epsilon: float = EPSILON) -> ValueScale:
  """MuZero's ``h`` (Schrittwieser et al. 2020, App. F), then ``[h(lo), h(hi)]`` onto
  ``[-1, 1]``."""
  return ValueScale(ValueScaleKind.MUZERO, float(lo), float(hi), float(epsilon))


def for_game(game, kind: str = "auto") -> ValueScale:
  """The value scale of ``game`` (anything with ``value_range`` and ``value_bounds``).

  The range is the game's ``value_bounds`` (values every state does hold) when declared, else
  its ``value_range`` (a scale). ``kind``:

  * ``"auto"``: ``identity`` when the range lies within ``[-1, 1]`` (tic-tac-toe, Connect Four:
    unchanged training); else ``linear`` over the declared ``value_bounds`` (exact, unbiased:
    backgammon's ``(-3, 3)``); else ``muzero`` over ``value_range`` (a rough scale, with
    heavy-tailed returns: 2048's ``(0, 10000)``);
  * ``"identity"``, ``"linear"``, ``"muzero"``: that kind over the range.
  """
  kind = coerce(ValueScaleKind, kind, "value_scale")
  declared = getattr(game, "value_bounds", None)
  lo, hi = (float(v) for v in (declared if declared is not None else game.value_range))
  if kind is ValueScaleKind.IDENTITY or (kind is ValueScaleKind.AUTO and -1.0 <= lo and hi <= 1.0):
    return IDENTITY
  if kind is ValueScaleKind.AUTO:
    kind = ValueScaleKind.LINEAR if declared is not None else ValueScaleKind.MUZERO
  return linear(lo, hi) if kind is ValueScaleKind.LINEAR else muzero(lo, hi)
