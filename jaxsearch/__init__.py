"""jaxsearch: Monte-Carlo tree search as pure, batched, jit-compiled JAX."""

from jaxsearch import compat, estimators, model, policies, search, selection, tree
from jaxsearch.game import Estimate, Estimator, Game, StepResult
from jaxsearch.policies import PolicyOutput, Search
from jaxsearch.tree import Tree, reroot

__version__ = "0.1.0"

__all__ = ["Estimate", "Estimator", "Game", "PolicyOutput", "Search", "StepResult", "Tree",
           "compat", "estimators", "model", "policies", "reroot", "search", "selection", "tree"]
