"""Converters of ONNX normalizations: BatchNormalization, Instance/Layer/Group/RMS normalization, LRN, MVN, LpNormalization."""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .shape_values import normalize_axis


def _scalar(ctx, value, dtype):
    return ctx.b.const(np.array(value, dtype=dtype))


def _as_dtype(ctx, value, dtype):
    return value if ctx.b.dtype_of(value) == dtype else ctx.b.call("cast", value, dtype=dtype)


def _wants_output(ctx, index: int) -> bool:
    return len(ctx.node.output) > index and ctx.node.output[index] != ""


@converter("BatchNormalization")
def batch_normalization(ctx):
    b = ctx.b
    data = ctx.input(0)
    dtype = b.dtype_of(data)
    scale, bias, mean, var = (_as_dtype(ctx, ctx.input(i), dtype) for i in range(1, 5))
    if ctx.attr("training_mode", 0):
        return _batch_normalization_training(ctx, data, scale, bias, mean, var)
    if ctx.opset < 7 and not ctx.attr("is_test", 0):
        raise ctx.unsupported("is_test=0 (training: batch statistics and running-average updates)")
    if any(_wants_output(ctx, i) for i in (3, 4)):
        raise ctx.unsupported("the saved mean / inverse deviation outputs, which only training computes")
    epsilon = float(ctx.attr("epsilon", 1e-5))
    if b.ndim_of(scale) == 1 and b.ndim_of(data) >= 2:
        out = b.get(b.call("nn.batch_norm", data, scale, bias, mean, var, axis=1, epsilon=epsilon), 0)
    else:
        # spatial=0 (opset < 9): statistics per (C, D1, ...) activation, broadcast over the batch only.
        normed = b.call(
            "divide",
            b.call("subtract", data, mean),
            b.call("sqrt", b.call("add", var, _scalar(ctx, epsilon, dtype))),
        )
        out = b.call("add", b.call("multiply", normed, scale), bias)
    # At inference the running statistics pass through unchanged (as Relay's batch_norm returns them).
    return [out, ctx.input(3), ctx.input(4)]


def _batch_normalization_training(ctx, data, scale, bias, running_mean, running_var):
    """training_mode=1: normalize with the batch's statistics; update the running ones by momentum."""
    b = ctx.b
    dtype = b.dtype_of(data)
    rank = b.ndim_of(data)
    axes = (0,) + tuple(range(2, rank))
    mean = b.call("mean", data, axis=axes)
    var = b.call("variance", data, b.call("mean", data, axis=axes, keepdims=True), axis=axes)
    epsilon = float(ctx.attr("epsilon", 1e-5))
    out = b.get(b.call("nn.batch_norm", data, scale, bias, mean, var, axis=1, epsilon=epsilon), 0)
    momentum = float(ctx.attr("momentum", 0.9))

    def updated(running, batch):
        kept = b.call("multiply", running, _scalar(ctx, momentum, dtype))
        return b.call("add", kept, b.call("multiply", batch, _scalar(ctx, 1.0 - momentum, dtype)))

    return [out, updated(running_mean, mean), updated(running_var, var)]


@converter("InstanceNormalization")
def instance_normalization(ctx):
    b = ctx.b
    data = ctx.input(0)
    dtype = b.dtype_of(data)
    scale, bias = _as_dtype(ctx, ctx.input(1), dtype), _as_dtype(ctx, ctx.input(2), dtype)
    return b.call("nn.instance_norm", data, scale, bias, axis=1, epsilon=float(ctx.attr("epsilon", 1e-5)))


def _stash_dtype(ctx, dtype: str) -> str:
    # stash_type=1 computes the statistics in float32 (half inputs are widened).
    if int(ctx.attr("stash_type", 1)) == 1 and dtype == "float16":
        return "float32"
    return dtype


def _moments(ctx, data, axes):
    """(x - mean, mean, 1 / sqrt(var + eps)) over `axes`, kept as size-1 dimensions."""
    b = ctx.b
    dtype = b.dtype_of(data)
    mean = b.call("mean", data, axis=axes, keepdims=True)
    centered = b.call("subtract", data, mean)
    variance = b.call("mean", b.call("multiply", centered, centered), axis=axes, keepdims=True)
    epsilon = _scalar(ctx, float(ctx.attr("epsilon", 1e-5)), dtype)
    inv_std = b.call("divide", _scalar(ctx, 1.0, dtype), b.call("sqrt", b.call("add", variance, epsilon)))
    return centered, mean, inv_std


@converter("LayerNormalization")
def layer_normalization(ctx):
    b = ctx.b
    data, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    rank = b.ndim_of(data)
    axis = normalize_axis(ctx, int(ctx.attr("axis", -1)), rank)
    dtype = b.dtype_of(data)
    stash = _stash_dtype(ctx, dtype)
    scale = _as_dtype(ctx, scale, dtype)
    bias = _as_dtype(ctx, bias, dtype) if bias is not None else None
    simple = (
        axis == rank - 1
        and stash == dtype
        and not _wants_output(ctx, 1)
        and not _wants_output(ctx, 2)
        and b.ndim_of(scale) == 1
        and (bias is None or b.ndim_of(bias) == 1)
    )
    if simple:
        zero = b.call("zeros_like", scale) if bias is None else bias
        return b.call("nn.layer_norm", data, scale, zero, axis=-1, epsilon=float(ctx.attr("epsilon", 1e-5)))
    centered, mean, inv_std = _moments(ctx, _as_dtype(ctx, data, stash), tuple(range(axis, rank)))
    out = _as_dtype(ctx, b.call("multiply", centered, inv_std), dtype)
    out = b.call("multiply", out, scale)
    if bias is not None:
        out = b.call("add", out, bias)
    return [out, mean, inv_std]


@converter("RMSNormalization")
def rms_normalization(ctx):
    b = ctx.b
    data, scale = ctx.input(0), ctx.input(1)
    rank = b.ndim_of(data)
    axis = normalize_axis(ctx, int(ctx.attr("axis", -1)), rank)
    dtype = b.dtype_of(data)
    x = _as_dtype(ctx, data, _stash_dtype(ctx, dtype))
    stash = b.dtype_of(x)
    mean_square = b.call("mean", b.call("multiply", x, x), axis=tuple(range(axis, rank)), keepdims=True)
    epsilon = _scalar(ctx, float(ctx.attr("epsilon", 1e-5)), stash)
    normed = b.call("divide", x, b.call("sqrt", b.call("add", mean_square, epsilon)))
    return b.call("multiply", _as_dtype(ctx, normed, dtype), _as_dtype(ctx, scale, dtype))


@converter("GroupNormalization")
def group_normalization(ctx):
    b = ctx.b
    data = ctx.input(0)
    dtype = b.dtype_of(data)
    scale, bias = _as_dtype(ctx, ctx.input(1), dtype), _as_dtype(ctx, ctx.input(2), dtype)
    groups = ctx.attr("num_groups")
    if groups is None:
        raise b.error("attribute num_groups is required")
    shape = b.shape_of(data)
    if len(shape) < 3:
        raise b.error(f"the input must be N x C x D1 x ..., got {b.type_of(data)}")
    channels = shape[1]
    if not isinstance(channels, int) or channels % groups:
        raise b.error(f"num_groups ({groups}) must divide the (known) channel count of {b.type_of(data)}")
    if ctx.opset < 21 and b.shape_of(scale)[0] == groups and groups != channels:
        # Opset 18 gives scale and bias per group: each applies to the group's channels.
        scale = b.call("repeat", scale, repeats=channels // groups, axis=0)
        bias = b.call("repeat", bias, repeats=channels // groups, axis=0)
    epsilon = float(ctx.attr("epsilon", 1e-5))
    stash = _stash_dtype(ctx, dtype) if ctx.opset >= 21 else dtype
    if stash == dtype:
        return b.call("nn.group_norm", data, scale, bias, num_groups=int(groups), axis=1, epsilon=epsilon)
    # Widened statistics: normalize in the stash type, then scale and shift in the input's type.
    x = _as_dtype(ctx, data, stash)
    ones = b.const(np.ones(channels, dtype=stash))
    zeros = b.const(np.zeros(channels, dtype=stash))
    normed = b.call("nn.group_norm", x, ones, zeros, num_groups=int(groups), axis=1, epsilon=epsilon)
    channel_shape = (-1,) + (1,) * (len(shape) - 2)
    out = b.call("multiply", _as_dtype(ctx, normed, dtype), b.call("reshape", scale, newshape=channel_shape))
    return b.call("add", out, b.call("reshape", bias, newshape=channel_shape))


@converter("LRN")
def lrn(ctx):
    b = ctx.b
    data = ctx.input(0)
    size = ctx.attr("size")
    if size is None:
        raise b.error("attribute size is required")
    size = int(size)
    alpha, beta, bias = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75)), float(ctx.attr("bias", 1.0))
    if size % 2 == 1:
        return b.call("nn.lrn", data, size=size, axis=1, bias=bias, alpha=alpha, beta=beta)
    # An even window reaches one channel further after than before (floor / ceil of (size - 1) / 2),
    # which nn.lrn's centred window cannot express: sum the squares of the shifted channels.
    dtype = b.dtype_of(data)
    rank = b.ndim_of(data)
    before, after = (size - 1) // 2, size // 2
    squares = b.call("multiply", data, data)
    widths = ((0, 0), (before, after)) + ((0, 0),) * (rank - 2)
    padded = b.call("nn.pad", squares, _scalar(ctx, 0, dtype), pad_width=widths)
    channels = b.shape_of(data)[1]
    if not isinstance(channels, int):
        raise b.error(f"LRN with an even size needs the channel count at import, got {b.type_of(data)}")
    total = None
    for offset in range(size):
        window = b.call("strided_slice", padded, begin=(offset,), end=(offset + channels,), strides=(1,), axes=(1,))
        total = window if total is None else b.call("add", total, window)
    denominator = b.call(
        "power",
        b.call("add", _scalar(ctx, bias, dtype), b.call("multiply", _scalar(ctx, alpha / size, dtype), total)),
        _scalar(ctx, beta, dtype),
    )
    return b.call("divide", data, denominator)


@converter("MeanVarianceNormalization")
def mean_variance_normalization(ctx):
    b = ctx.b
    data = ctx.input(0)
    rank = b.ndim_of(data)
    axes = tuple(normalize_axis(ctx, int(a), rank) for a in ctx.attr("axes", [0, 2, 3]))
    dtype = b.dtype_of(data)
    mean = b.call("mean", data, axis=axes, keepdims=True)
    mean_of_squares = b.call("mean", b.call("multiply", data, data), axis=axes, keepdims=True)
    std = b.call("sqrt", b.call("subtract", mean_of_squares, b.call("multiply", mean, mean)))
    return b.call("divide", b.call("subtract", data, mean), b.call("add", std, _scalar(ctx, 1e-9, dtype)))


@converter("LpNormalization")
def lp_normalization(ctx):
    b = ctx.b
    data = ctx.input(0)
    axis = normalize_axis(ctx, int(ctx.attr("axis", -1)), b.ndim_of(data))
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise b.error(f"p must be 1 or 2, got {p}")
    if p == 1:
        norm = b.call("sum", b.call("abs", data), axis=(axis,), keepdims=True)
    else:
        norm = b.call("sqrt", b.call("sum", b.call("multiply", data, data), axis=(axis,), keepdims=True))
    dtype = b.dtype_of(data)
    # A zero vector stays zero (the reference's where(norm == 0, 0, x / norm)).
    zero = _scalar(ctx, 0, dtype)
    safe = b.call("where", b.call("equal", norm, zero), _scalar(ctx, 1, dtype), norm)
    return b.call("divide", data, safe)
