"""Guessing games solved exactly: Mastermind, Wordle and any game of the same shape.

A guessing game is "find the secret": each guess returns a feedback that splits the secrets
still possible. This package is the application of the generic solver
(:mod:`jaxsearch.solve`) to them:

* :mod:`~jaxsearch.guessing.game` — a guessing game as a :class:`jaxsearch.game.Game` from a
  feedback table (``guessing_game``), and its counting bounds;
* :mod:`~jaxsearch.guessing.estimator` — the entropic estimator and the greedy guess;
* :mod:`~jaxsearch.guessing.exact` — the exact branch-and-bound over sets of secrets
  (``ExactSolver``, ``ExactBounds``); :mod:`~jaxsearch.guessing.exact_game` — whole games
  solved and proven by it alone, their parts on every core (``solve_exactly``);
* :mod:`~jaxsearch.guessing.puzzle` — :func:`solve_puzzle`: from the initial state, a fixed
  first guess or a list of openings (:mod:`~jaxsearch.guessing.openings`), each feedback's
  sub-problem one tree of the batch, or the first guess searched too
  (:mod:`~jaxsearch.guessing.root`);
* :mod:`~jaxsearch.guessing.certificates` — integer certificates (one process per core) that
  prove the exported policy optimal; :mod:`~jaxsearch.guessing.extract`,
  :mod:`~jaxsearch.guessing.finish`, :mod:`~jaxsearch.guessing.result`,
  :mod:`~jaxsearch.guessing.report` turn the trees into a policy, a result and a report;
* :mod:`~jaxsearch.guessing.policy_file` and :mod:`~jaxsearch.guessing.policy_tree` — the
  policy files a solve writes and ``jaxsearch evaluate`` reads.

The games themselves (``jaxsearch.games.mastermind``, ``jaxsearch.games.wordle``) build a
:class:`Puzzle` from their rules. Mastermind 4×6: 5625, proven in seconds on 2 CPU
cores by the exact search of the whole game (``jaxsearch solve mastermind``), or in about a
minute by the trees (``--method tree``). Names load on first use, so importing the package
(or :mod:`~jaxsearch.guessing.policy_file` alone) does not import JAX.
"""

import importlib

_NAMES = {
    "Puzzle": "puzzle", "PuzzleSearch": "puzzle", "SolveResult": "puzzle",
    "covers_every_opening": "puzzle", "evaluate": "puzzle", "meets": "puzzle",
    "opening_roots": "puzzle", "solve": "puzzle", "solve_puzzle": "puzzle",
    "plot_history": "report", "summary": "report",
    "OpeningRecord": "root", "RootOptions": "root", "RootReport": "root",
    "PolicyExtractor": "extract", "extract_policy": "extract",
    "CertificateGame": "certificates", "ExactSearch": "certificates",
    "IntegerBounds": "certificates", "Settled": "certificates", "certify": "certificates",
    "settle": "certificates", "settle_each": "certificates",
    "ExactBounds": "exact", "ExactSolver": "exact",
    "ExactSolution": "exact_game", "solve_exactly": "exact_game",
    "entropic_estimator": "estimator", "greedy_guess": "estimator",
    "guessing_game": "game",
}
_SUBMODULES = ("certificates", "estimator", "exact", "exact_game", "extract",
               "feedback_totals", "finish", "game", "openings", "policy_file", "policy_tree",
               "puzzle", "report", "result", "root", "subproblems", "workers")

__all__ = sorted(_NAMES) + list(_SUBMODULES)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxsearch.guessing.{name}")
  if name in _NAMES:
    return getattr(importlib.import_module(f"jaxsearch.guessing.{_NAMES[name]}"), name)
  raise AttributeError(f"module 'jaxsearch.guessing' has no attribute {name!r}")


def __dir__():
  return sorted(list(globals()) + __all__)
