"""Index-driven operators: gather_nd, scatter_elements, scatter_nd, adv_index, unravel_index.

Indices follow numpy and ONNX: a negative index counts from the end of its axis. Indices that
stay out of range after that are not an error a kernel could report: gathers clamp them into
the axis (as `take` does in its default mode) and scatters drop their update, so that every
backend computes the same thing and no kernel reads or writes outside its buffers.
"""

from __future__ import annotations

import numpy as np

from ...ty import TensorType
from ..common import broadcast_shapes, dim_eq, expect_tuple_of_tensors, fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, register
from .scatter_gather_te import te_adv_index, te_gather_nd, te_scatter_elements, te_scatter_nd, te_unravel_index
from .support import as_out, is_any, is_bool, is_integral, tensor_args, to_int

__all__ = ["wrap_indices", "clamp_indices", "SCATTER_ELEMENTS_REDUCTIONS", "SCATTER_ND_MODES"]

SCATTER_ELEMENTS_REDUCTIONS = ("update", "add", "mul", "mean", "min", "max")
SCATTER_ND_MODES = ("update", "add", "mul", "min", "max")


def wrap_indices(indices, extent) -> np.ndarray:
    """Negative indices count from the end of an axis of length `extent`."""
    indices = np.asarray(indices).astype(np.int64)
    return np.where(indices < 0, indices + extent, indices)


def clamp_indices(indices, extent) -> np.ndarray:
    """Indices wrapped, then clamped into [0, extent - 1] (what the gathers read)."""
    return np.clip(wrap_indices(indices, extent), 0, max(int(extent) - 1, 0))


def _integer_indices(indices: TensorType, op_name: str, what: str = "indices") -> None:
    if not is_integral(indices.dtype):
        raise RelationError(f"{op_name}: {what} must be a tensor of integers, got {fmt_type(indices)}")


def _index_count(indices: TensorType, index_rank, op_name: str) -> int:
    """M, the length of each index tuple: the first axis of indices (index_rank when it is `?`)."""
    if indices.ndim == 0:
        raise RelationError(
            f"{op_name}: indices must have rank 1 or more (index tuples on axis 0), got {fmt_type(indices)}"
        )
    first = indices.shape[0]
    if not is_any(first):
        if index_rank is not None and index_rank != first:
            raise RelationError(f"{op_name}: index_rank={index_rank} disagrees with indices {fmt_type(indices)}")
        return int(first)
    if index_rank is None:
        raise RelationError(
            f"{op_name}: needs a static first axis of indices (the index tuple length) or index_rank, got "
            f"{fmt_type(indices)}"
        )
    return int(index_rank)


# ---------------------------------------------------------------- gather_nd


def _gather_nd_rel(arg_types, attrs):
    data, indices = tensor_args(arg_types, 2, "gather_nd", ["data", "indices"])
    _integer_indices(indices, "gather_nd")
    m = _index_count(indices, attrs.index_rank, "gather_nd")
    batch = attrs.batch_dims
    if batch < 0 or batch > indices.ndim - 1:
        raise RelationError(f"gather_nd: batch_dims={batch} is out of range for indices {fmt_type(indices)}")
    if m + batch > data.ndim:
        raise RelationError(
            f"gather_nd: index tuples of length {m} after {batch} batch dimension(s) exceed the rank of "
            f"{fmt_type(data)}"
        )
    for i in range(batch):
        if not dim_eq(data.shape[i], indices.shape[i + 1]):
            raise RelationError(
                f"gather_nd: batch dimension {i} differs: data {fmt_type(data)} and indices {fmt_type(indices)}"
            )
    return TensorType(tuple(indices.shape[1:]) + tuple(data.shape[m + batch :]), data.dtype)


def _batch_grids(shape, batch):
    """Open index grids over the first `batch` axes of an index shape (numpy broadcasting)."""
    return [np.arange(shape[b]).reshape([1] * b + [shape[b]] + [1] * (len(shape) - b - 1)) for b in range(batch)]


def _gather_nd_impl(args, attrs, out_type):
    data, indices = (np.asarray(a) for a in args)
    batch = attrs.batch_dims
    tuples = [clamp_indices(indices[m], data.shape[batch + m]) for m in range(indices.shape[0])]
    return as_out(data[tuple(_batch_grids(indices.shape[1:], batch) + tuples)], out_type)


# ---------------------------------------------------------------- scatter_elements


def _scatter_elements_rel(arg_types, attrs):
    data, indices, updates = tensor_args(arg_types, 3, "scatter_elements", ["data", "indices", "updates"])
    _integer_indices(indices, "scatter_elements")
    if attrs.reduction not in SCATTER_ELEMENTS_REDUCTIONS:
        raise RelationError(
            f"scatter_elements: reduction must be one of {', '.join(SCATTER_ELEMENTS_REDUCTIONS)}, "
            f"got {attrs.reduction!r}"
        )
    if updates.dtype != data.dtype:
        raise RelationError(
            f"scatter_elements: updates {fmt_type(updates)} must have the dtype of data {fmt_type(data)}"
        )
    if is_bool(data.dtype) and attrs.reduction == "mean":
        raise RelationError(f"scatter_elements: reduction 'mean' needs numbers, got {fmt_type(data)}")
    if not data.ndim == indices.ndim == updates.ndim:
        raise RelationError(
            f"scatter_elements: data {fmt_type(data)}, indices {fmt_type(indices)} and updates {fmt_type(updates)} "
            "must have the same rank"
        )
    if not -data.ndim <= attrs.axis < data.ndim:
        raise RelationError(f"scatter_elements: axis {attrs.axis} is out of range for {fmt_type(data)}")
    axis = attrs.axis % data.ndim
    for i, (d, k, u) in enumerate(zip(data.shape, indices.shape, updates.shape)):
        # As in torch.scatter: only the first indices.shape elements of updates are used.
        if not (is_any(k) or is_any(u)) and k > u:
            raise RelationError(
                f"scatter_elements: indices {fmt_type(indices)} exceed updates {fmt_type(updates)} on axis {i}"
            )
        if i != axis and not (is_any(k) or is_any(d)) and k > d:
            raise RelationError(
                f"scatter_elements: indices {fmt_type(indices)} exceed data {fmt_type(data)} on axis {i}"
            )
    return TensorType(data.shape, data.dtype)


def _last_wins(positions, values):
    """Of repeated positions keep the last (in order), as sequential assignment does."""
    reversed_positions = positions[::-1]
    unique, first = np.unique(reversed_positions, return_index=True)
    return unique, values[::-1][first]


def _scatter(out_flat, positions, values, reduction):
    """out_flat[positions] <- reduction(out_flat[positions], values), repeats applied in order.

    `out_flat` is 1-D or (rows, slice) with `positions` selecting rows."""
    if reduction == "update":
        where, what = _last_wins(positions, values)
        out_flat[where] = what
    elif reduction == "add":
        np.add.at(out_flat, positions, values)
    elif reduction == "mul":
        np.multiply.at(out_flat, positions, values)
    elif reduction == "min":
        np.minimum.at(out_flat, positions, values)
    elif reduction == "max":
        np.maximum.at(out_flat, positions, values)


def _scatter_elements_impl(args, attrs, out_type):
    """torch.scatter_reduce(include_self=True) for every reduction; 'mean' divides each updated
    element's sum by its number of terms (floor division for integers), like torch."""
    data, indices, updates = (np.asarray(a) for a in args)
    axis = attrs.axis % data.ndim
    out = data.copy()
    if indices.size == 0:
        return as_out(out, out_type)
    values = updates[tuple(slice(0, k) for k in indices.shape)]
    target = wrap_indices(indices, data.shape[axis])
    coords = list(np.indices(indices.shape))
    coords[axis] = target
    valid = (target >= 0) & (target < data.shape[axis])
    positions = np.ravel_multi_index([c[valid] for c in coords], data.shape)
    values = values[valid]
    flat = out.reshape(-1)
    with np.errstate(all="ignore"):
        if attrs.reduction != "mean":
            _scatter(flat, positions, values, attrs.reduction)
            return as_out(out, out_type)
        np.add.at(flat, positions, values)
        counts = np.ones(flat.shape, dtype=np.int64)
        np.add.at(counts, positions, 1)
        if np.issubdtype(flat.dtype, np.integer):
            mean = np.floor_divide(flat.astype(np.int64), counts)
        else:
            mean = flat / counts.astype(flat.dtype)
    return as_out(mean.reshape(data.shape), out_type)


# ---------------------------------------------------------------- scatter_nd


def _scatter_nd_rel(arg_types, attrs):
    data, indices, updates = tensor_args(arg_types, 3, "scatter_nd", ["data", "indices", "updates"])
    _integer_indices(indices, "scatter_nd")
    if attrs.mode not in SCATTER_ND_MODES:
        raise RelationError(f"scatter_nd: mode must be one of {', '.join(SCATTER_ND_MODES)}, got {attrs.mode!r}")
    if updates.dtype != data.dtype:
        raise RelationError(f"scatter_nd: updates {fmt_type(updates)} must have the dtype of data {fmt_type(data)}")
    m = _index_count(indices, None, "scatter_nd")
    k = indices.ndim - 1
    if m > data.ndim:
        raise RelationError(f"scatter_nd: index tuples of length {m} exceed the rank of data {fmt_type(data)}")
    if updates.ndim != k + data.ndim - m:
        raise RelationError(
            f"scatter_nd: updates {fmt_type(updates)} must have rank {k + data.ndim - m} "
            f"(indices {fmt_type(indices)}, data {fmt_type(data)})"
        )
    # indices (M, Y_0..Y_{K-1}), updates (Y_0..Y_{K-1}, X_M..X_{N-1}), data (X_0..X_{N-1})
    for i in range(k):
        if not dim_eq(indices.shape[i + 1], updates.shape[i]):
            raise RelationError(
                f"scatter_nd: indices {fmt_type(indices)} and updates {fmt_type(updates)} differ on axis {i}"
            )
    for i in range(m, data.ndim):
        if not dim_eq(updates.shape[i - m + k], data.shape[i]):
            raise RelationError(
                f"scatter_nd: updates {fmt_type(updates)} and data {fmt_type(data)} differ on the sliced axis {i}"
            )
    return TensorType(data.shape, data.dtype)


def _scatter_nd_impl(args, attrs, out_type):
    data, indices, updates = (np.asarray(a) for a in args)
    m = indices.shape[0]
    tuples = indices.reshape(m, -1)
    targets = [wrap_indices(tuples[i], data.shape[i]) for i in range(m)]
    valid = np.ones(tuples.shape[1], dtype=bool)
    for i, target in enumerate(targets):
        valid &= (target >= 0) & (target < data.shape[i])
    out = data.copy()
    rows = out.reshape((int(np.prod(data.shape[:m], dtype=np.int64)), -1))
    positions = (
        np.ravel_multi_index([t[valid] for t in targets], data.shape[:m]) if m else np.zeros(int(valid.sum()), np.int64)
    )
    values = updates.reshape((tuples.shape[1], -1))[valid]
    with np.errstate(all="ignore"):
        _scatter(rows, positions, values, attrs.mode)
    return as_out(out, out_type)


# ---------------------------------------------------------------- adv_index


def _adv_index_rel(arg_types, attrs):
    if len(arg_types) != 1:
        raise RelationError(f"adv_index: expected 1 argument (a tuple of data and index tensors), got {len(arg_types)}")
    fields = expect_tuple_of_tensors(arg_types[0], "adv_index")
    if len(fields) < 2:
        raise RelationError(f"adv_index: needs the data and at least one index tensor, got {len(fields)} tensor(s)")
    data, indices = fields[0], fields[1:]
    if len(indices) > data.ndim:
        raise RelationError(f"adv_index: {len(indices)} index tensors are too many for data {fmt_type(data)}")
    shape = indices[0].shape
    for index in indices:
        _integer_indices(index, "adv_index", "every index")
        shape = broadcast_shapes(shape, index.shape, "adv_index")
    return TensorType(tuple(shape) + tuple(data.shape[len(indices) :]), data.dtype)


def _adv_index_impl(args, attrs, out_type):
    data, *indices = (np.asarray(a) for a in args[0])
    return as_out(data[tuple(clamp_indices(k, data.shape[i]) for i, k in enumerate(indices))], out_type)


# ---------------------------------------------------------------- unravel_index


def _unravel_index_rel(arg_types, attrs):
    indices, shape = tensor_args(arg_types, 2, "unravel_index", ["indices", "shape"])
    _integer_indices(indices, "unravel_index")
    _integer_indices(shape, "unravel_index", "shape")
    if shape.ndim != 1 or is_any(shape.shape[0]):
        raise RelationError(f"unravel_index: shape must be a 1-D tensor of static length, got {fmt_type(shape)}")
    if indices.ndim > 1:
        raise RelationError(f"unravel_index: indices must be a scalar or a 1-D tensor, got {fmt_type(indices)}")
    return TensorType((shape.shape[0],) + tuple(indices.shape), indices.dtype)


def _unravel_index_impl(args, attrs, out_type):
    """numpy's unravel_index on valid input; like TVM's kernel, out-of-range indices wrap (floor
    division and modulo) and dimensions below 1 count as 1 instead of raising."""
    indices, shape = (np.asarray(a).astype(np.int64) for a in args)
    dims = np.maximum(shape, 1)
    coords, rest = [], indices
    for dim in dims[::-1]:
        coords.append(np.mod(rest, dim))
        rest = np.floor_divide(rest, dim)
    coords.reverse()
    return as_out(np.stack(coords) if coords else np.zeros((0,) + indices.shape, np.int64), out_type)


# ---------------------------------------------------------------- registration


def _register_all():
    register(
        OpDef(
            "gather_nd",
            2,
            _gather_nd_rel,
            OpPattern.INJECTIVE,
            _gather_nd_impl,
            attrs=(AttrField("batch_dims", 0, to_int), AttrField("index_rank", None, to_int)),
            te_impl=te_gather_nd,
        )
    )
    register(
        OpDef(
            "scatter_elements",
            3,
            _scatter_elements_rel,
            OpPattern.OPAQUE,
            _scatter_elements_impl,
            attrs=(AttrField("axis", 0, to_int), AttrField("reduction", "update", str)),
            te_impl=te_scatter_elements,
        )
    )
    register(
        OpDef(
            "scatter_nd",
            3,
            _scatter_nd_rel,
            OpPattern.OPAQUE,
            _scatter_nd_impl,
            attrs=(AttrField("mode", "update", str),),
            te_impl=te_scatter_nd,
        )
    )
    register(
        OpDef(
            "adv_index", 1, _adv_index_rel, OpPattern.INJECTIVE, _adv_index_impl, tuple_input=True, te_impl=te_adv_index
        )
    )
    register(
        OpDef(
            "unravel_index", 2, _unravel_index_rel, OpPattern.INJECTIVE, _unravel_index_impl, te_impl=te_unravel_index
        )
    )


_register_all()
