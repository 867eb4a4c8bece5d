"""Converters of ONNX pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms, MaxUnpool.

ONNX's ceil_mode drops a last window that would start in the end padding; Relay's does not, so
the converters compute ONNX's output size themselves and give Relay explicit padding for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..converters import converter
from .conv import int_attr_list, spatial_rank, static_ints, window_pads

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


@dataclass
class Window:
    """One pooling window configuration, resolved to explicit numbers."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    begin: list[int]
    end: list[int]
    ceil_mode: bool
    in_sizes: list  # ints, or AnyDim when unknown

    @property
    def nd(self) -> int:
        return len(self.kernel)

    def extent(self, i: int) -> int:
        return (self.kernel[i] - 1) * self.dilations[i] + 1

    def onnx_out_size(self, i: int) -> int:
        span = self.in_sizes[i] + self.begin[i] + self.end[i] - self.extent(i)
        if not self.ceil_mode:
            return span // self.strides[i] + 1
        out = -(-span // self.strides[i]) + 1
        # ONNX (like PyTorch) drops a last window that starts in the end padding.
        if (out - 1) * self.strides[i] >= self.in_sizes[i] + self.begin[i]:
            out -= 1
        return out


def read_window(ctx, data, ceil_allowed: bool = True) -> Window:
    nd = spatial_rank(ctx, data)
    kernel = ctx.attr("kernel_shape")
    if kernel is None:
        raise ctx.b.error("attribute kernel_shape is required")
    kernel = [int(k) for k in kernel]
    if len(kernel) != nd:
        raise ctx.b.error(f"kernel_shape {kernel} must have one value per spatial dimension ({nd})")
    strides = int_attr_list(ctx, "strides", nd, 1)
    dilations = int_attr_list(ctx, "dilations", nd, 1)
    in_sizes = static_ints(ctx.b.shape_of(data)[2:])
    begin, end = window_pads(ctx, in_sizes, kernel, strides, dilations)
    ceil_mode = bool(ctx.attr("ceil_mode", 0)) and ceil_allowed
    if ceil_mode and any(not isinstance(s, int) for s in in_sizes):
        raise ctx.b.error(f"ceil_mode needs the input's spatial dimensions at import, got {ctx.b.type_of(data)}")
    return Window(kernel, strides, dilations, begin, end, ceil_mode, in_sizes)


def _relay_pool(ctx, kind: str, data, window: Window, count_include_pad: bool = False):
    """`kind` ("max" / "avg") pooling with ONNX's output size.

    A ceil_mode window running past the end padding reads extra end padding instead (Relay's own
    ceil_mode keeps windows ONNX drops): max ignores padding and so does an average without
    count_include_pad; an average with it is rescaled to count only the explicit padding.
    """
    b = ctx.b
    nd = window.nd
    extra = [_ceil_overhang(window, i) for i in range(nd)]
    out = b.call(
        f"nn.{kind}_pool{nd}d",
        data,
        pool_size=tuple(window.kernel),
        strides=tuple(window.strides),
        dilation=tuple(window.dilations),
        padding=tuple(window.begin) + tuple(e + x for e, x in zip(window.end, extra)),
        layout=_LAYOUTS[nd],
        **({"count_include_pad": count_include_pad} if kind == "avg" else {}),
    )
    if kind == "avg" and count_include_pad and any(extra):
        counts = None
        for i in range(nd):
            starts = np.arange(window.onnx_out_size(i)) * window.strides[i] - window.begin[i]
            taps = starts[:, None] + np.arange(window.kernel[i])[None, :] * window.dilations[i]
            inside = np.sum((taps >= -window.begin[i]) & (taps < window.in_sizes[i] + window.end[i]), axis=1)
            counts = inside if counts is None else np.multiply.outer(counts, inside)
        scale = float(np.prod(window.kernel)) / counts
        out = b.call("multiply", out, b.const(scale.astype(b.dtype_of(out))))
    return out


@converter("AveragePool")
def average_pool(ctx):
    data = ctx.input(0)
    window = read_window(ctx, data, ceil_allowed=ctx.opset >= 10)
    return _relay_pool(ctx, "avg", data, window, bool(ctx.attr("count_include_pad", 0)))


@converter("MaxPool")
def max_pool(ctx):
    data = ctx.input(0)
    window = read_window(ctx, data, ceil_allowed=ctx.opset >= 10)
    out = _relay_pool(ctx, "max", data, window)
    wants_indices = len(ctx.node.output) > 1 and ctx.node.output[1] != ""
    if not wants_indices:
        return out
    return [out, _max_indices(ctx, data, out, window, int(ctx.attr("storage_order", 0)))]


def _max_indices(ctx, data, pooled, window: Window, storage_order: int):
    """MaxPool's Indices output: the flat index (over N x C x spatial) of each window's first maximum.

    Every window tap is a strided slice of the padded input; a tap counts where it lies on the
    input (a static mask) and equals the pooled maximum; the first such tap in scan order is the
    one with the smallest row-major index, which storage_order=1 then renumbers column-major.
    """
    b = ctx.b
    sizes = b.static_shape(data, "the input of a MaxPool with an Indices output")
    spatial = sizes[2:]
    nd = window.nd
    outs = [window.onnx_out_size(i) for i in range(nd)]
    reach = [(outs[i] - 1) * window.strides[i] + window.extent(i) for i in range(nd)]
    after = [max(0, reach[i] - window.begin[i] - spatial[i]) for i in range(nd)]
    widths = ((0, 0), (0, 0)) + tuple(zip(window.begin, after))
    padded = b.call("nn.pad", data, b.const(np.array(0, dtype=b.dtype_of(data))), pad_width=widths)
    plane = int(np.prod(spatial))
    sentinel = b.const(np.array(plane, dtype="int64"))
    best = None
    for taps in np.ndindex(*window.kernel):
        coords = [
            np.arange(outs[i]) * window.strides[i] - window.begin[i] + taps[i] * window.dilations[i] for i in range(nd)
        ]
        grids = np.meshgrid(*coords, indexing="ij")
        inside = np.ones(outs, dtype=bool)
        for grid, size in zip(grids, spatial):
            inside &= (grid >= 0) & (grid < size)
        if not inside.any():
            continue
        flat = np.ravel_multi_index([np.clip(g, 0, s - 1) for g, s in zip(grids, spatial)], spatial).astype("int64")
        start = [taps[i] * window.dilations[i] for i in range(nd)]
        value = b.call(
            "strided_slice",
            padded,
            begin=tuple(start),
            end=tuple(start[i] + (outs[i] - 1) * window.strides[i] + 1 for i in range(nd)),
            strides=tuple(window.strides),
            axes=tuple(range(2, 2 + nd)),
        )
        hit = b.call("logical_and", b.call("equal", value, pooled), b.const(inside))
        candidate = b.call("where", hit, b.const(flat), sentinel)
        best = candidate if best is None else b.call("minimum", best, candidate)
    if storage_order == 1:
        # Row-major (h, w, ...) to column-major: the last spatial index varies slowest.
        coords = []
        rest = best
        for size in reversed(spatial):
            size_const = b.const(np.array(size, dtype="int64"))
            coords.append(b.call("floor_mod", rest, size_const))
            rest = b.call("floor_divide", rest, size_const)
        coords.reverse()
        best = coords[-1]
        for coord, size in zip(reversed(coords[:-1]), reversed(spatial[:-1])):
            best = b.call("add", b.call("multiply", best, b.const(np.array(size, dtype="int64"))), coord)
    offsets = (np.arange(sizes[0] * sizes[1], dtype="int64") * plane).reshape(sizes[0], sizes[1], *([1] * nd))
    return b.call("add", best, b.const(offsets))


@converter("LpPool")
def lp_pool(ctx):
    b = ctx.b
    data = ctx.input(0)
    window = read_window(ctx, data, ceil_allowed=ctx.opset >= 18)
    p = int(ctx.attr("p", 2))
    nd = window.nd
    # Zero padding (explicit, and wherever a ceil_mode window runs past it) adds nothing to the sum
    # of |x|^p, so an average over full windows times the window size is that sum.
    extra = [_ceil_overhang(window, i) for i in range(nd)]
    powered = _abs_power(ctx, data, p)
    widths = ((0, 0), (0, 0)) + tuple((lo, hi + more) for lo, hi, more in zip(window.begin, window.end, extra))
    if any(v for pair in widths for v in pair):
        powered = b.call("nn.pad", powered, b.const(np.array(0, dtype=b.dtype_of(data))), pad_width=widths)
    averaged = b.call(
        f"nn.avg_pool{nd}d",
        powered,
        pool_size=tuple(window.kernel),
        strides=tuple(window.strides),
        dilation=tuple(window.dilations),
        padding=(0,) * (2 * nd),
        layout=_LAYOUTS[nd],
        count_include_pad=True,
    )
    count = b.const(np.array(np.prod(window.kernel), dtype=b.dtype_of(data)))
    return _root(ctx, b.call("multiply", averaged, count), p)


def _ceil_overhang(window: Window, i: int) -> int:
    """How far the last ONNX ceil_mode window reaches past the end padding (0 in floor mode)."""
    if not window.ceil_mode:
        return 0
    reach = (window.onnx_out_size(i) - 1) * window.strides[i] + window.extent(i)
    return max(0, reach - (window.in_sizes[i] + window.begin[i] + window.end[i]))


def _abs_power(ctx, data, p: int):
    b = ctx.b
    if p == 1:
        return b.call("abs", data)
    if p == 2:
        return b.call("multiply", data, data)
    return b.call("power", b.call("abs", data), b.const(np.array(p, dtype=b.dtype_of(data))))


def _root(ctx, value, p: int):
    b = ctx.b
    if p == 1:
        return value
    if p == 2:
        return b.call("sqrt", value)
    return b.call("power", value, b.const(np.array(1.0 / p, dtype=b.dtype_of(value))))


# ---------------------------------------------------------------------------------- global pools


def _spatial_axes(ctx, data) -> tuple[int, ...]:
    rank = ctx.b.ndim_of(data)
    if rank < 3:
        raise ctx.b.error(f"the input must be N x C x D1 x ..., got rank {rank}")
    return tuple(range(2, rank))


@converter("GlobalAveragePool")
def global_average_pool(ctx):
    data = ctx.input(0)
    axes = _spatial_axes(ctx, data)
    if len(axes) == 2:
        return ctx.b.call("nn.global_avg_pool2d", data)
    return ctx.b.call("mean", data, axis=axes, keepdims=True)


@converter("GlobalMaxPool")
def global_max_pool(ctx):
    data = ctx.input(0)
    axes = _spatial_axes(ctx, data)
    if len(axes) == 2:
        return ctx.b.call("nn.global_max_pool2d", data)
    return ctx.b.call("max", data, axis=axes, keepdims=True)


@converter("GlobalLpPool")
def global_lp_pool(ctx):
    data = ctx.input(0)
    p = int(ctx.attr("p", 2))
    summed = ctx.b.call("sum", _abs_power(ctx, data, p), axis=_spatial_axes(ctx, data), keepdims=True)
    return _root(ctx, summed, p)


# ---------------------------------------------------------------------------------- MaxUnpool


@converter("MaxUnpool")
def max_unpool(ctx):
    """Zeros of the output shape with each input value written at its (flat, whole-tensor) index."""
    b = ctx.b
    data, indices = ctx.input(0), ctx.input(1)
    sizes = b.static_shape(data, "the input of MaxUnpool")
    nd = spatial_rank(ctx, data)
    kernel = int_attr_list(ctx, "kernel_shape", nd, 0)
    strides = int_attr_list(ctx, "strides", nd, 1)
    pads = int_attr_list(ctx, "pads", 2 * nd, 0)
    shape = sizes[:2] + [(sizes[2 + i] - 1) * strides[i] - pads[i] - pads[nd + i] + kernel[i] for i in range(nd)]
    output_shape = ctx.input_value(2, "the output_shape input of MaxUnpool")
    if output_shape is not None:
        shape = [int(v) for v in output_shape]
        if len(shape) != len(sizes):
            raise b.error(f"output_shape {shape} must have rank {len(sizes)}")
    total = int(np.prod(shape))
    zeros = b.call("zeros", shape=(total,), dtype=b.dtype_of(data))
    flat_indices = b.call("reshape", indices, newshape=(-1,))
    flat_values = b.call("reshape", data, newshape=(-1,))
    scattered = b.call("scatter_elements", zeros, flat_indices, flat_values, axis=0, reduction="update")
    return b.call("reshape", scattered, newshape=tuple(shape))
