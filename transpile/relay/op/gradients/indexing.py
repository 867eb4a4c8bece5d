"""Gradients of the indexing operators (take, strided_slice, gather, gather_nd, nn.pad): scatter-adds into zeros."""

from __future__ import annotations

import numpy as np

from ...expr import Constant
from ..families.transform_index import strided_slice_plan
from ..registry import RelationError
from . import register_gradient
from ._support import GradientError, inverse_permutation, op, scalar, static_shape, tensor_type, zero_like


def scatter_along_axis(grad, target_shape, axis: int, indices, indices_ndim: int, dtype: str):
    """The adjoint of `take(x, indices, axis)` for x of `target_shape`: grad's slices added at their indices.

    grad has shape target[:axis] + indices.shape + target[axis+1:]; repeated indices accumulate.
    Built as one scatter_nd(mode="add") on the target with `axis` moved to the front.
    """
    rank = len(target_shape)
    to_front = [axis] + [a for a in range(rank) if a != axis]
    index_axes = list(range(axis, axis + indices_ndim))
    others = [a for a in range(rank - 1 + indices_ndim) if a not in index_axes]
    updates = (
        grad if index_axes + others == sorted(index_axes + others) else op("transpose", grad, axes=index_axes + others)
    )
    zeros = op("zeros", shape=[target_shape[a] for a in to_front], dtype=dtype)
    scattered = op("scatter_nd", zeros, op("expand_dims", indices, axis=0), updates, mode="add")
    if to_front == sorted(to_front):
        return scattered
    return op("transpose", scattered, axes=inverse_permutation(to_front))


def _take_indices(indices, extent: int, mode: str):
    """Indices as take reads them, for scatter_nd (which wraps negatives and drops what is out of range)."""
    if isinstance(indices, Constant):
        data = indices.data.astype(np.int64)
        data = np.mod(data, extent) if mode == "wrap" else np.clip(data, 0, max(extent - 1, 0))
        return Constant(data)
    if mode == "wrap":
        return op("floor_mod", indices, scalar(extent, tensor_type(indices, "indices").dtype))
    return op("clip", indices, a_min=0, a_max=max(extent - 1, 0))


@register_gradient("take")
def _take(orig, grad):
    data, indices = orig.args
    if orig.attrs.batch_dims:
        raise GradientError(f"the gradient of take is not defined here for batch_dims={orig.attrs.batch_dims}")
    shape = static_shape(data, "take")
    dtype = tensor_type(data).dtype
    indices_ndim = len(tensor_type(indices, "indices").shape)
    if orig.attrs.axis is None:
        flat = (int(np.prod(shape, dtype=np.int64)),)
        index = _take_indices(indices, flat[0], orig.attrs.mode)
        scattered = scatter_along_axis(grad, flat, 0, index, indices_ndim, dtype)
        return [op("reshape_like", scattered, data), None]
    axis = orig.attrs.axis + len(shape) if orig.attrs.axis < 0 else orig.attrs.axis
    index = _take_indices(indices, shape[axis], orig.attrs.mode)
    return [scatter_along_axis(grad, shape, axis, index, indices_ndim, dtype), None]


@register_gradient("strided_slice")
def _strided_slice(orig, grad):
    data = orig.args[0]
    shape = static_shape(data, "strided_slice")
    dtype = tensor_type(data).dtype
    try:
        plan, out_shape = strided_slice_plan(shape, orig.attrs)
    except RelationError as exc:
        raise GradientError(f"the gradient of strided_slice: {exc}") from None
    # Unit-stride ranges are a zero padding of the gradient; the others scatter, one axis at a time.
    pad_width = [[0, 0] for _ in shape]
    current = list(out_shape)
    for axis, begin, end, stride in plan:
        if stride == 1:
            pad_width[axis] = [begin, shape[axis] - end]
            continue
        picked = np.arange(begin, end, stride, dtype=np.int64)
        current[axis] = shape[axis]
        grad = scatter_along_axis(grad, current, axis, Constant(picked), 1, dtype)
    if any(before or after for before, after in pad_width):
        grad = op("nn.pad", grad, scalar(0, dtype), pad_width=pad_width)
    return [grad]


@register_gradient("gather")
def _gather(orig, grad):
    data, indices = orig.args
    return [op("scatter_elements", zero_like(data), indices, grad, axis=orig.attrs.axis, reduction="add"), None]


@register_gradient("gather_nd")
def _gather_nd(orig, grad):
    data, indices = orig.args
    if orig.attrs.batch_dims:
        raise GradientError(f"the gradient of gather_nd is not defined here for batch_dims={orig.attrs.batch_dims}")
    return [op("scatter_nd", zero_like(data), indices, grad, mode="add"), None]


@register_gradient("nn.pad")
def _pad(orig, grad):
    data, pad_value = orig.args
    if orig.attrs.pad_mode != "constant":
        raise GradientError(
            f"the gradient of nn.pad is only defined for pad_mode='constant', got {orig.attrs.pad_mode!r}"
        )
    shape = static_shape(data, "nn.pad")
    widths = [tuple(pair) for pair in orig.attrs.pad_width]
    if any(before < 0 or after < 0 for before, after in widths):
        raise GradientError(f"the gradient of nn.pad needs non-negative pad widths, got {[list(w) for w in widths]}")
    begin = [before for before, _ in widths]
    end = [before + extent for (before, _), extent in zip(widths, shape)]
    inner = op("strided_slice", grad, begin=begin, end=end, strides=[1] * len(shape))
    # Every padded element is pad_value: its gradient is what flows into the border.
    border = op("subtract", op("sum", grad), op("sum", inner))
    return [inner, op("cast_like", border, pad_value)]
