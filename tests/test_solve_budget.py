"""``--seconds`` is the whole run's budget: the search, the policy's extraction and the
certificates share it (docs/solving.md, "One budget"), and every phase says where it is."""

import json
import math
import re
import time

import pytest

from jaxsearch import cli
from jaxsearch.solve import SolveOptions
from jaxsearch.solve.chunked import SLEEP_ENV


def test_the_split_leaves_the_certificates_their_reserve_or_less():
  """The search stops by ``run_seconds − min(certify_seconds, run_seconds × (1 − share))``
  after the start; the certificates stop by the run's end and within their own limit."""
  budget = SolveOptions.from_keywords(run_seconds=100, search_share=0.75).budget
  clock = budget.clock(started=1000.0)
  assert (clock.search_ends, clock.run_ends) == (1075.0, 1100.0)
  # An explicit certificate limit below the reserve gives the search the difference.
  clock = SolveOptions.from_keywords(run_seconds=100, search_share=0.5,
                                     certify_seconds=10).budget.clock(started=0.0)
  assert (clock.search_ends, clock.run_ends) == (90.0, 100.0)
  now = time.monotonic()
  assert clock.certify_deadline() <= 100.0  # long past: the run's end, not 10 s from now
  late = SolveOptions.from_keywords(run_seconds=1e6, certify_seconds=10).budget.clock()
  assert late.certify_deadline() <= now + 10 + 1  # the certificates' own limit
  # Without run_seconds nothing changes: the search's own budget and 600 s of certificates.
  clock = SolveOptions().budget.clock()
  assert clock.search_ends is None and clock.run_ends is None
  assert math.isinf(clock.search_left())
  with pytest.raises(ValueError, match="search_share"):
    SolveOptions.from_keywords(search_share=1.5)
  with pytest.raises(ValueError, match="run_seconds"):
    SolveOptions.from_keywords(run_seconds=float("nan"))


def test_run_seconds_bound_the_whole_solve(monkeypatch):
  """A search that would go on (two slots a node forgo the proof at cut nodes; each chunk of
  one simulation sleeps 0.3 s) stops at the first chunk past ``run_seconds × 3/4``, and the
  solve (extraction and certificates included) ends by ``run_seconds`` plus a stated margin
  of 3 s (the chunk running at the deadline, the extraction, the certificates' wind-down).
  The programs are compiled by a first solve, so that the timed one searches for long."""
  from jaxsearch.games import mastermind
  from jaxsearch.guessing import solve_puzzle
  puzzle = mastermind.puzzle(2, 6)
  same = dict(openings=puzzle.openings, chunk=1, num_slots=2, bound_slots=0, max_nodes=4000,
              method="tree")
  solve_puzzle(puzzle, seconds=0, certify_seconds=0, **same)  # compiles
  monkeypatch.setenv(SLEEP_ENV, "0.3")
  chunks, phases = [], []
  started = time.monotonic()
  result = solve_puzzle(puzzle, run_seconds=6, seconds=math.inf,
                        on_chunk=lambda info: chunks.append(time.monotonic() - started),
                        on_phase=lambda info: phases.append((time.monotonic() - started,
                                                             info)), **same)
  ended = time.monotonic() - started
  assert not result.proven_optimal or len(chunks) > 2
  assert len(chunks) > 2 and chunks[-2] < 4.5  # it searched until the search's deadline
  assert chunks[-1] <= 4.5 + 1.5  # and stopped after the chunk running then
  assert [info["phase"] for _, info in phases][:2] == ["extracting", "certifying"]
  certified = [info for _, info in phases if info["phase"] == "certifying"]
  assert certified[-1]["done"] == certified[-1]["total"] > 0
  assert all(info["deadline"] <= started + 6 + 0.5 for info in certified)  # the run's end
  assert ended <= 6 + 3.0, (ended, chunks, phases)


def test_a_solve_ends_within_its_seconds_and_says_each_phase(monkeypatch, capsys):
  """The command line: ``--seconds`` counts from the command's start, compilation included.
  The first chunk always runs, so the run ends by ``--seconds`` or just after the first
  chunk where that comes later, plus a margin of 3 s (the last chunk, the extraction and the
  certificates' wind-down); Python's start and imports before the command are not counted.
  Before, ``--seconds`` was the search's alone: the run went on for the puzzle's build, the
  compilation before the first chunk, the extraction and up to 600 s of certificates, and
  plain-line mode said nothing after the search. Now it says the split first, then the
  extraction and the certificates as they go."""
  seconds, margin = 12.0, 3.0
  monkeypatch.setenv(SLEEP_ENV, "0.3")
  assert cli.main(["solve", "mastermind", "--pegs", "3", "--colours", "3", "--slots", "2",
                   "--bound-slots", "0", "--chunk", "1", "--seconds", str(seconds),
                   "--method", "tree", "--json"]) == 0
  out, err = capsys.readouterr()
  summary = json.loads(out.strip().splitlines()[-1])
  lines = err.splitlines()
  assert "budget 12 s in all: compiling and searching until 9 s at most" in lines[0]

  def at(text: str) -> float:  # when the first plain line holding ``text`` was printed
    line = next(line for line in lines if text in line)
    return float(re.search(r"\[([0-9.]+) s\]", line).group(1))

  first_chunk = at(" sims")  # the first chunk's line: compilation and one chunk done
  # The search stops by 9 s (or after the first chunk), give or take the chunk running then.
  assert at("extracting and evaluating the policy…") <= max(9.0, first_chunk) + 1.5
  # The run (the command's own clock, from its start) ends by 12 s or after the first chunk,
  # plus the margin.
  assert summary["seconds"] <= max(seconds, first_chunk) + margin, (summary, first_chunk)
  assert at("certifying: 0 of") <= max(seconds, first_chunk) + margin
  assert re.search(r"certifying: (\d+) of \1 done", "\n".join(lines))


def test_the_live_bar_shows_the_extraction_and_the_certificates():
  """On a terminal (80 columns) the bar's status says the phase after the search, and the
  clock is kept."""
  import io
  from rich.console import Console
  from jaxsearch.guessing.report import ProgressReporter
  out = io.StringIO()
  console = Console(file=out, force_terminal=True, width=80)
  with ProgressReporter("Mastermind 4×6", 120, console=console,
                        plan="budget 120 s in all") as progress:
    progress.phase({"phase": "extracting"})
    progress.progress.refresh()  # rich draws a few times a second; now, for the test
    assert "extracting" in out.getvalue()
    progress.phase({"phase": "certifying", "done": 4, "total": 13,
                    "deadline": time.monotonic() + 30})
  text = out.getvalue()
  assert "budget 120 s in all" in text
  assert "4/13" in text or "4 of 13" in text
  assert "0:00:0" in text.rsplit("certifying", 1)[1]  # the clock after it, not cut
