"""Input validation: trace-time shape checks and optional runtime checks (``checkify``).

**Trace time** (always on, free at run time): :func:`check_inputs` runs when a search is
traced (:func:`jaxsearch.search.init_tree`, hence every ``search(...)`` and
``search.init_tree(...)``) and raises a ``ValueError``/``TypeError`` naming the argument:

* ``selection`` is a :class:`~jaxsearch.selection.SelectionRule` (not the factory itself);
* ``key`` is one PRNG key, not a batch of keys;
* ``root`` is a non-empty pytree whose leaves share one leading batch axis ``[B]``;
* ``tree`` (if given) is a :class:`~jaxsearch.tree.Tree` (not a ``PolicyOutput``);
* the model, evaluated abstractly (``jax.eval_shape``, nothing runs) on the roots and on one
  step from them: ``legal`` ``bool[B, A]``; ``reward``, ``discount``, ``terminal`` ``[B]``;
  the stepped state has the root state's structure, leaf shapes and dtypes (the tree stores
  both in one array per leaf: a mismatch would otherwise be cast or broadcast silently);
  ``outcome_probs`` ``[B, O]``.

Sizes fixed at configuration time are checked where they are set:
:class:`~jaxsearch.search.SearchConfig` (positive ``num_simulations``, ``max_nodes``,
``max_depth``, ``num_slots``, ``num_buckets``; ``max_nodes >= num_simulations + 1``; option
values), :func:`~jaxsearch.model.check_estimate` (``Estimate.value [B]``,
``prior_logits``/``action_values`` ``[B, A]``, naming the field), the game's bound functions
(``f32[]`` per state), :func:`~jaxsearch.tree.allocate` and ``init_tree`` (a reused tree's
``(B, N, K, O, V)``, backup kind and state structure), :func:`jaxsearch.sharding.check_batch`
(``B`` divisible by the device count). ``docs/bad_input.md`` lists every case.

**Run time** (opt in): :func:`checked` wraps a search so that it returns
``(checkify.Error, PolicyOutput)``; it is jittable (not vmappable: JAX 0.10's checkify
fails on the search's vmapped loops). It checks what the engine
otherwise repairs silently (and counts) or cannot see:

* estimator output that was NaN/inf (values, NaN/``+inf`` logits or action values, bounds):
  ``tree.nonfinite_estimates`` must be 0;
* every chance record's outcome probabilities are finite, non-negative and sum to 1;
* no visited slot holds an illegal action, and the chosen root action is legal (or -1 when
  none is);
* no NaN/inf anywhere in the trees or the outputs.

    err, out = jax.jit(validation.checked(search))(params, key, roots)
    err.throw()       # raises checkify.JaxRuntimeError with the first failed check's message
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from jax.experimental import checkify

from jaxsearch.selection.base import SelectionRule
from jaxsearch.tree import Tree

PROB_TOLERANCE = 1e-4  # |Σ_o p(o) - 1| allowed in float32


def _shape(x) -> tuple:
  return tuple(jnp.shape(x))


def check_key(key: Any, name: str = "key") -> None:
  """``key`` is a single PRNG key: a typed key of shape ``()`` or a raw ``uint32[2]``
  (``uint32[4]`` for the rbg implementations)."""
  if key is None:
    raise TypeError(f"{name} must be a PRNG key (jax.random.PRNGKey(seed) or "
                    "jax.random.key(seed)), got None")
  dtype = getattr(key, "dtype", None)
  if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
    if _shape(key) != ():
      raise ValueError(f"{name} must be one PRNG key, got a batch of keys of shape "
                       f"{_shape(key)}: pass a single key; the search derives one per root")
    return
  if dtype != jnp.uint32 or len(_shape(key)) != 1 or _shape(key)[0] not in (2, 4):
    raise ValueError(f"{name} must be one PRNG key (jax.random.PRNGKey(seed): uint32[2]), got "
                     f"{dtype}{list(_shape(key))}" + (
                         ": a batch of keys? pass a single key; the search derives one per "
                         "root" if len(_shape(key)) == 2 else ""))


def batch_size(tree: Any, name: str) -> int:
  """The leading size ``B >= 1`` shared by every array leaf of ``tree``."""
  leaves = jax.tree.leaves(tree)
  if not leaves:
    raise ValueError(f"{name} has no array leaves: it must be a batch of states [B, ...]")
  paths = jax.tree_util.tree_leaves_with_path(tree)
  sizes = {}
  for path, leaf in paths:
    shape = _shape(leaf)
    if not shape:
      raise ValueError(f"{name}{jax.tree_util.keystr(path)} is a scalar: every leaf of {name} "
                       "needs a leading batch axis [B, ...] (one root: add a leading axis of 1)")
    sizes.setdefault(shape[0], jax.tree_util.keystr(path))
  if len(sizes) > 1:
    detail = ", ".join(f"{name}{path} has {size}" for size, path in sizes.items())
    raise ValueError(f"the leaves of {name} must share one leading batch size [B]: {detail}")
  size = next(iter(sizes))
  if size < 1:
    raise ValueError(f"{name} has batch size 0: a search needs at least one root")
  return size


def _abstract(fn: Callable, *args):
  return jax.eval_shape(lambda: fn(*args))


def _check_array(value, shape: tuple, what: str, dtype=None) -> None:
  if value is None:
    return
  if _shape(value) != shape:
    raise ValueError(f"{what} must have shape {list(shape)}, got {list(_shape(value))}")
  if dtype is not None and not jnp.issubdtype(value.dtype, dtype):
    raise ValueError(f"{what} must have dtype {jnp.dtype(dtype).name}, got {value.dtype}")


def check_model(model, params, key, root_input, batch: int) -> None:
  """Abstract evaluation of ``model.root`` and one ``model.step`` from the roots (nothing
  runs); raises naming the function and the field whose shape is wrong."""
  num_actions, num_outcomes = model.num_actions, model.num_outcomes
  root = _abstract(model.root, params, key, root_input)
  _check_array(root.legal, (batch, num_actions), "the root legal-action mask (legal_actions)",
               jnp.bool_)
  actions = jnp.zeros((batch,), jnp.int32)
  stepped = jax.eval_shape(lambda state: model.step(params, key, state, actions, actions),
                           root.state)
  for field in ("reward", "discount", "terminal"):
    _check_array(getattr(stepped, field), (batch,),
                 f"game step: StepResult.{field} (one per state: f32[] / bool[])")
  _check_array(stepped.legal, (batch, num_actions), "legal_actions after a step", jnp.bool_)
  root_leaves = jax.tree_util.tree_leaves_with_path(root.state)
  step_leaves = jax.tree_util.tree_leaves_with_path(stepped.state)
  if jax.tree.structure(root.state) != jax.tree.structure(stepped.state):
    raise ValueError("game step returned a state whose structure differs from the root "
                     f"states': {jax.tree.structure(stepped.state)} vs "
                     f"{jax.tree.structure(root.state)}")
  for (path, before), (_, after) in zip(root_leaves, step_leaves):
    if _shape(before) != _shape(after) or before.dtype != after.dtype:
      raise ValueError(
          f"game step changed state{jax.tree_util.keystr(path)} from "
          f"{before.dtype}{list(_shape(before)[1:])} to {after.dtype}{list(_shape(after)[1:])} "
          "(per state): the tree stores every state in one array per leaf, so step must keep "
          "each leaf's shape and dtype")
  if num_outcomes > 1:
    probs = jax.eval_shape(lambda state: model.outcome_probs(params, state, actions),
                           root.state)
    _check_array(probs, (batch, num_outcomes), "outcome_probs (f32[O] per state and action)")


def check_selection(selection) -> None:
  """A ``TypeError`` unless ``selection`` is a :class:`~jaxsearch.selection.SelectionRule` (a
  rule factory passed uncalled is named as such)."""
  if not isinstance(selection, SelectionRule):
    hint = (" (a factory: call it, e.g. js.selection.puct())" if callable(selection) else "")
    raise TypeError(f"selection must be a jaxsearch.selection.SelectionRule{hint}, got "
                    f"{selection!r}")


def check_inputs(model, config, params, key, root_input, tree: Optional[Tree] = None) -> None:
  """Every trace-time check of one search call (see the module docstring). Raises
  ``TypeError``/``ValueError`` naming the argument; returns nothing."""
  check_selection(config.selection)
  check_key(key)
  batch = batch_size(root_input, "root")
  if tree is not None and not isinstance(tree, Tree):
    hint = " (pass out.tree, not the PolicyOutput)" if hasattr(tree, "tree") else ""
    raise TypeError(f"tree must be a jaxsearch.Tree or None{hint}, got {type(tree).__name__}")
  check_model(model, params, key, root_input, batch)


# ---- runtime checks (checkify) --------------------------------------------------------------

def check_tree(tree: Tree, tolerance: float = PROB_TOLERANCE) -> None:
  """``checkify.check`` of a batch of trees (to be run under :func:`checkify.checkify`):
  no estimator output was replaced, chance probabilities are a distribution, only legal
  slots were visited, no NaN/inf."""
  bad = tree.nonfinite_estimates
  checkify.check(jnp.all(bad == 0),
                 "estimator returned NaN/inf (value, NaN/+inf prior logit or action value, or "
                 "bound) for {total} states; first tree with any: {first} "
                 "(tree.nonfinite_estimates counts them per tree)",
                 total=jnp.sum(bad), first=jnp.argmax(bad > 0))
  created = (jnp.arange(tree.chance.prob.shape[1])[None, :] < tree.num_chance[:, None])
  probs = tree.chance.prob
  finite = jnp.all(jnp.isfinite(probs) & (probs >= 0), axis=-1)
  total = jnp.sum(jnp.where(jnp.isfinite(probs), probs, 0.0), axis=-1)
  ok = finite & (jnp.abs(total - 1.0) <= tolerance)
  wrong = created & ~ok
  first = jnp.argmax(wrong.reshape(-1))
  checkify.check(~jnp.any(wrong),
                 "outcome_probs returned probabilities that are not a distribution (negative, "
                 "NaN/inf, or summing to {total} instead of 1) in tree {tree}, chance record "
                 "{record}",
                 total=total.reshape(-1)[first], tree=first // probs.shape[1],
                 record=first % probs.shape[1])
  illegal = (tree.slots.visits > 0) & ~tree.slots.legal
  checkify.check(~jnp.any(illegal),
                 "the search visited an illegal action ({count} slots); first in tree {tree}",
                 count=jnp.sum(illegal),
                 tree=jnp.argmax(jnp.any(illegal.reshape(illegal.shape[0], -1), axis=-1)))
  # -inf is legitimate in two fields: a zero prior (logit -inf) and an action the estimator
  # rules out on purpose (q̂1 = -inf, masked); anywhere else, and NaN or +inf anywhere, is not.
  may_be_minus_inf = {"slots.prior_logits", "slots.action_value"}
  for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
    if jnp.issubdtype(leaf.dtype, jnp.floating):
      name = jax.tree_util.keystr(path)
      if name.lstrip(".") in may_be_minus_inf:
        ok = ~jnp.isnan(leaf) & (leaf != jnp.inf)
        message = f"NaN/+inf in tree{name}"
      else:
        ok = jnp.isfinite(leaf)
        message = f"NaN/inf in tree{name}"
      checkify.check(jnp.all(ok), message)


def check_output(out, tolerance: float = PROB_TOLERANCE) -> None:
  """``checkify.check`` of a :class:`~jaxsearch.policies.PolicyOutput`: the tree
  (:func:`check_tree`), a legal chosen action (``-1`` only without legal actions) and finite
  outputs."""
  tree = out.tree
  check_tree(tree, tolerance)
  root_legal = tree.slots.legal[:, 0]
  root_actions = tree.slots.actions()[:, 0]
  has_legal = jnp.any(root_legal, axis=-1)
  chosen_legal = jnp.any(root_legal & (root_actions == out.action[:, None]), axis=-1)
  ok = jnp.where(has_legal, chosen_legal, out.action == -1)
  checkify.check(jnp.all(ok), "the chosen action {action} of tree {tree} is not legal at its "
                 "root", action=out.action[jnp.argmax(~ok)], tree=jnp.argmax(~ok))
  for name in ("action_weights", "root_value", "q_values", "root_bound", "root_upper"):
    value = getattr(out, name, None)
    if value is not None:
      checkify.check(jnp.all(jnp.isfinite(value)), f"NaN/inf in the output's {name}")


def checked(search: Callable, errors=checkify.user_checks,
            tolerance: float = PROB_TOLERANCE) -> Callable:
  """``search`` with runtime checks: ``(params, key, root, tree=None) -> (Error, output)``.

  Jittable (``jax.jit(checked(search))``); ``err.throw()`` raises the first
  failed check, ``err.get()`` returns its message or ``None``. ``errors`` adds checkify's own
  categories, e.g. ``checkify.user_checks | checkify.index_checks`` (``nan_checks`` would
  flag the search's deliberate ``-inf`` arithmetic, which never reaches its results).
  """

  def run(params, key, root, tree=None):
    out = search(params, key, root, tree)
    check_output(out, tolerance)
    return out

  return checkify.checkify(run, errors=errors)
