"""mctx's three policies on the jaxsearch engine, with mctx's arguments, defaults and outputs.

Randomness follows mctx's key usage (the same Dirichlet noise, Gumbel draw and final action
sampling for the same ``rng_key``); the search itself is deterministic except for mctx's
tie-break noise, which is off by default (``tie_noise=False``: ties go to the lowest action;
``tie_noise=True`` restores mctx's ``1e-7 · U[0, 1)``). Hyperparameters that mctx lets be
arrays (``temperature``, ``dirichlet_fraction``, ``dirichlet_alpha``, ``pb_c_init``,
``pb_c_base``, ``gumbel_scale``, the Q transforms' constants) may be traced values inside
``jax.jit``; ``num_simulations``, ``max_depth`` and ``max_num_considered_actions`` are
static Python ints, as in mctx.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch.compat import action_selection
from jaxsearch.compat import qtransforms
from jaxsearch.compat import search as search_lib
from jaxsearch.compat.base import (PolicyOutput, RecurrentFnOutput, RootFnOutput,
                                   StochasticRecurrentState)
from jaxsearch.compat.seq_halving import score_considered
from jaxsearch.compat.tree import from_engine


def _is_zero(value) -> bool:
  """``value`` is a concrete Python/NumPy zero (not a traced array)."""
  try:
    return float(value) == 0.0
  except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
    return False


def _noisy_root(root, rng_key, invalid_actions, dirichlet_fraction, dirichlet_alpha):
  """The root with mctx's Dirichlet noise mixed into its prior and invalid actions masked."""
  probs = jax.nn.softmax(root.prior_logits)
  if not _is_zero(dirichlet_fraction):  # a zero fraction leaves the probabilities as they are
    probs = _add_dirichlet_noise(rng_key, probs, dirichlet_alpha=dirichlet_alpha,
                                 dirichlet_fraction=dirichlet_fraction)
  logits = _mask_invalid_actions(_get_logits_from_probs(probs), invalid_actions)
  return RootFnOutput(prior_logits=logits, value=root.value, embedding=root.embedding)


def _sampled_action(rng_key, visit_probs, temperature):
  return jax.random.categorical(
      rng_key, _apply_temperature(_get_logits_from_probs(visit_probs), temperature))


def muzero_policy(params, rng_key, root: RootFnOutput, recurrent_fn, num_simulations: int,
                  invalid_actions=None, max_depth: Optional[int] = None,
                  loop_fn=jax.lax.fori_loop, *,
                  qtransform=qtransforms.qtransform_by_parent_and_siblings,
                  dirichlet_fraction=0.25, dirichlet_alpha=0.3, pb_c_init=1.25,
                  pb_c_base=19652, temperature=1.0, tie_noise: bool = False,
                  **unknown) -> PolicyOutput:
  """``mctx.muzero_policy``: MuZero's PUCT search.

  Args:
    params: passed to ``recurrent_fn``.
    rng_key: a PRNG key.
    root: :class:`RootFnOutput` (``prior_logits [B, A]``, ``value [B]``, ``embedding
      [B, ...]``).
    recurrent_fn: ``(params, key, action i32[B], embedding) -> (RecurrentFnOutput,
      embedding)``.
    num_simulations: ``S`` (static).
    invalid_actions: ``[B, A]``, ones for invalid root actions, or ``None``.
    max_depth: longest path in edges (static), default ``S``.
    loop_fn: a fori-loop (see :mod:`jaxsearch.compat.search`).
    qtransform: ``f(tree, node_index) -> f32[A]`` (mctx's signature).
    dirichlet_fraction, dirichlet_alpha, pb_c_init, pb_c_base, temperature: as in mctx.
    tie_noise: mctx's random tie-breaking (default off: ties go to the lowest action).
  Returns:
    :class:`PolicyOutput`: ``action i32[B]`` sampled from the visit counts at
    ``temperature``, ``action_weights f32[B, A]`` the visit probabilities, ``search_tree``.
  """
  search_lib.check_arguments("muzero_policy", unknown, num_simulations, max_depth,
                             loop_fn)
  rng_key, dirichlet_key, search_key = jax.random.split(rng_key, 3)
  root = _noisy_root(root, dirichlet_key, invalid_actions, dirichlet_fraction, dirichlet_alpha)
  rule = action_selection.muzero_rule(pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                      qtransform=qtransform, tie_noise=tie_noise)
  engine = search_lib.run_engine(params, search_key, root, recurrent_fn, selection=rule,
                                 num_simulations=num_simulations, max_depth=max_depth,
                                 invalid_actions=invalid_actions, loop_fn=loop_fn)
  tree = from_engine(engine, search_lib.root_invalid(invalid_actions, root.prior_logits))
  weights = tree.summary().visit_probs
  return PolicyOutput(action=_sampled_action(rng_key, weights, temperature),
                      action_weights=weights, search_tree=tree)


def gumbel_muzero_policy(params, rng_key, root: RootFnOutput, recurrent_fn,
                         num_simulations: int, invalid_actions=None,
                         max_depth: Optional[int] = None, loop_fn=jax.lax.fori_loop, *,
                         qtransform=qtransforms.qtransform_completed_by_mix_value,
                         max_num_considered_actions: int = 16, gumbel_scale=1.0,
                         **unknown) -> PolicyOutput:
  """``mctx.gumbel_muzero_policy``: Gumbel MuZero (Danihelka et al. 2022).

  The root samples ``max_num_considered_actions`` actions by Gumbel-top-k and runs
  Sequential Halving on them; interior nodes choose deterministically. Arguments as
  :func:`muzero_policy`, plus ``max_num_considered_actions`` (static) and ``gumbel_scale``
  (0 for a deterministic search). The search is the same as mctx's: no tie noise is
  involved.

  Returns:
    :class:`PolicyOutput`: ``action`` the Sequential Halving winner, ``action_weights``
    ``softmax(logits + completedQ)`` (the policy-improvement target), ``search_tree`` with
    ``extra_data.root_gumbel``.
  """
  search_lib.check_arguments("gumbel_muzero_policy", unknown, num_simulations, max_depth,
                             loop_fn)
  root_rule, interior_rule = action_selection.gumbel_rules(
      num_simulations=num_simulations, max_num_considered_actions=max_num_considered_actions,
      qtransform=qtransform)
  logits = _mask_invalid_actions(root.prior_logits, invalid_actions)
  root = RootFnOutput(prior_logits=logits, value=root.value, embedding=root.embedding)
  rng_key, gumbel_key = jax.random.split(rng_key)
  gumbel = gumbel_scale * jax.random.gumbel(gumbel_key, shape=logits.shape, dtype=logits.dtype)
  extra_data = action_selection.GumbelMuZeroExtraData(root_gumbel=gumbel)
  engine = search_lib.run_engine(params, rng_key, root, recurrent_fn, selection=interior_rule,
                                 num_simulations=num_simulations, max_depth=max_depth,
                                 invalid_actions=invalid_actions, root_selection=root_rule,
                                 root_noise=gumbel, loop_fn=loop_fn)
  tree = from_engine(engine, search_lib.root_invalid(invalid_actions, logits), extra_data)
  visits = tree.summary().visit_counts
  completed = jax.vmap(qtransform, in_axes=[0, None])(tree, tree.ROOT_INDEX)
  to_argmax = score_considered(jnp.max(visits, axis=-1, keepdims=True), gumbel, logits,
                               completed, visits)
  action = action_selection.masked_argmax(to_argmax, invalid_actions)
  weights = jax.nn.softmax(_mask_invalid_actions(logits + completed, invalid_actions))
  return PolicyOutput(action=action, action_weights=weights, search_tree=tree)


def stochastic_muzero_policy(params, rng_key, root: RootFnOutput, decision_recurrent_fn,
                             chance_recurrent_fn, num_simulations: int, invalid_actions=None,
                             max_depth: Optional[int] = None, loop_fn=jax.lax.fori_loop, *,
                             qtransform=qtransforms.qtransform_by_parent_and_siblings,
                             dirichlet_fraction=0.25, dirichlet_alpha=0.3, pb_c_init=1.25,
                             pb_c_base=19652, temperature=1.0, tie_noise: bool = False,
                             **unknown) -> PolicyOutput:
  """``mctx.stochastic_muzero_policy``: Stochastic MuZero (Antonoglou et al. 2022).

  As in mctx, the two functions are wrapped into one ``recurrent_fn`` over ``A + C``
  "actions" (``C`` chance outcomes) whose nodes alternate between decision nodes and chance
  nodes (afterstates, which count as nodes and simulations); decision nodes select by PUCT,
  chance nodes take ``argmax p(c) / (1 + n(c))``. The engine needs no flag for it.

  Args:
    decision_recurrent_fn: ``(params, key, action i32[B], state_embedding) ->
      (DecisionRecurrentFnOutput, afterstate_embedding)``.
    chance_recurrent_fn: ``(params, key, outcome i32[B], afterstate_embedding) ->
      (ChanceRecurrentFnOutput, state_embedding)``.
    the others: as :func:`muzero_policy`.
  Returns:
    :class:`PolicyOutput` as :func:`muzero_policy`; ``search_tree`` keeps the action part of
    every node (``[B, N, A]``) and its embeddings are :class:`StochasticRecurrentState` s.
  """
  search_lib.check_arguments("stochastic_muzero_policy", unknown, num_simulations, max_depth,
                             loop_fn)
  num_actions = root.prior_logits.shape[-1]
  rng_key, dirichlet_key, search_key = jax.random.split(rng_key, 3)
  root = _noisy_root(root, dirichlet_key, invalid_actions, dirichlet_fraction, dirichlet_alpha)
  batch_size = jax.tree.leaves(root.embedding)[0].shape[0]
  dummy_action = jnp.zeros((batch_size,), jnp.int32)
  shapes = jax.eval_shape(decision_recurrent_fn, params, rng_key, dummy_action, root.embedding)
  num_chance = shapes[0].chance_logits.shape[-1]
  dummy_afterstate = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[1])
  wide_root = RootFnOutput(
      prior_logits=jnp.concatenate(
          [root.prior_logits, jnp.full((batch_size, num_chance), -jnp.inf)], axis=-1),
      value=root.value,
      embedding=StochasticRecurrentState(state_embedding=root.embedding,
                                         afterstate_embedding=dummy_afterstate,
                                         is_decision_node=jnp.ones((batch_size,), bool)))
  wide_invalid = None
  if invalid_actions is not None:
    wide_invalid = jnp.concatenate(
        [jnp.asarray(invalid_actions, bool), jnp.ones((batch_size, num_chance), bool)], axis=-1)
  recurrent_fn = _stochastic_recurrent_fn(decision_recurrent_fn, chance_recurrent_fn,
                                          num_actions, num_chance)
  decision = functools.partial(action_selection.muzero_scores, node_index=0,
                               pb_c_init=pb_c_init, pb_c_base=pb_c_base, qtransform=qtransform)
  rule = action_selection.stochastic_rule(num_actions, decision, tie_noise)
  engine = search_lib.run_engine(params, search_key, wide_root, recurrent_fn, selection=rule,
                                 num_simulations=num_simulations, max_depth=max_depth,
                                 invalid_actions=wide_invalid, loop_fn=loop_fn)
  tree = from_engine(engine, search_lib.root_invalid(invalid_actions, root.prior_logits),
                     num_actions=num_actions)
  weights = tree.summary().visit_probs
  return PolicyOutput(action=_sampled_action(rng_key, weights, temperature),
                      action_weights=weights, search_tree=tree)


def _stochastic_recurrent_fn(decision_fn, chance_fn, num_actions: int, num_chance: int):
  """One ``recurrent_fn`` over ``A + C`` actions from Stochastic MuZero's two functions.

  Both are evaluated for every transition (as in mctx) and the node's kind picks the
  output: from a decision node, action ``a`` leads to an afterstate (prior over the ``C``
  outcomes, the afterstate value, reward 0, discount 1); from a chance node, index
  ``A + c`` is outcome ``c`` and leads to a state (prior over the ``A`` actions, its value,
  reward and discount).
  """

  def recurrent_fn(params, key, action, state: StochasticRecurrentState):
    batch_size = action.shape[0]
    decision, afterstate = decision_fn(params, key, action, state.state_embedding)
    chance, next_state = chance_fn(params, key, action - num_actions,
                                   state.afterstate_embedding)
    from_decision = RecurrentFnOutput(
        prior_logits=jnp.concatenate(
            [jnp.full((batch_size, num_actions), -jnp.inf), decision.chance_logits], axis=-1),
        value=decision.afterstate_value,
        reward=jnp.zeros_like(decision.afterstate_value),
        discount=jnp.ones_like(decision.afterstate_value))
    from_chance = RecurrentFnOutput(
        prior_logits=jnp.concatenate(
            [chance.action_logits, jnp.full((batch_size, num_chance), -jnp.inf)], axis=-1),
        value=chance.value, reward=chance.reward, discount=chance.discount)
    is_decision = state.is_decision_node

    def pick(a, b):
      return jnp.where(is_decision.reshape((-1,) + (1,) * (jnp.ndim(a) - 1)), a, b)

    output = jax.tree.map(pick, from_decision, from_chance)
    return output, StochasticRecurrentState(state_embedding=next_state,
                                            afterstate_embedding=afterstate,
                                            is_decision_node=~is_decision)

  return recurrent_fn


# ---- mctx's helpers (same names, same results) ---------------------------------------------

def _mask_invalid_actions(logits, invalid_actions):
  """Logits with the invalid actions at the lowest finite float (so that a softmax gives them
  zero mass without NaN when every action is invalid), shifted so that the maximum is 0;
  unchanged when ``invalid_actions`` is ``None``."""
  if invalid_actions is None:
    return logits
  logits = logits - jnp.max(logits, axis=-1, keepdims=True)
  return jnp.where(invalid_actions, jnp.finfo(logits.dtype).min, logits)


def _get_logits_from_probs(probs):
  """``log(max(probs, tiny))``: logits of a distribution, zero probabilities kept finite."""
  return jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))


def _add_dirichlet_noise(rng_key, probs, *, dirichlet_alpha, dirichlet_fraction):
  """``(1 − ε) probs + ε η``, ``η ~ Dir(α)`` drawn per row (``probs [B, A]``)."""
  batch_size, num_actions = probs.shape
  noise = jax.random.dirichlet(rng_key, alpha=jnp.full((num_actions,), dirichlet_alpha),
                               shape=(batch_size,))
  return (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise


def _apply_temperature(logits, temperature):
  """``(logits − max) / temperature``; temperature 0 (or tiny) gives ``-inf``/huge negative
  logits everywhere but the maximum, i.e. the argmax."""
  logits = logits - jnp.max(logits, keepdims=True, axis=-1)
  return logits / jnp.maximum(jnp.finfo(logits.dtype).tiny, temperature)
