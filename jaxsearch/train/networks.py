"""Flax ``nnx`` networks for board games, and the glue that makes any of them an Estimator.

A network maps observations ``f32[B, *obs_shape]`` (e.g. ``tictactoe.observe``'s ``[3, 3, 2]``
planes from the mover's view) to a :class:`NetworkOutput`: policy logits ``[B, A]``, a value
``[B]`` in ``[-1, 1]`` (tanh) and optionally action values ``[B, A]`` (tanh, for AVTS).

The search takes its estimator's parameters explicitly, so a network is split once into a
static ``graphdef`` and its parameters (an ``nnx.State`` pytree)::

    net = networks.MLP((3, 3, 2), 9, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(net)
    estimator = networks.estimator_from_network(graphdef, tictactoe.observe)
    search = js.policies.puct(tictactoe.GAME, estimator, num_simulations=32)
    out = jax.jit(search)(params, key, states)        # training just passes new params
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
from flax import nnx
from flax import struct

from jaxsearch.game import Estimate, Estimator, State
from jaxsearch.train.value_scale import ValueScale


def _layer_dtype(compute_dtype: str):
  """The ``dtype`` handed to the trunk's layers: ``None`` (flax infers ``float32`` from the
  parameters) for ``"float32"``, ``jnp.bfloat16`` for ``"bfloat16"``."""
  if compute_dtype == "float32":
    return None
  if compute_dtype == "bfloat16":
    return jnp.bfloat16
  raise ValueError(f"compute_dtype must be 'float32' or 'bfloat16', got {compute_dtype!r}")


@struct.dataclass
class NetworkOutput:
  """What a network says about a batch of observations.

  Attributes:
    logits: ``f32[B, A]`` policy logits (unnormalised, over all actions).
    value: ``f32[B]`` value for the player to move, in ``[-1, 1]``.
    action_values: ``f32[B, A]`` action values in ``[-1, 1]``, or ``None`` without that head.
  """

  logits: jax.Array
  value: jax.Array
  action_values: Optional[jax.Array] = None


class MLP(nnx.Module):
  """A fully connected trunk (ReLU) with policy, value and optional action-value heads.

  Args:
    obs_shape: the shape of one observation (flattened on input).
    num_actions: ``A``.
    hidden: widths of the trunk's layers.
    action_values: add the action-value head (AVTS).
    compute_dtype: ``"float32"`` or ``"bfloat16"``: the trunk's arithmetic (the parameters
      and the heads stay ``float32``).
    rngs: ``nnx.Rngs`` for the initialisation.
  """

  def __init__(self, obs_shape: Sequence[int], num_actions: int, *,
               hidden: Sequence[int] = (128, 128), action_values: bool = False,
               compute_dtype: str = "float32", rngs: nnx.Rngs):
    width = math.prod(obs_shape)
    dtype = _layer_dtype(compute_dtype)
    layers = []
    for size in hidden:
      layers.append(nnx.Linear(width, size, dtype=dtype, rngs=rngs))
      width = size
    self.trunk = nnx.List(layers)
    self.policy = nnx.Linear(width, num_actions, rngs=rngs)
    self.value = nnx.Linear(width, 1, rngs=rngs)
    self.action_value = nnx.Linear(width, num_actions, rngs=rngs) if action_values else None

  def __call__(self, obs: jax.Array) -> NetworkOutput:
    """``obs``: ``f32[B, *obs_shape]``."""
    x = obs.reshape(obs.shape[0], -1)
    for layer in self.trunk:
      x = jax.nn.relu(layer(x))
    x = x.astype(jnp.float32)  # the heads in float32
    return NetworkOutput(
        logits=self.policy(x), value=jnp.tanh(self.value(x)[:, 0]),
        action_values=None if self.action_value is None else jnp.tanh(self.action_value(x)))


class _Block(nnx.Module):
  """``x + conv(relu(ln(conv(relu(ln(x))))))`` — a pre-activation residual block; the
  convolutions in ``dtype`` (``None``: ``float32``), the norms and the sum in ``float32``."""

  def __init__(self, channels: int, rngs: nnx.Rngs, dtype=None):
    self.norm1 = nnx.LayerNorm(channels, rngs=rngs)
    self.conv1 = nnx.Conv(channels, channels, kernel_size=(3, 3), dtype=dtype, rngs=rngs)
    self.norm2 = nnx.LayerNorm(channels, rngs=rngs)
    self.conv2 = nnx.Conv(channels, channels, kernel_size=(3, 3), dtype=dtype, rngs=rngs)

  def __call__(self, x):
    """``x``: ``f32[B, H, W, channels]``."""
    y = self.conv1(jax.nn.relu(self.norm1(x)))
    y = self.conv2(jax.nn.relu(self.norm2(y.astype(jnp.float32))))
    return x + y.astype(jnp.float32)


class ResNet(nnx.Module):
  """A small residual conv net over ``[H, W, C]`` board planes.

  Args:
    obs_shape: ``(H, W, C)``.
    num_actions: ``A``.
    channels: width of the trunk.
    blocks: residual blocks.
    head_hidden: width of the value head's hidden layer.
    action_values: add the action-value head (AVTS).
    ones_plane: append a constant plane of ones to the input, so that the convolutions' zero
      padding differs from an empty cell (where a Connect Four disc can land, e.g.).
    compute_dtype: ``"float32"`` or ``"bfloat16"``: the trunk's convolutions (the
      parameters, the layer norms, the residual stream and the heads stay ``float32``).
    rngs: ``nnx.Rngs``.
  """

  def __init__(self, obs_shape: Sequence[int], num_actions: int, *, channels: int = 32,
               blocks: int = 2, head_hidden: int = 64, action_values: bool = False,
               ones_plane: bool = False, compute_dtype: str = "float32", rngs: nnx.Rngs):
    if len(obs_shape) != 3:
      raise ValueError(f"ResNet needs [H, W, C] observations, got shape {tuple(obs_shape)}")
    height, width, planes = obs_shape
    self.ones_plane = bool(ones_plane)
    planes += int(self.ones_plane)
    cells = height * width
    dtype = _layer_dtype(compute_dtype)
    self.stem = nnx.Conv(planes, channels, kernel_size=(3, 3), dtype=dtype, rngs=rngs)
    self.blocks = nnx.List([_Block(channels, rngs, dtype) for _ in range(blocks)])
    self.norm = nnx.LayerNorm(channels, rngs=rngs)
    self.policy_conv = nnx.Conv(channels, 2, kernel_size=(1, 1), rngs=rngs)
    self.policy = nnx.Linear(2 * cells, num_actions, rngs=rngs)
    self.value_conv = nnx.Conv(channels, 1, kernel_size=(1, 1), rngs=rngs)
    self.value_hidden = nnx.Linear(cells, head_hidden, rngs=rngs)
    self.value = nnx.Linear(head_hidden, 1, rngs=rngs)
    self.action_value = (nnx.Linear(2 * cells, num_actions, rngs=rngs)
                         if action_values else None)

  def __call__(self, obs: jax.Array) -> NetworkOutput:
    """``obs``: ``f32[B, H, W, C]``."""
    if self.ones_plane:
      obs = jnp.concatenate([obs, jnp.ones(obs.shape[:-1] + (1,), obs.dtype)], axis=-1)
    x = self.stem(obs).astype(jnp.float32)
    for block in self.blocks:
      x = block(x)
    x = jax.nn.relu(self.norm(x))
    batch = obs.shape[0]
    p = jax.nn.relu(self.policy_conv(x)).reshape(batch, -1)
    v = jax.nn.relu(self.value_conv(x)).reshape(batch, -1)
    v = jnp.tanh(self.value(jax.nn.relu(self.value_hidden(v)))[:, 0])
    return NetworkOutput(
        logits=self.policy(p), value=v,
        action_values=None if self.action_value is None else jnp.tanh(self.action_value(p)))


def _build(kind: str, obs_shape: tuple, num_actions: int, key: jax.Array,
           action_values: bool, sizes: dict) -> nnx.Module:
  rngs = nnx.Rngs(key)
  if kind == "mlp":
    return MLP(obs_shape, num_actions, action_values=action_values, rngs=rngs, **sizes)
  if kind == "resnet":
    return ResNet(obs_shape, num_actions, action_values=action_values, rngs=rngs, **sizes)
  raise ValueError(f"unknown network kind {kind!r}; expected 'mlp' or 'resnet'")


def build(kind: str, obs_shape: Sequence[int], num_actions: int, *, seed: int = 0,
          action_values: bool = False, **sizes) -> nnx.Module:
  """A network by name: ``"mlp"`` (sizes: ``hidden``) or ``"resnet"`` (``channels``,
  ``blocks``, ``head_hidden``, ``ones_plane``; both: ``compute_dtype``), initialised from
  ``seed`` (eagerly; :func:`init` is the compiled equivalent, with the same parameters)."""
  return _build(kind, tuple(obs_shape), num_actions, jax.random.PRNGKey(seed), action_values,
                sizes)


@functools.lru_cache(maxsize=32)
def _compiled_init(kind: str, obs_shape: tuple, num_actions: int, action_values: bool,
                   sizes: tuple):
  """One compiled initialiser per architecture; the key is an argument, so every seed
  reuses it."""

  def init_params(key):
    return nnx.split(_build(kind, obs_shape, num_actions, key, action_values,
                            dict(sizes)))[1]

  return jax.jit(init_params)


def init(kind: str, obs_shape: Sequence[int], num_actions: int, *, seed: int = 0,
         action_values: bool = False, **sizes) -> tuple[nnx.GraphDef, nnx.State]:
  """``(graphdef, params)`` of :func:`build`'s network, initialised in one compiled call
  (eager initialisation runs every layer's ops one by one: seconds on a busy CPU)."""
  obs_shape = tuple(obs_shape)
  sizes = {k: tuple(v) if isinstance(v, list) else v for k, v in sizes.items()}
  key = jax.random.PRNGKey(seed)
  graphdef, _ = nnx.split(nnx.eval_shape(
      lambda k: _build(kind, obs_shape, num_actions, k, action_values, sizes), key))
  params = _compiled_init(kind, obs_shape, num_actions, action_values,
                          tuple(sorted(sizes.items())))(key)
  return graphdef, params


def apply(graphdef: nnx.GraphDef, params: nnx.State, obs: jax.Array) -> NetworkOutput:
  """Runs the network ``nnx.merge(graphdef, params)`` on ``obs`` ``f32[B, *obs_shape]``
  (pure: usable under ``jit``, ``vmap`` and ``grad`` with ``params`` as the argument)."""
  return nnx.merge(graphdef, params)(obs)


def estimator_from_network(graphdef: nnx.GraphDef, observe: Callable[[State], jax.Array],
                           *, use_action_values: Optional[bool] = None,
                           value_scale: Optional[ValueScale] = None) -> Estimator:
  """An Estimator ``(params, key, states[B]) -> Estimate`` backed by a network.

  Args:
    graphdef: the network's static part (``nnx.split(net)[0]``); its parameters are the
      estimator's ``params`` (``nnx.split(net)[1]``), passed to every search call.
    observe: the game's unbatched ``state -> f32[*obs_shape]`` (vmapped here), e.g.
      ``tictactoe.observe``.
    use_action_values: pass the action-value head on as ``Estimate.action_values``; default:
      whenever the network has one.
    value_scale: the heads' ``[-1, 1]`` outputs are decoded with it into the game's units
      (:mod:`jaxsearch.train.value_scale`), so that the search adds rewards to values of the
      same units; ``None`` or the identity: passed on as they are.
  """
  decode = (None if value_scale is None or value_scale.is_identity else value_scale.decode)

  def estimate(params, key, states) -> Estimate:
    del key  # the networks are deterministic
    out = apply(graphdef, params, jax.vmap(observe)(states))
    action_values = out.action_values if use_action_values in (None, True) else None
    if use_action_values and action_values is None:
      raise ValueError("use_action_values=True but the network has no action-value head")
    value = out.value
    if decode is not None:
      value = decode(value)
      action_values = None if action_values is None else decode(action_values)
    return Estimate(value=value, prior_logits=out.logits, action_values=action_values)

  return estimate
