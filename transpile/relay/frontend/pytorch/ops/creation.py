"""Converters of ATen tensor creation and conversion, graph bookkeeping, and symbolic sizes.

Creation operators (full, zeros, arange, scalar_tensor…) take the dtype PyTorch recorded for
the node, so the defaults (float32 for Python floats, int64 for ints) are PyTorch's. Symbolic
sizes (`aten.sym_size.int` and Python arithmetic on them) are Python ints when static and 0-d
int64 tensors when only known at run time.
"""

from __future__ import annotations

import operator

import numpy as np

from .... import expr as E
from ....ty import AnyDim
from ..converters import converter
from .support import cast, is_tensor, normalize_axis, operand, scalar

# ---------------------------------------------------------------- filled tensors


def _static_sizes(ctx, sizes) -> list[int]:
    values = [ctx.static_int(s, "a created tensor's size") for s in sizes]
    if 0 in values:
        raise ctx.unsupported("zero-size tensors")
    return values


def _filled(ctx, shape, value):
    dtype = ctx.out_dtype
    return ctx.b.call("full", scalar(ctx.b, value, dtype), shape=shape, dtype=dtype)


def _filled_like(ctx, x, value):
    b = ctx.b
    shape = b.shape_of(x)
    if any(isinstance(d, AnyDim) for d in shape):
        return b.call("full_like", cast(b, x, ctx.out_dtype), scalar(b, value, ctx.out_dtype))
    return _filled(ctx, [int(d) for d in shape], value)


@converter("aten.full.default")
def full(ctx):
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), ctx.arg("fill_value"))


@converter("aten.zeros.default", "aten.empty.memory_format", "aten.empty_strided.default")
def zeros(ctx):
    # Uninitialized memory (`empty`) may hold anything; zeros is one valid content.
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), 0)


@converter("aten.ones.default")
def ones(ctx):
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), 1)


@converter("aten.full_like.default", "aten.fill.Scalar")
def full_like(ctx):
    value = ctx.arg("fill_value") if ctx.target == "aten.full_like.default" else ctx.arg("value")
    return _filled_like(ctx, ctx.tensor("self"), value)


@converter("aten.zeros_like.default", "aten.empty_like.default")
def zeros_like(ctx):
    return _filled_like(ctx, ctx.tensor("self"), 0)


@converter("aten.ones_like.default")
def ones_like(ctx):
    return _filled_like(ctx, ctx.tensor("self"), 1)


@converter("aten.new_zeros.default", "aten.new_empty.default")
def new_zeros(ctx):
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), 0)


@converter("aten.new_ones.default")
def new_ones(ctx):
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), 1)


@converter("aten.new_full.default")
def new_full(ctx):
    return _filled(ctx, _static_sizes(ctx, ctx.arg("size")), ctx.arg("fill_value"))


@converter("aten.scalar_tensor.default")
def scalar_tensor(ctx):
    return scalar(ctx.b, ctx.arg("s"), ctx.out_dtype)


@converter("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def arange(ctx):
    import torch

    dtype = ctx.out_dtype
    start, end, step = ctx.arg("start", 0), ctx.arg("end"), ctx.arg("step", 1)
    if not any(is_tensor(v) for v in (start, end, step)):
        values = torch.arange(start, end, step, dtype=getattr(torch, dtype)).numpy()
        if values.size == 0:
            raise ctx.unsupported("an empty range (zero-size tensors)")
        return ctx.b.const(values)
    bounds = [operand(ctx.b, v, dtype) for v in (start, end, step)]
    return ctx.b.call("arange", *bounds, start=bounds[0], stop=bounds[1], step=bounds[2], dtype=dtype)


# ---------------------------------------------------------------- conversion and copies


@converter("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout", "aten.to.device", "aten.type_as.default")
def to_copy(ctx):
    return cast(ctx.b, ctx.tensor("self"), ctx.out_dtype)


@converter("aten.copy.default")
def copy(ctx):
    """copy(self, src): src's values in self's shape and dtype."""
    b = ctx.b
    target = ctx.tensor("self")
    value = cast(b, ctx.tensor("src"), b.dtype_of(target))
    shape = b.shape_of(target)
    if b.shape_of(value) != shape:
        value = b.call("broadcast_to", value, shape=b.static_shape(target, "the copy target"))
    return value


# ---------------------------------------------------------------- bookkeeping without a result


@converter(
    "aten._assert_tensor_metadata.default",
    "aten._assert_scalar.default",
    "aten._assert_async.msg",
    "aten._assert_async.default",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
)
def assertion(ctx):
    # Checks PyTorch made while tracing; the imported program keeps the shapes they guard.
    return None


@converter("operator.getitem")
def getitem(ctx):
    value, index = ctx.arg(0), ctx.arg(1)
    if isinstance(value, (list, tuple)):
        return value[index]
    if isinstance(value, E.Expr):
        return ctx.b.get(value, int(index))
    raise ctx.b.error(f"cannot take item {index} of a {type(value).__name__}")


# ---------------------------------------------------------------- symbolic sizes


@converter("aten.sym_size.int")
def sym_size(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), b.ndim_of(x))
    dim = b.shape_of(x)[axis]
    if not isinstance(dim, AnyDim):
        return int(dim)
    return b.call("take", b.call("shape_of", x, dtype="int64"), b.const(np.array(axis, dtype="int64")), axis=0)


_SYMBOLIC = {
    "add": (operator.add, "add"),
    "sub": (operator.sub, "subtract"),
    "mul": (operator.mul, "multiply"),
    "floordiv": (operator.floordiv, "floor_divide"),
    "mod": (operator.mod, "floor_mod"),
    "eq": (operator.eq, "equal"),
    "ne": (operator.ne, "not_equal"),
    "lt": (operator.lt, "less"),
    "le": (operator.le, "less_equal"),
    "gt": (operator.gt, "greater"),
    "ge": (operator.ge, "greater_equal"),
}


def _symbolic(python_op, relay_op):
    def convert(ctx):
        lhs, rhs = ctx.arg(0), ctx.arg(1)
        if not is_tensor(lhs) and not is_tensor(rhs):
            return python_op(lhs, rhs)
        return ctx.b.call(relay_op, operand(ctx.b, lhs, "int64"), operand(ctx.b, rhs, "int64"))

    return convert


for _name, (_python, _relay) in _SYMBOLIC.items():
    converter(f"operator.{_name}")(_symbolic(_python, _relay))
