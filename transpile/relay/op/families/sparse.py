"""Sparse-tensor operators: sparse_reshape and sparse_to_dense (TVM's transform.cc), and segment_sum,
which TVM's Python builder composed from registered operators (so it is a builder here too).

sparse_reshape(sparse_indices, prev_shape, new_shape) re-indexes the COO coordinates of a sparse
tensor of dense shape `prev_shape` for the dense shape `new_shape` (one -1 allowed, inferred as
TensorFlow's SparseReshape does). Its result *shapes* are static ((N, len(new_shape)) and
(len(new_shape),)); only the values depend on the inputs, so every backend compiles it.
Indices are not range-checked (TVM's tests feed indices outside prev_shape and expect its digits
of the flat position); an invalid pair of shapes (a size below -1, two -1s, a different number
of elements), which TVM did not check either, is an error on every backend.
"""

from __future__ import annotations

import numpy as np

from ...ty import TensorType, TupleType
from ..common import dim_eq, fmt_type
from ..registry import REQUIRED, AttrField, OpDef, OpPattern, RelationError, make_call, register
from .sparse_te import te_sparse_reshape, te_sparse_to_dense
from .support import as_out, is_int, quiet, tensor_args, to_int_list

__all__ = ["segment_sum", "sparse_reshape_plan"]


# ---------------------------------------------------------------- sparse_reshape


def _sparse_reshape_rel(arg_types, attrs):
    names = ["sparse_indices", "prev_shape", "new_shape"]
    indices, prev_shape, new_shape = tensor_args(arg_types, 3, "sparse_reshape", names)
    for name, ty, rank in zip(names, (indices, prev_shape, new_shape), (2, 1, 1)):
        if not is_int(ty.dtype):
            raise RelationError(f"sparse_reshape: {name} must be a tensor of signed integers, got {fmt_type(ty)}")
        if ty.ndim != rank:
            raise RelationError(f"sparse_reshape: {name} must be a {rank}-D tensor, got {fmt_type(ty)}")
    if not dim_eq(indices.shape[1], prev_shape.shape[0]):
        raise RelationError(
            f"sparse_reshape: sparse_indices {fmt_type(indices)} must have one column per dimension of "
            f"prev_shape {fmt_type(prev_shape)}"
        )
    return TupleType(
        [
            TensorType((indices.shape[0], new_shape.shape[0]), indices.dtype),
            TensorType(new_shape.shape, new_shape.dtype),
        ]
    )


def sparse_reshape_plan(prev_shape, new_shape):
    """(the dense shape new_shape stands for, with its -1 inferred) for two 1-D int64 arrays; raises
    ValueError for an invalid pair, with the messages the TE lowering's run-time checks give."""
    prev_shape = np.asarray(prev_shape, dtype=np.int64)
    new_shape = np.asarray(new_shape, dtype=np.int64)
    if (prev_shape < 0).any():
        raise ValueError("sparse_reshape: prev_shape must hold sizes >= 0")
    inferred = new_shape == -1
    if (new_shape < -1).any() or inferred.sum() > 1:
        raise ValueError("sparse_reshape: new_shape must hold sizes >= 0 and at most one -1")
    with quiet():  # int64 products wrap as the kernels' do
        total = np.prod(prev_shape, dtype=np.int64)
        known = np.prod(np.where(inferred, 1, new_shape), dtype=np.int64)
    if inferred.any() and (known <= 0 or total % known != 0) or not inferred.any() and known != total:
        raise ValueError("sparse_reshape: new_shape does not hold the number of elements of prev_shape")
    return np.where(inferred, total // max(int(known), 1), new_shape)


def _sparse_reshape_impl(args, attrs, out_type):
    indices, prev_shape, new_shape = (np.asarray(a).astype(np.int64) for a in args)
    if indices.shape[1] != prev_shape.size:
        raise ValueError(
            f"sparse_reshape: sparse_indices has {indices.shape[1]} columns for the {prev_shape.size} dimensions of prev_shape"
        )
    resolved = sparse_reshape_plan(prev_shape, new_shape)
    index_type, shape_type = out_type.fields
    if np.array_equal(prev_shape, resolved):  # TVM's shortcut: the indices pass through unchanged
        return as_out(indices, index_type), as_out(resolved, shape_type)
    with quiet():  # int64 products and sums wrap as the kernel's do
        flat = (indices * _row_major_strides(prev_shape)).sum(axis=1, dtype=np.int64)
        # TVM's digits: coordinate j = (flat mod stride[j-1]) // stride[j], coordinate 0 = flat // stride[0].
        # A zero stride (a shape with no elements, where no index is in range) counts as 1.
        divisors = np.maximum(_row_major_strides(resolved), 1)
    remainders = flat[:, None].repeat(divisors.size, axis=1)
    remainders[:, 1:] %= divisors[None, :-1]
    return as_out(remainders // divisors[None, :], index_type), as_out(resolved, shape_type)


def _row_major_strides(shape: np.ndarray) -> np.ndarray:
    """The element stride of each axis of a dense row-major tensor of this shape (the last is 1)."""
    strides = np.ones(shape.size, dtype=np.int64)
    if shape.size > 1:
        strides[:-1] = np.cumprod(shape[:0:-1], dtype=np.int64)[::-1]
    return strides


# ---------------------------------------------------------------- sparse_to_dense


def _sparse_to_dense_rel(arg_types, attrs):
    names = ["sparse_indices", "sparse_values", "default_value"]
    indices, values, default = tensor_args(arg_types, 3, "sparse_to_dense", names)
    shape = attrs.output_shape
    if not is_int(indices.dtype) or indices.ndim > 2:
        raise RelationError(
            f"sparse_to_dense: sparse_indices must be a 0-D, 1-D or 2-D tensor of integers, got {fmt_type(indices)}"
        )
    if values.ndim > 1:
        raise RelationError(f"sparse_to_dense: sparse_values must be a 0-D or 1-D tensor, got {fmt_type(values)}")
    if default.ndim != 0:
        raise RelationError(f"sparse_to_dense: default_value must be a scalar, got {fmt_type(default)}")
    if not shape or min(shape) < 0:
        raise RelationError(f"sparse_to_dense: output_shape must be sizes >= 0, got {list(shape)}")
    columns = indices.shape[1] if indices.ndim == 2 else 1
    if not dim_eq(columns, len(shape)):
        raise RelationError(
            f"sparse_to_dense: sparse_indices {fmt_type(indices)} does not index an output of shape {list(shape)}"
        )
    count = indices.shape[0] if indices.ndim else 1
    if values.ndim == 1 and not dim_eq(values.shape[0], count):
        raise RelationError(
            f"sparse_to_dense: {fmt_type(values)} holds a value per index of {fmt_type(indices)}, or must be a scalar"
        )
    return TensorType(shape, values.dtype)


def _sparse_to_dense_impl(args, attrs, out_type):
    indices, values, default = (np.asarray(a) for a in args)
    shape = tuple(attrs.output_shape)
    coords = indices.astype(np.int64).reshape(-1, len(shape) if indices.ndim == 2 else 1)
    if values.ndim == 1 and values.shape[0] != coords.shape[0]:
        raise ValueError(f"sparse_to_dense: {values.shape[0]} values for {coords.shape[0]} indices")
    if ((coords < 0) | (coords >= np.array(shape))).any():
        raise ValueError(
            f"sparse_to_dense: an index of sparse_indices is out of range for the output shape {list(shape)}"
        )
    out = np.full(shape, as_out(default, out_type))
    values = np.broadcast_to(as_out(values, out_type), coords.shape[:1])
    # Of repeated indices the last one wins, as the kernel (and TVM's sequential loop) write them.
    flat = np.ravel_multi_index(tuple(coords.T), shape) if coords.size else np.zeros(0, np.int64)
    positions, last = np.unique(flat[::-1], return_index=True)
    out.reshape(-1)[positions] = values[::-1][last]
    return out


class SparseToDenseOpDef(OpDef):
    """relay.sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0): TVM's argument
    order (output_shape, an attribute, comes second); a default_value of 0 is an int32 constant, as in TVM."""

    def __call__(self, sparse_indices, output_shape, sparse_values, default_value=0):
        from ...expr import Constant, Expr, const, to_expr

        if isinstance(output_shape, Constant):
            output_shape = output_shape.data.tolist()
        elif isinstance(output_shape, Expr):
            from ....errors import UnsupportedFeatureError

            raise UnsupportedFeatureError(
                "sparse_to_dense with a computed output_shape", "relay", detail="output_shape must be a list of ints"
            )
        default = const(0) if isinstance(default_value, int) and default_value == 0 else to_expr(default_value)
        inputs = [to_expr(sparse_indices), to_expr(sparse_values), default]
        return make_call(self.name, inputs, {"output_shape": output_shape})


# ---------------------------------------------------------------- segment_sum (a composition)


def segment_sum(data, segment_ids, num_segments=None):
    """relay.segment_sum: result[segment_ids[i]] += data[i] over the rows of `data`.

    Built, as TVM's Python builder did, from registered operators: a scatter_elements(add) of the
    rows into zeros of shape (num_segments, *data.shape[1:]). num_segments may be an int (static
    result shape: cpp compiles it), an expression, or None (max(segment_ids) + 1: the result's
    first dimension is then a run-time value, which only the interpreter and python backends run).
    TVM sized its zeros with dyn.zeros and spread the ids with dyn.tile; here only a computed
    count needs a dynamic operator (dyn.broadcast_to), so a static num_segments leaves none.
    Ids outside [-num_segments, num_segments) are skipped (scatter_elements' rule).
    """
    from ...expr import Expr, Tuple, const, to_expr

    data, segment_ids = to_expr(data), to_expr(segment_ids)
    # One row of zeros shaped like a row of data, (1, *data.shape[1:]): a kept-dims sum of zeros.
    zero_row = make_call("sum", [make_call("zeros_like", [data])], {"axis": [0], "keepdims": True})
    if num_segments is None or isinstance(num_segments, Expr):
        if num_segments is None:
            count = make_call("max", [segment_ids], {"axis": [0]})
            count = make_call("add", [make_call("cast", [count], {"dtype": "int64"}), const(1, "int64")])
        else:
            count = make_call("cast", [num_segments], {"dtype": "int64"})
        # (count, *data.shape[1:]) as a shape tensor, as TVM built it, for dyn.broadcast_to.
        row_shape = make_call(
            "strided_slice",
            [make_call("shape_of", [data], {"dtype": "int64"})],
            {"begin": [1], "end": [-1], "slice_mode": "size"},
        )
        shape = make_call(
            "concatenate", [Tuple([make_call("reshape", [count], {"newshape": [1]}), row_shape])], {"axis": 0}
        )
        rows = make_call("dyn.broadcast_to", [zero_row, shape])
    else:
        rows = make_call("repeat", [zero_row], {"repeats": int(num_segments), "axis": 0})
    # The segment id of every element of data: the ids broadcast along the trailing axes, by adding
    # them to the reversed (transposed) zero row and transposing back, which needs no rank.
    id_row = make_call("cast_like", [zero_row, segment_ids])
    spread = make_call("transpose", [make_call("add", [make_call("transpose", [id_row]), segment_ids])])
    return make_call("scatter_elements", [rows, spread, data], {"axis": 0, "reduction": "add"})


# ---------------------------------------------------------------- registration


register(
    SparseToDenseOpDef(
        "sparse_to_dense",
        3,
        _sparse_to_dense_rel,
        OpPattern.OPAQUE,
        _sparse_to_dense_impl,
        attrs=(AttrField("output_shape", REQUIRED, to_int_list),),
        te_impl=te_sparse_to_dense,
        extras={"input_names": ("sparse_indices", "sparse_values", "default_value"), "support_level": 3},
        description="A dense tensor of output_shape holding sparse_values at sparse_indices and default_value "
        "elsewhere (the last of repeated indices wins).",
    )
)
register(
    OpDef(
        "sparse_reshape",
        3,
        _sparse_reshape_rel,
        # TVM marked it injective; its lowering reduces over the shapes and checks values, so it
        # is a kernel of its own.
        OpPattern.OPAQUE,
        _sparse_reshape_impl,
        te_impl=te_sparse_reshape,
        extras={"tuple_outputs": 2, "input_names": ("sparse_indices", "prev_shape", "new_shape"), "support_level": 3},
        description="The COO indices of a sparse tensor reshaped from prev_shape to new_shape (one -1 inferred), "
        "and new_shape with its -1 resolved.",
    )
)
