"""Converters of ONNX convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv (1-D, 2-D and 3-D).

Also the padding arithmetic every windowed operator shares (`auto_pad`, `pads`, strides and
dilations), which the pooling converters import from here.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter

_CONV_OPS = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}
_CONV_TRANSPOSE_OPS = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose", 3: "nn.conv3d_transpose"}
_DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


# ---------------------------------------------------------------------------------- shared window arithmetic


def spatial_rank(ctx, data, what: str = "input", limit: int = 3) -> int:
    """The number of spatial dimensions of an N x C x D1 x ... tensor; unsupported beyond `limit`."""
    rank = ctx.b.ndim_of(data)
    if rank < 3:
        raise ctx.b.error(f"{what} must be N x C x D1 x ..., got rank {rank}")
    if rank - 2 > limit:
        raise ctx.unsupported(f"{rank - 2} spatial dimensions (Relay has 1-D to {limit}-D {ctx.op_type})")
    return rank - 2


def int_attr_list(ctx, name: str, count: int, default: int) -> list[int]:
    """An ints attribute with one value per spatial dimension (all `default` when absent)."""
    values = ctx.attr(name)
    if values is None:
        return [default] * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise ctx.b.error(f"attribute {name} has {len(values)} values, expected {count} (one per spatial dimension)")
    return values


def window_pads(ctx, in_sizes, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """(begin, end) padding per spatial dimension from `auto_pad` and `pads`.

    SAME_* pad so that the output has ceil(in / stride) elements, the odd one at the end (UPPER)
    or the beginning (LOWER); that needs the input's spatial sizes at import.
    """
    nd = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in _AUTO_PADS:
        raise ctx.b.error(f"auto_pad must be one of {', '.join(_AUTO_PADS)}, got {auto_pad!r}")
    if auto_pad == "VALID":
        return [0] * nd, [0] * nd
    if auto_pad == "NOTSET":
        pads = int_attr_list(ctx, "pads", 2 * nd, 0)
        return pads[:nd], pads[nd:]
    begin, end = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        if not isinstance(size, int):
            raise ctx.b.error(f"auto_pad={auto_pad} needs the input's spatial dimensions at import, got {size}")
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin, end


def static_ints(shape) -> list:
    """Static dimensions as ints, unknown ones kept as they are (AnyDim)."""
    return [d if not isinstance(d, (int, np.integer)) else int(d) for d in shape]


# ---------------------------------------------------------------------------------- Conv


def _kernel_sizes(ctx, weight, nd: int) -> list[int]:
    kernel = ctx.b.shape_of(weight)[2:]
    if any(not isinstance(k, int) for k in kernel):
        raise ctx.b.error(f"the kernel's spatial dimensions must be known at import, got {ctx.b.type_of(weight)}")
    declared = ctx.attr("kernel_shape")
    if declared is not None and [int(k) for k in declared] != list(kernel):
        raise ctx.b.error(f"kernel_shape {list(declared)} does not match the weight's spatial shape {list(kernel)}")
    return list(kernel)


def convolution(ctx, data, weight, out_dtype: str = ""):
    """ONNX Conv semantics (without bias) of `data` and `weight` as a registry convolution."""
    b = ctx.b
    nd = spatial_rank(ctx, data)
    if b.ndim_of(weight) != nd + 2:
        raise b.error(f"the weight {b.type_of(weight)} must have rank {nd + 2} like the input {b.type_of(data)}")
    kernel = _kernel_sizes(ctx, weight, nd)
    strides = int_attr_list(ctx, "strides", nd, 1)
    dilations = int_attr_list(ctx, "dilations", nd, 1)
    begin, end = window_pads(ctx, static_ints(b.shape_of(data)[2:]), kernel, strides, dilations)
    layout = _DATA_LAYOUTS[nd]
    return b.call(
        _CONV_OPS[nd],
        data,
        weight,
        strides=tuple(strides),
        padding=tuple(begin + end),
        dilation=tuple(dilations),
        groups=int(ctx.attr("group", 1)),
        kernel_size=tuple(kernel),
        data_layout=layout,
        kernel_layout="OI" + layout[2:],
        out_dtype=out_dtype,
    )


def _add_bias(ctx, out, bias):
    if bias is None:
        return out
    if ctx.b.dtype_of(bias) != ctx.b.dtype_of(out):
        bias = ctx.b.call("cast", bias, dtype=ctx.b.dtype_of(out))
    return ctx.b.call("nn.bias_add", out, bias, axis=1)


@converter("Conv")
def conv(ctx):
    out = convolution(ctx, ctx.input(0), ctx.input(1))
    return _add_bias(ctx, out, ctx.input(2, required=False))


# ---------------------------------------------------------------------------------- integer and quantized Conv


def _shifted(ctx, value, zero_point, channel_axis_rank: int | None = None):
    """`value - zero_point` in int32; a per-channel zero point is laid along axis 0 of a rank-`channel_axis_rank` tensor."""
    b = ctx.b
    value = b.call("cast", value, dtype="int32")
    if zero_point is None:
        return value
    zero_point = b.call("cast", zero_point, dtype="int32")
    if channel_axis_rank is not None and b.ndim_of(zero_point) == 1 and b.shape_of(zero_point)[0] != 1:
        zero_point = b.call("reshape", zero_point, newshape=(-1,) + (1,) * (channel_axis_rank - 1))
    elif b.ndim_of(zero_point) == 1:
        zero_point = b.call("reshape", zero_point, newshape=())
    return b.call("subtract", value, zero_point)


@converter("ConvInteger")
def conv_integer(ctx):
    b = ctx.b
    data = _shifted(ctx, ctx.input(0), ctx.input(2, required=False))
    weight = ctx.input(1)
    weight = _shifted(ctx, weight, ctx.input(3, required=False), channel_axis_rank=b.ndim_of(weight))
    return convolution(ctx, data, weight, out_dtype="int32")


def requantize(ctx, accumulator, scale, zero_point, channel_axis: int | None = None):
    """saturate(round_half_even(accumulator * scale) + zero_point) in the zero point's integer type."""
    b = ctx.b
    dtype = b.dtype_of(zero_point) if zero_point is not None else "uint8"
    if b.dtype_of(scale) != "float32":
        scale = b.call("cast", scale, dtype="float32")
    if channel_axis is not None and b.ndim_of(scale) == 1:
        rank = b.ndim_of(accumulator)
        scale = b.call("reshape", scale, newshape=(-1,) + (1,) * (rank - channel_axis - 1))
    scaled = b.call("round", b.call("multiply", b.call("cast", accumulator, dtype="float32"), scale))
    if zero_point is not None:
        scaled = b.call("add", scaled, b.call("cast", zero_point, dtype="float32"))
    info = np.iinfo(np.dtype(dtype))
    return b.call("cast", b.call("clip", scaled, a_min=float(info.min), a_max=float(info.max)), dtype=dtype)


@converter("QLinearConv")
def qlinear_conv(ctx):
    b = ctx.b
    data, data_scale, data_zero = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    weight, weight_scale, weight_zero = ctx.input(3), ctx.input(4), ctx.input(5, required=False)
    out_scale, out_zero = ctx.input(6), ctx.input(7, required=False)
    rank = b.ndim_of(weight)
    accumulator = convolution(
        ctx,
        _shifted(ctx, data, data_zero),
        _shifted(ctx, weight, weight_zero, channel_axis_rank=rank),
        out_dtype="int32",
    )
    accumulator = _add_bias(ctx, accumulator, ctx.input(8, required=False))
    # The weight scale may be per output channel: it becomes a channel vector like the bias.
    scale = b.call(
        "divide",
        b.call("multiply", b.call("cast", data_scale, dtype="float32"), b.call("cast", weight_scale, dtype="float32")),
        b.call("cast", out_scale, dtype="float32"),
    )
    return requantize(ctx, accumulator, scale, out_zero, channel_axis=1)


# ---------------------------------------------------------------------------------- ConvTranspose


def _transpose_pads(ctx, in_sizes, kernel, strides, dilations, output_padding):
    """(begin, end) cropping of the full transposed convolution; negative values grow the output."""
    nd = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in _AUTO_PADS:
        raise ctx.b.error(f"auto_pad must be one of {', '.join(_AUTO_PADS)}, got {auto_pad!r}")
    output_shape = ctx.attr("output_shape")
    if output_shape is not None:
        output_shape = [int(v) for v in output_shape]
        if len(output_shape) == nd + 2:
            output_shape = output_shape[2:]
        if len(output_shape) != nd:
            raise ctx.b.error(f"output_shape {output_shape} must give the {nd} spatial dimensions")
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [None] * nd
    else:
        if auto_pad == "VALID":
            return [0] * nd, [0] * nd
        pads = int_attr_list(ctx, "pads", 2 * nd, 0)
        return pads[:nd], pads[nd:]
    begin, end = [], []
    for i in range(nd):
        if not isinstance(in_sizes[i], int):
            raise ctx.b.error(
                f"output_shape / auto_pad need the input's spatial dimensions at import, got {in_sizes[i]}"
            )
        full = strides[i] * (in_sizes[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1
        wanted = output_shape[i] if output_shape[i] is not None else in_sizes[i] * strides[i]
        total = full - wanted
        # Python's floor division is what the spec's integer "/ 2" means for negative totals too.
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin, end


@converter("ConvTranspose")
def conv_transpose(ctx):
    b = ctx.b
    data, weight = ctx.input(0), ctx.input(1)
    nd = spatial_rank(ctx, data)
    if b.ndim_of(weight) != nd + 2:
        raise b.error(f"the weight {b.type_of(weight)} must have rank {nd + 2} like the input {b.type_of(data)}")
    kernel = _kernel_sizes(ctx, weight, nd)
    strides = int_attr_list(ctx, "strides", nd, 1)
    dilations = int_attr_list(ctx, "dilations", nd, 1)
    output_padding = int_attr_list(ctx, "output_padding", nd, 0)
    groups = int(ctx.attr("group", 1))
    begin, end = _transpose_pads(ctx, static_ints(b.shape_of(data)[2:]), kernel, strides, dilations, output_padding)
    layout = _DATA_LAYOUTS[nd]
    out = b.call(
        _CONV_TRANSPOSE_OPS[nd],
        data,
        weight,
        strides=tuple(strides),
        padding=tuple(max(p, 0) for p in begin + end),
        dilation=tuple(dilations),
        output_padding=tuple(output_padding),
        groups=groups,
        kernel_size=tuple(kernel),
        data_layout=layout,
        kernel_layout="IO" + layout[2:],
    )
    if any(p < 0 for p in begin + end):
        # A negative pad asks for output beyond the full transposed convolution, where nothing lands: zeros.
        widths = ((0, 0), (0, 0)) + tuple((max(-lo, 0), max(-hi, 0)) for lo, hi in zip(begin, end))
        out = b.call("nn.pad", out, b.const(np.array(0, dtype=b.dtype_of(out))), pad_width=widths)
    return _add_bias(ctx, out, ctx.input(2, required=False))
