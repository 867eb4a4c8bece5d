"""What the gradient rules share: building registered calls, reading argument types, undoing broadcasts and reductions."""

from __future__ import annotations

import numpy as np

from ....errors import TranspileError
from ...expr import Call, Constant, Expr, Var, to_expr
from ...ty import AnyDim, TensorType
from ..families.reduce import reduce_axes
from ..registry import make_call

__all__ = [
    "GradientError",
    "op",
    "tensor_type",
    "static_shape",
    "scalar",
    "unbroadcast",
    "reduced_axes",
    "expand_reduced",
    "inverse_permutation",
    "zero_like",
]


class GradientError(TranspileError):
    """An expression cannot be differentiated: an operator without a rule, control flow, or a configuration no rule covers."""


def op(name: str, *args, **attrs) -> Call:
    """A call of registered operator `name` (untyped; the gradient pass types what rules build)."""
    return make_call(name, [to_expr(a) for a in args], attrs)


def tensor_type(expr: Expr, what: str = "operand") -> TensorType:
    """The inferred tensor type of a forward expression (rules only ask about typed forward nodes)."""
    ty = getattr(expr, "checked_type_", None)
    if ty is None and isinstance(expr, Constant):
        ty = TensorType(expr.data.shape, expr.data.dtype.name)
    elif ty is None and isinstance(expr, Var):
        ty = expr.type_annotation
    if not isinstance(ty, TensorType):
        raise GradientError(f"gradient: the {what} must be a typed tensor, got {ty}")
    return ty


def static_shape(expr: Expr, op_name: str, what: str = "data") -> tuple[int, ...]:
    shape = tensor_type(expr, what).shape
    if any(isinstance(d, AnyDim) for d in shape):
        raise GradientError(f"the gradient of {op_name} needs a static shape for its {what}, got {tensor_type(expr)}")
    return tuple(int(d) for d in shape)


def scalar(value, dtype: str) -> Constant:
    constant = Constant(np.array(value, dtype=dtype))
    constant._set_checked_type(TensorType((), dtype))
    return constant


def _same_shape(a: TensorType, b: TensorType) -> bool:
    if len(a.shape) != len(b.shape):
        return False
    return all(not isinstance(x, AnyDim) and not isinstance(y, AnyDim) and x == y for x, y in zip(a.shape, b.shape))


def unbroadcast(grad: Expr, arg: Expr, orig: Call) -> Expr:
    """`grad` (shaped like the broadcast result `orig`) summed back to the shape of `arg`."""
    if _same_shape(tensor_type(orig, "result"), tensor_type(arg)):
        return grad
    return op("collapse_sum_like", grad, arg)


def reduced_axes(attrs, ndim: int) -> list[int]:
    """The axes a reduction (axis, exclude) folds, non-negative and ascending."""
    return list(reduce_axes(ndim, attrs.axis, attrs.exclude, "reduce"))


def expand_reduced(grad: Expr, orig: Call) -> Expr:
    """The gradient of a reduction's result with the reduced axes put back as size-1 axes (keepdims form)."""
    if orig.attrs.keepdims:
        return grad
    for axis in reduced_axes(orig.attrs, len(tensor_type(orig.args[0]).shape)):
        grad = op("expand_dims", grad, axis=axis)
    return grad


def inverse_permutation(axes) -> list[int]:
    inverse = [0] * len(axes)
    for position, axis in enumerate(axes):
        inverse[axis] = position
    return inverse


def zero_like(expr: Expr) -> Expr:
    return op("zeros_like", expr)
