"""Converters of ONNX linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.

Scale and zero point are per tensor (a scalar), per axis (a vector along `axis`) or blocked (the
input's shape with `axis` divided into blocks of `block_size`); `broadcast_quant_param` lays any
of them out to broadcast against the input. Integer targets (u)int8/16 (and int32 for
DequantizeLinear) are computed exactly as the reference does; float8, 4-bit and 2-bit types have
no Relay tensor type.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .shape_values import normalize_axis
from .values import relay_dtype

# The quantized integer types and their saturation ranges.
_QUANT_RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
}


def broadcast_quant_param(ctx, param, x, axis: int, block_size: int):
    """`param` (a scale or zero point) shaped to broadcast against `x` per ONNX's three granularities."""
    b = ctx.b
    shape = b.shape_of(param)
    rank = b.ndim_of(x)
    if not shape:
        return param
    if all(isinstance(d, int) for d in shape) and int(np.prod(shape)) == 1:
        return b.call("reshape", param, newshape=())
    axis = normalize_axis(ctx, axis, rank)
    if not block_size:
        if len(shape) != 1:
            raise b.error(
                f"a per-axis scale / zero point must be 1-D, got {b.type_of(param)} "
                "(blocked quantization needs block_size)"
            )
        dim = b.shape_of(x)[axis]
        if isinstance(dim, int) and isinstance(shape[0], int) and shape[0] != dim:
            raise b.error(f"the per-axis scale has {shape[0]} values for axis {axis} of size {dim}")
        return b.call("reshape", param, newshape=[1] * axis + [-1] + [1] * (rank - axis - 1))
    if block_size < 0:
        raise b.error(f"block_size must be positive, got {block_size}")
    if len(shape) != rank:
        raise b.error(f"a blocked scale / zero point must have the input's rank {rank}, got {b.type_of(param)}")
    dim = b.shape_of(x)[axis]
    if not isinstance(dim, int):
        raise b.error(f"blocked quantization needs the size of axis {axis} at import, got {b.type_of(x)}")
    if isinstance(shape[axis], int) and shape[axis] != -(-dim // block_size):
        raise b.error(
            f"a blocked scale of {shape[axis]} blocks does not cover axis {axis} of size {dim} "
            f"in blocks of {block_size}"
        )
    expanded = b.call("repeat", param, repeats=int(block_size), axis=axis)
    if shape[axis] * block_size != dim:  # the last block is partial
        expanded = b.call("strided_slice", expanded, begin=[0], end=[dim], strides=[1], axes=[axis])
    return expanded


def _granularity(ctx):
    """(axis, block_size): per-axis quantization came with opset 13, blocks with opset 21."""
    axis = int(ctx.attr("axis", 1)) if ctx.opset >= 13 else 1
    block_size = int(ctx.attr("block_size", 0)) if ctx.opset >= 21 else 0
    return axis, block_size


def _float_dtype_attr(ctx, name: str) -> str | None:
    value = ctx.attr(name, 0)
    return relay_dtype(ctx, int(value), f"attribute {name!r}") if value else None


def _saturated(ctx, rounded, zero_point, dtype: str):
    """saturate(rounded + zero_point) in `dtype`, `rounded` an integral float tensor."""
    b = ctx.b
    low, high = _QUANT_RANGES[dtype]
    # float32 holds every in-range sum exactly; anything large enough to round there saturates anyway.
    work = "float64" if b.dtype_of(rounded) == "float64" else "float32"
    if b.dtype_of(rounded) != work:
        rounded = b.call("cast", rounded, dtype=work)
    if zero_point is not None:
        rounded = b.call("add", rounded, b.call("cast", zero_point, dtype=work))
    return b.call("cast", b.call("clip", rounded, a_min=float(low), a_max=float(high)), dtype=dtype)


@converter("QuantizeLinear")
def quantize_linear(ctx):
    b = ctx.b
    x, scale, zero_point = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    axis, block_size = _granularity(ctx)
    declared = _float_dtype_attr(ctx, "output_dtype") if ctx.opset >= 21 else None
    if zero_point is not None:
        dtype = b.dtype_of(zero_point)
        if declared is not None and declared != dtype:
            raise b.error(f"output_dtype {declared} differs from the zero point's type {dtype}")
    else:
        dtype = declared or "uint8"
    if dtype not in _QUANT_RANGES:
        raise ctx.unsupported(f"quantizing to {dtype} (the quantized types Relay has are {', '.join(_QUANT_RANGES)})")
    # The division runs in `precision`, else in the promoted type of x and the scale (as numpy does).
    precision = _float_dtype_attr(ctx, "precision") if ctx.opset >= 23 else None
    if precision is None:
        precision = np.result_type(np.dtype(b.dtype_of(x)), np.dtype(b.dtype_of(scale))).name
        if np.dtype(precision).kind != "f":
            precision = "float64"  # an int32 input or scale divides as numpy's true division does
    quotient = b.call(
        "divide",
        b.call("cast", x, dtype=precision) if b.dtype_of(x) != precision else x,
        broadcast_quant_param(ctx, b.call("cast", scale, dtype=precision), x, axis, block_size),
    )
    if zero_point is not None:
        zero_point = broadcast_quant_param(ctx, zero_point, x, axis, block_size)
    return _saturated(ctx, b.call("round", quotient), zero_point, dtype)


@converter("DequantizeLinear")
def dequantize_linear(ctx):
    b = ctx.b
    x, scale, zero_point = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    axis, block_size = _granularity(ctx)
    x_dtype = b.dtype_of(x)
    if x_dtype not in _QUANT_RANGES and x_dtype != "int32":
        raise ctx.unsupported(f"dequantizing {x_dtype} (Relay's quantized types are {', '.join(_QUANT_RANGES)}, int32)")
    out_dtype = (_float_dtype_attr(ctx, "output_dtype") if ctx.opset >= 23 else None) or b.dtype_of(scale)
    # x - zero_point is exact in a wider integer type; the product runs in float32 as in the reference.
    wide = "int64" if x_dtype == "int32" else "int32"
    shifted = b.call("cast", x, dtype=wide)
    if zero_point is not None:
        if b.dtype_of(zero_point) != x_dtype:
            raise b.error(f"the zero point's type {b.dtype_of(zero_point)} differs from the input's {x_dtype}")
        zero_point = broadcast_quant_param(ctx, b.call("cast", zero_point, dtype=wide), x, axis, block_size)
        shifted = b.call("subtract", shifted, zero_point)
    compute = "float64" if b.dtype_of(scale) == "float64" else "float32"
    scale = broadcast_quant_param(ctx, b.call("cast", scale, dtype=compute), x, axis, block_size)
    y = b.call("multiply", b.call("cast", shifted, dtype=compute), scale)
    return y if out_dtype == compute else b.call("cast", y, dtype=out_dtype)


@converter("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx):
    b = ctx.b
    x = ctx.input(0)
    dtype = b.dtype_of(x)
    if dtype != "float32":
        raise b.error(f"DynamicQuantizeLinear takes float32, got {b.type_of(x)}")

    def scalar(value):
        return b.const(np.array(value, dtype="float32"))

    # The range always includes 0 so that 0 quantizes exactly.
    high = b.call("maximum", scalar(0), b.call("max", x))
    low = b.call("minimum", scalar(0), b.call("min", x))
    span = b.call("subtract", high, low)
    span = b.call("where", b.call("equal", span, scalar(0)), scalar(1), span)
    scale = b.call("divide", span, scalar(255))
    zero_point = b.call(
        "round", b.call("clip", b.call("negative", b.call("divide", low, scale)), a_min=0.0, a_max=255.0)
    )
    y = b.call("add", b.call("round", b.call("divide", x, scale)), zero_point)
    y = b.call("cast", b.call("clip", y, a_min=0.0, a_max=255.0), dtype="uint8")
    return [y, scale, b.call("cast", zero_point, dtype="uint8")]
