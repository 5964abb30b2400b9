"""The benchmarks a user runs: ``jaxsearch bench SUBCOMMAND``, one module each.

    jaxsearch bench [engine] [--quick] ...  search throughput against mctx (jaxsearch.app.bench)
    jaxsearch bench ab --base DIR           one search timed in two checkouts, side by side
    jaxsearch bench compat                  mctx's API: mctx, jaxsearch.compat and the engine
    jaxsearch bench scaling                 throughput against batch size and device count
    jaxsearch bench sample-efficiency       selection rules' evaluations to an optimum (Garnets)
    jaxsearch bench rules                   the same on Wordle sub-problems, exact optima
    jaxsearch bench article                 the AVTS article's experiment, its own protocol
    jaxsearch bench tictactoe               minimax mistakes over every decisive position
    jaxsearch bench solve                   ``jaxsearch solve wordle``: total, time, memory
    jaxsearch bench leaves                  the solver's chunk throughput against leaves per step

Plain ``jaxsearch bench`` (no subcommand) is ``jaxsearch bench engine``. Each subcommand
takes ``--help`` and ``--quick`` (tiny shapes, a smoke run; ``solve``: a short search) and
prints one JSON line (``engine``: a table on a terminal, JSON lines with ``--json``). They
time with :mod:`jaxsearch.app.timing`. Like the rest of the application layer they may
import the games; nothing here is imported until a subcommand runs.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

# subcommand -> (module, one line of what it measures)
SUBCOMMANDS = {
    "engine": ("jaxsearch.app.bench", "search throughput against mctx (the default)"),
    "ab": ("jaxsearch.app.benchmarks.ab", "one search timed in two checkouts"),
    "compat": ("jaxsearch.app.benchmarks.compat",
               "mctx's API: mctx, jaxsearch.compat and the engine"),
    "scaling": ("jaxsearch.app.benchmarks.scaling",
                "throughput against batch size and device count"),
    "sample-efficiency": ("jaxsearch.app.benchmarks.sample_efficiency",
                          "selection rules' evaluations to an optimum on random MDPs"),
    "rules": ("jaxsearch.app.benchmarks.rules",
              "selection rules on Wordle sub-problems against exact optima"),
    "article": ("jaxsearch.app.benchmarks.article",
                "the AVTS article's experiment under its own protocol"),
    "tictactoe": ("jaxsearch.app.benchmarks.tictactoe",
                  "minimax mistakes over every decisive tic-tac-toe position"),
    "solve": ("jaxsearch.app.benchmarks.solve",
              "jaxsearch solve wordle: total, proof, time and peak memory"),
    "leaves": ("jaxsearch.app.benchmarks.leaves",
               "the solver's chunk throughput against leaves per step"),
}


def overview() -> str:
  """The subcommands, one line each (what ``jaxsearch bench --help`` prints first)."""
  width = max(map(len, SUBCOMMANDS))
  lines = ["usage: jaxsearch bench [SUBCOMMAND] [options]   (no subcommand: engine)", "",
           "subcommands (`jaxsearch bench SUBCOMMAND --help` for each one's options):"]
  lines += [f"  {name:<{width}}  {what}" for name, (_, what) in SUBCOMMANDS.items()]
  return "\n".join(lines) + "\n"


def main(argv: Sequence[str] = ()) -> int:
  """Runs ``jaxsearch bench ARGV``: the subcommand named first, else the engine benchmark
  with every argument (so ``jaxsearch bench --quick`` is ``jaxsearch bench engine
  --quick``). Returns the exit status."""
  argv = list(argv)
  if argv and argv[0] in SUBCOMMANDS:
    name, rest, prog = argv[0], argv[1:], f"jaxsearch bench {argv[0]}"
  elif argv and not argv[0].startswith("-"):
    print(f"jaxsearch bench: no benchmark named {argv[0]!r}; choose from "
          f"{', '.join(SUBCOMMANDS)}", file=sys.stderr)
    return 2
  else:
    name, rest, prog = "engine", argv, "jaxsearch bench"
    if {"-h", "--help"} & set(argv):
      print(overview())
  module = importlib.import_module(SUBCOMMANDS[name][0])
  return int(module.main(rest, prog=prog) or 0)
