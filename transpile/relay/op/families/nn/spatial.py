"""Spatial reshaping: nn.pad and nn.upsampling."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, is_any, layout_positions, to_bool, to_float, to_int_pairs, to_str
from .te_common import dims, permute

_PAD_MODES = ("constant", "edge", "reflect")
_UPSAMPLING_METHODS = ("nearest_neighbor", "bilinear")


def _pad_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.pad", "data")
    # TVM never constrained pad_value's type (text like `nn.pad(%f16, 0, ...)` type-checks).
    expect_tensor(arg_types[1], "nn.pad", "pad_value")
    if len(attrs.pad_width) != data.ndim:
        raise RelationError(
            f"nn.pad: pad_width has {len(attrs.pad_width)} pairs but data {fmt_type(data)} has {data.ndim} dimensions"
        )
    if attrs.pad_mode not in _PAD_MODES:
        raise RelationError(f"nn.pad: pad_mode must be one of {', '.join(_PAD_MODES)}, got {attrs.pad_mode!r}")
    shape = []
    for i, (dim, pair) in enumerate(zip(data.shape, attrs.pad_width)):
        if len(pair) != 2:
            raise RelationError(f"nn.pad: pad_width[{i}] must be a pair (before, after), got {list(pair)}")
        if is_any(dim):
            shape.append(AnyDim())
            continue
        size = dim + pair[0] + pair[1]
        if size < 0:
            raise RelationError(f"nn.pad: dimension {i} of {fmt_type(data)} would become {size} after padding")
        shape.append(size)
    return TensorType(shape, data.dtype)


def _pad_impl(args, attrs, out_type):
    data, pad_value = args
    widths = [tuple(pair) for pair in attrs.pad_width]
    # Negative widths crop, as in TVM.
    crop = tuple(slice(max(0, -b), data.shape[i] - max(0, -a)) for i, (b, a) in enumerate(widths))
    data = data[crop]
    widths = [(max(0, b), max(0, a)) for b, a in widths]
    if attrs.pad_mode == "constant":
        return np.pad(data, widths, mode="constant", constant_values=np.asarray(pad_value).astype(data.dtype))
    return np.pad(data, widths, mode=attrs.pad_mode)


def _upsampling_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.upsampling", "data")
    positions = layout_positions(attrs.layout, "NCHW", "nn.upsampling", "layout")
    if data.ndim != 4:
        raise RelationError(f"nn.upsampling: data must have rank 4 for layout {attrs.layout}, got {fmt_type(data)}")
    if attrs.method not in _UPSAMPLING_METHODS:
        raise RelationError(
            f"nn.upsampling: method must be one of {', '.join(_UPSAMPLING_METHODS)}, got {attrs.method!r}"
        )
    shape = list(data.shape)
    for axis, scale in (("H", attrs.scale_h), ("W", attrs.scale_w)):
        index = positions[axis]
        if is_any(shape[index]):  # a `?` or symbolic extent scales to an unknown one (TVM: round(h * scale))
            shape[index] = AnyDim()
        else:
            # TVM: cast(round(size * scale)); numpy rounds half to even like C's nearbyint.
            shape[index] = int(np.round(shape[index] * scale))
            if shape[index] <= 0:
                raise RelationError(
                    f"nn.upsampling: scale {scale} gives an empty {axis} dimension for {fmt_type(data)}"
                )
    return TensorType(shape, data.dtype)


def _source_coords(out_size, in_size, align_corners):
    out = np.arange(out_size, dtype=np.float64)
    if align_corners:
        return out * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros(out_size)
    return out * (in_size / out_size)


def _upsampling_impl(args, attrs, out_type):
    x = args[0]
    positions = layout_positions(attrs.layout, "NCHW", "nn.upsampling", "layout")
    hi, wi = positions["H"], positions["W"]
    moved = np.moveaxis(x, [hi, wi], [-2, -1])
    in_h, in_w = moved.shape[-2:]
    out_h, out_w = out_type.shape[hi], out_type.shape[wi]
    ys = _source_coords(out_h, in_h, attrs.align_corners)
    xs = _source_coords(out_w, in_w, attrs.align_corners)
    if attrs.method == "nearest_neighbor":
        # topi resize2d: round (half away from zero) with align_corners, otherwise floor of
        # (coordinate + 1e-5) so that float error cannot push an exact index down.
        offset = 0.5 if attrs.align_corners else 1e-5
        yi = np.clip(np.floor(ys + offset).astype(np.int64), 0, in_h - 1)
        xi = np.clip(np.floor(xs + offset).astype(np.int64), 0, in_w - 1)
        out = moved[..., yi[:, None], xi[None, :]]
    else:
        y0 = np.clip(np.floor(ys).astype(np.int64), 0, in_h - 1)
        x0 = np.clip(np.floor(xs).astype(np.int64), 0, in_w - 1)
        y1, x1 = np.minimum(y0 + 1, in_h - 1), np.minimum(x0 + 1, in_w - 1)
        fy = (ys - np.floor(ys))[:, None]
        fx = (xs - np.floor(xs))[None, :]
        src = moved.astype(np.float64)
        top = src[..., y0[:, None], x0[None, :]] * (1 - fx) + src[..., y0[:, None], x1[None, :]] * fx
        bottom = src[..., y1[:, None], x0[None, :]] * (1 - fx) + src[..., y1[:, None], x1[None, :]] * fx
        out = top * (1 - fy) + bottom * fy
    return np.moveaxis(out, [-2, -1], [hi, wi]).astype(x.dtype)


# --- TE lowerings (tvm imported inside: importing the registry must not import tvm)


def _pad_te(inputs, attrs, out_type):
    from tvm import te, tirx, topi

    data, pad_value = inputs
    dtype = str(data.dtype)
    value = pad_value().astype(dtype)
    widths = [tuple(int(w) for w in pair) for pair in attrs.pad_width]
    if attrs.pad_mode == "constant" and all(b >= 0 and a >= 0 for b, a in widths):
        return topi.nn.pad(data, [b for b, _ in widths], [a for _, a in widths], pad_value=value, name="T_pad")
    # Negative widths crop first (as the reference does), then the mode applies to the cropped extent.
    shape = dims(data)
    crops = [(max(0, -b), max(0, -a)) for b, a in widths]
    sizes = [n - lo - hi for n, (lo, hi) in zip(shape, crops)]

    def source(j, size):
        if attrs.pad_mode == "edge":
            return tirx.max(tirx.min(j, size - 1), 0)
        # Reflection repeats with period 2 (size - 1); a size-1 extent reads index 0 throughout.
        period = tirx.max(2 * (size - 1), 1)
        m = tirx.floormod(j, period)
        return tirx.Select(m >= size, period - m, m)

    def element(*i):
        index, inside = [], []
        for d, (b, _) in enumerate(widths):
            j = i[d] - max(0, b)
            if attrs.pad_mode == "constant":
                inside += [j >= 0, j < sizes[d]]
                index.append(j + crops[d][0])
            else:
                index.append(source(j, sizes[d]) + crops[d][0])
        if inside:
            return tirx.if_then_else(tirx.all(*inside), data(*index), value)
        return data(*index)

    out_shape = [size + max(0, b) + max(0, a) for size, (b, a) in zip(sizes, widths)]
    return te.compute(out_shape, element, name="T_pad", tag="injective,pad")


def _upsampling_te(inputs, attrs, out_type):
    from tvm import topi

    layout = attrs.layout if attrs.layout in ("NCHW", "NHWC") else "NCHW"
    out = topi.nn.upsampling(
        permute(inputs[0], attrs.layout, layout),
        attrs.scale_h,
        attrs.scale_w,
        layout=layout,
        method=attrs.method,
        align_corners=attrs.align_corners,
    )
    return permute(out, layout, attrs.layout)


def _build_pad(data, pad_width, pad_value=0, pad_mode="constant"):
    from ....expr import to_expr
    from ...registry import make_call

    return make_call("nn.pad", [to_expr(data), to_expr(pad_value)], {"pad_width": pad_width, "pad_mode": pad_mode})


class _PadOpDef(NNOpDef):
    """relay.nn.pad(data, pad_width, pad_value=0, pad_mode='constant'): pad_value is an input."""

    def __call__(self, *args, **kwargs):
        return _build_pad(*args, **kwargs)


register(
    _PadOpDef(
        "nn.pad",
        2,
        _pad_rel,
        OpPattern.INJECTIVE,
        _pad_impl,
        te_impl=_pad_te,
        attrs=(
            AttrField("pad_width", convert=to_int_pairs, doc="((before, after), ...) per dimension"),
            AttrField("pad_mode", "constant", to_str, "constant, edge or reflect"),
        ),
        description="Pad with a constant (the second input), edge values or reflection.",
    )
)
register(
    NNOpDef(
        "nn.upsampling",
        1,
        _upsampling_rel,
        OpPattern.INJECTIVE,
        _upsampling_impl,
        te_impl=_upsampling_te,
        attrs=(
            AttrField("scale_h", convert=to_float),
            AttrField("scale_w", convert=to_float),
            AttrField("layout", "NCHW", to_str),
            AttrField("method", "nearest_neighbor", to_str, "nearest_neighbor or bilinear"),
            AttrField("align_corners", False, to_bool),
        ),
        extras={"builder_defaults": {"scale_h": 1.0, "scale_w": 1.0}},
        description="Scale H and W by nearest-neighbor or bilinear interpolation.",
    )
)
