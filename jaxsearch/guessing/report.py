"""Reporting a guessing game's solve: its progress, the ``--json`` summary, the plot of its
bounds and the drawing of the search behind the exported policy."""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

import numpy as np


class ProgressReporter:
  """The solver's progress on stderr: a context manager whose :meth:`chunk` is the solver's
  ``on_chunk``, and whose :meth:`finish` shows the bounds of the result.

  On a terminal it is a live rich bar. Elsewhere (a pipe, a file, a CI log) a live bar cannot
  redraw itself: rich prints its last frame once, cut to the console's 80 columns, with the
  last chunk's bounds, older than the result printed after it. There the progress is plain
  complete lines instead: one when the search starts, the first chunk, then one every
  ``every`` seconds, the chunk that ends the search, and :meth:`finish`'s line with the
  final bounds.

  Args:
    title: the puzzle's name (``"Mastermind 4×6"``).
    seconds: the search's time budget (the bar's length).
    max_simulations: the simulation budget per tree, or ``None``: where a chunk reaches it
      (or ``seconds``, or a proof) it says the policy is being extracted next.
    quiet: print nothing.
    console: a ``rich.console.Console`` (default: one on stderr); ``console.is_terminal``
      chooses the mode.
    every: seconds between plain lines.
    upper_label: how the optimistic bound reads, a ``str.format`` template of it (e.g.
      ``"≥ {:.1f} given the first guess"``).
    first_guess: the fixed first guess the bounds are conditional on (``--first``), or
      ``None``: on a narrow terminal the bar says "given salet" instead of ``upper_label``'s
      words.
    clock: seconds, for the elapsed time and the spacing of the plain lines.
    plan: the first plain line (the budget's split), or ``None``: "compiling, then
      searching for up to ``seconds`` s".
    started: the run's start on ``clock``, which the times shown count from (default:
      entering the ``with`` block).
  """

  def __init__(self, title: str, seconds: float, *, max_simulations: Optional[int] = None,
               quiet: bool = False, console=None, every: float = 5.0,
               upper_label: str = "≥ {:.1f}", first_guess: Optional[str] = None,
               clock: Callable[[], float] = time.monotonic, plan: Optional[str] = None,
               started: Optional[float] = None):
    if console is None and not quiet:
      from rich.console import Console
      console = Console(stderr=True)
    self.title, self.seconds, self.max_simulations = title, seconds, max_simulations
    self.quiet, self.console, self.every = quiet, console, every
    self.upper_label, self.first_guess, self.clock = upper_label, first_guess, clock
    self.plan = plan  # what the run will spend, said first (e.g. "the search until 90 s…")
    self.start_at = started  # the run's start on ``clock`` (default: entering the block)
    self.phase_line = None  # when the last line of a phase after the search was printed
    self.live = not quiet and console.is_terminal
    self.progress = self.task = self.bar = None
    self.started = self.printed = None
    self.last = None  # the last chunk's figures

  def __enter__(self):
    self.started = self.clock() if self.start_at is None else self.start_at
    if self.quiet:
      return self
    if self.live:
      from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
      if self.plan:
        self.console.print(f"solving {self.title}: {self.plan}", markup=False,
                           highlight=False)
      self.bar = BarColumn()
      self.progress = Progress(TextColumn("[bold]{task.description}"), self.bar,
                               TextColumn("{task.fields[status]}", markup=False),
                               TimeElapsedColumn(), console=self.console)
      self.progress.start()
      # No time limit (--seconds inf): a bar without an end.
      self.task = self.progress.add_task(
          f"solving {self.title}", status="compiling…",
          total=self.seconds if math.isfinite(self.seconds) else None)
      self._show([("compiling…",)], ["title"])
    else:
      self._line(self.plan or "compiling, then searching " + (
          f"for up to {self.seconds:g} s" if math.isfinite(self.seconds) else
          "with no time limit"))
    return self

  def __exit__(self, *exc) -> None:
    self.stop()

  def stop(self) -> None:
    """Ends the live bar (its last frame stays on the terminal); idempotent."""
    if self.progress is not None:
      self.progress.stop()
      self.progress = None

  def chunk(self, info: dict) -> None:
    """The solver's ``on_chunk``: ``info`` has ``simulations``, ``seconds``, ``bound``,
    ``upper`` (or ``None``), ``nodes`` and ``proven``."""
    previous, self.last = self.last, info
    if self.quiet:
      return
    ending = bool(info["proven"] or info["seconds"] >= self.seconds or (
        self.max_simulations is not None and info["simulations"] >= self.max_simulations))
    sims = f"{info['simulations']} sims"
    rate = _rate(previous, info)
    parts = [self._bound_forms(info["bound"], info["upper"]),
             (f"{sims} ({rate})", sims) if rate else (sims,), (f"{info['nodes']} nodes",)]
    if ending:
      parts.append(_EXTRACTING)
    if self.live:
      self.progress.update(self.task, completed=min(info["seconds"], self.seconds))
      # Narrower: the nodes go first, then the rate, the words of the bounds, the sims.
      self._show(parts, [("shorter", 3), ("drop", 2), ("shorter", 1), ("shorter", 3), "title",
                         ("shorter", 0), ("shorter", 0), ("drop", 1), "bar", "no title"])
    elif previous is None or ending or self.clock() - self.printed >= self.every:
      self._line(" · ".join(forms[0] for forms in parts))

  def phase(self, info: dict) -> None:
    """The solver's ``on_phase`` (:class:`jaxsearch.guessing.finish.RunProgress`): the
    extraction, then the certificates done of those due and when they stop at the latest
    (a plain line as each phase starts, then at most one every ``every`` seconds, and the
    last certificate's)."""
    if self.quiet:
      return
    if info["phase"] == "extracting":
      forms = _EXTRACTING
      due = True
    elif info["phase"] == "exact":
      forms = _exact_forms(info)
      due = True
    else:
      done, total = info["done"], info["total"]
      left = max(info["deadline"] - time.monotonic(), 0.0)
      until = f" (at most {left:.0f} s more)" if math.isfinite(left) else ""
      forms = (f"certifying: {done} of {total} done{until}", f"certifying {done}/{total}")
      due = done == 0 or done == total or self.phase_line is None or (
          self.clock() - self.phase_line >= self.every)
    if self.live:
      self._show([forms], ["title", ("shorter", 0), ("shorter", 0), "bar", "no title"])
    elif due:
      self.phase_line = self.clock()
      self._line(forms[0])

  def finish(self, result) -> None:
    """Shows the result's bounds (a :class:`~jaxsearch.guessing.SolveResult`): after the
    extraction, the exact evaluation and the certificates, they may be tighter than the
    last chunk's, and the progress must not end on older ones than the result printed
    next."""
    if self.quiet:
      return
    given = ("proven given the first guess",) + (
        (f"proven given {self.first_guess}",) if self.first_guess else ())
    proven = (("proven optimal",) if result.proven_optimal else
              given if result.proven_given_first else ("not proven",))
    work = ([(f"{result.simulations} sims",), (f"{result.nodes} nodes",)]
            if result.simulations or result.nodes else [("no tree searched",)])
    parts = [self._bound_forms(result.bound_total, result.upper_total), proven] + work
    if self.live:
      full = self.progress.tasks[0].total or 1  # a bar without an end (or of 0 s) ends full
      self.progress.update(self.task, total=full, completed=full)
      self._show(parts, [("drop", 3), ("drop", 2), "title", ("shorter", 0), ("shorter", 0),
                         ("shorter", 1), "bar", "no title"])
    else:
      self._line("done · " + " · ".join(forms[0] for forms in parts))

  def _bound_forms(self, bound: float, upper: Optional[float]) -> tuple:
    """The bounds, the longest way first: ``("total guesses ≤ 80.0 ≥ 70.0", "≤ 80.0 ≥
    70.0")``, and with a fixed first guess ``"≤ 80.0 ≥ 70.0 given salet"`` last."""
    short = f"≤ {bound:.1f}" + ("" if upper is None else " " + self.upper_label.format(upper))
    forms = (f"total guesses {short}", short)
    if self.first_guess and upper is not None:
      forms += (f"≤ {bound:.1f} ≥ {upper:.1f} given {self.first_guess}",)
    return forms

  def _show(self, parts: list, steps: list) -> None:
    """Puts ``parts`` in the live bar's status, fitted to the console's width now (a
    terminal may be resized): each part is its forms, the longest first, and while the line
    is too wide the next of ``steps`` shortens it: ``("shorter", i)`` (part ``i``'s next
    form), ``("drop", i)`` (part ``i`` goes), ``"title"`` ("solving" goes), ``"bar"`` (the
    bar shrinks from a sixth of the width, 10 to 40 columns, to 4), ``"no title"``. So the
    status and the clock are not cut (rich cuts a line too wide with "…") down to about 60
    columns."""
    width = self.console.width
    chosen, kept = [0] * len(parts), list(range(len(parts)))
    description = f"solving {self.title}"
    bar = max(10, min(40, width // 6))

    def status() -> str:
      return " · ".join(parts[i][min(chosen[i], len(parts[i]) - 1)] for i in kept)

    steps = [step for step in steps if isinstance(step, str) or step[1] < len(parts)]
    while steps and cell_len(description) + bar + cell_len(status()) + _FIXED_WIDTH > width:
      step = steps.pop(0)
      if step == "title":
        description = self.title
      elif step == "bar":
        bar = 4
      elif step == "no title":
        description = ""
      elif step[0] == "drop":
        kept.remove(step[1])
      else:
        chosen[step[1]] += 1
    self.bar.bar_width = bar
    self.progress.update(self.task, description=description, status=status())

  def _line(self, text: str) -> None:
    """One complete plain line, with the time since the start (no wrapping, no markup)."""
    self.printed = self.clock()
    file = self.console.file
    print(f"solving {self.title} [{self.printed - self.started:.1f} s]: {text}", file=file,
          flush=True)


# What the bar and the plain lines say while the policy is read off the trees, longest first.
_EXTRACTING = ("extracting and evaluating the policy…", "extracting the policy…", "extracting…")
# The live bar's width besides its description, bar and status: three one-space gaps between
# its four columns, the clock ("0:01:23"), and one column to spare (a terminal's last column
# can wrap the cursor).
_FIXED_WIDTH = 3 + 7 + 1


def cell_len(text: str) -> int:
  """Terminal columns of ``text`` (rich's measure: a wide character takes two)."""
  from rich.cells import cell_len as measure
  return measure(text)


def _exact_forms(info: dict) -> tuple:
  """The exact search of the whole game, the longest way first: ``("exact search of the
  whole game: 2 of 5 first guesses settled, best 5625 (at most 28 s more)", ...)``."""
  done, of = info["done"], info["of"]
  best = "" if info["incumbent"] is None else f", best {info['incumbent']}"
  if info.get("stopped"):
    return (f"exact search of the whole game: out of time after {done} of {of} first guesses"
            f"{best} (more --seconds gives it more); searching the trees…",
            f"exact search out of time ({done}/{of}); searching the trees…",
            "searching the trees…")
  deadline = info["deadline"]
  if info.get("alone") and done == 0:  # said once, as it starts
    best += " (alone: the trees would not fit in memory)"
  until = ("" if deadline is None else
           f" (at most {max(deadline - time.monotonic(), 0.0):.0f} s more)")
  return (f"exact search of the whole game: {done} of {of} first guesses settled{best}{until}",
          f"exact search: {done}/{of}{best}", f"exact {done}/{of}")


def _rate(previous: Optional[dict], info: dict) -> str:
  """Simulations per tree per second since the previous chunk (``""`` for the first chunk,
  whose time is mostly compiling), to two significant figures below 10."""
  if previous is None:
    return ""
  seconds = info["seconds"] - previous["seconds"]
  done = info["simulations"] - previous["simulations"]
  if seconds <= 0 or done <= 0:
    return ""
  rate = done / seconds
  return f"{rate:.0f}/s" if rate >= 10 else f"{rate:.2g}/s"


def plot_history(result, path, title: str) -> None:
  """PNG of the bounds (total guesses) after every chunk, against the simulations per tree
  and against the seconds of search, with the exported policy's exact total."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig = bounds_figure(result, title)
  fig.savefig(path, dpi=120)
  plt.close(fig)


def bounds_figure(result, title: str):
  """:func:`plot_history`'s figure (a matplotlib ``Figure``; the caller closes it).

  A run may end after a chunk or two (a small puzzle proven at once): every chunk is a
  marker, the axes start at zero, and a flat or tiny range of totals still spans a few
  integers, so that the ticks are distinct whole numbers of guesses."""
  import matplotlib.pyplot as plt
  from matplotlib.ticker import MaxNLocator, ScalarFormatter
  history = result.history
  sims = [h[0] for h in history]
  secs = [h[1] for h in history]
  bounds = [_number(h[2]) for h in history]
  uppers = [_number(h[3]) for h in history]
  total = result.evaluation.total_guesses
  scope = "" if result.upper_total_scope == "game" else " given the first guess"
  verdict = (" — proven optimal" if result.proven_optimal else
             " — proven given the first guess" if result.proven_given_first else "")
  # The search over first guesses reports after each visit of a first guess, its
  # simulations per tree summed over the first guesses visited.
  searched_first = getattr(result, "root", None) is not None
  step = "visit of a first guess" if searched_first else "chunk of simulations"
  fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
  for ax, xs, label in ((axes[0], sims, "simulations per tree" + (
                            ", summed over the first guesses" if searched_first else "")),
                        (axes[1], secs, "seconds of search (the first chunk compiles)")):
    # The achievable bound's markers are the larger: where the bounds meet, both show.
    ax.plot(xs, bounds, marker="o", markersize=7, color="C0",
            label="achievable bound (a policy reaches it)")
    if any(not math.isnan(u) for u in uppers):
      ax.plot(xs, uppers, marker="s", markersize=4, color="C1",
              label=f"optimistic bound{scope} (no policy does better)")
    ax.axhline(total, color="grey", linestyle=":",
               label=f"exported policy, evaluated exactly: {total}{verdict}")
    ax.set_xlabel(label)
    ax.set_xlim(0, max(xs, default=1) * 1.08 or 1)
    ax.grid(True, alpha=0.3)
  axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
  figures = [v for v in bounds + uppers + [float(total)] if not math.isnan(v)]
  low, high = min(figures), max(figures)
  pad = max(1.0, 0.06 * (high - low))  # a flat range still spans a few whole guesses
  axes[0].set_ylim(math.floor(low - pad), math.ceil(high + pad))
  axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
  plain = ScalarFormatter(useOffset=False)
  plain.set_scientific(False)
  axes[0].yaxis.set_major_formatter(plain)
  axes[0].set_ylabel("total guesses over all secrets")
  # Under the panels, where it hides no point.
  handles, labels = axes[0].get_legend_handles_labels()
  columns = len(labels) if sum(map(len, labels)) <= 130 else 2  # long labels: two rows
  fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
  fig.suptitle(f"{title}: bounds after each {step}")
  fig.tight_layout(rect=(0, 0.05 * -(-len(labels) // columns) + 0.02, 1, 1))
  return fig


def _number(value) -> float:
  """A history figure as a float: ``None`` (no optimistic bound) is NaN, not drawn."""
  return math.nan if value is None else float(value)


def draw_search(puzzle, result, path, *, depth: int, title: str, fixed_first: bool = False,
                quiet: bool = False):
  """Draws the search behind ``result``'s exported policy to ``path``
  (:func:`jaxsearch.viz.draw`'s formats and fallback without Graphviz).

  Where the search was one batch of feedback sub-problems per first guess (a fixed first
  guess or openings: ``result.opening_rows``), the exported policy's first guess is a box
  with its feedbacks' sub-problem trees under it; ``depth`` counts that guess, so each tree is drawn ``depth - 1`` guesses
  deep (its root at least). Without, the one tree from the initial state is drawn ``depth``
  guesses deep, the policy's first guess in blue. ``fixed_first``: the first guess was given
  (``--first``), not chosen.

  Returns:
    ``(file written, title of the drawing)``, or ``None`` where nothing was searched (a
    first guess that solves every secret).
  """
  from jaxsearch import viz
  from jaxsearch.guessing.puzzle import opening_roots
  if result.trees is None:
    return None
  first = result.policy["guess"]
  names = list(puzzle.guess_names)
  cuts = dict(max_children=4, left_to_right=True, action_names=names,
              outcome_names=puzzle.outcome_name)
  whose = "fixed by --first" if fixed_first else "the exported policy's"
  if result.opening_rows is None:
    tree = result.trees[0]
    action = names.index(first)
    root_actions = np.asarray(tree.slots.actions()[0, 0])
    expanded = root_actions[np.asarray(tree.slots.chance[0, 0]) >= 0]
    caption = f"{title}: the search tree from the start; the exported policy's first guess "
    # The exact search of the certificates may have found a better policy than the tree's,
    # opening with a guess the tree never expanded.
    caption += (f"{first} in blue" if action in expanded else
                f"{first} (the exact search's) is not in it")
    written = viz.draw(tree, path, 0, max_depth=depth, title=caption, quiet=quiet,
                       highlight=action, **cuts)
    return written, caption
  row = result.opening_rows[0]
  outcomes = opening_roots(puzzle, first)[0]
  feedbacks = np.asarray(puzzle.table)[:, names.index(first)]
  parts = []
  for offset, outcome in enumerate(outcomes):
    count = int(np.sum(feedbacks == outcome))
    parts.append((f"{puzzle.outcome_name(outcome)}\n{count} secret" + "s" * (count != 1),
                  result.trees[row + offset], 0))
  caption = (f"{title}: first guess {first} ({whose}), its {len(parts)} feedback "
             f"sub-tree{'s' * (len(parts) != 1)}")
  ev = result.evaluation
  root_label = (f"first guess {first}\n{ev.secrets} secrets\n"
                f"policy total {ev.total_guesses}")
  written = viz.draw_forest(parts, path, root_label=root_label, title=caption, quiet=quiet,
                            max_depth=max(depth - 1, 0), **cuts)
  return written, caption


def summary(puzzle, result) -> dict:
  """The ``--json`` object (its fields are described in docs/solving.md).

  ``proven_optimal`` is true only when the total is certified to be the game's optimum;
  ``proven_given_first`` when it is certified optimal among the policies that open with the
  fixed first guess (or one of the openings searched), true whenever ``proven_optimal`` is.
  ``achievable_total`` is the achievable bound (a policy the search holds takes at most that
  many guesses in total), ``lower_bound_total`` the optimistic bound (no policy takes fewer),
  and ``lower_bound_scope`` says which policies that lower bound is over: ``"game"`` (every
  policy) or ``"given_first"`` (the policies opening so); the history's optimistic bounds
  too. The earlier names of those three (:data:`OLD_NAMES`) are kept as aliases for one
  release."""
  ev = result.evaluation
  found = {"game": puzzle.name, "secrets": ev.secrets, "first_guess": result.policy.get("guess"),
          "total_guesses": ev.total_guesses,
          "expected_guesses": round(ev.expected_guesses, 6), "worst_case": ev.worst_case,
          "proven_optimal": result.proven_optimal,
          "proven_given_first": result.proven_given_first,
          "achievable_total": round(result.bound_total, 3),
          "lower_bound_total": (None if result.upper_total is None else
                                round(result.upper_total, 3)),
          "lower_bound_scope": result.upper_total_scope,
          "simulations": result.simulations, "nodes": result.nodes,
          "subproblems_proven": (None if result.subproblems is None else
                                 list(result.subproblems)),
          "bytes_per_node": None if result.memory is None else round(result.memory.per_node),
          "memory_estimate_gb": (None if result.memory is None else
                                 round(result.memory.total / (1 << 30), 2)),
          "seconds": round(result.seconds, 2),
          "resumed_from_simulations": result.resumed_from_simulations,
          "phases": {name: round(value, 3) for name, value in result.phases.items()},
          "first_guesses": None if result.root is None else _first_guesses(result.root),
          "history": _thinned(result.history)}
  found.update(_aliases(found))
  return found


# The ``--json`` fields renamed, by their new names: the old names read inverted (the
# achievable bound was ``bound_total``; the lower bound on the total, ``upper_total``, an
# upper bound on the value, which is minus the guesses). Written as aliases for one release.
OLD_NAMES = {"achievable_total": "bound_total", "lower_bound_total": "upper_total",
             "lower_bound_scope": "upper_total_scope"}


def _aliases(fields: dict) -> dict:
  """The old names (:data:`OLD_NAMES`) of the renamed fields in ``fields``, same values."""
  return {old: fields[new] for new, old in OLD_NAMES.items() if new in fields}


def _first_guesses(root) -> dict:
  """The ``--json`` view of the search over first guesses (a :class:`RootReport`)."""
  return {"count": root.first_guesses, "ruled_out": root.ruled_out, "open": root.open,
          "root_visits": root.visits,
          "visited": [_opening(o) for o in root.openings]}


def _opening(o) -> dict:
  """One visited first guess in ``first_guesses.visited``, with the old names' aliases."""
  figure = _json_figure
  found = {"guess": o.guess, "visits": o.visits, "simulations": o.simulations,
           "achievable_total": figure(o.bound_total),
           "lower_bound_total": figure(o.upper_total),
           "estimate_total": figure(o.estimate_total), "retired": o.retired}
  found.update(_aliases(found))
  return found


def _thinned(history, points: int = 100) -> list:
  """At most ``points`` evenly spaced entries of the search's history (the last always),
  each ``[simulations, seconds, achievable_total, lower_bound_total]``, rounded."""
  step = max(1, -(-len(history) // points))
  kept = list(history[::step])
  if history and kept[-1] is not history[-1]:
    kept.append(history[-1])
  return [[sims, round(secs, 3), _json_figure(bound), _json_figure(upper)]
          for sims, secs, bound, upper in kept]


def _json_figure(value):
  """A bound for the JSON: rounded, or ``None`` where there is none yet (NaN, infinity and
  ``None`` are not JSON numbers)."""
  return None if value is None or not math.isfinite(value) else round(value, 3)
