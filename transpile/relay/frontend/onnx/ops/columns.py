"""Converters of ONNX operators on image columns: Col2Im (a transposed convolution) and DeformConv (sampled columns).

Col2Im sums every column entry into the image pixel its kernel tap covers: exactly a grouped
transposed convolution whose kernel is one-hot per (channel, tap). DeformConv samples each
kernel tap at its offset position (bilinear, zero outside the image), scales it by the mask,
and multiplies the resulting columns by the weight, group by group.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .conv import int_attr_list

_CONV_TRANSPOSE_OPS = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose", 3: "nn.conv3d_transpose"}
_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _scalar(b, value, dtype):
    return b.const(np.array(value, dtype=dtype))


@converter("Col2Im")
def col2im(ctx):
    b = ctx.b
    columns = ctx.input(0)
    image = [int(v) for v in np.asarray(ctx.input_value(1, "the image_shape of Col2Im")).reshape(-1)]
    kernel = [int(v) for v in np.asarray(ctx.input_value(2, "the block_shape of Col2Im")).reshape(-1)]
    nd = len(image)
    if len(kernel) != nd:
        raise b.error(f"image_shape {image} and block_shape {kernel} must have the same length")
    if nd not in _CONV_TRANSPOSE_OPS:
        raise ctx.unsupported(f"{nd} spatial dimensions (Relay has 1-D to 3-D transposed convolutions)")
    if b.ndim_of(columns) != 3:
        raise b.error(f"the input must be N x (C * prod(block_shape)) x L, got {b.type_of(columns)}")
    strides = int_attr_list(ctx, "strides", nd, 1)
    dilations = int_attr_list(ctx, "dilations", nd, 1)
    pads = int_attr_list(ctx, "pads", 2 * nd, 0)
    begin, end = pads[:nd], pads[nd:]
    taps = int(np.prod(kernel))
    _, rows, length = b.shape_of(columns)
    if not isinstance(rows, int) or rows % taps:
        raise b.error(f"dimension 1 of {b.type_of(columns)} must be a multiple of prod(block_shape) = {taps}")
    channels = rows // taps
    blocks = [
        (size + lo + hi - d * (k - 1) - 1) // s + 1
        for size, lo, hi, d, k, s in zip(image, begin, end, dilations, kernel, strides)
    ]
    if min(blocks) < 1 or (isinstance(length, int) and length != int(np.prod(blocks))):
        raise b.error(f"{b.type_of(columns)} does not hold the {blocks} blocks image_shape {image} has")
    covered = [
        (n - 1) * s + d * (k - 1) + 1 - lo - hi
        for n, s, d, k, lo, hi in zip(blocks, strides, dilations, kernel, begin, end)
    ]
    weight = np.zeros((channels * taps, 1, taps), dtype=b.dtype_of(columns))
    weight[:, 0, :] = np.tile(np.eye(taps, dtype=weight.dtype), (channels, 1))
    layout = _LAYOUTS[nd]
    return b.call(
        _CONV_TRANSPOSE_OPS[nd],
        b.call("reshape", columns, newshape=[0, rows] + blocks),
        b.const(weight.reshape([channels * taps, 1] + kernel)),
        channels=channels,
        kernel_size=tuple(kernel),
        strides=tuple(strides),
        padding=tuple(begin + end),
        dilation=tuple(dilations),
        # Rows and columns past the last block's reach get nothing: the remainder of the stride.
        output_padding=tuple(i - c for i, c in zip(image, covered)),
        groups=channels,
        data_layout=layout,
        kernel_layout="IO" + layout[2:],
    )


# ---------------------------------------------------------------------------------- DeformConv


def _sample_taps(b, position, size: int, dtype):
    """The two bilinear taps (clipped index, weight zeroed outside [0, size)) of positions along one axis."""
    low = b.call("floor", position)
    fraction = b.call("subtract", position, low)
    taps = []
    for shift, weight in ((0.0, b.call("subtract", _scalar(b, 1.0, dtype), fraction)), (1.0, fraction)):
        at = b.call("add", low, _scalar(b, shift, dtype))
        inside = b.call(
            "logical_and",
            b.call("greater_equal", at, _scalar(b, 0.0, dtype)),
            b.call("less_equal", at, _scalar(b, float(size - 1), dtype)),
        )
        index = b.call("cast", b.call("clip", at, a_min=0.0, a_max=float(size - 1)), dtype="int64")
        taps.append((index, b.call("where", inside, weight, _scalar(b, 0.0, dtype))))
    return taps


@converter("DeformConv")
def deform_conv(ctx):
    b = ctx.b
    x, weight, offset = ctx.input(0), ctx.input(1), ctx.input(2)
    bias, mask = ctx.input(3, required=False), ctx.input(4, required=False)
    if b.ndim_of(x) != 4:
        raise ctx.unsupported(f"{b.ndim_of(x) - 2}-D DeformConv (2-D only, as onnx's reference)")
    batch, channels, height, width = b.static_shape(x, "the input")
    out_channels, group_channels, kernel_h, kernel_w = b.static_shape(weight, "the weight")
    _, _, out_h, out_w = b.static_shape(offset, "the offset")
    dtype = b.dtype_of(x)
    groups, offset_groups = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    if channels != group_channels * groups or out_channels % groups or channels % offset_groups:
        raise b.error(
            f"channels {channels} / {out_channels} do not split into {groups} groups / {offset_groups} offset groups"
        )
    declared = ctx.attr("kernel_shape")
    if declared is not None and list(declared) != [kernel_h, kernel_w]:
        raise b.error(f"kernel_shape {declared} differs from the weight's {[kernel_h, kernel_w]}")
    stride_h, stride_w = int_attr_list(ctx, "strides", 2, 1)
    dilation_h, dilation_w = int_attr_list(ctx, "dilations", 2, 1)
    pad_top, pad_left, _, _ = int_attr_list(ctx, "pads", 4, 0)
    taps = kernel_h * kernel_w
    # offset (N, G * kh * kw * 2, oh, ow): per offset group and tap, a (dy, dx) pair.
    offset = b.call("reshape", offset, newshape=[batch, offset_groups, kernel_h, kernel_w, 2, out_h, out_w])
    base_y = (np.arange(kernel_h) * dilation_h).reshape(1, 1, -1, 1, 1, 1) + (
        np.arange(out_h) * stride_h - pad_top
    ).reshape(1, 1, 1, 1, -1, 1)
    base_x = (np.arange(kernel_w) * dilation_w).reshape(1, 1, 1, -1, 1, 1) + (
        np.arange(out_w) * stride_w - pad_left
    ).reshape(1, 1, 1, 1, 1, -1)
    y = b.call("add", b.call("take", offset, b.const(np.array(0)), axis=4), b.const(base_y.astype(dtype)))
    x_pos = b.call("add", b.call("take", offset, b.const(np.array(1)), axis=4), b.const(base_x.astype(dtype)))
    # Channels last, per offset group: (N, G, H * W, C / G), gathered with (N, G, samples) indices.
    pixels = b.call("reshape", x, newshape=[batch, offset_groups, channels // offset_groups, height * width])
    pixels = b.call("transpose", pixels, axes=[0, 1, 3, 2])
    samples = None
    for row, row_weight in _sample_taps(b, y, height, dtype):
        for col, col_weight in _sample_taps(b, x_pos, width, dtype):
            index = b.call("add", b.call("multiply", row, _scalar(b, width, "int64")), col)
            index = b.call("reshape", index, newshape=[batch, offset_groups, -1])
            values = b.call("take", pixels, index, axis=2, batch_dims=2)  # (N, G, taps * oh * ow, C / G)
            tap_weight = b.call(
                "reshape", b.call("multiply", row_weight, col_weight), newshape=[batch, offset_groups, -1, 1]
            )
            term = b.call("multiply", values, tap_weight)
            samples = term if samples is None else b.call("add", samples, term)
    if mask is not None:
        samples = b.call("multiply", samples, b.call("reshape", mask, newshape=[batch, offset_groups, -1, 1]))
    # Columns (groups, C / group * taps, N * oh * ow), channel-major like the weight's rows.
    columns = b.call(
        "reshape", samples, newshape=[batch, offset_groups, taps, out_h * out_w, channels // offset_groups]
    )
    columns = b.call("transpose", columns, axes=[0, 1, 4, 2, 3])
    columns = b.call("reshape", columns, newshape=[batch, groups, group_channels * taps, out_h * out_w])
    columns = b.call(
        "reshape", b.call("transpose", columns, axes=[1, 2, 0, 3]), newshape=[groups, group_channels * taps, -1]
    )
    kernels = b.call("reshape", weight, newshape=[groups, out_channels // groups, group_channels * taps])
    out = b.call("nn.batch_matmul", kernels, columns, transpose_a=False, transpose_b=False)
    out = b.call("reshape", out, newshape=[out_channels, batch, out_h, out_w])
    out = b.call("transpose", out, axes=[1, 0, 2, 3])
    if bias is not None:
        out = b.call("nn.bias_add", out, bias, axis=1)
    return out
