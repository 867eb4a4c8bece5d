"""Indexing and joining operators: concatenate, stack, split, take, strided_slice, gather, tile, repeat..."""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, SymbolicDim, TensorType, TupleType
from ..common import expect_tuple_of_tensors, fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, REQUIRED, make_call, register
from .support import (
    PyOrderOpDef,
    as_out,
    constant_data,
    is_any,
    is_integral,
    tensor_args,
    to_int,
    to_int_list,
    to_optional_int_list,
)
from .te_support import checked, const, is_static, require, require_equal, require_values, static_shape

__all__ = ["strided_slice_plan"]

_INT64_MAX = np.iinfo(np.int64).max


def _axis_in(axis, ndim, op_name, what):
    if not -ndim <= axis < ndim:
        raise RelationError(f"{op_name}: axis {axis} is out of range for {what}")
    return axis + ndim if axis < 0 else axis


# ---------------------------------------------------------------- concatenate, stack


def _tuple_arg(arg_types, op_name):
    if len(arg_types) != 1:
        raise RelationError(f"{op_name}: expected 1 argument (a tuple of tensors), got {len(arg_types)}")
    fields = expect_tuple_of_tensors(arg_types[0], op_name)
    if not fields:
        raise RelationError(f"{op_name}: expects a non-empty tuple of tensors")
    first = fields[0]
    for f in fields[1:]:
        if f.ndim != first.ndim:
            raise RelationError(
                f"{op_name}: all tensors must have the same rank, got {fmt_type(first)} and {fmt_type(f)}"
            )
        if f.dtype != first.dtype:
            raise RelationError(
                f"{op_name}: all tensors must have the same dtype, got {fmt_type(first)} and {fmt_type(f)}"
            )
    return fields


def _concatenate_rel(arg_types, attrs):
    fields = _tuple_arg(arg_types, "concatenate")
    first, ndim = fields[0], fields[0].ndim
    if not -ndim <= attrs.axis < ndim:
        raise RelationError(f"concatenate: axis {attrs.axis} is out of range [-{ndim}, {ndim}) for {fmt_type(first)}")
    axis = attrs.axis + ndim if attrs.axis < 0 else attrs.axis
    concat = AnyDim() if any(is_any(f.shape[axis]) for f in fields) else sum(f.shape[axis] for f in fields)
    oshape = []
    for i in range(ndim):
        if i == axis:
            oshape.append(concat)
            continue
        # A symbol (SymbolicDim) counts as known here, as TVM's shape variables did.
        known = [f.shape[i] for f in fields if isinstance(f.shape[i], SymbolicDim) or not is_any(f.shape[i])]
        constants = [k for k in known if not is_any(k)]
        if any(k != constants[0] for k in constants):
            listed = ", ".join(fmt_type(f) for f in fields)
            raise RelationError(f"concatenate: tensors must agree on every axis but {axis}, got {listed}")
        # Like TVM: a partially known axis stays known only when the concatenated axis is unknown.
        if len(known) == len(fields) or (known and is_any(concat)):
            oshape.append(constants[0] if constants else known[0])
        else:
            oshape.append(AnyDim())
    return TensorType(oshape, first.dtype)


def _concatenate_impl(args, attrs, out_type):
    return as_out(np.concatenate([np.asarray(a) for a in args[0]], axis=attrs.axis), out_type)


def _stack_rel(arg_types, attrs):
    fields = _tuple_arg(arg_types, "stack")
    first, ndim = fields[0], fields[0].ndim
    if not -(ndim + 1) <= attrs.axis < ndim + 1:
        raise RelationError(
            f"stack: axis {attrs.axis} is out of range [{-(ndim + 1)}, {ndim + 1}) for {fmt_type(first)}"
        )
    axis = attrs.axis + ndim + 1 if attrs.axis < 0 else attrs.axis
    for f in fields[1:]:
        for a, b in zip(first.shape, f.shape):
            if not (is_any(a) or is_any(b) or a == b):
                raise RelationError(
                    f"stack: all tensors must have the same shape, got {fmt_type(first)} and {fmt_type(f)}"
                )
    shape = list(first.shape)
    shape.insert(axis, len(fields))
    return TensorType(shape, first.dtype)


def _stack_impl(args, attrs, out_type):
    return as_out(np.stack([np.asarray(a) for a in args[0]], axis=attrs.axis), out_type)


# ---------------------------------------------------------------- split


def _indices_or_sections(value):
    data = constant_data(value)
    if isinstance(data, (np.ndarray, np.generic)):
        data = data.tolist()
    if isinstance(data, (list, tuple)):
        return tuple(to_int(v) for v in data)
    return to_int(data)


def _split_sizes(dim, spec, data, axis):
    """The size of every piece along `axis` (None for an unknown size)."""
    if isinstance(spec, int):
        if spec <= 0:
            raise RelationError(f"split: the number of sections must be positive, got {spec}")
        if is_any(dim):
            return [None] * spec
        if dim % spec:
            raise RelationError(
                f"split: {spec} sections do not divide axis {axis} of {fmt_type(data)} (dimension {dim})"
            )
        return [dim // spec] * spec
    sizes, begin = [], 0
    for index in spec:
        if index <= begin:
            raise RelationError(f"split: indices {list(spec)} must be positive and strictly ascending")
        sizes.append(index - begin)
        begin = index
    if not is_any(dim) and begin >= dim:
        raise RelationError(
            f"split: index {begin} is past the end of axis {axis} of {fmt_type(data)} (dimension {dim})"
        )
    sizes.append(None if is_any(dim) else dim - begin)
    return sizes


def _split_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "split", ["data"])
    if data.ndim == 0:
        raise RelationError(f"split: cannot split a scalar {fmt_type(data)}")
    axis = _axis_in(attrs.axis, data.ndim, "split", fmt_type(data))
    fields = []
    for size in _split_sizes(data.shape[axis], attrs.indices_or_sections, data, axis):
        shape = list(data.shape)
        shape[axis] = AnyDim() if size is None else size
        fields.append(TensorType(shape, data.dtype))
    return TupleType(fields)


def _split_output_count(call) -> int:
    """How many parts relay.split returns: the section count, or one more than the split points."""
    spec = call.attrs.indices_or_sections
    return spec if isinstance(spec, int) else len(spec) + 1


def _split_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    spec = attrs.indices_or_sections
    if not isinstance(spec, int) and spec and spec[-1] > x.shape[attrs.axis]:  # the relation's promise, for `?`
        raise ValueError(f"split: index {spec[-1]} is past the end of axis {attrs.axis} of length {x.shape[attrs.axis]}")
    pieces = np.split(x, spec if isinstance(spec, int) else list(spec), axis=attrs.axis)
    return tuple(as_out(p, t) for p, t in zip(pieces, out_type.fields))


# ---------------------------------------------------------------- take, gather


def _take_rel(arg_types, attrs):
    data, indices = tensor_args(arg_types, 2, "take", ["data", "indices"])
    if not is_integral(indices.dtype):
        raise RelationError(f"take: indices must be a tensor of integers, got {fmt_type(indices)}")
    if attrs.mode not in ("clip", "wrap", "fast"):
        raise RelationError(f"take: mode must be clip, wrap or fast, got {attrs.mode!r}")
    if attrs.axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = _axis_in(attrs.axis, data.ndim, "take", fmt_type(data))
    batch = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= batch <= indices.ndim:
        raise RelationError(f"take: batch_dims {attrs.batch_dims} is out of range for indices {fmt_type(indices)}")
    if batch > axis:
        raise RelationError(f"take: batch_dims {attrs.batch_dims} must be <= axis {axis}")
    shape = data.shape[:axis] + indices.shape[batch:] + data.shape[axis + 1 :]
    return TensorType(shape, data.dtype)


def _take_indices(indices, n, mode):
    indices = indices.astype(np.int64)
    if mode == "wrap":
        return np.mod(indices, n) if n else indices
    # clip, and fast (whose out-of-bounds behaviour TVM left undefined).
    return np.clip(indices, 0, max(n - 1, 0))


def _require_nonempty_axis(extent, indices):
    """take's semantics: any index into an empty axis is an error, in every mode and whatever the
    other dimensions are. (numpy only checks when the dimensions before the axis are non-empty, so
    `take` from a (0, 0) tensor raised along axis 0 and not along axis 1: fuzz seeds 123217, 130497.)"""
    if extent == 0 and indices.size:
        raise IndexError("take: cannot do a non-empty take from an empty axis")


def _take_impl(args, attrs, out_type):
    data, indices = (np.asarray(a) for a in args)
    if attrs.axis is None:
        flat = data.reshape(-1)
        _require_nonempty_axis(flat.size, indices)
        return as_out(flat[_take_indices(indices, flat.size, attrs.mode)], out_type)
    axis = attrs.axis + data.ndim if attrs.axis < 0 else attrs.axis
    batch = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    _require_nonempty_axis(data.shape[axis], indices)
    idx = _take_indices(indices, data.shape[axis], attrs.mode)
    if batch == 0:
        return as_out(np.take(data, idx, axis=axis), out_type)
    shape = data.shape[:axis] + idx.shape[batch:] + data.shape[axis + 1 :]
    out = np.empty(shape, dtype=data.dtype)
    for b in np.ndindex(*data.shape[:batch]):
        out[b] = np.take(data[b], idx[b], axis=axis - batch)
    return as_out(out, out_type)


class GatherOpDef(OpDef):
    """relay.gather(data, axis, indices): the attribute sits between the two inputs."""

    def __call__(self, data, axis, indices):
        from ...expr import to_expr

        return make_call(self.name, [to_expr(data), to_expr(indices)], {"axis": axis})


def _gather_rel(arg_types, attrs):
    data, indices = tensor_args(arg_types, 2, "gather", ["data", "indices"])
    if not is_integral(indices.dtype):
        raise RelationError(f"gather: indices must be a tensor of integers, got {fmt_type(indices)}")
    if attrs.axis is None:
        raise RelationError("gather: axis must be given")
    if data.ndim != indices.ndim:
        raise RelationError(f"gather: data {fmt_type(data)} and indices {fmt_type(indices)} must have the same rank")
    axis = _axis_in(attrs.axis, data.ndim, "gather", fmt_type(data))
    for i, (d, k) in enumerate(zip(data.shape, indices.shape)):
        if i != axis and not (is_any(d) or is_any(k) or d == k):
            raise RelationError(f"gather: data {fmt_type(data)} and indices {fmt_type(indices)} differ on axis {i}")
    return TensorType(indices.shape, data.dtype)


def _gather_impl(args, attrs, out_type):
    data, indices = (np.asarray(a) for a in args)
    return as_out(np.take_along_axis(data, indices.astype(np.int64), axis=attrs.axis), out_type)


# ---------------------------------------------------------------- strided_slice


def _canonical(index, extent, stride):
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def strided_slice_plan(shape, attrs, data=None):
    """Per sliced axis (axis, begin, end, stride) with TVM's canonicalization, and the output shape."""
    ndim = len(shape)
    begin, end = list(attrs.begin), list(attrs.end)
    strides = list(attrs.strides) if attrs.strides is not None else [1]
    what = fmt_type(data) if data is not None else f"a rank-{ndim} tensor"
    if attrs.slice_mode not in ("end", "size"):
        raise RelationError(f"strided_slice: slice_mode must be end or size, got {attrs.slice_mode!r}")
    if attrs.axes is not None:
        axes = [_axis_in(a, ndim, "strided_slice", what) for a in attrs.axes]
        if not len(axes) == len(begin) == len(end) == len(strides):
            raise RelationError(
                f"strided_slice: axes, begin, end and strides must have the same length, got "
                f"axes={list(attrs.axes)}, begin={begin}, end={end}, strides={strides}"
            )
    else:
        axes = list(range(ndim))
        strides += [1] * (ndim - len(strides))
        begin += [0 if strides[i] > 0 else _INT64_MAX for i in range(len(begin), ndim)]
        end += [0 if strides[i] < 0 else _INT64_MAX for i in range(len(end), ndim)]
    plan, oshape = [], list(shape)
    for i, axis in enumerate(axes):
        stride = 1 if attrs.slice_mode == "size" else strides[i]
        if stride == 0:
            raise RelationError(f"strided_slice: stride of axis {axis} must not be 0")
        b, e = begin[i], end[i]
        if attrs.slice_mode == "size":
            e = _INT64_MAX if e < 0 else b + e
        dim = shape[axis]
        if is_any(dim):
            oshape[axis] = AnyDim()
            plan.append((axis, b, e, stride))
            continue
        b, e = _canonical(b, dim, stride), _canonical(e, dim, stride)
        if (stride < 0 and e > b) or (stride > 0 and b > e):
            raise RelationError(
                f"strided_slice: begin={begin[i]}, end={end[i]}, stride={stride} is an invalid slice of axis {axis} of {what}"
            )
        oshape[axis] = (abs(e - b) + abs(stride) - 1) // abs(stride)
        plan.append((axis, b, e, stride))
    return plan, tuple(oshape)


def _strided_slice_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "strided_slice", ["data"])
    _, oshape = strided_slice_plan(data.shape, attrs, data)
    return TensorType(oshape, data.dtype)


def _strided_slice_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    plan, _ = strided_slice_plan(x.shape, attrs)
    index = [slice(None)] * x.ndim
    for axis, b, e, stride in plan:
        index[axis] = slice(b, e if e >= 0 else None, stride)
    return as_out(x[tuple(index)], out_type)


# ---------------------------------------------------------------- slice_like, reverse, tile, repeat


def _slice_like_axes(data_ndim, like_ndim, axes):
    if axes is None:
        return list(range(min(data_ndim, like_ndim)))
    if not axes:
        raise RelationError("slice_like: axes cannot be empty")
    return [a + data_ndim if a < 0 else a for a in axes]


def _slice_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "slice_like", ["data", "shape_like"])
    oshape = list(data.shape)
    for a in _slice_like_axes(data.ndim, like.ndim, attrs.axes):
        if not 0 <= a < like.ndim or a >= data.ndim:
            raise RelationError(f"slice_like: axis {a} exceeds the rank of {fmt_type(like)} or {fmt_type(data)}")
        target, have = like.shape[a], data.shape[a]
        if not (is_any(target) or is_any(have)) and target > have:
            raise RelationError(
                f"slice_like: axis {a} of {fmt_type(like)} ({target}) exceeds {fmt_type(data)} ({have})"
            )
        oshape[a] = target
    return TensorType(oshape, data.dtype)


def _slice_like_impl(args, attrs, out_type):
    x, like = (np.asarray(a) for a in args)
    index = [slice(None)] * x.ndim
    for a in _slice_like_axes(x.ndim, like.ndim, attrs.axes):
        index[a] = slice(0, like.shape[a])
    return as_out(x[tuple(index)], out_type)


def _reverse_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "reverse", ["data"])
    if attrs.axis is None:
        raise RelationError("reverse: axis must be given")
    _axis_in(attrs.axis, data.ndim, "reverse", fmt_type(data))
    return TensorType(data.shape, data.dtype)


def _reverse_impl(args, attrs, out_type):
    return as_out(np.flip(np.asarray(args[0]), axis=attrs.axis), out_type)


def _tile_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "tile", ["data"])
    reps = list(attrs.reps)
    if any(r <= 0 for r in reps):
        raise RelationError(f"tile: every repetition must be positive, got reps={reps}")
    n = max(data.ndim, len(reps))
    shape = [1] * (n - data.ndim) + list(data.shape)
    reps = [1] * (n - len(reps)) + reps
    return TensorType([AnyDim() if is_any(d) else d * r for d, r in zip(shape, reps)], data.dtype)


def _tile_impl(args, attrs, out_type):
    return as_out(np.tile(np.asarray(args[0]), list(attrs.reps)), out_type)


def _repeat_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "repeat", ["data"])
    if attrs.repeats < 1:
        raise RelationError(f"repeat: repeats must be >= 1, got {attrs.repeats}")
    if attrs.axis is None:
        raise RelationError("repeat: axis must be given")
    axis = _axis_in(attrs.axis, data.ndim, "repeat", fmt_type(data))
    shape = list(data.shape)
    shape[axis] = AnyDim() if is_any(shape[axis]) else shape[axis] * attrs.repeats
    return TensorType(shape, data.dtype)


def _repeat_impl(args, attrs, out_type):
    return as_out(np.repeat(np.asarray(args[0]), attrs.repeats, axis=attrs.axis), out_type)


# ---------------------------------------------------------------- TE lowerings (te_impl)


def _te_concatenate(inputs, attrs, out_type):
    from tvm import topi

    tensors = list(inputs[0])
    axis = attrs.axis % len(tensors[0].shape)
    for a in range(len(tensors[0].shape)):
        if a != axis:
            require_equal([t.shape[a] for t in tensors], f"concatenate: the inputs' dimension {a} differs")
    return topi.concatenate(tensors, attrs.axis)


def _te_stack(inputs, attrs, out_type):
    from tvm import topi

    tensors = list(inputs[0])
    for a in range(len(tensors[0].shape)):
        require_equal([t.shape[a] for t in tensors], f"stack: the inputs' dimension {a} differs")
    return topi.stack(tensors, attrs.axis)


def _te_split(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    axis = attrs.axis + len(x.shape) if attrs.axis < 0 else attrs.axis
    if not is_static(x.shape[axis]):
        return _te_split_symbolic(x, axis, attrs.indices_or_sections)
    outs, begin = [], 0
    for k, field in enumerate(out_type.fields):
        size = field.shape[axis]

        shape = list(x.shape)
        shape[axis] = size
        outs.append(te.compute(shape, _shifted(x, axis, begin), name=f"T_split_{k}"))
        begin += size
    return outs


def _te_split_symbolic(x, axis, spec):
    """split along a `?` axis: numpy's pieces, their bounds computed from the run-time extent."""
    from tvm import te, tirx

    dim = x.shape[axis]
    if isinstance(spec, int):
        require(tirx.floormod(dim, spec) == 0, f"split: the split axis is not divisible into {spec} sections")
        bounds = [tirx.floordiv(dim, spec) * k for k in range(spec + 1)]
    else:  # numpy clamps indices beyond the extent; a decreasing index gives an empty piece
        bounds = [0] + [tirx.Min(int(i), dim) for i in spec] + [dim]
    outs = []
    for k in range(len(bounds) - 1):
        shape = list(x.shape)
        shape[axis] = tirx.Max(bounds[k + 1] - bounds[k], 0)
        outs.append(te.compute(shape, _shifted(x, axis, bounds[k]), name=f"T_split_{k}"))
    return outs


def _shifted(x, axis, begin):
    def piece(*idx):
        return x(*(idx[:axis] + (idx[axis] + begin,) + idx[axis + 1 :]))

    return piece


def _te_take(inputs, attrs, out_type):
    from tvm import topi

    data, indices = inputs
    # Any index into an empty axis (or into empty data, axis None) is an error, as in numpy_impl —
    # checked before the loops, so an otherwise empty result does not hide it (fuzz seed 130497).
    extent = data.shape[attrs.axis] if attrs.axis is not None else _te_size(data.shape)
    no_indices = [d == 0 for d in indices.shape]
    require(_te_any([extent > 0] + no_indices), "take: cannot do a non-empty take from an empty axis")
    if is_static(extent) and int(extent) == 0:
        # The output is empty or the requirement fails: never read. (topi's wrap mode would build
        # `index % 0`, which TVM's simplifier rejects at compile time.)
        return _te_take_from_nothing(data, indices, attrs)
    # numpy_impl clips in "fast" mode too (TVM left out-of-bounds fast indices undefined).
    mode = "wrap" if attrs.mode == "wrap" else "clip"
    if attrs.axis is None:
        return topi.take(data, indices, mode=mode)
    inside = _te_indices_inside(indices, extent, mode)
    # (topi's "fast" mode mis-indexes with batch_dims; clipping indices already inside costs two compares)
    return topi.take(data, inside, axis=attrs.axis, batch_dims=attrs.batch_dims, mode="clip")


def _te_indices_inside(indices, extent, mode: str):
    """`indices` wrapped or clipped into [0, extent), in the dtype of the axis' extent.

    A fused kernel that reads one input both through take's int64 indices and with its own int32
    loop indices (a strided_slice of the same tensor) must not mix int64 and int32 in that buffer's
    read region: TVM failed with "mismatched types. int64 vs. int32" (fuzz seed 117376)."""
    from tvm import te, tirx

    index_dtype = str(getattr(extent, "dtype", "int32"))
    size = tirx.Cast(str(indices.dtype), extent)  # the indices' dtype holds every index before wrapping

    def inside(*position):
        index = indices(*position)
        index = tirx.floormod(index, size) if mode == "wrap" else tirx.max(tirx.min(index, size - 1), 0)
        return tirx.Cast(index_dtype, index)

    return te.compute(indices.shape, inside, name="T_take_index")


def _te_take_from_nothing(data, indices, attrs):
    """take's output shape filled with zeros, for an axis (or data) of static size 0."""
    from tvm import te

    if attrs.axis is None:
        shape = list(indices.shape)
    else:
        axis = attrs.axis % len(data.shape)
        batch = attrs.batch_dims + len(indices.shape) if attrs.batch_dims < 0 else attrs.batch_dims
        shape = list(data.shape[:axis]) + list(indices.shape[batch:]) + list(data.shape[axis + 1 :])
    zero = const(0, str(data.dtype))  # (te_support's: a consumer may divide by it before the check fails)
    return te.compute(shape, lambda *_: zero, name="T_take")


def _te_size(shape):
    from tvm import tirx

    size = tirx.const(1, "int64")
    for dim in shape:
        size = size * tirx.Cast("int64", dim) if not is_static(dim) else size * int(dim)
    return size


def _te_any(conditions):
    from tvm import tirx

    result = tirx.const(False, "bool")
    for condition in conditions:
        result = tirx.Or(result, condition)
    return result


def _te_gather(inputs, attrs, out_type):
    from tvm import te, tirx

    data, indices = inputs
    axis = attrs.axis + len(data.shape) if attrs.axis < 0 else attrs.axis
    extent = data.shape[axis]
    for d, (size, wanted) in enumerate(zip(data.shape, indices.shape)):
        if d != axis:  # the relation's promise for `?` dims (np.take_along_axis raises otherwise)
            require_equal((size, wanted), f"gather: dimension {d} of the indices differs from the data's")

    n = extent.astype("int64") if not is_static(extent) else tirx.const(int(extent), "int64")

    def wrapped(k):  # negative indices count from the end, as in np.take_along_axis
        k = k.astype("int64")
        return tirx.Select(k < 0, k + n, k)

    def in_range(*idx):
        k = wrapped(indices(*idx))
        return tirx.And(k >= 0, k < n)

    # np.take_along_axis raises on an index outside the axis: so does the kernel (a value check),
    # and it clamps the index anyway, never reading outside `data`.
    check = require_values(indices.shape, in_range, "gather: an index is out of range for its axis")

    def body(*idx):
        k = tirx.max(tirx.min(wrapped(indices(*idx)), n - 1), tirx.const(0, "int64"))
        value = data(*(idx[:axis] + (k,) + idx[axis + 1 :]))
        if not (is_static(extent) and int(extent) > 0):  # nothing at all to read from an empty axis
            value = tirx.if_then_else(n > 0, value, tirx.const(0, str(data.dtype)))
        return checked(check, value)

    return te.compute(indices.shape, body, name="T_gather")


def _te_strided_slice(inputs, attrs, out_type):
    from tvm import te, tirx

    x = inputs[0]
    dims = [int(d) if is_static(d) else AnyDim() for d in x.shape]
    plan, oshape = strided_slice_plan(dims, attrs)
    start, shape = {}, list(oshape)
    for axis, b, e, stride in plan:
        if is_static(x.shape[axis]):
            start[axis] = (b, stride)
        else:  # a `?` axis: TVM's canonicalization of begin/end at run time
            b, e = _te_canonical(b, x.shape[axis], stride), _te_canonical(e, x.shape[axis], stride)
            span = e - b if stride > 0 else b - e
            require(span >= 0, f"strided_slice: the slice of dimension {axis} is invalid for its extent")
            shape[axis] = tirx.floordiv(span + (abs(stride) - 1), abs(stride))
            start[axis] = (b, stride)

    def body(*idx):
        return x(*[start[a][0] + i * start[a][1] if a in start else i for a, i in enumerate(idx)])

    return te.compute(shape, body, name="T_strided_slice")


def _te_canonical(index, extent, stride):
    """_canonical over a symbolic extent."""
    from tvm import tirx

    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    index = max(min(index, 1 << 30), -(1 << 30))  # "to the end" (int64 max) in the int32 index arithmetic
    value = index + extent if index < 0 else tirx.const(index, "int32")
    return tirx.min(tirx.max(value, lo), hi)


def _te_slice_like(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    return te.compute(static_shape(out_type, "slice_like"), lambda *idx: x(*idx), name="T_slice_like")


def _te_reverse(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    axis = attrs.axis + len(x.shape) if attrs.axis < 0 else attrs.axis

    def body(*idx):
        return x(*(idx[:axis] + (x.shape[axis] - 1 - idx[axis],) + idx[axis + 1 :]))

    return te.compute(x.shape, body, name="T_reverse")


def _te_tile(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    n = max(len(x.shape), len(attrs.reps))
    reps = [1] * (n - len(attrs.reps)) + [int(r) for r in attrs.reps]
    dims = [1] * (n - len(x.shape)) + list(x.shape)
    shape = [d * r if r != 1 else d for d, r in zip(dims, reps)]
    offset = len(shape) - len(x.shape)

    def body(*idx):
        return x(*[idx[offset + k] % dim for k, dim in enumerate(x.shape)])

    return te.compute(shape, body, name="T_tile")


def _te_repeat(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    axis = attrs.axis + len(x.shape) if attrs.axis < 0 else attrs.axis

    def body(*idx):
        return x(*(idx[:axis] + (idx[axis] // attrs.repeats,) + idx[axis + 1 :]))

    shape = list(x.shape)
    shape[axis] = shape[axis] * int(attrs.repeats)
    return te.compute(shape, body, name="T_repeat")


# ---------------------------------------------------------------- registration


def _register_all():
    register(
        OpDef(
            "concatenate",
            1,
            _concatenate_rel,
            OpPattern.INJECTIVE,
            _concatenate_impl,
            attrs=(AttrField("axis", 0, to_int),),
            tuple_input=True,
            te_impl=_te_concatenate,
        )
    )
    register(
        OpDef(
            "stack",
            1,
            _stack_rel,
            OpPattern.INJECTIVE,
            _stack_impl,
            attrs=(AttrField("axis", 0, to_int),),
            tuple_input=True,
            te_impl=_te_stack,
        )
    )
    register(
        OpDef(
            "split",
            1,
            _split_rel,
            OpPattern.INJECTIVE,
            _split_impl,
            attrs=(AttrField("indices_or_sections", REQUIRED, _indices_or_sections), AttrField("axis", 0, to_int)),
            te_impl=_te_split,
            extras={"tuple_outputs": _split_output_count},
        )
    )
    register(
        PyOrderOpDef(
            "take",
            2,
            _take_rel,
            OpPattern.INJECTIVE,
            _take_impl,
            attrs=(AttrField("batch_dims", 0, to_int), AttrField("axis", None, to_int), AttrField("mode", "clip", str)),
            # relay.take(data, indices, axis=None, batch_dims=0, mode="clip")
            extras={"py_order": ("axis", "batch_dims", "mode")},
            te_impl=_te_take,
        )
    )
    register(
        GatherOpDef(
            "gather",
            2,
            _gather_rel,
            OpPattern.INJECTIVE,
            _gather_impl,
            attrs=(AttrField("axis", None, to_int),),
            te_impl=_te_gather,
        )
    )
    register(
        PyOrderOpDef(
            "strided_slice",
            1,
            _strided_slice_rel,
            OpPattern.INJECTIVE,
            _strided_slice_impl,
            attrs=(
                AttrField("begin", REQUIRED, to_int_list),
                AttrField("end", REQUIRED, to_int_list),
                # relay.strided_slice filled strides=[1] when not given.
                AttrField("strides", (1,), to_int_list),
                AttrField("slice_mode", "end", str),
                AttrField("axes", None, to_optional_int_list),
            ),
            # relay.strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end")
            extras={
                "py_order": ("begin", "end", "strides", "axes", "slice_mode"),
                "always_print": ("strides", "axes"),
                "none_is_default": ("strides",),
            },
            te_impl=_te_strided_slice,
        )
    )
    register(
        OpDef(
            "slice_like",
            2,
            _slice_like_rel,
            OpPattern.INJECTIVE,
            _slice_like_impl,
            attrs=(AttrField("axes", None, to_optional_int_list),),
            extras={"always_print": ("axes",)},
            te_impl=_te_slice_like,
        )
    )
    register(
        OpDef(
            "reverse",
            1,
            _reverse_rel,
            OpPattern.INJECTIVE,
            _reverse_impl,
            attrs=(AttrField("axis", None, to_int),),
            te_impl=_te_reverse,
        )
    )
    register(
        OpDef(
            "tile",
            1,
            _tile_rel,
            OpPattern.BROADCAST,
            _tile_impl,
            attrs=(AttrField("reps", REQUIRED, to_int_list),),
            te_impl=_te_tile,
        )
    )
    register(
        OpDef(
            "repeat",
            1,
            _repeat_rel,
            OpPattern.BROADCAST,
            _repeat_impl,
            attrs=(AttrField("repeats", REQUIRED, to_int), AttrField("axis", None, to_int)),
            te_impl=_te_repeat,
        )
    )


_register_all()
