"""Linear algebra: nn.dense, nn.matmul, nn.batch_matmul, nn.bias_add, nn.batch_flatten."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, compute_dtype, is_any, to_bool, to_dtype, to_int, type_matches, vector_inference
from ..te_support import is_static, require, require_equal
from .te_common import accumulate_dtype, cast

_UNITS_DOC = "number of output units; None means inferred from the weight"


def _reduced_dim(a: TensorType, transpose_a: bool, op_name: str):
    """The input's dimension the product sums over."""
    if a.ndim == 0 or (transpose_a and a.ndim < 2):
        raise RelationError(f"{op_name}: input must have rank >= {2 if transpose_a else 1}, got {fmt_type(a)}")
    return a.shape[-2] if transpose_a else a.shape[-1]


def _units_weight_shape(units, reduce, transpose_b: bool) -> tuple:
    return (units, reduce) if transpose_b else (reduce, units)


def _matmul_weight_inference(op_name: str, fixed_transpose: tuple | None):
    """TVM's MatmulRel assigning an unknown weight its type from the input and `units`."""

    def infer(arg_types, attrs):
        if arg_types[0] is None or attrs.units is None:
            return {}
        a = expect_tensor(arg_types[0], op_name, "input")
        transpose_a, transpose_b = fixed_transpose or (attrs.transpose_a, attrs.transpose_b)
        reduce = _reduced_dim(a, transpose_a, op_name)
        return {1: TensorType(_units_weight_shape(attrs.units, reduce, transpose_b), a.dtype)}

    return infer


def _matmul_rel_for(op_name: str, fixed_transpose: tuple | None):
    """TVM's MatmulRel: dense is matmul with transpose_a=False, transpose_b=True."""

    def rel(arg_types, attrs):
        a = expect_tensor(arg_types[0], op_name, "input")
        b = expect_tensor(arg_types[1], op_name, "weight")
        transpose_a, transpose_b = fixed_transpose or (attrs.transpose_a, attrs.transpose_b)
        reduce = _reduced_dim(a, transpose_a, op_name)
        out_shape = list(a.shape)
        if transpose_a:
            out_shape[-2] = a.shape[-1]
        if attrs.units is not None:
            units = attrs.units
            expected = _units_weight_shape(units, reduce, transpose_b)
            if b.ndim != 2 or not all(dim_eq(x, y) for x, y in zip(b.shape, expected)):
                raise RelationError(
                    f"{op_name}: weight {fmt_type(b)} does not match units={units} for input {fmt_type(a)}; "
                    f"expected shape ({expected[0]}, {expected[1]})"
                )
            out_shape[-1] = units
        else:
            if b.ndim != 2:
                raise RelationError(f"{op_name}: weight must have rank 2, got {fmt_type(b)}")
            b_reduce, b_units = (b.shape[1], b.shape[0]) if transpose_b else (b.shape[0], b.shape[1])
            if not dim_eq(reduce, b_reduce):
                raise RelationError(
                    f"{op_name}: input {fmt_type(a)} and weight {fmt_type(b)} disagree on the reduction "
                    f"dimension ({reduce} vs {b_reduce})"
                )
            out_shape[-1] = b_units
        return TensorType(out_shape, attrs.out_dtype or a.dtype)

    return rel


def _batch_matmul_rel(arg_types, attrs):
    x = expect_tensor(arg_types[0], "nn.batch_matmul", "first argument")
    y = expect_tensor(arg_types[1], "nn.batch_matmul", "second argument")
    if x.ndim != 3 or y.ndim != 3:
        raise RelationError(f"nn.batch_matmul: both arguments must have rank 3, got {fmt_type(x)} and {fmt_type(y)}")
    xb, xi, xk = x.shape[0], *((x.shape[2], x.shape[1]) if attrs.transpose_a else (x.shape[1], x.shape[2]))
    yb, yk, yj = y.shape[0], *((y.shape[2], y.shape[1]) if attrs.transpose_b else (y.shape[1], y.shape[2]))
    if not (dim_eq(xb, yb) or xb == 1 or yb == 1):
        raise RelationError(
            f"nn.batch_matmul: batch dimensions of {fmt_type(x)} and {fmt_type(y)} do not match ({xb} vs {yb})"
        )
    if not dim_eq(xk, yk):
        raise RelationError(
            f"nn.batch_matmul: {fmt_type(x)} and {fmt_type(y)} disagree on the reduction dimension ({xk} vs {yk}); "
            f"transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b}"
        )
    if is_any(xb) or is_any(yb):
        batch = AnyDim()
    else:
        batch = max(xb, yb)
    return TensorType((batch, xi, yj), attrs.out_dtype or x.dtype)


def _bias_axis(data: TensorType, attrs) -> int:
    axis = attrs.axis + data.ndim if attrs.axis < 0 else attrs.axis
    if not 0 <= axis < data.ndim:
        raise RelationError(f"nn.bias_add: axis {attrs.axis} is out of range for data {fmt_type(data)}")
    return axis


def _bias_add_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.bias_add", "data")
    bias = expect_tensor(arg_types[1], "nn.bias_add", "bias")
    expected = TensorType((data.shape[_bias_axis(data, attrs)],), data.dtype)
    if not type_matches(bias, expected):
        raise RelationError(
            f"nn.bias_add: bias must be {fmt_type(expected)} to match axis {attrs.axis} of data "
            f"{fmt_type(data)}, got {fmt_type(bias)}"
        )
    return data


def _batch_flatten_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.batch_flatten", "data")
    if data.ndim == 0:
        raise RelationError(f"nn.batch_flatten: data must have rank >= 1, got {fmt_type(data)}")
    size = 1
    for dim in data.shape[1:]:
        if is_any(dim):
            size = AnyDim()
            break
        size *= dim
    return TensorType((data.shape[0], size), data.dtype)


def _matmul_np(a, b, transpose_a, transpose_b, out_dtype):
    acc = compute_dtype(out_dtype)
    a = a.astype(acc, copy=False)
    b = b.astype(acc, copy=False)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b).astype(out_dtype)


def _dense_impl(args, attrs, out_type):
    return _matmul_np(args[0], args[1], False, True, out_type.dtype)


def _matmul_impl(args, attrs, out_type):
    return _matmul_np(args[0], args[1], attrs.transpose_a, attrs.transpose_b, out_type.dtype)


def _bias_add_impl(args, attrs, out_type):
    data, bias = args
    axis = attrs.axis % data.ndim
    if bias.shape[0] != data.shape[axis]:  # `?` dims: the type relation's promise, kept at run time
        raise ValueError(f"nn.bias_add: bias of length {bias.shape[0]} for axis {axis} of data {data.shape}")
    shape = [1] * data.ndim
    shape[axis] = bias.shape[0]
    return (data + bias.reshape(shape)).astype(data.dtype)


def _batch_flatten_impl(args, attrs, out_type):
    data = args[0]
    return data.reshape(data.shape[0], -1)


# --- TE lowerings (tvm imported inside: importing the registry must not import tvm)


def _matmul_te(a, b, transpose_a, transpose_b, out_dtype):
    """a @ b (rank-2 b) accumulating like the numpy reference; 2-D cases go to topi."""
    from tvm import te, topi

    acc = accumulate_dtype(out_dtype)
    reduced = (
        a.shape[-2] if transpose_a and len(a.shape) > 1 else a.shape[-1],
        b.shape[1] if transpose_b else b.shape[0],
    )
    require_equal(reduced, "matmul: the operands' reduction dimensions differ")
    if len(a.shape) == 2:
        if transpose_b and not transpose_a:
            out = topi.nn.dense(a, b, out_dtype=acc)  # block "T_matmul_NT"
        else:
            out = topi.nn.matmul(a, b, out_dtype=acc, transpose_a=transpose_a, transpose_b=transpose_b)
        return cast(out, out_dtype)
    # Rank 1 or > 2 input (dense over a sequence): one reduction over the leading dims, same block name.
    lead = list(a.shape[:-2]) + [a.shape[-1]] if transpose_a else list(a.shape[:-1])
    units = b.shape[0] if transpose_b else b.shape[1]
    k = te.reduce_axis((0, a.shape[-2] if transpose_a else a.shape[-1]), name="k")

    def element(*index):
        *outer, j = index
        a_index = (*outer[:-1], k, outer[-1]) if transpose_a else (*outer, k)
        b_value = b[j, k] if transpose_b else b[k, j]
        return te.sum(a[a_index].astype(acc) * b_value.astype(acc), axis=k)

    name = f"T_matmul_{'T' if transpose_a else 'N'}{'T' if transpose_b else 'N'}"  # topi's names
    return cast(te.compute(lead + [units], element, name=name, tag="matmul"), out_dtype)


def _dense_te(inputs, attrs, out_type):
    return _matmul_te(inputs[0], inputs[1], False, True, out_type.dtype)


def _matmul_op_te(inputs, attrs, out_type):
    return _matmul_te(inputs[0], inputs[1], attrs.transpose_a, attrs.transpose_b, out_type.dtype)


def _batch_matmul_te(inputs, attrs, out_type):
    from tvm import topi

    acc = accumulate_dtype(out_type.dtype)
    a, b = inputs
    ta, tb = bool(attrs.transpose_a), bool(attrs.transpose_b)
    require_equal(
        (a.shape[1] if ta else a.shape[2], b.shape[2] if tb else b.shape[1]),
        "nn.batch_matmul: the operands' reduction dimensions differ",
    )
    if not (is_static(a.shape[0]) and is_static(b.shape[0])):
        return cast(_symbolic_batch_matmul(a, b, ta, tb, acc), out_type.dtype)
    out = topi.nn.batch_matmul(
        inputs[0], inputs[1], out_dtype=acc, transpose_a=attrs.transpose_a, transpose_b=attrs.transpose_b
    )
    return cast(out, out_type.dtype)


def _static_value(dim):
    return int(dim) if is_static(dim) else None


def _symbolic_batch_matmul(a, b, ta, tb, acc):
    """batch_matmul with a `?` batch dimension (topi needs the two batch dims to be the same
    expression): numpy broadcasting of the batch dims, checked at run time."""
    from tvm import te, tirx

    da, db = a.shape[0], b.shape[0]
    if _static_value(da) == 1 or _static_value(db) == 1:
        batch = db if _static_value(da) == 1 else da
    elif is_static(da) or is_static(db):
        batch = da if is_static(da) else db
        require(
            tirx.Or(da == db, (db if is_static(da) else da) == 1),
            "nn.batch_matmul: the batch dimensions do not broadcast",
        )
    else:
        require(tirx.Or(tirx.Or(da == db, da == 1), db == 1), "nn.batch_matmul: the batch dimensions do not broadcast")
        batch = tirx.Select(da == 1, db, da)
    rows, cols = (a.shape[2] if ta else a.shape[1]), (b.shape[1] if tb else b.shape[2])
    k = te.reduce_axis((0, a.shape[1] if ta else a.shape[2]), name="k")

    def batch_index(dim, n):
        if _static_value(dim) == 1:
            return 0
        if is_static(dim) or dim.same_as(batch):
            return n
        return tirx.Select(dim == 1, tirx.const(0, "int32"), n)

    def element(n, i, j):
        na, nb = batch_index(da, n), batch_index(db, n)
        x = a[na, k, i] if ta else a[na, i, k]
        y = b[nb, j, k] if tb else b[nb, k, j]
        return te.sum(x.astype(acc) * y.astype(acc), axis=k)

    return te.compute((batch, rows, cols), element, name="T_batch_matmul_NT", tag="batch_matmul")


def _bias_add_te(inputs, attrs, out_type):
    from tvm import te

    data, bias = inputs
    axis = attrs.axis % len(data.shape)
    require_equal((data.shape[axis], bias.shape[0]), "nn.bias_add: the bias length differs from the data's axis")
    return te.compute(data.shape, lambda *i: data(*i) + bias[i[axis]], name="T_add", tag="broadcast")


def _batch_flatten_te(inputs, attrs, out_type):
    from tvm import topi

    return topi.nn.flatten(inputs[0])


register(
    NNOpDef(
        "nn.dense",
        2,
        _matmul_rel_for("nn.dense", (False, True)),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _dense_impl,
        te_impl=_dense_te,
        infer_args=_matmul_weight_inference("nn.dense", (False, True)),
        attrs=(
            # No C++ default: TVM's printer always printed it (`units=None`).
            AttrField("units", doc=_UNITS_DOC, convert=to_int),
            AttrField("out_dtype", "", to_dtype, "output dtype; empty means the input dtype"),
        ),
        extras={"builder_defaults": {"units": None}},
        description="data @ weight.T with weight of shape (units, k).",
    )
)
register(
    NNOpDef(
        "nn.matmul",
        2,
        _matmul_rel_for("nn.matmul", None),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _matmul_impl,
        te_impl=_matmul_op_te,
        infer_args=_matmul_weight_inference("nn.matmul", None),
        attrs=(
            AttrField("units", doc=_UNITS_DOC, convert=to_int),
            AttrField("out_dtype", "", to_dtype),
            AttrField("transpose_a", False, to_bool),
            AttrField("transpose_b", False, to_bool),
        ),
        extras={"builder_defaults": {"units": None}},
        description="a @ b with optional transposes; b has rank 2.",
    )
)
register(
    NNOpDef(
        "nn.batch_matmul",
        2,
        _batch_matmul_rel,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _matmul_impl,
        te_impl=_batch_matmul_te,
        attrs=(
            AttrField("out_dtype", "", to_dtype),
            AttrField("transpose_a", False, to_bool),
            AttrField("transpose_b", False, to_bool),
        ),
        # relay.nn.batch_matmul defaulted to transpose_b=True while the C++ attribute defaults to
        # False; that is why TVM's printer shows `transpose_b=True` on every builder-made call.
        extras={"builder_defaults": {"transpose_b": True}},
        description="Batched x @ y over rank-3 tensors (batch dimension 1 broadcasts).",
    )
)
register(
    NNOpDef(
        "nn.bias_add",
        2,
        _bias_add_rel,
        OpPattern.BROADCAST,
        _bias_add_impl,
        te_impl=_bias_add_te,
        infer_args=vector_inference("nn.bias_add", (1,), _bias_axis),
        attrs=(AttrField("axis", 1, to_int, "the axis of data the 1-D bias runs along"),),
        description="data + bias broadcast along axis.",
    )
)
register(
    NNOpDef(
        "nn.batch_flatten",
        1,
        _batch_flatten_rel,
        OpPattern.INJECTIVE,
        _batch_flatten_impl,
        te_impl=_batch_flatten_te,
        description="Reshape to (batch, product of the other dimensions).",
    )
)
