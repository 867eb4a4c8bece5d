"""strided_set (TVM's transform.cc / topi.strided_set): a copy of data with a strided slice replaced by v.

begin, end and strides are 1-D integer tensors (TVM's builder turns lists into constants); entry i
applies to axis i, and missing trailing entries take the whole axis (numpy's `None`). Each axis is
sliced as numpy's basic slicing does (negative positions count from the end, out-of-range ones
clamp), which is also what strided_slice selects, and v must have exactly the slice's shape.
TVM's relation only returned data's type and its kernel read v unchecked; here a stride of 0, a
v of another shape or more begin/end/strides entries than data has axes are errors.
"""

from __future__ import annotations

import numpy as np

from ..common import fmt_type
from ..registry import OpDef, OpPattern, RelationError, make_call, register
from .support import as_out, is_any, is_integral, tensor_args
from .te_support import checked, require, require_values

__all__ = ["strided_set_slices"]

_NAMES = ["data", "v", "begin", "end", "strides"]


def _strided_set_rel(arg_types, attrs):
    data, v, *bounds = tensor_args(arg_types, 5, "strided_set", _NAMES)
    if v.dtype != data.dtype or v.ndim != data.ndim:
        raise RelationError(f"strided_set: v {fmt_type(v)} must have the rank and dtype of data {fmt_type(data)}")
    for name, ty in zip(_NAMES[2:], bounds):
        if ty.ndim != 1 or not is_integral(ty.dtype):
            raise RelationError(f"strided_set: {name} must be a 1-D tensor of integers, got {fmt_type(ty)}")
        if not is_any(ty.shape[0]) and ty.shape[0] > data.ndim:
            raise RelationError(
                f"strided_set: {name} {fmt_type(ty)} has more entries than data {fmt_type(data)} has axes"
            )
    return data


def strided_set_slices(shape, begin, end, strides) -> tuple:
    """The numpy slices strided_set replaces (ValueError for a zero stride or too many entries)."""
    begin, end, strides = (np.asarray(a, dtype=np.int64).reshape(-1).tolist() for a in (begin, end, strides))
    if max(len(begin), len(end), len(strides)) > len(shape):
        raise ValueError(f"strided_set: begin, end and strides may hold at most {len(shape)} entries")
    if 0 in strides:
        raise ValueError("strided_set: a stride is 0")
    return tuple(
        slice(
            begin[i] if i < len(begin) else None,
            end[i] if i < len(end) else None,
            strides[i] if i < len(strides) else None,
        )
        for i in range(len(shape))
    )


def _strided_set_impl(args, attrs, out_type):
    data, v = np.asarray(args[0]), np.asarray(args[1])
    slices = strided_set_slices(data.shape, *args[2:])
    out = data.copy()
    target = out[slices].shape
    if v.shape != target:
        raise ValueError(f"strided_set: v has shape {v.shape}, the slice it replaces has shape {target}")
    out[slices] = v
    return as_out(out, out_type)


def _te_strided_set(inputs, attrs, out_type):
    from tvm import te, tirx

    data, v, begin, end, strides = inputs
    ndim = len(data.shape)
    work = "int64"
    zero, one = tirx.const(0, work), tirx.const(1, work)
    for name, t in zip(_NAMES[2:], (begin, end, strides)):
        require(t.shape[0] <= ndim, f"strided_set: {name} has more entries than data has axes")

    def entry(t, i, default):
        # (if_then_else: the entries past the end of the tensor must not be read)
        return tirx.if_then_else(t.shape[0] > i, t[i].astype(work), default)

    axes = []
    for i in range(ndim):
        n = data.shape[i].astype(work)
        stride = entry(strides, i, one)
        backward = stride < zero
        lo, hi = tirx.Select(backward, -one, zero), tirx.Select(backward, n - one, n)

        def canonical(index, n=n, lo=lo, hi=hi):
            return tirx.min(tirx.max(tirx.Select(index < zero, index + n, index), lo), hi)

        # Defaults that canonicalize to the whole axis in the stride's direction.
        b = canonical(entry(begin, i, tirx.Select(backward, n - one, zero)))
        e = canonical(entry(end, i, tirx.Select(backward, -(n + one), n)))
        step = tirx.max(tirx.abs(stride), one)  # a zero stride is rejected by the value check
        span = tirx.Select(backward, b - e, e - b)
        length = tirx.Select(span > zero, tirx.floordiv(span - one, step) + one, zero)
        axes.append((b, e, backward, step, length))

    def valid():
        conditions = [tirx.const(True, "bool")]
        for i, (_, _, _, _, length) in enumerate(axes):
            conditions.append(v.shape[i].astype(work) == length)
        return tirx.all(*conditions)

    check_shape = require_values((), valid, "strided_set: v does not have the shape of the slice it replaces")
    check_strides = require_values(
        strides.shape, lambda k: strides[k] != tirx.const(0, str(strides.dtype)), "strided_set: a stride is 0"
    )

    def body(*index):
        inside, position = [], []
        for i, (b, e, backward, step, _) in enumerate(axes):
            j = index[i].astype(work)
            offset = tirx.Select(backward, b - j, j - b)
            inside.append(tirx.And(offset >= zero, tirx.Select(backward, j > e, j < e)))
            inside.append(tirx.floormod(offset, step) == zero)
            limit = v.shape[i].astype(work)
            position.append(tirx.max(tirx.min(tirx.floordiv(offset, step), limit - one), zero))
        value = tirx.if_then_else(tirx.all(*inside), v(*position), data(*index))
        return checked(check_strides, checked(check_shape, value))

    return te.compute(data.shape, body, name="T_strided_set")


class StridedSetOpDef(OpDef):
    """relay.strided_set(data, v, begin, end, strides=None): lists become int32 constants."""

    def __call__(self, data, v, begin, end, strides=None):
        from ...expr import const, to_expr

        def bounds(value):
            return const(np.asarray(list(value), dtype="int32")) if isinstance(value, (list, tuple)) else to_expr(value)

        strides = const(np.array([1], dtype="int32")) if strides is None else bounds(strides)
        return make_call(self.name, [to_expr(data), to_expr(v), bounds(begin), bounds(end), strides])


register(
    StridedSetOpDef(
        "strided_set",
        5,
        _strided_set_rel,
        OpPattern.INJECTIVE,
        _strided_set_impl,
        te_impl=_te_strided_set,
        extras={"input_names": tuple(_NAMES), "support_level": 4},
        description="data with the strided slice [begin:end:strides] replaced by v (numpy slicing per axis).",
    )
)
