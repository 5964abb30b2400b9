"""Anytime solving with certified bounds of any planning problem with chance.

The solver runs AVTS (:func:`jaxsearch.policies.avts`) on a *batch* of root states at once,
one tree per root, in chunks of simulations that continue the same trees
(:mod:`jaxsearch.solve.chunked`); full trees of roots still open move into larger ones as the
proven roots leave the batch. After every chunk it reads two numbers at each root:

* the **achievable bound** — the exact value of a concrete policy held by the tree (AVTS's
  "best lower bound");
* the **optimistic bound** — no policy does better (the game's admissible ``optimistic_value``
  and the estimator's per-action ``action_bounds``, tightened by the Bellman backup).

Where they meet, the result is checked *exactly* after the search, never by comparing floats:
:func:`solve_game` takes any :class:`jaxsearch.game.Game` with outcome probabilities and
bounds (single-agent: discounts ``>= 0``). The searched trees are read into a graph of
distinct *states* (a DAG: histories that reach the same state share it,
:mod:`jaxsearch.solve.state_graph`); per root it returns the best policy the graph holds
(``{"action": a, "children": {outcome: node}}``, one dict per state), its exact value by
enumerating every outcome through ``game.step`` in rationals (the lower bound), an upper
bound by a Bellman recursion in rationals over the graph, and ``proven`` iff the two are
equal, completing the graph by exact steps where the searched trees fall short
(:mod:`jaxsearch.solve.exact`).

Guessing games ("find the secret": Mastermind, Wordle) are solved by the application built
on this package, :mod:`jaxsearch.guessing` (``solve_puzzle``, certificates, policy files).

A run can be checkpointed and resumed after a kill (:mod:`jaxsearch.solve.checkpoint`),
ending as if it had never stopped. By default the trees are grown by the proof-directed rule
alone (:func:`jaxsearch.selection.optimistic`, best bound first, with the ``gap`` outcome
rule). Every entry point takes one :class:`SolveOptions` (:mod:`jaxsearch.solve.options`:
the budget, the trees' capacity, the search rule, checkpointing), validated once; it builds
every search's :class:`jaxsearch.search.SearchConfig`. Results are dataclasses
(:class:`SearchResult`, :class:`GameSolution`) whose ``trees`` are always one batch of one
tree per root, read on the host by one :class:`TreeReader`.
"""

import importlib

from jaxsearch.memory import (
    RUNTIME_BYTES, MemoryBudgetError, MemoryEstimate, available_memory, check_memory)
from jaxsearch.solve.checkpoint import (
    Checkpoint, CheckpointCorrupt, CheckpointError, CheckpointExists, CheckpointLocked,
    CheckpointMismatch)
from jaxsearch.solve.chunked import Problem, SearchResult, estimate_memory
from jaxsearch.solve.exact import GameSolution, RootSolution, exact_value, solve_game
from jaxsearch.solve.options import (
    DEFAULT_MAX_DEPTH, Budget, Capacity, Checkpointing, SearchRule, SolveOptions)
from jaxsearch.solve.tree_reader import TreeReader

__all__ = [
    # memory
    "RUNTIME_BYTES", "MemoryBudgetError", "MemoryEstimate", "available_memory", "check_memory",
    # options and results
    "SolveOptions", "Budget", "Capacity", "SearchRule", "Checkpointing", "DEFAULT_MAX_DEPTH",
    "SearchResult", "GameSolution", "RootSolution",
    # solving
    "Problem", "solve_game", "exact_value", "estimate_memory",
    # reading trees, checkpoints
    "TreeReader",
    "Checkpoint", "CheckpointError", "CheckpointExists", "CheckpointMismatch",
    "CheckpointCorrupt", "CheckpointLocked",
]

# The guessing-game application moved to :mod:`jaxsearch.guessing`; its names stay readable
# from here for one release (CHANGELOG), loaded on first use so that this package imports
# nothing of it.
_MOVED_TO_GUESSING = (
    "Puzzle", "PuzzleSearch", "SolveResult", "covers_every_opening", "evaluate", "meets",
    "opening_roots", "solve", "solve_puzzle", "plot_history", "summary", "OpeningRecord",
    "RootOptions", "RootReport", "PolicyExtractor", "extract_policy", "CertificateGame",
    "ExactSearch", "IntegerBounds", "Settled", "certify", "settle", "settle_each")


def __getattr__(name):
  if name in _MOVED_TO_GUESSING:
    return getattr(importlib.import_module("jaxsearch.guessing"), name)
  raise AttributeError(f"module 'jaxsearch.solve' has no attribute {name!r}")
