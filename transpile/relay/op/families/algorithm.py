"""Sorting and searching operators (TVM's algorithm/*.cc): topk, argsort, sort, searchsorted, argwhere, unique.

Order: numpy's stable order, a nan counting as larger than every number (it sorts last
ascending, first descending); equal elements keep their index order in both directions, as
ONNX TopK requires (the lower index first). TVM's own kernels left nan order undefined.
"""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType, TupleType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, make_call, register
from .algorithm_te import te_searchsorted, te_sort, te_topk
from .support import (
    PyOrderOpDef,
    as_out,
    is_any,
    is_float,
    is_integral,
    tensor_args,
    to_bool,
    to_dtype,
    to_int,
    to_optional_dtype,
)

__all__ = ["sort_order"]


def _axis_of(axis, data, op_name):
    ndim = data.ndim
    if not -ndim <= axis < ndim:
        raise RelationError(f"{op_name}: axis {axis} is out of range for {fmt_type(data)}")
    return axis + ndim if axis < 0 else axis


def _index_dtype(dtype, op_name, what="dtype"):
    if not (is_integral(dtype) or is_float(dtype)):
        raise RelationError(f"{op_name}: {what} of the indices must be numeric, got {dtype}")
    return dtype


def sort_order(x: np.ndarray, axis: int, ascend: bool) -> np.ndarray:
    """The indices that sort `x` along `axis` (stable, nan largest, ties lower index first)."""
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    # Sorting the reversed array ascending and reversing the result gives a descending order
    # in which equal elements (nans too) keep their original order.
    n = x.shape[axis]
    reversed_order = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(reversed_order, axis=axis)


# ---------------------------------------------------------------- argsort, sort, topk


def _argsort_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "argsort", ["data"])
    _axis_of(attrs.axis, data, "argsort")
    return TensorType(data.shape, _index_dtype(attrs.dtype, "argsort"))


def _argsort_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    return as_out(sort_order(x, attrs.axis % x.ndim, bool(attrs.is_ascend)), out_type)


def _sort_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "sort", ["data"])
    _axis_of(attrs.axis, data, "sort")
    return TensorType(data.shape, data.dtype)


def _sort_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    order = sort_order(x, axis, bool(attrs.is_ascend))
    return as_out(np.take_along_axis(x, order, axis=axis), out_type)


_TOPK_RETURNS = ("both", "values", "indices")


def _topk_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "topk", ["data"])
    axis = _axis_of(attrs.axis, data, "topk")
    if attrs.ret_type not in _TOPK_RETURNS:
        raise RelationError(f"topk: ret_type must be both, values or indices, got {attrs.ret_type!r}")
    k, dim = attrs.k, data.shape[axis]
    if k >= 1 and not is_any(dim) and k > dim:
        raise RelationError(f"topk: k={k} exceeds axis {axis} of {fmt_type(data)} (dimension {dim})")
    shape = list(data.shape)
    if k >= 1:  # k < 1 selects every element, as in TVM
        shape[axis] = k
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, _index_dtype(attrs.dtype, "topk"))
    if attrs.ret_type == "both":
        return TupleType([values, indices])
    return values if attrs.ret_type == "values" else indices


def _topk_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    order = sort_order(x, axis, bool(attrs.is_ascend))
    if attrs.k >= 1:
        order = np.take(order, np.arange(attrs.k), axis=axis)
    values = np.take_along_axis(x, order, axis=axis)
    if attrs.ret_type == "both":
        return as_out(values, out_type.fields[0]), as_out(order, out_type.fields[1])
    return as_out(values if attrs.ret_type == "values" else order, out_type)


# ---------------------------------------------------------------- searchsorted


def _searchsorted_rel(arg_types, attrs):
    sequence, values = tensor_args(arg_types, 2, "searchsorted", ["sorted_sequence", "values"])
    if values.ndim == 0:
        raise RelationError(f"searchsorted: values must have rank 1 or more, got {fmt_type(values)}")
    if sequence.ndim == 0:
        raise RelationError(f"searchsorted: sorted_sequence must have rank 1 or more, got {fmt_type(sequence)}")
    if sequence.dtype != values.dtype:
        raise RelationError(
            f"searchsorted: sorted_sequence {fmt_type(sequence)} and values {fmt_type(values)} must have the same dtype"
        )
    if sequence.ndim > 1:
        if sequence.ndim != values.ndim:
            raise RelationError(
                f"searchsorted: a multi-dimensional sorted_sequence {fmt_type(sequence)} needs values of the same "
                f"rank, got {fmt_type(values)}"
            )
        for axis, (a, b) in enumerate(zip(sequence.shape[:-1], values.shape[:-1])):
            if not (is_any(a) or is_any(b) or a == b):
                raise RelationError(
                    f"searchsorted: sorted_sequence {fmt_type(sequence)} and values {fmt_type(values)} differ on "
                    f"outer axis {axis}"
                )
    if not is_integral(attrs.dtype):
        raise RelationError(f"searchsorted: dtype must be an integer type, got {attrs.dtype}")
    return TensorType(values.shape, attrs.dtype)


def _searchsorted_impl(args, attrs, out_type):
    sequence, values = (np.asarray(a) for a in args)
    side = "right" if attrs.right else "left"
    if sequence.ndim == 1:
        return as_out(np.searchsorted(sequence, values, side=side), out_type)
    out = np.empty(values.shape, dtype=np.int64)
    for outer in np.ndindex(*values.shape[:-1]):
        out[outer] = np.searchsorted(sequence[outer], values[outer], side=side)
    return as_out(out, out_type)


# ---------------------------------------------------------------- argwhere, unique


def _argwhere_rel(arg_types, attrs):
    (condition,) = tensor_args(arg_types, 1, "argwhere", ["condition"])
    return TensorType((AnyDim(), condition.ndim), "int32")


def _argwhere_impl(args, attrs, out_type):
    return as_out(np.argwhere(np.asarray(args[0])), out_type)


class UniqueOpDef(OpDef):
    """relay.unique(data, is_sorted=True, return_counts=False): the builder's name for `sorted`."""

    def __call__(self, data, is_sorted=True, return_counts=False):
        from ...expr import to_expr

        return make_call(self.name, [to_expr(data)], {"sorted": is_sorted, "return_counts": return_counts})


def _unique_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "unique", ["data"])
    if data.ndim != 1:
        raise RelationError(f"unique: the input must be a 1-D tensor, got {fmt_type(data)}")
    fields = [
        TensorType(data.shape, data.dtype),  # the unique elements, padded to the input's length
        TensorType(data.shape, "int32"),  # index of each one's first occurrence
        TensorType(data.shape, "int32"),  # inverse_indices: position of every input in the unique list
        TensorType((1,), "int32"),  # num_unique
    ]
    if attrs.return_counts:
        fields.append(TensorType(data.shape, "int32"))
    return TupleType(fields)


def _unique_impl(args, attrs, out_type):
    """TVM's padded unique: entries past num_unique (undefined in TVM) are zeros here."""
    x = np.asarray(args[0])
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    if not attrs.sorted:  # in order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = values[order], first[order], counts[order], rank[inverse]

    def padded(a, ty):
        out = np.zeros(x.shape, dtype=np.dtype(ty.dtype))
        out[: a.size] = a
        return out

    fields = out_type.fields
    result = [
        padded(values, fields[0]),
        padded(first, fields[1]),
        as_out(inverse.reshape(x.shape), fields[2]),
        as_out([values.size], fields[3]),
    ]
    if attrs.return_counts:
        result.append(padded(counts, fields[4]))
    return tuple(result)


# ---------------------------------------------------------------- registration


def _register_all():
    register(
        OpDef(
            "argsort",
            1,
            _argsort_rel,
            OpPattern.OPAQUE,
            _argsort_impl,
            attrs=(
                AttrField("axis", -1, to_int),
                AttrField("is_ascend", True, to_bool),
                AttrField("dtype", "int32", to_dtype),
            ),
            te_impl=te_sort("argsort"),
            description="The indices that sort data along an axis (stable; nan sorts as the largest value).",
        )
    )
    register(
        PyOrderOpDef(
            "sort",
            1,
            _sort_rel,
            OpPattern.OPAQUE,
            _sort_impl,
            # TVM's sort shares ArgsortAttrs; its dtype is unused (the values keep the data's dtype).
            attrs=(
                AttrField("axis", -1, to_int),
                AttrField("is_ascend", True, to_bool),
                AttrField("dtype", None, to_optional_dtype),
            ),
            extras={"py_order": ("axis", "is_ascend")},
            te_impl=te_sort("sort"),
            description="data sorted along an axis (nan sorts as the largest value).",
        )
    )
    register(
        OpDef(
            "topk",
            1,
            _topk_rel,
            OpPattern.OPAQUE,
            _topk_impl,
            # TopKAttrs' order, which is also relay.topk(data, k, axis, ret_type, is_ascend, dtype)'s.
            attrs=(
                AttrField("k", 1, to_int),
                AttrField("axis", -1, to_int),
                AttrField("ret_type", "both", str),
                AttrField("is_ascend", False, to_bool),
                AttrField("dtype", "int32", to_dtype),
            ),
            te_impl=te_topk,
            description="The k largest (or smallest) elements along an axis and/or their indices; k < 1 keeps all. "
            "Equal elements come in index order.",
        )
    )
    register(
        OpDef(
            "searchsorted",
            2,
            _searchsorted_rel,
            OpPattern.OPAQUE,
            _searchsorted_impl,
            attrs=(AttrField("right", False, to_bool), AttrField("dtype", "int32", to_dtype)),
            te_impl=te_searchsorted,
            description="Insertion positions of values in the innermost axis of a sorted sequence (numpy's "
            "searchsorted, row by row); the result for an unsorted sequence is unspecified.",
        )
    )
    # The number of rows of the result is data-dependent: no TE lowering (interpreter and python only).
    register(
        OpDef(
            "argwhere",
            1,
            _argwhere_rel,
            OpPattern.OPAQUE,
            _argwhere_impl,
            description="The coordinates of the non-zero elements, one row each (shape (?, rank)).",
        )
    )
    register(
        UniqueOpDef(
            "unique",
            1,
            _unique_rel,
            OpPattern.OPAQUE,
            _unique_impl,
            attrs=(AttrField("sorted", True, to_bool), AttrField("return_counts", False, to_bool)),
            description="(unique, indices, inverse_indices, num_unique[, counts]) of a 1-D tensor, padded to its "
            "length with zeros past num_unique.",
        )
    )


_register_all()
