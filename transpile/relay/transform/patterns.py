"""Helpers shared by the graph-level passes (TVM's pattern_utils.h): op tests, builders, local types."""

from __future__ import annotations

import numpy as np

from .. import expr as E
from ..op.registry import lookup, make_call, normalize_attrs
from ..ty import TensorType, TupleType

__all__ = [
    "op_name",
    "is_op",
    "call",
    "type_of",
    "tensor_type",
    "static_shape",
    "is_primitive",
    "scalar",
    "expand_bias_to_match_axis",
    "constant_value",
    "is_constant_tree",
]


def op_name(expr) -> str | None:
    """The operator name of a call of a registered operator, else None."""
    if type(expr) is E.Call and type(expr.op) is E.Op:
        return expr.op.name
    return None


def is_op(expr, *names: str) -> bool:
    return op_name(expr) in names


def call(name: str, *args, span=None, **attrs) -> E.Call:
    """A call of the registered operator `name` with normalized attributes (and the source span it replaces)."""
    return make_call(name, list(args), attrs, span=span)


def is_primitive(func) -> bool:
    """An already-fused kernel (`fn (..., Primitive=1)`): graph-level passes leave it alone."""
    attrs = getattr(func, "attrs", None)
    return bool(attrs and attrs.get("Primitive", 0))


def type_of(expr):
    """The type of `expr`: its checked type, else computed locally for literals and operator calls.

    New nodes made by a pass carry no checked type yet; this types trees of operator calls over
    typed leaves through the registry's type relations, and records the result on the node.
    Returns None when a type cannot be known without full inference (e.g. an untyped variable).
    """
    ty = getattr(expr, "checked_type_", None)
    if ty is not None:
        return ty
    kind = type(expr)
    if kind is E.Constant:
        ty = TensorType(expr.data.shape, expr.data.dtype.name)
    elif kind is E.Var:
        ty = expr.type_annotation
    elif kind is E.Tuple:
        fields = [type_of(f) for f in expr.fields]
        ty = None if any(f is None for f in fields) else TupleType(fields)
    elif kind is E.TupleGetItem:
        tuple_type = type_of(expr.tuple_value)
        ty = tuple_type.fields[expr.index] if isinstance(tuple_type, TupleType) else None
    elif kind is E.Call and type(expr.op) is E.Op:
        ty = _call_type(expr)
    if ty is not None and kind is not E.Var:
        expr._set_checked_type(ty)
    return ty


def _call_type(expr: E.Call):
    opdef = lookup(expr.op.name)
    if opdef is None:
        return None
    arg_types = [type_of(a) for a in expr.args]
    if any(t is None or not _is_concrete(t) for t in arg_types):
        return None
    attrs = expr.attrs if expr.attrs is not None else normalize_attrs(opdef, {})
    try:
        return opdef.type_rel(arg_types, attrs)
    except Exception:  # an ill-typed rewrite is the caller's bug; report "unknown" instead of crashing here
        return None


def _is_concrete(ty) -> bool:
    if isinstance(ty, TensorType):
        return True
    if isinstance(ty, TupleType):
        return all(_is_concrete(f) for f in ty.fields)
    return False


def tensor_type(expr) -> TensorType | None:
    ty = type_of(expr)
    return ty if isinstance(ty, TensorType) else None


def static_shape(expr) -> tuple[int, ...] | None:
    """The shape of a tensor expression when every dimension is known, else None."""
    ty = tensor_type(expr)
    return None if ty is None else ty.concrete_shape


def scalar(value, dtype: str) -> E.Constant:
    """A 0-d constant of `dtype` (TVM's MakeConstantScalar)."""
    return E.Constant(np.asarray(value, dtype=dtype))


def expand_bias_to_match_axis(bias, target_ndim: int, axes) -> E.Expr:
    """Expand a tensor over `axes` (sorted) with unit dims so it broadcasts against rank `target_ndim`.

    TVM's ExpandBiasToMatchAxis: a (C,) bias for axis 1 of NCHW becomes expand_dims(bias, 1, 2).
    """
    axes = list(axes)
    for i in range(len(axes), 0, -1):
        if i == len(axes):
            pad = target_ndim - axes[i - 1] - 1
        else:
            pad = axes[i] - axes[i - 1] - 1
        if pad > 0:
            bias = call("expand_dims", bias, axis=i, num_newaxis=pad)
    return bias


def constant_value(expr) -> np.ndarray | None:
    """The array of a Constant, else None."""
    return expr.data if type(expr) is E.Constant else None


def is_constant_tree(expr) -> bool:
    """A Constant or a tuple of such (TVM's IsComplexConstant)."""
    if type(expr) is E.Constant:
        return True
    if type(expr) is E.Tuple:
        return all(is_constant_tree(f) for f in expr.fields)
    return False
