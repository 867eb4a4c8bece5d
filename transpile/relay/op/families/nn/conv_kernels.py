"""Vectorized numpy convolution kernels in NCHW / OIHW (im2col + batched matmul)."""

from __future__ import annotations

import numpy as np


def conv2d_nchw(data, weight, strides, padding, dilation, groups, acc_dtype):
    """data (N, C, H, W), weight (O, C // groups, KH, KW), padding (top, left, bottom, right)."""
    data = data.astype(acc_dtype, copy=False)
    weight = weight.astype(acc_dtype, copy=False)
    n, c, h, w = data.shape
    o, ig, kh, kw = weight.shape
    top, left, bottom, right = padding
    sh, sw = strides
    dh, dw = dilation
    oh = (h + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w + left + right - ((kw - 1) * dw + 1)) // sw + 1
    if ig == 1:
        return _depthwise(data, weight, (oh, ow), strides, padding, dilation, groups)
    # Channels-last patches: (N, OH, OW, KH, KW, C) makes the GEMM (P x K) @ (K x O), which BLAS
    # runs faster than the (O x K) @ (K x P) orientation when O is small.
    padded = np.pad(data.transpose(0, 2, 3, 1), ((0, 0), (top, bottom), (left, right), (0, 0)))
    cols = np.empty((n, oh, ow, kh, kw, c), dtype=acc_dtype)
    for ky in range(kh):
        y0 = ky * dh
        for kx in range(kw):
            x0 = kx * dw
            cols[:, :, :, ky, kx] = padded[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw]
    og = o // groups
    if groups == 1:
        kernel = weight.transpose(2, 3, 1, 0).reshape(kh * kw * c, o)
        out = np.matmul(cols.reshape(n, oh * ow, kh * kw * c), kernel)  # (N, P, O)
        return out.transpose(0, 2, 1).reshape(n, o, oh, ow)
    cols = (
        cols.reshape(n, oh * ow, kh * kw, groups, ig).transpose(0, 3, 1, 2, 4).reshape(n, groups, oh * ow, kh * kw * ig)
    )
    kernel = weight.reshape(groups, og, ig, kh, kw).transpose(0, 3, 4, 2, 1).reshape(groups, kh * kw * ig, og)
    out = np.matmul(cols, kernel[None])  # (N, G, P, Og)
    return out.transpose(0, 1, 3, 2).reshape(n, o, oh, ow)


def _depthwise(data, weight, out_hw, strides, padding, dilation, groups):
    """One input channel per group: a multiply-accumulate per kernel tap, no GEMM needed."""
    n, c, h, w = data.shape
    o, _, kh, kw = weight.shape
    oh, ow = out_hw
    top, left, bottom, right = padding
    sh, sw = strides
    dh, dw = dilation
    padded = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)))
    if o != c:
        # Output channel j of group g reads input channel g (g = j // (o // groups)).
        padded = padded[:, np.arange(o) // (o // groups)]
    out = np.zeros((n, o, oh, ow), dtype=data.dtype)
    for ky in range(kh):
        y0 = ky * dh
        for kx in range(kw):
            x0 = kx * dw
            window = padded[:, :, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw]
            out += window * weight[None, :, 0, ky, kx, None, None]
    return out


def conv2d_transpose_nchw(data, weight, strides, padding, dilation, output_padding, groups, acc_dtype):
    """data (N, C, H, W), weight (C, O // groups, KH, KW): scatter each input pixel through the kernel."""
    data = data.astype(acc_dtype, copy=False)
    weight = weight.astype(acc_dtype, copy=False)
    n, c, h, w = data.shape
    _, og, kh, kw = weight.shape
    ig = c // groups
    top, left, bottom, right = padding
    sh, sw = strides
    dh, dw = dilation
    full_h = sh * (h - 1) + (kh - 1) * dh + 1
    full_w = sw * (w - 1) + (kw - 1) * dw + 1
    oh = full_h - top - bottom + output_padding[0]
    ow = full_w - left - right + output_padding[1]
    canvas = np.zeros((n, groups, og, max(full_h, top + oh), max(full_w, left + ow)), dtype=acc_dtype)
    grouped = data.reshape(n, groups, ig, h * w)
    # kernel[g, ky, kx] is (og, ig): output channel o of group g from input channel i of group g.
    kernel = weight.reshape(groups, ig, og, kh, kw).transpose(0, 3, 4, 2, 1)
    for ky in range(kh):
        for kx in range(kw):
            contribution = np.matmul(kernel[None, :, ky, kx], grouped).reshape(n, groups, og, h, w)
            y0, x0 = ky * dh, kx * dw
            canvas[:, :, :, y0 : y0 + sh * (h - 1) + 1 : sh, x0 : x0 + sw * (w - 1) + 1 : sw] += contribution
    out = canvas[:, :, :, top : top + oh, left : left + ow]
    return out.reshape(n, groups * og, oh, ow)
