"""``jaxsearch play --draw``: where it drew is said once, a missing Graphviz is warned about
once, and a bad file is refused before the game starts.

The games are tic-tac-toe against UCT with 50 simulations (the setting of ``tests/test_cli.py``),
the search moving first; the person types cells 1, 2, ..., 9 in turn, so that each of their
turns takes the first free cell, then the input ends.
"""

import io
import re
import shutil

from jaxsearch import cli, viz

_MOVES = "".join(f"{cell}\n" for cell in range(1, 10))


def _play(monkeypatch, capsys, path, *extra):
  monkeypatch.setattr("sys.stdin", io.StringIO(_MOVES))  # as tests/test_cli.py feeds play
  argv = ["play", "tictactoe", "--simulations", "50", "--first", "search", "--draw", str(path),
          *extra]
  status = cli.main(argv)
  captured = capsys.readouterr()
  return status, captured.out, captured.err


def test_play_draw_says_where_once(monkeypatch, capsys, tmp_path):
  path = tmp_path / "tree.dot"
  status, out, err = _play(monkeypatch, capsys, path, "--draw-depth", "1")
  assert status == 0 and err == ""
  moves = out.count("search plays")
  assert moves >= 2  # the message must not come back with the later drawings
  assert out.count("Search tree drawn to") == 1
  assert f"Search tree drawn to {path} (redrawn after each search move)." in out
  # The message follows the first search move; the file holds the last one's tree, with the
  # moves numbered as the person types them (1-9).
  assert out.index("Search tree drawn to") > out.index("search plays")
  source = path.read_text()
  assert f"tictactoe: search before its move {moves}" in source
  assert re.search(r'\tn0 -> n\d+ \[label="[1-9]  N=', source)
  assert 'label="0  N=' not in source  # action 0 is cell 1


def test_play_draw_without_dot_warns_once(monkeypatch, capsys, tmp_path):
  which = shutil.which
  monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "dot" else
                      which(name, *a, **k))
  assert not viz.dot_available()
  path = tmp_path / "tree.svg"
  status, out, err = _play(monkeypatch, capsys, path)
  assert status == 0 and out.count("search plays") >= 2
  assert err.count("`dot` program was not found") == 1
  assert out.count("Search tree drawn to") == 1
  assert f"Search tree drawn to {tmp_path / 'tree.dot'} " in out
  assert (tmp_path / "tree.dot").read_text().startswith("digraph")
  assert not path.exists()


def test_play_draw_refuses_a_bad_file_before_playing(monkeypatch, capsys, tmp_path):
  status, out, err = _play(monkeypatch, capsys, tmp_path / "tree.jpeg")
  assert status == 2 and "search plays" not in out
  assert "--draw" in err and ".svg" in err
  status, out, err = _play(monkeypatch, capsys, tmp_path / "tree.dot", "--draw-depth", "-1")
  assert status == 2 and "--draw-depth must be >= 0" in err and "search plays" not in out
