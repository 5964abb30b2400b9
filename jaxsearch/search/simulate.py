"""The search: :func:`init_tree`, :func:`run` and the simulation loop."""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxsearch import tree as tree_lib
from jaxsearch import validation
from jaxsearch.game import per_item_keys
from jaxsearch.model import Model
from jaxsearch.enums import OutcomeRule
from jaxsearch.search import opening
from jaxsearch.search.backup import SimulationKeys, simulation_keys
from jaxsearch.search.config import SearchConfig
from jaxsearch.search.descent import STEP_COLUMNS, RootPrior, empty_steps, root_prior, select
from jaxsearch.search.nodes import fixed_node_fields, node_update, root_noise_logits, write_root
from jaxsearch.search.plan import SearchPlan, plan_for
from jaxsearch.search.walks import select_walks, walk_keys
from jaxsearch.selection.base import RootContext
from jaxsearch.tree import Tree


def init_tree(model: Model, config: SearchConfig | SearchPlan, params, key, root_input,
              tree: Optional[Tree] = None) -> Tree:
  """A batch of trees whose roots are ``root_input`` (evaluated once).

  Where ``tree`` is given, its non-empty rows are kept (subtree reuse) and only its empty rows
  (``num_nodes == 0``, e.g. after :func:`jaxsearch.tree.reroot` into an unexpanded child) start
  from ``root_input``. ``config``: the search's config, or its plan
  (:func:`~jaxsearch.search.plan.plan_for`).
  """
  plan = plan_for(config, model)
  validation.check_inputs(model, plan.config, params, key, root_input, tree)  # trace time only
  expansion = _root_expansion(model, params, key, root_input, tree)
  batch_size, num_actions = expansion.legal.shape
  if num_actions != plan.num_actions:
    raise ValueError(f"root legal mask has {num_actions} actions, the model {plan.num_actions}")
  state_example = jax.tree.map(lambda x: x[0], expansion.state)
  # What no node would ever change is not stored (a slot's action where slot k is action k,
  # q̂1 where the estimator gives none): a quarter of the slot arrays of a default search.
  fixed = fixed_node_fields(expansion, plan)
  fresh = tree_lib.allocate(batch_size, plan.max_nodes, plan.num_slots, plan.num_outcomes,
                            state_example, **plan.backup.tree_parts(),
                            entropy=plan.entropy is not None, max_chance=plan.max_chance,
                            prior_probs=plan.keeps_prior_probs,
                            slot_actions="action" not in fixed,
                            action_values="action_value" not in fixed)
  fresh = jax.vmap(write_root)(fresh, expansion, node_update(expansion, plan))
  if tree is None:
    return fresh
  _check_reused(tree, fresh, plan.config)
  keep = tree.num_nodes > 0
  return jax.tree.map(
      lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), old, new),
      tree, fresh)


def _root_expansion(model: Model, params, key, root_input, tree: Optional[Tree]):
  """``model.root``'s evaluation of the roots, skipped where ``tree`` keeps every row (a
  solver's next chunk): a whole batch of estimates, the costliest step of such a chunk on a
  GPU, whose result would be thrown away. Zeros stand in for it then (no row reads them)."""
  if tree is None:
    return model.root(params, key, root_input)
  evaluate = lambda: model.root(params, key, root_input)  # noqa: E731
  unused = lambda: jax.tree.map(  # noqa: E731
      lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(evaluate))
  return jax.lax.cond(jnp.all(tree.num_nodes > 0), unused, evaluate)


def _check_reused(tree: Tree, fresh: Tree, config: SearchConfig) -> None:
  """A clear error where a tree passed to a search was not made for it (trace time)."""
  expected = (fresh.batch_size, fresh.max_nodes, fresh.num_slots, fresh.num_outcomes,
              fresh.num_buckets, fresh.max_chance)
  got = (tree.batch_size, tree.max_nodes, tree.num_slots, tree.num_outcomes, tree.num_buckets,
         tree.max_chance)
  if (tree.slot_bounds is None) != (fresh.slot_bounds is None):
    raise ValueError(f"the tree was made for another backup than this search's "
                     f"backup={config.backup.kind.value!r}")
  if (tree.entropy is None) != (fresh.entropy is None):
    raise ValueError("the tree was made with another subtree_entropy setting (None vs kept)")
  if (tree.slots.prior_probs is None) != (fresh.slots.prior_probs is None):
    raise ValueError("the tree was made by a search whose selection rule "
                     f"{'does not read' if tree.slots.prior_probs is None else 'reads'} the "
                     "prior probabilities (SelectionRule.reads_prior_probs); reuse a tree with "
                     "a search of the same rule")
  stored_where = {"action": "slots hold other actions than their index (a top-K cut, widening)",
                  "action_value": "the estimator returns action values"}
  for field, where in stored_where.items():
    kept = getattr(tree.slots, field) is not None
    if kept != (getattr(fresh.slots, field) is not None):
      raise ValueError(
          f"the tree was made by a search that {'stores' if kept else 'does not store'} "
          f"slots.{field} and this one {'does not' if kept else 'does'} (stored where {where}); "
          "reuse a tree with a search of the same config and estimator")
  if got != expected:
    raise ValueError(f"tree has (B, N, K, O, V, C) = {got}, this search needs {expected}")
  if jax.tree.structure(tree.nodes.state) != jax.tree.structure(fresh.nodes.state):
    raise ValueError("tree.nodes.state does not match the structure of the root states")


def draw_root_noise(config: SearchConfig, key, batch_size: int, num_slots: int) -> jax.Array:
  """``f32[B, K]`` the per-search draw of ``config.root_selection`` (zeros without one, or
  when the rule draws nothing); item ``b`` depends on ``key`` and ``b`` only."""
  rule = config.root_selection
  if rule is None or rule.noise is None:
    return jnp.zeros((batch_size, num_slots), jnp.float32)
  return jax.vmap(lambda k: rule.noise(k, (num_slots,)))(per_item_keys(key, batch_size))


def _roots(plan: SearchPlan, tree: Tree, noise_key, root_noise: Optional[jax.Array]):
  """``(RootPrior, root noise f32[B, K] or None)``: what the descents read of the roots, once
  per search: the prior with any Dirichlet noise mixed in, and the root rule's draw (``None``
  given draws it from ``noise_key``)."""
  batch_size = tree.batch_size
  root_logits = tree.slots.prior_logits[:, 0]
  if plan.root_noise is not None:
    root_logits = jax.vmap(root_noise_logits, in_axes=(0, 0, 0, None, None))(
        per_item_keys(noise_key, batch_size), root_logits, tree.slots.legal[:, 0],
        plan.root_noise.fraction, plan.root_noise.alpha)
  if plan.root_selection is not None and root_noise is None:
    root_noise = draw_root_noise(plan.config, jax.random.fold_in(noise_key, 1), batch_size,
                                 tree.num_slots)
  return root_prior(tree, root_logits, plan=plan), root_noise


def run(model: Model, config: SearchConfig | SearchPlan, params, key, root_input,
        tree: Optional[Tree] = None, root_noise: Optional[jax.Array] = None) -> Tree:
  """Runs ``config.num_simulations`` simulations on a batch of trees and returns them.

  From fresh roots, the simulations a root rule names up front (Gumbel MuZero's first phase)
  run first as one batched step (:mod:`jaxsearch.search.opening`), the rest in the loop.

  Args:
    model: the batched world (see :mod:`jaxsearch.model`).
    config: static settings (``max_nodes``, ``max_depth`` left ``None`` come from ``model``:
      :meth:`SearchConfig.for_model`), or the search's plan already resolved for ``model``
      (:func:`~jaxsearch.search.plan.plan_for`; what :class:`jaxsearch.policies.Search`
      passes).
    params: estimator parameters (any pytree, passed through).
    key: a PRNG key.
    root_input: the root states ``[B, ...]`` (for :func:`jaxsearch.model.from_game`).
    tree: optional trees to continue (subtree reuse).
    root_noise: ``f32[B, K]`` the per-search draw of ``config.root_selection``
      (:func:`draw_root_noise`); ``None`` draws it from ``key``.
  Returns:
    The trees, ``[B, N, ...]``.
  """
  plan = plan_for(config, model)  # resolved once: every phase reads the plan
  root_key, noise_key, loop_key = jax.random.split(key, 3)
  reused = tree is not None
  with jax.named_scope("init"):
    tree = init_tree(model, plan, params, root_key, root_input, tree)
  batch_size = tree.batch_size
  needs_key = plan.selection.needs_key or (
      plan.num_outcomes > 1 and plan.outcome_rule is OutcomeRule.SAMPLE)
  root, root_noise = _roots(plan, tree, noise_key, root_noise)
  root_raw_value = tree.nodes.raw_value[:, 0]
  opening_width = opening.width(plan, reused)
  done = None  # i32[B] simulations each tree had before the loop (None: none)
  if opening_width:
    with jax.named_scope("opening"):
      tree, done = opening.expand(model, plan, params, loop_key, tree, root, root_noise,
                                  opening_width)
  loop = _Loop(model, plan, params, loop_key, root, root_noise, root_raw_value, reused,
               needs_key, opening_width, done)
  walks = plan.leaves_per_step
  if walks > 1:  # steps of several paths per tree: ceil(simulations left / L) of them
    trips = (plan.num_steps if done is None
             else (plan.num_simulations - jnp.min(done) + walks - 1) // walks)
    steps = jnp.broadcast_to(empty_steps(batch_size, plan.max_depth),
                             (walks, batch_size, plan.max_depth, STEP_COLUMNS))
    return jax.lax.fori_loop(0, trips, loop.simulate_walks, (tree, steps))[0]
  trips = (plan.num_simulations if done is None
           else plan.num_simulations - jnp.min(done))
  return jax.lax.fori_loop(0, trips, loop.simulate,
                           (tree, empty_steps(batch_size, plan.max_depth)))[0]


class _Loop(NamedTuple):
  """What every simulation of :func:`run`'s loop reads besides the tree (static or traced once
  per search): the model and plan, the loop's key, the roots' prior and the root rule's draw
  (``[B, K]``), the roots' raw value (``f32[B]``), whether the tree was kept, whether the
  descent draws, and the opening's width and per-tree count (``done`` ``i32[B]`` or ``None``)."""

  model: Model
  plan: SearchPlan
  params: object
  loop_key: jax.Array
  root: RootPrior
  root_noise: Optional[jax.Array]
  root_raw_value: jax.Array
  reused: bool
  needs_key: bool
  opening_width: int
  done: Optional[jax.Array]

  def simulate(self, trip, carry):
    """One trip of the loop: descent, then the backup rule's expansion, evaluation and
    backup. ``carry``: the trees and the step buffer the last descent left."""
    tree, steps = carry
    plan, batch_size, done = self.plan, tree.batch_size, self.done
    select_key, outcome_key, estimator_key = simulation_keys(self.loop_key,
                                                             self.opening_width + trip)
    tree_keys = per_item_keys(select_key, batch_size) if self.needs_key else None
    # After an opening, each tree continues from its own count; those with fewer simulations
    # left sit out the last trips.
    simulation = jnp.full((batch_size,), trip, jnp.int32) if done is None else done + trip
    active = None if done is None else simulation < plan.num_simulations
    root_context = None
    if plan.root_selection is not None:
      root_context = RootContext(noise=self.root_noise, simulation=simulation,
                                 raw_value=self.root_raw_value, reused=self.reused)
    with jax.named_scope("descent"):
      path, tree = select(tree, self.root, tree_keys, steps, plan=plan,
                          root_context=root_context, walking=active)
    # Ties the tree's later reads and in-place writes to after the descent, so that XLA
    # updates the buffers the descent read instead of copying them (see select).
    path, tree = jax.lax.optimization_barrier((path, tree))
    # The backup rule was resolved with the plan: one expansion and backup per search.
    tree = plan.backup.expand_and_backup(self.model, plan, self.params,
                                         SimulationKeys(outcome_key, estimator_key), tree, path)
    if active is not None:
      tree = opening.restore_idle_roots(tree, path, active)
    return tree, path.steps

  def simulate_walks(self, trip, carry):
    """One step of ``L`` paths per tree (``SearchConfig.leaves_per_step``): the walks'
    descent, then the backup rule's expansion, evaluation and backup of all of them. Path
    ``k`` of step ``trip`` is simulation ``L·trip + k`` of its tree (after the opening's);
    those past ``num_simulations`` sit out. ``carry``: the trees and the ``[L, B]`` step
    buffers."""
    tree, steps = carry
    plan, batch_size, walks = self.plan, tree.batch_size, self.plan.leaves_per_step
    select_key, outcome_key, estimator_key = simulation_keys(self.loop_key,
                                                             self.opening_width + trip)
    tree_keys = walk_keys(select_key, walks, batch_size) if self.needs_key else None
    simulation = (trip * walks + jnp.arange(walks, dtype=jnp.int32)[:, None] +
                  (0 if self.done is None else self.done[None, :]))
    simulation = jnp.broadcast_to(simulation, (walks, batch_size))
    walking = None
    if self.done is not None or plan.num_simulations % walks:
      walking = simulation < plan.num_simulations
    contexts = None
    if plan.root_selection is not None:
      per_walk = lambda x: jnp.broadcast_to(x, (walks,) + x.shape)  # noqa: E731
      contexts = RootContext(noise=per_walk(self.root_noise), simulation=simulation,
                             raw_value=per_walk(self.root_raw_value), reused=self.reused)
    with jax.named_scope("descent"):
      paths, tree = select_walks(tree, self.root, tree_keys, steps, plan=plan,
                                 root_contexts=contexts, walking=walking)
    paths, tree = jax.lax.optimization_barrier((paths, tree))
    tree = plan.backup.expand_and_back_up_walks(
        self.model, plan, self.params, SimulationKeys(outcome_key, estimator_key), tree, paths,
        walking)
    return tree, paths.steps
