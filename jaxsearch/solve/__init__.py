"""Anytime solving with certified bounds: any planning problem with chance, and guessing games.

The solver runs AVTS (:func:`jaxsearch.policies.avts`) on a *batch* of root states at once,
one tree per root, in chunks of simulations that continue the same trees
(:mod:`jaxsearch.solve.chunked`); full trees of roots still open move into larger ones as the
proven roots leave the batch. After every chunk it reads two numbers at each root:

* the **achievable bound** — the exact value of a concrete policy held by the tree (AVTS's
  "best lower bound");
* the **optimistic bound** — no policy does better (the game's admissible ``optimistic_value``
  and the estimator's per-action ``action_bounds``, tightened by the Bellman backup).

Where they meet, the result is checked *exactly* after the search, never by comparing floats:

* :func:`solve_game` — any :class:`jaxsearch.game.Game` with outcome probabilities and
  bounds (single-agent: discounts ``>= 0``). The searched trees are read into a graph of
  distinct *states* (a DAG: histories that reach the same state share it,
  :mod:`jaxsearch.solve.state_graph`); per root it returns the best policy the graph holds
  (``{"action": a, "children": {outcome: node}}``, one dict per state), its exact value by
  enumerating every outcome through ``game.step`` in rationals (the lower bound), an upper
  bound by a Bellman recursion in rationals over the graph, and ``proven`` iff the two are
  equal, completing the graph by exact steps where the searched trees fall short
  (:mod:`jaxsearch.solve.exact`).
* :func:`solve_puzzle` — guessing games ("find the secret", a :class:`Puzzle` built by the
  game's module, e.g. ``games.mastermind.puzzle(4, 6)``), from the initial state in one tree,
  or from a fixed first guess or a list of *openings* (every first guess up to symmetry),
  each opening's feedback sub-problems one tree of the batch, or with the first guess
  searched too (``root=RootOptions()``, :mod:`jaxsearch.solve.root`): a root decision made
  as AVTS makes one, above a batch of sub-problem trees per first guess it visits. The best policy is exported in
  the format of :mod:`jaxsearch.policy_file` and evaluated exactly over every secret; an
  integer certificate (:func:`certify`, :func:`settle_each`: one process per core, the
  game's exact search settling small sets and correcting the tree's policy where it finds
  better) proves it optimal for the game or given the first guess. Mastermind 4×6: 5625,
  proven in about a minute and a half on 2 CPU cores.

A run can be checkpointed and resumed after a kill (:mod:`jaxsearch.solve.checkpoint`;
``solve_puzzle(..., checkpoint=DIR, resume=True)``), ending as if it had never stopped.
By default the trees are grown by the proof-directed rule alone
(:func:`jaxsearch.selection.optimistic`, best bound first, with the ``gap`` outcome rule).

Every entry point takes one :class:`SolveOptions` (:mod:`jaxsearch.solve.options`: the
budget, the trees' capacity, the search rule, checkpointing), validated once, or its flat
keywords (``solve_puzzle(puzzle, seconds=30, chunk=32)``); it builds every search's
:class:`jaxsearch.search.SearchConfig`. Results are dataclasses (:class:`SolveResult`,
:class:`PuzzleSearch`, :class:`SearchResult`, :class:`GameSolution`) whose ``trees`` are
always one batch of one tree per root, read on the host by one :class:`TreeReader`.
"""

from jaxsearch.memory import (
    RUNTIME_BYTES, MemoryBudgetError, MemoryEstimate, available_memory, check_memory)
from jaxsearch.solve.certify import (
    CertificateGame, ExactSearch, IntegerBounds, Settled, certify, settle, settle_each)
from jaxsearch.solve.checkpoint import (
    Checkpoint, CheckpointCorrupt, CheckpointError, CheckpointExists, CheckpointLocked,
    CheckpointMismatch)
from jaxsearch.solve.exact import GameSolution, RootSolution, exact_value, solve_game
from jaxsearch.solve.extract import PolicyExtractor, extract_policy
from jaxsearch.solve.chunked import Problem, SearchResult, estimate_memory
from jaxsearch.solve.options import (
    DEFAULT_MAX_DEPTH, Budget, Capacity, Checkpointing, SearchRule, SolveOptions)
from jaxsearch.solve.puzzle import (
    Puzzle, PuzzleSearch, SolveResult, covers_every_opening, evaluate, meets, opening_roots,
    solve, solve_puzzle)
from jaxsearch.solve.report import plot_history, summary
from jaxsearch.solve.root import OpeningRecord, RootOptions, RootReport
from jaxsearch.solve.tree_reader import TreeReader

__all__ = [
    # memory
    "RUNTIME_BYTES", "MemoryBudgetError", "MemoryEstimate", "available_memory", "check_memory",
    # options and results
    "SolveOptions", "Budget", "Capacity", "SearchRule", "Checkpointing", "DEFAULT_MAX_DEPTH",
    "SolveResult", "PuzzleSearch", "SearchResult", "GameSolution", "RootSolution",
    # solving
    "Puzzle", "Problem", "solve_puzzle", "solve", "solve_game", "exact_value", "evaluate",
    "meets", "opening_roots", "covers_every_opening", "estimate_memory",
    "RootOptions", "RootReport", "OpeningRecord",
    # reading trees, certificates, checkpoints, reports
    "TreeReader", "PolicyExtractor", "extract_policy",
    "IntegerBounds", "ExactSearch", "CertificateGame", "Settled", "certify", "settle",
    "settle_each",
    "Checkpoint", "CheckpointError", "CheckpointExists", "CheckpointMismatch",
    "CheckpointCorrupt", "CheckpointLocked",
    "plot_history", "summary",
]
