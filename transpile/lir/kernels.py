"""Building LIR kernels from type-checked Relay functions, and their readable names."""

from __future__ import annotations

from ..relay.op.registry import OpPattern
from .nodes import Kernel, Param
from .types import from_relay_type
from .walk import kernel_ops

__all__ = ["kernel_from_function", "kernel_base_name"]

_MAX_NAME = 64


def kernel_base_name(ops) -> str:
    """`fused_dense_bias_add_relu` from ("nn.dense", "nn.bias_add", "nn.relu"); callers make it unique."""
    name = "fused_" + "_".join(op.rsplit(".", 1)[-1] for op in ops)
    return name if len(name) <= _MAX_NAME else name[:_MAX_NAME].rstrip("_")


def kernel_from_function(name: str, function, pattern: OpPattern | None = None) -> Kernel:
    """A Kernel whose params, result and ops come from a type-checked relay Function.

    `pattern` defaults to the highest pattern kind among the body's operators, which is the
    master op's kind for groups built by Relay's fusion rules.
    """
    from ..relay.op.registry import get

    params = []
    for var in function.params:
        ty = getattr(var, "checked_type_", None) or var.type_annotation
        params.append(Param(var.name_hint, ty))
    ops = kernel_ops(function)
    if pattern is None:
        pattern = max((get(op).pattern for op in ops), default=OpPattern.OPAQUE)
    result = from_relay_type(function.body.checked_type)
    return Kernel(name, tuple(params), result, function, OpPattern(pattern), ops)
