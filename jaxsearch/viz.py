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
``min_visits`` (edges with fewer visits are left out), ``max_children`` (the most visited
actions of each node, 6 by default) and ``max_per_level`` (the most visited children over a
whole level, 12 by default, so a drawing two levels deep fits a screen). What the
cuts leave out of a node is summarised in one dashed grey box under it, ``+k more`` with the
visits those children had; a node at the depth cut says how many of its actions were visited
below it.

Several trees can hang under one box (:func:`to_dot_forest`, :func:`draw_forest`): the
sub-problems after a fixed first move, e.g. the feedbacks of a guessing game's first guess.

Rendering ``.svg``/``.png``/``.pdf`` needs Graphviz's ``dot`` program; without it :func:`draw`
writes the ``.dot`` source next to the requested file and prints how to render it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Optional, Sequence, Union

import jax
import numpy as np

from jaxsearch.tree import Tree
from jaxsearch.viz_dot import ActionNames, Cuts, DotWriter

SOURCE_SUFFIXES = (".dot", ".gv")
RENDERED_SUFFIXES = (".svg", ".png", ".pdf")


def _graphviz():
  try:
    import graphviz
  except ImportError as error:  # a core dependency; only a broken install lands here
    raise ImportError("drawing trees needs the `graphviz` Python package: "
                      "pip install graphviz") from error
  return graphviz


def to_dot(tree: Tree, index: int = 0, *, max_depth: int = 3, min_visits: int = 1,
           max_children: Optional[int] = 6, action_names: ActionNames = None,
           outcome_names: ActionNames = None, title: Optional[str] = None,
           left_to_right: bool = False, max_per_level: Optional[int] = 12,
           highlight: Optional[int] = None):
  """One tree of the batch as a ``graphviz.Digraph`` (nothing is rendered).

  Args:
    tree: a batch of trees (leaves ``[B, ...]``), e.g. ``PolicyOutput.tree``.
    index: which tree of the batch, ``0 <= index < B``.
    max_depth: levels of decision nodes drawn below the root (0: the root alone); a node at
      the cut shows how many of its actions were visited instead of drawing them.
    min_visits: actions (and chance outcomes) visited fewer times are left out.
    max_children: at most this many actions per node (and outcomes per chance action), the
      most visited (``None``: all).
    action_names: a sequence or ``action -> str`` for edge labels (default: the action id).
    outcome_names: the same for chance outcomes (default: ``o=`` the outcome index).
    title: a label for the whole drawing.
    left_to_right: lay the tree out from left to right (deep trees fit a page better) instead
      of top to bottom.
    max_per_level: at most this many children drawn per level of the tree, the most visited
      of those the other cuts leave (``None``: no limit). The drawing's width (its height with
      ``left_to_right``) grows with this number: 12 keeps a tree two levels deep about one
      screen wide.
    highlight: an action of the root drawn whatever the cuts, its edge in blue (e.g. the
      one a policy read off the tree plays, which need not be the most visited); ``None``:
      none. An action the root has not expanded cannot be drawn.

  What the cuts leave out of a node is summarised in one dashed box under it: ``+k more``
  and the visits of those ``k`` children (actions, or the outcomes of a chance action).
  Unvisited children are counted only with ``min_visits=0``.

  Returns:
    ``graphviz.Digraph``; its ``.source`` is the DOT text.

  Raises:
    ValueError: ``index`` out of range, an empty tree, or cuts out of range.
  """
  host = _host_tree(tree, index, max_depth, min_visits, max_children, max_per_level)
  graph = _digraph(title, left_to_right)
  writer = DotWriter(graph, host, Cuts(max_depth=max_depth, min_visits=min_visits,
                                       max_children=max_children,
                                       action_names=action_names,
                                       outcome_names=outcome_names,
                                       max_per_level=max_per_level), highlight=highlight)
  writer.add_node(0)
  writer.expand(0, 0)
  return graph


def to_dot_forest(parts: Sequence[tuple], *, root_label: str, title: Optional[str] = None,
                  max_depth: int = 3, min_visits: int = 1, max_children: Optional[int] = 6,
                  action_names: ActionNames = None, outcome_names: ActionNames = None,
                  left_to_right: bool = False,
                  max_per_level: Optional[int] = 12):
  """Several trees under one box, as a ``graphviz.Digraph``: the sub-problems after a fixed
  first move (a guessing game's first guess and one tree per feedback), drawn as one tree.

  Args:
    parts: ``(label, tree, index)`` per tree drawn: tree ``index`` of the batch ``tree``,
      hung under the box by an edge labelled ``label`` (e.g. the feedback that leads to it).
    root_label: the common box's text (e.g. the first guess).
    max_depth: levels drawn below each tree's root (0: the roots alone).
    max_per_level: at most this many children per level of the whole drawing, shared out
      evenly between the trees (at least one each; ``None``: no limit), so that the drawing
      is about as wide as one tree's.
    The others are :func:`to_dot`'s.

  Returns:
    ``graphviz.Digraph``; the trees' nodes are named ``t<i>_n<node>``.

  Raises:
    ValueError: no ``parts``, or :func:`to_dot`'s errors for any of them.
  """
  if not parts:
    raise ValueError("to_dot_forest: no trees to draw")
  per_tree = (None if max_per_level is None else
              max(1, -(-max_per_level // len(parts))))
  hosts = [(label, _host_tree(tree, index, max_depth, min_visits, max_children, per_tree))
           for label, tree, index in parts]
  graph = _digraph(title, left_to_right)
  graph.node("top", root_label, shape="box", style="rounded,bold", penwidth="2")
  cuts = Cuts(max_depth=max_depth, min_visits=min_visits, max_children=max_children,
              action_names=action_names, outcome_names=outcome_names,
              max_per_level=per_tree)
  for i, (label, host) in enumerate(hosts):
    writer = DotWriter(graph, host, cuts, prefix=f"t{i}_", root_name="sub-root")
    graph.edge("top", writer.add_node(0), label=label)
    writer.expand(0, 0)
  return graph


def _digraph(title: Optional[str], left_to_right: bool):
  """An empty ``graphviz.Digraph`` in the drawings' style."""
  graphviz = _graphviz()
  graph = graphviz.Digraph("search_tree")
  graph.attr(rankdir="LR" if left_to_right else "TB", fontname="Helvetica", fontsize="11")
  graph.attr("node", fontname="Helvetica", fontsize="10")
  graph.attr("edge", fontname="Helvetica", fontsize="9")
  if title:
    graph.attr(label=title, labelloc="t")
  return graph


def _host_tree(tree: Tree, index: int, max_depth: int, min_visits: int,
               max_children: Optional[int], max_per_level: Optional[int]) -> Tree:
  """Tree ``index`` of the batch as numpy arrays, without the game states (not drawn), after
  checking :func:`to_dot`'s arguments."""
  batch = int(np.shape(tree.num_nodes)[0])
  if not 0 <= index < batch:
    raise ValueError(f"index {index} is out of range for a batch of {batch} trees")
  if (max_depth < 0 or min_visits < 0 or (max_children is not None and max_children < 1)
      or (max_per_level is not None and max_per_level < 1)):
    raise ValueError(f"cuts must be max_depth >= 0, min_visits >= 0, max_children >= 1 or "
                     f"None, max_per_level >= 1 or None; got {max_depth}, {min_visits}, "
                     f"{max_children}, {max_per_level}")
  # Every slot field as an array (a search's tree may leave the constant ones out).
  slots = tree.slots.replace(action=tree.slots.actions(), action_value=tree.slots.action_values())
  host = jax.tree.map(lambda x: np.asarray(x[index]),
                      tree.replace(nodes=tree.nodes.replace(state=None), slots=slots))
  if int(host.num_nodes) == 0:
    raise ValueError(f"tree {index} is empty (num_nodes == 0): nothing to draw")
  return host


def dot_available() -> bool:
  """Whether Graphviz's ``dot`` program can be run (it renders ``.svg``/``.png``/``.pdf``)."""
  graphviz = _graphviz()
  if shutil.which("dot") is None:
    return False
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
      ``max_per_level``, ``action_names``, ``outcome_names``, ``title``, ``left_to_right``,
      ``highlight``.

  Returns:
    The file written: ``path``, or ``path`` with the suffix ``.dot`` when ``dot`` is missing
    (a message on stderr then says so and how to render it later).

  Raises:
    ValueError: an unknown suffix, or :func:`to_dot`'s errors.
  """
  path = _checked_path(path)
  return _write(to_dot(tree, index, **cuts), path, quiet)


def draw_forest(parts: Sequence[tuple], path: Union[str, Path], *, root_label: str,
                quiet: bool = False, **cuts) -> Path:
  """Draws several trees under one box (:func:`to_dot_forest`) to ``path``, as :func:`draw`
  draws one: same formats, same fallback without ``dot``, same return value and errors."""
  path = _checked_path(path)
  return _write(to_dot_forest(parts, root_label=root_label, **cuts), path, quiet)


def _checked_path(path: Union[str, Path]) -> Path:
  """``path`` as a :class:`Path`, after checking its suffix (before any drawing work)."""
  path = Path(path)
  if path.suffix.lower() not in SOURCE_SUFFIXES + RENDERED_SUFFIXES:
    raise ValueError(f"cannot draw a tree to {path}: the suffix must be one of "
                     f"{', '.join(SOURCE_SUFFIXES + RENDERED_SUFFIXES)}")
  return path


def _write(graph, path: Path, quiet: bool) -> Path:
  """Writes ``graph`` to ``path`` (:func:`draw`'s formats and fallback); returns the file."""
  graphviz = _graphviz()
  suffix = path.suffix.lower()
  if path.parent and not path.parent.exists():
    path.parent.mkdir(parents=True, exist_ok=True)
  if suffix in SOURCE_SUFFIXES:
    path.write_text(graph.source)
    return path
  try:
    if shutil.which("dot") is None:  # as graphviz would find it: on the PATH
      raise graphviz.ExecutableNotFound(["dot"])
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
