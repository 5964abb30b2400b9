"""Tree drawings (jaxsearch.viz): what is drawn, the cuts, the files, and a missing `dot`.

Most tests use a small hand-built tree (no compilation); two draw real tic-tac-toe searches
(one of them two levels deep, checked against the default cuts and, with Graphviz, for its
size in pixels) and the CLI tests share ``tests/test_cli.py``'s play setting (tic-tac-toe,
UCT, 50 simulations).
"""

import builtins
import io
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsearch as js
from jaxsearch import cli, viz
from jaxsearch import tree as tree_lib

from jaxsearch.games import tictactoe as t3


def _hand_tree():
  """One tree (B = 1): a root with three legal actions, two expanded, O = 2 outcomes.

  action 0: 7 visits, chance record 0, outcomes p = (0.25, 0.75) -> nodes 1 (terminal,
  reward +1) and 2; action 1: 2 visits, chance record 1, outcome 0 -> node 3; action 2:
  unvisited. Bellman fields with bounds at the root.
  """
  t = tree_lib.allocate(1, 6, 3, 2, jnp.zeros(()), num_buckets=1, slot_bounds=True)
  i32 = jnp.int32
  return t.replace(
      num_nodes=jnp.array([4], i32), num_chance=jnp.array([2], i32),
      nodes=t.nodes.replace(
          visits=jnp.array([[10, 2, 5, 2, 0, 0]], i32),
          value=jnp.array([[0.5, 0.0, -0.4, 0.2, 0, 0]], jnp.float32),
          raw_value=jnp.array([[0.3, 0.0, -0.1, 0.25, 0, 0]], jnp.float32),
          parent=jnp.array([[-1, 0, 0, 0, -1, -1]], i32),
          depth=jnp.array([[0, 1, 1, 1, 0, 0]], i32),
          terminal=jnp.array([[False, True, False, False, False, False]])),
      bounds=t.bounds.replace(
          bound=jnp.array([[0.2, 0, 0, 0, 0, 0]], jnp.float32),
          upper=jnp.full((1, 6), tree_lib.NO_UPPER, jnp.float32).at[0, 0].set(0.9)),
      slots=t.slots.replace(
          legal=jnp.zeros((1, 6, 3), bool).at[0, 0].set(True).at[0, 2, :2].set(True),
          visits=jnp.zeros((1, 6, 3), i32).at[0, 0].set(jnp.array([7, 2, 0])).at[
              0, 2, 0].set(4),
          value=jnp.zeros((1, 6, 3), jnp.float32).at[0, 0].set(jnp.array([0.6, 0.1, 0.0])),
          prior_logits=jnp.zeros((1, 6, 3), jnp.float32).at[0, 0].set(
              jnp.log(jnp.array([0.5, 0.25, 0.25]))),
          chance=jnp.full((1, 6, 3), -1, i32).at[0, 0, :2].set(jnp.array([0, 1]))),
      slot_bounds=t.slot_bounds.replace(
          bound=jnp.full((1, 6, 3), tree_lib.NO_BOUND, jnp.float32).at[0, 0, :2].set(
              jnp.array([0.2, 0.1]))),
      chance=t.chance.replace(
          node=jnp.array([[0, 0, -1, -1, -1, -1]], i32),
          prob=jnp.zeros((1, 6, 2), jnp.float32).at[0, 0].set(jnp.array([0.25, 0.75])).at[
              0, 1].set(jnp.array([0.5, 0.5])),
          reward=jnp.zeros((1, 6, 2), jnp.float32).at[0, 0, 0].set(1.0),
          child=jnp.full((1, 6, 2), -1, i32).at[0, 0].set(jnp.array([1, 2])).at[
              0, 1, 0].set(3),
          visits=jnp.zeros((1, 6, 2), i32).at[0, 0].set(jnp.array([2, 5])).at[0, 1, 0].set(2)),
  )


HAND = _hand_tree()


def test_everything_in_the_tree_is_drawn():
  source = viz.to_dot(HAND, action_names=["left", "right", "up"],
                      outcome_names=lambda o: f"out{o}", title="hand").source
  # Nodes: root with its statistics and both bounds; the three children; the terminal one grey.
  assert "root   N=10\nV=+0.500\nraw=+0.300" in source
  assert "≥+0.200 ≤+0.900" in source
  for n in (1, 2, 3):
    assert f"\tn{n} [label=\"node {n}" in source
  assert "fillcolor=grey90" in source and "terminal" in source
  # Actions: names, visits, Q, prior (softmax of the logits over the legal slots), bound.
  assert "left  N=7\nQ=+0.600 P=0.50\n≥+0.200" in source
  assert "right  N=2\nQ=+0.100 P=0.25" in source
  assert "up  N" not in source and "_more_" not in source  # unvisited: not drawn, not counted
  # Chance: one circle per expanded action, outcome edges with p, visits and reward.
  assert source.count("shape=circle") == 2
  assert "out0 p=0.25\nN=2 r=+1.000" in source and "out1 p=0.75\nN=5" in source
  assert "label=hand" in source


def _label(source, name):
  """The label of DOT node ``name`` in ``source`` (``None``: not drawn)."""
  match = re.search(rf'^\t{name} \[label="([^"]*)"', source, re.M)
  return match and match.group(1)


def _boxes(source):
  """The decision nodes drawn (their ids)."""
  return {int(n) for n in re.findall(r'^\tn(\d+) \[label="(?:root|node \d+)', source, re.M)}


def test_cuts():
  shallow = viz.to_dot(HAND, max_depth=0).source
  assert _boxes(shallow) == {0} and _label(shallow, "n0_cut") == "2 actions below\n9 visits"
  # One action (the most visited) and one outcome of it: action 1 and outcome 0 summarised;
  # the unvisited action 2 is not counted.
  one = viz.to_dot(HAND, max_children=1).source
  assert _boxes(one) == {0, 2}
  assert _label(one, "n0_more_a") == _label(one, "c0_more_o") == "+1 more\n2 visits"
  # min_visits = 3 hides action 1 (2 visits) and outcome 0 (2 visits).
  busy = viz.to_dot(HAND, min_visits=3).source
  assert _boxes(busy) == {0, 2}
  assert _label(busy, "n0_more_a") == _label(busy, "c0_more_o") == "+1 more\n2 visits"
  # min_visits = 0: the unvisited action as a stub; cut by max_children, it is counted.
  everything = viz.to_dot(HAND, min_visits=0).source
  assert "n0_s2" in everything and "_more_" not in everything
  assert _label(viz.to_dot(HAND, min_visits=0, max_children=2).source,
                "n0_more_a") == "+1 more\n0 visits"
  # Node 2 (depth 1) has a visited action: drawn at max_depth = 1 as a summary line.
  assert _label(viz.to_dot(HAND, max_depth=1).source, "n2_cut") == "1 action below\n4 visits"


def test_max_per_level_keeps_the_most_visited_children_of_the_level():
  # Level 1 holds outcome 1 of action 0 (node 2, 5 visits), outcome 0 of action 0 (node 1,
  # 2) and outcome 0 of action 1 (node 3, 2): one per level keeps node 2 alone.
  source = viz.to_dot(HAND, max_per_level=1).source
  assert _boxes(source) == {0, 2} and "c1" not in source
  assert _label(source, "n0_more_a") == _label(source, "c0_more_o") == "+1 more\n2 visits"
  # Two per level: the tie between nodes 1 and 3 goes to the one drawn first (action 0's).
  assert _boxes(viz.to_dot(HAND, max_per_level=2).source) == {0, 1, 2}
  assert _boxes(viz.to_dot(HAND, max_per_level=None).source) == {0, 1, 2, 3}


def test_highlight_draws_a_root_action_the_cuts_would_leave_out():
  # Action 1 ("right", 2 visits) is cut by max_children=1 and by max_per_level=1; marked,
  # it is drawn in blue with its child (node 3), in place of the least visited one kept.
  source = viz.to_dot(HAND, max_children=1, highlight=1).source
  assert re.search(r'\tn0 -> c1 \[label="1  N=2\n[^"]*" color=blue fontcolor=blue', source)
  assert 'n0 -> c0' not in source and _boxes(source) == {0, 3}
  source = viz.to_dot(HAND, max_per_level=1, highlight=1).source
  assert _boxes(source) == {0, 3} and "color=blue" in source
  # The most visited action marked: drawn as without the mark, in blue.
  marked = viz.to_dot(HAND, highlight=0).source
  assert _boxes(marked) == _boxes(viz.to_dot(HAND).source) == {0, 1, 2, 3}
  assert marked.count(" color=blue") == 1 and 'n0 -> c0 [label="0  N=7' in marked
  # An action the root has not expanded (2) cannot be drawn: nothing is marked.
  assert "blue" not in viz.to_dot(HAND, highlight=2).source


def test_a_forest_hangs_trees_under_one_box(tmp_path):
  parts = [("first\n3 secrets", HAND, 0), ("second", HAND, 0)]
  source = viz.to_dot_forest(parts, root_label="guess 12", title="two trees").source
  assert '\ttop [label="guess 12"' in source and "label=\"two trees\"" in source
  assert '\ttop -> t0_n0 [label="first\n3 secrets"]' in source
  assert '\ttop -> t1_n0 [label=second]' in source
  # Each tree is drawn whole, its names prefixed so the two do not merge.
  for i in (0, 1):
    assert re.search(rf'^\tt{i}_n0 \[label="sub-root   N=10', source, re.M)
    assert {int(n) for n in re.findall(rf'^\tt{i}_n(\d+) \[label', source, re.M)} == {
        0, 1, 2, 3}
    assert f"\tt{i}_n0 -> t{i}_c0 " in source
  # max_per_level is shared out between the trees: 2 over two trees keeps one child each.
  shared = viz.to_dot_forest(parts, root_label="r", max_per_level=2).source
  for i in (0, 1):
    assert {int(n) for n in re.findall(rf'^\tt{i}_n(\d+) \[label', shared, re.M)} == {0, 2}
  assert viz.draw_forest(parts, tmp_path / "f.dot", root_label="guess 12").read_text() == (
      viz.to_dot_forest(parts, root_label="guess 12").source)
  with pytest.raises(ValueError, match="no trees"):
    viz.to_dot_forest([], root_label="r")
  with pytest.raises(ValueError, match="suffix"):
    viz.draw_forest(parts, tmp_path / "f.jpeg", root_label="r")


def test_bad_arguments():
  with pytest.raises(ValueError, match="out of range"):
    viz.to_dot(HAND, index=1)
  with pytest.raises(ValueError, match="empty"):
    viz.to_dot(HAND.replace(num_nodes=jnp.array([0], jnp.int32)))
  with pytest.raises(ValueError, match="cuts"):
    viz.to_dot(HAND, max_children=0)
  with pytest.raises(ValueError, match="cuts"):
    viz.to_dot(HAND, max_per_level=0)
  with pytest.raises(ValueError, match="suffix"):
    viz.draw(HAND, "tree.jpeg")


def test_draw_dot_source(tmp_path):
  path = viz.draw(HAND, tmp_path / "sub" / "t.dot")
  assert path == tmp_path / "sub" / "t.dot"
  assert path.read_text() == viz.to_dot(HAND).source


def test_draw_renders_or_falls_back(tmp_path, capsys):
  """With Graphviz installed the picture is rendered; without it, the fallback (CI has no
  `dot` unless it installs Graphviz; the next test covers the fallback everywhere)."""
  svg = viz.draw(HAND, tmp_path / "t.svg")
  png = viz.draw(HAND, tmp_path / "t.png")
  err = capsys.readouterr().err
  if viz.dot_available():
    assert svg == tmp_path / "t.svg" and "<svg" in svg.read_text() and err == ""
    assert png == tmp_path / "t.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  else:
    assert svg == png == tmp_path / "t.dot" and err.count("not found") == 2


def test_draw_without_dot_writes_the_source_and_says_so(tmp_path, capsys, monkeypatch):
  monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` anywhere
  assert not viz.dot_available()
  path = viz.draw(HAND, tmp_path / "t.png")
  assert path == tmp_path / "t.dot" and not (tmp_path / "t.png").exists()
  assert path.read_text() == viz.to_dot(HAND).source
  err = capsys.readouterr().err
  assert "`dot` program was not found" in err and "dot -Tpng" in err and str(path) in err
  viz.draw(HAND, tmp_path / "q.svg", quiet=True)
  assert capsys.readouterr().err == "" and (tmp_path / "q.dot").exists()


_SEARCH = jax.jit(js.policies.puct(t3.GAME, js.estimators.uniform(), num_simulations=24,
                                   max_nodes=25))


def test_a_real_search_tree():
  states = jax.vmap(t3.init)(jax.random.split(jax.random.PRNGKey(0), 2))
  out = _SEARCH(None, jax.random.PRNGKey(1), states)
  tree = jax.device_get(out.tree)
  source = viz.to_dot(out.tree, index=1, max_depth=1, max_children=None).source
  assert f"root   N={int(tree.nodes.visits[1, 0])}" in source
  visited = int(np.sum(np.asarray(out.visit_counts[1]) > 0))
  # One drawn child per visited root action (deterministic game: edges go straight to nodes).
  children = [n for n in range(1, int(tree.num_nodes[1])) if tree.nodes.depth[1, n] == 1]
  assert len(children) == visited
  for n in children:
    assert f"\tn{n} [label=\"node {n}" in source
  assert not any(f"\tn{n} [" in source for n in range(1, int(tree.num_nodes[1]))
                 if tree.nodes.depth[1, n] == 2)


_PUCT_300 = jax.jit(js.policies.puct(t3.GAME, js.estimators.uniform(), num_simulations=300,
                                     max_nodes=301))


def test_a_tictactoe_tree_two_levels_deep_fits_a_screen(tmp_path):
  """Tic-tac-toe from the empty board, uniform prior: every move is tried, so drawing all of
  them two levels deep is tens of boxes wide; the default cuts keep 6 moves per node and 12
  per level, and say what they left out."""
  out = _PUCT_300(None, jax.random.PRNGKey(1), jax.vmap(t3.init)(
      jax.random.split(jax.random.PRNGKey(0), 1)))
  t = jax.device_get(out.tree)
  source = viz.draw(out.tree, tmp_path / "t3.dot", max_depth=2).read_text()
  drawn = _boxes(source)
  parent = {int(c): int(p) for p, c in re.findall(r"^\tn(\d+) -> n(\d+) ", source, re.M)}
  level1 = {n for n in drawn if parent.get(n) == 0}
  level2 = {n for n in drawn if parent.get(n) in level1}
  assert drawn == {0} | level1 | level2
  assert len(level1) == 6 and len(level2) == 12

  def children(n):  # slot -> (child node, visits) of node n's visited moves
    visits = t.slots.visits[0, n]
    return {s: (int(t.chance.child[0, t.slots.chance[0, n, s], 0]), int(visits[s]))
            for s in range(t3.GAME.num_actions) if visits[s] > 0}

  candidates2 = []  # the level-2 children the per-node cut leaves: 6 per level-1 node
  visits_of = {}
  for n in {0} | level1:
    kids = sorted(children(n).values(), key=lambda kid: -kid[1])
    visits_of.update(kids)
    shown = [v for c, v in kids if c in drawn]
    hidden = [v for c, v in kids if c not in drawn]
    assert len(shown) <= 6 and (not (shown and hidden) or min(shown) >= max(hidden))
    # The box under the node counts the moves left out and their visits.
    expected = f"+{len(hidden)} more\n{sum(hidden)} visit" + "s" * (sum(hidden) != 1)
    assert _label(source, f"n{n}_more_a") == (expected if hidden else None)
    if n in level1:
      candidates2 += [v for _, v in kids[:6]]
  # The 12 drawn at level 2 are the most visited of those candidates.
  assert sorted(visits_of[n] for n in level2) == sorted(candidates2)[-12:]
  # All 9 first moves were visited: 6 drawn, 3 in the root's box.
  root = children(0)
  assert len(root) == 9
  assert _label(source, "n0_more_a").startswith("+3 more\n")
  if viz.dot_available():  # the rendered picture is about one screen wide
    width, height = _svg_size(viz.draw(out.tree, tmp_path / "t3.svg", max_depth=2))
    assert width <= 2500 and height <= 600
    # Without the cuts, the same two levels are several screens wide.
    uncut = viz.draw(out.tree, tmp_path / "all.svg", max_depth=2, max_children=None,
                     max_per_level=None)
    assert _svg_size(uncut)[0] > 4 * width


def _svg_size(path):
  """``(width, height)`` of an SVG drawn by Graphviz, in pixels at 96 dpi."""
  found = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', path.read_text())
  return tuple(float(x) * 4 / 3 for x in found.groups())


def _run_cli(monkeypatch, argv, stdin):
  feed = io.StringIO(stdin)
  monkeypatch.setattr(builtins, "input", lambda prompt="": _readline(feed))
  return cli.main(argv)


def _readline(feed):
  line = feed.readline()
  if not line:
    raise EOFError
  return line.rstrip("\n")


def test_play_draw(monkeypatch, capsys, tmp_path):
  path = tmp_path / "play.dot"
  argv = ["play", "tictactoe", "--simulations", "50", "--first", "search", "--draw", str(path),
          "--draw-depth", "1"]
  assert _run_cli(monkeypatch, argv, "q\n") == 0
  source = path.read_text()
  assert source.startswith("digraph") and "root   N=51" in source
  assert "tictactoe: search before its move" in source


@pytest.mark.slow
def test_solve_draw(capsys, tmp_path):
  path = tmp_path / "solve.dot"
  assert cli.main(["solve", "mastermind", "--pegs", "2", "--colours", "3", "--seconds", "20",
                   "--quiet", "--no-openings", "--draw", str(path)]) == 0
  out = capsys.readouterr().out
  assert f"Tree drawn to {path}" in out
  source = path.read_text()
  # Guesses and feedbacks are named; the AVTS tree has bounds and chance outcomes.
  assert "root   N=" in source and "≥" in source and "shape=circle" in source
  assert "b0w0" in source or "b1w0" in source

