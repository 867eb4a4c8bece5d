"""Numpy convolution kernels over any number of spatial axes (NC + spatial data, one contraction per kernel tap).

The 2-D kernels in conv_kernels.py are faster (im2col + one GEMM); these serve conv3d and the
1-D / 3-D transposed convolutions, where a loop over the kernel taps keeps memory small.
"""

from __future__ import annotations

import numpy as np


def _tap_window(offsets, dilation, strides, counts) -> tuple:
    """The strided slice of every spatial axis that one kernel tap reads (or writes) for all positions."""
    return tuple(slice(t * d, t * d + s * (n - 1) + 1, s) for t, d, s, n in zip(offsets, dilation, strides, counts))


def conv_nd(data, weight, strides, pads, dilation, groups, acc_dtype):
    """data (N, C, *S), weight (O, C // groups, *K), pads (before..., after...) -> (N, O, *out)."""
    data = data.astype(acc_dtype, copy=False)
    weight = weight.astype(acc_dtype, copy=False)
    n, _, *sizes = data.shape
    o, ig, *kernel = weight.shape
    nd = len(sizes)
    outs = [
        (sizes[i] + pads[i] + pads[i + nd] - ((kernel[i] - 1) * dilation[i] + 1)) // strides[i] + 1 for i in range(nd)
    ]
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)]
    padded = np.pad(data, widths).reshape(n, groups, ig, *[s + pads[i] + pads[i + nd] for i, s in enumerate(sizes)])
    grouped = weight.reshape(groups, o // groups, ig, *kernel)
    out = np.zeros((n, groups, o // groups, *outs), dtype=acc_dtype)
    for tap in np.ndindex(*kernel):
        window = padded[(Ellipsis,) + _tap_window(tap, dilation, strides, outs)]
        out += np.einsum("ngi...,goi->ngo...", window, grouped[(Ellipsis,) + tap])
    return out.reshape(n, o, *outs)


def conv_transpose_nd(data, weight, strides, pads, dilation, output_padding, groups, acc_dtype):
    """data (N, C, *S), weight (C, O // groups, *K): scatter every input position through the kernel."""
    data = data.astype(acc_dtype, copy=False)
    weight = weight.astype(acc_dtype, copy=False)
    n, c, *sizes = data.shape
    _, og, *kernel = weight.shape
    nd = len(sizes)
    ig = c // groups
    full = [strides[i] * (sizes[i] - 1) + (kernel[i] - 1) * dilation[i] + 1 for i in range(nd)]
    outs = [full[i] - pads[i] - pads[i + nd] + output_padding[i] for i in range(nd)]
    # output_padding may reach past the scattered extent: those positions stay zero.
    canvas = np.zeros((n, groups, og, *[max(full[i], pads[i] + outs[i]) for i in range(nd)]), dtype=acc_dtype)
    grouped_data = data.reshape(n, groups, ig, *sizes)
    grouped_weight = weight.reshape(groups, ig, og, *kernel)
    for tap in np.ndindex(*kernel):
        contribution = np.einsum("ngi...,gio->ngo...", grouped_data, grouped_weight[(Ellipsis,) + tap])
        canvas[(Ellipsis,) + _tap_window(tap, dilation, strides, sizes)] += contribution
    crop = tuple(slice(pads[i], pads[i] + outs[i]) for i in range(nd))
    return canvas[(Ellipsis,) + crop].reshape(n, groups * og, *outs)
