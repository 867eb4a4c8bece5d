"""Reductions: sum, mean, max, min, prod, all, any, argmax, argmin, variance; scans cumsum, cumprod."""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, get, register
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
from .scan_te import scan
from .te_support import broadcast_index, comm_reducer, is_static, known_constant, map_compute, reduce_compute, require
from .te_support import dtype_of
from .te_support import cast as te_cast
from .te_wrapping import wrapping_add, wrapping_multiply, wrapping_prod_reducer, wrapping_subtract, wrapping_sum
from .te_wrapping import wrapping_sum_reducer

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
            # (not |total| // count * sign: |INT64_MIN| wraps to itself, and the quotient's sign with it)
            quotient = total // max(count, 1) + ((total % max(count, 1) != 0) & (total < 0))
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
        reduced = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))  # not -1: kept dims may be empty
        flat = moved.reshape([x.shape[i] for i in kept] + [reduced])
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


# ---------------------------------------------------------------- TE lowerings (te_impl)


def _te_axes(x, attrs):
    return reduce_axes(len(x.shape), attrs.axis, attrs.exclude, "reduce")


def _te_identity(x, name):
    return map_compute(x, lambda v: v, name)


def _te_reducer(kind, dtype):
    from tvm import te, tirx

    if kind == "sum":
        # bool + bool would be xor; numpy's bool sum is `any`.
        return _te_reducer("any", dtype) if dtype == "bool" else (te.sum if is_float(dtype) else wrapping_sum_reducer())
    if kind == "prod":
        if dtype == "bool":
            return _te_reducer("all", dtype)
        if not is_float(dtype):
            return wrapping_prod_reducer()
        return comm_reducer(lambda a, b: a * b, lambda t: tirx.const(1, t), "prod")
    if kind in ("max", "min"):
        if dtype == "bool":
            return _te_reducer("any" if kind == "max" else "all", dtype)
        if not is_float(dtype):
            return te.max if kind == "max" else te.min
        # np.max/np.min propagate nan; te.max/te.min would drop it.
        pick = tirx.max if kind == "max" else tirx.min
        worst = float("-inf") if kind == "max" else float("inf")
        return comm_reducer(
            lambda a, b: tirx.Select(tirx.isnan(a), a, tirx.Select(tirx.isnan(b), b, pick(a, b))),
            lambda t: tirx.const(worst, t),
            kind,
        )
    if kind == "all":
        return comm_reducer(lambda a, b: tirx.And(a, b), lambda t: tirx.const(True, t), "all")
    if kind == "any":
        return comm_reducer(lambda a, b: tirx.Or(a, b), lambda t: tirx.const(False, t), "any")
    raise KeyError(kind)


def _te_reduce(kind):
    def te_impl(inputs, attrs, out_type):
        (x,) = inputs
        axes = _te_axes(x, attrs)
        if not axes:
            return _te_identity(x, f"T_{kind}")
        empty = _te_empty_value(kind, str(x.dtype))
        if kind in ("all", "any") and str(x.dtype) != "bool":
            # numpy's all/any test truthiness; the result keeps the input dtype.
            red = reduce_compute(
                x, axes, attrs.keepdims, _te_reducer(kind, "bool"), f"T_{kind}_red", lambda v: te_cast(v, "bool"), empty
            )
            return map_compute(red, lambda v: te_cast(v, out_type.dtype), f"T_{kind}")
        if kind in ("sum", "prod"):
            folded = _te_folded_integer_reduction(x, axes, attrs.keepdims, kind, f"T_{kind}")
            if folded is not None:
                return folded
            if kind == "sum" and is_integral(str(x.dtype)):
                return wrapping_sum(x, axes, attrs.keepdims, "T_sum")
        return reduce_compute(x, axes, attrs.keepdims, _te_reducer(kind, str(x.dtype)), f"T_{kind}", empty=empty)

    return te_impl


def _te_folded_integer_reduction(x, axes, keepdims, kind, name):
    """The sum (c * n) or product (c ** n) of n copies of a constant integer c, wrapped in its
    dtype as the run-time loop wraps; None when `x` is not a known constant (or not integral).

    LLVM would fold the loop itself: TVM marks integer adds and multiplies of 32 and 64 bits as
    not overflowing (nsw/nuw), so an overflowing constant sum is poison and came out as anything
    (a sum of four INT_MIN gave INT_MIN, not 0)."""
    from tvm import te

    from .te_support import const

    dtype = str(x.dtype)
    if not is_integral(dtype) or not all(is_static(x.shape[a]) for a in axes):
        return None
    value = known_constant(x(*([0] * len(x.shape))))
    if value is None:
        return None
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    modulus = 1 << (np.dtype(dtype).itemsize * 8)
    if kind == "sum":
        total = int(value) * count % modulus
    else:
        total = pow(int(value), count, modulus)
    result = np.asarray(total, dtype=np.uint64).astype(dtype)  # the low bits, in the dtype
    fill = const(result.item(), dtype)
    if keepdims:
        shape = [1 if i in axes else dim for i, dim in enumerate(x.shape)]
    else:
        shape = [dim for i, dim in enumerate(x.shape) if i not in axes]
    return te.compute(shape, lambda *_: fill, name=name)


def _te_empty_value(kind, dtype):
    """What numpy_impl gives for a reduction over zero elements."""
    if kind in ("all", "any"):
        return kind == "all"
    if dtype == "bool":
        return kind in ("prod", "min")
    if kind == "max":
        return np.asarray(_lowest(np.dtype(dtype))).item()
    if kind == "min":
        return np.asarray(_highest(np.dtype(dtype))).item()
    return 1 if kind == "prod" else 0


def _te_count(x, axes):
    """The number of reduced elements: an int, or an int64 PrimExpr when a reduced axis is symbolic."""
    count = 1
    for a in axes:
        dim = x.shape[a]
        count *= int(dim) if is_static(dim) else dim.astype("int64")
    return count


def _te_mean(inputs, attrs, out_type):
    from tvm import tirx

    (x,) = inputs
    axes = _te_axes(x, attrs)
    count = _te_count(x, axes)
    if not isinstance(count, int):
        return _te_mean_symbolic(x, axes, attrs, out_type, count)
    if str(x.dtype) == "bool":
        # numpy: any(x) / True, cast back to bool (0 / 0 is nan, which is True).
        if not count:
            return _te_reduce("all")(inputs, attrs, out_type)
        return _te_reduce("any")(inputs, attrs, out_type)
    if is_integral(str(x.dtype)):
        # The sum wraps in the input dtype, then divides by the count with C (truncating) division.
        total = _te_folded_integer_reduction(x, axes, attrs.keepdims, "sum", "T_mean_sum")
        if total is None:
            total = wrapping_sum(x, axes, attrs.keepdims, "T_mean_sum")
        divisor = tirx.const(max(count, 1), "int64")

        def quotient(v):
            q = tirx.truncdiv(v.astype("int64"), divisor) if count else tirx.const(0, "int64")
            return q.astype(out_type.dtype)

        return map_compute(total, quotient, "T_mean")
    work = "float32" if str(x.dtype) == "float16" else str(x.dtype)
    total = reduce_compute(x, axes, attrs.keepdims, _te_sum(), "T_mean_sum", lambda v: v.astype(work))
    if not count:
        # 0 / 0: a constant division by zero would not even compile.
        return map_compute(total, lambda v: tirx.const(float("nan"), out_type.dtype), "T_mean")
    return map_compute(total, lambda v: (v / tirx.const(count, work)).astype(out_type.dtype), "T_mean")


def _te_mean_symbolic(x, axes, attrs, out_type, count):
    """mean over a `?` axis: the same cases as the static lowering, decided at run time."""
    from tvm import tirx

    empty = count == tirx.const(0, "int64")
    if str(x.dtype) == "bool":
        found = _te_reduce("any")([x], attrs, out_type)
        return map_compute(found, lambda v: tirx.Or(v, empty), "T_mean")
    if is_integral(str(x.dtype)):
        total = wrapping_sum(x, axes, attrs.keepdims, "T_mean_sum")
        divisor = tirx.Max(count, tirx.const(1, "int64"))
        return map_compute(total, lambda v: tirx.truncdiv(v.astype("int64"), divisor).astype(out_type.dtype), "T_mean")
    work = "float32" if str(x.dtype) == "float16" else str(x.dtype)
    total = reduce_compute(x, axes, attrs.keepdims, _te_sum(), "T_mean_sum", lambda v: v.astype(work))
    # A float division: 0 / 0 is nan at run time, like numpy.
    return map_compute(total, lambda v: (v / count.astype(work)).astype(out_type.dtype), "T_mean")


def _te_sum():
    from tvm import te

    return te.sum


def _te_arg_reduce(name):
    """numpy's argmax/argmin over the reduced axes raveled in order: a nan wins, ties go to the first
    (or, with select_last_index, the last) index. topi's reducer ignores nans and its identity beats -inf."""

    def te_impl(inputs, attrs, out_type):
        from tvm import te, tirx

        (x,) = inputs
        dtype = str(x.dtype)
        axes = _te_axes(x, attrs)
        # An empty reduction has no index to give: numpy_impl raises, so must a kernel.
        nonempty = tirx.const(True, "bool")
        for a in axes:
            nonempty = tirx.And(nonempty, x.shape[a] > 0)
        require(nonempty, f"{name}: attempt to get {name} of an empty sequence")
        floating = is_float(dtype)
        last = bool(attrs.select_last_index)
        data = x
        if dtype == "bool":
            data = map_compute(x, lambda v: v.astype("int8"), f"T_{name}_int8")
            dtype = "int8"

        def beats(a, b):
            # a strictly better than b (nan counts as the best).
            if floating:
                a_nan, b_nan = tirx.isnan(a), tirx.isnan(b)
                ordered = a > b if name == "argmax" else a < b
                return tirx.Or(tirx.And(a_nan, tirx.Not(b_nan)), tirx.And(tirx.Not(b_nan), ordered))
            return a > b if name == "argmax" else a < b

        def ties(a, b):
            if floating:
                return tirx.Or(a == b, tirx.And(tirx.isnan(a), tirx.isnan(b)))
            return a == b

        def combine(lhs, rhs):
            (li, lv), (ri, rv) = lhs, rhs
            earlier = ri > li if last else ri < li
            take_rhs = tirx.Or(beats(rv, lv), tirx.And(ties(rv, lv), earlier))
            return tirx.Select(take_rhs, ri, li), tirx.Select(take_rhs, rv, lv)

        def identity(index_dtype, value_dtype):
            if floating:
                worst = float("-inf") if name == "argmax" else float("inf")
            else:
                info = np.iinfo(np.dtype(dtype))
                worst = int(info.min) if name == "argmax" else int(info.max)
            # An identity index that loses every tie.
            index = -1 if last else np.iinfo(np.int32).max
            return tirx.const(index, "int32"), tirx.const(worst, dtype)

        reducer = te.comm_reducer(combine, identity, name=name)
        rvars = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
        keep = bool(attrs.keepdims)
        shape = (
            [1 if i in axes else x.shape[i] for i in range(len(x.shape))]
            if keep
            else [x.shape[i] for i in range(len(x.shape)) if i not in axes]
        )

        def body(*indices):
            full, pos = [], 0
            for i in range(len(x.shape)):
                if i in rvars:
                    full.append(rvars[i])
                    pos += 1 if keep else 0
                else:
                    full.append(indices[pos])
                    pos += 1
            flat = tirx.const(0, "int32")
            for a in axes:
                flat = flat * x.shape[a].astype("int32") + rvars[a].var.astype("int32")
            return reducer((flat, data(*full)), axis=[rvars[a] for a in axes])

        index, _ = te.compute(shape, body, name=f"T_{name}")
        return index

    return te_impl


def _te_variance(inputs, attrs, out_type):
    from tvm import tirx

    x, mean = inputs
    axes = _te_axes(x, attrs)
    for axis, (dim, m) in enumerate(zip(reversed(x.shape), reversed(mean.shape))):
        require(tirx.Or(m == dim, m == 1), f"variance: dimension -{axis + 1} of the mean does not broadcast")
    count = _te_count(x, axes) - (1 if attrs.unbiased else 0)
    work = "float32" if str(x.dtype) == "float16" else str(x.dtype)
    # (x - mean)^2 in the data dtype, broadcasting the mean (it has the rank of x).
    sq = _te_compute_like(x, lambda idx: _square_diff(x(*idx), mean(*broadcast_index(mean, idx))), "T_variance_sq")
    if is_integral(work):
        total = wrapping_sum(sq, axes, attrs.keepdims, "T_variance_sum", lambda v: v.astype(work))
    else:
        total = reduce_compute(sq, axes, attrs.keepdims, _te_sum(), "T_variance_sum", lambda v: v.astype(work))
    if not isinstance(count, int):
        if is_float(work):
            return map_compute(total, lambda v: (v / count.astype(work)).astype(out_type.dtype), "T_variance")
        zero = count == tirx.const(0, "int64")
        divisor = tirx.Select(zero, tirx.const(1, "int64"), count)
        return map_compute(
            total,
            lambda v: tirx.Select(zero, v.astype("int64"), tirx.floordiv(v.astype("int64"), divisor)).astype(
                out_type.dtype
            ),
            "T_variance",
        )
    if is_float(work):
        if not count:
            return map_compute(total, lambda v: tirx.const(float("nan"), out_type.dtype), "T_variance")
        return map_compute(total, lambda v: (v / tirx.const(count, work)).astype(out_type.dtype), "T_variance")
    if not count:
        return map_compute(total, lambda v: v.astype(out_type.dtype), "T_variance")
    divisor = tirx.const(count, "int64")
    return map_compute(total, lambda v: tirx.floordiv(v.astype("int64"), divisor).astype(out_type.dtype), "T_variance")


def _square_diff(a, b):
    if is_integral(dtype_of(a)):
        d = wrapping_subtract(a, b)
        return wrapping_multiply(d, d)
    d = a - b
    return d * d


def _te_compute_like(x, fn, name):
    from tvm import te

    return te.compute(x.shape, lambda *idx: fn(idx), name=name)


def _te_scan(kind):
    def te_impl(inputs, attrs, out_type):
        from tvm import tirx

        (x,) = inputs
        dtype = out_type.dtype
        if dtype == "bool":
            # bool + bool would be xor; numpy's bool cumsum is a running `or`, cumprod a running `and`.
            binop, identity = (tirx.Or, False) if kind == "cumsum" else (tirx.And, True)
            x = map_compute(x, lambda v: te_cast(v, "bool"), f"T_{kind}_bool")
        elif kind == "cumsum":
            binop, identity = (lambda a, b: a + b) if is_float(dtype) else wrapping_add, 0
        else:
            binop, identity = (lambda a, b: a * b) if is_float(dtype) else wrapping_multiply, 1
        if str(x.dtype) != dtype:
            x = map_compute(x, lambda v: te_cast(v, dtype), f"T_{kind}_cast")
        return scan(x, binop, identity, f"T_{kind}", attrs.axis, dtype, bool(attrs.exclusive))

    return te_impl


def _register_all():
    scan_attrs = (
        AttrField("axis", None, to_int),
        AttrField("dtype", None, to_optional_dtype),
        AttrField("exclusive", False, to_bool),
    )
    for name, fn, identity in (("cumsum", np.cumsum, 0), ("cumprod", np.cumprod, 1)):
        # relay.cumsum(data, axis=None, dtype=None, exclusive=None): None meant False.
        scan = PyOrderOpDef(
            name,
            1,
            _scan_rel(name),
            OpPattern.OPAQUE,
            _scan_impl(fn, identity),
            attrs=scan_attrs,
            te_impl=_te_scan(name),
        )
        scan.extras["none_is_default"] = ("exclusive",)
        register(scan)
    register(OpDef("sum", 1, _reduce_rel("sum"), OpPattern.COMM_REDUCE, _numpy_reduce(_sum), attrs=REDUCE_ATTRS))
    get("sum").te_impl = _te_reduce("sum")
    register(OpDef("prod", 1, _reduce_rel("prod"), OpPattern.COMM_REDUCE, _numpy_reduce(_prod), attrs=REDUCE_ATTRS))
    get("prod").te_impl = _te_reduce("prod")
    register(OpDef("mean", 1, _reduce_rel("mean"), OpPattern.COMM_REDUCE, _mean_impl, attrs=REDUCE_ATTRS))
    get("mean").te_impl = _te_mean
    register(
        OpDef("max", 1, _reduce_rel("max"), OpPattern.COMM_REDUCE, _numpy_reduce(np.max, _lowest), attrs=REDUCE_ATTRS)
    )
    get("max").te_impl = _te_reduce("max")
    register(
        OpDef("min", 1, _reduce_rel("min"), OpPattern.COMM_REDUCE, _numpy_reduce(np.min, _highest), attrs=REDUCE_ATTRS)
    )
    get("min").te_impl = _te_reduce("min")
    register(OpDef("all", 1, _reduce_rel("all"), OpPattern.COMM_REDUCE, _numpy_reduce(np.all), attrs=REDUCE_ATTRS))
    get("all").te_impl = _te_reduce("all")
    register(OpDef("any", 1, _reduce_rel("any"), OpPattern.COMM_REDUCE, _numpy_reduce(np.any), attrs=REDUCE_ATTRS))
    get("any").te_impl = _te_reduce("any")
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
                te_impl=_te_arg_reduce(name),
            )
        )
    register(VarianceOpDef("variance", 2, _variance_rel, OpPattern.COMM_REDUCE, _variance_impl, attrs=VARIANCE_ATTRS))
    get("variance").te_impl = _te_variance


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


def _mean_and(statistic, data, axis, keepdims, exclude, unbiased):
    """(mean, statistic of the variance) as TVM's mean_variance / mean_std built them: one mean with
    kept dims feeds the variance, and is then reduced to the variance's shape when keepdims is False."""
    from ...expr import Tuple, TupleWrapper, to_expr
    from ..registry import make_call

    data = to_expr(data)
    axis = [axis] if isinstance(axis, int) else axis
    mean = make_call("mean", [data], {"axis": axis, "keepdims": True, "exclude": exclude})
    var = make_call(
        "variance", [data, mean], {"axis": axis, "keepdims": keepdims, "exclude": exclude, "unbiased": unbiased}
    )
    if not keepdims:
        # TVM squeezed `axis` (every unit axis, for mean_std), which is wrong with exclude=True or
        # unit axes that are kept: the variance has the shape the mean must take.
        mean = make_call("reshape_like", [mean, var])
    return TupleWrapper(Tuple([mean, statistic(var)]), 2)


def mean_variance(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    """relay.mean_variance: (mean, variance) of data over the axes."""
    return _mean_and(lambda var: var, data, axis, keepdims, exclude, unbiased)


def mean_std(data, axis=None, keepdims=False, exclude=False):
    """relay.mean_std: (mean, standard deviation) of data over the axes (biased, as TVM's)."""
    from ..registry import make_call

    return _mean_and(lambda var: make_call("sqrt", [var]), data, axis, keepdims, exclude, False)


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
