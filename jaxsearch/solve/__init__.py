"""Anytime solving with certified bounds: any planning problem with chance, and guessing games.

The solver runs AVTS (:func:`jaxsearch.policies.avts`) on one or a batch of root states, in
chunks of simulations that continue the same trees (:mod:`jaxsearch.solve.loop`), and after
every chunk reads two numbers at each root:

* the **achievable bound** — the exact value of a concrete policy held by the tree (AVTS's
  "best lower bound");
* the **optimistic bound** — no policy does better (the game's admissible ``optimistic_value``
  and the estimator's per-action ``action_bounds``, tightened by the Bellman backup).

Where they meet, the result is checked *exactly* after the search, never by comparing floats:

* :func:`solve_game` — any :class:`jaxsearch.game.Game` with outcome probabilities and
  bounds (single-agent: discounts ``>= 0``). Per root it returns the extracted policy
  (``{"action": a, "children": {outcome: node}}``), its exact value by enumerating every
  outcome through ``game.step`` in rationals (the lower bound), an upper bound by a Bellman
  recursion in rationals over the tree, and ``proven`` iff the two are equal
  (:mod:`jaxsearch.solve.exact`).
* :func:`solve_puzzle` — guessing games ("find the secret", a :class:`Puzzle` built by the
  game's module, e.g. ``games.mastermind.puzzle(4, 6)``): the policy is exported in the
  format of :mod:`jaxsearch.policy_file`, evaluated exactly over every secret, and proven by
  an integer certificate (:func:`certify`). Mastermind 4×6: 5625, proven in about a minute
  on 2 CPU cores.

By default the trees are grown by the proof-directed rule alone
(:func:`jaxsearch.selection.optimistic`, best bound first, with the ``gap`` outcome rule).
"""

from jaxsearch.memory import (  # noqa: F401  (part of this package's interface)
    RUNTIME_BYTES, MemoryBudgetError, MemoryEstimate, available_memory, check_memory)
from jaxsearch.solve.certify import (  # noqa: F401
    Settled, _Certifier, certify, settle, settle_each)
from jaxsearch.solve.exact import (  # noqa: F401
    GameSolution, RootSolution, exact_value, solve_game)
from jaxsearch.solve.extract import _remaining, _TreeReader, extract_policy  # noqa: F401
from jaxsearch.solve.loop import (  # noqa: F401
    DEFAULT_MAX_DEPTH, Problem, _program, _regrow, _row_of, estimate_memory)
from jaxsearch.solve.puzzle import (  # noqa: F401
    Puzzle, SolveResult, _opening_roots, evaluate, meets, solve, solve_puzzle)
from jaxsearch.solve.report import plot_history, summary  # noqa: F401
