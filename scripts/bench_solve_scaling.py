"""How batched Wordle solving scales with the batch of trees and the number of answers.

    python scripts/bench_solve_scaling.py                         # defaults below, ~10 min
    python scripts/bench_solve_scaling.py --batches 1,8 --answers 400 --chunks 2   # smoke

Two sweeps of :func:`jaxsearch.guessing.solve` (AVTS, Thompson chunks only), both after the first
guess ``--first`` (default tarse) on the 3158 / 14855 lists (``$WORDLE_DATA``, else the copies
shipped in ``jaxsearch/data/wordle``):

* **batch**: all 3158 answers; ``B`` trees, the sub-problems of the first guess in a fixed
  shuffled order (cycled when ``B`` exceeds their number, 158 for tarse);
* **answers**: a random subset of ``n`` answers (seed 0; the guesses stay all 14855), every
  sub-problem of the first guess in one batch.

Each configuration compiles once (the first chunk, reported as ``first_chunk_s``), then runs
``--chunks`` chunks of ``--chunk`` simulations per tree; ``chunk_s`` is their median wall
time, ``tree_simulations_per_s = B * chunk / chunk_s``, ``nodes_per_tree_simulation`` the
nodes one simulation creates (an expansion creates a node per possible feedback). ``bytes_per_node`` is the tree's size (every array of the batch) over ``B * N``:
the state's bitset, the slots and the chance records together. Prints one JSON line.
Timings are wall-clock on a shared machine: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np


from jaxsearch.games import wordle  # noqa: E402
from jaxsearch import guessing as guessing_lib  # noqa: E402


def _ints(text: str) -> list[int]:
  return [int(x) for x in text.split(",") if x]


def measure(puzzle, states, args) -> dict:
  """Runs one configuration over ``states`` (a list of unbatched root states)."""
  roots = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
  batch = len(states)
  found = guessing_lib.solve(
      puzzle, roots, seconds=1e9, max_simulations=args.chunk * (args.chunks + 1),
      chunk=args.chunk, max_nodes=args.nodes, num_slots=args.slots, proof_every=0,
      seed=args.seed)
  history = found.history
  times = [later[1] - earlier[1] for earlier, later in zip(history, history[1:])]
  chunk_s = statistics.median(times)
  tree_bytes = sum(x.nbytes for x in jax.tree.leaves(found.trees))
  nodes = np.concatenate([np.asarray(tree.num_nodes) for tree in found.trees])
  return dict(trees=batch, first_chunk_s=round(history[0][1], 2), chunk_s=round(chunk_s, 3),
              tree_simulations_per_s=round(batch * args.chunk / chunk_s, 1),
              nodes=int(nodes.sum()), nodes_per_tree_simulation=round(
                  (int(nodes.sum()) - batch) / (batch * found.simulations), 1),
              bytes_per_node=round(tree_bytes / (batch * args.nodes)))


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--first", default="tarse")
  parser.add_argument("--batches", default="1,8,32,158,256",
                      help="tree counts of the batch sweep (comma-separated)")
  parser.add_argument("--answers", default="400,1600,3158",
                      help="answer-list sizes of the answers sweep (comma-separated)")
  parser.add_argument("--chunk", type=int, default=4, help="simulations per jitted call")
  parser.add_argument("--chunks", type=int, default=3, help="timed chunks per configuration")
  parser.add_argument("--nodes", type=int, default=1024, help="nodes per tree")
  parser.add_argument("--slots", type=int, default=64)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)

  answers_path, guesses_path = wordle.default_paths()
  all_answers = wordle.load_words(answers_path)
  result = dict(bench="solve_scaling", first=args.first, chunk=args.chunk, nodes=args.nodes,
                slots=args.slots, batch=[], answers=[])
  full = wordle.puzzle(answers_path, guesses_path)
  _, states = guessing_lib.opening_roots(full, args.first)
  order = np.random.default_rng(args.seed).permutation(len(states))
  for batch in _ints(args.batches):
    row = measure(full, [states[order[i % len(states)]] for i in range(batch)], args)
    result["batch"].append(row)
    print(json.dumps(dict(sweep="batch", **row)), file=sys.stderr)
  rng = np.random.default_rng(args.seed)
  with tempfile.TemporaryDirectory() as folder:
    for size in _ints(args.answers):
      if size >= len(all_answers):
        puzzle = full
      else:
        subset = sorted(rng.choice(len(all_answers), size, replace=False).tolist())
        path = os.path.join(folder, f"answers_{size}.txt")
        with open(path, "w") as handle:
          handle.write("\n".join(all_answers[i] for i in subset) + "\n")
        puzzle = wordle.puzzle(path, guesses_path)
      _, sub_states = guessing_lib.opening_roots(puzzle, args.first)
      row = dict(answers=len(puzzle.secrets), **measure(puzzle, sub_states, args))
      result["answers"].append(row)
      print(json.dumps(dict(sweep="answers", **row)), file=sys.stderr)
  print(json.dumps(result))
  return 0


if __name__ == "__main__":
  sys.exit(main())
