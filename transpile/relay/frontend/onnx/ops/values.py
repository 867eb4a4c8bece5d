"""Converters that make values or retype them: Identity, Cast(Like), BitCast, Constant(OfShape), Range, windows…"""

from __future__ import annotations

import numpy as np

from ...common import FrontendError
from ..converters import converter
from ..importer import onnx_dtype
from .shape_values import int_scalar_input, needs_constant, normalize_axis, shape_entries, shape_source


def relay_dtype(ctx, elem_type: int, what: str) -> str:
    """The Relay dtype of ONNX element type `elem_type`; unsupported (not an error) when Relay has none."""
    try:
        return onnx_dtype(elem_type, f"node {ctx.name!r}: {what}")
    except FrontendError as exc:
        raise ctx.unsupported(str(exc).split(": ", 1)[-1]) from None


@converter("Identity")
def identity(ctx):
    # Also forwards sequences (opset 14) unchanged.
    return ctx.input(0)


@converter("Cast")
def cast(ctx):
    x = ctx.input(0)
    if not ctx.has_attr("to"):
        raise ctx.b.error("attribute 'to' is required")
    to = ctx.attr("to")
    if isinstance(to, str):  # opset 1 spelled the type by name
        import onnx

        to = onnx.TensorProto.DataType.Value(to.upper())
    dtype = relay_dtype(ctx, to, "attribute 'to'")
    if ctx.b.dtype_of(x) == dtype:
        return x
    return ctx.b.call("cast", x, dtype=dtype)


@converter("CastLike")
def cast_like(ctx):
    x, like = ctx.input(0), ctx.input(1)
    dtype = ctx.b.dtype_of(like)
    return x if ctx.b.dtype_of(x) == dtype else ctx.b.call("cast", x, dtype=dtype)


@converter("BitCast")
def bit_cast(ctx):
    x = ctx.input(0)
    dtype = relay_dtype(ctx, ctx.attr("to"), "attribute 'to'")
    if np.dtype(dtype).itemsize != np.dtype(ctx.b.dtype_of(x)).itemsize:
        raise ctx.b.error(f"cannot reinterpret {ctx.b.dtype_of(x)} as {dtype}: the bit widths differ")
    return x if ctx.b.dtype_of(x) == dtype else ctx.b.call("reinterpret", x, dtype=dtype)


@converter("Constant")
def constant(ctx):
    b = ctx.b
    if ctx.has_attr("value"):
        return b.const(ctx.attr("value"))
    if ctx.has_attr("value_float"):
        return b.const(np.array(ctx.attr("value_float"), dtype="float32"))
    if ctx.has_attr("value_floats"):
        return b.const(np.array(ctx.attr("value_floats"), dtype="float32"))
    if ctx.has_attr("value_int"):
        return b.const(np.array(ctx.attr("value_int"), dtype="int64"))
    if ctx.has_attr("value_ints"):
        return b.const(np.array(ctx.attr("value_ints"), dtype="int64"))
    if ctx.has_attr("sparse_value"):
        raise ctx.unsupported("sparse constants (sparse_value) have no Relay equivalent")
    if ctx.has_attr("value_string") or ctx.has_attr("value_strings"):
        raise ctx.unsupported("string constants have no Relay tensor type")
    raise b.error("a Constant needs one of value, value_float(s), value_int(s)")


def static_shape_input(ctx, index: int, what: str) -> list[int]:
    """A shape given as a tensor input, which must be known at import."""
    entries = shape_entries(ctx.b, ctx.input(index))
    if entries is None or any(not isinstance(e, int) for e in entries):
        raise needs_constant(ctx, what)
    return entries


@converter("ConstantOfShape")
def constant_of_shape(ctx):
    b = ctx.b
    value = ctx.attr("value")
    fill = np.zeros((), dtype="float32") if value is None else np.asarray(value).reshape(-1)
    if fill.size != 1:
        raise b.error(f"attribute 'value' must hold one element, got {fill.size}")
    fill = fill.reshape(())
    entries = shape_entries(b, ctx.input(0))
    like = shape_source(b, entries) if entries is not None else None
    if like is not None and any(not isinstance(e, int) for e in entries):
        # The shape of a tensor known only at run time (ConstantOfShape(Shape(x))): fill one like it.
        if b.dtype_of(like) != fill.dtype.name:
            like = b.call("cast", like, dtype=fill.dtype.name)
        return b.call("full_like", like, b.const(fill))
    shape = static_shape_input(ctx, 0, "the output shape")
    if any(d < 0 for d in shape):
        raise b.error(f"the output shape {shape} has a negative dimension")
    return b.call("full", b.const(fill), shape=tuple(shape), dtype=fill.dtype.name)


@converter("Range")
def arange(ctx):
    b = ctx.b
    start, limit, delta = ctx.input(0), ctx.input(1), ctx.input(2)
    dtype = b.dtype_of(start)
    values = [b.value_of(v) for v in (start, limit, delta)]
    if all(v is not None for v in values):
        first, stop, step = (np.asarray(v).reshape(()) for v in values)
        if step == 0:
            raise b.error("delta must not be 0")
        work = "float32" if dtype == "float16" else dtype  # stash_type: float16 ranges accumulate in float
        count = max(int(np.ceil((float(stop) - float(first)) / float(step))), 0)
        result = first.astype(work) + np.arange(count, dtype=work) * step.astype(work)
        return b.const(result.astype(dtype))
    # The length is known only at run time (the interpreter runs that; compiled backends need it static).
    scalars = [b.call("reshape", v, newshape=()) if b.ndim_of(v) else v for v in (start, limit, delta)]
    return b.call("arange", *scalars, start=scalars[0], stop=scalars[1], step=scalars[2], dtype=dtype)


@converter("EyeLike")
def eye_like(ctx):
    b = ctx.b
    x = ctx.input(0)
    shape = b.shape_of(x)
    if len(shape) != 2:
        raise b.error(f"EyeLike takes a 2-D input, got rank {len(shape)}")
    rows, cols = b.static_shape(x, "the input")
    dtype = relay_dtype(ctx, ctx.attr("dtype"), "attribute 'dtype'") if ctx.has_attr("dtype") else b.dtype_of(x)
    return b.const(np.eye(rows, cols, k=int(ctx.attr("k", 0)), dtype=dtype))


@converter("OneHot")
def one_hot(ctx):
    b = ctx.b
    indices, values = ctx.input(0), ctx.input(2)
    depth = int_scalar_input(ctx, 1, "depth")
    if depth is None or depth <= 0:
        raise b.error(f"depth must be positive, got {depth}")
    if np.dtype(b.dtype_of(indices)).kind not in "iu":
        indices = b.call("cast", indices, dtype="int64")
    axis = normalize_axis(ctx, ctx.attr("axis", -1), b.ndim_of(indices) + 1)
    # Negative indices count from the end of the depth axis.
    if np.dtype(b.dtype_of(indices)).kind == "i":
        zero = b.const(np.array(0, dtype=b.dtype_of(indices)))
        shifted = b.call("add", indices, b.const(np.array(depth, dtype=b.dtype_of(indices))))
        indices = b.call("where", b.call("less", indices, zero), shifted, indices)
    off_value = b.call("take", values, b.const(np.array(0, dtype="int64")), axis=0)
    on_value = b.call("take", values, b.const(np.array(1, dtype="int64")), axis=0)
    return b.call("one_hot", indices, on_value, off_value, depth=depth, axis=axis, dtype=b.dtype_of(values))


# ---------------------------------------------------------------- window functions

_WINDOWS = {
    "HannWindow": lambda phase: np.sin(phase / 2) ** 2,
    "HammingWindow": lambda phase: 25.0 / 46.0 - (21.0 / 46.0) * np.cos(phase),
    "BlackmanWindow": lambda phase: 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase),
}


def _window(op_type):
    def convert(ctx):
        b = ctx.b
        size = int_scalar_input(ctx, 0, "the window size")
        if size is None or size < 0:
            raise b.error(f"the window size must be a non-negative integer, got {size}")
        dtype = relay_dtype(ctx, ctx.attr("output_datatype", 1), "attribute 'output_datatype'")
        period = size if ctx.attr("periodic", 1) else size - 1
        phase = 2 * np.pi * np.arange(size, dtype="float64") / (period if period else 1)
        return b.const(_WINDOWS[op_type](phase).astype(dtype))

    return convert


for _op_type in _WINDOWS:
    converter(_op_type)(_window(_op_type))
