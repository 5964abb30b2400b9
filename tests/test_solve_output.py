"""What ``jaxsearch solve`` shows people: its progress off a terminal, the plot of its bounds
and the drawing of its search, each agreeing with the result printed after it.

The command runs on Mastermind 3×3: once with its default openings (111, 112, 123; proven in
one chunk, about 10 s with compilation on 2 CPU cores) and every output, once with
``--first``, once with ``--no-openings``; the progress reporter and the plot are also checked
on made-up figures (no search).
"""

import contextlib
import io
import json
import re
import types

import pytest
from rich.console import Console

from jaxsearch import cli
from jaxsearch.guessing import policy_file
from jaxsearch.guessing import report

TITLE = "Mastermind 3×3"


def _solve(*argv):
  """``jaxsearch solve mastermind --pegs 3 --colours 3 ARGV``, its stdout and stderr captured
  (neither is a terminal, as under a pipe or a redirection): ``(status, out, err)``."""
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    status = cli.main(["solve", "mastermind", "--pegs", "3", "--colours", "3", *argv])
  return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
  """The default command with every output: its status, output, files and ``--json``."""
  folder = tmp_path_factory.mktemp("solve_output")
  paths = {name: folder / name for name in ("policy.json", "bounds.png", "tree.dot")}
  status, out, err = _solve("--export", str(paths["policy.json"]), "--plot",
                            str(paths["bounds.png"]), "--draw", str(paths["tree.dot"]),
                            "--json")
  return types.SimpleNamespace(status=status, out=out, err=err, paths=paths,
                               summary=json.loads(out.strip().splitlines()[-1]))


def test_progress_off_a_terminal_is_plain_lines_ending_on_the_result(solved):
  assert solved.status == 0
  lines = solved.err.splitlines()
  assert len(lines) >= 3
  # Complete plain lines: no live bar's frame (bar characters, a line cut with "…" at 80
  # columns); only the line that says the search is over ends with an ellipsis.
  for line in lines:
    assert line.startswith(f"solving {TITLE} ["), line
    assert "━" not in line and "\x1b" not in line
    assert "…" not in line or line.endswith("extracting and evaluating the policy…"), line
  assert "compiling" in lines[0]
  assert any(line.endswith("extracting and evaluating the policy…") for line in lines)
  # The last line holds the final bounds, the ones the result (and --json) reports.
  summary = solved.summary
  assert "done" in lines[-1] and "proven optimal" in lines[-1]
  assert (f"total guesses ≤ {summary['achievable_total']:.1f} "
          f"≥ {summary['lower_bound_total']:.1f}"
          in lines[-1])
  assert f"{summary['simulations']} sims · {summary['nodes']} nodes" in lines[-1]


def _chunk(seconds, bound, upper, simulations, proven=False):
  return {"simulations": simulations, "seconds": seconds, "bound": bound, "upper": upper,
          "nodes": 10 * simulations, "proven": proven}


def _result(bound, upper, proven, simulations=96, nodes=960):
  return types.SimpleNamespace(bound_total=bound, upper_total=upper, proven_optimal=proven,
                               proven_given_first=proven, simulations=simulations,
                               nodes=nodes)


class _Clock:
  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_plain_progress_spacing_and_final_bounds():
  """Off a terminal: the start, the first chunk, then a line at most every ``every``
  seconds, the last chunk, and the final bounds, tighter than the last chunk's."""
  stream, clock = io.StringIO(), _Clock()
  console = Console(file=stream, force_terminal=False, width=80)
  with report.ProgressReporter(TITLE, 10.0, console=console, every=5.0,
                               clock=clock) as progress:
    for step in range(1, 11):  # a chunk a second, the tenth at the time budget
      clock.now += 1.0
      progress.chunk(_chunk(float(step), 90.0 - step, 60.0 + step, 32 * step))
    clock.now += 3.0  # extraction and certificates
    progress.finish(_result(73.0, 73.0, True))
  lines = stream.getvalue().splitlines()
  assert [line.split("]")[0] for line in lines] == [
      f"solving {TITLE} [{t:.1f} s" for t in (0, 1, 6, 10, 13)]
  assert "≤ 89.0 ≥ 61.0 · 32 sims" in lines[1] and "≤ 84.0 ≥ 66.0" in lines[2]
  assert lines[3].endswith("≤ 80.0 ≥ 70.0 · 320 sims (32/s) · 3200 nodes · extracting and "
                           "evaluating the policy…")
  assert lines[4].endswith("done · total guesses ≤ 73.0 ≥ 73.0 · proven optimal · 96 sims "
                           "· 960 nodes")
  assert all(len(line) > 80 for line in lines[1:])  # whole lines, wider than the console


def test_progress_label_of_the_optimistic_bound_and_no_bound():
  stream = io.StringIO()
  console = Console(file=stream, force_terminal=False)
  with report.ProgressReporter(TITLE, 5.0, console=console, max_simulations=64,
                               upper_label="≥ {:.1f} given the first guess") as progress:
    progress.chunk(_chunk(1.0, 80.0, 70.0, 64))  # the simulation budget ends the search
    progress.finish(_result(75.0, None, False))
  lines = stream.getvalue().splitlines()
  assert "≤ 80.0 ≥ 70.0 given the first guess · 64 sims" in lines[1]
  assert lines[1].endswith("extracting and evaluating the policy…")
  assert lines[2].endswith("done · total guesses ≤ 75.0 · not proven · 96 sims · 960 nodes")


def test_progress_on_a_terminal_is_a_live_bar_ending_on_the_result():
  stream = io.StringIO()
  console = Console(file=stream, force_terminal=True, width=200)
  with report.ProgressReporter(TITLE, 10.0, console=console) as progress:
    progress.chunk(_chunk(10.0, 80.0, 70.0, 32))
    progress.finish(_result(73.0, 73.0, True))
  text = stream.getvalue()
  assert "\x1b[" in text and "compiling, then" not in text  # the bar, not plain lines
  final = text.rsplit("\r", 1)[-1]
  assert "≤ 73.0 ≥ 73.0 · proven optimal" in final and "80.0" not in final


def test_quiet_progress_prints_nothing():
  stream = io.StringIO()
  console = Console(file=stream, force_terminal=False)
  with report.ProgressReporter(TITLE, 10.0, console=console, quiet=True) as progress:
    progress.chunk(_chunk(10.0, 80.0, 70.0, 32, proven=True))
    progress.finish(_result(73.0, 73.0, True))
  assert stream.getvalue() == ""


def _history_result(history, total, upper_total=None, proven=False):
  return types.SimpleNamespace(
      history=history, evaluation=types.SimpleNamespace(total_guesses=total),
      upper_total=upper_total, upper_total_scope="game", proven_optimal=proven,
      proven_given_first=proven)


def _tick_labels(axis):
  return [label.get_text() for label in axis.get_ticklabels()]


def _visible_ticks(ax):
  low, high = ax.get_ylim()
  return [t for t in ax.get_yticks() if low <= t <= high]


def test_plot_of_a_run_proven_in_one_chunk_is_readable():
  """One chunk, both bounds and the total equal (Mastermind 3×3): markers show the point,
  the ticks are a few distinct whole numbers around it, the axes start at zero."""
  import matplotlib.pyplot as plt
  fig = report.bounds_figure(_history_result([(32, 3.8, 73.0, 73.0)], 73, 73.0, True), TITLE)
  try:
    fig.canvas.draw()
    for ax in fig.axes:
      assert len(ax.lines) == 3  # two bounds and the evaluated total
      for line in ax.lines[:2]:
        assert line.get_marker() not in (None, "None", "", " ")
      low, high = ax.get_ylim()
      assert low < 73 < high and high - low >= 2
      assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] > ax.lines[0].get_xdata()[0]
      ticks = _visible_ticks(ax)
      assert 73 in ticks and all(float(t).is_integer() for t in ticks)
    labels = [text for text in _tick_labels(fig.axes[0].yaxis) if text]
    assert len(labels) == len(set(labels)) >= 3 and "73" in labels
    xlabels = [text for text in _tick_labels(fig.axes[0].xaxis) if text]
    assert len(xlabels) == len(set(xlabels)) >= 3
    assert all(re.fullmatch(r"\d+", text) for text in xlabels)  # whole simulations
    assert "proven optimal" in fig.axes[0].get_legend_handles_labels()[1][2]
  finally:
    plt.close(fig)


def test_plot_of_a_wide_range_has_plain_whole_numbers():
  """Totals in thousands, no optimistic bound yet at first: plain integers (no ``×10³``,
  no offset), the missing bound left out."""
  import matplotlib.pyplot as plt
  history = [(32, 12.0, 7500.0, None), (64, 15.0, 6200.0, 5600.0),
             (96, 18.0, 5935.0, 5623.0)]
  fig = report.bounds_figure(_history_result(history, 5625, 5623.0), "Mastermind 4×6")
  try:
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [text for text in _tick_labels(ax.yaxis) if text]
    assert len(labels) == len(set(labels)) >= 3
    assert all(re.fullmatch(r"\d+", text.replace("−", "-")) for text in labels), labels
    assert ax.yaxis.get_offset_text().get_text() == ""
    low, high = ax.get_ylim()
    assert low < 5600 and high > 7500
  finally:
    plt.close(fig)


def test_cli_plot_is_written(solved):
  assert solved.paths["bounds.png"].stat().st_size > 10_000
  assert f"Plot written to {solved.paths['bounds.png']}." in solved.out


def _edges_from_top(source):
  """``[(feedback, secrets)]`` of the edges from the first guess's box, in order."""
  return [(feedback, int(count)) for feedback, count in
          re.findall(r'^\ttop -> t\d+_n0 \[label="(\S+)\n(\d+) secrets?"\]', source, re.M)]


def test_drawing_shows_the_exported_policys_first_guess_and_its_sub_trees(solved):
  source = solved.paths["tree.dot"].read_text()
  header, policy = policy_file.load(solved.paths["policy.json"])
  first = policy["guess"]
  assert first == solved.summary["first_guess"]
  caption = (f"{TITLE}: first guess {first} (the exported policy's), its "
             f"{len(policy['children'])} feedback sub-trees")
  assert f'label="{caption}"' in source
  assert re.search(rf'^\ttop \[label="first guess {first}\n27 secrets\npolicy total 73"',
                   source, re.M)
  # One sub-tree per feedback of that guess (the ones the policy continues after), with
  # its secrets; together every secret but the one the guess solves.
  edges = _edges_from_top(source)
  assert [feedback for feedback, _ in edges] == list(policy["children"])
  assert sum(count for _, count in edges) == 27 - 1
  # The sub-trees are that guess's: their roots' achievable bounds (minus the guesses each
  # secret still needs, on average, by the tree's policy) add up, with the first guess, to
  # the exported policy's total (the tree's policy is the exported one here, proven).
  total = 27.0
  for i, (_, count) in enumerate(edges):
    label = re.search(rf'^\tt{i}_n0 \[label="(sub-root   N=\d+[^"]*)"', source, re.M).group(1)
    total -= count * float(re.search(r"≥([-+][\d.]+) ≤", label).group(1))
  assert total == pytest.approx(solved.summary["total_guesses"], abs=0.05)
  assert solved.out.count("Tree drawn to") == 1
  assert f"Tree drawn to {solved.paths['tree.dot']}: {caption.split(': ', 1)[1]}." in solved.out


@pytest.mark.slow
def test_drawing_with_first_says_the_guess_was_given(tmp_path):
  path = tmp_path / "first.dot"
  status, out, _ = _solve("--first", "111", "--quiet", "--draw", str(path), "--draw-depth",
                          "2")
  assert status == 0
  source = path.read_text()
  assert (f"{TITLE}: first guess 111 (fixed by --first), its 3 feedback sub-trees"
          in source)
  assert _edges_from_top(source) == [("b0w0", 8), ("b1w0", 12), ("b2w0", 6)]
  # --draw-depth 2: the first guess, then one guess of each sub-tree drawn (with outcomes).
  assert re.search(r"^\tt0_n0 -> t0_c\d+ \[label=\"\d{3}  N=", source, re.M)


def test_drawing_without_openings_marks_the_policys_first_guess(tmp_path):
  path, policy_path = tmp_path / "start.dot", tmp_path / "policy.json"
  status, out, _ = _solve("--no-openings", "--quiet", "--draw", str(path), "--export",
                          str(policy_path))
  assert status == 0
  first = policy_file.load(policy_path)[1]["guess"]
  source = path.read_text()
  caption = (f"{TITLE}: the search tree from the start; the exported policy's first guess "
             f"{first} in blue")
  assert f'label="{caption}"' in source
  # The root's edge of that guess, and only it, is blue.
  blue = re.findall(r'^\tn0 -> c\d+ \[label="(\d{3})  N=[^"]*" color=blue', source, re.M)
  assert blue == [first] and source.count(" color=blue") == 1
