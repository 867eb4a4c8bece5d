"""Automatic differentiation of Relay (TVM's relay.transform.gradient), first-order reverse mode.

    grad_fn = relay.transform.gradient(func)              # fn(params) -> (result, (grads...))
    grads = first_order_gradient(y, [x1, x2], seed=None)  # expressions over a dataflow DAG

The per-operator rules live with the registry (transpile/relay/op/gradients/); this package walks
the graph (reverse.py), types what rules build (typed.py), rewrites graphs (graph.py) and wraps
functions (function.py).
"""

from ...op.gradients import GradientError, register_gradient
from .function import FirstOrderGradient, gradient
from .graph import inline_lets, replace_nodes
from .reverse import first_order_gradient

__all__ = [
    "gradient",
    "first_order_gradient",
    "FirstOrderGradient",
    "GradientError",
    "register_gradient",
    "inline_lets",
    "replace_nodes",
]
