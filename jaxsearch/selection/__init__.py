"""Selection rules: pure functions of one node's statistics (``NodeView``) -> slot scores."""

from jaxsearch.selection.base import (NodeView, QTransform, RootContext, RootRule,
                                      SelectionRule, masked_argmax, masked_softmax, q_minmax,
                                      q_range, q_raw)
from jaxsearch.selection.entropy_puct import entropy_puct
from jaxsearch.selection.hoeffding import hoeffding
from jaxsearch.selection.laplace import laplace
from jaxsearch.selection.optimistic import optimistic
from jaxsearch.selection.pibar import (lambda_n, pibar_argmax_visits, pibar_policy,
                                       pibar_sample, regularized_policy)
from jaxsearch.selection.puct import puct, q_debiased, value_prior_puct
from jaxsearch.selection.thompson import thompson, thompson_draw, thompson_top_k
from jaxsearch.selection.uct import uct

__all__ = ["NodeView", "QTransform", "SelectionRule", "masked_argmax", "masked_softmax",
           "q_minmax", "q_range", "q_raw", "puct", "q_debiased", "value_prior_puct", "uct",
           "thompson", "thompson_draw", "thompson_top_k", "laplace", "hoeffding", "optimistic",
           "lambda_n", "pibar_argmax_visits", "pibar_policy", "pibar_sample",
           "regularized_policy", "RootContext", "RootRule", "entropy_puct"]
