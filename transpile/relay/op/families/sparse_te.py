"""TE lowerings of sparse_reshape (small reductions over the two shapes, then one division per coordinate)
and sparse_to_dense (per output element, the last index that names it).

Everything is computed in int64 with wrapping products and sums (as the numpy reference's), and
every divisor is forced positive, so an invalid input can never trap: the run-time value checks
(te_support.require_values) reject it with the reference's messages instead. tvm is imported
inside the functions.
"""

from __future__ import annotations

from .te_support import EMPTY_GUARDED_ATTR, cast, checked, is_static, require_equal, require_values
from .te_wrapping import wrapping_multiply, wrapping_prod_reducer, wrapping_sum_reducer

__all__ = ["te_sparse_reshape", "te_sparse_to_dense"]

_WORK = "int64"


def te_sparse_reshape(inputs, attrs, out_type):
    from tvm import te, tirx

    indices, prev_shape, new_shape = inputs
    rows, columns = indices.shape
    prev_rank, new_rank = prev_shape.shape[0], new_shape.shape[0]
    require_equal([columns, prev_rank], "sparse_reshape: sparse_indices needs one column per dimension of prev_shape")
    one, zero, minus_one = (tirx.const(v, _WORK) for v in (1, 0, -1))

    def prev(k):
        return prev_shape[k].astype(_WORK)

    def new(j):
        return new_shape[j].astype(_WORK)

    def product(extent, factor, name):
        """A 0-d tensor: the wrapping product of factor(m) for m in [0, extent)."""
        m = te.reduce_axis((0, extent), name=f"{name}_m")
        return te.compute((), lambda: wrapping_prod_reducer()(factor(m), axis=m), name=name)

    total = product(prev_rank, prev, "T_sparse_reshape_total")
    known = product(new_rank, lambda m: tirx.Select(new(m) == minus_one, one, new(m)), "T_sparse_reshape_known")
    m = te.reduce_axis((0, new_rank), name="inferred_m")
    inferred = te.compute(
        (), lambda: te.sum(tirx.Select(new(m) == minus_one, one, zero), axis=m), name="T_sparse_reshape_inferred"
    )
    positive_known = tirx.max(known(), one)
    resolved = te.compute(
        (new_rank,),
        lambda j: tirx.Select(new(j) == minus_one, tirx.floordiv(total(), positive_known), new(j)),
        name="T_sparse_reshape_resolved",
    )

    # The reference's checks, in its order (the first failing one names the error).
    checks = [
        require_values((prev_rank,), lambda k: prev(k) >= zero, "sparse_reshape: prev_shape must hold sizes >= 0"),
        require_values(
            (new_rank,),
            lambda j: tirx.And(new(j) >= minus_one, inferred() <= one),
            "sparse_reshape: new_shape must hold sizes >= 0 and at most one -1",
        ),
        require_values(
            (),
            lambda: tirx.Select(
                inferred() == zero,
                known() == total(),
                tirx.And(known() > zero, tirx.floormod(total(), positive_known) == zero),
            ),
            "sparse_reshape: new_shape does not hold the number of elements of prev_shape",
        ),
    ]

    def all_checked(value):
        for check in reversed(checks):
            value = checked(check, value)
        return value

    def stride(extent, dims, name):
        """Row-major strides of a dense shape: stride[k] = product of dims(m) for m > k."""
        m = te.reduce_axis((0, extent), name=f"{name}_m")
        return te.compute(
            (extent,),
            lambda k: wrapping_prod_reducer()(tirx.Select(m > k, dims(m), one), axis=m),
            name=name,
        )

    prev_strides = stride(prev_rank, prev, "T_sparse_reshape_prev_strides")
    new_strides = stride(new_rank, lambda j: resolved[j], "T_sparse_reshape_new_strides")
    k = te.reduce_axis((0, columns), name="flat_k")
    flat = te.compute(
        (rows,),
        lambda i: wrapping_sum_reducer()(wrapping_multiply(indices[i, k].astype(_WORK), prev_strides[k]), axis=k),
        name="T_sparse_reshape_flat",
    )

    # TVM's shortcut: when the shapes are equal the indices pass through unchanged.
    k = te.reduce_axis((0, prev_rank), name="same_k")
    mismatches = te.compute(
        (),
        # (if_then_else, not Select: the position past the end of new_shape must not be read)
        lambda: te.sum(tirx.if_then_else(k < new_rank, tirx.Select(prev(k) == resolved[k], zero, one), one), axis=k),
        name="T_sparse_reshape_mismatches",
    )
    same = tirx.And(prev_rank == new_rank, mismatches() == zero) if not _differ(prev_rank, new_rank) else None

    def coordinate(i, j):
        # TVM's digits of the flat position: (flat mod stride[j-1]) // stride[j], with zero strides as 1.
        divisor = tirx.max(new_strides[j], one)
        modulus = tirx.max(new_strides[tirx.max(j - 1, 0)], one)
        remainder = tirx.Select(j > 0, tirx.floormod(flat[i], modulus), flat[i])
        value = tirx.floordiv(remainder, divisor).astype(indices.dtype)
        if same is not None:
            value = tirx.if_then_else(same, indices[i, tirx.min(j, columns - 1)], value)
        return all_checked(value)

    index_type, shape_type = out_type.fields
    coords = te.compute((rows, new_rank), coordinate, name="T_sparse_reshape_indices")
    shape = te.compute(
        (new_rank,), lambda j: all_checked(resolved[j].astype(shape_type.dtype)), name="T_sparse_reshape_shape"
    )
    return [coords, shape]


def _differ(a, b) -> bool:
    """Whether two extents are known (static) to differ."""
    return is_static(a) and is_static(b) and int(a) != int(b)


def te_sparse_to_dense(inputs, attrs, out_type):
    from tvm import te, tirx

    indices, values, default = inputs
    shape = [int(d) for d in attrs.output_shape]
    count = indices.shape[0] if len(indices.shape) else 1
    columns = len(shape)
    if len(indices.shape) == 2:
        require_equal([indices.shape[1], columns], "sparse_to_dense: sparse_indices must have a column per output axis")
    if len(values.shape) == 1:
        require_equal([values.shape[0], count], "sparse_to_dense: sparse_values must hold one value per index")

    def index(i, c):
        element = indices[i, c] if len(indices.shape) == 2 else indices[i] if len(indices.shape) == 1 else indices()
        return element.astype(_WORK)

    check = require_values(
        (count, columns),
        lambda i, c: tirx.And(index(i, c) >= 0, index(i, c) < _extent(shape, c)),
        "sparse_to_dense: an index of sparse_indices is out of range for the output shape",
    )
    i = te.reduce_axis((0, count), name="i")
    none = tirx.const(-1, _WORK)

    def last_writer(*position):
        names_it = tirx.all(*[index(i, c) == position[c].astype(_WORK) for c in range(columns)])
        return te.max(tirx.Select(names_it, i.var.astype(_WORK), none), axis=i)

    # An empty index list (a `?` count of 0 at run time) must read as "no writer", not as the
    # uninitialized result of a reduction that never ran.
    writer = te.compute(shape, last_writer, name="T_sparse_to_dense_writer", attrs={EMPTY_GUARDED_ATTR: 1})
    dtype = str(out_type.dtype)
    fill = cast(default(), dtype)

    def body(*position):
        who = tirx.Select(count > 0, writer(*position), none) if not is_static(count) else writer(*position)
        if is_static(count) and int(count) == 0:
            return checked(check, fill)
        source = tirx.max(who, tirx.const(0, _WORK))
        value = cast(values[source] if len(values.shape) == 1 else values(), dtype)
        return checked(check, tirx.if_then_else(who >= 0, value, fill))

    return te.compute(shape, body, name="T_sparse_to_dense")


def _extent(shape, c):
    """The extent of output axis `c` (a loop variable) among the static `shape`."""
    from tvm import tirx

    extent = tirx.const(shape[-1], _WORK)
    for axis in range(len(shape) - 2, -1, -1):
        extent = tirx.Select(c == axis, tirx.const(shape[axis], _WORK), extent)
    return extent
