"""Runs an mctx-style search on the jaxsearch engine and returns mctx's :class:`Tree`.

:func:`run_engine` is what the policies use; :func:`search` is ``mctx.search`` (any root and
interior selection functions). Both honour mctx's ``loop_fn``: the default
``jax.lax.fori_loop`` runs the engine's own loop; any other function with fori-loop's
signature (e.g. ``hk.fori_loop`` inside a Haiku module) is called exactly as mctx calls it,
``loop_fn(0, num_simulations, body, (rng_key, tree))``, with one engine simulation per
``body`` call (slower: each step re-checks the whole tree). That simulation still runs in the
engine's own one-step ``jax.lax.fori_loop`` (the engine takes no loop function), so Haiku
modules called directly inside ``recurrent_fn`` are not supported; ``apply`` with explicit
parameters is.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Optional

import jax
import jax.numpy as jnp

from jaxsearch import search as search_lib
from jaxsearch.compat import action_selection
from jaxsearch.compat.base import RootFnOutput
from jaxsearch.compat.tree import Tree, from_engine
from jaxsearch.model import from_mctx
from jaxsearch.selection.base import RootRule, SelectionRule


def check_loop_fn(loop_fn) -> None:
  """Raises a ``TypeError`` naming ``loop_fn`` unless it behaves like
  ``jax.lax.fori_loop(lower, upper, body_fun, init_val)`` (checked by calling it once on a
  two-step counter, evaluated eagerly)."""
  if loop_fn is jax.lax.fori_loop:
    return
  problem = None
  if not callable(loop_fn):
    problem = f"it is not callable ({type(loop_fn).__name__})"
  else:
    try:
      inspect.signature(loop_fn).bind(0, 2, lambda i, x: x, 0)
    except TypeError as error:
      problem = f"it cannot be called as loop_fn(lower, upper, body_fun, init_val): {error}"
    except ValueError:  # no signature available (a builtin): try it
      pass
  if problem is None:
    try:
      with jax.ensure_compile_time_eval():
        result = loop_fn(0, 2, lambda i, x: x + i + 1, jnp.int32(0))
      if int(result) != 3:
        problem = f"loop_fn(0, 2, body, 0) returned {result}, a fori-loop returns 3"
    except Exception as error:  # pylint: disable=broad-except
      problem = f"calling it as a fori-loop failed: {type(error).__name__}: {error}"
  if problem is not None:
    raise TypeError("loop_fn must be a fori-loop (like jax.lax.fori_loop or hk.fori_loop: "
                    f"loop_fn(lower, upper, body_fun, init_val)); {problem}")


def reject_unknown(function: str, unknown: dict) -> None:
  """A ``TypeError`` naming the keyword arguments ``function`` does not take."""
  if unknown:
    names = ", ".join(repr(name) for name in sorted(unknown))
    raise TypeError(f"{function}() got unexpected keyword argument(s) {names}: "
                    "jaxsearch.compat takes mctx 0.0.71's arguments (see docs/mctx.md)")


def check_arguments(function: str, unknown: dict, num_simulations, max_depth, loop_fn) -> None:
  """Trace-time checks of the arguments mctx's functions share, before any work: unknown
  keywords, the static sizes and ``loop_fn``; each error names the argument."""
  reject_unknown(function, unknown)
  if not isinstance(num_simulations, int) or num_simulations < 1:
    raise ValueError(f"num_simulations must be a positive Python int, got {num_simulations!r}")
  if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 1):
    raise ValueError(f"max_depth must be a positive Python int or None, got {max_depth!r}")
  check_loop_fn(loop_fn)


def run_engine(params, rng_key, root: RootFnOutput, recurrent_fn, *, selection: SelectionRule,
               num_simulations: int, max_depth: Optional[int] = None,
               invalid_actions=None, root_selection: Optional[RootRule] = None,
               root_noise=None, loop_fn=jax.lax.fori_loop):
  """Searches with the engine and returns its trees (``jaxsearch.Tree``, ``[B, S + 1, A]``).
  The caller has checked the shared arguments (:func:`check_arguments`).

  Args:
    params, rng_key, root, recurrent_fn, num_simulations, max_depth, invalid_actions,
      loop_fn: as in mctx (``root.prior_logits`` ``[B, A]``; ``invalid_actions`` ``[B, A]``
      with ones for invalid actions, or ``None``).
    selection, root_selection: the engine rules.
    root_noise: ``f32[B, A]`` the per-search draw ``root_selection`` reads, or ``None``.
  """
  prior_logits = jnp.asarray(root.prior_logits)
  if prior_logits.ndim != 2:
    raise ValueError(f"root.prior_logits must have shape [B, A], got {prior_logits.shape}")
  num_actions = prior_logits.shape[-1]
  model = from_mctx(recurrent_fn, num_actions)
  config = search_lib.SearchConfig(
      num_simulations=num_simulations, max_nodes=num_simulations + 1,
      max_depth=num_simulations if max_depth is None else max_depth, selection=selection,
      root_selection=root_selection)
  root_input = (root, invalid_actions)
  if loop_fn is jax.lax.fori_loop:
    return search_lib.run(model, config, params, rng_key, root_input, root_noise=root_noise)
  one_step = dataclasses.replace(config, num_simulations=1)
  init_key, rng_key = jax.random.split(rng_key)
  tree = search_lib.init_tree(model, config, params, init_key, root_input)

  def body(sim, carry):
    del sim
    key, tree = carry
    key, step_key = jax.random.split(key)
    return key, search_lib.run(model, one_step, params, step_key, root_input, tree,
                               root_noise=root_noise)

  _, tree = loop_fn(0, num_simulations, body, (rng_key, tree))
  return tree


def root_invalid(invalid_actions, prior_logits) -> jax.Array:
  """mctx's ``tree.root_invalid_actions``: the mask as given, zeros when ``None``."""
  if invalid_actions is None:
    return jnp.zeros_like(prior_logits)
  return invalid_actions


def search(params, rng_key, *, root: RootFnOutput, recurrent_fn, root_action_selection_fn,
           interior_action_selection_fn, num_simulations: int, max_depth: Optional[int] = None,
           invalid_actions=None, extra_data: Any = None, loop_fn=jax.lax.fori_loop,
           **unknown) -> Tree:
  """``mctx.search``: a search with any mctx-style selection functions, on the engine.

  The selection functions are called as in mctx, ``root_fn(key, tree, node_index)`` and
  ``interior_fn(key, tree, node_index, depth)``, but on a one-node tree holding the node
  being decided (:func:`jaxsearch.compat.tree.node_tree`; ``node_index`` is 0): functions
  that read only that node (all of mctx's) behave as in mctx. ``extra_data`` is stored in
  the returned tree; the functions see it only if it is a
  :class:`~jaxsearch.compat.GumbelMuZeroExtraData`.

  Returns:
    The searched :class:`Tree` ``[B, num_simulations + 1, A]``.
  """
  check_arguments("search", unknown, num_simulations, max_depth, loop_fn)
  gumbel = isinstance(extra_data, action_selection.GumbelMuZeroExtraData)
  root_rule, rule = action_selection.function_rules(root_action_selection_fn,
                                                   interior_action_selection_fn, gumbel)
  engine = run_engine(params, rng_key, root, recurrent_fn, selection=rule,
                      num_simulations=num_simulations, max_depth=max_depth,
                      invalid_actions=invalid_actions, root_selection=root_rule,
                      root_noise=extra_data.root_gumbel if gumbel else None, loop_fn=loop_fn)
  return from_engine(engine, root_invalid(invalid_actions, root.prior_logits), extra_data)
