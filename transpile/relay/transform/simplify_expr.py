"""SimplifyExpr: local algebraic rewrites of operator calls (the useful part of TVM's simplify_expr.cc).

- chains of shape-only ops (reshape, reverse_reshape, reshape_like, squeeze, expand_dims,
  batch_flatten) become one `reshape` to the final static shape; one whose output has its input's
  shape disappears;
- transpose(transpose(x)) becomes one transpose; a transpose to the same axis order disappears;
  layout_transform(layout_transform(x, A, B), B, A) is x;
- a cast to the dtype the value already has disappears; cast(cast(x, t1), t2) skips t1 when t1
  holds every value of x's dtype exactly;
- x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 are x (ones/zeros as constants or ones/zeros(_like) calls),
  when that keeps the result's shape and dtype (no broadcast lost);
- (x + c1) + c2 -> x + (c1 + c2) and (x * c1) * c2 -> x * (c1 * c2) for constants c1, c2, or
  operators over constants (FoldConstant then computes c1 + c2), for integers.
Every rewrite needs static types of the values it looks at and is skipped otherwise.

Floats keep IEEE semantics: only rewrites exact for every value, nan, inf and -0 included. So x + 0
stays unless the zero is -0 (-0 + +0 is +0), x - 0 needs +0, and constants are not reassociated
(rounding and overflow differ: (x * 1e30) * 1e-30 is inf for x = 1e10). Never rewritten at all:
0 * x, 0 / x, x - x, x / x (nan for x = nan, inf or 0).
"""

from __future__ import annotations

import numpy as np

from .. import expr as E
from .infra import FunctionPass
from .patterns import call, op_name, static_shape, tensor_type
from .rewriter import Rewriter

__all__ = ["SimplifyExpr", "simplify_expr"]

SHAPE_ONLY_OPS = frozenset(
    {"reshape", "contrib_reverse_reshape", "reshape_like", "squeeze", "expand_dims", "nn.batch_flatten"}
)


def _simplify_shape_only(new):
    """reshape chains -> one reshape; a shape-only op keeping its input's shape -> its input."""
    data = new.args[0]
    out_shape, in_shape = static_shape(new), static_shape(data)
    if out_shape is None:
        return None
    if in_shape == out_shape:
        return data
    if op_name(data) in SHAPE_ONLY_OPS:
        inner = data.args[0]
        if static_shape(inner) == out_shape:
            return inner
        return call("reshape", inner, newshape=list(out_shape), allowzero=True)  # a 0 here is a size, not "copy"
    return None


def _permutation(call_node, ndim: int) -> list[int]:
    axes = call_node.attrs.axes
    if not axes:
        return list(range(ndim - 1, -1, -1))
    return [a + ndim if a < 0 else a for a in axes]


def _simplify_transpose(new):
    data = new.args[0]
    data_type = tensor_type(data)
    if data_type is None:
        return None
    ndim = data_type.ndim
    perm = _permutation(new, ndim)
    if op_name(data) == "transpose":
        inner = data.args[0]
        if tensor_type(inner) is None:
            return None
        inner_perm = _permutation(data, ndim)
        perm = [inner_perm[p] for p in perm]
        data = inner
    if perm == list(range(ndim)):
        return data
    return call("transpose", data, axes=perm) if data is not new.args[0] else None


def _simplify_layout_transform(new):
    data = new.args[0]
    if op_name(data) != "layout_transform":
        return None
    if data.attrs.src_layout == new.attrs.dst_layout and data.attrs.dst_layout == new.attrs.src_layout:
        return data.args[0]
    return None


def _holds_exactly(src: str, dst: str) -> bool:
    """Whether every value of dtype `src` is exactly representable in `dst`."""
    try:
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), "safe"))
    except TypeError:  # a dtype numpy does not know (e.g. bfloat16): assume not
        return False


def _simplify_cast(new):
    data = new.args[0]
    data_type = tensor_type(data)
    if data_type is None:
        return None
    target = new.attrs.dtype if op_name(new) == "cast" else (tensor_type(new.args[1]) or data_type).dtype
    if data_type.dtype == target:
        return data
    if op_name(data) == "cast":
        inner_type = tensor_type(data.args[0])
        if inner_type is not None and _holds_exactly(inner_type.dtype, data_type.dtype):
            inner = data.args[0]
            return inner if inner_type.dtype == target else call("cast", inner, dtype=target)
    return None


def _is_filled_with(expr, value: float, negative_zero: bool = False) -> bool:
    """A constant whose every element is `value`, or ones/zeros(_like) of that value; a float zero
    must also have the sign `negative_zero` asks for."""
    if type(expr) is E.Constant:
        return _all_equal(expr.data, value, negative_zero)
    name = op_name(expr)
    if value == 1 and name in ("ones", "ones_like"):
        return True
    if value == 0 and name in ("zeros", "zeros_like"):
        return not negative_zero or not _is_float(tensor_type(expr))
    if name == "full" and type(expr.args[0]) is E.Constant:
        return _all_equal(expr.args[0].data, value, negative_zero)
    return False


def _all_equal(data, value: float, negative_zero: bool) -> bool:
    if data.size == 0 or data.dtype.kind not in "biuf" or not bool(np.all(data == value)):
        return False
    return value != 0 or data.dtype.kind != "f" or bool(np.all(np.signbit(data) == negative_zero))


def _is_float(ty) -> bool:
    return ty is not None and ty.dtype.startswith(("float", "bfloat"))


# (operator, neutral value, which operand positions may be the neutral one, the float neutral's sign:
# x + -0 is x for every float x, x + +0 is not for x = -0; x - +0 is x)
_IDENTITIES = {
    "multiply": (1, (0, 1), False),
    "add": (0, (0, 1), True),
    "subtract": (0, (1,), False),
    "divide": (1, (1,), False),
}


def _simplify_identity(original, new):
    """x op neutral -> x when the call's type is x's type (nothing broadcast, no dtype change)."""
    neutral, positions, negative_zero = _IDENTITIES[op_name(new)]
    result_type = tensor_type(original)
    if result_type is None:
        return None
    negative_zero = negative_zero and _is_float(result_type)
    for position in positions:
        other = new.args[1 - position]
        if _is_filled_with(new.args[position], neutral, negative_zero) and tensor_type(other) == result_type:
            return other
    return None


def _is_constant_expr(expr) -> bool:
    """A constant, or operator calls over constants only (e.g. expand_dims of a bias)."""
    if type(expr) is E.Constant:
        return True
    return op_name(expr) is not None and bool(expr.args) and all(_is_constant_expr(a) for a in expr.args)


def _simplify_adjacent_constants(original, new):
    """(x op c1) op c2 -> x op (c1 op c2) for add and multiply with constant c1, c2 (integers: exact)."""
    name = op_name(new)
    lhs, rhs = new.args
    result_type = tensor_type(original)
    if result_type is None or _is_float(result_type):
        return None
    if not _is_constant_expr(rhs) or op_name(lhs) != name or not _is_constant_expr(lhs.args[1]):
        return None
    x, c1 = lhs.args
    if tensor_type(x) is None or tensor_type(original) is None:
        return None
    rewritten = call(name, x, call(name, c1, rhs))
    return rewritten if tensor_type(rewritten) == tensor_type(original) else None


class _Simplifier(Rewriter):
    def rewrite_call(self, original, new):
        name = op_name(new)
        if name is None:
            return new
        out = None
        if name in SHAPE_ONLY_OPS:
            out = _simplify_shape_only(new)
        elif name == "transpose":
            out = _simplify_transpose(new)
        elif name == "layout_transform":
            out = _simplify_layout_transform(new)
        elif name in ("cast", "cast_like"):
            out = _simplify_cast(new)
        elif name in _IDENTITIES:
            out = _simplify_identity(original, new)
            if out is None and name in ("add", "multiply"):
                out = _simplify_adjacent_constants(original, new)
        return new if out is None else out


def simplify_expr(func, mod=None, ctx=None):
    return _Simplifier().visit(func)


def SimplifyExpr():
    """TVM's SimplifyExpr pass (opt_level 0)."""
    return FunctionPass(simplify_expr, 0, "SimplifyExpr")
