"""Tensor creation and broadcasting operators: zeros, ones, full, arange, one_hot, shape_of, broadcast_to..."""

from __future__ import annotations

import math

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import broadcast_shapes, fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, REQUIRED, make_call, register
from .support import (
    as_out,
    constant_data,
    expect_arity,
    is_any,
    is_integral,
    tensor_args,
    to_dtype,
    to_int,
    to_int_list,
    to_optional_dtype,
)
from .te_support import broadcast_compute, broadcast_index, has_zero_extent, is_float_dtype, out_shape, require, static_shape
from .te_support import cast as te_cast
from .te_support import const as te_const

__all__ = ["ArangeOpDef"]


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


# ---------------------------------------------------------------- zeros, ones, full, full_like


def _init_rel(op_name):
    def rel(arg_types, attrs):
        expect_arity(arg_types, 0, op_name)
        return TensorType(attrs.shape, attrs.dtype)

    return rel


def _fill_impl(value):
    def impl(args, attrs, out_type):
        return as_out(np.full(out_type.shape, value), out_type)

    return impl


def _full_rel(arg_types, attrs):
    (fill,) = tensor_args(arg_types, 1, "full", ["fill_value"])
    if fill.ndim != 0:
        raise RelationError(f"full: the fill value must be a scalar, got {fmt_type(fill)}")
    return TensorType(attrs.shape, attrs.dtype or fill.dtype)


def _full_impl(args, attrs, out_type):
    return as_out(np.full(out_type.shape, np.asarray(args[0])), out_type)


def _full_like_rel(arg_types, attrs):
    data, fill = tensor_args(arg_types, 2, "full_like", ["data", "fill_value"])
    if fill.ndim != 0:
        raise RelationError(f"full_like: the fill value must be a scalar, got {fmt_type(fill)}")
    return TensorType(data.shape, data.dtype)


def _full_like_impl(args, attrs, out_type):
    return as_out(np.full(np.shape(args[0]), np.asarray(args[1])), out_type)


# ---------------------------------------------------------------- arange


class ArangeOpDef(OpDef):
    """relay.arange(start, stop=None, step=None, dtype="float32").

    Like TVM, constant bounds are also kept as attributes (their values), so that they give a static
    length; a bound computed at run time is None there (the relation then gives a `?` length).
    Attributes never hold the expressions themselves: backends and the printer see plain values.
    """

    def __call__(self, start, stop=None, step=None, dtype="float32"):
        from ...expr import Expr, const

        def scalar(value):
            return value if isinstance(value, Expr) else const(value, dtype=dtype)

        if stop is None:
            start, stop = 0, start
        if step is None:
            step = 1
        start, stop, step = scalar(start), scalar(stop), scalar(step)
        attrs = {"start": _bound_attr(start), "stop": _bound_attr(stop), "step": _bound_attr(step), "dtype": dtype}
        return make_call(self.name, [start, stop, step], attrs)


def _bound_attr(bound):
    """The value of a scalar Constant bound (an int or float; a number stays itself), else None."""
    if isinstance(bound, (int, float)) and not isinstance(bound, bool):
        return bound
    data = constant_data(bound)
    if isinstance(data, (np.ndarray, np.generic)) and data.size == 1:
        return np.asarray(data).reshape(()).item()
    return None


def _constant_value(value):
    """A bound given as a Constant (or as a literal, when printed text is parsed back), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    data = constant_data(value)
    if isinstance(data, (np.ndarray, np.generic)) and data.size == 1:
        return float(np.asarray(data).reshape(()).item())
    return None


def _arange_length(start, stop, step):
    if step == 0:
        raise RelationError("arange: step must not be 0")
    return math.ceil((stop - start) / step)


def _arange_rel(arg_types, attrs):
    expect_arity(arg_types, 3, "arange")
    expected = TensorType((), attrs.dtype)
    for name, ty in zip(("start", "stop", "step"), arg_types):
        if ty != expected:
            raise RelationError(f"arange: {name} must be a {fmt_type(expected)} scalar, got {fmt_type(ty)}")
    bounds = [_constant_value(attrs[name]) for name in ("start", "stop", "step")]
    if any(b is None for b in bounds):
        return TensorType((AnyDim(),), attrs.dtype)
    length = _arange_length(*bounds)
    if length <= 0:
        raise RelationError(f"arange: start={bounds[0]}, stop={bounds[1]}, step={bounds[2]} give an empty range")
    return TensorType((length,), attrs.dtype)


def _arange_impl(args, attrs, out_type):
    start, stop, step = (np.asarray(a).reshape(()).item() for a in args)
    length = max(_arange_length(float(start), float(stop), float(step)), 0)
    return as_out(start + step * np.arange(length), out_type)


# ---------------------------------------------------------------- one_hot, shape_of, ndarray_size


def _one_hot_rel(arg_types, attrs):
    indices, on_value, off_value = tensor_args(arg_types, 3, "one_hot", ["indices", "on_value", "off_value"])
    if attrs.depth <= 0:
        raise RelationError(f"one_hot: depth must be positive, got {attrs.depth}")
    ndim = indices.ndim + 1
    axis = indices.ndim if attrs.axis == -1 else attrs.axis
    if not 0 <= axis < ndim:
        raise RelationError(f"one_hot: axis {attrs.axis} is out of range for indices {fmt_type(indices)}")
    shape = list(indices.shape)
    shape.insert(axis, attrs.depth)
    return TensorType(shape, attrs.dtype or on_value.dtype)


def _one_hot_impl(args, attrs, out_type):
    indices, on_value, off_value = (np.asarray(a) for a in args)
    axis = indices.ndim if attrs.axis == -1 else attrs.axis
    depth_shape = [1] * (indices.ndim + 1)
    depth_shape[axis] = attrs.depth
    hot = np.expand_dims(indices, axis) == np.arange(attrs.depth).reshape(depth_shape)
    return as_out(np.where(hot, on_value, off_value), out_type)


def _shape_of_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "shape_of", ["data"])
    return TensorType((data.ndim,), attrs.dtype)


def _shape_of_impl(args, attrs, out_type):
    return as_out(np.shape(args[0]), out_type)


def _ndarray_size_rel(arg_types, attrs):
    tensor_args(arg_types, 1, "ndarray_size", ["data"])
    return TensorType((), attrs.dtype)


def _ndarray_size_impl(args, attrs, out_type):
    return as_out(np.size(args[0]), out_type)


# ---------------------------------------------------------------- broadcast_to, collapse_sum_like


def _broadcast_to_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "broadcast_to", ["data"])
    target = tuple(attrs.shape)
    if broadcast_shapes(data.shape, target, "broadcast_to") != target:
        raise RelationError(f"broadcast_to: cannot broadcast {fmt_type(data)} to {_shape_text(target)}")
    return TensorType(target, data.dtype)


def _broadcast_to_impl(args, attrs, out_type):
    return as_out(np.broadcast_to(np.asarray(args[0]), out_type.shape), out_type)


def _broadcast_to_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "broadcast_to_like", ["data", "broadcast_type"])
    if data.dtype != like.dtype:
        raise RelationError(f"broadcast_to_like: dtypes must agree, got {fmt_type(data)} and {fmt_type(like)}")
    if broadcast_shapes(data.shape, like.shape, "broadcast_to_like") != like.shape:
        raise RelationError(f"broadcast_to_like: cannot broadcast {fmt_type(data)} to {fmt_type(like)}")
    return TensorType(like.shape, like.dtype)


def _broadcast_to_like_impl(args, attrs, out_type):
    return as_out(np.broadcast_to(np.asarray(args[0]), np.shape(args[1])), out_type)


def _collapse_sum_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "collapse_sum_like", ["data", "collapse_type"])
    if data.dtype != like.dtype:
        raise RelationError(f"collapse_sum_like: dtypes must agree, got {fmt_type(data)} and {fmt_type(like)}")
    if broadcast_shapes(data.shape, like.shape, "collapse_sum_like") != data.shape:
        raise RelationError(f"collapse_sum_like: {fmt_type(like)} does not broadcast to {fmt_type(data)}")
    return TensorType(like.shape, like.dtype)


def collapse_sum(x: np.ndarray, shape) -> np.ndarray:
    """Sum `x` down to `shape`, the inverse of broadcasting `shape` up to x.shape."""
    lead = x.ndim - len(shape)
    if lead:
        x = x.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and x.shape[i] != 1)
    if axes:
        x = x.sum(axis=axes, keepdims=True)
    return x


def _collapse_sum_like_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    if np.broadcast_shapes(x.shape, np.shape(args[1])) != x.shape:  # the relation's promise, for `?` dims
        raise ValueError(f"collapse_sum_like: {np.shape(args[1])} does not broadcast to {x.shape}")
    return as_out(collapse_sum(x, np.shape(args[1])).astype(x.dtype), out_type)


def _dyn_broadcast_to_rel(arg_types, attrs):
    data, shape = tensor_args(arg_types, 2, "dyn.broadcast_to", ["data", "shape"])
    if shape.ndim != 1 or is_any(shape.shape[0]):
        raise RelationError(f"dyn.broadcast_to: shape must be a 1-D tensor of static length, got {fmt_type(shape)}")
    if not is_integral(shape.dtype):
        raise RelationError(f"dyn.broadcast_to: shape must be a tensor of integers, got {fmt_type(shape)}")
    return TensorType([AnyDim()] * shape.shape[0], data.dtype)


def _dyn_broadcast_to_impl(args, attrs, out_type):
    shape = tuple(int(d) for d in np.asarray(args[1]).reshape(-1))
    return as_out(np.broadcast_to(np.asarray(args[0]), shape), out_type)


# ---------------------------------------------------------------- TE lowerings (te_impl)


def _te_fill(value):
    def te_impl(inputs, attrs, out_type):
        from tvm import te

        fill = te_const(value, out_type.dtype)
        return te.compute(static_shape(out_type, "fill"), lambda *idx: fill, name="T_fill")

    return te_impl


def _te_full(inputs, attrs, out_type):
    from tvm import te

    fill = inputs[0]
    return te.compute(static_shape(out_type, "full"), lambda *idx: te_cast(fill(), out_type.dtype), name="T_full")


def _te_full_like(inputs, attrs, out_type):
    from tvm import te

    data, fill = inputs
    return te.compute(data.shape, lambda *idx: te_cast(fill(), out_type.dtype), name="T_full_like")


def _te_arange(inputs, attrs, out_type):
    from tvm import te

    start, _, step = inputs
    # The length is static only when the bounds are constants (the type relation then knows it).
    (length,) = static_shape(out_type, "arange")
    # numpy_impl computes start + step * arange(n) in float64 (int64 for integers), then casts.
    work = "float64" if is_float_dtype(out_type.dtype) else "int64"

    def body(i):
        value = start().astype(work) + step().astype(work) * i.astype(work)
        return te_cast(value, out_type.dtype)

    return te.compute((length,), body, name="T_arange")


def _te_one_hot(inputs, attrs, out_type):
    from tvm import te, tirx

    indices, on_value, off_value = inputs
    axis = len(indices.shape) if attrs.axis == -1 else attrs.axis
    dtype = out_type.dtype

    def body(*idx):
        depth_index = idx[axis]
        index = indices(*(idx[:axis] + idx[axis + 1 :]))
        if is_float_dtype(str(indices.dtype)):
            hot = index == depth_index.astype(str(indices.dtype))
        else:
            hot = index.astype("int64") == depth_index.astype("int64")
        return tirx.Select(hot, te_cast(on_value(), dtype), te_cast(off_value(), dtype))

    return te.compute(static_shape(out_type, "one_hot"), body, name="T_one_hot")


def _te_shape_of(inputs, attrs, out_type):
    from tvm import te, tirx

    dims = [d.astype(out_type.dtype) if hasattr(d, "astype") else te_const(d, out_type.dtype) for d in inputs[0].shape]
    if not dims:
        return te.compute((0,), lambda i: te_const(0, out_type.dtype), name="T_shape_of")

    def body(i):
        value = dims[-1]
        for k in range(len(dims) - 2, -1, -1):
            value = tirx.Select(i == k, dims[k], value)
        return value

    return te.compute((len(dims),), body, name="T_shape_of")


def _te_ndarray_size(inputs, attrs, out_type):
    from tvm import te

    size = te_const(1, "int64")
    for d in inputs[0].shape:
        size = size * d.astype("int64")
    return te.compute((), lambda: size.astype(out_type.dtype), name="T_ndarray_size")


def _te_broadcast_to(inputs, attrs, out_type):
    return broadcast_compute([inputs[0]], out_type, lambda v: v, "T_broadcast_to")


def _te_broadcast_to_like(inputs, attrs, out_type):
    from tvm import te, tirx

    data, like = inputs
    # The relation's promise for `?` dims: every data dimension is the like's or 1.
    for axis, (dim, target) in enumerate(zip(reversed(data.shape), reversed(like.shape))):
        require(tirx.Or(dim == target, dim == 1), f"broadcast_to_like: dimension -{axis + 1} does not broadcast")
    shape = out_shape(out_type, [data, like], "broadcast_to_like")
    return te.compute(shape, lambda *i: data(*broadcast_index(data, i, shape)), name="T_broadcast_to_like")


def _te_collapse_sum_like(inputs, attrs, out_type):
    from tvm import te, tirx

    x = inputs[0]
    target = static_shape(out_type, "collapse_sum_like")
    lead = len(x.shape) - len(target)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(target) if d == 1 and int(x.shape[lead + i]) != 1]
    rvars = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    if str(x.dtype) == "bool":
        # numpy counts the trues and casts the count back to bool: `any`.
        reducer = te.comm_reducer(lambda a, b: tirx.Or(a, b), lambda t: tirx.const(False, t), name="any")
    else:
        reducer = te.sum

    if has_zero_extent(x, axes):
        zero = te_const(0, str(x.dtype))
        return te.compute(target, lambda *idx: zero, name="T_collapse_sum")

    def body(*idx):
        full = [rvars[a] if a in rvars else idx[a - lead] for a in range(len(x.shape))]
        return reducer(x(*full), axis=[rvars[a] for a in axes]) if axes else x(*full)

    return te.compute(target, body, name="T_collapse_sum")


# ---------------------------------------------------------------- registration


def _register_all():
    init_attrs = (AttrField("shape", REQUIRED, to_int_list), AttrField("dtype", REQUIRED, to_dtype))
    for name, value in (("zeros", 0), ("ones", 1)):
        register(
            OpDef(
                name,
                0,
                _init_rel(name),
                OpPattern.ELEMWISE,
                _fill_impl(value),
                attrs=init_attrs,
                te_impl=_te_fill(value),
            )
        )
    register(
        OpDef(
            "full",
            1,
            _full_rel,
            OpPattern.ELEMWISE,
            _full_impl,
            attrs=(AttrField("shape", REQUIRED, to_int_list), AttrField("dtype", None, to_optional_dtype)),
            te_impl=_te_full,
        )
    )
    register(OpDef("full_like", 2, _full_like_rel, OpPattern.ELEMWISE, _full_like_impl, te_impl=_te_full_like))
    register(
        ArangeOpDef(
            "arange",
            3,
            _arange_rel,
            OpPattern.OPAQUE,
            _arange_impl,
            attrs=(
                AttrField("start", None, _bound_attr, "the start input's value when it is a constant (a static length)"),
                AttrField("stop", None, _bound_attr),
                AttrField("step", None, _bound_attr),
                AttrField("dtype", "float32", to_dtype),
            ),
            extras={"always_print": ("start", "stop", "step", "dtype")},
            te_impl=_te_arange,
        )
    )
    register(
        OpDef(
            "one_hot",
            3,
            _one_hot_rel,
            OpPattern.OUT_ELEMWISE_FUSABLE,
            _one_hot_impl,
            attrs=(
                AttrField("depth", 1, to_int),
                AttrField("axis", -1, to_int),
                AttrField("dtype", None, to_optional_dtype),
            ),
            te_impl=_te_one_hot,
        )
    )
    register(
        OpDef(
            "shape_of",
            1,
            _shape_of_rel,
            OpPattern.OPAQUE,
            _shape_of_impl,
            attrs=(AttrField("dtype", "int32", to_dtype),),
            te_impl=_te_shape_of,
        )
    )
    register(
        OpDef(
            "ndarray_size",
            1,
            _ndarray_size_rel,
            OpPattern.INJECTIVE,
            _ndarray_size_impl,
            attrs=(AttrField("dtype", "int32", to_dtype),),
            te_impl=_te_ndarray_size,
        )
    )
    register(
        OpDef(
            "broadcast_to",
            1,
            _broadcast_to_rel,
            OpPattern.BROADCAST,
            _broadcast_to_impl,
            attrs=(AttrField("shape", REQUIRED, to_int_list), AttrField("dtype", None, to_optional_dtype)),
            te_impl=_te_broadcast_to,
        )
    )
    register(
        OpDef(
            "broadcast_to_like",
            2,
            _broadcast_to_like_rel,
            OpPattern.BROADCAST,
            _broadcast_to_like_impl,
            te_impl=_te_broadcast_to_like,
        )
    )
    register(
        OpDef(
            "collapse_sum_like",
            2,
            _collapse_sum_like_rel,
            OpPattern.COMM_REDUCE,
            _collapse_sum_like_impl,
            te_impl=_te_collapse_sum_like,
        )
    )
    register(
        OpDef(
            "dyn.broadcast_to",
            2,
            _dyn_broadcast_to_rel,
            OpPattern.BROADCAST,
            _dyn_broadcast_to_impl,
            attrs=(AttrField("shape", None, to_int_list), AttrField("dtype", None, to_optional_dtype)),
            # InitOpAttrs.shape has no C++ default: TVM printed `shape=None`.
            extras={"always_print": ("shape",)},
        )
    )


_register_all()
