"""Converters of ONNX Resize (opsets 10-19) and Upsample (7-9).

Resizing is separable: each resized axis maps every output position to a source coordinate
(`coordinate_transformation_mode`), then to a few input positions and weights (the nearest one,
the 2 linear or 4 cubic neighbours, or a wider antialiasing filter). The sizes are known at
import, so those positions and weights are computed here with numpy and the resize becomes, per
axis, a sum of `take`s scaled by constant weights. Where TVM's `image.resize1d/2d/3d` computes
exactly the same thing (spatial axes only, the scale it derives from the sizes equal to ONNX's),
that single operator is used instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ....op.registry import lookup
from ..converters import converter
from .shape_values import normalize_axes

_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass
class ResizeSpec:
    """One Resize, resolved: per axis output size and scale, and the interpolation settings."""

    mode: str
    coordinate_mode: str
    nearest_mode: str  # one of _NEAREST_MODES, or "legacy" (Upsample / Resize-10)
    cubic_a: float
    exclude_outside: bool
    extrapolation_value: float
    antialias: bool
    out_sizes: list[int]
    scales: list[float]
    roi: list[float] | None  # starts then ends, one per axis (tf_crop_and_resize only)


# ---------------------------------------------------------------------------------- per-axis sampling plans


def _source_coordinates(spec: ResizeSpec, axis: int, in_size: int):
    """x_original for every output position along `axis`, and which ones are extrapolated (or None)."""
    out = spec.out_sizes[axis]
    scale = spec.scales[axis]
    y = np.arange(out, dtype=np.float64)
    # ONNX's output_width is scale * length, fractional when the scale came from `scales`.
    width = scale * in_size
    mode = spec.coordinate_mode
    if mode == "align_corners":
        return (np.zeros(out) if width == 1 else y * (in_size - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "pytorch_half_pixel":
        return (np.zeros(out) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    # tf_crop_and_resize
    rank = len(spec.out_sizes)
    start, end = spec.roi[axis], spec.roi[rank + axis]
    if width == 1:
        x = np.full(out, (end - start) * (in_size - 1) / 2)
    else:
        x = y * (end - start) * (in_size - 1) / (width - 1)
    x = x + start * (in_size - 1)
    return x, (x < 0) | (x > in_size - 1)


def _nearest_offsets(ratio, scale: float, mode: str):
    """0 (the left neighbour) or 1 (the right one) for fractional parts in (0, 1]."""
    if mode == "round_prefer_floor":
        return np.where(ratio <= 0.5, 0, 1)
    if mode == "round_prefer_ceil":
        return np.where(ratio < 0.5, 0, 1)
    if mode == "floor":
        return np.zeros_like(ratio, dtype=np.int64)
    if mode == "ceil":
        return np.ones_like(ratio, dtype=np.int64)
    # legacy (Upsample, Resize-10): truncate when enlarging, ceil when shrinking.
    return np.ones_like(ratio, dtype=np.int64) if scale < 1 else np.zeros_like(ratio, dtype=np.int64)


def _cubic(distance, a: float):
    d = np.abs(distance)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _filter(spec: ResizeSpec, ratio, scale: float) -> tuple[int, np.ndarray]:
    """The first tap's offset from the left neighbour, and the (out, taps) weights (ratio in (0, 1])."""
    if spec.antialias and scale < 1:
        # The filter stretched by 1 / scale: more taps, weights renormalized to sum to 1.
        support = 1 if spec.mode == "linear" else 2
        first = int(np.floor(-support / scale) + 1)
        distance = (np.arange(first, 2 - first)[None, :] - ratio[:, None]) * scale
        weights = np.clip(1 - np.abs(distance), 0, 1) if spec.mode == "linear" else _cubic(distance, spec.cubic_a)
        return first, weights / weights.sum(axis=1, keepdims=True)
    if spec.mode == "linear":
        return 0, np.stack([1 - ratio, ratio], axis=1)
    return -1, _cubic(np.arange(-1, 3)[None, :] - ratio[:, None], spec.cubic_a)


def sampling_plan(spec: ResizeSpec, axis: int, in_size: int):
    """(indices (out, taps), weights (out, taps) or None for nearest, extrapolated (out,) or None)."""
    x, extrapolated = _source_coordinates(spec, axis, in_size)
    base = np.floor(x).astype(np.int64)
    # The fractional part lies in (0, 1]: an integer coordinate is the right end of its left interval.
    exact = x == base
    base = np.where(exact, base - 1, base)
    ratio = np.where(exact, 1.0, x - base)
    if spec.mode == "nearest":
        index = np.where(exact, base + 1, base + _nearest_offsets(ratio, spec.scales[axis], spec.nearest_mode))
        return np.clip(index, 0, in_size - 1)[:, None], None, extrapolated
    first, weights = _filter(spec, ratio, spec.scales[axis])
    indices = base[:, None] + first + np.arange(weights.shape[1])[None, :]
    if spec.exclude_outside:
        outside = (indices < 0) | (indices >= in_size)
        weights = np.where(outside, 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(indices, 0, in_size - 1), weights, extrapolated


# ---------------------------------------------------------------------------------- building the graph


def _resample_axis(ctx, data, spec: ResizeSpec, axis: int, in_size: int, dtype: str):
    b = ctx.b
    indices, weights, extrapolated = sampling_plan(spec, axis, in_size)
    rank = b.ndim_of(data)
    out = None
    if weights is None:
        out = b.call("take", data, b.const(indices[:, 0].astype("int64")), axis=axis, mode="clip")
    else:
        shape = [1] * rank
        shape[axis] = indices.shape[0]
        for tap in range(indices.shape[1]):
            if not weights[:, tap].any():
                continue
            picked = b.call("take", data, b.const(indices[:, tap].astype("int64")), axis=axis, mode="clip")
            term = b.call("multiply", picked, b.const(weights[:, tap].reshape(shape).astype(dtype)))
            out = term if out is None else b.call("add", out, term)
        if out is None:
            out = b.call("zeros_like", b.call("take", data, b.const(indices[:, 0].astype("int64")), axis=axis))
    if extrapolated is not None and extrapolated.any():
        shape = [1] * rank
        shape[axis] = extrapolated.size
        fill = b.const(np.array(spec.extrapolation_value, dtype=b.dtype_of(out)))
        out = b.call("where", b.const(extrapolated.reshape(shape)), fill, out)
    return out


def _is_identity(spec: ResizeSpec, axis: int, in_size: int) -> bool:
    rank = len(spec.out_sizes)
    trivial_roi = spec.roi is None or (math.isclose(spec.roi[axis], 0.0) and math.isclose(spec.roi[rank + axis], 1.0))
    return spec.out_sizes[axis] == in_size and math.isclose(spec.scales[axis], 1.0) and trivial_roi


def resize(ctx, data, spec: ResizeSpec):
    b = ctx.b
    in_sizes = b.static_shape(data, "the input of Resize")
    axes = [i for i in range(len(in_sizes)) if not _is_identity(spec, i, in_sizes[i])]
    if not axes:
        return data
    fused = _image_resize(ctx, data, spec, in_sizes, axes)
    if fused is not None:
        return fused
    dtype = b.dtype_of(data)
    integer = np.dtype(dtype).kind != "f"
    work = data if spec.mode == "nearest" or not integer else b.call("cast", data, dtype="float32")
    compute = b.dtype_of(work)
    for axis in axes:
        work = _resample_axis(ctx, work, spec, axis, in_sizes[axis], compute)
    if work is data or b.dtype_of(work) == dtype:
        return work
    # Integer results round half to even and saturate, as ONNX's reference does.
    info = np.iinfo(np.dtype(dtype))
    rounded = b.call("clip", b.call("round", work), a_min=float(info.min), a_max=float(info.max))
    return b.call("cast", rounded, dtype=dtype)


_IMAGE_RESIZE = {3: ("image.resize1d", "NCW"), 4: ("image.resize2d", "NCHW"), 5: ("image.resize3d", "NCDHW")}


def _image_resize(ctx, data, spec: ResizeSpec, in_sizes, axes):
    """The registry's image.resize1d/2d/3d (ONNX's arithmetic, one fused operator) when it applies, else None."""
    rank = len(in_sizes)
    if rank not in _IMAGE_RESIZE or lookup(_IMAGE_RESIZE[rank][0]) is None or min(axes) < 2 or spec.antialias:
        return None
    spatial = range(2, rank)
    rounding = spec.nearest_mode if spec.mode == "nearest" else ""
    if rounding == "legacy":
        enlarging = [spec.scales[i] >= 1 for i in spatial]
        if len(set(enlarging)) != 1:
            return None
        rounding = "floor" if enlarging[0] else "ceil"
    if spec.coordinate_mode == "pytorch_half_pixel" and any(spec.out_sizes[i] == 1 for i in spatial):
        return None  # a single output sample: the spec says coordinate 0, image.resize -0.5 (the reference's)
    op_name, layout = _IMAGE_RESIZE[rank]
    if spec.coordinate_mode == "tf_crop_and_resize":
        roi = tuple(spec.roi[2:rank]) + tuple(spec.roi[rank + 2 :])
    else:
        roi = (0.0,) * (2 * (rank - 2))
    # When the sizes came from scales that do not divide them exactly, the coordinates use the scales.
    exact = all(spec.out_sizes[i] == spec.scales[i] * in_sizes[i] for i in spatial)
    return ctx.b.call(
        op_name,
        data,
        roi=roi,
        size=tuple(spec.out_sizes[2:]),
        layout=layout,
        method={"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}[spec.mode],
        coordinate_transformation_mode=spec.coordinate_mode,
        rounding_method=rounding,
        cubic_alpha=spec.cubic_a,
        cubic_exclude=int(spec.exclude_outside),
        extrapolation_value=spec.extrapolation_value,
        scales=None if exact else tuple(spec.scales[2:]),
    )


# ---------------------------------------------------------------------------------- reading the node


def _choice(ctx, name: str, default: str, allowed) -> str:
    value = ctx.attr(name, default)
    if value not in allowed:
        raise ctx.b.error(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _constant_floats(ctx, index: int, what: str) -> list[float] | None:
    """A constant float input as a list; None when omitted or empty (an empty tensor means "not given")."""
    if not ctx.has_input(index):
        return None
    value = ctx.input_value(index, what)
    values = np.asarray(value).reshape(-1)
    return None if values.size == 0 else [float(v) for v in values]


def _output_geometry(ctx, in_sizes, axes, scales, sizes):
    """Per-axis output sizes and scales from `scales` or `sizes` (one of them) given for `axes`."""
    rank = len(in_sizes)
    out_sizes, full_scales = list(in_sizes), [1.0] * rank
    if sizes is not None:
        if len(sizes) != len(axes):
            raise ctx.b.error(f"sizes has {len(sizes)} values for {len(axes)} axes")
        policy = _choice(ctx, "keep_aspect_ratio_policy", "stretch", ("stretch", "not_larger", "not_smaller"))
        ratios = [int(s) / in_sizes[a] for s, a in zip(sizes, axes)]
        if policy == "stretch":
            for axis, size, ratio in zip(axes, sizes, ratios):
                out_sizes[axis], full_scales[axis] = int(size), ratio
        else:
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for axis in axes:
                out_sizes[axis], full_scales[axis] = int(scale * in_sizes[axis] + 0.5), scale
        return out_sizes, full_scales
    if scales is None:
        raise ctx.b.error("one of the scales and sizes inputs must be given")
    if len(scales) != len(axes):
        raise ctx.b.error(f"scales has {len(scales)} values for {len(axes)} axes")
    for axis, scale in zip(axes, scales):
        if scale <= 0:
            raise ctx.b.error(f"scales must be positive, got {scales}")
        # floor(length * scale): the roi does not shrink it (the spec's formula says it does, but
        # onnxruntime and the reference implementation both leave it out).
        out_sizes[axis], full_scales[axis] = int(math.floor(in_sizes[axis] * scale)), scale
    return out_sizes, full_scales


def _full_roi(ctx, roi, axes, rank):
    if roi is None:
        return None
    if len(roi) != 2 * len(axes):
        raise ctx.b.error(f"roi has {len(roi)} values, expected {2 * len(axes)} (starts then ends)")
    full = [0.0] * rank + [1.0] * rank
    for i, axis in enumerate(axes):
        full[axis], full[rank + axis] = roi[i], roi[len(axes) + i]
    return full


@converter("Resize")
def resize_op(ctx):
    b = ctx.b
    data = ctx.input(0)
    in_sizes = b.static_shape(data, "the input of Resize")
    rank = len(in_sizes)
    mode = _choice(ctx, "mode", "nearest", _MODES)
    if ctx.opset < 11:
        if mode == "cubic":
            raise b.error("mode cubic needs opset 11")
        scales = _constant_floats(ctx, 1, "the scales input of Resize")
        out_sizes, full_scales = _output_geometry(ctx, in_sizes, list(range(rank)), scales, None)
        spec = ResizeSpec(mode, "asymmetric", "legacy", -0.75, False, 0.0, False, out_sizes, full_scales, None)
        return resize(ctx, data, spec)
    axes = ctx.attr("axes") if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else normalize_axes(ctx, axes, rank)
    coordinate_mode = _choice(ctx, "coordinate_transformation_mode", "half_pixel", _COORDINATE_MODES)
    if coordinate_mode == "half_pixel_symmetric" and ctx.opset < 19:
        raise b.error("coordinate_transformation_mode half_pixel_symmetric needs opset 19")
    roi = None
    if coordinate_mode == "tf_crop_and_resize":
        roi = _full_roi(ctx, _constant_floats(ctx, 1, "the roi input of Resize"), axes, rank)
        if roi is None:
            raise b.error("coordinate_transformation_mode tf_crop_and_resize needs the roi input")
    scales = _constant_floats(ctx, 2, "the scales input of Resize")
    sizes = _constant_floats(ctx, 3, "the sizes input of Resize")
    if scales is not None and sizes is not None:
        raise b.error("only one of the scales and sizes inputs may be given")
    out_sizes, full_scales = _output_geometry(ctx, in_sizes, axes, scales, sizes)
    antialias = bool(ctx.attr("antialias", 0)) if ctx.opset >= 18 else False
    if antialias and mode == "nearest":
        raise b.error("antialias applies to the linear and cubic modes only")
    spec = ResizeSpec(
        mode=mode,
        coordinate_mode=coordinate_mode,
        nearest_mode=_choice(ctx, "nearest_mode", "round_prefer_floor", _NEAREST_MODES),
        cubic_a=float(ctx.attr("cubic_coeff_a", -0.75)),
        exclude_outside=bool(ctx.attr("exclude_outside", 0)),
        extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)),
        antialias=antialias,
        out_sizes=out_sizes,
        scales=full_scales,
        roi=roi,
    )
    return resize(ctx, data, spec)


@converter("Upsample")
def upsample(ctx):
    b = ctx.b
    data = ctx.input(0)
    in_sizes = b.static_shape(data, "the input of Upsample")
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear":  # the opset-1 spelling
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise b.error(f"mode must be nearest or linear, got {mode!r}")
    if ctx.opset >= 9:
        scales = _constant_floats(ctx, 1, "the scales input of Upsample")
    else:
        scales = ctx.attr("scales")
        if scales is None:
            raise b.error("attribute scales is required")
        scales = [float(s) for s in scales]
    if scales is None or len(scales) != len(in_sizes):
        raise b.error(f"scales must have one value per dimension of {b.type_of(data)}, got {scales}")
    if any(s < 1 for s in scales):
        raise b.error(f"Upsample scales must be >= 1, got {scales}")
    out_sizes, full_scales = _output_geometry(ctx, in_sizes, list(range(len(in_sizes))), scales, None)
    spec = ResizeSpec(mode, "asymmetric", "legacy", -0.75, False, 0.0, False, out_sizes, full_scales, None)
    return resize(ctx, data, spec)
