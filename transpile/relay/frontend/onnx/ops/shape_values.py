"""What the tensor converters share: axes, constant int lists, negative indices, and shape vectors known in part.

ONNX models compute shapes at run time (`Shape` → `Gather` → `Concat` → `Reshape`). When every
input dimension is static that chain folds to a constant in the GraphBuilder. When some are not
(a `?` batch), `shape_entries` still reads the vector element by element: a static entry is an
int, an entry copied from dimension `axis` of some tensor is a `DimOf`, anything else is `None`.
Reshape, Expand, Slice and ConstantOfShape use that to keep unknown dimensions unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .... import expr as E
from ....ty import AnyDim

__all__ = [
    "DimOf",
    "shape_entries",
    "shape_source",
    "normalize_axis",
    "normalize_axes",
    "int_list_input",
    "int_scalar_input",
    "normalize_indices",
    "dim_as_tensor",
    "needs_constant",
]


@dataclass(frozen=True, eq=False)
class DimOf:
    """An entry of a shape vector that is dimension `axis` of `tensor`, unknown until run time."""

    tensor: E.Expr
    axis: int

    def is_dim(self, tensor: E.Expr, axis: int) -> bool:
        return self.tensor is tensor and self.axis == axis


def shape_entries(b, value: E.Expr, depth: int = 0) -> list | None:
    """The entries (int | DimOf | None) of a 0-d or 1-d integer tensor, or None when its length is unknown."""
    data = b.value_of(value)
    if data is not None:
        if data.ndim > 1 or data.dtype.kind not in "iub":
            return None
        return [int(v) for v in np.atleast_1d(data)]
    if depth > 32 or not isinstance(value, E.Call) or not isinstance(value.op, E.Op):
        return _unknown_entries(b, value)
    name, args, attrs = value.op.name, value.args, value.attrs
    if name == "shape_of":
        return [d if not isinstance(d, AnyDim) else DimOf(args[0], i) for i, d in enumerate(b.shape_of(args[0]))]
    if name in ("cast", "copy", "reshape", "squeeze", "expand_dims") and b.ndim_of(value) <= 1:
        if name == "cast" and np.dtype(attrs.dtype).kind not in "iu":
            return _unknown_entries(b, value)
        inner = shape_entries(b, args[0], depth + 1)
        return inner if inner is not None else _unknown_entries(b, value)
    if name == "concatenate" and isinstance(args[0], E.Tuple):
        parts = [shape_entries(b, f, depth + 1) for f in args[0].fields]
        if all(p is not None for p in parts):
            return [entry for part in parts for entry in part]
    if name == "take" and b.ndim_of(args[0]) == 1:
        inner = shape_entries(b, args[0], depth + 1)
        index = b.value_of(args[1])
        if inner is not None and index is not None:
            return [inner[int(i)] for i in np.atleast_1d(index).reshape(-1)]
    if name == "strided_slice" and b.ndim_of(args[0]) == 1:
        inner = shape_entries(b, args[0], depth + 1)
        if inner is not None:
            stride = attrs.strides[0] if attrs.strides else 1
            begin, end = attrs.begin[0], attrs.end[0]
            if attrs.slice_mode == "size":
                end, stride = (begin + end if end >= 0 else None), 1
            return inner[slice(begin, end, stride)]
    if name in _ENTRYWISE and b.ndim_of(value) <= 1:
        return _entrywise(b, _ENTRYWISE[name], value, depth)
    return _unknown_entries(b, value)


# Arithmetic on shape vectors, computed entry by entry where both operands are static (floor
# division is exact there: shape entries are non-negative).
_ENTRYWISE = {
    "add": lambda x, y: x + y,
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: int(x / y) if y else None,
    "floor_divide": lambda x, y: x // y if y else None,
    "maximum": max,
    "minimum": min,
}


def _entrywise(b, fn, value, depth):
    left, right = (shape_entries(b, a, depth + 1) for a in value.args)
    out = _unknown_entries(b, value)
    if left is None or right is None or out is None:
        return out
    if len(left) == 1:
        left = left * len(out)
    if len(right) == 1:
        right = right * len(out)
    for i, (x, y) in enumerate(zip(left, right)):
        if isinstance(x, int) and isinstance(y, int):
            out[i] = fn(x, y)
    return out


def shape_source(b, entries) -> E.Expr | None:
    """The tensor whose whole shape `entries` is (some of it known only at run time), if there is one."""
    if not entries:
        return None
    for candidate in {id(e.tensor): e.tensor for e in entries if isinstance(e, DimOf)}.values():
        dims = b.shape_of(candidate)
        if len(dims) == len(entries) and all(
            (isinstance(e, DimOf) and e.is_dim(candidate, i)) or (isinstance(e, int) and e == d)
            for i, (e, d) in enumerate(zip(entries, dims))
        ):
            return candidate
    return None


def _unknown_entries(b, value):
    shape = b.shape_of(value)
    if len(shape) > 1:
        return None
    length = 1 if not shape else shape[0]
    return None if isinstance(length, AnyDim) else [None] * int(length)


# ---------------------------------------------------------------- axes and constant inputs


def normalize_axis(ctx, axis: int, ndim: int, what: str = "axis") -> int:
    """`axis` in [0, ndim), accepting ONNX's negative axes; a clear error when out of range."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ctx.b.error(f"{what} {axis} is out of range for a rank-{ndim} tensor")
    return axis + ndim if axis < 0 else axis


def normalize_axes(ctx, axes, ndim: int, what: str = "axes") -> list[int]:
    out = [normalize_axis(ctx, a, ndim, what) for a in axes]
    if len(set(out)) != len(out):
        raise ctx.b.error(f"{what} {list(axes)} repeats an axis")
    return out


def int_list_input(ctx, index: int, what: str) -> list[int] | None:
    """A constant integer input as a Python list (None when omitted); an error naming `what` when not constant."""
    value = ctx.input_value(index, what)
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def int_scalar_input(ctx, index: int, what: str) -> int | None:
    values = int_list_input(ctx, index, what)
    if values is None:
        return None
    if len(values) != 1:
        raise ctx.b.error(f"{what} must hold one value, got {len(values)}")
    return values[0]


def needs_constant(ctx, what: str):
    """The error for a value Relay needs at compile time that depends on run-time data (raise it).

    Worded as GraphBuilder.require_value's, which the ONNX backend recognizes to bind small graph
    inputs to their values and import again.
    """
    return ctx.b.error(
        f"{what} must be a constant at import (it depends on run-time values; "
        "fix the input shapes with shape=... so it folds)"
    )


# ---------------------------------------------------------------- run-time indices


def dim_as_tensor(b, tensor: E.Expr, axis: int, dtype: str) -> E.Expr:
    """Dimension `axis` of `tensor` as a 0-d tensor of `dtype` (a constant when it is static)."""
    dim = b.shape_of(tensor)[axis]
    if not isinstance(dim, AnyDim):
        return b.const(np.array(int(dim), dtype=dtype))
    shape = b.call("shape_of", tensor, dtype=dtype)
    return b.call("take", shape, b.const(np.array(axis, dtype="int64")), axis=0)


def normalize_indices(b, indices: E.Expr, data: E.Expr, axis: int) -> E.Expr:
    """ONNX indices into `axis` of `data`, negative ones counted from the end, made non-negative."""
    dtype = b.dtype_of(indices)
    constant = b.value_of(indices)
    dim = b.shape_of(data)[axis]
    if constant is not None and not isinstance(dim, AnyDim):
        return b.const(np.where(constant < 0, constant + int(dim), constant).astype(dtype))
    if np.dtype(dtype).kind == "u":
        return indices
    extent = dim_as_tensor(b, data, axis, dtype)
    zero = b.const(np.array(0, dtype=dtype))
    return b.call("where", b.call("less", indices, zero), b.call("add", indices, extent), indices)
