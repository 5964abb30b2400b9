"""What the commands print fits the terminal: the solve progress bar keeps its status and
clock whole at 80 to 110 columns, its rate never reads "(0/s)", and the ``jaxsearch bench``
tables fit 80 columns without cutting a figure (``--quick`` says what its shapes show).

Made-up figures on rich consoles of a set width: no search, no mctx."""

import io
import re
import types

import pytest
from rich.console import Console

from jaxsearch.app import bench
from jaxsearch.guessing import report

ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")
CLOCK = re.compile(r"\d:\d\d:\d\d$")


def _chunk(seconds, bound, upper, simulations, proven=False):
  return {"simulations": simulations, "seconds": seconds, "bound": bound, "upper": upper,
          "nodes": 1_234_567 + 10 * simulations, "proven": proven}


def _final_frame(stream: io.StringIO) -> str:
  """The live bar's last frame, as the terminal shows it (escape codes removed)."""
  return ANSI.sub("", stream.getvalue().rsplit("\r", 1)[-1]).rstrip("\n")


def _frame(progress, width: int) -> str:
  """The bar as it stands, rendered alone on a recording console ``width`` columns wide."""
  console = Console(width=width, record=True, file=io.StringIO())
  console.print(progress.progress.make_tasks_table(progress.progress.tasks))
  return console.export_text().rstrip("\n")


CASES = [("Mastermind 4×6", "≥ {:.1f}", None),
         ("Wordle 3158/14855", "≥ {:.1f} given the first guess salet", "salet")]


@pytest.mark.parametrize("width", [80, 90, 100, 110])
@pytest.mark.parametrize("title, label, first", CASES)
def test_the_bar_keeps_its_status_and_clock_whole(width, title, label, first):
  stream = io.StringIO()
  console = Console(file=stream, force_terminal=True, width=width, record=True)
  frames = []
  with report.ProgressReporter(title, 60.0, console=console, upper_label=label,
                               first_guess=first) as progress:
    steps = [_chunk(40.0, 11700.0, 11600.0, 32), _chunk(50.0, 11650.0, 11610.0, 3232),
             _chunk(60.0, 11625.0, 11625.0, 6432, proven=True)]
    frames.append((_frame(progress, width), "compiling…"))
    for info in steps:
      progress.chunk(info)
      frames.append((_frame(progress, width), progress.progress.tasks[0].fields["status"]))
    progress.finish(types.SimpleNamespace(
        bound_total=11625.0, upper_total=11625.0, proven_optimal=first is None,
        proven_given_first=True, simulations=6432, nodes=1_234_567))
    final_status = progress.progress.tasks[0].fields["status"]
  for frame, status in frames:
    assert "\n" not in frame and len(frame) <= width, frame
    assert status in frame and "…" not in frame.replace(status, ""), frame  # nothing cut
    assert CLOCK.search(frame.rstrip()), frame
  last = _final_frame(stream)  # what stays on the terminal
  assert len(last) <= width and final_status in last and CLOCK.search(last.rstrip()), last
  assert "11625.0" in final_status
  assert ("proven optimal" if first is None else "proven given") in final_status
  # The ending chunk says what comes next, in some form, at every width.
  assert "extracting" in frames[-1][1]
  assert "(0/s)" not in " ".join(status for _, status in frames)


def test_a_wide_bar_says_everything():
  console = Console(file=io.StringIO(), force_terminal=True, width=160)
  with report.ProgressReporter("Mastermind 4×6", 60.0, console=console) as progress:
    progress.chunk(_chunk(40.0, 5700.0, 5600.0, 32))
    progress.chunk(_chunk(50.0, 5650.0, 5610.0, 3232))
    task = progress.progress.tasks[0]
    assert task.description == "solving Mastermind 4×6"
    assert task.fields["status"] == ("total guesses ≤ 5650.0 ≥ 5610.0 · 3232 sims (320/s) · "
                                     "1266887 nodes")


def test_the_rate_is_since_the_last_chunk_and_never_zero():
  """The first chunk's time is mostly compiling: it shows no rate (it read "(0/s)": 32
  simulations in 60 seconds); later ones show the rate since the chunk before, with two
  significant figures below 10 per second."""
  stream = io.StringIO()
  console = Console(file=stream, force_terminal=False, width=80)
  with report.ProgressReporter("Wordle 3158/14855", 600.0, console=console,
                               every=0.0) as progress:
    progress.chunk(_chunk(60.0, 11300.0, 11000.0, 32))
    progress.chunk(_chunk(100.0, 11290.0, 11010.0, 48))  # 16 in 40 s
    progress.chunk(_chunk(110.0, 11280.0, 11020.0, 448))  # 400 in 10 s
  lines = stream.getvalue().splitlines()
  assert "/s)" not in lines[1] and "· 32 sims ·" in lines[1]
  assert "48 sims (0.4/s)" in lines[2]
  assert "448 sims (40/s)" in lines[3]


def _record(workload, batch, sims, ours, theirs, ratio, spread, compile_s):
  return {"workload": workload, "batch": batch, "simulations": sims,
          "sims_per_s_ours": ours, "sims_per_s_mctx_muzero": theirs,
          "speedup_vs_mctx_muzero": ratio, "speedup_vs_mctx_muzero_range": spread,
          "sims_per_s_ours_gumbel": ours // 2, "sims_per_s_mctx_gumbel": theirs // 2,
          "speedup_gumbel_vs_mctx_gumbel": ratio / 3,
          "speedup_gumbel_vs_mctx_gumbel_range": [s / 3 for s in spread],
          "compile_s_ours": compile_s, "compile_s_ours_gumbel": compile_s + 1}


RECORDS = [_record("connect_four", 256, 64, 1_408_000, 192_000, 7.331, [6.912, 10.35], 3.31),
           _record("hashed_A16", 32768, 128, 112_408_000, 7_092_000, 15.72, [12.5, 16.01],
                   1.8)]


def _bench_text(width, quick=False) -> str:
  console = Console(width=width, record=True, file=io.StringIO())
  bench._table(RECORDS, console, quick=quick)
  return console.export_text()


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_bench_tables_fit_without_cutting_a_figure(width):
  text = _bench_text(width)
  lines = text.splitlines()
  assert max(map(len, lines)) <= width
  rows = [line for line in lines if line.lstrip().startswith(("connect_four", "hashed_A16"))]
  assert len(rows) == 4  # two workloads in each of the two tables
  assert not any("…" in row for row in rows)
  for needle in ("7.33×", "15.72×", "2.44×", "5.24×", "1,408", "112,408", "7,092", "32768"):
    assert needle in text, needle
  # Every row of a table has the same cells: no ratio folded onto a line of its own.
  assert len({len(row.split()) for row in rows}) == 1, rows


def test_narrow_tables_drop_the_rounds_first_and_wide_ones_keep_them():
  assert "6.91–10.35" in _bench_text(120) and "compile s" in _bench_text(120)
  narrow = _bench_text(70)
  assert "6.91–10.35" not in narrow and "rounds" not in narrow.split("A ratio")[0]
  assert "compile s" in narrow and "7.33×" in narrow


def test_quick_says_its_shapes_are_a_smoke_run_and_how_to_get_the_figures():
  text = " ".join(_bench_text(80, quick=True).split())
  assert "smoke run" in text and "not the README's figures" in text
  assert "jaxsearch bench --repeats 5" in text
  assert "smoke run" not in " ".join(_bench_text(80).split())
