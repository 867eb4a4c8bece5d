"""Converters of ATen activations and softmax, composed from registry operators where Relay has none.

The compositions follow PyTorch's CPU kernels: hardswish is x * clamp(x + 3, 0, 6) / 6, gelu is
x/2 * (1 + erf(x / sqrt 2)) (or the tanh form), elu is scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)).
"""

from __future__ import annotations

import math

from ..converters import converter
from .support import cast, normalize_axis, scalar


def _float_input(ctx, name="self"):
    return cast(ctx.b, ctx.tensor(name), ctx.out_dtype)


@converter("aten.relu.default")
def relu(ctx):
    return ctx.b.call("nn.relu", ctx.tensor("self"))


@converter("aten.relu6.default")
def relu6(ctx):
    return ctx.b.call("clip", ctx.tensor("self"), a_min=0.0, a_max=6.0)


@converter("aten.hardtanh.default")
def hardtanh(ctx):
    x = ctx.tensor("self")
    return ctx.b.call("clip", x, a_min=float(ctx.arg("min_val", -1.0)), a_max=float(ctx.arg("max_val", 1.0)))


@converter("aten.hardsigmoid.default")
def hardsigmoid(ctx):
    b, x = ctx.b, _float_input(ctx)
    dtype = b.dtype_of(x)
    shifted = b.call("clip", b.call("add", x, scalar(b, 3, dtype)), a_min=0.0, a_max=6.0)
    return b.call("divide", shifted, scalar(b, 6, dtype))


@converter("aten.hardswish.default")
def hardswish(ctx):
    b, x = ctx.b, _float_input(ctx)
    dtype = b.dtype_of(x)
    shifted = b.call("clip", b.call("add", x, scalar(b, 3, dtype)), a_min=0.0, a_max=6.0)
    return b.call("divide", b.call("multiply", x, shifted), scalar(b, 6, dtype))


@converter("aten.silu.default")
def silu(ctx):
    x = _float_input(ctx)
    return ctx.b.call("multiply", x, ctx.b.call("sigmoid", x))


@converter("aten.gelu.default")
def gelu(ctx):
    b, x = ctx.b, _float_input(ctx)
    dtype = b.dtype_of(x)
    half_x = b.call("multiply", x, scalar(b, 0.5, dtype))
    approximate = ctx.arg("approximate", "none")
    if approximate == "tanh":
        cube = b.call("multiply", b.call("multiply", x, x), x)
        inner = b.call("add", x, b.call("multiply", cube, scalar(b, 0.044715, dtype)))
        inner = b.call("multiply", inner, scalar(b, math.sqrt(2.0 / math.pi), dtype))
        gate = b.call("tanh", inner)
    elif approximate == "none":
        gate = b.call("erf", b.call("multiply", x, scalar(b, math.sqrt(0.5), dtype)))
    else:
        raise ctx.unsupported(f"approximate={approximate!r}")
    return b.call("multiply", half_x, b.call("add", gate, scalar(b, 1, dtype)))


@converter("aten.leaky_relu.default")
def leaky_relu(ctx):
    return ctx.b.call("nn.leaky_relu", ctx.tensor("self"), alpha=float(ctx.arg("negative_slope", 0.01)))


@converter("aten.elu.default")
def elu(ctx):
    b, x = ctx.b, _float_input(ctx)
    dtype = b.dtype_of(x)
    alpha, scale, input_scale = (float(ctx.arg(n, 1.0)) for n in ("alpha", "scale", "input_scale"))
    negative = b.call("exp", b.call("multiply", x, scalar(b, input_scale, dtype)))
    negative = b.call("multiply", b.call("subtract", negative, scalar(b, 1, dtype)), scalar(b, alpha * scale, dtype))
    positive = b.call("multiply", x, scalar(b, scale, dtype))
    return b.call("where", b.call("greater", x, scalar(b, 0, dtype)), positive, negative)


@converter("aten.softplus.default")
def softplus(ctx):
    b, x = ctx.b, _float_input(ctx)
    dtype = b.dtype_of(x)
    beta, threshold = float(ctx.arg("beta", 1.0)), float(ctx.arg("threshold", 20.0))
    scaled = b.call("multiply", x, scalar(b, beta, dtype))
    soft = b.call("log", b.call("add", b.call("exp", scaled), scalar(b, 1, dtype)))
    soft = b.call("divide", soft, scalar(b, beta, dtype))
    return b.call("where", b.call("greater", scaled, scalar(b, threshold, dtype)), x, soft)


@converter("aten._prelu_kernel.default")
def prelu(ctx):
    b, x = ctx.b, ctx.tensor("self")
    weight = cast(b, ctx.tensor("weight"), b.dtype_of(x))
    return b.call("where", b.call("greater", x, scalar(b, 0, b.dtype_of(x))), x, b.call("multiply", weight, x))


@converter("aten._softmax.default", "aten.softmax.int")
def softmax(ctx):
    x = _float_input(ctx)
    return ctx.b.call("nn.softmax", x, axis=normalize_axis(ctx, ctx.arg("dim"), ctx.b.ndim_of(x)))


@converter("aten._log_softmax.default", "aten.log_softmax.int")
def log_softmax(ctx):
    x = _float_input(ctx)
    return ctx.b.call("nn.log_softmax", x, axis=normalize_axis(ctx, ctx.arg("dim"), ctx.b.ndim_of(x)))
