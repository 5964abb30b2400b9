"""Pure building blocks of a Gumbel MuZero search (docs/algorithms.md §5).

Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by planning with Gumbel",
ICLR 2022. The root samples ``m`` actions without replacement by Gumbel-top-k on the prior
logits and spends the simulation budget on them with Sequential Halving (Karnin, Koren,
Somekh, "Almost optimal exploration in multi-armed bandits", ICML 2013), ranking them by
``g(a) + logits(a) + σ(q̂(a))``; interior nodes pick ``argmax π′(a) − n(a) / (1 + N)`` with the
improved policy ``π′ = softmax(logits + σ(completedQ))``.

Everything here acts on one node (``K`` slots, no batch axis; vmap for batches) except the
visit schedules, which are static NumPy tables.

Conventions (chosen here, documented where used):

* ``N = Σ_a n(a)`` is the summed child visits (not the node's own count). In the interior rule
  the ``n(a) / (1 + N)`` term counts every slot (as :func:`jaxsearch.selection.puct` does);
  π′ and its ingredients (v_mix, completed Q, σ) use the selectable (``legal``) slots only.
* Values are in the mover's view. ``completedQ`` is Q where visited and ``v_mix`` elsewhere.
* Before σ, completed Q is min-max rescaled to ``[0, 1]`` per node (``normalize="legal"``:
  over the legal slots; ``"all"``: over every slot, illegal ones carrying ``v_mix``, which is
  what mctx does; ``"none"``: as given, for values already in ``[0, 1]``).
"""

from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.enums import QNormalize, ValueSource, coerce
from jaxsearch.selection.base import (NodeView, RootContext, RootRule, SelectionRule,
                                      masked_softmax)



# ---- Sequential Halving: static visit schedules --------------------------------------------

def sequential_halving_visits(num_considered: int, num_simulations: int) -> np.ndarray:
  """``i32[num_simulations]`` the considered visit count before each root simulation.

  Sequential Halving over ``m = num_considered`` actions with budget ``n = num_simulations``
  (Danihelka et al. 2022, after Karnin et al. 2013): in each phase every remaining action gets
  ``max(1, floor(n / (ceil(log2 m) · remaining)))`` visits, then the worse half is dropped
  (never fewer than 2 remain); once down to 2 the last phase repeats until the budget is
  spent. Simulation ``i`` visits an action among those whose visit count equals entry
  ``i`` (the level all survivors share), so the entries are the phases' visit levels in
  order, each repeated once per surviving action. With ``m = 1`` the single action is visited
  every time: ``0, 1, ..., n − 1``.

  Examples (docs/algorithms.md §5): ``m=8, n=24 → 0×8, 1×4, 2×4, 3,3,4,4,5,5,6,6``;
  ``m=4, n=10 → 0,0,0,0, 1,1,2,2, 3,3``.
  """
  if num_considered < 1:
    raise ValueError(f"num_considered must be >= 1, got {num_considered}")
  if num_simulations < 0:
    raise ValueError(f"num_simulations must be >= 0, got {num_simulations}")
  if num_considered == 1:
    return np.arange(num_simulations, dtype=np.int32)
  num_phases = math.ceil(math.log2(num_considered))
  schedule: list[int] = []
  remaining, level = num_considered, 0
  while len(schedule) < num_simulations:
    per_action = max(1, num_simulations // (num_phases * remaining))
    for _ in range(per_action):
      schedule.extend([level] * remaining)
      level += 1
    remaining = max(2, remaining // 2)
  return np.asarray(schedule[:num_simulations], np.int32)


def sequential_halving_table(max_num_considered: int, num_simulations: int) -> np.ndarray:
  """``i32[max_num_considered + 1, num_simulations]``: row ``m`` is the schedule for ``m``
  considered actions (row 0 repeats row 1), so a batch whose nodes have different numbers of
  legal actions can gather its row with ``min(max_num_considered, num_legal)``."""
  if max_num_considered < 1:
    raise ValueError(f"max_num_considered must be >= 1, got {max_num_considered}")
  rows = [sequential_halving_visits(max(1, m), num_simulations)
          for m in range(max_num_considered + 1)]
  return np.stack(rows).astype(np.int32)


# ---- Completed Q and the improved policy ------------------------------------------------------

def mixed_value(raw_value, prior_logits: jax.Array, q: jax.Array, visits: jax.Array,
                legal: jax.Array, prior_probs: Optional[jax.Array] = None) -> jax.Array:
  """``f32[]`` v_mix = (v̂ + N·Σ_vis π(a) q(a) / Σ_vis π(a)) / (1 + N) (Danihelka et al.
  2022), the value estimate that completes Q for unvisited actions.

  Args:
    raw_value: ``f32[]`` v̂, the value network's estimate of the node.
    prior_logits: ``f32[K]``; π = softmax over the legal slots.
    q: ``f32[K]`` Q(s, a) (read only where visited).
    visits: ``i32[K]`` n(a); ``N = Σ n`` over legal slots.
    legal: ``bool[K]``.
    prior_probs: ``f32[K]`` π when already known (``NodeView.prior_probs``), else ``None``.
  Returns:
    v̂ when nothing is visited. Visited slots whose prior underflows to 0 keep the tiniest
    positive weight, so the average stays defined (then it is their plain mean).
  """
  legal = jnp.asarray(legal, bool)
  visited = legal & (visits > 0)
  total = jnp.sum(jnp.where(visited, visits, 0)).astype(jnp.float32)
  probs = (masked_softmax(jnp.asarray(prior_logits, jnp.float32), legal)
           if prior_probs is None else prior_probs)
  weights = jnp.where(visited, jnp.maximum(probs, jnp.finfo(jnp.float32).tiny), 0.0)
  weight_sum = jnp.sum(weights)
  safe_q = jnp.where(visited, jnp.asarray(q, jnp.float32), 0.0)
  weighted_q = jnp.sum(weights * safe_q) / jnp.where(weight_sum > 0, weight_sum, 1.0)
  raw_value = jnp.asarray(raw_value, jnp.float32)
  return (raw_value + total * weighted_q) / (1.0 + total)


def completed_q(q: jax.Array, visits: jax.Array, v_mix) -> jax.Array:
  """``f32[K]`` completedQ: ``q(a)`` where ``n(a) > 0``, ``v_mix`` elsewhere."""
  return jnp.where(visits > 0, jnp.asarray(q, jnp.float32), jnp.asarray(v_mix, jnp.float32))


def rescale_q(values: jax.Array, legal: jax.Array, normalize: QNormalize | str = QNormalize.LEGAL,
              epsilon: float = 1e-8) -> jax.Array:
  """``f32[K]`` min-max rescale of (completed) Q to ``[0, 1]`` over one node's slots.

  ``(v − lo) / max(hi − lo, epsilon)`` with ``lo, hi`` the min and max over the legal slots
  (``"legal"``) or over all slots (``"all"``, mctx's choice); ``"none"`` returns ``values``.
  Illegal slots get 0 under ``"legal"``.
  """
  normalize = coerce(QNormalize, normalize, "normalize")
  values = jnp.asarray(values, jnp.float32)
  if normalize is QNormalize.NONE:
    return values
  mask = (jnp.ones(values.shape, bool) if normalize is QNormalize.ALL
          else jnp.asarray(legal, bool))
  any_slot = jnp.any(mask)
  lo = jnp.where(any_slot, jnp.min(jnp.where(mask, values, jnp.inf)), 0.0)
  hi = jnp.where(any_slot, jnp.max(jnp.where(mask, values, -jnp.inf)), 0.0)
  scaled = (values - lo) / jnp.maximum(hi - lo, epsilon)
  return jnp.where(mask, scaled, 0.0)


def sigma_scale(q: jax.Array, visits: jax.Array, c_visit: float = 50.0,
                c_scale: float = 0.1) -> jax.Array:
  """``f32[K]`` σ(q̂) = (c_visit + max_b n(b)) · c_scale · q̂ (Danihelka et al. 2022).

  ``c_scale`` is 0.1 in mctx and 1.0 in the paper's board-game runs; q̂ should lie in
  ``[0, 1]`` (see :func:`rescale_q`).
  """
  max_visits = jnp.max(visits).astype(jnp.float32)
  return (c_visit + max_visits) * c_scale * jnp.asarray(q, jnp.float32)


def transformed_q(raw_value, prior_logits: jax.Array, q: jax.Array, visits: jax.Array,
                  legal: jax.Array, c_visit: float = 50.0, c_scale: float = 0.1,
                  normalize: QNormalize | str = QNormalize.LEGAL, prior_probs: Optional[jax.Array] = None
                  ) -> jax.Array:
  """``f32[K]`` σ(rescale(completedQ)): the whole Q pipeline of one node, from v̂ and Q
  (``prior_probs`` as in :func:`mixed_value`)."""
  v_mix = mixed_value(raw_value, prior_logits, q, visits, legal, prior_probs)
  completed = completed_q(q, visits, v_mix)
  return sigma_scale(rescale_q(completed, legal, normalize), visits, c_visit, c_scale)


def improved_policy(prior_logits: jax.Array, completed: jax.Array, visits: jax.Array,
                    legal: jax.Array, c_visit: float = 50.0, c_scale: float = 0.1,
                    normalize: QNormalize | str = QNormalize.LEGAL) -> jax.Array:
  """``f32[K]`` π′ = softmax(logits + σ(q̂)) over the legal slots (Danihelka et al.
  2022), q̂ = ``rescale_q(completed, legal, normalize)``; illegal slots get 0.

  Args:
    prior_logits: ``f32[K]``.
    completed: ``f32[K]`` completedQ (:func:`completed_q`).
    visits: ``i32[K]`` (σ's ``max n``).
    legal: ``bool[K]``.
    c_visit, c_scale: σ's constants.
    normalize: how completed Q is brought to ``[0, 1]`` (:func:`rescale_q`).
  """
  sigma = sigma_scale(rescale_q(completed, legal, normalize), visits, c_visit, c_scale)
  logits = jnp.where(legal, jnp.asarray(prior_logits, jnp.float32) + sigma, -jnp.inf)
  return masked_softmax(logits, legal)


# ---- Root and interior selection ---------------------------------------------------------------

def root_scores(gumbel: jax.Array, prior_logits: jax.Array, sigma_q: jax.Array,
                visits: jax.Array, legal: jax.Array, considered_visits) -> jax.Array:
  """``f32[K]`` the root's Sequential Halving scores for one simulation.

  ``g(a) + log π(a) + σ(q̂(a))`` for the legal slots whose visit count equals
  ``considered_visits`` (an entry of :func:`sequential_halving_visits`), ``-inf`` elsewhere;
  ``log π`` is the log-softmax of the legal logits (the logits shifted, the ranking unchanged).
  The argmax is the simulation's root action. During the first ``m`` simulations every
  unvisited slot qualifies and shares one completed value, so they go, in order, to the
  Gumbel-top-m of the logits; afterwards only survivors carry the current level. With
  ``considered_visits = max n`` it picks the search's final action.

  Args:
    gumbel: ``f32[K]`` one Gumbel(0, 1) draw per slot, fixed for the whole search.
    prior_logits: ``f32[K]``.
    sigma_q: ``f32[K]`` σ(q̂) (:func:`transformed_q`).
    visits: ``i32[K]``.
    legal: ``bool[K]``.
    considered_visits: ``i32[]``.
  """
  legal = jnp.asarray(legal, bool)
  score = (jnp.asarray(gumbel, jnp.float32) + _log_prior(prior_logits, legal) +
           jnp.asarray(sigma_q, jnp.float32))
  return jnp.where(legal & (visits == considered_visits), score, -jnp.inf)


def _log_prior(prior_logits: jax.Array, legal: jax.Array) -> jax.Array:
  """``f32[K]`` the log-softmax of the legal logits (``-inf`` elsewhere)."""
  logits = jnp.where(legal, jnp.asarray(prior_logits, jnp.float32), -jnp.inf)
  top = jnp.max(logits)
  log_prior = logits - jnp.where(jnp.isfinite(top), top, 0.0)
  return log_prior - jnp.log(jnp.sum(jnp.where(legal, jnp.exp(log_prior), 0.0)))


def gumbel_top_m(gumbel: jax.Array, prior_logits: jax.Array, legal: jax.Array,
                 num_considered: int, num_simulations: int,
                 width: int) -> tuple[jax.Array, jax.Array]:
  """``(slots i32[width], count i32[])`` Sequential Halving's first phase from a fresh root:
  the first ``count = min(num_considered, #legal, num_simulations)`` simulations visit
  ``slots[:count]``, the legal slots in decreasing order of ``g + log π`` (ties: the lower
  slot first), one visit each. ``width <= K`` is static.

  This is the order :func:`root_scores` gives them one simulation at a time: while they are
  unvisited, the slots share one completed value, so σ adds the same number to every score
  (exactly 0 at the first simulation). Where adding it rounds two of the scores to one float,
  the simulation-by-simulation argmax takes the lower slot and this order the higher score:
  the exact Gumbel-top-m of the paper.
  """
  legal = jnp.asarray(legal, bool)
  scores = jnp.asarray(gumbel, jnp.float32) + _log_prior(prior_logits, legal)
  return (top_slots(scores, legal, width),
          first_phase_count(num_considered, legal, num_simulations))


def first_phase_count(num_considered: int, legal: jax.Array, num_simulations: int) -> jax.Array:
  """``i32[]`` the simulations of Sequential Halving's first phase from a fresh root, one per
  considered slot: ``min(num_considered, #legal, num_simulations)``."""
  count = jnp.minimum(jnp.minimum(num_considered, jnp.sum(legal)), num_simulations)
  return count.astype(jnp.int32)


def top_slots(scores: jax.Array, legal: jax.Array, width: int) -> jax.Array:
  """``i32[width]`` the first ``width`` slots in the order a simulation-by-simulation argmax
  over ``scores`` (``f32[K]``) visits them: the legal slots by decreasing score, ties to the
  lower slot, then the others. NaN scores rank as ``-inf`` (the argmax of all-NaN legal
  scores takes the slots in index order too).

  Each slot's rank comes from a ``[K, K]`` comparison: a few elementwise kernels on a CPU,
  where ``jax.lax.top_k`` is a sort.
  """
  legal = jnp.asarray(legal, bool)
  scores = jnp.asarray(scores, jnp.float32)
  scores = jnp.where(jnp.isnan(scores), -jnp.inf, scores)
  index = jnp.arange(scores.shape[0])
  other_first = ((scores[None, :] > scores[:, None]) |
                 ((scores[None, :] == scores[:, None]) & (index[None, :] < index[:, None])))
  other_first = jnp.where(legal[None, :] == legal[:, None], other_first, legal[None, :])
  rank = jnp.sum(other_first, axis=1)
  return jnp.argmax(rank[None, :] == jnp.arange(width)[:, None], axis=1).astype(jnp.int32)


def interior_policy(view: NodeView, c_visit: float = 50.0, c_scale: float = 0.1,
                    normalize: QNormalize | str = QNormalize.LEGAL, value_source: ValueSource | str = ValueSource.NODE) -> jax.Array:
  """``f32[K]`` π′ of one interior node from its :class:`NodeView` (see
  :func:`gumbel_interior_rule` for the arguments)."""
  value_source = coerce(ValueSource, value_source, "value_source")
  legal = view.legal
  visits = jnp.where(legal, view.child_visits, 0)
  q = jnp.where(visits > 0, view.child_values, 0.0)
  if value_source is ValueSource.NODE:
    raw_value = view.value
  else:
    all_visits = view.child_visits
    returns = jnp.where(all_visits > 0, all_visits.astype(jnp.float32) * view.child_values, 0.0)
    raw_value = view.visits.astype(jnp.float32) * view.value - jnp.sum(returns)
  v_mix = mixed_value(raw_value, view.prior_logits, q, visits, legal, view.prior_probs)
  completed = completed_q(q, visits, v_mix)
  return improved_policy(view.prior_logits, completed, visits, legal, c_visit, c_scale,
                         normalize)


def gumbel_interior_rule(c_visit: float = 50.0, c_scale: float = 0.1,
                         normalize: QNormalize | str = QNormalize.LEGAL, value_source: ValueSource | str = ValueSource.NODE
                         ) -> SelectionRule:
  """Gumbel MuZero's deterministic interior selection: ``argmax_a π′(a) − n(a) / (1 + N)``
  (Danihelka et al. 2022), ``N = Σ n``.

  ``π′ = softmax(logits + σ(q̂))`` over the legal slots with ``q̂`` the node's completed Q
  (``v_mix`` for unvisited slots) min-max rescaled to ``[0, 1]`` per node, like
  :func:`jaxsearch.selection.q_minmax` but over the completed values (``normalize``, see
  :func:`rescale_q`).

  Args:
    c_visit, c_scale: σ's constants (50 and 0.1 as in mctx; the paper uses c_scale = 1 for
      board games).
    normalize: ``"legal"`` (default), ``"all"`` (mctx) or ``"none"``.
    value_source: what plays v̂ in ``v_mix``. The view has no separate network value, so
      ``"node"`` (default) uses the node's value ``view.value`` as it is (any backup);
      ``"recover"`` inverts a running-mean backup, ``v̂ = visits·V − Σ_all n(a) q(a)``, which is
      exact when ``V`` is the mean of v̂ and every backed-up return (mctx's backup, with
      ``view.visits = 1 + N``) and meaningless with the Bellman backup.
  """
  normalize = coerce(QNormalize, normalize, "normalize")
  value_source = coerce(ValueSource, value_source, "value_source")

  def score(view: NodeView, key: Optional[jax.Array]) -> jax.Array:
    del key
    policy = interior_policy(view, c_visit, c_scale, normalize, value_source)
    visits = view.child_visits.astype(jnp.float32)
    return policy - visits / (1.0 + jnp.sum(visits))

  return SelectionRule("gumbel_interior", score, reads_prior_probs=True)


def gumbel_root_rule(num_simulations: int, max_num_considered_actions: int = 16,
                     gumbel_scale: float = 1.0, c_visit: float = 50.0, c_scale: float = 0.1,
                     normalize: QNormalize | str = QNormalize.LEGAL) -> RootRule:
  """Gumbel MuZero's root (Danihelka et al. 2022) as a root-only rule for
  ``SearchConfig.root_selection``.

  The search draws ``g = gumbel_scale · Gumbel(0, 1)`` once per search (``RootContext.noise``,
  ``[K]``). Simulation ``i`` reads its considered visit count ``c_i`` from the Sequential
  Halving table for ``m = min(max_num_considered_actions, #legal)`` actions
  (:func:`sequential_halving_table`) and picks, among the legal slots with ``n(a) = c_i``, the
  one with the highest ``g(a) + log π(a) + σ(q̂(a))`` (:func:`root_scores`; σ of the root's
  completed Q with ``v_mix`` built from the estimator's raw root value). The first ``m``
  simulations therefore visit the Gumbel-top-m of ``g + logits`` in order, and each later
  phase the best half of the survivors. Those first ``m`` are the rule's ``opening``
  (:func:`gumbel_top_m`): a search from a fresh root evaluates them in one batched step.

  When no legal slot carries ``c_i`` (a reused tree arrives with visits already spent), the
  least visited legal slots compete instead.
  """
  if max_num_considered_actions < 1:
    raise ValueError(f"max_num_considered_actions must be >= 1, got "
                     f"{max_num_considered_actions}")
  normalize = coerce(QNormalize, normalize, "normalize")
  table = sequential_halving_table(max_num_considered_actions, max(num_simulations, 1))

  def score(view: NodeView, context: RootContext) -> jax.Array:
    legal = view.legal
    visits = jnp.where(legal, view.child_visits, 0)
    q = jnp.where(visits > 0, view.child_values, 0.0)
    sigma = transformed_q(context.raw_value, view.prior_logits, q, visits, legal, c_visit,
                          c_scale, normalize, view.prior_probs)
    num_considered = jnp.minimum(max_num_considered_actions, jnp.sum(legal))
    simulation = jnp.clip(context.simulation, 0, table.shape[1] - 1)
    considered = jnp.asarray(table)[num_considered, simulation]
    if context.reused:
      # One reduction for both: -1 where a legal slot carries the considered count, else the
      # least visited legal slot's count (int32 max when nothing is legal). From a fresh root
      # the schedule always leaves a legal slot at the considered count: each phase's level is
      # shared by at least as many slots as the phase visits.
      least = jnp.min(jnp.where(legal, jnp.where(visits == considered, -1, visits),
                                jnp.iinfo(jnp.int32).max))
      considered = jnp.where(least < 0, considered, least)
    return root_scores(context.noise, view.prior_logits, sigma, visits, legal, considered)

  def noise(key, shape):
    return gumbel_scale * jax.random.gumbel(key, shape, jnp.float32)

  def opening(logits, legal, gumbel, width):
    return gumbel_top_m(gumbel, logits, legal, max_num_considered_actions, num_simulations,
                        width)

  return RootRule("gumbel_root", score, noise, opening=opening,
                  opening_width=min(max_num_considered_actions, num_simulations))


def root_decision(noise: jax.Array, prior_logits: jax.Array, values: jax.Array,
                  visits: jax.Array, legal: jax.Array, raw_value, c_visit: float = 50.0,
                  c_scale: float = 0.1, normalize: QNormalize | str = QNormalize.LEGAL
                  ) -> tuple[jax.Array, jax.Array]:
  """``(slot i32[], improved f32[K])`` what a Gumbel MuZero search returns for one root.

  ``slot`` is the Sequential Halving winner: the most visited slot with the highest
  ``g + log π + σ(q̂)`` (:func:`root_scores` at ``considered = max n``); ``improved`` is
  ``π′ = softmax(logits + σ(completedQ))`` over the legal slots, the policy training target.
  """
  legal = jnp.asarray(legal, bool)
  visits = jnp.where(legal, visits, 0)
  q = jnp.where(visits > 0, values, 0.0)
  v_mix = mixed_value(raw_value, prior_logits, q, visits, legal)
  completed = completed_q(q, visits, v_mix)
  sigma = sigma_scale(rescale_q(completed, legal, normalize), visits, c_visit, c_scale)
  scores = root_scores(noise, prior_logits, sigma, visits, legal, jnp.max(visits))
  slot = jnp.argmax(jnp.where(legal, scores, -jnp.inf)).astype(jnp.int32)
  return slot, improved_policy(prior_logits, completed, visits, legal, c_visit, c_scale,
                               normalize)
