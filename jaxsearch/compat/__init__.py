"""mctx's API on the jaxsearch engine: ``import jaxsearch.compat as mctx``.

Everything ``mctx`` (0.0.71) exports is here under the same name and signature — the three
policies (:func:`muzero_policy`, :func:`gumbel_muzero_policy`,
:func:`stochastic_muzero_policy`), :func:`search`, the types (:class:`RootFnOutput`,
:class:`RecurrentFnOutput`, :class:`PolicyOutput`, :class:`Tree` with ``summary()`` and
``qvalues()``, the Stochastic MuZero outputs...), the Q transforms and the action selection
functions — and mctx is not imported. The submodules mirror mctx's (``base``, ``tree``,
``qtransforms``, ``seq_halving``, ``action_selection``, ``search``, ``policies``).

What differs on purpose (docs/mctx.md): ties in MuZero's PUCT go to the lowest action unless
``tie_noise=True`` (mctx adds ``1e-7`` uniform noise); inside a search, Q transforms and
selection functions see a one-node tree; with ``max_depth`` cutting simulations, node
indices are compacted. :func:`to_mctx` goes the other way (a jaxsearch Game for the real
mctx).
"""

from jaxsearch.compat.action_selection import (GumbelMuZeroExtraData,
                                               gumbel_muzero_interior_action_selection,
                                               gumbel_muzero_root_action_selection,
                                               muzero_action_selection)
from jaxsearch.compat.base import (ChanceRecurrentFn, ChanceRecurrentFnOutput,
                                   DecisionRecurrentFn, DecisionRecurrentFnOutput,
                                   InteriorActionSelectionFn, LoopFn, PolicyOutput,
                                   QTransform, RecurrentFn, RecurrentFnOutput, RecurrentState,
                                   RootActionSelectionFn, RootFnOutput,
                                   StochasticRecurrentState)
from jaxsearch.compat.interop import to_mctx
from jaxsearch.compat.policies import (gumbel_muzero_policy, muzero_policy,
                                       stochastic_muzero_policy)
from jaxsearch.compat.qtransforms import (qtransform_by_min_max,
                                          qtransform_by_parent_and_siblings,
                                          qtransform_completed_by_mix_value)
from jaxsearch.compat.search import search
from jaxsearch.compat.tree import SearchSummary, Tree

MCTX_API_VERSION = "0.0.71"  # the mctx release whose API this module follows

__all__ = (
    "ChanceRecurrentFnOutput",
    "DecisionRecurrentFnOutput",
    "GumbelMuZeroExtraData",
    "InteriorActionSelectionFn",
    "LoopFn",
    "PolicyOutput",
    "RecurrentFn",
    "RecurrentFnOutput",
    "RecurrentState",
    "RootActionSelectionFn",
    "RootFnOutput",
    "Tree",
    "gumbel_muzero_interior_action_selection",
    "gumbel_muzero_policy",
    "gumbel_muzero_root_action_selection",
    "muzero_action_selection",
    "muzero_policy",
    "qtransform_by_min_max",
    "qtransform_by_parent_and_siblings",
    "qtransform_completed_by_mix_value",
    "search",
    "stochastic_muzero_policy",
    "to_mctx",
)
