"""nn.lrn: local response normalization across the channel axis (TVM's LRN, as topi and PyTorch compute it).

out = x / (bias + alpha / size * sum(x[c'] ** 2)) ** beta, the sum over the `size` channels
c' in [c - size // 2, c - size // 2 + size - 1] that exist (zero padding). For an odd size this
is ONNX's LRN too; for an even size ONNX centres the window one channel later.
"""

from __future__ import annotations

import numpy as np

from ...common import expect_tensor, normalize_axis
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, compute_dtype, to_float, to_int
from .te_common import accumulate_dtype


def _lrn_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.lrn", "data")
    normalize_axis(attrs.axis, data.ndim, "nn.lrn")
    if attrs.size < 1:
        raise RelationError(f"nn.lrn: size must be >= 1, got {attrs.size}")
    return data


def _lrn_impl(args, attrs, out_type):
    x = args[0]
    acc = compute_dtype(x.dtype)
    axis = attrs.axis % x.ndim
    squares = np.moveaxis(np.square(x.astype(acc, copy=False)), axis, -1)
    channels = squares.shape[-1]
    before = attrs.size // 2
    padded = np.pad(squares, [(0, 0)] * (squares.ndim - 1) + [(before, attrs.size - 1 - before)])
    window = sum(padded[..., offset : offset + channels] for offset in range(attrs.size))
    scale = (attrs.bias + attrs.alpha / attrs.size * np.moveaxis(window, -1, axis)) ** attrs.beta
    return (x.astype(acc, copy=False) / scale).astype(x.dtype)


def _lrn_te(inputs, attrs, out_type):
    from tvm import te, tirx

    data = inputs[0]
    dtype = str(data.dtype)
    acc = accumulate_dtype(dtype)
    axis = attrs.axis % len(data.shape)
    channels = data.shape[axis]
    before = attrs.size // 2

    def window_sum(*index):
        offset = te.reduce_axis((0, attrs.size), name="rc")
        channel = index[axis] - before + offset
        source = list(index)
        source[axis] = channel
        value = data(*source).astype(acc)
        inside = tirx.all(channel >= 0, channel < channels)
        return te.sum(tirx.if_then_else(inside, value * value, tirx.const(0, acc)), axis=offset)

    squares = te.compute(data.shape, window_sum, name="T_lrn_sum")

    def element(*index):
        base = te.const(attrs.bias, acc) + te.const(attrs.alpha / attrs.size, acc) * squares(*index)
        return (data(*index).astype(acc) / te.power(base, te.const(attrs.beta, acc))).astype(dtype)

    return te.compute(data.shape, element, name="T_lrn", tag="injective")


register(
    NNOpDef(
        "nn.lrn",
        1,
        _lrn_rel,
        OpPattern.OPAQUE,
        _lrn_impl,
        te_impl=_lrn_te,
        attrs=(
            AttrField("size", 5, to_int, "channels in the window"),
            AttrField("axis", 1, to_int, "the channel axis"),
            AttrField("bias", 2.0, to_float),
            AttrField("alpha", 0.0001, to_float),
            AttrField("beta", 0.75, to_float),
        ),
        # relay.nn.lrn(data, size=5, axis=1, bias=2, alpha=0.00001, beta=0.75)
        extras={"builder_params": ("size", "axis", "bias", "alpha", "beta"), "builder_defaults": {"alpha": 0.00001}},
        description="Local response normalization over a window of channels.",
    )
)
