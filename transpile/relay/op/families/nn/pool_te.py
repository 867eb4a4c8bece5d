"""TE lowerings of the pools (topi), and the window arithmetic the relations share with them.

With ceil_mode, TVM 0.19's relation keeps a last window that starts in the padding after the
data; topi (>= 0.20, like PyTorch and ONNX) drops it and would give a smaller output. Such pools
get a direct compute (window_pool_te) with the numpy reference's semantics: max over the taps on
data (the lowest value where there are none), average over the taps on data, or on data and
explicit padding with count_include_pad, summed in float32 / int64 and divided with C truncation.
tvm is imported inside the functions: importing the registry must not import tvm.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._common import layout_axes, lowest_value, padding_nd, spatial_pair
from .te_common import accumulate_dtype, cast, dims, ints


def pool_dim(size, before, after, pool, dilation, stride, ceil_mode):
    # TVM's calculate_pool_dimension. With ceil_mode the last window may start in the padding
    # after the data (PyTorch, ONNX and topi >= 0.20 drop such a window; TVM 0.19 kept it).
    numerator = size + before + after - ((pool - 1) * dilation + 1)
    if ceil_mode:
        return (numerator + stride - 1) // stride + 1
    return numerator // stride + 1


@dataclass(frozen=True)
class PoolWindow:
    """The windows of a pool along its spatial axes (data positions, in the order of `spatial`)."""

    positions: list
    sizes: list  # ints, or symbolic extents of `?` dimensions
    pool: tuple
    strides: tuple
    dilation: tuple
    pads: tuple  # (before..., after...)
    ceil_mode: bool

    @classmethod
    def of(cls, op_name: str, spatial: str, attrs, shape) -> "PoolWindow":
        nd = len(spatial)
        axes = layout_axes(attrs.layout, op_name, "layout")
        positions = [axes.index(a) for a in spatial]
        return cls(
            positions,
            [shape[p] for p in positions],
            spatial_pair(attrs.pool_size, op_name, "pool_size", nd),
            spatial_pair(attrs.strides, op_name, "strides", nd),
            spatial_pair(attrs.dilation, op_name, "dilation", nd),
            padding_nd(attrs.padding, nd, op_name),
            attrs.ceil_mode,
        )

    @property
    def outs(self) -> list:
        nd = len(self.positions)
        return [
            pool_dim(
                size, self.pads[i], self.pads[i + nd], self.pool[i], self.dilation[i], self.strides[i], self.ceil_mode
            )
            for i, size in enumerate(self.sizes)
        ]

    def starts_in_right_padding(self) -> bool:
        """Whether a last window starts past the data and its left padding (kept by TVM 0.19, not by topi).

        Only static extents are checked: with a `?` one, topi's (PyTorch's) windows are used.
        """
        if not self.ceil_mode or not all(isinstance(size, int) for size in self.sizes):
            return False
        return any(
            (out - 1) * stride >= size + before
            for out, stride, size, before in zip(self.outs, self.strides, self.sizes, self.pads)
        )


def adaptive_sizes(output_size, shape, indices):
    """Output extent per spatial axis: () keeps the input, one value applies to every axis, None entries keep."""
    sizes = list(output_size)
    if not sizes:
        sizes = [None] * len(indices)
    elif len(sizes) == 1:
        sizes = sizes * len(indices)
    return [shape[index] if size is None else size for size, index in zip(sizes, indices)]


def _summed(x, kind: str):
    # Averages sum like the numpy reference: float16 in float32, integers in int64 (topi alone
    # would sum int8 in int8 and overflow); max needs no wider type.
    if kind != "avg":
        return x
    return cast(x, "int64" if str(x.dtype).startswith(("int", "uint")) else accumulate_dtype(x.dtype))


def pool_te(op_name: str, spatial: str, kind: str):
    nd = len(spatial)

    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        window = PoolWindow.of(op_name, spatial, attrs, dims(x))
        if window.starts_in_right_padding():
            return window_pool_te(x, window, kind, attrs.count_include_pad if kind == "avg" else False)
        pool = {1: topi.nn.pool1d, 2: topi.nn.pool2d, 3: topi.nn.pool3d}[nd]
        out = pool(
            _summed(x, kind),
            ints(window.pool),
            ints(window.strides),
            ints(window.dilation),
            ints(window.pads),
            kind,
            ceil_mode=attrs.ceil_mode,
            layout=attrs.layout,
            count_include_pad=attrs.count_include_pad if kind == "avg" else False,
        )
        return cast(out, x.dtype)

    return te_impl


def _require_nonempty(x, spatial: str, layout: str, op_name: str) -> None:
    """A `?` spatial axis must not be empty at run time (the relation refuses a static empty one)."""
    from ..te_support import is_static, require

    axes = layout_axes(layout, op_name, "layout")
    for axis in spatial:
        dim = x.shape[axes.index(axis)]
        if not is_static(dim):
            require(dim > 0, f"{op_name}: spatial dimension {axes.index(axis)} is empty, nothing to pool")


def global_pool_te(kind: str):
    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        _require_nonempty(x, "HW", attrs.layout, "nn.global_pool2d")
        return cast(topi.nn.global_pool(_summed(x, kind), kind, layout=attrs.layout), x.dtype)

    return te_impl


def adaptive_pool_te(kind: str, spatial: str):
    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        axes = layout_axes(attrs.layout, f"nn.adaptive_{kind}_pool", "layout")
        _require_nonempty(x, spatial, attrs.layout, f"nn.adaptive_{kind}_pool")
        sizes = adaptive_sizes(attrs.output_size, dims(x), [axes.index(a) for a in spatial])
        pool = {1: topi.nn.adaptive_pool1d, 2: topi.nn.adaptive_pool, 3: topi.nn.adaptive_pool3d}[len(spatial)]
        return cast(pool(_summed(x, kind), ints(sizes), kind, layout=attrs.layout), x.dtype)

    return te_impl


def window_pool_te(x, window, kind: str, count_include_pad: bool):
    """`window` (pool.PoolWindow) describes the spatial axes; `kind` is "max" or "avg"."""
    from tvm import te, tirx

    dtype = str(x.dtype)
    nd = len(window.positions)
    shape = dims(x)
    for position, extent in zip(window.positions, window.outs):
        shape[position] = extent

    def taps_of(index):
        taps = [te.reduce_axis((0, k), name=f"k{i}") for i, k in enumerate(window.pool)]
        source, on_data, in_padding = list(index), [], []
        for i, position in enumerate(window.positions):
            j = index[position] * window.strides[i] + taps[i] * window.dilation[i] - window.pads[i]
            source[position] = j
            on_data += [j >= 0, j < window.sizes[i]]
            in_padding += [j >= -window.pads[i], j < window.sizes[i] + window.pads[i + nd]]
        return taps, source, tirx.all(*on_data), tirx.all(*in_padding)

    if kind == "max":

        lowest = tirx.const(lowest_value(dtype), dtype)
        # te.max starts from the lowest finite float; a window on padding only must give -inf.
        reducer = te.comm_reducer(lambda a, b: tirx.max(a, b), lambda t: tirx.const(lowest_value(t), t), name="max")

        def maximum(*index):
            taps, source, on_data, _ = taps_of(index)
            return reducer(tirx.if_then_else(on_data, x(*source), lowest), axis=taps)

        return te.compute(shape, maximum, name="T_pool_max", tag="pool_max")

    integer = dtype.startswith(("int", "uint"))
    acc = "int64" if integer else accumulate_dtype(dtype)

    def total(*index):
        taps, source, on_data, _ = taps_of(index)
        return te.sum(tirx.if_then_else(on_data, x(*source).astype(acc), tirx.const(0, acc)), axis=taps)

    def count(*index):
        taps, _, on_data, in_padding = taps_of(index)
        counted = in_padding if count_include_pad else on_data
        return te.sum(tirx.if_then_else(counted, 1, 0), axis=taps)

    sums = te.compute(shape, total, name="T_pool_sum")
    counts = te.compute(shape, count, name="T_pool_count")

    def average(*index):
        divisor = tirx.max(counts(*index), 1).astype(acc)
        quotient = tirx.truncdiv(sums(*index), divisor) if integer else sums(*index) / divisor
        return quotient.astype(dtype)

    return te.compute(shape, average, name="T_pool_avg", tag="elemwise")
