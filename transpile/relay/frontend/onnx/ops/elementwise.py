"""Converters of ONNX elementwise operators: arithmetic, comparison, logic, bitwise, unary math, variadic, Where."""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .support import broadcast_legacy

# ---------------------------------------------------------------- binary, numpy broadcasting

_BINARY = {
    "Add": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    # Relay's integer divide rounds toward zero, as ONNX's integer Div does.
    "Div": "divide",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or",
    "BitwiseXor": "bitwise_xor",
    "Equal": "equal",
    "Less": "less",
    "LessOrEqual": "less_equal",
    "Greater": "greater",
    "GreaterOrEqual": "greater_equal",
}


def _binary(relay_op):
    def convert(ctx):
        a, b = ctx.input(0), ctx.input(1)
        if ctx.opset < 7:
            b = broadcast_legacy(ctx, a, b)
        return ctx.b.call(relay_op, a, b)

    return convert


for _onnx_op, _relay_op in _BINARY.items():
    converter(_onnx_op)(_binary(_relay_op))


@converter("Pow")
def power(ctx):
    base, exponent = ctx.input(0), ctx.input(1)
    if ctx.opset < 7:
        exponent = broadcast_legacy(ctx, base, exponent)
    b = ctx.b
    base_dtype, exponent_dtype = b.dtype_of(base), b.dtype_of(exponent)
    if base_dtype == exponent_dtype:
        return b.call("power", base, exponent)
    if np.dtype(base_dtype).kind == "f":
        return b.call("power", base, b.call("cast", exponent, dtype=base_dtype))
    # An integer base with another exponent type: numpy computes in double, the result keeps the base's type.
    result = b.call("power", b.call("cast", base, dtype="float64"), b.call("cast", exponent, dtype="float64"))
    return b.call("cast", result, dtype=base_dtype)


@converter("Mod")
def mod(ctx):
    b = ctx.b
    x, y = ctx.input(0), ctx.input(1)
    # fmod=1 keeps the sign of the dividend (C fmod); fmod=0 that of the divisor (Python %).
    if ctx.attr("fmod", 0):
        return b.call("trunc_mod", x, y)
    if np.dtype(b.dtype_of(x)).kind != "f":
        return b.call("floor_mod", x, y)
    # Floats: Python's algorithm on top of fmod, which gets ONNX's infinite cases right
    # (x mod inf is x when the signs agree and inf otherwise) where x - floor(x/y)*y gives nan.
    remainder = b.call("trunc_mod", x, y)
    zero = b.const(np.array(0, dtype=b.dtype_of(x)))
    signs_differ = b.call("not_equal", b.call("less", remainder, zero), b.call("less", y, zero))
    adjust = b.call("logical_and", b.call("not_equal", remainder, zero), signs_differ)
    return b.call("where", adjust, b.call("add", remainder, y), remainder)


@converter("BitShift")
def bit_shift(ctx):
    b = ctx.b
    x, shift = ctx.input(0), ctx.input(1)
    direction = ctx.attr("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise b.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    relay_op = "left_shift" if direction == "LEFT" else "right_shift"
    dtype = b.dtype_of(x)
    bits = np.iinfo(np.dtype(dtype)).bits
    constant = b.value_of(shift)
    if constant is not None and np.all((constant >= 0) & (constant < bits)):
        return b.call(relay_op, x, shift)
    # Shifts by a negative amount or by the width or more are defined by ONNX: only the sign fill remains.
    zero = b.const(np.array(0, dtype=dtype))
    out_of_range = b.call(
        "logical_or", b.call("less", shift, zero), b.call("greater_equal", shift, b.const(np.array(bits, dtype=dtype)))
    )
    shifted = b.call(relay_op, x, b.call("where", out_of_range, zero, shift))
    fill = zero
    if direction == "RIGHT" and np.dtype(dtype).kind == "i":
        fill = b.call("where", b.call("less", x, zero), b.const(np.array(-1, dtype=dtype)), zero)
    return b.call("where", out_of_range, fill, shifted)


# ---------------------------------------------------------------- unary

_UNARY = {
    "Neg": "negative",
    "Abs": "abs",
    "Sign": "sign",
    "Floor": "floor",
    "Ceil": "ceil",
    "Round": "round",
    "Sqrt": "sqrt",
    "Exp": "exp",
    "Log": "log",
    "Erf": "erf",
    "Sin": "sin",
    "Cos": "cos",
    "Tan": "tan",
    "Asin": "asin",
    "Acos": "acos",
    "Atan": "atan",
    "Sinh": "sinh",
    "Cosh": "cosh",
    "Asinh": "asinh",
    "Acosh": "acosh",
    "Atanh": "atanh",
    "IsNaN": "isnan",
    "Not": "logical_not",
    "BitwiseNot": "bitwise_not",
}


def _unary(relay_op):
    def convert(ctx):
        return ctx.b.call(relay_op, ctx.input(0))

    return convert


for _onnx_op, _relay_op in _UNARY.items():
    converter(_onnx_op)(_unary(_relay_op))


@converter("Reciprocal")
def reciprocal(ctx):
    x = ctx.input(0)
    return ctx.b.call("divide", ctx.b.const(np.array(1, dtype=ctx.b.dtype_of(x))), x)


@converter("IsInf")
def is_inf(ctx):
    b = ctx.b
    x = ctx.input(0)
    positive, negative = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    infinite = b.call("isinf", x)
    if positive and negative:
        return infinite
    if not positive and not negative:
        return b.call("zeros_like", infinite)
    zero = b.const(np.array(0, dtype=b.dtype_of(x)))
    side = b.call("greater" if positive else "less", x, zero)
    return b.call("logical_and", infinite, side)


# ---------------------------------------------------------------- variadic, broadcasting

_VARIADIC = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}


def _variadic(onnx_op, relay_op):
    def convert(ctx):
        b = ctx.b
        operands = [v for v in ctx.inputs if v is not None]
        if not operands:
            raise b.error(f"{onnx_op} needs at least one input")
        result = operands[0]
        for operand in operands[1:]:
            result = b.call(relay_op, result, operand)
        if len(operands) == 1:
            # Broadcasting one input is the identity; copy so the output is a value of its own.
            result = b.call("copy", result)
        if onnx_op == "Mean":
            result = b.call("divide", result, b.const(np.array(len(operands), dtype=b.dtype_of(result))))
        return result

    return convert


for _onnx_op, _relay_op in _VARIADIC.items():
    converter(_onnx_op)(_variadic(_onnx_op, _relay_op))


@converter("Where")
def where(ctx):
    b = ctx.b
    condition = ctx.input(0)
    if b.dtype_of(condition) != "bool":
        condition = b.call("cast", condition, dtype="bool")
    return b.call("where", condition, ctx.input(1), ctx.input(2))


@converter("Relu")
def relu(ctx):
    return ctx.b.call("nn.relu", ctx.input(0))
