"""The training loop's reporting: ``metrics.jsonl`` rows, plots and the progress bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

def json_number(x):
  """A scalar array as a JSON number: integers and booleans exact, floats to 6 decimals."""
  x = np.asarray(x)
  return x.item() if x.dtype.kind in "iub" else round(float(x), 6)


def flatten_metrics(d: dict, prefix: str = "") -> dict:
  """Nested dicts as one level, keys joined with ``/`` (``{"a": {"b": 1}} -> {"a/b": 1}``)."""
  flat = {}
  for k, v in d.items():
    if isinstance(v, dict):
      flat.update(flatten_metrics(v, f"{prefix}{k}/"))
    else:
      flat[f"{prefix}{k}"] = v
  return flat


def truncate_metrics(path: Path, step: int) -> None:
  """Drops lines logged after ``step`` (a resumed run re-does those steps)."""
  if not path.exists():
    return
  kept = []
  for line in path.read_text().splitlines():
    try:
      if json.loads(line).get("step", 0) <= step:
        kept.append(line)
    except json.JSONDecodeError:
      break  # a line cut by a kill: everything after it is gone too
  path.write_text("".join(line + "\n" for line in kept))


def append_rows(path: Optional[Path], rows: list[dict], log_every: int, final: bool) -> None:
  """Appends to ``metrics.jsonl`` the rows due: every ``log_every``-th step's, an evaluated
  step's, and the last row when ``final``."""
  if path is None:
    return
  due = [row for i, row in enumerate(rows)
         if row["step"] % max(log_every, 1) == 0 or "eval_step" in row
         or (final and i == len(rows) - 1)]
  if due:
    with path.open("a") as f:
      f.write("".join(json.dumps(row) + "\n" for row in due))


def read_metrics(path: str | Path) -> list[dict]:
  """The rows of a ``metrics.jsonl``."""
  return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_metrics(metrics_path: str | Path, png_path: str | Path, title: str = "") -> Path:
  """Writes a PNG: the loss terms (left) and the evaluation metrics (right) against wall-clock
  minutes. Returns ``png_path``."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  rows = read_metrics(metrics_path)
  fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
  trained = [r for r in rows if r.get("updates", 0) > 0]
  for name in ("loss", "value_loss", "policy_loss", "policy_kl", "action_value_loss"):
    pts = [(r["time"] / 60, r[name]) for r in trained if name in r]
    if pts:
      left.plot(*zip(*pts), label=name, lw=1)
  left.set_xlabel("minutes")
  left.set_ylabel("loss")
  left.legend(fontsize=8)
  left.set_title("training loss")
  skip = {"eval_step", "eval_seconds", "games_vs_perfect", "losses_vs_perfect"}
  evals = [r for r in rows if "eval_step" in r]
  names = sorted({k for r in evals for k, v in r.items()
                  if k.startswith(("optimal", "net_", "search_", "random_")) and k not in skip
                  and isinstance(v, (int, float))})
  for name in names:
    pts = [(r["time"] / 60, r[name]) for r in evals if name in r]
    baseline = name.startswith("random_")  # a random player's score (one-player games)
    right.plot(*zip(*pts), marker="o", ms=3, label=name, lw=1, ls="--" if baseline else "-")
  losses_pts = [(r["time"] / 60, r["losses_vs_perfect"] / max(r["games_vs_perfect"], 1))
                for r in evals if "losses_vs_perfect" in r]
  if losses_pts:
    right.plot(*zip(*losses_pts), marker="x", ms=3, label="loss rate vs perfect", lw=1)
  right.set_xlabel("minutes")
  right.set_title("evaluation")
  if names or losses_pts:
    right.legend(fontsize=8)
  fig.suptitle(title)
  fig.tight_layout()
  png_path = Path(png_path)
  fig.savefig(png_path, dpi=110)
  plt.close(fig)
  return png_path


class ProgressBar:
  """A rich progress bar (``label``, e.g. ``training (cpu preset)``; step, positions/s, loss,
  latest evaluation) or nothing."""

  def __init__(self, enabled: bool, steps: int, minutes: float, console=None,
               label: str = "training"):
    self.enabled = enabled
    self.steps, self.minutes = steps, minutes
    self.console = console
    self.label = label
    self.progress = None

  def __enter__(self):
    if self.enabled:
      from rich.console import Console
      from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
      self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                               TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                               console=self.console or Console(stderr=True))
      self.progress.__enter__()
      total = self.steps if self.steps else self.minutes * 60
      self.task = self.progress.add_task(self.label, total=total, status="compiling…")
    return self

  def update(self, step, row, last_eval, elapsed):
    if self.progress is None:
      return
    parts = [f"step {step}", f"{row.get('positions_per_s', 0):.0f} pos/s"]
    if "loss" in row and row.get("updates", 0):
      parts.append(f"loss {row['loss']:.3f}")
    flat = flatten_metrics({k: v for k, v in last_eval.items()
                     if k not in ("eval_step", "eval_seconds")})
    if flat:
      parts.append("eval " + " ".join(
          f"{k.split('/')[-1] if '/' in k else k}={v:.3g}" if isinstance(v, float) else
          f"{k}={v}" for k, v in list(flat.items())[:4]))
    done = step if self.steps else min(elapsed, self.minutes * 60)
    self.progress.update(self.task, completed=done, status=" · ".join(parts))

  def __exit__(self, *exc):
    if self.progress is not None:
      self.progress.__exit__(*exc)
