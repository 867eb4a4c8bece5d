"""Elementwise operators: unary math, binary broadcast arithmetic/comparison/logic, where, cast, clip."""

from __future__ import annotations

import math

import numpy as np

from ...ty import TensorType
from ..common import broadcast_shapes, fmt_type, same_dtype
from ..registry import AttrField, OpDef, OpPattern, RelationError, REQUIRED, register
from .support import as_out, is_float, is_integral, quiet, tensor_args, to_dtype, to_float, to_int

__all__ = ["UNARY_OPS", "BINARY_OPS", "COMPARISON_OPS"]


# ---------------------------------------------------------------- type relations


def identity_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(data.shape, data.dtype)

    return rel


def bitwise_not_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "bitwise_not", ["data"])
    if not (is_integral(data.dtype) or data.dtype == "bool"):
        raise RelationError(f"bitwise_not: expects an integer or bool tensor, got {fmt_type(data)}")
    return TensorType(data.shape, data.dtype)


def identity_comp_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(data.shape, "bool")

    return rel


def broadcast_rel(op_name, out_dtype=None, integral_only=False, allow_bool=True):
    """TVM's BroadcastRel / BroadcastCompRel: equal dtypes, numpy broadcasting of shapes."""

    def rel(arg_types, attrs):
        lhs, rhs = tensor_args(arg_types, 2, op_name, ["lhs", "rhs"])
        dtype = same_dtype([lhs, rhs], op_name)
        if integral_only and not (is_integral(dtype) or (allow_bool and dtype == "bool")):
            # TVM only failed later, when lowering; no kernel exists for float bit operations.
            kinds = "integer or bool" if allow_bool else "integer"
            raise RelationError(f"{op_name}: expects {kinds} tensors, got {fmt_type(lhs)} and {fmt_type(rhs)}")
        shape = broadcast_shapes(lhs.shape, rhs.shape, op_name)
        return TensorType(shape, out_dtype or dtype)

    return rel


def where_rel(arg_types, attrs):
    cond, x, y = tensor_args(arg_types, 3, "where", ["condition", "x", "y"])
    if x.dtype != y.dtype:
        raise RelationError(f"where: x and y must have the same dtype, got {fmt_type(x)} and {fmt_type(y)}")
    shape = broadcast_shapes(x.shape, y.shape, "where")
    shape = broadcast_shapes(cond.shape, shape, "where")
    return TensorType(shape, x.dtype)


def cast_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "cast", ["data"])
    return TensorType(data.shape, attrs.dtype)


def cast_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "cast_like", ["data", "dtype_like"])
    return TensorType(data.shape, like.dtype)


def reinterpret_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "reinterpret", ["data"])
    if _bits(data.dtype) != _bits(attrs.dtype):
        raise RelationError(f"reinterpret: cannot reinterpret {fmt_type(data)} as {attrs.dtype} (bit widths differ)")
    return TensorType(data.shape, attrs.dtype)


def _bits(dtype: str) -> int:
    if dtype == "bool":
        return 8
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 0


# ---------------------------------------------------------------- numpy kernels


def _erf(x):
    # numpy has no erf; math.erf is exact to double precision.
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _round(x):
    # tir.round lowers to llvm.nearbyint: ties to even, like np.round.
    return np.round(x)


def _in_float(fn):
    """Apply a float function; integer inputs are computed in float64 and cast back by as_out."""

    def kernel(x):
        if not is_float(x.dtype.name):
            x = x.astype(np.float64)
        return fn(x)

    return kernel


UNARY_OPS = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": _in_float(np.exp),
    "fast_exp": _in_float(np.exp),
    "log": _in_float(np.log),
    "log2": _in_float(np.log2),
    "log10": _in_float(np.log10),
    "sqrt": _in_float(np.sqrt),
    "rsqrt": _in_float(lambda x: 1.0 / np.sqrt(x)),
    "sigmoid": _in_float(_sigmoid),
    "tanh": _in_float(np.tanh),
    "fast_tanh": _in_float(np.tanh),
    "erf": _in_float(_erf),
    "fast_erf": _in_float(_erf),
    "sin": _in_float(np.sin),
    "cos": _in_float(np.cos),
    "tan": _in_float(np.tan),
    "sinh": _in_float(np.sinh),
    "cosh": _in_float(np.cosh),
    "asin": _in_float(np.arcsin),
    "acos": _in_float(np.arccos),
    "atan": _in_float(np.arctan),
    "asinh": _in_float(np.arcsinh),
    "acosh": _in_float(np.arccosh),
    "atanh": _in_float(np.arctanh),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round,
    "trunc": np.trunc,
    "sign": np.sign,
    "logical_not": np.logical_not,
    "bitwise_not": np.invert,
    "copy": lambda x: np.array(x, copy=True),
    "zeros_like": np.zeros_like,
    "ones_like": np.ones_like,
}

_INTEGER_IDENTITY = {"floor", "ceil", "round", "trunc"}

_BOOL_RESULT = {
    "isnan": np.isnan,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
}


def _unary_impl(name, fn):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        if name in _INTEGER_IDENTITY and not is_float(x.dtype.name):
            return as_out(x, out_type)
        if x.dtype == np.bool_ and name in ("negative", "abs", "sign"):
            x = x.astype(np.int8)
        with quiet():
            return as_out(fn(x), out_type)

    return impl


def _bool_impl(fn):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        if not is_float(x.dtype.name):
            # Integers are never nan or inf (isfinite is always true).
            x = x.astype(np.float64)
        return as_out(fn(x), out_type)

    return impl


def _trunc_div(a, b):
    if is_integral(a.dtype.name) or a.dtype == np.bool_:
        # C semantics: the quotient rounds toward zero (numpy's // floors).
        q = np.floor_divide(a, b)
        r = np.remainder(a, b)
        adjust = (r != 0) & ((a < 0) != (b < 0))
        return q + adjust.astype(q.dtype)
    return np.divide(a, b)


def _trunc_mod(a, b):
    return np.fmod(a, b)


def _floor_div(a, b):
    if is_integral(a.dtype.name):
        return np.floor_divide(a, b)
    return np.floor(np.divide(a, b))


def _floor_mod(a, b):
    if is_integral(a.dtype.name):
        return np.remainder(a, b)
    return a - np.floor(np.divide(a, b)) * b


def _power(a, b):
    if is_integral(a.dtype.name):
        # numpy rejects negative integer exponents; compute in double precision like C pow.
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


def _trunc_divide(a, b):
    if is_integral(a.dtype.name):
        return _trunc_div(a, b)
    return np.trunc(np.divide(a, b))


BINARY_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _trunc_div,
    "floor_divide": _floor_div,
    "trunc_divide": _trunc_divide,
    "mod": _trunc_mod,
    "trunc_mod": _trunc_mod,
    "floor_mod": _floor_mod,
    "power": _power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "right_shift": np.right_shift,
    "left_shift": np.left_shift,
}

COMPARISON_OPS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


def _binary_impl(fn):
    def impl(args, attrs, out_type):
        a, b = (np.asarray(x) for x in args)
        with quiet():
            return as_out(fn(a, b), out_type)

    return impl


def _where_impl(args, attrs, out_type):
    cond, x, y = (np.asarray(a) for a in args)
    return as_out(np.where(cond.astype(bool), x, y), out_type)


def _cast_impl(args, attrs, out_type):
    return as_out(np.asarray(args[0]), out_type)


def _reinterpret_impl(args, attrs, out_type):
    x = np.ascontiguousarray(args[0])
    return x.view(np.dtype(out_type.dtype)).reshape(x.shape)


def _clip_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    # TVM casts a_min/a_max to the tensor's dtype before comparing.
    with quiet():
        lo = np.asarray(attrs.a_min).astype(x.dtype)
        hi = np.asarray(attrs.a_max).astype(x.dtype)
    return as_out(np.minimum(np.maximum(x, lo), hi), out_type)


def _fixed_point_multiply_impl(args, attrs, out_type):
    # tir.q_multiply_shift with q=31, as lowered by TVM: widen, shift left, multiply, round, shift right.
    x = np.asarray(args[0]).astype(np.int64)
    shift = int(attrs.shift)
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    x = x << left
    x = x * np.int64(attrs.multiplier)
    total_right = right + 31
    x = (x + (np.int64(1) << (total_right - 1))) >> total_right
    return as_out(x, out_type)


# ---------------------------------------------------------------- registration


def _register_all():
    for name, fn in UNARY_OPS.items():
        rel = bitwise_not_rel if name == "bitwise_not" else identity_rel(name)
        register(OpDef(name, 1, rel, OpPattern.ELEMWISE, _unary_impl(name, fn)))
    for name, fn in _BOOL_RESULT.items():
        register(OpDef(name, 1, identity_comp_rel(name), OpPattern.ELEMWISE, _bool_impl(fn)))
    for name, fn in BINARY_OPS.items():
        shift = name.endswith("_shift")
        rel = broadcast_rel(name, None, shift or name.startswith("bitwise_"), allow_bool=not shift)
        register(OpDef(name, 2, rel, OpPattern.BROADCAST, _binary_impl(fn)))
    for name, fn in COMPARISON_OPS.items():
        register(OpDef(name, 2, broadcast_rel(name, "bool"), OpPattern.BROADCAST, _binary_impl(fn)))
    register(OpDef("where", 3, where_rel, OpPattern.BROADCAST, _where_impl))
    register(
        OpDef("cast", 1, cast_rel, OpPattern.ELEMWISE, _cast_impl, attrs=(AttrField("dtype", REQUIRED, to_dtype),))
    )
    register(OpDef("cast_like", 2, cast_like_rel, OpPattern.ELEMWISE, _cast_impl))
    register(
        OpDef(
            "reinterpret",
            1,
            reinterpret_rel,
            OpPattern.ELEMWISE,
            _reinterpret_impl,
            attrs=(AttrField("dtype", REQUIRED, to_dtype),),
        )
    )
    register(
        OpDef(
            "clip",
            1,
            identity_rel("clip"),
            OpPattern.ELEMWISE,
            _clip_impl,
            attrs=(AttrField("a_min", REQUIRED, to_float), AttrField("a_max", REQUIRED, to_float)),
        )
    )
    register(
        OpDef(
            "fixed_point_multiply",
            1,
            identity_rel("fixed_point_multiply"),
            OpPattern.ELEMWISE,
            _fixed_point_multiply_impl,
            attrs=(AttrField("multiplier", REQUIRED, to_int), AttrField("shift", REQUIRED, to_int)),
        )
    )


_register_all()
