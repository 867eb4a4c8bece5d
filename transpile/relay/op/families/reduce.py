"""Reductions: sum, mean, max, min, prod, all, any, argmax, argmin, variance; scans cumsum, cumprod."""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, register
from .support import (
    PyOrderOpDef,
    as_out,
    is_float,
    is_integral,
    quiet,
    tensor_args,
    to_bool,
    to_int,
    to_optional_dtype,
    to_optional_int_list,
)

__all__ = ["reduce_axes", "reduce_shape", "std", "logsumexp"]

_AXIS = AttrField("axis", None, to_optional_int_list, "axes to reduce; None (or empty) means all")
_KEEPDIMS = AttrField("keepdims", False, to_bool)
_EXCLUDE = AttrField("exclude", False, to_bool)

REDUCE_ATTRS = (_AXIS, _KEEPDIMS, _EXCLUDE)
ARG_REDUCE_ATTRS = (_AXIS, _KEEPDIMS, AttrField("select_last_index", False, to_bool), _EXCLUDE)
VARIANCE_ATTRS = (_AXIS, _KEEPDIMS, _EXCLUDE, AttrField("unbiased", False, to_bool))


def reduce_axes(ndim: int, axis, exclude: bool, op_name: str, data_type=None) -> tuple[int, ...]:
    """TVM's GetReduceAxes: the sorted axes a reduction removes."""
    if not axis:
        return tuple(range(ndim))
    normalized = []
    for a in axis:
        b = a + ndim if a < 0 else a
        if not 0 <= b < ndim:
            where = f" of {fmt_type(data_type)}" if data_type is not None else f" of a rank-{ndim} tensor"
            raise RelationError(f"{op_name}: axis {a} is out of bounds for the {ndim} dimension(s){where}")
        if b in normalized:
            raise RelationError(f"{op_name}: axis {a} is repeated in axis={list(axis)}")
        normalized.append(b)
    normalized.sort()
    if not exclude:
        return tuple(normalized)
    return tuple(i for i in range(ndim) if i not in normalized)


def reduce_shape(data: TensorType, attrs, op_name: str) -> tuple:
    axes = reduce_axes(data.ndim, attrs.axis, attrs.exclude, op_name, data)
    if attrs.keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(data.shape))
    return tuple(d for i, d in enumerate(data.shape) if i not in axes)


def _reduce_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(reduce_shape(data, attrs, op_name), data.dtype)

    return rel


def _arg_reduce_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        if data.ndim == 0:
            raise RelationError(f"{op_name}: expects a tensor of rank >= 1, got {fmt_type(data)}")
        # TVM types the indices with the dtype of the shape expressions: int32.
        return TensorType(reduce_shape(data, attrs, op_name), "int32")

    return rel


def _variance_rel(arg_types, attrs):
    data, mean = tensor_args(arg_types, 2, "variance", ["data", "mean"])
    if data.ndim == 0:
        raise RelationError(f"variance: expects data of rank >= 1, got {fmt_type(data)}")
    if mean.ndim != data.ndim:
        raise RelationError(
            f"variance: mean must have the rank of data (computed with keepdims=True), "
            f"got data {fmt_type(data)} and mean {fmt_type(mean)}"
        )
    return TensorType(reduce_shape(data, attrs, "variance"), data.dtype)


# ---------------------------------------------------------------- numpy kernels


def _axes_of(x: np.ndarray, attrs) -> tuple[int, ...]:
    return reduce_axes(x.ndim, attrs.axis, attrs.exclude, "reduce")


def _numpy_reduce(fn, empty_value=None):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        axes = _axes_of(x, attrs)
        if not axes:
            return as_out(x, out_type)
        with quiet():
            if empty_value is not None and any(x.shape[a] == 0 for a in axes):
                out = np.full(_kept_shape(x.shape, axes, attrs.keepdims), empty_value(x.dtype))
            else:
                out = fn(x, axis=axes, keepdims=bool(attrs.keepdims))
        return as_out(out, out_type)

    return impl


def _kept_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _lowest(dtype):
    if dtype == np.bool_:
        return False
    return np.finfo(dtype).min if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _highest(dtype):
    if dtype == np.bool_:
        return True
    return np.finfo(dtype).max if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max


def _sum(x, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _prod(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _mean_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    axes = _axes_of(x, attrs)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    with quiet():
        if is_integral(x.dtype.name):
            # TVM divides the integer sum by the count with C (truncating) division.
            total = np.sum(x, axis=axes, keepdims=bool(attrs.keepdims), dtype=x.dtype).astype(np.int64)
            quotient = np.abs(total) // max(count, 1) * np.sign(total)
            return as_out(quotient if count else np.zeros_like(total), out_type)
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        total = np.sum(work, axis=axes, keepdims=bool(attrs.keepdims), dtype=work.dtype)
        return as_out(total / work.dtype.type(count), out_type)


def _arg_impl(pick):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        axes = _axes_of(x, attrs)
        kept = [i for i in range(x.ndim) if i not in axes]
        # Reduced axes are raveled in their original order, like topi's RavelIndex.
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape([x.shape[i] for i in kept] + [-1])
        if attrs.select_last_index:
            n = flat.shape[-1]
            index = n - 1 - pick(flat[..., ::-1], axis=-1)
        else:
            index = pick(flat, axis=-1)
        return as_out(np.reshape(index, _kept_shape(x.shape, axes, attrs.keepdims)), out_type)

    return impl


def _variance_impl(args, attrs, out_type):
    x, mean = (np.asarray(a) for a in args)
    axes = _axes_of(x, attrs)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) - (1 if attrs.unbiased else 0)
    with quiet():
        diff = x - mean
        sq = diff * diff
        if sq.dtype == np.float16:
            sq = sq.astype(np.float32)
        total = np.sum(sq, axis=axes, keepdims=bool(attrs.keepdims), dtype=sq.dtype)
        if is_float(sq.dtype.name):
            return as_out(total / sq.dtype.type(count), out_type)
        return as_out(np.floor_divide(total, count) if count else total, out_type)


def _scan_rel(op_name):
    """TVM's ScanopRel: same shape (flattened when axis is None); dtype defaults to the input's."""

    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        dtype = attrs.dtype or data.dtype
        if attrs.axis is None:
            size = _flat_size(data.shape)
            return TensorType((size,), dtype)
        if not -max(data.ndim, 1) <= attrs.axis < max(data.ndim, 1):
            raise RelationError(f"{op_name}: axis {attrs.axis} is out of range for {fmt_type(data)}")
        return TensorType(data.shape, dtype)

    return rel


def _flat_size(shape):
    total = 1
    for d in shape:
        if isinstance(d, AnyDim):
            return AnyDim()
        total *= d
    return total


def _scan_impl(fn, identity):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        axis = attrs.axis
        if axis is None:
            x, axis = x.reshape(-1), 0
        dtype = np.dtype(out_type.dtype)
        with quiet():
            out = fn(x.astype(dtype), axis=axis, dtype=dtype)
            if attrs.exclusive:
                # Exclusive scans shift by one along the axis, starting from the identity.
                out = np.concatenate([np.full_like(np.take(out, [0], axis=axis), identity), out], axis=axis)
                out = np.take(out, np.arange(x.shape[axis]), axis=axis)
        return as_out(out, out_type)

    return impl


def _register_all():
    scan_attrs = (
        AttrField("axis", None, to_int),
        AttrField("dtype", None, to_optional_dtype),
        AttrField("exclusive", False, to_bool),
    )
    for name, fn, identity in (("cumsum", np.cumsum, 0), ("cumprod", np.cumprod, 1)):
        # relay.cumsum(data, axis=None, dtype=None, exclusive=None): None meant False.
        scan = PyOrderOpDef(name, 1, _scan_rel(name), OpPattern.OPAQUE, _scan_impl(fn, identity), attrs=scan_attrs)
        scan.extras["none_is_default"] = ("exclusive",)
        register(scan)
    register(OpDef("sum", 1, _reduce_rel("sum"), OpPattern.COMM_REDUCE, _numpy_reduce(_sum), attrs=REDUCE_ATTRS))
    register(OpDef("prod", 1, _reduce_rel("prod"), OpPattern.COMM_REDUCE, _numpy_reduce(_prod), attrs=REDUCE_ATTRS))
    register(OpDef("mean", 1, _reduce_rel("mean"), OpPattern.COMM_REDUCE, _mean_impl, attrs=REDUCE_ATTRS))
    register(
        OpDef("max", 1, _reduce_rel("max"), OpPattern.COMM_REDUCE, _numpy_reduce(np.max, _lowest), attrs=REDUCE_ATTRS)
    )
    register(
        OpDef("min", 1, _reduce_rel("min"), OpPattern.COMM_REDUCE, _numpy_reduce(np.min, _highest), attrs=REDUCE_ATTRS)
    )
    register(OpDef("all", 1, _reduce_rel("all"), OpPattern.COMM_REDUCE, _numpy_reduce(np.all), attrs=REDUCE_ATTRS))
    register(OpDef("any", 1, _reduce_rel("any"), OpPattern.COMM_REDUCE, _numpy_reduce(np.any), attrs=REDUCE_ATTRS))
    for name, pick in (("argmax", np.argmax), ("argmin", np.argmin)):
        register(
            PyOrderOpDef(
                name,
                1,
                _arg_reduce_rel(name),
                OpPattern.COMM_REDUCE,
                _arg_impl(pick),
                attrs=ARG_REDUCE_ATTRS,
                # relay.argmax(data, axis, keepdims, exclude, select_last_index)
                extras={"py_order": ("axis", "keepdims", "exclude", "select_last_index")},
            )
        )
    register(VarianceOpDef("variance", 2, _variance_rel, OpPattern.COMM_REDUCE, _variance_impl, attrs=VARIANCE_ATTRS))


class VarianceOpDef(OpDef):
    """The variance operator takes (data, mean); its builder, like relay.variance, computes the mean.

    relay.variance(data, axis=None, keepdims=False, exclude=False, unbiased=False, with_mean=None);
    passing an expression as the second positional argument gives the raw two-input call.
    """

    def __call__(self, data, *args, **kwargs):
        from ...expr import Expr, to_expr
        from ..registry import make_call

        if args and isinstance(args[0], Expr):
            given = dict(zip(self.attr_names, args[1:]))
            given.update(kwargs)
            return make_call(self.name, [to_expr(data), args[0]], given)
        names = ("axis", "keepdims", "exclude", "unbiased", "with_mean")
        given = dict(zip(names, args))
        given.update(kwargs)
        with_mean = given.pop("with_mean", None)
        data = to_expr(data)
        if with_mean is None:
            return _variance_call(
                data,
                given.get("axis"),
                given.get("keepdims", False),
                given.get("exclude", False),
                given.get("unbiased", False),
            )
        return make_call(self.name, [data, to_expr(with_mean)], given)


_register_all()


# ---------------------------------------------------------------- composite builders (not operators)


def _variance_call(data, axis, keepdims, exclude, unbiased):
    from ..registry import make_call

    mean = make_call("mean", [data], {"axis": axis, "keepdims": True, "exclude": exclude})
    return make_call(
        "variance", [data, mean], {"axis": axis, "keepdims": keepdims, "exclude": exclude, "unbiased": unbiased}
    )


def std(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    """relay.std: sqrt(variance(data, mean(data, keepdims=True))), as TVM's Python builder built it."""
    from ..registry import make_call

    return make_call("sqrt", [_variance_call(data, axis, keepdims, exclude, unbiased)])


def logsumexp(data, axis=None, keepdims=False):
    """relay.logsumexp: max + log(sum(exp(data - max))), as TVM's Python builder built it."""
    from ..registry import make_call

    max_x = make_call("max", [data], {"axis": axis, "keepdims": True})
    exp_x = make_call("exp", [make_call("subtract", [data, max_x])])
    sum_x = make_call("sum", [exp_x], {"axis": axis, "keepdims": True})
    out = make_call("add", [make_call("log", [sum_x]), max_x])
    if not keepdims:
        squeeze_axis = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
        out = make_call("squeeze", [out], {"axis": squeeze_axis})
    return out
