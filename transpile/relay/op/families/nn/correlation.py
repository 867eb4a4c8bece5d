"""nn.correlation: FlowNet's patch correlation of two NCHW feature maps (TVM's CorrelationRel / topi.nn.correlation_nchw).

Both maps are zero-padded; output channel q = (dy + r) * D + (dx + r) (D = 2r + 1, r =
max_displacement // stride2) at position (i, j) compares the kernel_size² patch of map 1 whose
top-left corner is (i * stride1 + max_displacement, j * stride1 + max_displacement) with the patch
of map 2 displaced by (dy * stride2, dx * stride2): the sum over channels and the patch of
x1 * x2 (is_multiply) or |x1 - x2|, divided by kernel_size² * channels.
Floating-point maps only (TVM's integer variant divided with truncation).
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..support import as_out, is_any, is_float
from ._common import NNOpDef, to_bool, to_int, to_ints, to_str


def padding_sides(padding) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of TVM's 1-, 2- or 4-value padding (GetPaddingHeightWidth)."""
    if len(padding) == 1:
        return (padding[0],) * 4
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)


def _geometry(attrs):
    """(displacement radius, displacement count D, border size)."""
    radius = attrs.max_displacement // attrs.stride2
    return radius, 2 * radius + 1, attrs.max_displacement + (attrs.kernel_size - 1) // 2


def _out_extent(padded, border, stride):
    return (padded - 2 * border + stride - 1) // stride


def _correlation_rel(arg_types, attrs):
    data1 = expect_tensor(arg_types[0], "nn.correlation", "data1")
    data2 = expect_tensor(arg_types[1], "nn.correlation", "data2")
    if attrs.layout != "NCHW":
        raise RelationError(f"nn.correlation: only layout NCHW is supported, got {attrs.layout!r}")
    if data1.ndim != 4 or not is_float(data1.dtype):
        raise RelationError(f"nn.correlation: data1 must be a 4-D float tensor, got {fmt_type(data1)}")
    if data2.dtype != data1.dtype or data2.ndim != 4 or not all(map(dim_eq, data1.shape, data2.shape)):
        raise RelationError(f"nn.correlation: data2 {fmt_type(data2)} must have the type of data1 {fmt_type(data1)}")
    if attrs.kernel_size < 1 or attrs.kernel_size % 2 == 0:
        raise RelationError(f"nn.correlation: kernel_size must be a positive odd number, got {attrs.kernel_size}")
    if attrs.max_displacement < 0 or attrs.stride1 < 1 or attrs.stride2 < 1:
        raise RelationError(
            "nn.correlation: max_displacement must be >= 0 and the strides positive, got "
            f"{attrs.max_displacement}, {attrs.stride1}, {attrs.stride2}"
        )
    if len(attrs.padding) not in (1, 2, 4) or min(attrs.padding) < 0:
        raise RelationError(f"nn.correlation: padding must be 1, 2 or 4 sizes >= 0, got {list(attrs.padding)}")
    top, left, bottom, right = padding_sides(attrs.padding)
    _, count, border = _geometry(attrs)
    shape = [data1.shape[0] if not is_any(data1.shape[0]) else data2.shape[0], count * count]
    for extent, pads, other, name in (
        (data1.shape[2], top + bottom, data2.shape[2], "height"),
        (data1.shape[3], left + right, data2.shape[3], "width"),
    ):
        extent = other if is_any(extent) else extent
        if is_any(extent):
            shape.append(extent)
            continue
        out = _out_extent(extent + pads, border, attrs.stride1)
        if out < 1:
            raise RelationError(
                f"nn.correlation: the padded {name} of {fmt_type(data1)} is too small for a border of {border}"
            )
        shape.append(out)
    return TensorType(shape, data1.dtype)


def _correlation_impl(args, attrs, out_type):
    data1, data2 = (np.asarray(a) for a in args)
    if data1.shape != data2.shape:
        raise ValueError(f"nn.correlation: data1 {data1.shape} and data2 {data2.shape} differ in shape")
    top, left, bottom, right = padding_sides(attrs.padding)
    widths = ((0, 0), (0, 0), (top, bottom), (left, right))
    padded1, padded2 = (np.pad(d.astype(np.float64), widths) for d in (data1, data2))
    radius, count, border = _geometry(attrs)
    out_h = _out_extent(padded1.shape[2], border, attrs.stride1)
    out_w = _out_extent(padded1.shape[3], border, attrs.stride1)
    if out_h < 1 or out_w < 1:
        raise ValueError(f"nn.correlation: the padded maps {padded1.shape[2:]} are too small for a border of {border}")
    ys = np.arange(out_h) * attrs.stride1 + attrs.max_displacement
    xs = np.arange(out_w) * attrs.stride1 + attrs.max_displacement
    k = attrs.kernel_size
    out = np.zeros((data1.shape[0], count * count, out_h, out_w))
    for q in range(count * count):
        dy, dx = (q // count - radius) * attrs.stride2, (q % count - radius) * attrs.stride2
        for ry in range(k):
            for rx in range(k):
                patch1 = padded1[:, :, (ys + ry)[:, None], (xs + rx)[None, :]]
                patch2 = padded2[:, :, (ys + dy + ry)[:, None], (xs + dx + rx)[None, :]]
                term = patch1 * patch2 if attrs.is_multiply else np.abs(patch1 - patch2)
                out[:, q] += term.sum(axis=1)
    return as_out(out / (k * k * data1.shape[1]), out_type)


def _correlation_te(inputs, attrs, out_type):
    from tvm import te, tirx

    from ..te_support import require, require_equal

    data1, data2 = inputs
    for axis in range(4):
        require_equal([data1.shape[axis], data2.shape[axis]], f"nn.correlation: data1 and data2 differ on axis {axis}")
    batch, channels, height, width = data1.shape
    top, left, bottom, right = padding_sides(attrs.padding)
    radius, count, border = _geometry(attrs)
    out_h = _out_extent(height + top + bottom, border, attrs.stride1)
    out_w = _out_extent(width + left + right, border, attrs.stride1)
    require(tirx.And(out_h >= 1, out_w >= 1), f"nn.correlation: the padded maps are too small for a border of {border}")
    acc = "float32" if str(data1.dtype) == "float16" else str(data1.dtype)
    k = attrs.kernel_size

    def padded(data, n, c, y, x):
        """data zero-padded (y, x are positions in the padded map)."""
        y, x = y - top, x - left
        inside = tirx.all(y >= 0, y < height, x >= 0, x < width)
        return tirx.if_then_else(inside, data[n, c, y, x].astype(acc), tirx.const(0.0, acc))

    rc, ry, rx = (te.reduce_axis((0, extent), name=name) for extent, name in ((channels, "rc"), (k, "ry"), (k, "rx")))

    def body(n, q, i, j):
        y1, x1 = i * attrs.stride1 + attrs.max_displacement, j * attrs.stride1 + attrs.max_displacement
        y2 = y1 + (tirx.floordiv(q, count) - radius) * attrs.stride2
        x2 = x1 + (tirx.floormod(q, count) - radius) * attrs.stride2
        a, b = padded(data1, n, rc, y1 + ry, x1 + rx), padded(data2, n, rc, y2 + ry, x2 + rx)
        return te.sum(a * b if attrs.is_multiply else tirx.abs(a - b), axis=[rc, ry, rx])

    total = te.compute((batch, count * count, out_h, out_w), body, name="T_correlation_sum")
    size = (channels * (k * k)).astype(acc)
    return te.compute(
        total.shape,
        lambda *i: (total(*i) / size).astype(str(data1.dtype)),
        name="T_correlation",
        tag="correlation_nchw",
    )


def _normalize(given: dict) -> dict:
    """relay.nn.correlation's padding: an int p means (p, p), as in TVM's builder."""
    if isinstance(given.get("padding"), int):
        given["padding"] = (given["padding"], given["padding"])
    return given


register(
    NNOpDef(
        "nn.correlation",
        2,
        _correlation_rel,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _correlation_impl,
        te_impl=_correlation_te,
        attrs=(
            AttrField("kernel_size", 1, to_int, "side of the compared patches (odd)"),
            AttrField("max_displacement", 1, to_int, "largest displacement compared"),
            AttrField("stride1", 1, to_int, "stride of the positions in data1"),
            AttrField("stride2", 1, to_int, "stride of the displacements in data2"),
            AttrField("padding", (0, 0), to_ints, "zero padding: 1, 2 (height, width) or 4 (top, left, bottom, right)"),
            AttrField("is_multiply", True, to_bool, "multiply (True) or take absolute differences"),
            AttrField("layout", "NCHW", to_str),
        ),
        extras={"builder_normalize": _normalize, "input_names": ("data1", "data2"), "support_level": 2},
        description="Patch correlation of two NCHW feature maps over a neighbourhood of displacements (FlowNet).",
    )
)
