"""Which Wordle first guesses can still beat the best known total? One JSON line.

The best known total over all answers is the incumbent (default 11219, proven optimal given
``tarse`` for the 3158 / 14855 lists: docs/solving.md). An opening is *ruled out* when an
admissible lower bound on its best total (given that first guess) is **>= the incumbent**:
it cannot do better, and an opening that could at best tie does not beat it. Two bounds
(:mod:`jaxsearch.guessing.openings`):

1. the one-step bound of every opening (``S + Σ_P T(|P|)``, the solver's own bound on each
   first guess), all at once;
2. the two-step bound (each part ``P`` also pays its best second guess) of the openings the
   first leaves open, in order of their one-step bound (``--order best``: lowest first, the
   openings most likely to beat the incumbent; ``worst``: highest first, the quickest to rule
   out; ``random``: a uniform sample, to estimate the share two steps would rule out),
   until ``--two-step-seconds``. The incumbent's own opening is bounded first and is never
   counted as remaining (its optimum is the incumbent).

    python scripts/wordle_openings.py                                # 20 s of two-step bounds
    python scripts/wordle_openings.py --two-step-seconds 240 --order random --plot bounds.png
    /usr/bin/time -v python scripts/wordle_openings.py               # peak memory

Prints ``{"incumbent", "rule", "openings", "one_step": {ruled_out, seconds}, "two_step":
{engine, order, bounded, ruled_out, seconds, seconds_per_opening}, "remaining",
"incumbent_bounds", "best_two_step", "best_one_step", "seconds", "peak_rss_gib"}``: the
openings with the lowest two-step bound (of those bounded) and the lowest one-step bound.
``--plot F`` draws a histogram of the bounds with the incumbent marked. On a CPU the two-step
bounds come from numpy (``--engine auto``; 0.45 s an opening against 0.8 s for the JAX kernel
here), elsewhere from the batched JAX kernel.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from jaxsearch.app import timing

KNOWN = {("nyt", "tarse", 11219): "proven optimal given tarse"}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lists", default="nyt", choices=["nyt", "orig"])
  parser.add_argument("--incumbent", type=int, default=11219,
                      help="best known total over all answers (default 11219)")
  parser.add_argument("--incumbent-opening", default="tarse",
                      help="the first guess that achieves it (default tarse)")
  parser.add_argument("--two-step-seconds", type=float, default=20.0,
                      help="time for two-step bounds (default 20; 0: none)")
  parser.add_argument("--order", default="best", choices=["best", "worst", "random"])
  parser.add_argument("--engine", default="auto", choices=["auto", "numpy", "jax"],
                      help="two-step engine (auto: numpy on a CPU, the JAX kernel elsewhere)")
  parser.add_argument("--batch", type=int, default=0,
                      help="openings per two-step call (default: 1 numpy, 8 jax)")
  parser.add_argument("--opening-chunk", type=int, default=0,
                      help="jax: openings per kernel step (default: 1 on a CPU, 8 elsewhere)")
  parser.add_argument("--guess-chunk", type=int, default=0,
                      help="jax: second guesses per kernel step (default: 32 on a CPU, 64 "
                           "elsewhere)")
  parser.add_argument("--top", type=int, default=10, help="openings listed in each best_* list")
  parser.add_argument("--seed", type=int, default=0, help="for --order random")
  parser.add_argument("--plot", default=None, help="write a histogram of the bounds (PNG)")
  args = parser.parse_args(argv)

  started = time.perf_counter()
  import jax

  from jaxsearch.guessing import openings
  from jaxsearch.games import wordle

  puzzle = wordle.puzzle(*wordle.default_paths(args.lists))
  names = list(puzzle.guess_names)
  num_secrets, num_guesses = puzzle.table.shape
  if args.incumbent_opening not in names:
    raise SystemExit(f"--incumbent-opening {args.incumbent_opening!r} is not an allowed guess")
  incumbent_index = names.index(args.incumbent_opening)
  incumbent = args.incumbent
  note = KNOWN.get((args.lists, args.incumbent_opening, incumbent), "as given")
  loaded = time.perf_counter()

  # Phase 1: the one-step bound of every opening.
  histogram = openings.feedback_histogram(puzzle.table, puzzle.game.num_outcomes)
  one_step = openings.opening_bounds(puzzle, histogram)
  one_done = time.perf_counter()
  out_one = one_step >= incumbent

  # Phase 2: the two-step bound of the openings still open, the incumbent's first.
  on_cpu = jax.default_backend() == "cpu"
  engine = args.engine
  if engine == "auto":
    engine = "numpy" if on_cpu else "jax"
  batch = args.batch or (1 if engine == "numpy" else 8)
  # CPU: one opening at a time, guess chunks whose histogram stays in cache (measured); an
  # accelerator wants more bins per step (not measured yet).
  kernel = {"opening_chunk": args.opening_chunk or (1 if on_cpu else 8),
            "guess_chunk": args.guess_chunk or (32 if on_cpu else 64)}
  # One P for the whole run: one compiled program (jax).
  max_parts = max(8, -(-int(openings.searched_parts(histogram, puzzle.solved_outcome).max())
                      // 8) * 8)
  open_ = np.flatnonzero(~out_one)
  if args.order == "best":
    queue = open_[np.argsort(one_step[open_], kind="stable")]
  elif args.order == "worst":
    queue = open_[np.argsort(-one_step[open_], kind="stable")]
  else:
    queue = np.random.default_rng(args.seed).permutation(open_)
  queue = np.concatenate([[incumbent_index], queue[queue != incumbent_index]])
  two_step = np.full(num_guesses, -1, np.int64)
  deadline = time.perf_counter() + args.two_step_seconds
  two_start = time.perf_counter()
  done = 0
  while done < len(queue) and (done == 0 or time.perf_counter() < deadline):
    group = queue[done:done + batch]
    if engine == "jax" and len(group) < batch:  # same shape: no recompiling
      group = np.concatenate([group, np.full(batch - len(group), group[0])])
    bounds = openings.two_step_bounds(puzzle, group, engine=engine, max_parts=max_parts,
                                      **(kernel if engine == "jax" else {}))
    take = min(batch, len(queue) - done)
    two_step[queue[done:done + take]] = bounds[:take]
    done += take
  two_seconds = time.perf_counter() - two_start
  bounded = two_step >= 0
  out_two = bounded & ~out_one & (two_step >= incumbent)
  out_two[incumbent_index] = False  # its optimum is the incumbent: reported on its own
  remaining = ~out_one & ~out_two
  remaining[incumbent_index] = False

  def listing(bound, among):
    picked = np.flatnonzero(among)
    picked = picked[np.argsort(bound[picked], kind="stable")][:args.top]
    return [{"opening": names[g], "one_step": int(one_step[g]),
             "two_step": int(two_step[g]) if bounded[g] else None} for g in picked.tolist()]

  others = int(bounded.sum()) - 1  # openings bounded besides the incumbent's
  result = {
      "incumbent": f"{incumbent} ({args.incumbent_opening}, {note})",
      "rule": "ruled out when bound >= incumbent (an opening that can only tie does not beat "
              "it)",
      "lists": f"{num_secrets} answers / {num_guesses} guesses ({args.lists})",
      "openings": num_guesses,
      "one_step": {"ruled_out": int(out_one.sum()),
                   "seconds": round(one_done - loaded, 2)},
      "two_step": {"engine": engine, "order": args.order,
                   "budget_seconds": args.two_step_seconds,
                   "bounded": others, "ruled_out": int(out_two.sum()),
                   "ruled_out_share": round(float(out_two.sum()) / max(others, 1), 4),
                   "seconds": round(two_seconds, 2),
                   "seconds_per_opening": round(two_seconds / max(done, 1), 3)},
      "remaining": int(remaining.sum()),
      "incumbent_bounds": {"opening": args.incumbent_opening,
                           "one_step": int(one_step[incumbent_index]),
                           "two_step": int(two_step[incumbent_index])},
      # The most promising openings: lowest two-step bound among those bounded, and lowest
      # one-step bound of all.
      "best_two_step": listing(two_step, bounded),
      "best_one_step": listing(one_step, np.ones(num_guesses, bool)),
      "load_seconds": round(loaded - started, 2),
      "seconds": round(time.perf_counter() - started, 2),
      "peak_rss_gib": timing.gib(timing.peak_rss_bytes()),
  }
  if args.plot:
    _plot(args.plot, one_step, two_step[bounded], incumbent, args.incumbent_opening, result)
  timing.emit(result)
  return 0


def _plot(path, one_step, two_step, incumbent, opening, result) -> None:
  """Histogram of the one-step bounds of every opening and of the two-step bounds computed,
  the incumbent as a vertical line (bars right of it are ruled out)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(8, 4.5))
  both = np.concatenate([one_step, two_step])
  edges = np.linspace(both.min(), max(both.max(), incumbent + 1), 80)
  ax.hist(one_step, bins=edges, color="0.6", label=f"one-step bound, all {len(one_step)}")
  if len(two_step):
    ax.hist(two_step, bins=edges, color="tab:blue", alpha=0.8,
            label=f"two-step bound, {len(two_step)} computed")
  ax.axvline(incumbent, color="tab:red",
             label=f"incumbent {incumbent} ({opening}): bound ≥ it is ruled out")
  ax.set_yscale("log")
  ax.set_xlabel("lower bound on the total number of guesses over all answers")
  ax.set_ylabel("openings")
  ax.set_title(f"Wordle first guesses: {result['remaining']} of {result['openings']} "
               f"still open")
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


if __name__ == "__main__":
  raise SystemExit(main())
