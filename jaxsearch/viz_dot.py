"""The DOT writer behind :mod:`jaxsearch.viz`: one host tree's nodes, edges and cut
summaries added to a ``graphviz.Digraph`` (what is drawn and the cuts: see there)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence, Union

import numpy as np

from jaxsearch.tree import NO_BOUND, NO_UPPER, Tree

ActionNames = Union[Sequence[str], Callable[[int], str], None]


def _name(action: int, action_names: ActionNames) -> str:
  if action_names is None:
    return str(action)
  if callable(action_names):
    return str(action_names(action))
  return str(action_names[action]) if 0 <= action < len(action_names) else str(action)


def _fmt(x: float) -> str:
  if abs(x) < 0.0005:
    return "+0.000"  # not "-0.000"
  return f"{x:+.3f}" if abs(x) < 1000 else f"{x:+.4g}"


@dataclasses.dataclass(frozen=True)
class Cuts:
  """What :func:`jaxsearch.viz.to_dot` leaves out, and how it names actions and outcomes (see there)."""

  max_depth: int
  min_visits: int
  max_children: Optional[int]
  max_per_level: Optional[int]
  action_names: ActionNames
  outcome_names: ActionNames


class DotWriter:
  """Adds one host tree's nodes and edges to ``graph``, depth first from a node.

  Args:
    graph: the ``graphviz.Digraph`` written to.
    t: one tree as numpy arrays (:func:`jaxsearch.viz._host_tree`).
    cuts: what to leave out.
    prefix: put before every node's name (several trees in one graph must not share names).
    root_name: how node 0's box is titled.
    highlight: an action of the root always drawn, its edge in blue (:func:`jaxsearch.viz.to_dot`).
  """

  def __init__(self, graph, t: Tree, cuts: Cuts, prefix: str = "", root_name: str = "root",
               highlight: Optional[int] = None):
    self.graph, self.t, self.cuts = graph, t, cuts
    self.prefix, self.root_name = prefix, root_name
    num_nodes = int(t.num_nodes)
    self.k = t.slots.visits.shape[1]
    self.bellman = t.slot_bounds is not None and bool(
        np.any(t.slot_bounds.bound[:num_nodes] > NO_BOUND / 2))
    self.has_upper = bool(np.any(t.bounds.upper[:num_nodes] < NO_UPPER / 2))
    self.num_outcomes = t.chance.prob.shape[1]
    self.highlight = None if highlight is None else self._slot_of(0, highlight)
    self.shown, self.shown_outcomes = self._plan()

  def node_label(self, n: int) -> str:
    t = self.t
    lines = [(self.root_name if n == 0 else f"node {n}") + f"   N={int(t.nodes.visits[n])}"]
    if t.nodes.terminal[n]:
      lines.append("terminal")
    else:
      lines.append(f"V={_fmt(float(t.nodes.value[n]))}")
      lines.append(f"raw={_fmt(float(t.nodes.raw_value[n]))}")
    bounds = []
    if self.bellman:
      bounds.append(f"≥{_fmt(float(t.bounds.bound[n]))}")
    if self.has_upper and t.bounds.upper[n] < NO_UPPER / 2:
      bounds.append(f"≤{_fmt(float(t.bounds.upper[n]))}")
    if bounds or (self.bellman and t.bounds.solved[n]):
      lines.append(" ".join(bounds) + (" solved" if t.bounds.solved[n] else ""))
    return "\n".join(lines)

  def _slot_of(self, n: int, action: int) -> Optional[int]:
    """The expanded legal slot of node ``n`` that holds ``action``, or ``None``."""
    for s in self._candidates(n):
      if int(self.t.slots.action[n, s]) == action and int(self.t.slots.chance[n, s]) >= 0:
        return s
    return None

  def add_node(self, n: int) -> str:
    name = f"{self.prefix}n{n}"
    style = {"shape": "box", "style": "rounded"}
    if n == 0:
      style.update(penwidth="2", style="rounded,bold")
    if self.t.nodes.terminal[n]:
      style.update(style="rounded,filled", fillcolor="grey90")
    self.graph.node(name, self.node_label(n), **style)
    return name

  def add_more(self, parent: str, tag: str, count: int, visits: int) -> None:
    """The dashed box under ``parent`` summarising ``count`` children left out."""
    if count <= 0:
      return
    name = f"{parent}_more_{tag}"
    self.graph.node(name, f"+{count} more\n{_visits(visits)}", shape="box",
                    style="rounded,dashed", color="grey50", fontcolor="grey40", fontsize="9",
                    margin="0.06,0.03", height="0.3")
    self.graph.edge(parent, name, style="dashed", color="grey50", arrowhead="none")

  def _prior(self, n: int) -> np.ndarray:
    """The estimator's prior over node ``n``'s slots (softmax of the legal slots' logits)."""
    legal = self.t.slots.legal[n]
    prior = np.zeros(self.k)
    if legal.any():
      logits = np.where(legal, self.t.slots.prior_logits[n], -np.inf)
      z = np.where(legal, np.exp(logits - logits[legal].max()), 0.0)
      prior = z / np.sum(z)
    return prior

  def _candidates(self, n: int) -> list:
    """Node ``n``'s legal active slots."""
    t = self.t
    return [s for s in range(min(self.k, int(t.nodes.num_active[n]))) if t.slots.legal[n, s]]

  def _top(self, items: list, visits: np.ndarray, keep: Optional[int] = None) -> list:
    """``items`` that pass ``min_visits``, the most visited first, at most ``max_children``;
    ``keep`` (an item) is among them whatever the cuts, in its place by visits."""
    shown = [i for i in items if visits[i] >= self.cuts.min_visits or i == keep]
    shown.sort(key=lambda i: (-int(visits[i]), i))
    if self.cuts.max_children is not None and len(shown) > self.cuts.max_children:
      cut = shown[:self.cuts.max_children]
      if keep in shown and keep not in cut:
        cut[-1] = keep
      shown = cut
    return shown

  def _outcomes(self, chance: int) -> list:
    """The expanded outcomes of chance record ``chance`` the per-node cuts keep."""
    children = self.t.chance.child[chance]
    return self._top([o for o in range(self.num_outcomes) if children[o] >= 0],
                     self.t.chance.visits[chance])

  def _plan(self) -> tuple:
    """Chooses what is drawn, level by level from the root: each node's most visited actions
    (``min_visits``, ``max_children``), then, over the whole level, the ``max_per_level``
    most visited of the children they lead to (an outcome's own visits under a chance
    action); among children visited as often, those ranked higher under their own node
    first, then those drawn further left.

    Returns:
      ``(shown, shown_outcomes)``: node -> its slots drawn, chance record -> its outcomes
      drawn, each the most visited first.
    """
    t, cuts = self.t, self.cuts
    shown, shown_outcomes = {}, {}
    level = [0]
    for _ in range(cuts.max_depth):
      # (visits, rank under its node, node, slot, outcome or None, child node or -1), in
      # drawing order.
      items = []
      for n in level:
        visits = t.slots.visits[n]
        mine = []
        keep = self.highlight if n == 0 else None
        for s in self._top(self._candidates(n), visits, keep):
          chance = int(t.slots.chance[n, s])
          if chance >= 0 and self.num_outcomes > 1:
            outcomes = self._outcomes(chance)
            mine += [(int(t.chance.visits[chance, o]), n, s, o, int(t.chance.child[chance, o]))
                     for o in outcomes]
            if not outcomes:  # the chance circle alone
              mine.append((int(visits[s]), n, s, None, -1))
          else:
            child = int(t.chance.child[chance, 0]) if chance >= 0 else -1
            mine.append((int(visits[s]), n, s, None, child))
        ranks = sorted(range(len(mine)), key=lambda i: (-mine[i][0], i))
        items += [(mine[i][0], rank) + mine[i][1:] for rank, i in enumerate(ranks)]
      # The most visited; among equals, first children before second ones, then the left.
      order = sorted(range(len(items)), key=lambda i: (-items[i][0], items[i][1], i))
      if cuts.max_per_level is not None:
        kept = order[:cuts.max_per_level]
        # The highlighted action's first child stays too (the root's level only).
        marked = [i for i in order if items[i][2] == 0 and items[i][3] == self.highlight]
        if marked and not set(marked) & set(kept):
          kept[-1] = marked[0]
        order = kept
      level = []
      for i in sorted(order):
        _, _, n, s, o, child = items[i]
        slots = shown.setdefault(n, [])
        if s not in slots:
          slots.append(s)
        if o is not None:
          shown_outcomes.setdefault(int(t.slots.chance[n, s]), []).append(o)
        if child >= 0:
          level.append(child)
    return shown, shown_outcomes

  def expand(self, n: int, depth: int) -> None:
    """Draws node ``n`` (``depth`` levels below the root)'s actions, the cuts allowing, and,
    recursively, their children."""
    t, cuts, source = self.t, self.cuts, f"{self.prefix}n{n}"
    visits = t.slots.visits[n]
    candidates = self._candidates(n)
    if depth >= cuts.max_depth:  # the depth cut: a summary line instead of the actions
      below = int(sum(visits[s] for s in candidates))
      if below:
        count = int(sum(visits[s] > 0 for s in candidates))
        self.graph.node(f"{source}_cut", f"{count} action{'s' * (count != 1)} below\n"
                        f"{_visits(below)}", shape="plaintext", fontcolor="grey40",
                        fontsize="9", height="0.3")
        self.graph.edge(source, f"{source}_cut", style="dotted", color="grey50",
                        arrowhead="none")
      return
    shown = self.shown.get(n, [])
    hidden = [s for s in candidates
              if s not in shown and (visits[s] > 0 or cuts.min_visits == 0)]
    prior = self._prior(n)
    for s in shown:
      self._action(n, s, depth, visits, prior)
    self.add_more(source, "a", len(hidden), int(sum(visits[s] for s in hidden)))

  def _action(self, n: int, s: int, depth: int, visits: np.ndarray, prior: np.ndarray) -> None:
    """Slot ``s`` of node ``n``: its edge, then its child or chance outcomes."""
    t, source = self.t, f"{self.prefix}n{n}"
    action = int(t.slots.action[n, s])
    label = (f"{_name(action, self.cuts.action_names)}  N={int(visits[s])}\n"
             f"Q={_fmt(float(t.slots.value[n, s]))} P={prior[s]:.2f}")
    if self.bellman and t.slot_bounds.bound[n, s] > NO_BOUND / 2:
      label += f"\n≥{_fmt(float(t.slot_bounds.bound[n, s]))}"
    marked = {"color": "blue", "fontcolor": "blue"} if n == 0 and s == self.highlight else {}
    chance = int(t.slots.chance[n, s])
    if chance < 0:  # not expanded yet: a stub carries the action's statistics
      self._stub(source, s, label, color="grey40")
      return
    if self.num_outcomes > 1:
      self._chance(source, chance, depth, label, _pen(visits[s], visits), **marked)
      return
    child = int(t.chance.child[chance][0])
    reward = float(t.chance.reward[chance, 0])
    if reward != 0.0:
      label += f" r={_fmt(reward)}"
    if child < 0:
      self._stub(source, s, label, **marked)
      return
    self.graph.edge(source, self.add_node(child), label=label, penwidth=_pen(visits[s], visits),
                    **marked)
    self.expand(child, depth + 1)

  def _stub(self, source: str, s: int, label: str, **edge_style) -> None:
    stub = f"{source}_s{s}"
    self.graph.node(stub, "", shape="point", width="0.08")
    self.graph.edge(source, stub, label=label, **edge_style)

  def _chance(self, source: str, chance: int, depth: int, label: str, penwidth: str,
              **edge_style) -> None:
    """A chance record: a small circle, then its outcomes (the cuts allowing)."""
    t, cuts = self.t, self.cuts
    children = t.chance.child[chance]
    chance_name = f"{self.prefix}c{chance}"
    self.graph.node(chance_name, "", shape="circle", width="0.18", style="filled",
                    fillcolor="lightyellow")
    self.graph.edge(source, chance_name, label=label, penwidth=penwidth, **edge_style)
    outcome_visits = t.chance.visits[chance]
    outcomes = self.shown_outcomes.get(chance, [])
    hidden = [o for o in range(self.num_outcomes) if children[o] >= 0 and o not in outcomes
              and (outcome_visits[o] > 0 or cuts.min_visits == 0)]
    for o in outcomes:
      child = int(children[o])
      oname = f"o={o}" if cuts.outcome_names is None else _name(o, cuts.outcome_names)
      olabel = (f"{oname} p={float(t.chance.prob[chance, o]):.2f}\n"
                f"N={int(outcome_visits[o])}")
      reward = float(t.chance.reward[chance, o])
      if reward != 0.0:
        olabel += f" r={_fmt(reward)}"
      self.graph.edge(chance_name, self.add_node(child), label=olabel, style="dashed")
      self.expand(child, depth + 1)
    self.add_more(chance_name, "o", len(hidden), int(sum(outcome_visits[o] for o in hidden)))


def _visits(count: int) -> str:
  return f"{count} visit" + "s" * (count != 1)


def _pen(v: int, visits: np.ndarray) -> str:
  """Edge width from 1 to 4 with the action's share of its node's visits."""
  total = max(int(np.sum(visits)), 1)
  return f"{1.0 + 3.0 * float(v) / total:.2f}"
