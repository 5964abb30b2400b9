"""The AVTS article's own experiment, on the host: one tree from the empty board, one rule at
every node (*Wordle Perfect Play with Generic Methods*, T. Tyl 2024; docs/algorithms.md §2).

Nothing of the solver is used. The tree is a dict-of-nodes in numpy, as the article's
reference code builds it:

* **A node** (:class:`~jaxsearch.games.avts_article_node.Node`, with its debiasing and
  variance statistics) is a set of remaining secrets (``n >= 2``; a single secret is a leaf
  worth one more guess, the all-correct feedback a leaf worth none). It keeps *choices*
  (guesses), each with q̂1 (the entropic estimator), q̂2 (its Bellman value), its visits and
  its bound.
* **Widening, no cut**: a new node holds one choice, the best guess by q̂1; whenever the
  newest choice is selected, the next best guess by q̂1 among *all* guesses is added. The
  order is cached ``cache`` guesses at a time and recomputed when used up (an estimator
  evaluation counted like a new node's), so no guess is ever out of reach.
* **One iteration** (:meth:`ArticleTree.iterate`) visits every state of the current tree
  under the chosen actions: the root picks a choice with the rule, and every feedback part
  of it with two secrets or more is either created (a leaf: one estimator evaluation) or, if
  it exists, visited the same way. The visit runs level by level, so one level's new nodes
  are evaluated in one batched call; then the chosen choices are backed up from the deepest
  level up: ``q̂2 = Σ_o p(o)·(−1 + V(s_o))`` with ``V`` the child's best debiased value.
* **The bound** (the article's plot): each choice's bound is the value of a concrete policy,
  ``max(old, Σ_o p(o)·(−1 + B(s_o)))``, a fresh choice charged ``−n`` (each of the ``n``
  secrets found by its ``n``-th guess at worst); ``B(s_o)`` is the bound of the child's best
  choice by value (``ChildBound.BEST_VALUE``, the reference code) or the child's best bound
  (``ChildBound.BEST_BOUND``). The root's best bound times the number of secrets is an upper
  bound on the optimal total of guesses, and it never gets worse.

Rules (:class:`Rule`, the article's constants): Thompson sampling (one draw per choice from
``N(q̂3, σ²)``, the argmax; the reference code estimates each choice's probability of being
best from 1024 such draws and then samples from those probabilities, which is the same
distribution), Laplace ``q̂3 + δ/(n+1)``, PUCT ``q̂3 + c·softmax(q̂1)·sqrt(N)/(1+n)``,
Hoeffding ``q̂3 + (U−L)·sqrt(−ln p/2)/sqrt(n+1)``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Optional

import numpy as np

from jaxsearch.enums import Variance
from jaxsearch.games.avts_article_node import (VARIANCES, Estimator, Node, Problem,
                                               numpy_estimator)
from jaxsearch.guessing.estimator import greedy_guess


class Rule(enum.StrEnum):
  """The article's selection rules (constants as the article's)."""

  THOMPSON = "thompson_avts"
  LAPLACE = "laplace"
  PUCT = "puct_value_prior"
  HOEFFDING = "hoeffding"


class ChildBound(enum.StrEnum):
  """Which bound of a child a choice's bound is backed up from."""

  BEST_VALUE = "best_value"  # the child's best choice by debiased value (reference code)
  BEST_BOUND = "best_bound"  # the child's best bound (tighter, also a concrete policy)


class RootRule(enum.StrEnum):
  """Which rule chooses at the root."""

  ARTICLE = "article"  # the rule under test, as at every other node (the article's)
  THOMPSON = "thompson"  # Thompson-AVTS whatever the rule under test (the solver's root)


LAPLACE_DELTA = 0.1
PUCT_C = 1.0
HOEFFDING_P = 0.999
HOEFFDING_RANGE = (-6.0, 0.0)


@dataclasses.dataclass(frozen=True)
class Config:
  """One run: the ``rule`` at every node, the ``variance`` model, how a choice's bound reads
  its children (``child_bound``), ``cache`` guesses of each node's q̂1 order kept between
  widenings (an order used up is recomputed: no cut), and the random ``seed``.

  Departures from the article, to isolate what the project's solver changes: ``cut > 0``
  keeps at most ``cut`` guesses per node (the article's earlier version kept 100);
  ``one_path`` makes an iteration one path, as an engine's simulation: below a chosen guess
  already expanded, one child drawn in proportion to its answers instead of every child;
  ``root=RootRule.THOMPSON`` is the solver's root: it chooses by Thompson-AVTS whatever
  ``rule`` (which then acts below the root only), its first guesses are not cut (``cut``
  acts below), and under ``one_path`` a visit of a first guess goes down every feedback's
  subtree, one path each (the solver's batch of sub-problem trees, one per feedback);
  ``root_live >= 2`` lets at most that many first guesses be
  *live* (visited and not retired), as the solver's root: when the root picks a first guess
  never visited and ``root_live`` are live, the live one with the worst q̂3 other than the
  one holding the best bound is retired — it keeps its figures, is never chosen again, and
  the exported policy's first guess is the live one with the best bound."""

  rule: Rule = Rule.THOMPSON
  variance: Variance = Variance.AVTS
  child_bound: ChildBound = ChildBound.BEST_VALUE
  cache: int = 32
  seed: int = 0
  cut: int = 0
  one_path: bool = False
  root: RootRule = RootRule.ARTICLE
  root_live: int = 0

  def __post_init__(self):
    object.__setattr__(self, "rule", Rule(self.rule))
    object.__setattr__(self, "root", RootRule(self.root))
    object.__setattr__(self, "variance", Variance(self.variance))
    object.__setattr__(self, "child_bound", ChildBound(self.child_bound))
    if self.variance not in VARIANCES:
      raise ValueError(f"variance must be one of {[v.value for v in VARIANCES]}, "
                       f"got {self.variance.value!r}")
    if not isinstance(self.cache, int) or self.cache < 1:
      raise ValueError(f"cache must be a positive int, got {self.cache!r}")
    if not isinstance(self.cut, int) or self.cut < 0:
      raise ValueError(f"cut must be a non-negative int (0: no cut), got {self.cut!r}")
    if not isinstance(self.root_live, int) or self.root_live == 1 or self.root_live < 0:
      raise ValueError(f"root_live must be 0 (every first guess live) or an int >= 2, "
                       f"got {self.root_live!r}")


class ArticleTree:
  """The article's tree over ``problem`` from the empty board (every secret possible).

  Args:
    problem: the game.
    config: the rule, variance and bound options.
    estimator: ``(problem, sets) -> [f64[G], ...]`` q̂1 of a batch of sets of secrets (one
      call per level of an iteration); default :func:`numpy_estimator`.

  Attributes:
    iterations: iterations run. evaluations: sets of secrets the estimator evaluated (new
    nodes and re-sorted orders). nodes: nodes in the tree. visited: states the last
    iteration visited (the root included; new leaves not counted). retired: the root's
    retired choices (indices; only with ``Config.root_live``).
  """

  def __init__(self, problem: Problem, config: Config = Config(),
               estimator: Optional[Estimator] = None):
    self.problem, self.config = problem, config
    self.estimator = estimator or numpy_estimator
    self.rng = np.random.default_rng(config.seed)
    self.iterations = self.evaluations = self.nodes = self.visited = 0
    self.retired: set[int] = set()
    self.root = Node(np.arange(problem.num_secrets))
    self._evaluate([self.root])

  # --- the bound ------------------------------------------------------------------------------

  def bound_total(self) -> float:
    """The tree's upper bound on the optimal total of guesses over all secrets."""
    return -self.root.best_bound * self.problem.num_secrets

  def bound_mean(self) -> float:
    """The same per game (the article's axis)."""
    return -self.root.best_bound

  # --- one iteration --------------------------------------------------------------------------

  def iterate(self) -> None:
    """One article iteration: every state under the chosen actions, level by level, then
    the backups from the deepest level up."""
    levels, level, visited = [], [self.root], 0
    while level:
      chosen, deeper, fresh = [], [], []
      for node in level:
        i = self._select(node)
        if i == len(node.guesses) - 1 and node.visits[i] == 0:
          self._widen(node)
        if node.parts[i] is None:
          fresh.extend(self._split(node, i))
        else:
          deeper.extend(self._below(node.children[i], self._solver_root(node)))
        chosen.append(i)
      visited += len(level)
      self._evaluate(fresh)
      levels.append((level, chosen))
      level = deeper
    for level, chosen in reversed(levels):
      for node, i in zip(level, chosen):
        self._backup(node, i)
    self.iterations += 1
    self.visited = visited

  def _solver_root(self, node: Node) -> bool:
    """Whether ``node`` is the root and the root is the solver's (``RootRule.THOMPSON``)."""
    return node is self.root and self.config.root == RootRule.THOMPSON

  def _below(self, children: list, every: bool = False) -> list:
    """The existing children an iteration visits: all of them, or one (``one_path``, unless
    ``every``: the solver's root searches every feedback of a first guess)."""
    nodes = [c for c in children if isinstance(c, Node)]
    if every or not self.config.one_path or len(nodes) <= 1:
      return nodes
    sizes = np.asarray([c.n for c in nodes], np.float64)
    return [nodes[int(self.rng.choice(len(nodes), p=sizes / sizes.sum()))]]

  def _evaluate(self, nodes: list) -> None:
    """New nodes: one batched estimator call, each node's first choice its best guess."""
    if not nodes:
      return
    values = self.estimator(self.problem, [node.secrets for node in nodes])
    self.evaluations += len(nodes)
    self.nodes += len(nodes)
    for node, q in zip(nodes, values):
      self._sort(node, q)
      self._widen(node)

  def _sort(self, node: Node, q: np.ndarray) -> None:
    """Caches the next ``cache`` guesses of ``node`` by q̂1 (ties: lower index first)."""
    q = np.asarray(q, np.float64).copy()
    if node.active:
      q[list(node.active)] = -np.inf
    finite = int(np.sum(np.isfinite(q)))
    take = min(self.config.cache, finite)
    # Ties: the lower index first, every time. A copy, not a view of the whole argsort
    # (which would keep G indices alive per node: 9 GB at 73,000 nodes of Wordle).
    top = np.argsort(-q, kind="stable")[:take].astype(np.int32)
    node.order, node.order_q1, node.cursor = top, q[top], 0

  def _widen(self, node: Node) -> None:
    """Adds the best guess by q̂1 not yet a choice (re-sorting the node when its cache is
    used up; nothing when every informative guess is a choice)."""
    if (self.config.cut and len(node.guesses) >= self.config.cut
        and not self._solver_root(node)):
      return
    if node.cursor >= len(node.order):
      if len(node.order) < self.config.cache:
        return  # the last sort held every informative guess left
      self._sort(node, self.estimator(self.problem, [node.secrets])[0])
      self.evaluations += 1
      if len(node.order) == 0:
        return
    g, q1 = int(node.order[node.cursor]), float(node.order_q1[node.cursor])
    node.cursor += 1
    node.active.add(g)
    node.guesses.append(g)
    node.q1.append(q1)
    node.q2.append(q1)
    node.visits.append(0)
    node.bound.append(-float(node.n))
    node.parts.append(None)
    node.children.append(None)
    node.reached[0] += 1

  def _split(self, node: Node, i: int) -> list:
    """Creates the feedback parts of choice ``i``; returns the new (unevaluated) nodes."""
    codes = self.problem.table[node.secrets, node.guesses[i]]
    order = np.argsort(codes, kind="stable")
    codes_sorted = codes[order]
    starts = np.flatnonzero(np.r_[True, codes_sorted[1:] != codes_sorted[:-1]])
    parts, children, fresh = [], [], []
    for start, stop in zip(starts, np.r_[starts[1:], len(codes)]):
      secrets = node.secrets[np.sort(order[start:stop])]
      code = int(codes_sorted[start])
      parts.append((code, len(secrets)))
      if len(secrets) >= 2:
        child = Node(secrets)
        children.append(child)
        fresh.append(child)
      else:
        children.append(0.0 if code == self.problem.solved_code else -1.0)
    node.parts[i], node.children[i] = parts, children
    return fresh

  # --- selection and backup -------------------------------------------------------------------

  def _select(self, node: Node) -> int:
    """The choice picked at ``node``: by the rule under test, or at the root by
    ``Config.root``'s rule among the choices not retired (retiring one if need be)."""
    if node is not self.root:
      return self._score_argmax(node, self.config.rule, ())
    rule = Rule.THOMPSON if self.config.root == RootRule.THOMPSON else self.config.rule
    i = self._score_argmax(node, rule, self.retired)
    if self.config.root_live and node.visits[i] == 0:
      self._retire_for_new(i)
    return i

  def _retire_for_new(self, new: int) -> None:
    """The solver's root: before the first visit of root choice ``new``, if ``root_live``
    choices are live, the live one with the worst q̂3 (never the best bound's) retires."""
    root = self.root
    live = [j for j, v in enumerate(root.visits) if v > 0 and j not in self.retired]
    if len(live) < self.config.root_live:
      return
    best = max(live, key=lambda j: root.bound[j])
    q3 = root.q3()
    self.retired.add(min((j for j in live if j != best), key=lambda j: q3[j]))

  def _score_argmax(self, node: Node, rule: Rule, excluded) -> int:
    """The best choice of ``node`` by ``rule``'s score, the ``excluded`` indices left out."""
    if len(node.guesses) == 1:
      return 0
    q3 = node.q3()
    visits = np.asarray(node.visits, np.float64)
    if rule == Rule.THOMPSON:
      sigma = np.sqrt(node.sigma2(self.config.variance))
      score = q3 + sigma * self.rng.standard_normal(len(q3))
    elif rule == Rule.LAPLACE:
      score = q3 + LAPLACE_DELTA / (visits + 1.0)
    elif rule == Rule.HOEFFDING:
      lo, hi = HOEFFDING_RANGE
      score = q3 + (hi - lo) * math.sqrt(-math.log(HOEFFDING_P) / 2.0) / np.sqrt(visits + 1.0)
    else:
      q1 = np.asarray(node.q1)
      prior = np.exp(q1 - q1.max())
      prior /= prior.sum()
      score = q3 + PUCT_C * prior * math.sqrt(node.total) / (1.0 + visits)
    if excluded:
      score[list(excluded)] = -np.inf
    return int(np.argmax(score))

  def _child_value(self, child) -> tuple[float, float]:
    """``(V, B)``: a child's best debiased value and its bound (a leaf: its exact value)."""
    if not isinstance(child, Node):
      return child, child
    q3 = child.q3()
    best = int(np.argmax(q3))
    if self.config.child_bound == ChildBound.BEST_VALUE:
      return float(q3[best]), child.bound[best]
    return float(q3[best]), child.best_bound

  def _backup(self, node: Node, i: int) -> None:
    """The Bellman backup of choice ``i``, its debias record and its bound."""
    value = bound = 0.0
    for (_, size), child in zip(node.parts[i], node.children[i]):
      v, b = self._child_value(child)
      value += size * (v - 1.0)
      bound += size * (b - 1.0)
    value, bound = value / node.n, bound / node.n
    node.visits[i] += 1
    node.total += 1
    node.record(node.visits[i], value - node.q2[i], self.config.variance)
    node.q2[i] = value
    node.bound[i] = max(node.bound[i], bound)
    node.best_bound = max(node.best_bound, node.bound[i])

  # --- the exported policy --------------------------------------------------------------------

  def policy_total(self, memo: Optional[dict] = None) -> int:
    """Exact total of guesses of the exported policy over all secrets: each node's best
    choice by q̂3, the entropic estimator's greedy guess below the tree (``memo``: set ->
    greedy total, shared between calls)."""
    memo = {} if memo is None else memo
    return self._total(self.root, self.root.secrets, memo)

  def _total(self, node: Optional[Node], secrets: np.ndarray, memo: dict) -> int:
    n = len(secrets)
    if n == 1:
      return 1
    if node is None:
      key = secrets.tobytes()
      if key not in memo:
        memo[key] = self._guess_total(None, None, secrets, memo)
      return memo[key]
    return self._guess_total(node, self._exported_choice(node), secrets, memo)

  def _exported_choice(self, node: Node) -> int:
    """The exported policy's choice at ``node``: the best by q̂3; at a root with
    ``root_live``, the live choice holding the best bound (the solver's), if any is live."""
    if node is self.root and self.config.root_live:
      live = [j for j, v in enumerate(node.visits) if v > 0 and j not in self.retired]
      if live:
        return max(live, key=lambda j: node.bound[j])
    return int(np.argmax(node.q3()))

  def _guess_total(self, node, i, secrets, memo) -> int:
    problem = self.problem
    if node is None:
      guess = greedy_guess(problem.table, problem.guess_of_secret, secrets, problem.num_codes)
      children = None
    else:
      guess, children = node.guesses[i], node.children[i]
    codes = problem.table[secrets, guess]
    total = len(secrets)
    for k, code in enumerate(np.unique(codes)):
      if code == problem.solved_code:
        continue
      part = secrets[codes == code]
      child = children[k] if children is not None else None
      total += self._total(child if isinstance(child, Node) else None, part, memo)
    return total

  def count_nodes(self) -> int:
    """Nodes reachable from the root (a check of :attr:`nodes`)."""
    stack, seen = [self.root], 0
    while stack:
      node = stack.pop()
      seen += 1
      for children in node.children:
        if children is not None:
          stack.extend(c for c in children if isinstance(c, Node))
    return seen
