"""Pooling: max/avg pool 1-D and 2-D, global and adaptive 2-D pools (relations as TVM's pooling.cc)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ....ty import TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import (
    NNOpDef,
    compute_dtype,
    is_any,
    layout_axes,
    lowest_value,
    normalizer,
    padding_1d,
    padding_2d,
    spatial_pair,
    to_bool,
    to_ints,
    to_str,
)
from .te_common import accumulate_dtype, cast, dims, ints


def _spatial_indices(op_name: str, layout: str, data: TensorType, spatial: str) -> list[int]:
    axes = layout_axes(layout, op_name, "layout")
    for axis in spatial:
        split = any(a[-1] == axis.lower() for a in axes if a[-1].islower())
        if axis not in axes or split:
            raise RelationError(
                f"{op_name}: invalid layout {layout!r}: it must contain {' and '.join(spatial)}, which cannot be split"
            )
    if len(axes) != data.ndim:
        raise RelationError(
            f"{op_name}: data {fmt_type(data)} does not have the rank of layout {layout!r} ({len(axes)})"
        )
    return [axes.index(axis) for axis in spatial]


def _pool_dim(size, pad, pool, dilation, stride, ceil_mode):
    numerator = size + pad - ((pool - 1) * dilation + 1)
    if ceil_mode:
        return (numerator + stride - 1) // stride + 1
    return numerator // stride + 1


def _pool_rel(op_name: str, spatial: str):
    nd = len(spatial)

    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        indices = _spatial_indices(op_name, attrs.layout, data, spatial)
        pool = spatial_pair(attrs.pool_size, op_name, "pool_size", nd, minimum=1)
        strides = spatial_pair(attrs.strides, op_name, "strides", nd, minimum=1)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd, minimum=1)
        pads = _pads(attrs.padding, op_name, nd)
        shape = list(data.shape)
        for i, index in enumerate(indices):
            if is_any(shape[index]):
                continue
            out = _pool_dim(shape[index], pads[i] + pads[i + nd], pool[i], dilation[i], strides[i], attrs.ceil_mode)
            if out <= 0:
                raise RelationError(
                    f"{op_name}: the pooled {spatial[i]} dimension of data {fmt_type(data)} would be {out} "
                    f"(pool_size={list(pool)}, padding={list(attrs.padding)})"
                )
            shape[index] = out
        return TensorType(shape, data.dtype)

    return rel


def _pads(padding, op_name, nd):
    """(before..., after...) for each spatial axis."""
    return padding_2d(padding, op_name) if nd == 2 else padding_1d(padding, op_name)


def _window_counts(size, pool, stride, dilation, before, after, out, include_pad):
    """Per output position, how many window taps fall on data (or on data + explicit padding)."""
    starts = np.arange(out) * stride - before
    taps = starts[:, None] + np.arange(pool)[None, :] * dilation
    high = size + after if include_pad else size
    low = -before if include_pad else 0
    return np.sum((taps >= low) & (taps < high), axis=1)


def _tap_slices(offsets, dilation, strides, outs) -> tuple:
    """For one kernel tap, the strided slice of the padded input that every output position reads."""
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(offsets, dilation, strides, outs))


def _pool_impl(op_name: str, spatial: str, kind: str):
    nd = len(spatial)

    def impl(args, attrs, out_type):
        x = args[0]
        axes = layout_axes(attrs.layout, op_name, "layout")
        indices = [axes.index(a) for a in spatial]
        pool = spatial_pair(attrs.pool_size, op_name, "pool_size", nd)
        strides = spatial_pair(attrs.strides, op_name, "strides", nd)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd)
        pads = _pads(attrs.padding, op_name, nd)
        moved = np.moveaxis(x, indices, list(range(x.ndim - nd, x.ndim)))
        sizes = moved.shape[-nd:]
        outs = [
            _pool_dim(sizes[i], pads[i] + pads[i + nd], pool[i], dilation[i], strides[i], attrs.ceil_mode)
            for i in range(nd)
        ]
        # ceil_mode windows may run past the explicit padding: extend with neutral values.
        extra = [
            max(0, (outs[i] - 1) * strides[i] + (pool[i] - 1) * dilation[i] + 1 - (sizes[i] + pads[i] + pads[i + nd]))
            for i in range(nd)
        ]
        acc = compute_dtype(x.dtype) if kind == "avg" else x.dtype
        fill = lowest_value(x.dtype) if kind == "max" else 0
        widths = [(0, 0)] * (moved.ndim - nd) + [(pads[i], pads[i + nd] + extra[i]) for i in range(nd)]
        padded = np.pad(moved.astype(acc, copy=False), widths, constant_values=fill)
        result = None
        for offsets in np.ndindex(*pool):
            window = padded[(Ellipsis,) + _tap_slices(offsets, dilation, strides, outs)]
            if result is None:
                result = window.copy()
            elif kind == "max":
                np.maximum(result, window, out=result)
            else:
                result += window
        if kind == "avg":
            per_axis = [
                _window_counts(
                    sizes[i], pool[i], strides[i], dilation[i], pads[i], pads[i + nd], outs[i], attrs.count_include_pad
                )
                for i in range(nd)
            ]
            counts = functools.reduce(np.multiply.outer, per_axis)
            counts = np.maximum(counts, 1)
            if x.dtype.kind == "f":
                result = result / counts
            else:
                # Integer averages truncate toward zero (C division), as topi's pool did.
                quotient = np.abs(result) // counts
                result = np.where(result < 0, -quotient, quotient)
        return np.moveaxis(result, list(range(x.ndim - nd, x.ndim)), indices).astype(x.dtype)

    return impl


def _global_pool_rel(op_name: str):
    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        shape = list(data.shape)
        for index in _spatial_indices(op_name, attrs.layout, data, "HW"):
            shape[index] = 1
        return TensorType(shape, data.dtype)

    return rel


def _global_pool_impl(reduce):
    def impl(args, attrs, out_type):
        x = args[0]
        axes = layout_axes(attrs.layout, "nn.global_pool2d", "layout")
        indices = tuple(axes.index(a) for a in "HW")
        return reduce(x.astype(compute_dtype(x.dtype), copy=False), axis=indices, keepdims=True).astype(x.dtype)

    return impl


def _adaptive_sizes(output_size, shape, indices):
    sizes = list(output_size)
    if not sizes:
        sizes = [None, None]
    elif len(sizes) == 1:
        sizes = sizes * 2
    return [shape[index] if size is None else size for size, index in zip(sizes, indices)]


def _adaptive_pool_rel(op_name: str):
    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        if len(attrs.output_size) > 2:
            raise RelationError(f"{op_name}: output_size must have at most 2 values, got {list(attrs.output_size)}")
        indices = _spatial_indices(op_name, attrs.layout, data, "HW")
        shape = list(data.shape)
        for index, size in zip(indices, _adaptive_sizes(attrs.output_size, data.shape, indices)):
            if not is_any(size) and size <= 0:
                raise RelationError(f"{op_name}: output_size must be positive, got {list(attrs.output_size)}")
            shape[index] = size
        return TensorType(shape, data.dtype)

    return rel


def _adaptive_pool_impl(reduce):
    def impl(args, attrs, out_type):
        x = args[0]
        axes = layout_axes(attrs.layout, "nn.adaptive_pool2d", "layout")
        indices = [axes.index(a) for a in "HW"]
        out_h, out_w = _adaptive_sizes(attrs.output_size, x.shape, indices)
        moved = np.moveaxis(x.astype(compute_dtype(x.dtype), copy=False), indices, [-2, -1])
        in_h, in_w = moved.shape[-2:]
        out = np.empty(moved.shape[:-2] + (out_h, out_w), dtype=moved.dtype)
        for i in range(out_h):
            h0, h1 = (i * in_h) // out_h, math.ceil((i + 1) * in_h / out_h)
            for j in range(out_w):
                w0, w1 = (j * in_w) // out_w, math.ceil((j + 1) * in_w / out_w)
                out[..., i, j] = reduce(moved[..., h0:h1, w0:w1], axis=(-2, -1))
        return np.moveaxis(out, [-2, -1], indices).astype(x.dtype)

    return impl


# --- TE lowerings (tvm imported inside: importing the registry must not import tvm)


def _summed(x, kind: str):
    # Averages sum like the numpy reference: float16 in float32, integers in int64 (topi alone
    # would sum int8 in int8 and overflow); max needs no wider type.
    if kind != "avg":
        return x
    return cast(x, "int64" if str(x.dtype).startswith(("int", "uint")) else accumulate_dtype(x.dtype))


def _pool_te(op_name: str, spatial: str, kind: str):
    nd = len(spatial)

    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        pool = topi.nn.pool2d if nd == 2 else topi.nn.pool1d
        out = pool(
            _summed(x, kind),
            ints(spatial_pair(attrs.pool_size, op_name, "pool_size", nd)),
            ints(spatial_pair(attrs.strides, op_name, "strides", nd)),
            ints(spatial_pair(attrs.dilation, op_name, "dilation", nd)),
            ints(_pads(attrs.padding, op_name, nd)),
            kind,
            ceil_mode=attrs.ceil_mode,
            layout=attrs.layout,
            count_include_pad=attrs.count_include_pad if kind == "avg" else False,
        )
        return cast(out, x.dtype)

    return te_impl


def _global_pool_te(kind: str):
    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        return cast(topi.nn.global_pool(_summed(x, kind), kind, layout=attrs.layout), x.dtype)

    return te_impl


def _adaptive_pool_te(kind: str):
    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        axes = layout_axes(attrs.layout, f"nn.adaptive_{kind}_pool2d", "layout")
        sizes = _adaptive_sizes(attrs.output_size, dims(x), [axes.index(a) for a in "HW"])
        return cast(topi.nn.adaptive_pool(_summed(x, kind), ints(sizes), kind, layout=attrs.layout), x.dtype)

    return te_impl


def _pool_attrs(nd: int, layout: str, avg: bool) -> tuple:
    fields = (
        AttrField("pool_size", convert=to_ints, doc="window size (no default in TVM's C++ attrs)"),
        AttrField("strides", (1,) * nd, to_ints),
        AttrField("dilation", (1,) * nd, to_ints),
        AttrField("padding", (0,) * nd, to_ints),
        AttrField("layout", layout, to_str),
        AttrField("out_layout", "", to_str),
        AttrField("ceil_mode", False, to_bool),
    )
    return fields + ((AttrField("count_include_pad", False, to_bool),) if avg else ())


for _nd, _suffix, _layout, _spatial in ((2, "2d", "NCHW", "HW"), (1, "1d", "NCW", "W")):
    _builder = {
        "builder_defaults": {"pool_size": (1,) * _nd},
        "builder_normalize": (
            normalizer(pairs=("pool_size", "strides", "dilation"), pad4=("padding",)) if _nd == 2 else None
        ),
    }
    for _kind in ("max", "avg"):
        _name = f"nn.{_kind}_pool{_suffix}"
        register(
            NNOpDef(
                _name,
                1,
                _pool_rel(_name, _spatial),
                OpPattern.OUT_ELEMWISE_FUSABLE,
                _pool_impl(_name, _spatial, _kind),
                te_impl=_pool_te(_name, _spatial, _kind),
                attrs=_pool_attrs(_nd, _layout, _kind == "avg"),
                extras=dict(_builder),
                description=f"{_kind} pooling over {'H, W' if _nd == 2 else 'W'}",
            )
        )

for _kind, _reduce in (("avg", np.mean), ("max", np.max)):
    register(
        NNOpDef(
            f"nn.global_{_kind}_pool2d",
            1,
            _global_pool_rel(f"nn.global_{_kind}_pool2d"),
            OpPattern.OUT_ELEMWISE_FUSABLE,
            _global_pool_impl(_reduce),
            te_impl=_global_pool_te(_kind),
            attrs=(AttrField("layout", "NCHW", to_str), AttrField("out_layout", "", to_str)),
            description=f"{_kind} over the whole H and W extent (kept as size-1 dimensions).",
        )
    )
    register(
        NNOpDef(
            f"nn.adaptive_{_kind}_pool2d",
            1,
            _adaptive_pool_rel(f"nn.adaptive_{_kind}_pool2d"),
            OpPattern.OUT_ELEMWISE_FUSABLE,
            _adaptive_pool_impl(_reduce),
            te_impl=_adaptive_pool_te(_kind),
            attrs=(
                AttrField("output_size", (), to_ints, "(h, w), (s,) for both, () or None entries keep the input size"),
                AttrField("layout", "NCHW", to_str),
                AttrField("out_layout", "", to_str),
            ),
            extras={"builder_normalize": lambda given: {**given, "output_size": given.get("output_size") or ()}},
            description=f"adaptive {_kind} pooling to a fixed output size (PyTorch bin boundaries).",
        )
    )
