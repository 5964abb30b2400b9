"""The root decision: what a search returns, made from its searched roots in one pass.

Besides the roots' statistics (visit counts, values, bounds: :func:`jaxsearch.summary.root_summary`)
a search's output holds two policies: what it **plays** (``action`` and ``action_weights``) and
what a learner should **learn** (``policy_target``). Each comes from one source:

* the root's visit counts (AlphaZero, MuZero: the most visited action, or one drawn from the
  counts to the power ``1/τ``);
* π̄ at the root (Grill, Altché, Tang, Hubert, Valko, Antonoglou, Munos, "Monte-Carlo tree
  search as regularized policy optimization", ICML 2020: ACT plays from it, LEARN trains on it);
* Gumbel MuZero's root (Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by planning
  with Gumbel", ICLR 2022): the Sequential Halving winner is played, the improved policy
  ``π′ = softmax(logits + σ(completedQ))`` is learnt.

A :class:`RootDecision` is one choice of both, made once when a search is configured
(:class:`jaxsearch.policies.Search` builds it from its options); the engine never sees it.

    decision = RootDecision(play=RootPolicy.PIBAR, target=PolicyTarget.PIBAR, pibar_c=1.25)
    out = decision(tree, plan, key)                # plan: the search's SearchPlan
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp

from jaxsearch import gumbel as gumbel_lib
from jaxsearch.enums import PolicyTarget, QNormalize, RootPolicy, coerce
from jaxsearch.game import per_item_keys
from jaxsearch.summary import PolicyOutput, root_pibar, root_summary, slots_to_actions
from jaxsearch.tree import Tree


@dataclasses.dataclass(frozen=True)
class GumbelRoot:
  """Gumbel MuZero's root constants: σ's ``c_visit`` and ``c_scale`` (50 and 0.1 as mctx; the
  paper uses ``c_scale = 1`` for board games) and how completed Q is rescaled to ``[0, 1]``
  (:func:`jaxsearch.gumbel.rescale_q`)."""

  c_visit: float = 50.0
  c_scale: float = 0.1
  normalize: QNormalize = QNormalize.LEGAL

  def __post_init__(self):
    object.__setattr__(self, "normalize", coerce(QNormalize, self.normalize, "normalize"))

  def decide(self, tree: Tree, noise: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(slot i32[B], improved f32[B, K])``: each root's Sequential Halving winner for the
    search's draw ``noise`` ``[B, K]`` and its improved policy π′ over the root's slots."""
    root = jax.tree.map(lambda x: x[:, 0], tree.slots)
    decide = jax.vmap(lambda *args: gumbel_lib.root_decision(
        *args, c_visit=self.c_visit, c_scale=self.c_scale, normalize=self.normalize))
    return decide(noise, root.prior_logits, root.value, root.visits, root.legal,
                  tree.nodes.raw_value[:, 0])


@dataclasses.dataclass(frozen=True)
class RootDecision:
  """What a search plays and what it gives a learner, from its roots.

  Attributes:
    play: :class:`~jaxsearch.enums.RootPolicy`: ``"visits"`` (the most visited action, ties by
      Q — by the debiased q̂3 with the Bellman backup —, or at ``temperature > 0`` one drawn
      from the counts to the power ``1/τ``), ``"pibar"`` (π̄'s argmax, or a draw from
      π̄^(1/τ)) or ``"sequential_halving"`` (Gumbel MuZero's winner, whatever ``temperature``:
      the Gumbel draw is the exploration; ``action_weights`` are then π′).
    target: :class:`~jaxsearch.enums.PolicyTarget`: ``"visits"`` (``policy_target`` is
      ``None``: train on ``action_weights``), ``"pibar"`` or ``"improved"`` (π′).
    temperature: ``τ`` of a ``"visits"`` or ``"pibar"`` play.
    pibar_c: π̄'s constant in λ_N (``None``: the MuZero schedule).
    gumbel: :class:`GumbelRoot`, the constants of a Gumbel root; needed by
      ``"sequential_halving"`` and ``"improved"``. With one the search draws its root rule's
      noise itself and hands the same draw to the decision.
  """

  play: RootPolicy = RootPolicy.VISITS
  target: PolicyTarget = PolicyTarget.VISITS
  temperature: float = 0.0
  pibar_c: Optional[float] = 1.25
  gumbel: Optional[GumbelRoot] = None

  def __post_init__(self):
    object.__setattr__(self, "play", coerce(RootPolicy, self.play, "root_policy"))
    object.__setattr__(self, "target", coerce(PolicyTarget, self.target, "policy_target"))
    if self.temperature < 0:
      raise ValueError(f"temperature must be >= 0, got {self.temperature}")
    if self.gumbel is None and (self.play is RootPolicy.SEQUENTIAL_HALVING or
                                self.target is PolicyTarget.IMPROVED):
      raise ValueError(f"root_policy={self.play.value!r} / policy_target={self.target.value!r} "
                       "need a Gumbel root: use jaxsearch.policies.gumbel")

  @property
  def reads_root_noise(self) -> bool:
    """The decision reads the root rule's per-search draw (a Gumbel root)."""
    return self.gumbel is not None

  def __call__(self, tree: Tree, plan, key: jax.Array,
               root_noise: Optional[jax.Array] = None) -> PolicyOutput:
    """The :class:`~jaxsearch.summary.PolicyOutput` of ``tree``'s roots.

    Args:
      tree: the searched trees, ``[B, N, ...]``.
      plan: the search's :class:`~jaxsearch.search.SearchPlan` (``A``, the backup, which
        bounds are reported, the game's value bounds).
      key: the action key (a ``"visits"`` draw uses it, a ``"pibar"`` draw its
        ``fold_in(key, 1)``).
      root_noise: ``f32[B, K]`` the search's root draw (needed when :attr:`reads_root_noise`).
    """
    if self.gumbel is not None and root_noise is None:
      raise ValueError("a Gumbel root decision needs the search's root_noise")
    num_actions = plan.num_actions
    visits_temperature = self.temperature if self.play is RootPolicy.VISITS else 0.0
    out = root_summary(tree, num_actions, visits_temperature, key, plan.config, plan.has_bound,
                       plan.has_upper, value_bounds=plan.value_bounds)
    improved = winner = None
    if self.gumbel is not None:
      slot, improved_slots = self.gumbel.decide(tree, root_noise)
      winner = jnp.take_along_axis(tree.slots.actions()[:, 0], slot[:, None], axis=1)[:, 0]
      improved = slots_to_actions(tree, improved_slots, num_actions)
    pibar = None
    if RootPolicy.PIBAR is self.play or PolicyTarget.PIBAR is self.target:
      pibar = root_pibar(tree, num_actions, self.pibar_c)
    if self.play is RootPolicy.VISITS:
      action, weights = out.action, out.action_weights
    elif self.play is RootPolicy.SEQUENTIAL_HALVING:
      action, weights = winner, improved
    else:
      action, weights = self._from_pibar(pibar, jax.random.fold_in(key, 1))
    target = {PolicyTarget.VISITS: None, PolicyTarget.PIBAR: pibar,
              PolicyTarget.IMPROVED: improved}[self.target]
    has_action = out.action >= 0
    return out.replace(action=jnp.where(has_action, action, -1).astype(jnp.int32),
                       action_weights=jnp.where(has_action[:, None], weights, 0.0),
                       policy_target=target, pibar=pibar)

  def _from_pibar(self, pibar: jax.Array, key) -> tuple[jax.Array, jax.Array]:
    """``(action i32[B], weights f32[B, A])`` played from π̄: its argmax at ``τ = 0``, else a
    draw from π̄^(1/τ)."""
    greedy = jnp.argmax(pibar, axis=-1).astype(jnp.int32)
    if self.temperature == 0.0:
      return greedy, jax.nn.one_hot(greedy, pibar.shape[-1], dtype=jnp.float32)
    logits = jnp.where(pibar > 0, jnp.log(jnp.where(pibar > 0, pibar, 1.0)) / self.temperature,
                       -jnp.inf)
    action = jax.vmap(jax.random.categorical)(per_item_keys(key, pibar.shape[0]), logits)
    return action.astype(jnp.int32), jax.nn.softmax(logits, axis=-1)
