"""The application layer: what turns the library and the games into commands.

The library proper (``jaxsearch`` but for ``games``, ``app`` and ``cli``) imports no game, and
the games import only the library; this layer sits above both and is the only code that
names a game. With the command line (:mod:`jaxsearch.cli`, one module per verb), it holds:

  registry      the one registry of games: name -> module, training preset and evaluation,
                how ``play`` shows it, whether it has policy files (and their reader).
  training      a registered game's preset, its trainer, a trained run read back.
  presets       the per-game training presets (tic-tac-toe, Connect Four, any pgx game).
  evaluators    the training loop's evaluation of the games with exact oracles.
  evaluate      evaluation against exact oracles (tic-tac-toe minimax, the Connect Four test
                sets), with the library's agents and matches.
  connect4_sets the Connect Four test sets (Pascal Pons' ``Test_*.moves``).
  bench         the throughput benchmark against mctx (``jaxsearch bench`` / ``bench engine``).
  benchmarks    the other ``jaxsearch bench`` subcommands, one module each.
  timing        the one timing harness every benchmark uses (warm-ups, repeats, median and
                spread, peak memory, one JSON line).

Submodules load on first use (``jaxsearch.app.registry``), so importing the package is cheap.
"""

import importlib

_SUBMODULES = ("registry", "training", "presets", "evaluators", "evaluate", "connect4_sets",
               "bench", "benchmarks", "timing")

__all__ = list(_SUBMODULES)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxsearch.app.{name}")
  raise AttributeError(f"module 'jaxsearch.app' has no attribute {name!r}")
