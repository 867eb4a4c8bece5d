"""Converters of ATen elementwise operators: arithmetic, comparison, logic, unary math, where, clamp.

PyTorch promotes mixed operands (tensor with tensor, tensor with Python scalar) by its own rules;
Relay operators take equal dtypes. Arithmetic is computed in the node's result dtype (which is
the promoted dtype, or float for true division of integers); comparisons in the promoted dtype
of their operands (`support.promoted_dtype`, which asks torch itself).
"""

from __future__ import annotations

from ..converters import converter
from .support import cast, is_float, is_tensor, operand, promoted_dtype, scalar

# ---------------------------------------------------------------- arithmetic


def _arithmetic(relay_op, swap=False):
    def convert(ctx):
        dtype = ctx.out_dtype
        lhs, rhs = operand(ctx.b, ctx.arg("self"), dtype), operand(ctx.b, ctx.arg("other"), dtype)
        alpha = ctx.arg("alpha", 1)
        if alpha != 1:  # add/sub(self, other, alpha): self ± alpha * other; rsub: other - alpha * self
            scaled = lhs if swap else rhs
            scaled = ctx.b.call("multiply", scaled, scalar(ctx.b, alpha, dtype))
            lhs, rhs = (scaled, rhs) if swap else (lhs, scaled)
        if swap:
            lhs, rhs = rhs, lhs
        return ctx.b.call(relay_op, lhs, rhs)

    return convert


converter("aten.add.Tensor", "aten.add.Scalar")(_arithmetic("add"))
converter("aten.sub.Tensor", "aten.sub.Scalar")(_arithmetic("subtract"))
converter("aten.rsub.Tensor", "aten.rsub.Scalar")(_arithmetic("subtract", swap=True))
converter("aten.mul.Tensor", "aten.mul.Scalar")(_arithmetic("multiply"))
converter("aten.div.Tensor", "aten.div.Scalar")(_arithmetic("divide"))
converter("aten.maximum.default", "aten.fmax.default")(_arithmetic("maximum"))
converter("aten.minimum.default", "aten.fmin.default")(_arithmetic("minimum"))
converter("aten.remainder.Tensor", "aten.remainder.Scalar")(_arithmetic("floor_mod"))
converter("aten.fmod.Tensor", "aten.fmod.Scalar")(_arithmetic("trunc_mod"))
converter("aten.floor_divide.default", "aten.floor_divide.Scalar")(_arithmetic("floor_divide"))


@converter("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def div_mode(ctx):
    dtype = ctx.out_dtype
    lhs, rhs = operand(ctx.b, ctx.arg("self"), dtype), operand(ctx.b, ctx.arg("other"), dtype)
    mode = ctx.arg("rounding_mode")
    if mode is None:
        return ctx.b.call("divide", lhs, rhs)
    if mode == "floor":
        return ctx.b.call("floor_divide", lhs, rhs)
    if mode == "trunc":
        return ctx.b.call("trunc_divide", lhs, rhs)
    raise ctx.unsupported(f"rounding_mode {mode!r}")


@converter("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar", "aten.pow.Scalar")
def power(ctx):
    dtype = ctx.out_dtype
    base, exponent = ctx.arg("self"), ctx.arg("exponent")
    if not is_tensor(exponent) and exponent in (1, 1.0):
        return operand(ctx.b, base, dtype)
    if not is_tensor(exponent) and exponent in (2, 2.0):
        x = operand(ctx.b, base, dtype)
        return ctx.b.call("multiply", x, x)
    return ctx.b.call("power", operand(ctx.b, base, dtype), operand(ctx.b, exponent, dtype))


# ---------------------------------------------------------------- comparison and logic

_COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


def _comparison(relay_op):
    def convert(ctx):
        lhs, rhs = ctx.arg("self"), ctx.arg("other")
        dtype = promoted_dtype(ctx, lhs, rhs)
        return ctx.b.call(relay_op, operand(ctx.b, lhs, dtype), operand(ctx.b, rhs, dtype))

    return convert


for _aten, _relay in _COMPARISONS.items():
    converter(f"aten.{_aten}.Tensor", f"aten.{_aten}.Scalar")(_comparison(_relay))


def _logical(relay_op):
    def convert(ctx):
        lhs, rhs = operand(ctx.b, ctx.arg("self"), "bool"), operand(ctx.b, ctx.arg("other"), "bool")
        return cast(ctx.b, ctx.b.call(relay_op, lhs, rhs), ctx.out_dtype)

    return convert


converter("aten.logical_and.default")(_logical("logical_and"))
converter("aten.logical_or.default")(_logical("logical_or"))
converter("aten.logical_xor.default")(_logical("logical_xor"))


@converter("aten.logical_not.default")
def logical_not(ctx):
    return cast(ctx.b, ctx.b.call("logical_not", cast(ctx.b, ctx.tensor("self"), "bool")), ctx.out_dtype)


def _bitwise(relay_op, bool_op):
    def convert(ctx):
        dtype = ctx.out_dtype
        lhs, rhs = operand(ctx.b, ctx.arg("self"), dtype), operand(ctx.b, ctx.arg("other"), dtype)
        if dtype == "bool":
            return ctx.b.call(bool_op, lhs, rhs)
        if is_float(dtype):
            raise ctx.unsupported(f"bitwise operations on {dtype}")
        return ctx.b.call(relay_op, lhs, rhs)

    return convert


for _name, _relay, _bool in (
    ("bitwise_and", "bitwise_and", "logical_and"),
    ("bitwise_or", "bitwise_or", "logical_or"),
    ("bitwise_xor", "bitwise_xor", "logical_xor"),
    ("__and__", "bitwise_and", "logical_and"),
    ("__or__", "bitwise_or", "logical_or"),
    ("__xor__", "bitwise_xor", "logical_xor"),
):
    converter(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_bitwise(_relay, _bool))
converter("aten.__lshift__.Tensor", "aten.__lshift__.Scalar", "aten.bitwise_left_shift.Tensor")(
    _bitwise("left_shift", "left_shift")
)
converter("aten.__rshift__.Tensor", "aten.__rshift__.Scalar", "aten.bitwise_right_shift.Tensor")(
    _bitwise("right_shift", "right_shift")
)


@converter("aten.bitwise_not.default")
def bitwise_not(ctx):
    x = ctx.tensor("self")
    return ctx.b.call("logical_not" if ctx.b.dtype_of(x) == "bool" else "bitwise_not", x)


# ---------------------------------------------------------------- unary math

# Computed in the result dtype: integer inputs of exp/log/sin… give float results in PyTorch.
_UNARY = {
    "abs": "abs",
    "neg": "negative",
    "exp": "exp",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "erf": "erf",
    "sign": "sign",
}

# Identities on integer tensors (PyTorch keeps their dtype).
_ROUNDING = {"floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc"}


def _unary(relay_op):
    def convert(ctx):
        return ctx.b.call(relay_op, cast(ctx.b, ctx.tensor("self"), ctx.out_dtype))

    return convert


for _aten, _relay in _UNARY.items():
    converter(f"aten.{_aten}.default")(_unary(_relay))


def _rounding(relay_op):
    def convert(ctx):
        x = ctx.tensor("self")
        return ctx.b.call(relay_op, x) if is_float(ctx.b.dtype_of(x)) else x

    return convert


for _aten, _relay in _ROUNDING.items():
    converter(f"aten.{_aten}.default")(_rounding(_relay))


@converter("aten.round.decimals")
def round_decimals(ctx):
    x = ctx.tensor("self")
    scale = scalar(ctx.b, 10.0 ** ctx.arg("decimals", 0), ctx.b.dtype_of(x))
    return ctx.b.call("divide", ctx.b.call("round", ctx.b.call("multiply", x, scale)), scale)


@converter("aten.reciprocal.default")
def reciprocal(ctx):
    dtype = ctx.out_dtype
    return ctx.b.call("divide", scalar(ctx.b, 1, dtype), cast(ctx.b, ctx.tensor("self"), dtype))


@converter("aten.square.default")
def square(ctx):
    x = cast(ctx.b, ctx.tensor("self"), ctx.out_dtype)
    return ctx.b.call("multiply", x, x)


@converter("aten.log1p.default")
def log1p(ctx):
    dtype = ctx.out_dtype
    return ctx.b.call("log", ctx.b.call("add", cast(ctx.b, ctx.tensor("self"), dtype), scalar(ctx.b, 1, dtype)))


@converter("aten.expm1.default")
def expm1(ctx):
    dtype = ctx.out_dtype
    return ctx.b.call("subtract", ctx.b.call("exp", cast(ctx.b, ctx.tensor("self"), dtype)), scalar(ctx.b, 1, dtype))


@converter("aten.exp2.default")
def exp2(ctx):
    dtype = ctx.out_dtype
    return ctx.b.call("power", scalar(ctx.b, 2, dtype), cast(ctx.b, ctx.tensor("self"), dtype))


def _float_class(relay_op):
    def convert(ctx):
        return ctx.b.call(relay_op, ctx.tensor("self"))

    return convert


converter("aten.isnan.default")(_float_class("isnan"))
converter("aten.isinf.default")(_float_class("isinf"))
converter("aten.isfinite.default")(_float_class("isfinite"))


# ---------------------------------------------------------------- where, clamp


@converter("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def where(ctx):
    dtype = ctx.out_dtype
    condition = cast(ctx.b, ctx.tensor("condition"), "bool")
    return ctx.b.call(
        "where", condition, operand(ctx.b, ctx.arg("self"), dtype), operand(ctx.b, ctx.arg("other"), dtype)
    )


@converter(
    "aten.clamp.default",
    "aten.clamp.Tensor",
    "aten.clamp_min.default",
    "aten.clamp_max.default",
    "aten.clamp_min.Tensor",
    "aten.clamp_max.Tensor",
)
def clamp(ctx):
    dtype = ctx.out_dtype
    x = cast(ctx.b, ctx.tensor("self"), dtype)
    low, high = ctx.arg("min"), ctx.arg("max")
    if is_float(dtype) and not is_tensor(low) and not is_tensor(high) and (low is not None or high is not None):
        low = float("-inf") if low is None else float(low)
        high = float("inf") if high is None else float(high)
        return ctx.b.call("clip", x, a_min=low, a_max=high)
    # max then min, as PyTorch: a lower bound above the upper one gives the upper bound.
    if low is not None:
        x = ctx.b.call("maximum", x, operand(ctx.b, low, dtype))
    if high is not None:
        x = ctx.b.call("minimum", x, operand(ctx.b, high, dtype))
    return x


# ---------------------------------------------------------------- two-argument functions without a Relay operator


@converter("aten.atan2.default")
def atan2(ctx):
    """atan(y / x) moved to the right quadrant; atan2(0, 0) is 0."""
    import math

    b = ctx.b
    dtype = ctx.out_dtype
    y, x = operand(b, ctx.arg("self"), dtype), operand(b, ctx.arg("other"), dtype)
    zero = scalar(b, 0, dtype)
    base = b.call("atan", b.call("divide", y, x))
    half_turn = b.call("where", b.call("greater_equal", y, zero), scalar(b, math.pi, dtype), scalar(b, -math.pi, dtype))
    angle = b.call("where", b.call("less", x, zero), b.call("add", base, half_turn), base)
    both_zero = b.call("logical_and", b.call("equal", x, zero), b.call("equal", y, zero))
    return b.call("where", both_zero, zero, angle)


@converter("aten.hypot.default")
def hypot(ctx):
    b = ctx.b
    dtype = ctx.out_dtype
    x, y = operand(b, ctx.arg("self"), dtype), operand(b, ctx.arg("other"), dtype)
    return b.call("sqrt", b.call("add", b.call("multiply", x, x), b.call("multiply", y, y)))


@converter("aten.signbit.default")
def signbit(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    dtype = b.dtype_of(x)
    if dtype == "bool" or dtype.startswith("uint"):
        return b.call("full", b.const(False), shape=b.static_shape(x), dtype="bool")
    if not is_float(dtype):
        return b.call("less", x, scalar(b, 0, dtype))
    # The sign bit of the float is the sign of the same bits read as a signed integer (-0.0, -nan too).
    bits = "int" + dtype[len("float") :]
    return b.call("less", b.call("reinterpret", x, dtype=bits), scalar(b, 0, bits))
