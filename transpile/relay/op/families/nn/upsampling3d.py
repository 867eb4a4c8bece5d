"""nn.upsampling3d: scale D, H and W by nearest-neighbor or trilinear interpolation (TVM's UpSampling3DRel).

As topi.nn.upsampling3d did, it is image.resize3d to the sizes round(extent * scale) with TVM's
default rounding: the numpy reference and the TE lowering are resize3d's, called with the
equivalent resize attributes.
"""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, get, normalize_attrs, register
from ..image.sampling import COORDINATE_MODES
from ._common import NNOpDef, is_any, layout_positions, to_float, to_str

_METHODS = {"nearest_neighbor": "nearest_neighbor", "trilinear": "linear"}
_SPATIAL = "DHW"


def _scales(attrs):
    return (attrs.scale_d, attrs.scale_h, attrs.scale_w)


def _scaled(extent: int, scale: float) -> int:
    # TVM: cast(round(extent * scale)); numpy rounds half to even, like the nearbyint TVM emits.
    return int(np.round(extent * scale))


def _upsampling3d_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.upsampling3d", "data")
    positions = layout_positions(attrs.layout, "NCDHW", "nn.upsampling3d", "layout")
    if data.ndim != 5:
        raise RelationError(f"nn.upsampling3d: data must have rank 5 for layout {attrs.layout}, got {fmt_type(data)}")
    if attrs.method not in _METHODS:
        raise RelationError(f"nn.upsampling3d: method must be nearest_neighbor or trilinear, got {attrs.method!r}")
    if attrs.coordinate_transformation_mode not in COORDINATE_MODES[:3]:
        raise RelationError(
            "nn.upsampling3d: coordinate_transformation_mode must be half_pixel, align_corners or asymmetric, "
            f"got {attrs.coordinate_transformation_mode!r}"
        )
    shape = list(data.shape)
    for axis, scale in zip(_SPATIAL, _scales(attrs)):
        index = positions[axis]
        if is_any(shape[index]):  # a `?` or symbolic extent scales to an unknown one
            shape[index] = AnyDim()
            continue
        shape[index] = _scaled(shape[index], scale)
        if shape[index] <= 0:
            raise RelationError(f"nn.upsampling3d: scale {scale} gives an empty {axis} dimension for {fmt_type(data)}")
    return TensorType(shape, data.dtype)


def _resize_attrs(attrs, extents):
    """image.resize3d's attributes for this upsampling of spatial extents `extents` (D, H, W)."""
    sizes = [_scaled(extent, scale) for extent, scale in zip(extents, _scales(attrs))]
    if min(sizes) <= 0:
        raise ValueError(f"nn.upsampling3d: scales {_scales(attrs)} give an empty output for extents {extents}")
    return normalize_attrs(
        get("image.resize3d"),
        {
            "size": sizes,
            "layout": attrs.layout,
            "method": _METHODS[attrs.method],
            "coordinate_transformation_mode": attrs.coordinate_transformation_mode,
            "rounding_method": "",  # TVM's: round with align_corners, floor otherwise
        },
    )


def _extents(shape, layout):
    return [int(shape[layout.index(axis)]) for axis in _SPATIAL]


def _upsampling3d_impl(args, attrs, out_type):
    data = np.asarray(args[0])
    resize_attrs = _resize_attrs(attrs, _extents(data.shape, attrs.layout))
    return get("image.resize3d").numpy_impl(args, resize_attrs, TensorType(out_type.shape, out_type.dtype))


def _upsampling3d_te(inputs, attrs, out_type):
    from .te_common import static_extent

    data = inputs[0]
    extents = [static_extent(data.shape[attrs.layout.index(a)], "nn.upsampling3d", "spatial extent") for a in _SPATIAL]
    return get("image.resize3d").te_impl(inputs, _resize_attrs(attrs, extents), out_type)


register(
    NNOpDef(
        "nn.upsampling3d",
        1,
        _upsampling3d_rel,
        OpPattern.INJECTIVE,
        _upsampling3d_impl,
        te_impl=_upsampling3d_te,
        attrs=(
            AttrField("scale_d", convert=to_float),
            AttrField("scale_h", convert=to_float),
            AttrField("scale_w", convert=to_float),
            AttrField("layout", "NCDHW", to_str),
            AttrField("method", "nearest_neighbor", to_str, "nearest_neighbor or trilinear"),
            AttrField(
                "coordinate_transformation_mode", "half_pixel", to_str, "half_pixel, align_corners or asymmetric"
            ),
        ),
        extras={"builder_defaults": {"scale_d": 1.0, "scale_h": 1.0, "scale_w": 1.0}, "support_level": 2},
        description="Scale D, H and W by nearest-neighbor or trilinear interpolation (image.resize3d to "
        "round(extent * scale)).",
    )
)
