"""Gradients of the reductions (sum, mean, max, min, variance) and the cumulative sum."""

from __future__ import annotations

import numpy as np

from . import register_gradient
from ._support import expand_reduced, op, reduced_axes, scalar, static_shape, tensor_type


@register_gradient("sum")
def _sum(orig, grad):
    x = orig.args[0]
    return [op("broadcast_to_like", expand_reduced(grad, orig), x)]


@register_gradient("mean")
def _mean(orig, grad):
    x = orig.args[0]
    shape = static_shape(x, "mean")
    count = int(np.prod([shape[a] for a in reduced_axes(orig.attrs, len(shape))], dtype=np.int64))
    scaled = expand_reduced(grad, orig) * scalar(1.0 / max(count, 1), tensor_type(orig).dtype)
    return [op("broadcast_to_like", scaled, x)]


def _extremum(orig, grad):
    """max/min: the gradient is shared evenly by the elements equal to the extremum (TVM's rule)."""
    x = orig.args[0]
    axes = reduced_axes(orig.attrs, len(tensor_type(x).shape))
    hits = op("cast_like", op("equal", x, expand_reduced(orig, orig)), x)
    count = op("sum", hits, axis=axes, keepdims=True)
    return [hits * expand_reduced(grad, orig) / count]


register_gradient("max", _extremum)
register_gradient("min", _extremum)


@register_gradient("variance")
def _variance(orig, grad):
    """variance(x, m) = sum((x - m)^2) / n over the axes, m a separate input (usually mean(x))."""
    x, mean = orig.args
    shape = static_shape(x, "variance")
    count = int(np.prod([shape[a] for a in reduced_axes(orig.attrs, len(shape))], dtype=np.int64))
    if orig.attrs.unbiased:
        count -= 1
    dtype = tensor_type(orig).dtype
    grad_x = expand_reduced(grad, orig) * scalar(2.0 / max(count, 1), dtype) * (x - mean)
    return [op("broadcast_to_like", grad_x, x), op("collapse_sum_like", op("negative", grad_x), mean)]


@register_gradient("cumsum")
def _cumsum(orig, grad):
    # out_i = sum_{j <= i} x_j (j < i when exclusive): dx_j = sum_{i >= j} g_i, a reversed scan.
    x = orig.args[0]
    axis = orig.attrs.axis
    flat = axis is None
    if flat:
        axis = 0
    reversed_grad = op("reverse", grad, axis=axis)
    scan = op("cumsum", reversed_grad, axis=axis, exclusive=orig.attrs.exclusive)
    result = op("reverse", scan, axis=axis)
    if tensor_type(orig).dtype != tensor_type(x).dtype:
        result = op("cast_like", result, x)
    return [op("reshape_like", result, x) if flat else result]
