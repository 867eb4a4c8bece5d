"""Gradients of the pools: global pools by broadcasting, windowed pools as depthwise transposed convolutions.

Without dedicated `*_pool_grad` operators, a windowed pool's gradient is the adjoint of "gather
each window": a transposed convolution with `groups = channels` whose kernel routes each output
position's gradient back to the window taps. Average pools divide by the op's own window counts;
max pools send the gradient to the first tap (in window order) that holds the maximum, as TVM's
max_pool2d_grad and PyTorch do.
"""

from __future__ import annotations

import functools

import numpy as np

from ...expr import Constant, Tuple
from ..families.nn._common import lowest_value, padding_nd, spatial_pair
from ..registry import RelationError
from . import register_gradient
from ._support import GradientError, op, scalar, static_shape, tensor_type
from .nn import transpose_padding

_POOL_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _spatial_axes(orig, op_name: str) -> list[int]:
    layout = orig.attrs.layout
    ndim = len(tensor_type(orig.args[0]).shape)
    if len(layout) != ndim or not layout.isupper() or "H" not in layout or "W" not in layout:
        raise GradientError(f"the gradient of {op_name} needs a plain layout with H and W, got {layout!r}")
    return [layout.index("H"), layout.index("W")]


@register_gradient("nn.global_avg_pool2d")
def _global_avg_pool2d(orig, grad):
    x = orig.args[0]
    shape = static_shape(x, "nn.global_avg_pool2d")
    area = int(np.prod([shape[a] for a in _spatial_axes(orig, "nn.global_avg_pool2d")]))
    return [op("broadcast_to_like", grad * scalar(1.0 / area, tensor_type(x).dtype), x)]


@register_gradient("nn.global_max_pool2d")
def _global_max_pool2d(orig, grad):
    x = orig.args[0]
    axes = _spatial_axes(orig, "nn.global_max_pool2d")
    hits = op("cast_like", op("equal", x, orig), x)
    return [hits * grad / op("sum", hits, axis=axes, keepdims=True)]


def _pool_geometry(orig, op_name: str, nd: int):
    attrs = orig.attrs
    layout = _POOL_LAYOUTS[nd]
    if attrs.layout != layout or attrs.out_layout not in ("", layout):
        raise GradientError(
            f"the gradient of {op_name} is defined for layout {layout}, got layout={attrs.layout!r}, out_layout={attrs.out_layout!r}"
        )
    try:
        pool = spatial_pair(attrs.pool_size, op_name, "pool_size", nd)
        strides = spatial_pair(attrs.strides, op_name, "strides", nd)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd)
        pads = padding_nd(attrs.padding, nd, op_name)
    except RelationError as exc:
        raise GradientError(str(exc)) from None
    data_shape = static_shape(orig.args[0], op_name, "data")
    out_shape = static_shape(orig, op_name, "result")
    return data_shape, out_shape, pool, strides, dilation, pads


def _scatter_windows(grad_per_tap, data_shape, out_shape, pool, strides, dilation, pads, kernel, dtype):
    """The transposed depthwise convolution adding each window tap's gradient into the data's shape."""
    nd = len(pool)
    fitted = [
        transpose_padding(data_shape[2 + i], out_shape[2 + i], pool[i], strides[i], dilation[i], pads[i])
        for i in range(nd)
    ]
    return op(
        f"nn.conv{nd}d_transpose",
        grad_per_tap,
        Constant(kernel.astype(dtype)),
        channels=data_shape[1],
        kernel_size=pool,
        strides=strides,
        padding=list(pads[:nd]) + [after for after, _ in fitted],
        output_padding=[extra for _, extra in fitted],
        dilation=dilation,
        groups=data_shape[1],
    )


def window_counts(size, pool, stride, dilation, before, after, out, include_pad) -> np.ndarray:
    """Per output position on one axis, the taps an average divides by: those on data (and padding, if counted)."""
    taps = (np.arange(out) * stride - before)[:, None] + np.arange(pool)[None, :] * dilation
    low, high = (-before, size + after) if include_pad else (0, size)
    return np.sum((taps >= low) & (taps < high), axis=1)


def _avg_pool_grad(nd: int):
    op_name = f"nn.avg_pool{nd}d"

    def rule(orig, grad):
        data_shape, out_shape, pool, strides, dilation, pads = _pool_geometry(orig, op_name, nd)
        dtype = tensor_type(orig).dtype
        per_axis = [
            window_counts(
                data_shape[2 + i],
                pool[i],
                strides[i],
                dilation[i],
                pads[i],
                pads[i + nd],
                out_shape[2 + i],
                orig.attrs.count_include_pad,
            )
            for i in range(nd)
        ]
        counts = np.maximum(functools.reduce(np.multiply.outer, per_axis), 1)
        scaled = grad / Constant(counts.astype(dtype))
        kernel = np.ones((data_shape[1], 1, *pool))
        return [_scatter_windows(scaled, data_shape, out_shape, pool, strides, dilation, pads, kernel, dtype)]

    return rule


def _max_pool_grad(nd: int):
    op_name = f"nn.max_pool{nd}d"

    def rule(orig, grad):
        x = orig.args[0]
        data_shape, out_shape, pool, strides, dilation, pads = _pool_geometry(orig, op_name, nd)
        dtype = tensor_type(orig).dtype
        # Pad as the forward pool does (ceil_mode windows may run past the explicit padding).
        reach = [(out_shape[2 + i] - 1) * strides[i] + (pool[i] - 1) * dilation[i] + 1 for i in range(nd)]
        after = [max(pads[i + nd], reach[i] - data_shape[2 + i] - pads[i]) for i in range(nd)]
        padded = op(
            "nn.pad",
            x,
            scalar(lowest_value(dtype), dtype),
            pad_width=[[0, 0], [0, 0]] + [[pads[i], after[i]] for i in range(nd)],
        )
        taps = list(np.ndindex(*pool))
        taken, per_tap = None, []
        for offsets in taps:
            start = [o * d for o, d in zip(offsets, dilation)]
            window = op(
                "strided_slice",
                padded,
                begin=[0, 0] + start,
                end=list(data_shape[:2]) + [s + st * (n - 1) + 1 for s, st, n in zip(start, strides, out_shape[2:])],
                strides=[1, 1] + list(strides),
            )
            hit = op("equal", window, orig)
            first = hit if taken is None else op("logical_and", hit, op("logical_not", taken))
            taken = hit if taken is None else op("logical_or", taken, hit)
            per_tap.append(op("where", first, grad, scalar(0, dtype)))
        # (N, C, taps, out...) -> (N, C * taps, out...): channel c's taps form group c.
        stacked = op(
            "reshape",
            op("stack", Tuple(per_tap), axis=2),
            newshape=[data_shape[0], data_shape[1] * len(taps), *out_shape[2:]],
        )
        kernel = np.zeros((data_shape[1], len(taps), 1, *pool))
        for t, offsets in enumerate(taps):
            kernel[(slice(None), t, 0) + offsets] = 1
        kernel = kernel.reshape(data_shape[1] * len(taps), 1, *pool)
        return [_scatter_windows(stacked, data_shape, out_shape, pool, strides, dilation, pads, kernel, dtype)]

    return rule


for _nd in (1, 2, 3):
    register_gradient(f"nn.avg_pool{_nd}d", _avg_pool_grad(_nd))
    register_gradient(f"nn.max_pool{_nd}d", _max_pool_grad(_nd))
