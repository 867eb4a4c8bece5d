"""image.resize1d / resize2d / resize3d: nearest, linear and cubic resampling (TVM's Resize{1,2,3}DRel).

The numbers are ONNX Resize's (onnx/reference/ops/op_resize.py) for every coordinate mode and
nearest rounding: edge pixels repeat past the border, cubic_exclude drops the taps outside
the image, tf_crop_and_resize gives extrapolation_value outside the roi's image, integer
outputs round half to even and saturate. TVM-only settings keep TVM's meaning: rounding ""
(round with align_corners, floor otherwise) and "round" (half to even).

`scales` is a transpile extension (not a TVM attribute; printed only when set): ONNX's scale
factors, for models whose output size came from scales. Coordinate modes then divide by the
scale itself, not by size / input size, as ONNX does.
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, layout_positions, to_dtype, to_float, to_floats, to_int, to_ints, to_str
from .resize_te import resize_te
from .sampling import (
    COORDINATE_MODES,
    METHODS,
    NUMPY_OPS,
    ROUNDING_METHODS,
    axis_taps,
    effective_rounding,
    source_coordinate,
)

PRIMAL = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _choice(op_name: str, name: str, value: str, allowed) -> None:
    if value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise RelationError(f"{op_name}: {name} must be one of {listed}, got {value!r}")


def _resize_rel(op_name: str, nd: int):
    primal = PRIMAL[nd]

    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        layout_positions(attrs.layout, primal, op_name, "layout")
        if data.ndim != nd + 2:
            raise RelationError(
                f"{op_name}: data must have rank {nd + 2} for layout {attrs.layout}, got {fmt_type(data)}"
            )
        if len(attrs.size) != nd or any(s is None or s < 1 for s in attrs.size):
            raise RelationError(f"{op_name}: size must be {nd} positive extent(s), got {list(attrs.size)}")
        if attrs.roi is not None and len(attrs.roi) != 2 * nd:
            raise RelationError(f"{op_name}: roi must have {2 * nd} values (starts, then ends), got {list(attrs.roi)}")
        if attrs.scales is not None and (len(attrs.scales) != nd or min(attrs.scales) <= 0):
            raise RelationError(f"{op_name}: scales must be {nd} positive factor(s), got {list(attrs.scales)}")
        _choice(op_name, "method", attrs.method, METHODS)
        _choice(op_name, "coordinate_transformation_mode", attrs.coordinate_transformation_mode, COORDINATE_MODES)
        _choice(op_name, "rounding_method", attrs.rounding_method, ROUNDING_METHODS)
        shape = list(data.shape)
        for axis, size in zip(primal[2:], attrs.size):
            shape[attrs.layout.index(axis)] = size
        return TensorType(shape, attrs.out_dtype or data.dtype)

    return rel


def axis_plan(attrs, nd: int, in_sizes) -> list:
    """Per spatial axis: (input size, output size, scale or None, roi start, roi end)."""
    roi = attrs.roi if attrs.roi is not None else (0.0,) * nd + (1.0,) * nd
    # Scales are float32, as ONNX gives them (the roi is float32 too, see sampling.source_coordinate).
    scales = tuple(float(np.float32(s)) for s in attrs.scales) if attrs.scales is not None else (None,) * nd
    return [(in_sizes[i], attrs.size[i], scales[i], roi[i], roi[i + nd]) for i in range(nd)]


def saturate(values, dtype: np.dtype):
    """ONNX's saturate_cast: integers round half to even and clip to their range."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = np.clip(np.rint(values), info.min, info.max)
    return values.astype(dtype)


def _resize_impl(op_name: str, nd: int):
    primal = PRIMAL[nd]

    def impl(args, attrs, out_type):
        x = args[0]
        positions = [attrs.layout.index(a) for a in primal[2:]]
        mode = attrs.coordinate_transformation_mode
        rounding = effective_rounding(attrs.rounding_method, mode)
        values = x.astype(np.float64)
        outside = False  # tf_crop_and_resize: where any axis samples beyond the image
        plan = axis_plan(attrs, nd, [x.shape[p] for p in positions])
        # Resampling is separable: one axis after the other, each a weighted sum of gathered slices.
        for axis, (in_size, out_size, scale, start, end) in zip(positions, plan):
            y = np.arange(out_size, dtype=np.float64)
            coords = source_coordinate(y, in_size, out_size, scale, mode, start, end)
            first, weights = axis_taps(
                coords, in_size, attrs.method, rounding, attrs.cubic_alpha, bool(attrs.cubic_exclude), NUMPY_OPS
            )
            along = [1] * x.ndim
            along[axis] = out_size
            resized = 0.0
            for k, weight in enumerate(weights):
                taps = np.clip(first + k, 0, in_size - 1).astype(np.intp)
                gathered = np.take(values, taps, axis=axis)
                resized = resized + (gathered if weight is None else gathered * weight.reshape(along))
            values = resized
            if mode == "tf_crop_and_resize":
                outside = outside | ((coords < 0) | (coords > in_size - 1)).reshape(along)
        if mode == "tf_crop_and_resize":
            values = np.where(outside, attrs.extrapolation_value, values)
        return saturate(values, np.dtype(out_type.dtype))

    return impl


def _normalize_builder(nd: int):
    def normalize(given: dict) -> dict:
        from ....expr import Constant, Expr

        for name in ("size", "roi"):
            value = given.get(name)
            if isinstance(value, Constant):
                given[name] = value.data.tolist()
            elif isinstance(value, Expr):
                from .....errors import UnsupportedFeatureError

                raise UnsupportedFeatureError(
                    f"image.resize{nd}d with a computed {name}", "relay", detail=f"{name} must be a constant"
                )
        if given.get("roi") is None:
            given["roi"] = (0.0,) * (2 * nd)
        if given.get("out_dtype") is None:
            given["out_dtype"] = ""
        return given

    return normalize


for _nd in (1, 2, 3):
    _name = f"image.resize{_nd}d"
    register(
        NNOpDef(
            _name,
            1,
            _resize_rel(_name, _nd),
            OpPattern.INJECTIVE,
            _resize_impl(_name, _nd),
            te_impl=resize_te(_name, _nd),
            attrs=(
                AttrField("size", convert=to_ints, doc="output extent of each spatial axis"),
                AttrField("roi", None, to_floats, "(starts..., ends...) of the spatial axes for tf_crop_and_resize"),
                AttrField("layout", PRIMAL[_nd], to_str),
                AttrField("method", "linear", to_str, "nearest_neighbor, linear or cubic"),
                AttrField("coordinate_transformation_mode", "half_pixel", to_str, "as ONNX Resize"),
                AttrField(
                    "rounding_method", "round", to_str, "nearest pixel: round, round_prefer_floor/ceil, floor, ceil"
                ),
                AttrField("cubic_alpha", -0.5, to_float),
                AttrField("cubic_exclude", 0, to_int, "1: taps outside the image get no weight"),
                AttrField("extrapolation_value", 0.0, to_float, "outside the roi (tf_crop_and_resize)"),
                AttrField("out_dtype", "", to_dtype, "empty means the data dtype"),
                AttrField("scales", None, to_floats, "transpile extension: ONNX scale factors the size came from"),
            ),
            extras={"builder_defaults": {"rounding_method": ""}, "builder_normalize": _normalize_builder(_nd)},
            description=f"Resize the {PRIMAL[_nd][2:]} axes by nearest, linear or cubic interpolation.",
        )
    )
