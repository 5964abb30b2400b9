"""Selection rules: pure functions of one node's statistics (``NodeView``) -> slot scores."""

from jaxsearch.selection.base import (NodeView, QTransform, SelectionRule, masked_argmax,
                                      masked_softmax, q_minmax, q_range, q_raw)
from jaxsearch.selection.puct import puct
from jaxsearch.selection.uct import uct

__all__ = ["NodeView", "QTransform", "SelectionRule", "masked_argmax", "masked_softmax",
           "q_minmax", "q_range", "q_raw", "puct", "uct"]
