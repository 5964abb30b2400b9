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
    clock: seconds, for the elapsed time and the spacing of the plain lines.
  """

  def __init__(self, title: str, seconds: float, *, max_simulations: Optional[int] = None,
               quiet: bool = False, console=None, every: float = 5.0,
               upper_label: str = "≥ {:.1f}", clock: Callable[[], float] = time.monotonic):
    if console is None and not quiet:
      from rich.console import Console
      console = Console(stderr=True)
    self.title, self.seconds, self.max_simulations = title, seconds, max_simulations
    self.quiet, self.console, self.every = quiet, console, every
    self.upper_label, self.clock = upper_label, clock
    self.live = not quiet and console.is_terminal
    self.progress = self.task = None
    self.started = self.printed = None
    self.last = None  # the last chunk's figures

  def __enter__(self):
    self.started = self.clock()
    if self.quiet:
      return self
    if self.live:
      from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
      self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                               TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                               console=self.console)
      self.progress.start()
      # No time limit (--seconds inf): a bar without an end.
      self.task = self.progress.add_task(
          f"solving {self.title}", status="compiling…",
          total=self.seconds if math.isfinite(self.seconds) else None)
    else:
      self._line("compiling, then searching " + (f"for up to {self.seconds:g} s"
                                                 if math.isfinite(self.seconds) else
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
    first, self.last = self.last is None, info
    if self.quiet:
      return
    ending = bool(info["proven"] or info["seconds"] >= self.seconds or (
        self.max_simulations is not None and info["simulations"] >= self.max_simulations))
    rate = info["simulations"] / max(info["seconds"], 1e-9)
    status = (self._bounds(info["bound"], info["upper"])
              + f" · {info['simulations']} sims ({rate:.0f}/s) · {info['nodes']} nodes"
              + (" · extracting and evaluating the policy…" if ending else ""))
    if self.live:
      self.progress.update(self.task, completed=min(info["seconds"], self.seconds),
                           status=status)
    elif first or ending or self.clock() - self.printed >= self.every:
      self._line(status)

  def finish(self, result) -> None:
    """Shows the result's bounds (a :class:`~jaxsearch.solve.SolveResult`): after the
    extraction, the exact evaluation and the certificates, they may be tighter than the
    last chunk's, and the progress must not end on older ones than the result printed
    next."""
    if self.quiet:
      return
    proven = ("proven optimal" if result.proven_optimal else
              "proven given the first guess" if result.proven_given_first else "not proven")
    status = (self._bounds(result.bound_total, result.upper_total)
              + f" · {proven} · {result.simulations} sims · {result.nodes} nodes")
    if self.live:
      full = self.progress.tasks[0].total or 1  # a bar without an end (or of 0 s) ends full
      self.progress.update(self.task, status=status, total=full, completed=full)
    else:
      self._line(f"done · {status}")

  def _bounds(self, bound: float, upper: Optional[float]) -> str:
    return f"total guesses ≤ {bound:.1f}" + (
        "" if upper is None else " " + self.upper_label.format(upper))

  def _line(self, text: str) -> None:
    """One complete plain line, with the time since the start (no wrapping, no markup)."""
    self.printed = self.clock()
    file = self.console.file
    print(f"solving {self.title} [{self.printed - self.started:.1f} s]: {text}", file=file,
          flush=True)


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
  from jaxsearch.solve.puzzle import opening_roots
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
  ``upper_total_scope`` says what ``upper_total`` and the history's optimistic bounds bound:
  ``"game"`` (every policy) or ``"given_first"`` (the policies opening so)."""
  ev = result.evaluation
  return {"game": puzzle.name, "secrets": ev.secrets, "first_guess": result.policy.get("guess"),
          "total_guesses": ev.total_guesses,
          "expected_guesses": round(ev.expected_guesses, 6), "worst_case": ev.worst_case,
          "proven_optimal": result.proven_optimal,
          "proven_given_first": result.proven_given_first,
          "bound_total": round(result.bound_total, 3),
          "upper_total": None if result.upper_total is None else round(result.upper_total, 3),
          "upper_total_scope": result.upper_total_scope,
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


def _first_guesses(root) -> dict:
  """The ``--json`` view of the search over first guesses (a :class:`RootReport`)."""
  figure = _json_figure
  return {"count": root.first_guesses, "ruled_out": root.ruled_out, "open": root.open,
          "root_visits": root.visits,
          "visited": [{"guess": o.guess, "visits": o.visits, "simulations": o.simulations,
                       "bound_total": figure(o.bound_total),
                       "upper_total": figure(o.upper_total),
                       "estimate_total": figure(o.estimate_total), "retired": o.retired}
                      for o in root.openings]}


def _thinned(history, points: int = 100) -> list:
  """At most ``points`` evenly spaced entries of the search's history (the last always),
  each ``[simulations, seconds, bound_total, upper_total]``, rounded."""
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
