"""The ``jaxsearch`` command line: play a game against the search, run the benchmark.

    jaxsearch --help
    jaxsearch play tictactoe [--simulations 2000] [--rule uct|puct] [--first human|search]
    jaxsearch play connect_four [--simulations 1000] [--checkpoint DIR] [--draw F] ...
    jaxsearch play pgx:ENV_ID [...]        (any pgx environment, e.g. pgx:othello, pgx:2048)
    jaxsearch train tictactoe|connect_four|pgx:ENV_ID [--minutes M] [--policy P] [--out DIR] [--resume]
        [--plot] [--json] [--seed S] [--steps N] [--set KEY=VALUE ...]
    jaxsearch bench [--quick] [--repeats N] [--only ...]      (the engine against mctx)
    jaxsearch bench SUBCOMMAND [...]    (ab, compat, scaling, sample-efficiency, rules, ...)
    jaxsearch solve mastermind [--pegs 4 --colours 6] [--seconds 60] [--export F] [--json] [--plot F]
        [--draw F]
    jaxsearch solve wordle [--answers FILE --guesses FILE] [--first WORD] [...]
    jaxsearch evaluate F

One module per verb (:mod:`jaxsearch.cli.play`, ``train``, ``solve``, ``evaluate``), each with
its ``add_parser`` and ``run``; ``bench`` forwards to :mod:`jaxsearch.app.benchmarks`. The command
line is the application layer with :mod:`jaxsearch.app`: the verbs find a game by its name in
:mod:`jaxsearch.app.registry`. JAX is imported inside the verbs only (and ``jaxsearch`` loads
its submodules lazily), so ``--help`` answers in about 0.1 s. Compiled programs are kept between runs in JAX's persistent cache
(:func:`compile_cache_dir`; ``JAXSEARCH_CACHE_DIR=`` turns it off).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from jaxsearch.cli import common, evaluate, play, solve, train
from jaxsearch.cli.common import CommandError


def _bench(argv: Sequence[str]) -> int:
  from jaxsearch.app import benchmarks
  return benchmarks.main(list(argv))


def _parser() -> argparse.ArgumentParser:
  parser = common.ArgumentParser(
      prog="jaxsearch", description="Monte-Carlo tree search as pure, batched, jitted JAX.")
  commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
  play.add_parser(commands)
  train.add_parser(commands)
  solve.add_parser(commands)
  evaluate.add_parser(commands)
  # The benchmarks' own options are forwarded untouched (see main), so they cannot drift
  # from jaxsearch.app.benchmarks; `jaxsearch bench --help` lists the subcommands.
  commands.add_parser(
      "bench", add_help=False,
      help="benchmarks: throughput vs mctx (--quick, --repeats N, --only ...), or a "
           "SUBCOMMAND (ab, scaling, rules, ...)",
      description="Runs jaxsearch.app.benchmarks; see `jaxsearch bench --help`.")
  return parser


def compile_cache_dir() -> Optional[str]:
  """Where the CLI keeps compiled XLA programs between runs: ``$JAXSEARCH_CACHE_DIR``
  (empty: no cache), else ``$XDG_CACHE_HOME/jaxsearch/xla`` or ``~/.cache/jaxsearch/xla``."""
  configured = os.environ.get("JAXSEARCH_CACHE_DIR")
  if configured is not None:
    return configured or None
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jaxsearch", "xla")


def _use_compile_cache() -> None:
  """JAX's persistent compilation cache: a search program costs ~10 s to compile on 2 CPU
  cores and ~1 s to load, so every run after the first starts searching sooner (the cache is
  keyed by the program, the options and the JAX version, so it is never stale)."""
  import jax
  directory = compile_cache_dir()
  if directory is None or jax.config.jax_compilation_cache_dir:
    return  # off, or the caller configured one
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the ``jaxsearch`` command; returns the exit status."""
  parser = _parser()
  args, extra = parser.parse_known_args(argv)
  if args.command != "bench":
    _use_compile_cache()
  if args.command != "bench" and extra:
    parser.error(f"unrecognized arguments: {' '.join(extra)}")
  verbs = {"play": play.run, "train": train.run, "solve": solve.run, "evaluate": evaluate.run,
           "bench": lambda _: _bench(extra)}
  try:
    return verbs[args.command](args)
  except CommandError as error:  # the verb's own wording
    print(error, file=sys.stderr)
    return error.status
  except (ValueError, OSError) as error:
    # Bad input found past the parser (a size the game or the search refuses, a file that
    # cannot be read or written): one line naming the verb, exit status 2, no traceback.
    # The verbs catch what they can word better themselves (e.g. the Wordle lists).
    message = " ".join(str(error).split()) or type(error).__name__
    print(f"jaxsearch {args.command}: {message}", file=sys.stderr)
    return 2
