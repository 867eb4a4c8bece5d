"""Converters of ONNX activations: Softmax / LogSoftmax / Hardmax, Sigmoid, Tanh, the ReLU family, Gelu, Clip..."""

from __future__ import annotations

import math

import numpy as np

from ..converters import converter
from .shape_values import normalize_axis


def _scalar(ctx, value, like):
    return ctx.b.const(np.array(value, dtype=ctx.b.dtype_of(like)))


def _float_input(ctx, index: int = 0):
    data = ctx.input(index)
    if np.dtype(ctx.b.dtype_of(data)).kind != "f":
        raise ctx.b.error(f"{ctx.op_type} takes a floating-point tensor, got {ctx.b.type_of(data)}")
    return data


# ---------------------------------------------------------------------------------- softmax family


def _along_axis(ctx, data, build):
    """Apply `build(x, axis)` with ONNX's axis semantics for this opset.

    From opset 13 the operator runs along one axis (default -1). Before, the input is seen as a
    matrix (dims before `axis` x dims from `axis`, default axis 1) and it runs along the rows.
    """
    b = ctx.b
    rank = b.ndim_of(data)
    if rank == 0:
        raise b.error(f"{ctx.op_type} needs a tensor of rank >= 1")
    if ctx.opset >= 13:
        return build(data, normalize_axis(ctx, int(ctx.attr("axis", -1)), rank))
    axis = normalize_axis(ctx, int(ctx.attr("axis", 1)), rank) if rank > 1 else 0
    if axis == rank - 1:
        return build(data, axis)
    shape = b.shape_of(data)
    leading, trailing = shape[:axis], shape[axis:]
    if all(isinstance(d, int) for d in trailing):
        matrix = (-1, int(np.prod(trailing, dtype=np.int64)))
    elif all(isinstance(d, int) for d in leading):
        matrix = (int(np.prod(leading, dtype=np.int64)), -1)
    else:
        raise b.error(
            f"{ctx.op_type} (opset {ctx.opset}) must flatten {b.type_of(data)} at axis {axis}: too many unknown dimensions"
        )
    flat = b.call("reshape", data, newshape=matrix)
    return b.call("reshape_like", build(flat, 1), data)


@converter("Softmax")
def softmax(ctx):
    return _along_axis(ctx, ctx.input(0), lambda x, axis: ctx.b.call("nn.softmax", x, axis=axis))


@converter("LogSoftmax")
def log_softmax(ctx):
    return _along_axis(ctx, ctx.input(0), lambda x, axis: ctx.b.call("nn.log_softmax", x, axis=axis))


@converter("Hardmax")
def hardmax(ctx):
    b = ctx.b

    def build(x, axis):
        depth = b.shape_of(x)[axis]
        if not isinstance(depth, int):
            raise b.error(f"Hardmax needs the size of axis {axis} of {b.type_of(x)} at import")
        # argmax picks the first maximum, as ONNX's Hardmax does.
        index = b.call("argmax", x, axis=(axis,), keepdims=False)
        on, off = _scalar(ctx, 1, x), _scalar(ctx, 0, x)
        return b.call("one_hot", index, on, off, depth=depth, axis=axis, dtype=b.dtype_of(x))

    return _along_axis(ctx, ctx.input(0), build)


# ---------------------------------------------------------------------------------- pointwise


@converter("Sigmoid")
def sigmoid(ctx):
    return ctx.b.call("sigmoid", ctx.input(0))


@converter("Tanh")
def tanh(ctx):
    return ctx.b.call("tanh", ctx.input(0))


@converter("LeakyRelu")
def leaky_relu(ctx):
    return ctx.b.call("nn.leaky_relu", ctx.input(0), alpha=float(ctx.attr("alpha", 0.01)))


def _exp_minus_one(ctx, x, alpha: float):
    """alpha * (exp(x) - 1)."""
    b = ctx.b
    return b.call("multiply", _scalar(ctx, alpha, x), b.call("subtract", b.call("exp", x), _scalar(ctx, 1, x)))


def _elu(ctx, x, alpha: float):
    b = ctx.b
    return b.call("where", b.call("less", x, _scalar(ctx, 0, x)), _exp_minus_one(ctx, x, alpha), x)


@converter("Elu")
def elu(ctx):
    return _elu(ctx, _float_input(ctx), float(ctx.attr("alpha", 1.0)))


@converter("Selu")
def selu(ctx):
    x = _float_input(ctx)
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    b = ctx.b
    negative = b.call("less_equal", x, _scalar(ctx, 0, x))
    return b.call("multiply", _scalar(ctx, gamma, x), b.call("where", negative, _exp_minus_one(ctx, x, alpha), x))


@converter("Celu")
def celu(ctx):
    b = ctx.b
    x = _float_input(ctx)
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = b.call("divide", x, _scalar(ctx, alpha, x))
    negative_part = b.call("minimum", _scalar(ctx, 0, x), _exp_minus_one(ctx, scaled, alpha))
    return b.call("add", b.call("nn.relu", x), negative_part)


@converter("PRelu")
def prelu(ctx):
    b = ctx.b
    x, slope = ctx.input(0), ctx.input(1)
    rank, slope_rank = b.ndim_of(x), b.ndim_of(slope)
    if ctx.opset < 7 and slope_rank == 1 and rank > 2 and b.shape_of(slope)[0] != 1:
        # Before opset 7 a vector slope is per channel (axis 1), not numpy-broadcast along the last axis.
        slope = b.call("reshape", slope, newshape=(-1,) + (1,) * (rank - 2))
    if b.dtype_of(slope) != b.dtype_of(x):
        slope = b.call("cast", slope, dtype=b.dtype_of(x))
    return b.call("where", b.call("less", x, _scalar(ctx, 0, x)), b.call("multiply", x, slope), x)


@converter("ThresholdedRelu")
def thresholded_relu(ctx):
    b = ctx.b
    x = _float_input(ctx)
    above = b.call("greater", x, _scalar(ctx, float(ctx.attr("alpha", 1.0)), x))
    return b.call("where", above, x, _scalar(ctx, 0, x))


def _hard_sigmoid(ctx, x, alpha: float, beta: float):
    b = ctx.b
    linear = b.call("add", b.call("multiply", x, _scalar(ctx, alpha, x)), _scalar(ctx, beta, x))
    return b.call("clip", linear, a_min=0.0, a_max=1.0)


@converter("HardSigmoid")
def hard_sigmoid(ctx):
    x = _float_input(ctx)
    return _hard_sigmoid(ctx, x, float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5)))


@converter("HardSwish")
def hard_swish(ctx):
    x = _float_input(ctx)
    return ctx.b.call("multiply", x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))


def log1p(ctx, e):
    """log(1 + e) accurate for small e (Relay has no log1p): log(u) * e / (u - 1) with u = 1 + e, rounded."""
    b = ctx.b
    u = b.call("add", _scalar(ctx, 1, e), e)
    rounding = b.call("subtract", u, _scalar(ctx, 1, e))
    # Where 1 + e rounds to 1, log1p(e) is e itself; the guard keeps 0 / 0 out of the other branch.
    exact = b.call("equal", rounding, _scalar(ctx, 0, e))
    safe = b.call("where", exact, _scalar(ctx, 1, e), rounding)
    scaled = b.call("divide", b.call("multiply", b.call("log", u), e), safe)
    return b.call("where", exact, e, scaled)


def softplus_of(ctx, x):
    """log(1 + exp(x)) without overflow or cancellation: max(x, 0) + log1p(exp(-|x|))."""
    b = ctx.b
    tail = log1p(ctx, b.call("exp", b.call("negative", b.call("abs", x))))
    return b.call("add", b.call("nn.relu", x), tail)


@converter("Softplus")
def softplus(ctx):
    return softplus_of(ctx, _float_input(ctx))


@converter("Softsign")
def softsign(ctx):
    b = ctx.b
    x = _float_input(ctx)
    return b.call("divide", x, b.call("add", _scalar(ctx, 1, x), b.call("abs", x)))


@converter("Mish")
def mish(ctx):
    b = ctx.b
    x = _float_input(ctx)
    # tanh(softplus(x)) = n / (n + 2) with n = e^x (e^x + 2): no tanh of tiny values (imprecise in
    # compiled kernels) and no log; past x = 20 the factor is 1 to float precision, and e^x overflows.
    large = _scalar(ctx, 20, x)
    e = b.call("exp", b.call("minimum", x, large))
    n = b.call("multiply", e, b.call("add", e, _scalar(ctx, 2, x)))
    factor = b.call("divide", n, b.call("add", n, _scalar(ctx, 2, x)))
    return b.call("where", b.call("greater", x, large), x, b.call("multiply", x, factor))


@converter("Swish")
def swish(ctx):
    b = ctx.b
    x = _float_input(ctx)
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = x if alpha == 1.0 else b.call("multiply", x, _scalar(ctx, alpha, x))
    return b.call("multiply", x, b.call("sigmoid", scaled))


@converter("Gelu")
def gelu(ctx):
    b = ctx.b
    x = _float_input(ctx)
    approximate = ctx.attr("approximate", "none")
    half_x = b.call("multiply", x, _scalar(ctx, 0.5, x))
    if approximate == "none":
        inner = b.call("erf", b.call("multiply", x, _scalar(ctx, 1.0 / math.sqrt(2.0), x)))
    elif approximate == "tanh":
        cubic = b.call("multiply", b.call("multiply", x, x), x)
        inner = b.call("add", x, b.call("multiply", cubic, _scalar(ctx, 0.044715, x)))
        inner = b.call("tanh", b.call("multiply", inner, _scalar(ctx, math.sqrt(2.0 / math.pi), x)))
    else:
        raise b.error(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return b.call("multiply", half_x, b.call("add", _scalar(ctx, 1, x), inner))


@converter("Shrink")
def shrink(ctx):
    b = ctx.b
    data = ctx.input(0)
    dtype = b.dtype_of(data)
    # Integer inputs are compared with the float thresholds exactly, then truncated back.
    x = data if np.dtype(dtype).kind == "f" else b.call("cast", data, dtype="float64")
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    low = b.call("less", x, _scalar(ctx, -lambd, x))
    high = b.call("greater", x, _scalar(ctx, lambd, x))
    zero = _scalar(ctx, 0, x)
    out = b.call(
        "where",
        low,
        b.call("add", x, _scalar(ctx, bias, x)),
        b.call("where", high, b.call("subtract", x, _scalar(ctx, bias, x)), zero),
    )
    return out if x is data else b.call("cast", out, dtype=dtype)


# ---------------------------------------------------------------------------------- Clip


@converter("Clip")
def clip(ctx):
    b = ctx.b
    x = ctx.input(0)
    dtype = b.dtype_of(x)
    if ctx.opset < 11:
        low, high = ctx.attr("min"), ctx.attr("max")
        low = None if low is None else b.const(np.array(low, dtype=dtype))
        high = None if high is None else b.const(np.array(high, dtype=dtype))
    else:
        low, high = ctx.input(1, required=False), ctx.input(2, required=False)
    for bound in (low, high):
        if bound is not None and b.ndim_of(bound) != 0 and b.shape_of(bound) != [1]:
            raise b.error(f"Clip bounds must be scalars, got {b.type_of(bound)}")
    low = None if low is None else _scalar_bound(ctx, low, dtype)
    high = None if high is None else _scalar_bound(ctx, high, dtype)
    low_value = None if low is None else b.value_of(low)
    high_value = None if high is None else b.value_of(high)
    if low_value is not None and high_value is not None and np.dtype(dtype).kind == "f" and low_value <= high_value:
        return b.call("clip", x, a_min=float(low_value), a_max=float(high_value))
    # min(max(x, low), high): also right when low > high (everything becomes high), unlike a clip.
    if low is not None:
        x = b.call("maximum", x, low)
    if high is not None:
        x = b.call("minimum", x, high)
    return x


def _scalar_bound(ctx, bound, dtype):
    b = ctx.b
    if b.ndim_of(bound) != 0:
        bound = b.call("reshape", bound, newshape=())
    return bound if b.dtype_of(bound) == dtype else b.call("cast", bound, dtype=dtype)
