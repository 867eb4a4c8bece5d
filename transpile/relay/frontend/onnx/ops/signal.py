"""Converters of ONNX signal processing: DFT, STFT (products with constant DFT matrices) and MelWeightMatrix (folded).

A DFT of length n along one axis is linear in the (real, imaginary) pairs of the signal, so it
is one `nn.dense` with a constant matrix built in float64: the signal axis and its trailing
complex axis are flattened to (t, re/im) rows, the output to (k, re/im) columns. Zero padding or
truncation to `dft_length`, one-sided output, the inverse's 1/n and IRFFT's Hermitian weights
are all entries of that matrix, and STFT folds a constant window into it too.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .shape_values import int_scalar_input, needs_constant, normalize_axis
from .values import relay_dtype


def dft_matrix(
    length: int, n: int, in_parts: int, inverse: bool, onesided: bool, window=None
) -> tuple[np.ndarray, int]:
    """(matrix, output parts): maps (t, part) rows of a length-`length` signal to (k, part) columns.

    in_parts is 1 (real) or 2 (complex); the output is real (1 part) only for the IRFFT
    (inverse and onesided), whose input holds the one-sided spectrum.
    """
    if inverse and onesided:  # IRFFT: n real samples from bins 0 .. n // 2
        bins = min(length, n // 2 + 1)
        k = np.arange(bins).reshape(-1, 1)
        t = np.arange(n).reshape(1, -1)
        theta = 2 * np.pi * ((k * t) % n) / n
        weight = np.full((bins, 1), 2.0)
        weight[0] = 1.0
        if n % 2 == 0 and n // 2 < bins:
            weight[n // 2] = 1.0
        re_to_re, im_to_re = weight * np.cos(theta) / n, -weight * np.sin(theta) / n
        blocks = {(0, 0): re_to_re, (1, 0): im_to_re}
        out_parts, rows = 1, bins
    else:
        out_len = n // 2 + 1 if onesided else n
        rows = min(length, n)  # samples past dft_length are dropped, missing ones are zeros
        t = np.arange(rows).reshape(-1, 1)
        k = np.arange(out_len).reshape(1, -1)
        theta = 2 * np.pi * ((t * k) % n) / n
        cos, sin = np.cos(theta), np.sin(theta)
        if inverse:  # x e^{+i theta} / n
            cos, sin = cos / n, sin / n
            blocks = {(0, 0): cos, (0, 1): sin, (1, 0): -sin, (1, 1): cos}
        else:  # x e^{-i theta}
            blocks = {(0, 0): cos, (0, 1): -sin, (1, 0): sin, (1, 1): cos}
        out_parts = 2
    if window is not None:
        scale = np.zeros(rows)
        used = min(rows, len(window))
        scale[:used] = window[:used]
        blocks = {key: block * scale.reshape(-1, 1) for key, block in blocks.items()}
    columns = blocks[(0, 0)].shape[1]
    matrix = np.zeros((length, in_parts, columns, out_parts))
    for (p_in, p_out), block in blocks.items():
        if p_in < in_parts:
            matrix[:rows, p_in, :, p_out] = block
    return matrix.reshape(length * in_parts, columns * out_parts), out_parts


def apply_dft(ctx, x, axis: int, n: int, inverse: bool, onesided: bool, window=None):
    """The DFT of `x` (..., signal ..., parts) along `axis` as a product with a constant matrix."""
    b = ctx.b
    shape = b.shape_of(x)
    rank = len(shape)
    parts = shape[-1]
    if parts not in (1, 2):
        raise b.error(f"the last dimension of {b.type_of(x)} must be 1 (real) or 2 (complex)")
    length = shape[axis]
    if not isinstance(length, int):
        raise b.error(f"the signal axis {axis} of {b.type_of(x)} must have a known size")
    dtype = b.dtype_of(x)
    if np.dtype(dtype).kind != "f":
        raise b.error(f"the signal must be floating point, got {b.type_of(x)}")
    work = "float32" if dtype == "float16" else dtype  # half-precision sums of n terms lose too much
    order = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = x if order == list(range(rank)) else b.call("transpose", x, axes=order)
    if work != dtype:
        moved = b.call("cast", moved, dtype=work)
    matrix, out_parts = dft_matrix(length, n, parts, inverse, onesided, window)
    flat = b.call("reshape", moved, newshape=[0] * (rank - 2) + [length * parts])
    product = b.call("nn.dense", flat, b.const(matrix.T.astype(work)), units=matrix.shape[1])
    out = b.call("reshape", product, newshape=[0] * (rank - 2) + [matrix.shape[1] // out_parts, out_parts])
    if work != dtype:
        out = b.call("cast", out, dtype=dtype)
    if order != list(range(rank)):
        out = b.call("transpose", out, axes=[int(i) for i in np.argsort(order)])
    return out


@converter("DFT")
def dft(ctx):
    b = ctx.b
    x = ctx.input(0)
    rank = b.ndim_of(x)
    if ctx.opset >= 20:
        axis = int_scalar_input(ctx, 2, "the axis of DFT")
        axis = -2 if axis is None else axis
    else:
        axis = int(ctx.attr("axis", 1))
    axis = normalize_axis(ctx, axis, rank)
    if axis == rank - 1:
        raise b.error("the DFT axis cannot be the last (real / imaginary) dimension")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    length = b.shape_of(x)[axis]
    n = int_scalar_input(ctx, 1, "the dft_length of DFT")
    if n is None:
        if not isinstance(length, int):
            raise needs_constant(ctx, f"the length of the signal axis {axis}")
        n = 2 * (length - 1) if inverse and onesided else length
    if n < 1:
        raise b.error(f"dft_length must be positive, got {n}")
    return apply_dft(ctx, x, axis, n, inverse, onesided)


@converter("STFT")
def stft(ctx):
    b = ctx.b
    signal, window_input = ctx.input(0), ctx.input(2, required=False)
    if b.ndim_of(signal) != 3:
        raise b.error(f"the signal must be [batch][length][1 or 2], got {b.type_of(signal)}")
    length = b.static_shape(signal, "the signal")[1]
    step = int_scalar_input(ctx, 1, "the frame_step of STFT")
    frame_length = int_scalar_input(ctx, 3, "the frame_length of STFT")
    if window_input is not None:
        window_length = b.static_shape(window_input, "the window")[0]
        if frame_length is not None and frame_length != window_length:
            raise b.error(f"the window has {window_length} values for frames of {frame_length}")
        frame_length = window_length
    if frame_length is None:
        frame_length = length
    if step is None or step < 1 or not 1 <= frame_length <= length:
        raise b.error(f"frame_step {step} and frame_length {frame_length} do not frame a signal of {length}")
    frames = 1 + (length - frame_length) // step
    positions = np.arange(frames).reshape(-1, 1) * step + np.arange(frame_length).reshape(1, -1)
    framed = b.call("take", signal, b.const(positions.astype("int64")), axis=1)  # (B, frames, frame_length, parts)
    window = None
    if window_input is not None:
        window = b.value_of(window_input)
        if window is None:  # a run-time window multiplies the frames instead of the matrix
            dtype = b.dtype_of(signal)
            weights = window_input if b.dtype_of(window_input) == dtype else b.call("cast", window_input, dtype=dtype)
            framed = b.call("multiply", framed, b.call("reshape", weights, newshape=[-1, 1]))
        else:
            window = np.asarray(window, dtype="float64")
    return apply_dft(ctx, framed, 2, frame_length, False, bool(ctx.attr("onesided", 1)), window)


@converter("MelWeightMatrix")
def mel_weight_matrix(ctx):
    values = [np.asarray(ctx.input_value(i, f"input {i} of MelWeightMatrix")) for i in range(5)]
    if any(v.size != 1 for v in values):
        raise ctx.b.error("the inputs of MelWeightMatrix must be scalars")
    dtype = relay_dtype(ctx, int(ctx.attr("output_datatype", 1)), "attribute 'output_datatype'")
    return ctx.b.const(mel_weights(*(v.reshape(()) for v in values)).astype(dtype))


def mel_weights(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) -> np.ndarray:
    """The (dft_length // 2 + 1, num_mel_bins) matrix of triangular mel filters, in float64.

    The band edges are num_mel_bins + 2 points evenly spaced on the mel scale
    (2595 log10(1 + f / 700)), mapped back to hertz and then to DFT bins by
    floor((dft_length + 1) f / sample_rate); arithmetic in the inputs' own types.
    """
    bins = int(num_mel_bins)
    log10 = np.log(10)
    low_mel = 2595 * np.log1p(lower_edge_hertz / 700) / log10
    high_mel = 2595 * np.log1p(upper_edge_hertz / 700) / log10
    points = np.arange(0, bins + 2)
    mels = points * ((high_mel - low_mel) / points.shape[0]) + low_mel
    hertz = 700 * np.expm1(mels / 2595 * log10)
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(int)
    out = np.zeros((int(dft_length) // 2 + 1, bins))
    for band in range(bins):
        left, center, right = edges[band], edges[band + 1], edges[band + 2]
        if center == left:
            out[center, band] = 1.0
        else:
            rising = np.arange(left, center + 1)
            out[rising, band] = (rising - left) / float(center - left)
        if right > center:
            falling = np.arange(center, right)
            out[falling, band] = (right - falling) / float(right - center)
    return out
