"""Automatic differentiation of Relay (TVM's relay.transform.gradient), reverse mode, higher- and first-order.

    grad_fn = relay.transform.gradient(func)              # fn(params) -> (result, (grads...))
    grad_fn = relay.transform.gradient(func, mode="first_order")
    grads = first_order_gradient(y, [x1, x2], seed=None)  # expressions over a dataflow DAG

The per-operator rules live with the registry (transpile/relay/op/gradients/); this package
translates whole programs with closures, references, control flow and ADTs (higher_order.py,
ad_values.py), walks dataflow graphs (reverse.py), types what rules build (typed.py), rewrites
graphs (graph.py) and wraps functions (function.py).
"""

from ...op.gradients import GradientError, register_gradient
from .function import FirstOrderGradient, gradient
from .graph import inline_lets, replace_nodes
from .higher_order import higher_order_gradient
from .reverse import first_order_gradient

__all__ = [
    "gradient",
    "first_order_gradient",
    "higher_order_gradient",
    "FirstOrderGradient",
    "GradientError",
    "register_gradient",
    "inline_lets",
    "replace_nodes",
]
