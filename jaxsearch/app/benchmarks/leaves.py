"""``jaxsearch bench leaves``: simulations per second of the solver's chunk program against
the paths each tree descends per step (``leaves_per_step``), on Mastermind sub-problems.

The trees are the solver's own (:class:`jaxsearch.solve.chunked.ChunkedSearch` on the
options :class:`jaxsearch.solve.SolveOptions` builds for a batch: the node budget shared out,
``--slots`` and ``--bound-slots`` as ``jaxsearch solve mastermind``), one per feedback
sub-problem of the first guesses: with ``--first none`` (the default) those of every opening
up to symmetry in one batch, as ``jaxsearch solve mastermind`` searches them (52 trees for
4×6), else those of ``--first``. For each ``K`` of ``--leaves-per-step`` the batch gets trees
of its own and a chunk program of its own (``--chunk`` paths per tree, ``ceil(chunk / K)``
steps); the first chunk compiles it (untimed), then ``--chunks`` chunks are timed round by
round, one chunk of every ``K`` per round, so that the noise of a shared machine hits them
alike. Each chunk is what the solver runs (the proof rule where the solver's
``proof_every`` says so), waited for by its one record read.

Per ``K``: the median and fastest chunk seconds, ``simulations_per_second`` (paths of every
tree per median chunk second), ``nodes_per_second`` (new nodes, each one estimator
evaluation, per second of the timed chunks: the useful work, since paths of one step that
share a leaf evaluate it once), the trees proven and the nodes at the end, and
``speedup`` (simulations per second over the first ``K``'s). The load average of the
machine before and after is printed with them.

    jaxsearch bench leaves                                  # 4×6, K = 1,4,16,64
    jaxsearch bench leaves --first 1122 --leaves-per-step 1,8 --chunks 6
    jaxsearch bench leaves --quick                          # 3×3, a smoke run

Prints one JSON line.
"""

from __future__ import annotations

import os
import statistics
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jaxsearch.app import timing


def leaves_list(text: str) -> list:
  """``"1,4,16"`` -> ``[1, 4, 16]`` (positive integers, in the order given)."""
  import argparse
  try:
    values = [int(part) for part in text.split(",") if part.strip()]
  except ValueError:
    raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got "
                                     f"{text!r}") from None
  if not values or min(values) < 1:
    raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got "
                                     f"{text!r}")
  return values


def sub_problems(puzzle, first: str):
  """``(roots [B], weights f64[B], guesses)``: the feedback sub-problems of ``first`` (or
  of every opening up to symmetry, ``"none"``), stacked, each weighted by minus its
  secrets (figures in total guesses, as the solver's)."""
  from jaxsearch.guessing.subproblems import opening_roots
  from jaxsearch.solve.tree_reader import secrets_in
  guesses = list(puzzle.openings) if first == "none" else [first]
  states = [state for guess in guesses for state in opening_roots(puzzle, guess)[1]]
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  sizes = np.array([len(secrets_in(np.asarray(bits), len(puzzle.secrets)))
                    for bits in np.asarray(roots.remaining)], np.float64)
  return roots, -sizes, guesses


class Batch:
  """One ``K``'s trees and chunk program: a :class:`~jaxsearch.solve.chunked.ChunkedSearch`
  on the solver's options for the batch, its chunks counted and timed."""

  def __init__(self, puzzle, roots, weights, options, seed: int):
    from jaxsearch.solve import chunked
    self.loop = chunked.ChunkedSearch(puzzle, roots, weights, options)
    self.key = jax.random.PRNGKey(seed)
    self.loop.begin(jax.block_until_ready(self.loop.init(self.loop.tables, self.key, roots)))
    self.seconds, self.new_nodes = [], 0

  def chunk(self, timed: bool) -> float:
    """One chunk of the solver's (its rule by ``proof_every``); its seconds."""
    loop = self.loop
    loop.chunks += 1
    before = int(loop.num_nodes.sum())
    with timing.Stopwatch() as watch:
      loop.advance(self.key, loop.simulations,
                   loop.options.proof_chunk(loop.problem.game, loop.chunks))
    loop.simulations += loop.options.search.chunk
    if timed:
      self.seconds.append(watch.seconds)
      self.new_nodes += int(loop.num_nodes.sum()) - before
    return watch.seconds

  def report(self, leaves: int, trees: int) -> dict:
    """The figures of this ``K`` (see the module docstring)."""
    from jaxsearch.guessing.subproblems import meets
    loop, chunk = self.loop, self.loop.options.search.chunk
    median = statistics.median(self.seconds)
    upper = loop.upper if loop.upper is not None else np.full(trees, np.nan)
    # The figures are total guesses (the bounds times minus the secrets): the achievable
    # one above the optimistic one until they meet.
    proven = sum(meets(float(b), float(u)) for b, u in zip(loop.bound, upper))
    full = int(np.sum(loop.num_nodes + loop.problem.game.num_outcomes > loop.nodes_per_tree))
    return {"leaves_per_step": leaves, "steps_per_chunk": -(-chunk // leaves),
            "chunk_seconds": round(median, 4), "fastest_seconds": round(min(self.seconds), 4),
            "simulations_per_second": round(chunk * trees / median, 1),
            "nodes_per_second": round(self.new_nodes / sum(self.seconds), 1),
            "simulations": loop.simulations, "nodes": int(loop.num_nodes.sum()),
            "trees_proven": int(proven), "trees_full": full}


def run(args) -> dict:
  """The measurement; the JSON record."""
  from jaxsearch.games import mastermind
  from jaxsearch.guessing.subproblems import subproblem_min_nodes
  from jaxsearch.solve import SolveOptions
  pegs, colours = (int(x) for x in args.mastermind.lower().split("x"))
  puzzle = mastermind.puzzle(pegs, colours, exact_search=False)
  roots, weights, guesses = sub_problems(puzzle, args.first)
  trees = len(weights)
  load_before = os.getloadavg()
  batches, compile_seconds = {}, {}
  for leaves in args.leaves_per_step:
    options = SolveOptions.from_keywords(
        "jaxsearch bench leaves", chunk=args.chunk, leaves_per_step=leaves,
        max_nodes=args.nodes, num_slots=args.slots, bound_slots=args.bound_slots,
        proof_every=args.proof_every, seed=args.seed, seconds=float("inf")
    ).for_trees(trees, subproblem_min_nodes(puzzle.game.num_outcomes))
    with timing.Stopwatch() as watch:
      batches[leaves] = Batch(puzzle, roots, weights, options, args.seed)
      batches[leaves].chunk(timed=False)  # compiles the chunk program
    compile_seconds[leaves] = round(watch.seconds, 1)
    print(f"# K={leaves}: compiled and first chunk in {watch.seconds:.1f} s", file=sys.stderr,
          flush=True)
  for _ in range(args.chunks):
    for batch in batches.values():
      batch.chunk(timed=True)
  rows = []
  for leaves, batch in batches.items():
    rows.append(dict(batch.report(leaves, trees), first_chunk_seconds=compile_seconds[leaves]))
  for row in rows:
    row["speedup"] = round(row["simulations_per_second"] / rows[0]["simulations_per_second"],
                           2)
  return {"benchmark": "leaves", "game": f"mastermind {pegs}x{colours}",
          "first": args.first, "openings": guesses, "trees": trees, "chunk": args.chunk,
          "timed_chunks": args.chunks, "nodes_budget": args.nodes, "slots": args.slots,
          "bound_slots": args.bound_slots, "proof_every": args.proof_every,
          "backend": jax.default_backend(), "cpus": os.cpu_count(),
          "load_average_before": [round(x, 2) for x in load_before],
          "load_average_after": [round(x, 2) for x in os.getloadavg()], "by_leaves": rows}


def main(argv=None, prog: str = "jaxsearch bench leaves") -> int:
  """Runs the benchmark with the command line ``argv``; returns the exit status."""
  from jaxsearch.cli.common import ArgumentParser, positive_int
  parser = ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
  parser.add_argument("--mastermind", default="4x6", metavar="PxC",
                      help="Mastermind with P pegs and C colours (default 4x6)")
  parser.add_argument("--first", default="none",
                      help="the first guess whose feedbacks are the trees, or none: every "
                           "opening up to symmetry, in one batch (default)")
  parser.add_argument("--leaves-per-step", type=leaves_list, default=[1, 4, 16, 64],
                      metavar="K,K,...", help="the leaves per step to compare (default "
                                              "1,4,16,64; each at most --chunk)")
  parser.add_argument("--chunk", type=positive_int, default=64,
                      help="paths per tree in a chunk (default 64)")
  parser.add_argument("--chunks", type=positive_int, default=4,
                      help="timed chunks of each K, after the one that compiles (default 4)")
  parser.add_argument("--nodes", type=positive_int, default=200_000,
                      help="node budget of each K's batch, shared out (default 200000, "
                           "jaxsearch solve mastermind's)")
  parser.add_argument("--slots", type=positive_int, default=128)
  parser.add_argument("--bound-slots", type=int, default=96)
  parser.add_argument("--proof-every", type=int, default=1,
                      help="the solver's proof_every (default 1: the proof rule alone)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--quick", action="store_true",
                      help="Mastermind 3x3, chunks of 16, K = 1,4,16, 2 timed chunks")
  args = parser.parse_args(argv)
  if args.quick:
    args.mastermind, args.chunk, args.chunks, args.nodes = "3x3", 16, 2, 20_000
    args.slots, args.bound_slots = 32, 24
    args.leaves_per_step = [k for k in args.leaves_per_step if k <= 16] or [1]
  too_many = [k for k in args.leaves_per_step if k > args.chunk]
  if too_many:
    parser.error(f"--leaves-per-step {too_many[0]} is larger than --chunk {args.chunk}")
  timing.emit(run(args))
  return 0
