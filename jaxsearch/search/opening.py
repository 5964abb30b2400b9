"""The opening: a root rule's first simulations, known before any of them runs, as one step.

Gumbel MuZero's first phase of Sequential Halving visits each of its ``m`` considered root
actions once, in an order fixed by the search's Gumbel draw and the prior alone (Danihelka,
Guez, Schrittwieser, Silver, "Policy improvement by planning with Gumbel", ICLR 2022): what
those simulations find changes none of the children they expand. mctx runs them as ``m``
simulations of its loop. Here the root rule names them up front (``RootRule.opening``) and
the backup expands them all at once (``BackupRule.expand_root_children``): one batched model
call for the ``B·m`` children, their nodes and edges written together, the root's running
mean updated child after child in the loop's order. The simulation loop then runs the rest.

The tree is the one the loop builds simulation by simulation, with the same random keys
(:func:`~jaxsearch.search.backup.simulation_keys`); :func:`jaxsearch.gumbel.gumbel_top_m` says where float rounding can
make the two orders differ. Trees whose opening is shorter (fewer legal actions than ``m``,
or a root that does not walk) catch up in extra trips of the loop, in which the others sit
out (:func:`restore_idle_roots`); their later simulations then draw from another
simulation index's keys, which matters only to models and rules that draw.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsearch.search.backup import simulation_keys
from jaxsearch.search.descent import Path, RootPrior, open_roots
from jaxsearch.search.plan import SearchPlan
from jaxsearch.tree import Tree


def width(plan: SearchPlan, reused: bool) -> int:
  """How many simulations the opening may take over (static; 0: none, the loop runs them all).

  Only from fresh roots (``reused`` is ``False``: a kept tree's root has visits already), where
  the root rule has an opening, the backup can expand one, every expansion is one node with
  one outcome and nothing else is kept per node (subtree entropy), and
  ``LoopOptions.batched_opening`` is on.
  """
  rule = plan.root_selection
  if (reused or rule is None or rule.opening is None or not plan.loops.batched_opening or
      plan.backup.expand_root_children is None or plan.entropy is not None or
      plan.num_outcomes != 1):
    return 0
  return min(rule.opening_width, plan.num_slots, plan.num_simulations, plan.max_nodes - 1,
             plan.max_chance)


def expand(model, plan: SearchPlan, params, loop_key: jax.Array, tree: Tree, root: RootPrior,
           root_noise: jax.Array, opening_width: int) -> tuple[Tree, jax.Array]:
  """Runs the opening of every tree: ``(tree, done i32[B])``, ``done`` the simulations each
  tree has had (0 where its root does not walk).

  Args:
    model, plan, params: the search's.
    loop_key: the simulation loop's key (:func:`~jaxsearch.search.backup.simulation_keys`).
    tree: fresh trees ``[B, ...]`` (root only).
    root: the roots' prior (:func:`~jaxsearch.search.descent.root_prior`).
    root_noise: ``f32[B, K]`` the root rule's per-search draw.
    opening_width: :func:`width`.
  """
  rule = plan.root_selection
  slots, count = jax.vmap(lambda logits, legal, noise: rule.opening(
      logits, legal, noise, opening_width))(root.logits, root.legal, root_noise)
  count = jnp.where(open_roots(tree), jnp.minimum(count, opening_width), 0)
  estimator_keys = jax.vmap(lambda index: simulation_keys(loop_key, index)[2])(
      jnp.arange(opening_width))
  tree = plan.backup.expand_root_children(model, plan, params, estimator_keys, tree, slots,
                                          count)
  return tree, count


def restore_idle_roots(tree: Tree, path: Path, active: jax.Array) -> Tree:
  """Undoes a simulation for the trees that sat it out (``active`` ``bool[B]`` false). They did
  not walk, so the simulation changed only their root: one more visit and its value averaged
  with itself. Both come back from the path, which read them before."""
  nodes = tree.nodes
  visits = jnp.where(active, nodes.visits[:, 0], path.leaf_visits)
  value = jnp.where(active, nodes.value[:, 0], path.leaf_value)
  return tree.replace(nodes=nodes.replace(visits=nodes.visits.at[:, 0].set(visits),
                                          value=nodes.value.at[:, 0].set(value)))
