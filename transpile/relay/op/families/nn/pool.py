"""Pooling: max/avg and adaptive pools over 1, 2 or 3 spatial axes, global 2-D pools (relations as TVM's pooling.cc)."""

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
    padding_nd,
    spatial_pair,
    to_bool,
    to_ints,
    to_str,
)
from .pool_te import adaptive_pool_te, adaptive_sizes, global_pool_te, pool_dim, pool_te


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
            out = pool_dim(shape[index], pads[i], pads[i + nd], pool[i], dilation[i], strides[i], attrs.ceil_mode)
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
    return padding_nd(padding, nd, op_name)


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
            pool_dim(sizes[i], pads[i], pads[i + nd], pool[i], dilation[i], strides[i], attrs.ceil_mode)
            for i in range(nd)
        ]
        if min(outs) < 0:  # `?` dims: what the type relation rejects for static ones
            raise ValueError(f"{op_name}: the pooled {spatial} dimensions of data {x.shape} would be {outs}")
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


def _check_nonempty_window(op_name: str, data, index: int) -> None:
    # A global or adaptive pool over an empty spatial axis has no element to pool (PyTorch raises
    # "Expected input to have non-zero size for non-batch dimensions"); a `?` one is checked at run time.
    if not is_any(data.shape[index]) and data.shape[index] == 0:
        raise RelationError(f"{op_name}: spatial dimension {index} of data {fmt_type(data)} is empty, nothing to pool")


def _raise_if_empty_window(op_name: str, x, indices) -> None:
    if any(x.shape[index] == 0 for index in indices):
        raise ValueError(f"{op_name}: a spatial dimension of data {x.shape} is empty, nothing to pool")


def _global_pool_rel(op_name: str):
    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        shape = list(data.shape)
        for index in _spatial_indices(op_name, attrs.layout, data, "HW"):
            _check_nonempty_window(op_name, data, index)
            shape[index] = 1
        return TensorType(shape, data.dtype)

    return rel


def _global_pool_impl(reduce):
    def impl(args, attrs, out_type):
        x = args[0]
        axes = layout_axes(attrs.layout, "nn.global_pool2d", "layout")
        indices = tuple(axes.index(a) for a in "HW")
        _raise_if_empty_window("nn.global_pool2d", x, indices)
        return reduce(x.astype(compute_dtype(x.dtype), copy=False), axis=indices, keepdims=True).astype(x.dtype)

    return impl


def _adaptive_pool_rel(op_name: str, spatial: str):
    allowed = sorted({0, 1, len(spatial)})

    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        if len(attrs.output_size) not in allowed:
            counts = ", ".join(str(c) for c in allowed[:-1]) + f" or {allowed[-1]}"
            raise RelationError(f"{op_name}: output_size must have {counts} values, got {list(attrs.output_size)}")
        indices = _spatial_indices(op_name, attrs.layout, data, spatial)
        shape = list(data.shape)
        for index, size in zip(indices, adaptive_sizes(attrs.output_size, data.shape, indices)):
            _check_nonempty_window(op_name, data, index)
            if not is_any(size) and size <= 0:
                raise RelationError(f"{op_name}: output_size must be positive, got {list(attrs.output_size)}")
            shape[index] = size
        return TensorType(shape, data.dtype)

    return rel


def _adaptive_bin(index, size, out_size) -> slice:
    """PyTorch's adaptive bin: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return slice((index * size) // out_size, math.ceil((index + 1) * size / out_size))


def _adaptive_pool_impl(reduce, spatial: str):
    nd = len(spatial)

    def impl(args, attrs, out_type):
        x = args[0]
        axes = layout_axes(attrs.layout, "nn.adaptive_pool", "layout")
        indices = [axes.index(a) for a in spatial]
        _raise_if_empty_window("nn.adaptive_pool", x, indices)
        outs = adaptive_sizes(attrs.output_size, x.shape, indices)
        last = list(range(x.ndim - nd, x.ndim))
        moved = np.moveaxis(x.astype(compute_dtype(x.dtype), copy=False), indices, last)
        sizes = moved.shape[-nd:]
        out = np.empty(moved.shape[:-nd] + tuple(outs), dtype=moved.dtype)
        for position in np.ndindex(*outs):
            window = tuple(_adaptive_bin(i, size, count) for i, size, count in zip(position, sizes, outs))
            out[(Ellipsis,) + position] = reduce(moved[(Ellipsis,) + window], axis=tuple(range(-nd, 0)))
        return np.moveaxis(out, last, indices).astype(x.dtype)

    return impl


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


_POOL_FAMILY = (  # (suffix, layout, spatial axes, builder normalization as tvm.relay.nn's Python builder)
    ("1d", "NCW", "W", None),
    ("2d", "NCHW", "HW", normalizer(pairs=("pool_size", "strides", "dilation"), pad4=("padding",))),
    ("3d", "NCDHW", "DHW", normalizer(triples=("pool_size", "strides", "dilation"), pad6=("padding",))),
)

for _suffix, _layout, _spatial, _normalize in _POOL_FAMILY:
    _nd = len(_spatial)
    for _kind in ("max", "avg"):
        _name = f"nn.{_kind}_pool{_suffix}"
        register(
            NNOpDef(
                _name,
                1,
                _pool_rel(_name, _spatial),
                OpPattern.OUT_ELEMWISE_FUSABLE,
                _pool_impl(_name, _spatial, _kind),
                te_impl=pool_te(_name, _spatial, _kind),
                attrs=_pool_attrs(_nd, _layout, _kind == "avg"),
                extras={"builder_defaults": {"pool_size": (1,) * _nd}, "builder_normalize": _normalize},
                description=f"{_kind} pooling over {', '.join(_spatial)}",
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
            te_impl=global_pool_te(_kind),
            attrs=(AttrField("layout", "NCHW", to_str), AttrField("out_layout", "", to_str)),
            description=f"{_kind} over the whole H and W extent (kept as size-1 dimensions).",
        )
    )
    for _suffix, _layout, _spatial, _ in _POOL_FAMILY:
        _name = f"nn.adaptive_{_kind}_pool{_suffix}"
        register(
            NNOpDef(
                _name,
                1,
                _adaptive_pool_rel(_name, _spatial),
                OpPattern.OUT_ELEMWISE_FUSABLE,
                _adaptive_pool_impl(_reduce, _spatial),
                te_impl=adaptive_pool_te(_kind, _spatial),
                attrs=(
                    AttrField(
                        "output_size",
                        (),
                        to_ints,
                        "one value per spatial axis, one for all, () or None entries keep the input size",
                    ),
                    AttrField("layout", _layout, to_str),
                    AttrField("out_layout", "", to_str),
                ),
                extras={"builder_normalize": lambda given: {**given, "output_size": given.get("output_size") or ()}},
                description=f"adaptive {_kind} pooling over {', '.join(_spatial)} to a fixed size (PyTorch's bins).",
            )
        )


def _global_pool_builder(kind: str, suffix: str, default_layout: str, rank: int):
    """TVM's Python-only relay.nn.global_{kind}_pool{1d,3d}: an adaptive pool to size 1 (no operator of its own)."""
    adaptive = f"nn.adaptive_{kind}_pool{suffix}"

    def build(data, layout=default_layout, out_layout=""):
        from ...registry import get

        return get(adaptive)(data, output_size=[1] * rank, layout=layout, out_layout=out_layout)

    build.__name__ = f"global_{kind}_pool{suffix}"
    build.__doc__ = f"Global {kind} pooling over every spatial axis (layout {default_layout}): {adaptive} to size 1."
    return build


GLOBAL_POOL_BUILDERS = {
    f"global_{kind}_pool{suffix}": _global_pool_builder(kind, suffix, layout, rank)
    for kind in ("max", "avg")
    for suffix, layout, rank in (("1d", "NCW", 1), ("3d", "NCDHW", 3))
}
