"""Converters of ONNX indexing operators: Slice, Gather*, Scatter*, Compress, NonZero, TopK."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .shape_values import (
    DimOf,
    int_list_input,
    int_scalar_input,
    needs_constant,
    normalize_axes,
    normalize_axis,
    normalize_indices,
    shape_entries,
)

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min

# ---------------------------------------------------------------- slice


def _slice_bounds(ctx, x, index: int, what: str, sliced_axes=()):
    """Constant starts/ends (entries equal to the sliced axis' own run-time size become 'to the end')."""
    value = ctx.input(index, required=False)
    if value is None:
        return None
    entries = shape_entries(ctx.b, value)
    if entries is None:
        raise needs_constant(ctx, what)
    out = []
    for position, entry in enumerate(entries):
        if isinstance(entry, int):
            out.append(entry)
        elif isinstance(entry, DimOf) and position < len(sliced_axes) and entry.is_dim(x, sliced_axes[position]):
            out.append(_INT64_MAX)
        else:
            raise needs_constant(ctx, what)
    return out


def _clamp_slice(start, end, step, dim):
    """ONNX's clamping of one axis' slice; (start, end, step) for strided_slice and the result length."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        length = max(0, -(-(end - start) // step))
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        length = max(0, -(-(start - end) // -step))
    if length == 0:
        return 0, 0, 1, 0
    # strided_slice counts a negative end from the back: -1 ("before index 0") is spelled -dim-1.
    return start, end if end >= 0 else -dim - 1, step, length


@converter("Slice")
def slice_(ctx):
    b = ctx.b
    x = ctx.input(0)
    dims = b.shape_of(x)
    if ctx.opset < 10:
        starts, ends, axes, steps = ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes"), None
        if starts is None or ends is None:
            raise b.error("attributes starts and ends are required")
    else:
        axes = int_list_input(ctx, 3, "axes")
        steps = int_list_input(ctx, 4, "steps")
        starts = _slice_bounds(ctx, x, 1, "the slice starts")
        sliced = normalize_axes(ctx, axes, len(dims)) if axes is not None else list(range(len(starts)))
        ends = _slice_bounds(ctx, x, 2, "the slice ends", sliced)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise b.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must have the same length")
    axes = normalize_axes(ctx, axes, len(dims))
    begin, end, strides = [], [], []
    for axis, s, e, step in zip(axes, starts, ends, steps):
        if step == 0:
            raise b.error(f"the step of axis {axis} is 0")
        if isinstance(dims[axis], AnyDim):
            s, e = (min(max(v, _INT64_MIN + 1), _INT64_MAX) for v in (s, e))
        else:
            s, e, step, _ = _clamp_slice(s, e, step, int(dims[axis]))
        begin.append(s)
        end.append(e)
        strides.append(step)
    if not axes:
        return x
    return b.call("strided_slice", x, begin=begin, end=end, strides=strides, axes=axes)


# ---------------------------------------------------------------- gather


@converter("Gather")
def gather(ctx):
    b = ctx.b
    data, indices = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), b.ndim_of(data))
    indices = normalize_indices(b, indices, data, axis)
    return b.call("take", data, indices, axis=axis)


@converter("GatherElements")
def gather_elements(ctx):
    b = ctx.b
    data, indices = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), b.ndim_of(data))
    return b.call("gather", data, normalize_indices(b, indices, data, axis), axis=axis)


def _index_tuples_first(ctx, data, indices, batch_dims: int):
    """ONNX's (..., K) index tuples as Relay's (K, ...), each component made non-negative."""
    b = ctx.b
    depth = b.shape_of(indices)[-1]
    if isinstance(depth, AnyDim):
        raise b.error("the last dimension of indices (the index depth) must be known at import")
    rank, dtype = b.ndim_of(indices), b.dtype_of(indices)
    indices = b.call("transpose", indices, axes=[rank - 1] + list(range(rank - 1)))
    if np.dtype(dtype).kind == "u":
        return indices
    # The sizes of the indexed axes, one per tuple component (constants when they are static).
    extent = b.call("shape_of", data, dtype=dtype)
    extent = b.call("strided_slice", extent, begin=[batch_dims], end=[batch_dims + int(depth)], strides=[1])
    extent = b.call("reshape", extent, newshape=[int(depth)] + [1] * (rank - 1))
    zero = b.const(np.array(0, dtype=dtype))
    return b.call("where", b.call("less", indices, zero), b.call("add", indices, extent), indices)


@converter("GatherND")
def gather_nd(ctx):
    b = ctx.b
    data, indices = ctx.input(0), ctx.input(1)
    batch_dims = int(ctx.attr("batch_dims", 0))
    depth = b.shape_of(indices)[-1]
    indices = _index_tuples_first(ctx, data, indices, batch_dims)
    return b.call("gather_nd", data, indices, batch_dims=batch_dims, index_rank=int(depth))


# ---------------------------------------------------------------- scatter

_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _reduction(ctx):
    reduction = ctx.attr("reduction", "none")
    if reduction not in _REDUCTIONS:
        raise ctx.b.error(f"unknown reduction {reduction!r}")
    return _REDUCTIONS[reduction]


@converter("ScatterElements", "Scatter")
def scatter_elements(ctx):
    b = ctx.b
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), b.ndim_of(data))
    indices = normalize_indices(b, indices, data, axis)
    return b.call("scatter_elements", data, indices, updates, axis=axis, reduction=_reduction(ctx))


@converter("ScatterND")
def scatter_nd(ctx):
    b = ctx.b
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    indices = _index_tuples_first(ctx, data, indices, 0)
    return b.call("scatter_nd", data, indices, updates, mode=_reduction(ctx))


# ---------------------------------------------------------------- data-dependent selections


def _nonzero_positions(b, tensor):
    """(ndim, count) int64 positions of the nonzero elements; count is known only at run time."""
    if b.dtype_of(tensor) != "bool":
        tensor = b.call("not_equal", tensor, b.const(np.array(0, dtype=b.dtype_of(tensor))))
    positions = b.call("argwhere", tensor)
    return b.call("transpose", b.call("cast", positions, dtype="int64"), axes=[1, 0])


@converter("Compress")
def compress(ctx):
    b = ctx.b
    x, condition = ctx.input(0), ctx.input(1)
    if not ctx.has_attr("axis"):
        x = b.call("reshape", x, newshape=[-1])
        axis = 0
    else:
        axis = normalize_axis(ctx, ctx.attr("axis"), b.ndim_of(x))
    mask = b.value_of(condition)
    if mask is not None:
        kept = b.const(np.nonzero(np.asarray(mask).reshape(-1))[0].astype("int64"))
    else:  # the output length is known only at run time
        kept = b.call("reshape", _nonzero_positions(b, b.call("reshape", condition, newshape=[-1])), newshape=[-1])
    return b.call("take", x, kept, axis=axis)


@converter("NonZero")
def non_zero(ctx):
    b = ctx.b
    x = ctx.input(0)
    value = b.value_of(x)
    if value is None:
        if b.ndim_of(x) == 0:
            x = b.call("reshape", x, newshape=[1])
        return _nonzero_positions(b, x)
    value = np.asarray(value)
    return b.const(np.array(np.nonzero(value.reshape(value.shape or (1,))), dtype="int64"))


@converter("TopK")
def top_k(ctx):
    b = ctx.b
    x = ctx.input(0)
    k = ctx.attr("k") if ctx.opset < 10 else int_scalar_input(ctx, 1, "k")
    if k is None:
        raise b.error("k is required")
    k = int(k)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), b.ndim_of(x))
    dim = b.shape_of(x)[axis]
    if k < 0 or (not isinstance(dim, AnyDim) and k > dim):
        raise b.error(f"k={k} is out of range for axis {axis} of size {dim}")
    if k == 0:  # relay.topk reads k < 1 as "every element"
        shape = b.static_shape(x, "the input of a TopK with k=0")
        shape[axis] = 0
        return [b.const(np.zeros(shape, dtype=b.dtype_of(x))), b.const(np.zeros(shape, dtype="int64"))]
    # sorted=0 leaves the order unspecified: the sorted order is one of the allowed ones.
    result = b.call("topk", x, k=k, axis=axis, ret_type="both", is_ascend=not ctx.attr("largest", 1), dtype="int64")
    return [b.get(result, 0), b.get(result, 1)]
