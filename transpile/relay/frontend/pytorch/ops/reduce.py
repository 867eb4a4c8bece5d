"""Converters of ATen reductions, scans and orderings (sum, mean, max, any, var, norm, cumsum, topk, sort…).

ATen reduces every dimension when `dim` is None or empty. Sums and products of integers and
booleans accumulate in int64 (the node's result dtype), so the input is cast to it first.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .support import cast, is_float, normalize_axis, promoted_dtype, reduce_axes, scalar, static_dim


def _reduction(relay_op, accumulate_in_result=True):
    def convert(ctx):
        b = ctx.b
        x = ctx.tensor("self")
        if accumulate_in_result:
            x = cast(b, x, ctx.out_dtype)
        axes = reduce_axes(ctx, ctx.arg("dim"), b.ndim_of(x))
        if b.ndim_of(x) == 0:
            return x
        return cast(b, b.call(relay_op, x, axis=axes, keepdims=bool(ctx.arg("keepdim", False))), ctx.out_dtype)

    return convert


converter("aten.sum.dim_IntList", "aten.sum.default")(_reduction("sum"))
converter("aten.mean.dim", "aten.mean.default")(_reduction("mean"))
converter("aten.amax.default", "aten.max.default")(_reduction("max", accumulate_in_result=False))
converter("aten.amin.default", "aten.min.default")(_reduction("min", accumulate_in_result=False))


@converter("aten.prod.dim_int", "aten.prod.default")
def prod(ctx):
    b = ctx.b
    x = cast(b, ctx.tensor("self"), ctx.out_dtype)
    dim = ctx.arg("dim")
    axes = None if dim is None else [normalize_axis(ctx, dim, b.ndim_of(x))]
    if b.ndim_of(x) == 0:
        return x
    return b.call("prod", x, axis=axes, keepdims=bool(ctx.arg("keepdim", False)))


def _boolean_reduction(relay_op):
    def convert(ctx):
        b = ctx.b
        x = cast(b, ctx.tensor("self"), "bool")
        if b.ndim_of(x) == 0:
            return cast(b, x, ctx.out_dtype)
        axes = reduce_axes(ctx, ctx.arg("dim"), b.ndim_of(x))
        return cast(b, b.call(relay_op, x, axis=axes, keepdims=bool(ctx.arg("keepdim", False))), ctx.out_dtype)

    return convert


converter("aten.any.dim", "aten.any.dims", "aten.any.default")(_boolean_reduction("any"))
converter("aten.all.dim", "aten.all.dims", "aten.all.default")(_boolean_reduction("all"))


@converter("aten.max.dim", "aten.min.dim")
def max_dim(ctx):
    """(values, indices) along one dimension."""
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), b.ndim_of(x))
    keepdims = bool(ctx.arg("keepdim", False))
    kind = "max" if ctx.target == "aten.max.dim" else "min"
    values = b.call(kind, x, axis=[axis], keepdims=keepdims)
    indices = None
    if ctx.output_used(1):
        indices = cast(b, b.call(f"arg{kind}", x, axis=[axis], keepdims=keepdims), "int64")
    return [values, indices]


@converter("aten.argmax.default", "aten.argmin.default")
def argmax(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    kind = "argmax" if ctx.target == "aten.argmax.default" else "argmin"
    keepdims = bool(ctx.arg("keepdim", False))
    dim = ctx.arg("dim")
    if dim is None:
        flat = b.call("reshape", x, newshape=[-1])
        y = b.call(kind, flat, axis=[0], keepdims=False)
        if keepdims:
            y = b.call("reshape", y, newshape=[1] * b.ndim_of(x))
    else:
        y = b.call(kind, x, axis=[normalize_axis(ctx, dim, b.ndim_of(x))], keepdims=keepdims)
    return cast(b, y, "int64")


@converter("aten.var.correction", "aten.var.dim", "aten.std.correction", "aten.std.dim")
def var(ctx):
    b = ctx.b
    x = cast(b, ctx.tensor("self"), ctx.out_dtype)
    ndim = b.ndim_of(x)
    axes = reduce_axes(ctx, ctx.arg("dim"), ndim)
    keepdims = bool(ctx.arg("keepdim", False))
    if ctx.target.endswith(".dim"):
        correction = 1 if ctx.arg("unbiased", True) else 0
    else:
        correction = ctx.arg("correction", 1)
    mean = b.call("mean", x, axis=axes, keepdims=True)
    if correction in (0, 1):
        y = b.call("variance", x, mean, axis=axes, keepdims=keepdims, unbiased=correction == 1)
    else:
        count = 1
        for axis in axes if axes is not None else range(ndim):
            count *= static_dim(ctx, x, axis, "a reduced dimension")
        centered = b.call("subtract", x, mean)
        squares = b.call("sum", b.call("multiply", centered, centered), axis=axes, keepdims=keepdims)
        y = b.call("divide", squares, scalar(b, max(count - correction, 0), b.dtype_of(x)))
    return b.call("sqrt", y) if ctx.target.startswith("aten.std") else y


@converter("aten.cumsum.default", "aten.cumprod.default")
def cumsum(ctx):
    b = ctx.b
    x = cast(b, ctx.tensor("self"), ctx.out_dtype)
    if b.ndim_of(x) == 0:
        return x
    axis = normalize_axis(ctx, ctx.arg("dim"), b.ndim_of(x))
    return b.call("cumsum" if ctx.target == "aten.cumsum.default" else "cumprod", x, axis=axis)


@converter("aten.linalg_vector_norm.default")
def vector_norm(ctx):
    b = ctx.b
    x = cast(b, ctx.tensor("self"), ctx.out_dtype)
    if not is_float(b.dtype_of(x)):
        raise ctx.unsupported("the norm of an integer tensor")
    order = float(ctx.arg("ord", 2))
    axes = reduce_axes(ctx, ctx.arg("dim"), b.ndim_of(x))
    keepdims = bool(ctx.arg("keepdim", False))
    magnitude = b.call("abs", x)
    if order == np.inf:
        return b.call("max", magnitude, axis=axes, keepdims=keepdims)
    if order == -np.inf:
        return b.call("min", magnitude, axis=axes, keepdims=keepdims)
    if order == 0:
        nonzero = cast(b, b.call("not_equal", x, scalar(b, 0, b.dtype_of(x))), b.dtype_of(x))
        return b.call("sum", nonzero, axis=axes, keepdims=keepdims)
    if order == 1:
        return b.call("sum", magnitude, axis=axes, keepdims=keepdims)
    if order == 2:
        return b.call("sqrt", b.call("sum", b.call("multiply", x, x), axis=axes, keepdims=keepdims))
    powered = b.call("power", magnitude, scalar(b, order, b.dtype_of(x)))
    total = b.call("sum", powered, axis=axes, keepdims=keepdims)
    return b.call("power", total, scalar(b, 1.0 / order, b.dtype_of(x)))


# ---------------------------------------------------------------- ordering


@converter("aten.topk.default")
def topk(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim", -1), b.ndim_of(x))
    k = ctx.static_int(ctx.arg("k"), "k")
    both = b.call("topk", x, k=k, axis=axis, ret_type="both", is_ascend=not ctx.arg("largest", True), dtype="int64")
    return [b.get(both, 0), b.get(both, 1)]


@converter("aten.sort.default", "aten.sort.stable")
def sort(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim", -1), b.ndim_of(x))
    ascending = not ctx.arg("descending", False)
    values = b.call("sort", x, axis=axis, is_ascend=ascending)
    indices = None
    if ctx.output_used(1):
        indices = b.call("argsort", x, axis=axis, is_ascend=ascending, dtype="int64")
    return [values, indices]


@converter("aten.bucketize.Tensor", "aten.searchsorted.Tensor")
def bucketize(ctx):
    b = ctx.b
    if ctx.target == "aten.bucketize.Tensor":
        values, boundaries = ctx.tensor("self"), ctx.tensor("boundaries")
        right = bool(ctx.arg("right", False))
    else:
        boundaries, values = ctx.tensor("sorted_sequence"), ctx.tensor("self")
        if ctx.has_arg("sorter"):
            raise ctx.unsupported("a sorter")
        right = bool(ctx.arg("right", False)) or ctx.arg("side") == "right"
    dtype = promoted_dtype(ctx, values, boundaries)
    return b.call("searchsorted", cast(b, boundaries, dtype), cast(b, values, dtype), right=right, dtype=ctx.out_dtype)
