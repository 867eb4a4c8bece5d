"""Converters that pad, crop, reverse or mask whole tensors: Pad, CenterCropPad, ReverseSequence, Trilu, Einsum."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .shape_values import int_list_input, normalize_axes, normalize_axis

# ---------------------------------------------------------------- Pad


def _pads_and_value(ctx, x):
    """(pads as 2*len(axes) ints, axes, the constant value expression or None) across Pad's opsets."""
    b = ctx.b
    rank = b.ndim_of(x)
    if ctx.opset < 11:
        pads = ctx.attr("pads" if ctx.opset >= 2 else "paddings")
        value = ctx.attr("value", 0.0)
        fill = b.const(np.array(value, dtype=b.dtype_of(x)))
        axes = list(range(rank))
    else:
        pads = int_list_input(ctx, 1, "pads")
        fill = ctx.input(2, required=False)
        axes = int_list_input(ctx, 3, "axes") if ctx.opset >= 18 else None
        axes = list(range(rank)) if axes is None else normalize_axes(ctx, axes, rank)
    if pads is None or len(pads) != 2 * len(axes):
        raise b.error(f"pads must hold 2 values per padded axis ({len(axes)}), got {pads}")
    return pads, axes, fill


def _wrap_pad(b, x, widths):
    """Pad mode wrap: each padded axis gathers its elements at indices taken modulo its size."""
    dims = b.static_shape(x, "the input of a wrap Pad")
    for axis, (before, after) in enumerate(widths):
        crop_before, crop_after = max(-before, 0), max(-after, 0)
        if crop_before or crop_after:  # negative widths crop that side first
            x = b.call("strided_slice", x, begin=[crop_before], end=[dims[axis] - crop_after], strides=[1], axes=[axis])
        size = dims[axis] - crop_before - crop_after
        before, after = max(before, 0), max(after, 0)
        if before or after:
            indices = np.mod(np.arange(-before, size + after), size).astype("int64")
            x = b.call("take", x, b.const(indices), axis=axis)
    return x


@converter("Pad")
def pad(ctx):
    b = ctx.b
    x = ctx.input(0)
    mode = ctx.attr("mode", "constant")
    pads, axes, fill = _pads_and_value(ctx, x)
    widths = [[0, 0] for _ in range(b.ndim_of(x))]
    for i, axis in enumerate(axes):
        widths[axis] = [pads[i], pads[i + len(axes)]]
    if all(w == [0, 0] for w in widths):
        return x
    if mode == "wrap":
        return _wrap_pad(b, x, widths)
    if mode not in ("constant", "reflect", "edge"):
        raise b.error(f"unknown pad mode {mode!r}")
    dtype = b.dtype_of(x)
    if fill is None or mode != "constant":
        fill = b.const(np.array(0, dtype=dtype))
    else:
        if b.ndim_of(fill):
            fill = b.call("reshape", fill, newshape=())
        if b.dtype_of(fill) != dtype:
            fill = b.call("cast", fill, dtype=dtype)
    return b.call("nn.pad", x, fill, pad_width=widths, pad_mode=mode)


@converter("CenterCropPad")
def center_crop_pad(ctx):
    b = ctx.b
    x = ctx.input(0)
    target = int_list_input(ctx, 1, "the target shape")
    rank = b.ndim_of(x)
    axes = ctx.attr("axes")
    axes = list(range(rank)) if axes is None else normalize_axes(ctx, axes, rank)
    if target is None or len(target) != len(axes):
        raise b.error(f"the target shape {target} must give one size per axis {axes}")
    dims = b.shape_of(x)
    widths = [[0, 0] for _ in range(rank)]
    for axis, size in zip(axes, target):
        if isinstance(dims[axis], AnyDim):
            raise b.error(f"axis {axis} must have a size known at import to be cropped or padded")
        difference = size - int(dims[axis])
        # Centered; an odd difference puts the extra element after (padding) or keeps it before (cropping).
        if difference >= 0:
            widths[axis] = [difference // 2, difference - difference // 2]
        else:
            widths[axis] = [-((-difference) // 2), -((-difference) - (-difference) // 2)]
    if all(w == [0, 0] for w in widths):
        return x
    fill = b.const(np.array(0, dtype=b.dtype_of(x)))
    return b.call("nn.pad", x, fill, pad_width=widths, pad_mode="constant")


# ---------------------------------------------------------------- ReverseSequence


@converter("ReverseSequence")
def reverse_sequence(ctx):
    b = ctx.b
    x, lengths = ctx.input(0), ctx.input(1)
    shape = b.static_shape(x, "the input of ReverseSequence")
    rank = len(shape)
    time_axis = normalize_axis(ctx, ctx.attr("time_axis", 0), rank, "time_axis")
    batch_axis = normalize_axis(ctx, ctx.attr("batch_axis", 1), rank, "batch_axis")
    if time_axis == batch_axis:
        raise b.error("time_axis and batch_axis must differ")
    # Along time, position t of batch entry n reads t' = L[n] - 1 - t when t < L[n], else t itself.
    time_shape = [1] * rank
    time_shape[time_axis] = shape[time_axis]
    batch_shape = [1] * rank
    batch_shape[batch_axis] = shape[batch_axis]
    steps = b.const(np.arange(shape[time_axis], dtype="int64").reshape(time_shape))
    lengths = b.call("reshape", b.call("cast", lengths, dtype="int64"), newshape=batch_shape)
    mirrored = b.call("subtract", b.call("subtract", lengths, b.const(np.array(1, dtype="int64"))), steps)
    source = b.call("where", b.call("less", steps, lengths), mirrored, steps)
    source = b.call("broadcast_to", source, shape=shape)
    return b.call("gather", x, source, axis=time_axis)


# ---------------------------------------------------------------- Trilu, Einsum


@converter("Trilu")
def trilu(ctx):
    b = ctx.b
    x = ctx.input(0)
    if b.ndim_of(x) < 2:
        raise b.error(f"Trilu takes a tensor of rank >= 2, got rank {b.ndim_of(x)}")
    k = ctx.input(1, required=False)
    if k is None:
        k = b.const(np.array(0, dtype="int64"))
    elif b.ndim_of(k):
        k = b.call("reshape", k, newshape=())
    return b.call("trilu", x, k, upper=bool(ctx.attr("upper", 1)))


@converter("Einsum")
def einsum(ctx):
    b = ctx.b
    equation = ctx.attr("equation")
    if not equation:
        raise b.error("attribute 'equation' is required")
    operands = [v for v in ctx.inputs if v is not None]
    return b.call("einsum", b.tuple(operands), equation=equation.replace(" ", ""))
