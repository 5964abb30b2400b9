"""mctx's core types, under mctx's names and with mctx's fields (``B`` = batch).

They are ``chex`` dataclasses as in mctx, so ``.replace(...)``, keyword construction and
pytree behaviour are the same; code written against ``mctx.RootFnOutput`` and friends runs
unchanged. Nothing here imports mctx.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Tuple, TypeVar

import chex

from jaxsearch.compat.tree import Tree

Params = chex.ArrayTree
Action = chex.Array
RecurrentState = Any
NodeIndices = chex.Array
Depth = chex.Array
T = TypeVar("T")


@chex.dataclass(frozen=True)
class RecurrentFnOutput:
  """What a ``recurrent_fn`` returns for ``B`` transitions.

  Attributes:
    reward: ``[B]`` reward of the transition.
    discount: ``[B]`` discount between ``reward`` and ``value`` (``-1`` for alternating
      two-player zero-sum games, ``0`` at the end of an episode).
    prior_logits: ``[B, A]`` policy logits of the new state.
    value: ``[B]`` value estimate of the new state.
  """

  reward: chex.Array
  discount: chex.Array
  prior_logits: chex.Array
  value: chex.Array


RecurrentFn = Callable[[Params, chex.PRNGKey, Action, RecurrentState],
                       Tuple[RecurrentFnOutput, RecurrentState]]


@chex.dataclass(frozen=True)
class RootFnOutput:
  """The roots of a batch of searches.

  Attributes:
    prior_logits: ``[B, A]`` policy logits.
    value: ``[B]`` value estimates.
    embedding: ``[B, ...]`` any pytree, handed to the first ``recurrent_fn`` calls.
  """

  prior_logits: chex.Array
  value: chex.Array
  embedding: RecurrentState


RootActionSelectionFn = Callable[[chex.PRNGKey, Tree, NodeIndices], chex.Array]
InteriorActionSelectionFn = Callable[[chex.PRNGKey, Tree, NodeIndices, Depth], chex.Array]
QTransform = Callable[[Tree, chex.Array], chex.Array]
LoopFn = Callable[[int, int, Callable[[Any, Any], Any], Tuple[chex.PRNGKey, Tree]],
                  Tuple[chex.PRNGKey, Tree]]


@chex.dataclass(frozen=True)
class PolicyOutput(Generic[T]):
  """What a policy returns.

  Attributes:
    action: ``i32[B]`` the proposed action.
    action_weights: ``f32[B, A]`` the policy-training targets (they sum to one).
    search_tree: the searched :class:`Tree` (``[B, N, ...]``, ``N = num_simulations + 1``).
  """

  action: chex.Array
  action_weights: chex.Array
  search_tree: Tree[T]


@chex.dataclass(frozen=True)
class DecisionRecurrentFnOutput:
  """Stochastic MuZero: expanding a decision node (state → afterstate; no reward).

  Attributes:
    chance_logits: ``[B, C]`` logits of the ``C`` chance outcomes at the afterstate.
    afterstate_value: ``[B]`` value of the afterstate.
  """

  chance_logits: chex.Array
  afterstate_value: chex.Array


@chex.dataclass(frozen=True)
class ChanceRecurrentFnOutput:
  """Stochastic MuZero: expanding a chance node (afterstate + outcome → state).

  Attributes:
    action_logits: ``[B, A]`` policy logits of the new state.
    value: ``[B]`` value of the new state.
    reward: ``[B]`` reward of the transition.
    discount: ``[B]`` discount of the transition.
  """

  action_logits: chex.Array
  value: chex.Array
  reward: chex.Array
  discount: chex.Array


@chex.dataclass(frozen=True)
class StochasticRecurrentState:
  """The embedding a Stochastic MuZero search stores per node (decision or chance node).

  Attributes:
    state_embedding: ``[B, ...]`` the state (meaningful at decision nodes).
    afterstate_embedding: ``[B, ...]`` the afterstate (meaningful at chance nodes).
    is_decision_node: ``bool[B]``.
  """

  state_embedding: chex.ArrayTree
  afterstate_embedding: chex.ArrayTree
  is_decision_node: chex.Array


DecisionRecurrentFn = Callable[[Params, chex.PRNGKey, Action, RecurrentState],
                               Tuple[DecisionRecurrentFnOutput, RecurrentState]]
ChanceRecurrentFn = Callable[[Params, chex.PRNGKey, Action, RecurrentState],
                             Tuple[ChanceRecurrentFnOutput, RecurrentState]]
