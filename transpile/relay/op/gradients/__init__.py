"""Gradient rules of the registered operators (TVM's _tensor_grad.py), attached to each OpDef's `gradient`.

A rule is `fn(orig: Call, grad: Expr) -> list[Expr | None]`: given the forward call (typed, its
arguments typed) and the gradient flowing into its result, it returns one gradient per argument,
built from registered operators only. None means "zero" (an integer or boolean input, an
operator whose derivative vanishes almost everywhere). For a tuple-typed argument (concatenate,
stack) the gradient is a tuple-typed expression; for a tuple-typed result (split) `grad` is one.
Broadcasting is undone with `collapse_sum_like`, reductions with `expand_dims` + broadcasting.

    from transpile.relay.op.gradients import register_gradient

    @register_gradient("exp")
    def exp_grad(orig, grad):
        return [grad * orig]
"""

from __future__ import annotations

from typing import Callable

from ..registry import lookup
from ._support import GradientError

__all__ = ["register_gradient", "GradientError", "differentiable_ops"]


def register_gradient(op_name: str, rule: Callable | None = None, override: bool = False):
    """Attach `rule` as the gradient of `op_name` (usable as a decorator, as tvm.relay.op.register_gradient)."""

    def attach(fn: Callable) -> Callable:
        opdef = lookup(op_name)
        if opdef is None:
            raise ValueError(f"register_gradient: operator {op_name} is not in the registry")
        if opdef.gradient is not None and not override:
            raise ValueError(f"register_gradient: operator {op_name} already has a gradient rule")
        opdef.gradient = fn
        return fn

    return attach(rule) if rule is not None else attach


def differentiable_ops() -> list[str]:
    """Names of the operators with a gradient rule, sorted."""
    from ..registry import registered_ops

    return sorted(o.name for o in registered_ops() if o.gradient is not None)


# The rule modules register themselves on import (after register_gradient exists).
from . import elemwise, reduce, transform, indexing, nn, pool  # noqa: E402,F401
