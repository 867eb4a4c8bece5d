"""Converters of shape operators: Shape, Size, Reshape, Flatten, (Un)Squeeze, Transpose, Expand, Tile, Concat, Split."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .shape_values import (
    DimOf,
    int_list_input,
    needs_constant,
    normalize_axes,
    normalize_axis,
    shape_entries,
    shape_source,
)


def _is_any(dim) -> bool:
    return isinstance(dim, AnyDim)


@converter("Shape")
def shape(ctx):
    b = ctx.b
    x = ctx.input(0)
    rank = b.ndim_of(x)
    result = b.call("shape_of", x, dtype="int64")
    start, end = ctx.attr("start", 0), ctx.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    if (start, end) == (0, rank):
        return result
    if end <= start:
        return b.const(np.zeros((0,), dtype="int64"))
    return b.call("strided_slice", result, begin=[start], end=[end], strides=[1])


@converter("Size")
def size(ctx):
    count = ctx.b.call("ndarray_size", ctx.input(0), dtype="int64")
    return ctx.b.call("reshape", count, newshape=()) if ctx.b.ndim_of(count) else count


# ---------------------------------------------------------------- reshape, flatten


def reshape_codes(ctx, x, entries, allowzero: bool) -> list[int]:
    """Relay `newshape` codes for an ONNX target shape whose entries may be known only at run time."""
    codes, unknown = [], []
    for position, entry in enumerate(entries):
        if isinstance(entry, int):
            codes.append(entry)
        elif isinstance(entry, DimOf) and entry.is_dim(x, position) and not allowzero:
            codes.append(0)  # copies the input's dimension at the same position, unknown or not
        else:
            unknown.append(position)
            codes.append(-1)
    if len(unknown) > 1 or (unknown and codes.count(-1) > 1):
        raise needs_constant(ctx, f"the target shape (with {codes.count(-1)} dimensions computed at run time)")
    return codes


@converter("Reshape")
def reshape(ctx):
    b = ctx.b
    x = ctx.input(0)
    if ctx.opset < 5:
        entries = list(ctx.attr("shape", []))
    else:
        entries = shape_entries(b, ctx.input(1))
        if entries is None:
            raise needs_constant(ctx, "the target shape")
    allowzero = bool(ctx.attr("allowzero", 0))
    codes = reshape_codes(ctx, x, entries, allowzero)
    return b.call("reshape", x, newshape=codes, allowzero=allowzero)


@converter("Flatten")
def flatten(ctx):
    b = ctx.b
    x = ctx.input(0)
    dims = b.shape_of(x)
    axis = ctx.attr("axis", 1)
    axis = axis + len(dims) if axis < 0 else axis
    if not 0 <= axis <= len(dims):
        raise b.error(f"axis {ctx.attr('axis', 1)} is out of range for a rank-{len(dims)} tensor")
    outer, inner = dims[:axis], dims[axis:]

    def product(group):
        return int(np.prod(group, dtype=np.int64)) if not any(_is_any(d) for d in group) else None

    left, right = product(outer), product(inner)
    if left is None and right is None:
        if axis != 1:
            b.static_shape(x, "an input with unknown dimensions on both sides of the flattening axis")
        codes = [0, -1]
    else:
        codes = [-1 if left is None else left, -1 if right is None else right]
    return b.call("reshape", x, newshape=codes)


# ---------------------------------------------------------------- squeeze, unsqueeze, transpose


def _axes_attr_or_input(ctx, since: int):
    return int_list_input(ctx, 1, "axes") if ctx.opset >= since else ctx.attr("axes")


@converter("Squeeze")
def squeeze(ctx):
    b = ctx.b
    x = ctx.input(0)
    dims = b.shape_of(x)
    axes = _axes_attr_or_input(ctx, 13)
    if not axes:
        b.static_shape(x, "an input squeezed without axes")
        axes = [i for i, d in enumerate(dims) if d == 1]
    axes = normalize_axes(ctx, axes, len(dims))
    for a in axes:
        if not _is_any(dims[a]) and dims[a] != 1:
            raise b.error(f"cannot squeeze axis {a} of size {dims[a]}")
    return b.call("squeeze", x, axis=sorted(axes)) if axes else x


@converter("Unsqueeze")
def unsqueeze(ctx):
    b = ctx.b
    x = ctx.input(0)
    axes = _axes_attr_or_input(ctx, 13)
    if axes is None:
        raise b.error("axes are required")
    axes = sorted(normalize_axes(ctx, axes, b.ndim_of(x) + len(axes)))
    # Inserting in increasing order puts every new axis at its final position.
    for a in axes:
        x = b.call("expand_dims", x, axis=a, num_newaxis=1)
    return x


@converter("Transpose")
def transpose(ctx):
    b = ctx.b
    x = ctx.input(0)
    rank = b.ndim_of(x)
    perm = ctx.attr("perm") or list(reversed(range(rank)))
    if sorted(normalize_axes(ctx, perm, rank, "perm")) != list(range(rank)):
        raise b.error(f"perm {perm} is not a permutation of the {rank} axes")
    return b.call("transpose", x, axes=[normalize_axis(ctx, p, rank) for p in perm])


# ---------------------------------------------------------------- expand, tile, concat, split


@converter("Expand")
def expand(ctx):
    b = ctx.b
    x = ctx.input(0)
    entries = shape_entries(b, ctx.input(1))
    if entries is None:
        raise needs_constant(ctx, "the target shape")
    dims = b.shape_of(x)
    like = shape_source(b, entries)
    if like is not None and any(not isinstance(e, int) for e in entries):
        return _expand_like(b, x, like)
    rank = max(len(dims), len(entries))
    padded_dims = [1] * (rank - len(dims)) + dims
    padded_entries = [1] * (rank - len(entries)) + entries
    offset = rank - len(dims)
    out = []
    for position, (dim, entry) in enumerate(zip(padded_dims, padded_entries)):
        if isinstance(entry, int):
            if entry == 1 or entry == dim:
                out.append(dim)
            elif _is_any(dim) or dim == 1:
                out.append(entry)
            else:
                raise b.error(f"cannot expand a dimension of size {dim} to {entry}")
        elif not _is_any(dim) and dim != 1:
            out.append(dim)  # the run-time entry must be 1 or this size
        elif isinstance(entry, DimOf) and entry.is_dim(x, position - offset):
            out.append(dim)
        else:
            raise needs_constant(ctx, f"dimension {position} of the expanded shape")
    if out == padded_dims and len(dims) == rank:
        return x
    if not any(_is_any(d) for d in out):
        return b.call("broadcast_to", x, shape=out)
    # Every unknown output dimension is the input's own: broadcast against the static part only.
    static = [1 if _is_any(d) else d for d in out]
    mask = b.const(np.ones(static, dtype=bool))
    return b.call("where", mask, x, x)


def _expand_like(b, x, like):
    """Expand(x, Shape(like)) when that shape is known only at run time."""
    dims, like_dims = b.shape_of(x), b.shape_of(like)
    one_way = len(dims) <= len(like_dims) and all(
        d == 1 or (not _is_any(d) and d == e) for d, e in zip(reversed(dims), reversed(like_dims))
    )
    if one_way and b.dtype_of(x) == b.dtype_of(like):
        return b.call("broadcast_to_like", x, like)
    # Broadcasting against a mask shaped like `like` picks x everywhere, in any dtype, both ways.
    return b.call("where", b.call("cast", like, dtype="bool"), x, x)


@converter("Tile")
def tile(ctx):
    b = ctx.b
    x = ctx.input(0)
    if ctx.opset < 6:
        raise ctx.unsupported("Tile before opset 6 (tiles/axis inputs)")
    repeats = int_list_input(ctx, 1, "repeats")
    if repeats is None or len(repeats) != b.ndim_of(x):
        raise b.error(f"repeats must hold one value per axis of the rank-{b.ndim_of(x)} input, got {repeats}")
    return b.call("tile", x, reps=repeats)


@converter("Concat")
def concat(ctx):
    b = ctx.b
    operands = [v for v in ctx.inputs if v is not None]
    if not operands:
        raise b.error("Concat needs at least one input")
    axis = normalize_axis(ctx, ctx.attr("axis", 1), b.ndim_of(operands[0]))
    if len(operands) == 1:
        return operands[0]
    return b.call("concatenate", b.tuple(operands), axis=axis)


def split_sizes(ctx, dim, count: int) -> list[int] | None:
    """The part sizes of Split along an axis of size `dim`; None for equal parts of an unknown axis."""
    if ctx.opset >= 13 or (ctx.opset < 2 and ctx.has_input(1)):
        sizes = int_list_input(ctx, 1, "split")
    else:
        sizes = ctx.attr("split")
    if sizes:
        if not _is_any(dim) and sum(sizes) != dim:
            raise ctx.b.error(f"split sizes {list(sizes)} do not add up to the axis size {dim}")
        return list(sizes)
    parts = ctx.attr("num_outputs", count) if ctx.opset >= 18 else count
    if _is_any(dim):
        return None
    if ctx.opset >= 18 and ctx.has_attr("num_outputs"):
        chunk = -(-dim // parts)  # the last part is smaller when the axis does not divide evenly
        return [min(chunk, max(dim - chunk * i, 0)) for i in range(parts)]
    if dim % parts:
        raise ctx.b.error(f"an axis of size {dim} does not split into {parts} equal parts")
    return [dim // parts] * parts


@converter("Split")
def split(ctx):
    b = ctx.b
    x = ctx.input(0)
    dims = b.shape_of(x)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(dims))
    count = ctx.num_outputs
    sizes = split_sizes(ctx, dims[axis], count)
    if sizes is None:
        parts = b.call("split", x, indices_or_sections=count, axis=axis)
        return [b.get(parts, i) for i in range(count)]
    if len(sizes) != count:
        raise b.error(f"{len(sizes)} split sizes for {count} outputs")
    if count == 1:
        return [x]
    if 0 in sizes:  # relay.split takes strictly increasing boundaries: slice each part instead
        starts = np.concatenate([[0], np.cumsum(sizes[:-1])]).tolist()
        return [
            b.call("strided_slice", x, begin=[start], end=[start + size], strides=[1], axes=[axis])
            for start, size in zip(starts, sizes)
        ]
    boundaries = list(np.cumsum(sizes[:-1]).tolist())
    parts = b.call("split", x, indices_or_sections=boundaries, axis=axis)
    return [b.get(parts, i) for i in range(count)]
