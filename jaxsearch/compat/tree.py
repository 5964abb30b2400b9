"""mctx's ``Tree``: the search tree as mctx lays it out, built from a jaxsearch tree.

A policy of :mod:`jaxsearch.compat` searches with the jaxsearch engine and returns its trees
in this layout (:func:`from_engine`), so ``search_tree.summary()``, ``.qvalues(...)``,
``.extra_data`` and code that walks ``children_index`` work as with mctx. Node ``i + 1`` is
the node created by simulation ``i`` (node 0 is the root) as long as every simulation creates
a node, which holds unless ``max_depth`` stops a simulation at an existing node: mctx then
leaves that index unused, jaxsearch creates the next node there instead (later indices
shift; parents still come before their children).

Inside a search, Q transforms and selection functions written for mctx see a one-node tree
(:func:`node_tree`) rather than the whole tree; see its docstring for what it holds.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Optional, TypeVar

import chex
import jax
import jax.numpy as jnp

from jaxsearch import tree as engine_tree
from jaxsearch.selection.base import NodeView

T = TypeVar("T")


@chex.dataclass(frozen=True)
class Tree(Generic[T]):
  """A batch of search trees in mctx's layout (``B`` batch, ``N`` nodes, ``A`` actions).

  Attributes:
    node_visits: ``i32[B, N]`` visit counts.
    raw_values: ``f32[B, N]`` the value estimate each node was created with.
    node_values: ``f32[B, N]`` the running mean of the returns through each node.
    parents: ``i32[B, N]`` parent node, ``NO_PARENT`` for the root and unused nodes.
    action_from_parent: ``i32[B, N]`` the action leading to each node.
    children_index: ``i32[B, N, A]`` child node per action, ``UNVISITED`` if none.
    children_prior_logits: ``f32[B, N, A]`` prior logits of each node.
    children_visits: ``i32[B, N, A]``.
    children_rewards: ``f32[B, N, A]`` reward of each expanded edge.
    children_discounts: ``f32[B, N, A]`` discount of each expanded edge.
    children_values: ``f32[B, N, A]`` value of each child node (0 if unvisited).
    embeddings: ``[B, N, ...]`` the embedding of each node.
    root_invalid_actions: ``[B, A]`` the root's invalid actions (ones = invalid).
    extra_data: ``[B, ...]`` whatever the search was given (Gumbel MuZero: its Gumbel draw).
  """

  node_visits: chex.Array
  raw_values: chex.Array
  node_values: chex.Array
  parents: chex.Array
  action_from_parent: chex.Array
  children_index: chex.Array
  children_prior_logits: chex.Array
  children_visits: chex.Array
  children_rewards: chex.Array
  children_discounts: chex.Array
  children_values: chex.Array
  embeddings: Any
  root_invalid_actions: chex.Array
  extra_data: T

  ROOT_INDEX: ClassVar[int] = 0
  NO_PARENT: ClassVar[int] = -1
  UNVISITED: ClassVar[int] = -1

  @property
  def num_actions(self) -> int:
    return self.children_index.shape[-1]

  @property
  def num_simulations(self) -> int:
    return self.node_visits.shape[-1] - 1

  def qvalues(self, indices) -> chex.Array:
    """Q of every action of the given node(s): ``reward + discount * child value``.

    ``indices`` is a scalar for an unbatched tree (``f32[A]``) or ``i32[B]`` for a batched
    one (``f32[B, A]``).
    """
    if jnp.shape(indices):
      return jax.vmap(_unbatched_qvalues)(self, indices)
    return _unbatched_qvalues(self, indices)

  def summary(self) -> "SearchSummary":
    """Root statistics of a batched tree (``visit_counts``, ``visit_probs`` (uniform where
    nothing was visited), ``value``, ``qvalues``; ``[B, A]`` or ``[B]``)."""
    chex.assert_rank(self.node_values, 2)
    value = self.node_values[:, Tree.ROOT_INDEX]
    batch_size, = value.shape
    qvalues = self.qvalues(jnp.full((batch_size,), Tree.ROOT_INDEX))
    visit_counts = self.children_visits[:, Tree.ROOT_INDEX].astype(value.dtype)
    total = jnp.sum(visit_counts, axis=-1, keepdims=True)
    visit_probs = visit_counts / jnp.maximum(total, 1)
    visit_probs = jnp.where(total > 0, visit_probs, 1 / self.num_actions)
    return SearchSummary(visit_counts=visit_counts, visit_probs=visit_probs, value=value,
                         qvalues=qvalues)


@chex.dataclass(frozen=True)
class SearchSummary:
  """Root statistics (see :meth:`Tree.summary`)."""

  visit_counts: chex.Array
  visit_probs: chex.Array
  value: chex.Array
  qvalues: chex.Array


def _unbatched_qvalues(tree: Tree, index) -> chex.Array:
  return tree.children_rewards[index] + tree.children_discounts[index] * tree.children_values[index]


def from_engine(tree: engine_tree.Tree, root_invalid_actions, extra_data=None,
                num_actions: Optional[int] = None) -> Tree:
  """The mctx view of a batch of jaxsearch trees searched with one slot per action.

  Args:
    tree: jaxsearch trees ``[B, N, K]`` with ``K = A`` slots (slot ``k`` is action ``k``)
      and one outcome per action, as :mod:`jaxsearch.compat`'s searches make them.
    root_invalid_actions: ``[B, A]`` kept as the tree's ``root_invalid_actions``.
    extra_data: kept as ``extra_data``.
    num_actions: keep only the first ``num_actions`` actions of every node (Stochastic
      MuZero's trees hold ``A`` actions then ``C`` chance outcomes; mctx returns the
      actions); ``None`` keeps all.
  Returns:
    A :class:`Tree` (``[B, N, A]``).
  """
  batch_size, max_nodes, num_slots = tree.slots.visits.shape
  rows = jnp.arange(batch_size)[:, None, None]
  chance = tree.slots.chance
  expanded = chance >= 0
  safe_chance = jnp.maximum(chance, 0)
  children_index = jnp.where(expanded, tree.chance.child[rows, safe_chance, 0],
                             Tree.UNVISITED)
  has_child = children_index >= 0
  rewards = jnp.where(expanded, tree.chance.reward[rows, safe_chance, 0], 0.0)
  discounts = jnp.where(expanded, tree.chance.discount[rows, safe_chance, 0], 0.0)
  children_values = jnp.where(has_child,
                              tree.nodes.value[rows, jnp.maximum(children_index, 0)], 0.0)
  actions = tree.slots.actions()
  action_from_parent = jnp.full((batch_size, max_nodes), Tree.NO_PARENT, jnp.int32).at[
      rows, jnp.where(has_child, children_index, max_nodes)].set(actions, mode="drop")
  width = num_slots if num_actions is None else num_actions

  def cut(x):
    return x[..., :width]

  return Tree(
      node_visits=tree.nodes.visits,
      raw_values=tree.nodes.raw_value,
      node_values=tree.nodes.value,
      parents=tree.nodes.parent,
      action_from_parent=action_from_parent,
      children_index=cut(children_index),
      children_prior_logits=cut(tree.slots.prior_logits),
      children_visits=cut(tree.slots.visits),
      children_rewards=cut(rewards),
      children_discounts=cut(discounts),
      children_values=cut(children_values),
      embeddings=tree.nodes.state,
      root_invalid_actions=cut(root_invalid_actions),
      extra_data=extra_data)


class Unavailable:
  """Stands for data a selection function cannot see inside a jaxsearch search; any
  attribute access raises a ``ValueError`` that says why."""

  def __init__(self, what: str):
    self._what = what

  def __getattr__(self, name):
    if name.startswith("__"):
      raise AttributeError(name)
    raise ValueError(self._what)

  def __getitem__(self, item):
    raise ValueError(self._what)


def recovered_value(view: NodeView) -> jax.Array:
  """``f32[]`` the value estimate a node was created with, recovered from its running mean:
  ``visits · V − Σ_a n(a) Q(a)`` (exact up to rounding for the running-mean backup, where
  ``V`` averages the estimate and every return through the node)."""
  visited = view.child_visits > 0
  returns = jnp.where(visited, view.child_visits.astype(jnp.float32) * view.child_values, 0.0)
  return view.visits.astype(jnp.float32) * view.value - jnp.sum(returns)


def node_tree(view: NodeView, *, raw_value=None, root_invalid_actions=None,
              extra_data: Any = None) -> Tree:
  """An *unbatched* one-node :class:`Tree` (node 0) holding what the engine shows a
  selection rule about one node (``K`` slots), for mctx-style functions ``f(tree, 0)``.

  What it holds: ``node_visits``, ``node_values``, ``children_visits``,
  ``children_prior_logits`` as they are; ``raw_values`` from ``raw_value`` or recovered
  from the running mean (:func:`recovered_value`); ``qvalues(0)`` exact (``children_values``
  hold Q itself, with rewards 0 and discounts 1); ``children_index`` tells expanded (0) from
  unexpanded (-1) children but points at no real node; ``root_invalid_actions`` are the
  node's unselectable slots unless given; no embeddings.
  """
  visited = view.child_visits > 0
  values = jnp.where(visited, view.child_values, 0.0)
  if raw_value is None:
    raw_value = recovered_value(view)
  if root_invalid_actions is None:
    root_invalid_actions = ~view.legal
  no_parent = jnp.full((1,), Tree.NO_PARENT, jnp.int32)
  return Tree(
      node_visits=jnp.reshape(view.visits, (1,)),
      raw_values=jnp.reshape(jnp.asarray(raw_value, jnp.float32), (1,)),
      node_values=jnp.reshape(view.value, (1,)),
      parents=no_parent,
      action_from_parent=no_parent,
      children_index=jnp.where(visited, 0, Tree.UNVISITED)[None],
      children_prior_logits=view.prior_logits[None],
      children_visits=view.child_visits[None],
      children_rewards=jnp.zeros_like(values)[None],
      children_discounts=jnp.ones_like(values)[None],
      children_values=values[None],
      embeddings=None,
      root_invalid_actions=root_invalid_actions,
      extra_data=extra_data)
