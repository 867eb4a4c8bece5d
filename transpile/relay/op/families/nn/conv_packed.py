"""nn.contrib_conv2d_NCHWc: conv2d on channel-blocked layouts such as NCHW4c / OIHW4i4o."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import OpPattern, RelationError, register
from ._common import (
    NNOpDef,
    compute_dtype,
    is_any,
    layout_axes,
    normalizer,
    padding_2d,
    spatial_pair,
)
from .conv import _conv_attrs
from .conv_kernels import conv2d_nchw
from .conv_te import conv2d_nchwc_te


def _blocks(layout: str, primal: str, op_name: str, what: str) -> tuple[list[str], dict]:
    """Axes of a blocked layout and the block factor of each primal axis (1 when not split)."""
    axes = layout_axes(layout, op_name, what)
    if sorted(a for a in axes if a.isupper()) != sorted(primal):
        raise RelationError(f"{op_name}: {what} {layout!r} must be {primal!r} with optional blocked sub-axes")
    factors = {axis: 1 for axis in primal}
    for axis in axes:
        if axis[-1].islower():
            if axis[-1].upper() not in factors or len(axis) == 1:
                raise RelationError(f"{op_name}: invalid {what} {layout!r}")
            factors[axis[-1].upper()] = int(axis[:-1])
    return axes, factors


def unpacked_shape(shape, layout: str, primal: str, op_name: str, what: str) -> list:
    axes, factors = _blocks(layout, primal, op_name, what)
    out = []
    for axis in primal:
        outer = shape[axes.index(axis)]
        out.append(AnyDim() if is_any(outer) else outer * factors[axis])
    return out


def packed_shape(shape, primal: str, layout: str, op_name: str, what: str) -> list:
    axes, factors = _blocks(layout, primal, op_name, what)
    out = []
    for axis in axes:
        if axis[-1].islower():
            out.append(factors[axis[-1].upper()])
            continue
        size, factor = shape[primal.index(axis)], factors[axis]
        if is_any(size):
            out.append(AnyDim())
            continue
        if size % factor:
            raise RelationError(
                f"{op_name}: dimension {axis}={size} does not split into blocks of {factor} for {what} {layout!r}"
            )
        out.append(size // factor)
    return out


def unpack(array: np.ndarray, layout: str, primal: str) -> np.ndarray:
    """A blocked array as the plain `primal` layout (NCHW4c -> NCHW)."""
    axes, factors = _blocks(layout, primal, "unpack", "layout")
    order, shape = [], []
    for axis in primal:
        order.append(axes.index(axis))
        sub = f"{factors[axis]}{axis.lower()}"
        if sub in axes:  # a sub-axis of factor 1 (OIHW1i16o) is still a dimension
            order.append(axes.index(sub))
        shape.append(array.shape[axes.index(axis)] * factors[axis])
    return np.transpose(array, order).reshape(shape)


def pack(array: np.ndarray, primal: str, layout: str) -> np.ndarray:
    axes, factors = _blocks(layout, primal, "pack", "layout")
    split_shape, split_names = [], []
    for axis, size in zip(primal, array.shape):
        split_shape.append(size // factors[axis])
        split_names.append(axis)
        if f"{factors[axis]}{axis.lower()}" in axes:
            split_shape.append(factors[axis])
            split_names.append(f"{factors[axis]}{axis.lower()}")
    return np.transpose(array.reshape(split_shape), [split_names.index(a) for a in axes])


def _nchwc_rel(arg_types, attrs):
    """As TVM's Conv2DWinogradRel used for NCHWc: channels and kernel_size must be given."""
    op_name = "nn.contrib_conv2d_NCHWc"
    data = expect_tensor(arg_types[0], op_name, "data")
    weight = expect_tensor(arg_types[1], op_name, "weight")
    if attrs.channels is None or attrs.kernel_size is None:
        raise RelationError(f"{op_name}: channels and kernel_size must be set")
    for ty, layout, what in ((data, attrs.data_layout, "data_layout"), (weight, attrs.kernel_layout, "kernel_layout")):
        if ty.ndim != len(layout_axes(layout, op_name, what)):
            raise RelationError(f"{op_name}: {fmt_type(ty)} does not have the rank of {what} {layout!r}")
    n, c, h, w = unpacked_shape(data.shape, attrs.data_layout, "NCHW", op_name, "data_layout")
    kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size")
    wshape = unpacked_shape(weight.shape, attrs.kernel_layout, "OIHW", op_name, "kernel_layout")
    expected = [attrs.channels, AnyDim() if is_any(c) else c // attrs.groups, *kernel]
    if not all(dim_eq(a, b) for a, b in zip(wshape, expected)):
        raise RelationError(
            f"{op_name}: weight {fmt_type(weight)} (OIHW {tuple(wshape)}) does not match channels={attrs.channels}, "
            f"kernel_size={list(kernel)} for data {fmt_type(data)}"
        )
    strides = spatial_pair(attrs.strides, op_name, "strides", minimum=1)
    dilation = spatial_pair(attrs.dilation, op_name, "dilation", minimum=1)
    top, left, bottom, right = padding_2d(attrs.padding, op_name)
    out = [n, attrs.channels]
    for size, pad, k, d, s in (
        (h, top + bottom, kernel[0], dilation[0], strides[0]),
        (w, left + right, kernel[1], dilation[1], strides[1]),
    ):
        out.append(AnyDim() if is_any(size) else (size + pad - (1 + (k - 1) * d)) // s + 1)
    out_layout = attrs.out_layout or attrs.data_layout
    return TensorType(packed_shape(out, "NCHW", out_layout, op_name, "out_layout"), attrs.out_dtype or data.dtype)


def _nchwc_impl(args, attrs, out_type):
    data = unpack(args[0], attrs.data_layout, "NCHW")
    weight = unpack(args[1], attrs.kernel_layout, "OIHW")
    out = conv2d_nchw(
        data,
        weight,
        spatial_pair(attrs.strides, "", "strides"),
        padding_2d(attrs.padding, ""),
        spatial_pair(attrs.dilation, "", "dilation"),
        attrs.groups,
        compute_dtype(out_type.dtype),
    )
    return np.ascontiguousarray(pack(out, "NCHW", attrs.out_layout or attrs.data_layout)).astype(out_type.dtype)


register(
    NNOpDef(
        "nn.contrib_conv2d_NCHWc",
        2,
        _nchwc_rel,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _nchwc_impl,
        te_impl=conv2d_nchwc_te,
        # The C++ op reuses Conv2DAttrs (defaults NCHW / OIHW); only the Python builder defaulted to NCHW8c.
        attrs=_conv_attrs(2, "NCHW", "OIHW"),
        extras={
            "builder_defaults": {"data_layout": "NCHW8c"},
            "builder_normalize": normalizer(pairs=("strides", "dilation", "kernel_size"), pad4=("padding",)),
        },
        description="conv2d on channel-blocked layouts (NCHW[x]c data, OIHW[x]i[y]o kernel).",
    )
)
