"""Direct TE computes of nn.contrib_conv2d_NCHWc on channel-blocked data (no unpacking).

    data   NCHW[x]c        (N, C/x, H, W, x)
    weight OIHW[x]i[y]o    (K/y, C/x, KH, KW, x, y)      groups == 1
           OIHW1i[y]o      (C/y, 1, KH, KW, 1, y)        depthwise (groups == C, x == y)
    out    NCHW[y]c        (N, K/y, OH, OW, y)

The blocks are named `conv2d_NCHWc` and `depthwise_conv2d_NCHWc` (the packed schedules find them
by name) and read a zero-padded copy of the data named `data_pad` when there is padding.
"""

from __future__ import annotations

import re

from ._common import padding_2d, spatial_pair
from .te_common import accumulate_dtype, cast, ints

__all__ = ["direct_nchwc", "CONV_BLOCK", "DEPTHWISE_BLOCK", "PAD_BLOCK"]

CONV_BLOCK = "conv2d_NCHWc"
DEPTHWISE_BLOCK = "depthwise_conv2d_NCHWc"
PAD_BLOCK = "data_pad"

_DATA = re.compile(r"^NCHW(\d+)c$")
_KERNEL = re.compile(r"^OIHW(\d+)i(\d+)o$")


def _blocks(attrs):
    """(data block, kernel in-block, kernel out-block, out block), or None for other layouts."""
    data = _DATA.match(attrs.data_layout)
    kernel = _KERNEL.match(attrs.kernel_layout)
    out = _DATA.match(attrs.out_layout or attrs.data_layout)
    if not (data and kernel and out):
        return None
    return int(data[1]), int(kernel[1]), int(kernel[2]), int(out[1])


def _padded(data, top, left, bottom, right):
    from tvm import te, tirx

    if not (top or left or bottom or right):
        return data
    n, c, h, w, b = data.shape

    def element(i, j, y, x, k):
        inside = tirx.all(y >= top, y < h + top, x >= left, x < w + left)
        return tirx.if_then_else(inside, data[i, j, y - top, x - left, k], tirx.const(0, data.dtype))

    return te.compute((n, c, h + top + bottom, w + left + right, b), element, name=PAD_BLOCK, tag="pad")


def direct_nchwc(inputs, attrs, out_type):
    """The blocked compute for groups == 1 or depthwise with matching blocks, else None (caller falls back)."""
    from tvm import te

    blocks = _blocks(attrs)
    if blocks is None:
        return None
    data_block, in_block, out_block, result_block = blocks
    data, weight = inputs
    if any(not isinstance(getattr(d, "value", None), int) for d in (*data.shape, *weight.shape)):
        return None
    n, c_outer, h, w, _ = (int(d) for d in data.shape)
    k_outer, w_in, kh, kw, _, _ = (int(d) for d in weight.shape)
    channels = c_outer * data_block
    groups = attrs.groups
    depthwise = groups == channels and groups > 1 and in_block == 1 and w_in == 1
    if result_block != out_block or not (groups == 1 and in_block == data_block or depthwise and out_block == data_block):
        return None
    sh, sw = ints(spatial_pair(attrs.strides, "", "strides"))
    dh, dw = ints(spatial_pair(attrs.dilation, "", "dilation"))
    top, left, bottom, right = ints(padding_2d(attrs.padding, ""))
    oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (w + left + right - (kw - 1) * dw - 1) // sw + 1
    acc = accumulate_dtype(out_type.dtype)
    padded = _padded(data, top, left, bottom, right)
    rh = te.reduce_axis((0, kh), name="rh")
    rw = te.reduce_axis((0, kw), name="rw")
    if depthwise:

        def depthwise_element(i, o, y, x, b):
            tap = padded[i, o, y * sh + rh * dh, x * sw + rw * dw, b].astype(acc)
            return te.sum(tap * weight[o, 0, rh, rw, 0, b].astype(acc), axis=[rh, rw])

        out = te.compute((n, k_outer, oh, ow, out_block), depthwise_element, name=DEPTHWISE_BLOCK)
    else:
        rco = te.reduce_axis((0, c_outer), name="rco")
        rci = te.reduce_axis((0, data_block), name="rci")

        def conv_element(i, o, y, x, b):
            tap = padded[i, rco, y * sh + rh * dh, x * sw + rw * dw, rci].astype(acc)
            return te.sum(tap * weight[o, rco, rh, rw, rci, b].astype(acc), axis=[rco, rh, rw, rci])

        out = te.compute((n, k_outer, oh, ow, out_block), conv_element, name=CONV_BLOCK)
    return cast(out, out_type.dtype)
