"""Ready-made searches: configuration in, ``(params, key, root, tree=None) -> PolicyOutput``.

    search = js.policies.puct(connect_four.GAME, js.estimators.uniform(), num_simulations=64)
    out = jax.jit(search)(None, key, states)          # states: a batch [B, ...]
    out.action, out.action_weights, out.root_value, out.q_values, out.tree
    tree = js.tree.reroot(out.tree, out.action)       # reuse the subtree for the next move
    out = jax.jit(search)(None, key, next_states, tree)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Optional

import jax

from jaxsearch import gumbel as gumbel_lib
from jaxsearch import search as search_lib
from jaxsearch import sharding
from jaxsearch import validation
from jaxsearch import selection as selection_lib
from jaxsearch.decision import GumbelRoot, RootDecision
from jaxsearch.enums import (Backup, PolicyTarget, QNormalize, RootPolicy, ValueSource,
                             VisitConvention)
from jaxsearch.game import Estimator, Game
from jaxsearch.model import Model, from_game
from jaxsearch.selection.base import QTransform, SelectionRule, q_minmax
# What a search returns, made from the roots (re-exported: js.policies.PolicyOutput, ...).
from jaxsearch.summary import PolicyOutput, root_pibar, root_summary, root_view
from jaxsearch.tree import Tree

__all__ = ["Search", "PolicyOutput", "SEARCH_OPTIONS", "custom", "avts", "puct", "alphazero",
           "uct", "pibar", "entropy_puct", "gumbel", "root_pibar", "root_summary", "root_view"]


@dataclasses.dataclass(frozen=True)
class Search:
  """A configured search. Call it (under ``jax.jit`` if you like) as
  ``search(params, key, root, tree=None)``.

  Args of the call:
    params: the estimator's parameters (``None`` for parameter-free estimators).
    key: a PRNG key.
    root: the root states, a state pytree with leading ``[B]``.
    tree: optional trees from a previous search, usually ``jaxsearch.tree.reroot(...)``ed;
      rows with ``num_nodes == 0`` start afresh from ``root``. The caller guarantees that a
      kept tree's root is the state in ``root``. Reuse needs room: size ``max_nodes`` for
      the kept subtree plus ``num_simulations`` new nodes; a tree that fills up stops growing
      (``tree.num_nodes == max_nodes``) and its simulations re-back existing nodes.

  A ``config`` that leaves ``max_nodes`` or ``max_depth`` to the game gets them from ``model``
  (:meth:`~jaxsearch.search.SearchConfig.for_model`).

  What it returns is decided at the roots by one :class:`~jaxsearch.decision.RootDecision`
  (``search.decision``), built from the options below: what to play and what to learn, from
  the visit counts, π̄ at the root, or a Gumbel root.

  Options (``root_policy``, ``pibar_target``, ``pibar_c``: Grill et al. 2020's π̄ variants;
  SEARCH is the selection rule :func:`jaxsearch.selection.pibar_sample`, see :func:`pibar`):
    temperature: ``τ`` of the action drawn from the visit counts (0: the most visited).
    root_policy: :class:`~jaxsearch.enums.RootPolicy`, ``"visits"`` (the default without a
      Gumbel root), ``"pibar"`` — ACT: ``action`` and ``action_weights`` come from π̄ at the
      root (argmax at ``temperature=0``, else sampled from π̄^(1/τ)) — or
      ``"sequential_halving"`` (the default with a Gumbel root, :func:`gumbel`).
    pibar_target: LEARN: ``PolicyOutput.policy_target`` (and ``.pibar``) = π̄ at the root.
    pibar_c: π̄'s constant in λ_N (``None``: the MuZero schedule).
    devices: split the batch over devices (:mod:`jaxsearch.sharding`): ``None`` (default
      device), an int ``n`` (the first ``n`` devices) or a list of devices; ``B`` must be
      divisible by their number. Same key, same trees and outputs on any number of devices.
    gumbel: :class:`~jaxsearch.decision.GumbelRoot` for a search whose root rule is Gumbel
      MuZero's (:func:`gumbel` sets it): the search draws the root's Gumbel noise itself, so
      that the final action uses the same draw, and ``policy_target`` is the improved policy
      π′ unless ``pibar_target``.
  """

  model: Model
  config: search_lib.SearchConfig
  temperature: float = 0.0
  root_policy: Optional[RootPolicy] = None
  pibar_target: bool = False
  pibar_c: Optional[float] = 1.25
  devices: Optional[tuple] = None
  gumbel: Optional[GumbelRoot] = None
  plan: search_lib.SearchPlan = dataclasses.field(init=False, repr=False, compare=False)
  decision: RootDecision = dataclasses.field(init=False, repr=False, compare=False)

  def __post_init__(self):
    object.__setattr__(self, "devices", sharding.resolve_devices(self.devices))
    default_play = RootPolicy.VISITS if self.gumbel is None else RootPolicy.SEQUENTIAL_HALVING
    default_target = PolicyTarget.VISITS if self.gumbel is None else PolicyTarget.IMPROVED
    decision = RootDecision(play=default_play if self.root_policy is None else self.root_policy,
                            target=PolicyTarget.PIBAR if self.pibar_target else default_target,
                            temperature=self.temperature, pibar_c=self.pibar_c,
                            gumbel=self.gumbel)
    if self.root_policy is not None:  # None stays None: the default follows ``gumbel``
      object.__setattr__(self, "root_policy", decision.play)
    object.__setattr__(self, "decision", decision)
    # Resolved once for the model: the engine and the decision read this plan.
    object.__setattr__(self, "plan", search_lib.plan_for(self.config, self.model))
    object.__setattr__(self, "config", self.plan.config)

  def init_tree(self, params, key, root) -> Tree:
    """Fresh trees for ``root`` (``[B]`` states) of exactly the shapes this search uses.

    Passing a tree on every call (this one first, then ``reroot``-ed ones) keeps one compiled
    program instead of two (``tree=None`` and ``tree=Tree`` trace differently).
    """
    if self.devices is not None:
      return _sharded(self, "init_tree", (2,))(params, key, root)
    return search_lib.init_tree(self.model, self.plan, params, key, root)

  def __call__(self, params, key, root, tree: Optional[Tree] = None) -> PolicyOutput:
    validation.check_key(key)  # before the split below; the rest: search_lib.init_tree
    if self.devices is not None:  # each device searches its rows of the batch
      return _sharded(self, "__call__", (2, 3))(params, key, root, tree)
    search_key, action_key = jax.random.split(key)
    root_noise = None
    if self.decision.reads_root_noise:  # drawn here, so the decision sees the same draw
      noise_key, search_key = jax.random.split(search_key)
      batch_size = jax.tree.leaves(root)[0].shape[0]
      root_noise = search_lib.draw_root_noise(self.config, noise_key, batch_size,
                                              self.plan.num_slots)
    tree = search_lib.run(self.model, self.plan, params, search_key, root, tree,
                          root_noise=root_noise)
    return self.decision(tree, self.plan, action_key, root_noise)


@functools.lru_cache(maxsize=64)
def _sharded(search: Search, method: str, batch_argnums):
  """``search``'s ``method`` run per device (:func:`jaxsearch.sharding.shard_batch`, jitted:
  un-jitted ``shard_map`` would run op by op), one compiled function per search."""
  return sharding.shard_batch(getattr(dataclasses.replace(search, devices=None), method),
                              search.devices, batch_argnums)


def _model(game: Optional[Game], estimator: Optional[Estimator], model: Optional[Model]) -> Model:
  if model is not None:
    if game is not None or estimator is not None:
      raise ValueError("pass either model=... or game and estimator, not both")
    return model
  if game is None or estimator is None:
    raise ValueError("a search needs a game and an estimator (or model=...)")
  return from_game(game, estimator)


# Search's own options, passed by keyword to the constructors below.
SEARCH_OPTIONS = ("temperature", "root_policy", "pibar_target", "pibar_c", "devices")


def custom(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
           config: Optional[search_lib.SearchConfig] = None, model: Optional[Model] = None,
           **options) -> Search:
  """A search with any selection rule and either backup::

      config = js.search.SearchConfig(num_simulations=64, selection=js.selection.puct(),
                                      root_noise=js.search.RootNoise(0.25, 0.3))
      search = js.policies.custom(game, estimator, config=config, temperature=1.0)

  Args:
    game, estimator: the world (or ``model=``, a :class:`~jaxsearch.model.Model`).
    config: the :class:`~jaxsearch.search.SearchConfig`; ``max_nodes`` and ``max_depth``
      left ``None`` come from the game (``num_simulations · O + 1`` nodes for the Bellman
      backup, ``num_simulations + 1`` otherwise; the game's ``max_length``).
    **options: :class:`Search`'s own (``temperature``, ``root_policy``, ``pibar_target``,
      ``pibar_c``, ``devices``). Without ``config``, the config's settings as flat keywords
      too (:func:`jaxsearch.search.config_from_keywords`: ``selection=...,
      num_simulations=..., dirichlet_fraction=..., widening=...``), the form the named
      constructors below pass on.
  """
  model = _model(game, estimator, model)
  search_options = {name: options.pop(name) for name in SEARCH_OPTIONS if name in options}
  if config is None:
    config = search_lib.config_from_keywords(**options)
  elif options:
    raise TypeError(f"pass the search's settings in config= or as keywords, not both: got "
                    f"config= and {sorted(options)}")
  return Search(model=model, config=config, **search_options)


def avts(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
         num_simulations: int, selection: Optional[SelectionRule] = None,
         widening: bool = True, debias: bool = True, variance: str = "avts",
         **kwargs) -> Search:
  """Action Value Tree Search (the AVTS article; docs/algorithms.md §2): Bellman backup over
  exact chance outcomes, debiased values q̂3, Thompson sampling and progressive widening.

  The estimator must return ``action_values`` (q̂1). The recommended action is the most
  visited (ties by q̂3), ``out.q_values`` holds q̂3, and ``out.root_bound`` is the achievable
  bound when the game has a ``pessimistic_value``.

  Args:
    selection: default :func:`jaxsearch.selection.thompson`; any rule works (``laplace``,
      ``hoeffding``, ``value_prior_puct``, ...).
    widening: progressive widening (start from the best q̂1, add one action at a time).
    debias: subtract the expected remaining drift (off for ablations).
    variance: ``"avts"``, ``"reference"`` (the reference code's quirks), ``"centred"``
      (Welford sample variance of each bucket's changes) or ``"off"``.
    **kwargs: :func:`custom`'s other options as flat keywords (``num_slots``,
      ``num_buckets``, ``max_nodes``, ``max_depth``, ``outcome_rule``, ``temperature``,
      ``model``, ...).
  """
  if selection is None:
    selection = selection_lib.thompson()
  return custom(game, estimator, selection=selection, num_simulations=num_simulations,
                backup=Backup.BELLMAN, widening=widening, debias=debias, variance=variance,
                **kwargs)


def puct(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
         num_simulations: int, c: Optional[float] = None, c1: float = 1.25,
         c2: float = 19652.0, q_transform: QTransform = q_minmax,
         visit_convention: VisitConvention | str = VisitConvention.NODE, **kwargs) -> Search:
  """PUCT search (AlphaZero with constant ``c``; MuZero schedule when ``c`` is None).

  See :func:`jaxsearch.selection.puct` for the rule and :func:`custom` for the other options
  (``max_nodes``, ``max_depth``, ``dirichlet_fraction``, ``dirichlet_alpha``, ``temperature``,
  ``outcome_rule``, ``model``).
  """
  rule = selection_lib.puct(c=c, c1=c1, c2=c2, q_transform=q_transform,
                            visit_convention=visit_convention)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations, **kwargs)


def alphazero(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
              num_simulations: int, dirichlet_fraction: float = 0.25,
              dirichlet_alpha: float = 0.3, temperature: float = 1.0, **kwargs) -> Search:
  """PUCT set up for self-play: root Dirichlet noise (ε = 0.25, α = 0.3) and actions sampled
  from the visit counts (τ = 1)."""
  return puct(game, estimator, num_simulations=num_simulations,
              dirichlet_fraction=dirichlet_fraction, dirichlet_alpha=dirichlet_alpha,
              temperature=temperature, **kwargs)


def uct(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
        num_simulations: int, exploration: float = math.sqrt(2.0),
        value_range: Optional[tuple[float, float]] = None, **kwargs) -> Search:
  """UCT (UCB1 on trees); Q is mapped from the game's ``value_range`` to ``[0, 1]``."""
  if value_range is None:
    value_range = game.value_range if game is not None else (-1.0, 1.0)
  rule = selection_lib.uct(exploration=exploration, value_range=value_range)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations, **kwargs)


def pibar(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
          num_simulations: int, c: Optional[float] = 1.25, q_transform: QTransform = q_minmax,
          deterministic: bool = False, **kwargs) -> Search:
  """Grill et al.'s SEARCH variant: every node samples its slot from π̄
  (:func:`jaxsearch.selection.pibar_sample`; ``deterministic=True`` uses
  :func:`jaxsearch.selection.pibar_argmax_visits`, which tracks π̄ without random numbers).

  Combine with the ACT and LEARN options of :class:`Search` (``root_policy="pibar"``,
  ``pibar_target=True``); ``kwargs`` are :func:`custom`'s.
  """
  make = selection_lib.pibar_argmax_visits if deterministic else selection_lib.pibar_sample
  rule = make(c=c, q_transform=q_transform)
  kwargs.setdefault("pibar_c", c)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations, **kwargs)


def entropy_puct(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
                 num_simulations: int, c: Optional[float] = None, c1: float = 1.25,
                 c2: float = 19652.0, q_transform: QTransform = q_minmax,
                 entropy: str = "full", playout: str = "pi_hat",
                 **kwargs) -> Search:
  """Entropy-guided PUCT (lc0 #780; docs/algorithms.md §4):
  ``q̄ + c·π·sqrt(N) / (1 + n(a)·E(s, a))``, E the normalised subtree entropy.

  Args:
    entropy: ``"full"`` (chain rule over the subtree, kept in the tree and updated along the
      backup path) or ``"one_level"`` (the cheap proxy: a child's own playout-policy entropy).
    playout: the playout policy defining the leaf distribution: ``"pi_hat"``
      (``(1 + n)/(|A| + N)``) or ``"pibar"`` (π̄ with ``c = 1.25``).
    c, c1, c2, q_transform: as :func:`puct`.
    **kwargs: :func:`custom`'s other options (running-mean backup only).
  """
  rule = selection_lib.entropy_puct(c=c, c1=c1, c2=c2, q_transform=q_transform)
  return custom(game, estimator, selection=rule, num_simulations=num_simulations,
                subtree_entropy=entropy, entropy_policy=playout, **kwargs)


def gumbel(game: Optional[Game] = None, estimator: Optional[Estimator] = None, *,
           num_simulations: int, max_num_considered_actions: int = 16,
           gumbel_scale: float = 1.0, c_visit: float = 50.0, c_scale: float = 0.1,
           normalize: QNormalize | str = QNormalize.LEGAL, value_source: ValueSource | str = ValueSource.RECOVER, **kwargs) -> Search:
  """Gumbel MuZero (Danihelka et al. 2022; docs/algorithms.md §5).

  Root: Gumbel-top-k of ``g + logits`` (``k = min(max_num_considered_actions, #legal)``)
  with Sequential Halving over the budget (:func:`jaxsearch.gumbel.gumbel_root_rule`, one
  Gumbel draw per search); interior nodes: the deterministic
  ``argmax π′(a) − n(a)/(1 + N)`` (:func:`jaxsearch.gumbel.gumbel_interior_rule`).

  ``out.action`` is the Sequential Halving winner (most visited, best
  ``g + logits + σ(q̂)``); ``out.action_weights`` and ``out.policy_target`` are the improved
  policy ``softmax(logits + σ(completedQ))``, the training target.

  Args:
    max_num_considered_actions: ``m`` (16 in the paper).
    gumbel_scale: scale of the Gumbel noise (0 for deterministic evaluation).
    c_visit, c_scale: σ's constants (50, 0.1 as mctx; the paper uses c_scale = 1 for board
      games).
    normalize: completed Q's min-max rescale: ``"legal"`` slots (default) or ``"all"`` slots
      (mctx's choice; identical when every action is legal).
    value_source: v̂ in interior nodes' ``v_mix``: ``"recover"`` (the estimator's value,
      recovered exactly from the running mean) or ``"node"`` (the node's running value).
    **kwargs: :func:`custom`'s options (``max_nodes``, ``max_depth``, ``model``, ...; no root
      Dirichlet noise: the Gumbel draw explores).
  """
  backup = search_lib.config.resolve_backup(kwargs.get("backup", Backup.MEAN))
  if backup.kind is not Backup.MEAN:
    raise ValueError("gumbel needs the running-mean backup")
  root_rule = gumbel_lib.gumbel_root_rule(
      num_simulations, max_num_considered_actions, gumbel_scale, c_visit, c_scale, normalize)
  interior = gumbel_lib.gumbel_interior_rule(c_visit, c_scale, normalize, value_source)
  search = custom(game, estimator, selection=interior, num_simulations=num_simulations,
                  root_selection=root_rule, **kwargs)
  return dataclasses.replace(search, gumbel=GumbelRoot(c_visit, c_scale, normalize))
