"""Search trees you can look at: a :class:`~jaxsearch.tree.Tree` drawn with Graphviz.

    out = jax.jit(search)(params, key, states)
    jaxsearch.viz.draw(out.tree, "tree.svg", index=0, max_depth=2)   # or .png / .dot
    graph = jaxsearch.viz.to_dot(out.tree)                            # a graphviz.Digraph

What is drawn, for tree ``index`` of the batch:

* **decision nodes** (boxes): visits ``N``, backed-up value ``V`` (mover's view), the
  estimator's raw value, and where the search keeps them the achievable bound ``≥`` and the
  optimistic bound ``≤`` (Bellman/AVTS trees of games with bounds), ``solved`` once exact; the
  root is bold, terminal states grey;
* **actions** (edges): the action (its name if ``action_names`` is given), visits, Q and the
  estimator's prior probability (softmax of the slot's logits over the node's legal slots);
* **chance outcomes** (games with ``O > 1`` outcomes per action: a small circle per expanded
  action, then one edge per outcome with its probability, visits and reward); with one
  outcome the action's edge goes straight to the child and shows a non-zero reward.

Large trees stay readable through the cuts: ``max_depth`` (levels below the root),
``min_visits`` (edges with fewer visits are left out) and ``max_children`` (the most visited
actions of each node); what a cut leaves out is summarised as one grey "+k more" box.

Rendering ``.svg``/``.png``/``.pdf`` needs Graphviz's ``dot`` program; without it :func:`draw`
writes the ``.dot`` source next to the requested file and prints how to render it.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import jax
import numpy as np

from jaxsearch.tree import NO_BOUND, NO_UPPER, Tree

ActionNames = Union[Sequence[str], Callable[[int], str], None]
SOURCE_SUFFIXES = (".dot", ".gv")
RENDERED_SUFFIXES = (".svg", ".png", ".pdf")


def _graphviz():
  try:
    import graphviz
  except ImportError as error:  # a core dependency; only a broken install lands here
    raise ImportError("drawing trees needs the `graphviz` Python package: "
                      "pip install graphviz") from error
  return graphviz


def _name(action: int, action_names: ActionNames) -> str:
  if action_names is None:
    return str(action)
  if callable(action_names):
    return str(action_names(action))
  return str(action_names[action]) if 0 <= action < len(action_names) else str(action)


def _fmt(x: float) -> str:
  return f"{x:+.3f}" if abs(x) < 1000 else f"{x:+.4g}"


def to_dot(tree: Tree, index: int = 0, *, max_depth: int = 3, min_visits: int = 1,
           max_children: Optional[int] = 8, action_names: ActionNames = None,
           outcome_names: ActionNames = None, title: Optional[str] = None,
           left_to_right: bool = False):
  """One tree of the batch as a ``graphviz.Digraph`` (nothing is rendered).

  Args:
    tree: a batch of trees (leaves ``[B, ...]``), e.g. ``PolicyOutput.tree``.
    index: which tree of the batch, ``0 <= index < B``.
    max_depth: levels of decision nodes drawn below the root (0: the root alone); a node at
      the cut shows how many of its actions were visited instead of drawing them.
    min_visits: actions (and chance outcomes) visited fewer times are left out.
    max_children: at most this many actions per node, the most visited (``None``: all).
    action_names: a sequence or ``action -> str`` for edge labels (default: the action id).
    outcome_names: the same for chance outcomes (default: ``o=`` the outcome index).
    title: a label for the whole drawing.
    left_to_right: lay the tree out from left to right (deep trees fit a page better) instead
      of top to bottom.

  Returns:
    ``graphviz.Digraph``; its ``.source`` is the DOT text.

  Raises:
    ValueError: ``index`` out of range, an empty tree, or negative cuts.
  """
  graphviz = _graphviz()
  host = _host_tree(tree, index, max_depth, min_visits, max_children)
  graph = graphviz.Digraph("search_tree")
  graph.attr(rankdir="LR" if left_to_right else "TB", fontname="Helvetica", fontsize="11")
  graph.attr("node", fontname="Helvetica", fontsize="10")
  graph.attr("edge", fontname="Helvetica", fontsize="9")
  if title:
    graph.attr(label=title, labelloc="t")
  writer = _DotWriter(graph, host, _Cuts(max_depth=max_depth, min_visits=min_visits,
                                         max_children=max_children,
                                         action_names=action_names,
                                         outcome_names=outcome_names))
  writer.add_node(0)
  writer.expand(0)
  return graph


def _host_tree(tree: Tree, index: int, max_depth: int, min_visits: int,
               max_children: Optional[int]) -> Tree:
  """Tree ``index`` of the batch as numpy arrays, without the game states (not drawn), after
  checking :func:`to_dot`'s arguments."""
  batch = int(np.shape(tree.num_nodes)[0])
  if not 0 <= index < batch:
    raise ValueError(f"index {index} is out of range for a batch of {batch} trees")
  if max_depth < 0 or min_visits < 0 or (max_children is not None and max_children < 1):
    raise ValueError(f"cuts must be max_depth >= 0, min_visits >= 0, max_children >= 1 or "
                     f"None; got {max_depth}, {min_visits}, {max_children}")
  host = jax.tree.map(lambda x: np.asarray(x[index]),
                      tree.replace(nodes=tree.nodes.replace(state=None)))
  if int(host.num_nodes) == 0:
    raise ValueError(f"tree {index} is empty (num_nodes == 0): nothing to draw")
  return host


@dataclasses.dataclass(frozen=True)
class _Cuts:
  """What :func:`to_dot` leaves out, and how it names actions and outcomes (see there)."""

  max_depth: int
  min_visits: int
  max_children: Optional[int]
  action_names: ActionNames
  outcome_names: ActionNames


class _DotWriter:
  """Adds one host tree's nodes and edges to ``graph``, depth first from a node.

  Args:
    graph: the ``graphviz.Digraph`` written to.
    t: one tree as numpy arrays (:func:`_host_tree`).
    cuts: what to leave out.
  """

  def __init__(self, graph, t: Tree, cuts: _Cuts):
    self.graph, self.t, self.cuts = graph, t, cuts
    num_nodes = int(t.num_nodes)
    self.k = t.slots.visits.shape[1]
    self.bellman = t.slot_bounds is not None and bool(
        np.any(t.slot_bounds.bound[:num_nodes] > NO_BOUND / 2))
    self.has_upper = bool(np.any(t.bounds.upper[:num_nodes] < NO_UPPER / 2))
    self.num_outcomes = t.chance.prob.shape[1]

  def node_label(self, n: int) -> str:
    t = self.t
    lines = [("root" if n == 0 else f"node {n}") + f"   N={int(t.nodes.visits[n])}"]
    if t.nodes.terminal[n]:
      lines.append("terminal")
    else:
      lines.append(f"V={_fmt(float(t.nodes.value[n]))}  "
                   f"raw={_fmt(float(t.nodes.raw_value[n]))}")
    bounds = []
    if self.bellman:
      bounds.append(f"≥{_fmt(float(t.bounds.bound[n]))}")
    if self.has_upper and t.bounds.upper[n] < NO_UPPER / 2:
      bounds.append(f"≤{_fmt(float(t.bounds.upper[n]))}")
    if bounds or (self.bellman and t.bounds.solved[n]):
      lines.append(" ".join(bounds) + (" solved" if t.bounds.solved[n] else ""))
    return "\n".join(lines)

  def add_node(self, n: int) -> str:
    name = f"n{n}"
    style = {"shape": "box", "style": "rounded"}
    if n == 0:
      style.update(penwidth="2", style="rounded,bold")
    if self.t.nodes.terminal[n]:
      style.update(style="rounded,filled", fillcolor="grey90")
    self.graph.node(name, self.node_label(n), **style)
    return name

  def add_more(self, parent: str, tag: str, count: int, visits: int) -> None:
    if count <= 0 or (visits <= 0 and tag == "a"):  # unvisited actions are not worth a box
      return
    name = f"{parent}_more_{tag}"
    self.graph.node(name, f"+{count} more ({_visits(visits)})", shape="box", style="dashed",
                    color="grey50", fontcolor="grey40")
    self.graph.edge(parent, name, style="dashed", color="grey50")

  def expand(self, n: int) -> None:
    """Draws node ``n``'s actions (the cuts allowing) and, recursively, their children."""
    t, cuts, source = self.t, self.cuts, f"n{n}"
    depth = int(t.nodes.depth[n])
    legal = t.slots.legal[n].copy()
    active = np.arange(self.k) < int(t.nodes.num_active[n])
    logits = np.where(legal, t.slots.prior_logits[n], -np.inf)
    prior = np.zeros(self.k)
    if legal.any():
      z = np.exp(logits - logits[legal].max())
      prior = np.where(legal, z, 0.0) / np.sum(np.where(legal, z, 0.0))
    visits = t.slots.visits[n]
    candidates = [s for s in range(self.k) if legal[s] and active[s]]
    if depth >= cuts.max_depth:  # the depth cut: a summary line instead of the actions
      below = int(sum(visits[s] for s in candidates))
      if below:
        count = int(sum(visits[s] > 0 for s in candidates))
        self.graph.node(f"{source}_cut", f"{count} action{'s' * (count != 1)} below "
                        f"({_visits(below)})", shape="plaintext", fontcolor="grey40")
        self.graph.edge(source, f"{source}_cut", style="dotted", color="grey50")
      return
    shown = [s for s in candidates if visits[s] >= cuts.min_visits]
    shown.sort(key=lambda s: (-int(visits[s]), s))
    if cuts.max_children is not None:
      shown = shown[:cuts.max_children]
    hidden = [s for s in candidates if s not in shown]
    self.add_more(source, "a", len(hidden), int(sum(visits[s] for s in hidden)))
    for s in shown:
      self._action(n, s, visits, prior)

  def _action(self, n: int, s: int, visits: np.ndarray, prior: np.ndarray) -> None:
    """Slot ``s`` of node ``n``: its edge, then its child or chance outcomes."""
    t, source = self.t, f"n{n}"
    action = int(t.slots.action[n, s])
    label = (f"{_name(action, self.cuts.action_names)}\nN={int(visits[s])} "
             f"Q={_fmt(float(t.slots.value[n, s]))} P={prior[s]:.2f}")
    if self.bellman and t.slot_bounds.bound[n, s] > NO_BOUND / 2:
      label += f"\n≥{_fmt(float(t.slot_bounds.bound[n, s]))}"
    chance = int(t.slots.chance[n, s])
    if chance < 0:  # not expanded yet: a stub carries the action's statistics
      self._stub(source, s, label, color="grey40")
      return
    if self.num_outcomes > 1:
      self._chance(source, chance, label, _pen(visits[s], visits))
      return
    child = int(t.chance.child[chance][0])
    reward = float(t.chance.reward[chance, 0])
    if reward != 0.0:
      label += f" r={_fmt(reward)}"
    if child < 0:
      self._stub(source, s, label)
      return
    self.graph.edge(source, self.add_node(child), label=label, penwidth=_pen(visits[s], visits))
    self.expand(child)

  def _stub(self, source: str, s: int, label: str, **edge_style) -> None:
    stub = f"{source}_s{s}"
    self.graph.node(stub, "", shape="point", width="0.08")
    self.graph.edge(source, stub, label=label, **edge_style)

  def _chance(self, source: str, chance: int, label: str, penwidth: str) -> None:
    """A chance record: a small circle, then its outcomes (the cuts allowing)."""
    t, cuts = self.t, self.cuts
    children = t.chance.child[chance]
    chance_name = f"c{chance}"
    self.graph.node(chance_name, "", shape="circle", width="0.18", style="filled",
                    fillcolor="lightyellow")
    self.graph.edge(source, chance_name, label=label, penwidth=penwidth)
    outcome_visits = t.chance.visits[chance]
    outcomes = [o for o in range(self.num_outcomes)
                if children[o] >= 0 and outcome_visits[o] >= cuts.min_visits]
    outcomes.sort(key=lambda o: (-int(outcome_visits[o]), o))
    if cuts.max_children is not None:
      outcomes = outcomes[:cuts.max_children]
    hidden = [o for o in range(self.num_outcomes) if children[o] >= 0 and o not in outcomes]
    self.add_more(chance_name, "o", len(hidden), int(sum(outcome_visits[o] for o in hidden)))
    for o in outcomes:
      child = int(children[o])
      oname = f"o={o}" if cuts.outcome_names is None else _name(o, cuts.outcome_names)
      olabel = (f"{oname} p={float(t.chance.prob[chance, o]):.2f}\n"
                f"N={int(outcome_visits[o])}")
      reward = float(t.chance.reward[chance, o])
      if reward != 0.0:
        olabel += f" r={_fmt(reward)}"
      self.graph.edge(chance_name, self.add_node(child), label=olabel, style="dashed")
      self.expand(child)


def _visits(count: int) -> str:
  return f"{count} visit" + "s" * (count != 1)


def _pen(v: int, visits: np.ndarray) -> str:
  """Edge width from 1 to 4 with the action's share of its node's visits."""
  total = max(int(np.sum(visits)), 1)
  return f"{1.0 + 3.0 * float(v) / total:.2f}"


def dot_available() -> bool:
  """Whether Graphviz's ``dot`` program can be run (it renders ``.svg``/``.png``/``.pdf``)."""
  graphviz = _graphviz()
  try:
    graphviz.version()
  except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError):
    return False
  return True


def draw(tree: Tree, path: Union[str, Path], index: int = 0, *, quiet: bool = False,
         **cuts) -> Path:
  """Draws tree ``index`` of the batch to ``path``; the format follows the suffix.

  Args:
    tree: a batch of trees (e.g. ``PolicyOutput.tree``).
    path: ``*.dot``/``*.gv`` (the DOT source), ``*.svg``, ``*.png`` or ``*.pdf`` (rendered by
      Graphviz's ``dot`` program).
    index: which tree of the batch.
    quiet: do not print the message when ``dot`` is missing.
    **cuts: :func:`to_dot`'s ``max_depth``, ``min_visits``, ``max_children``,
      ``action_names``, ``outcome_names``, ``title``, ``left_to_right``.

  Returns:
    The file written: ``path``, or ``path`` with the suffix ``.dot`` when ``dot`` is missing
    (a message on stderr then says so and how to render it later).

  Raises:
    ValueError: an unknown suffix, or :func:`to_dot`'s errors.
  """
  graphviz = _graphviz()
  path = Path(path)
  suffix = path.suffix.lower()
  if suffix not in SOURCE_SUFFIXES + RENDERED_SUFFIXES:
    raise ValueError(f"cannot draw a tree to {path}: the suffix must be one of "
                     f"{', '.join(SOURCE_SUFFIXES + RENDERED_SUFFIXES)}")
  graph = to_dot(tree, index, **cuts)
  if path.parent and not path.parent.exists():
    path.parent.mkdir(parents=True, exist_ok=True)
  if suffix in SOURCE_SUFFIXES:
    path.write_text(graph.source)
    return path
  try:
    data = graph.pipe(format=suffix[1:])
  except graphviz.ExecutableNotFound:
    source = path.with_suffix(".dot")
    source.write_text(graph.source)
    if not quiet:
      print(f"Graphviz's `dot` program was not found, so {path} was not rendered; the tree "
            f"is in {source}. Install Graphviz (e.g. `apt-get install graphviz` or `brew "
            f"install graphviz`) and run `dot -T{suffix[1:]} {source} -o {path}`.",
            file=sys.stderr)
    return source
  path.write_bytes(data)
  return path
