"""Converters of ATen indexing: advanced indexing (`index.Tensor`), gather, index_select, masked_fill, embedding.

`x[i0, :, i2]` with index tensors becomes one `take` on a flattened view: the indexed dimensions
are moved to the front and merged, the index tensors (broadcast together) are combined into one
flat index, and the broadcast dimensions are moved to where PyTorch puts them (in place of the
indexed dimensions when those are adjacent, at the front otherwise). Index tensors known at
import fold into a constant flat index.
"""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .support import cast, normalize_axis, operand, scalar


def _index_list(ctx, x, indices):
    """(dimension, int64 index tensor) pairs; boolean masks known at import become their nonzero positions."""
    b = ctx.b
    pairs, dim = [], 0
    for index in indices:
        if index is None:
            dim += 1
            continue
        if b.dtype_of(index) in ("bool", "uint8"):
            mask = b.value_of(index)
            if mask is None:
                raise ctx.unsupported("a boolean mask index (its result shape depends on the data)")
            for positions in np.nonzero(mask):
                pairs.append((dim, b.const(positions.astype("int64"))))
                dim += 1
            continue
        pairs.append((dim, cast(b, index, "int64")))
        dim += 1
    if dim > b.ndim_of(x):
        raise b.error(f"too many indices ({dim}) for a {b.ndim_of(x)}-d tensor")
    return pairs


def _wrapped(ctx, index, size):
    """Negative indices count from the end."""
    b = ctx.b
    data = b.value_of(index)
    if data is not None:
        return b.const(np.where(data < 0, data + size, data).astype("int64"))
    wrapped = b.call("add", index, scalar(b, size, "int64"))
    return b.call("where", b.call("less", index, scalar(b, 0, "int64")), wrapped, index)


@converter("aten.index.Tensor", "aten._unsafe_index.Tensor")
def index(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    shape = b.shape_of(x)
    pairs = _index_list(ctx, x, ctx.arg("indices"))
    if not pairs:
        return x
    dims = [d for d, _ in pairs]
    for d in dims:
        if isinstance(shape[d], AnyDim):
            raise ctx.unsupported("indexing a dynamic dimension")
    sizes = [int(shape[d]) for d in dims]
    index_shapes = [b.static_shape(t, "an index tensor") for _, t in pairs]
    broadcast = list(np.broadcast_shapes(*[tuple(s) for s in index_shapes]))
    rest = [d for d in range(len(shape)) if d not in dims]

    # The indexed dimensions to the front, merged into one.
    if dims + rest != list(range(len(shape))):
        x = b.call("transpose", x, axes=dims + rest)
    flat_index = None
    stride = 1
    for (d, t), size in reversed(list(zip(pairs, sizes))):
        term = _wrapped(ctx, t, size)
        if stride != 1:
            term = b.call("multiply", term, scalar(b, stride, "int64"))
        flat_index = term if flat_index is None else b.call("add", term, flat_index)
        stride *= size
    if len(pairs) > 1:
        rest_shape = [shape[d] for d in rest]
        if sum(isinstance(n, AnyDim) for n in rest_shape) > 1:
            raise ctx.unsupported("several dynamic dimensions beside the indexed ones")
        x = b.call("reshape", x, newshape=[stride] + [-1 if isinstance(n, AnyDim) else int(n) for n in rest_shape])
    if b.shape_of(flat_index) != broadcast:
        flat_index = b.call("broadcast_to", flat_index, shape=broadcast)
    y = b.call("take", x, flat_index, axis=0)

    # PyTorch keeps adjacent indexed dimensions in place; separated ones go to the front.
    first = dims[0]
    if dims == list(range(first, first + len(dims))) and first > 0:
        nb, nr = len(broadcast), len(rest)
        y = b.call(
            "transpose", y, axes=list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, nb + nr))
        )
    return y


@converter("aten.gather.default")
def gather(ctx):
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), ctx.b.ndim_of(x))
    return ctx.b.call("gather", x, cast(ctx.b, ctx.tensor("index"), "int64"), axis=axis)


@converter("aten.index_select.default")
def index_select(ctx):
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), ctx.b.ndim_of(x))
    return ctx.b.call("take", x, ctx.tensor("index"), axis=axis)


@converter("aten.embedding.default")
def embedding(ctx):
    return ctx.b.call("take", ctx.tensor("weight"), ctx.tensor("indices"), axis=0)


@converter("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def masked_fill(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    value = operand(b, ctx.arg("value"), b.dtype_of(x))
    return b.call("where", cast(b, ctx.tensor("mask"), "bool"), value, x)
