"""Interpolation arithmetic shared by the numpy references and the TE lowerings of the image operators.

Every function here only adds, multiplies and divides its arguments and calls the rounding
functions of `ops` (NUMPY_OPS or te_ops()): the same formula, in the same order, evaluates a
float64 numpy array in numpy_impl and a float64 PrimExpr in te_impl, so both pick the same pixels
even where a coordinate lands exactly on a rounding boundary. The formulas follow ONNX's Resize
reference (onnx/reference/ops/op_resize.py) and TVM's topi.image.resize.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
    "half_pixel_symmetric",
)
ROUNDING_METHODS = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _bind_numpy(value, dtype: str, body):
    return body(value)


NUMPY_OPS = SimpleNamespace(
    floor=np.floor,
    ceil=np.ceil,
    rint=np.rint,
    where=np.where,
    either=np.logical_or,
    clip=np.clip,
    bind=_bind_numpy,
    isnan=np.isnan,
)


def te_ops(let_bound: bool = True):
    """The rounding functions of NUMPY_OPS as TE intrinsics (te.round rounds half to even, like np.rint);
    `bind` makes a Let unless not `let_bound` (then the value is repeated where it is used)."""
    from tvm import te, tirx

    def clip(x, low, high):
        return tirx.max(tirx.min(x, high), low)

    def bind(value, dtype: str, body):
        # body(var) with var = value as a let binding around every expression body returns:
        # expressions are trees, and a value used many times would otherwise be copied each time.
        var = tirx.Var("v", dtype)

        def wrap(result):
            if isinstance(result, (list, tuple)):
                return type(result)(wrap(r) for r in result)
            return result if result is None else tirx.Let(var, value, result)

        return wrap(body(var))

    return SimpleNamespace(
        floor=te.floor,
        ceil=te.ceil,
        rint=te.round,
        where=tirx.Select,
        either=tirx.Or,
        clip=clip,
        bind=bind if let_bound else _bind_numpy,
        isnan=tirx.isnan,
    )


def source_coordinate(y, in_size: int, out_size: int, scale, mode: str, roi_start: float, roi_end: float):
    """The input coordinate that output index `y` (float64) samples along one axis.

    `scale` is ONNX's scale factor when the sizes came from scales (the output extent is then
    scale * in_size, possibly fractional), or None for out_size / in_size.
    """
    scale_factor = out_size / in_size if scale is None else scale
    output_width = scale_factor * in_size
    if mode == "align_corners":
        return y * 0.0 if output_width == 1 else y * (in_size - 1) / (output_width - 1)
    if mode == "asymmetric":
        return y / scale_factor
    if mode == "tf_crop_and_resize":
        # The roi is float32 (as TVM stores it and ONNX models give it); ONNX's reference does
        # its roi-only products in float32 too.
        start, span = np.float32(roi_start), np.float32(roi_end) - np.float32(roi_start)
        if output_width == 1:
            x = y * 0.0 + float(span * np.float32(in_size - 1) / np.float32(2))
        else:
            x = y * float(span) * (in_size - 1) / (output_width - 1)
        return x + float(start * np.float32(in_size - 1))
    if mode == "pytorch_half_pixel":
        return y * 0.0 - 0.5 if output_width == 1 else (y + 0.5) / scale_factor - 0.5
    if mode == "half_pixel":
        return (y + 0.5) / scale_factor - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / output_width)
        return offset + (y + 0.5) / scale_factor - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale_factor
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def effective_rounding(rounding_method: str, mode: str) -> str:
    """TVM's default (empty) rounding: round with align_corners, otherwise floor."""
    if rounding_method:
        return rounding_method
    return "round" if mode == "align_corners" else "floor"


def nearest_index(x, rounding_method: str, ops):
    """The nearest pixel of coordinate x (a float; the caller clamps it into the image)."""
    if rounding_method == "round":
        return ops.rint(x)
    if rounding_method == "floor":
        return ops.floor(x)
    if rounding_method == "ceil":
        return ops.ceil(x)
    # ONNX: the fraction past floor(x) decides; exactly one half goes to the preferred side.
    low = ops.floor(x)
    fraction = x - low
    if rounding_method == "round_prefer_floor":
        return ops.where(fraction > 0.5, low + 1.0, low)
    if rounding_method == "round_prefer_ceil":
        return ops.where(fraction >= 0.5, low + 1.0, low)
    raise ValueError(f"unknown rounding_method {rounding_method!r}")


def cubic_weights(t, alpha: float) -> list:
    """Keys' cubic convolution weights of the taps at floor - 1 .. floor + 2 for fraction t."""
    t2 = t * t
    t3 = t2 * t
    return [
        alpha * (t3 - 2.0 * t2 + t),
        (alpha + 2.0) * t3 - (3.0 + alpha) * t2 + 1.0,
        -(alpha + 2.0) * t3 + (3.0 + 2.0 * alpha) * t2 - alpha * t,
        -alpha * t3 + alpha * t2,
    ]


def axis_taps(x, in_size: int, method: str, rounding_method: str, cubic_alpha: float, exclude: bool, ops):
    """(first tap as a float coordinate, weights of consecutive taps) for coordinate x along one axis.

    Tap k reads pixel first + k, clamped into [0, in_size - 1] by the caller (edge padding, as
    ONNX and topi do). With `exclude`, cubic taps outside the image get weight 0 and the
    others are renormalized (ONNX's exclude_outside).
    """
    if method == "nearest_neighbor":
        return nearest_index(x, rounding_method, ops), [None]
    low = ops.floor(x)
    t = x - low
    if method == "linear":
        return low, [1.0 - t, t]
    weights = cubic_weights(t, cubic_alpha)
    first = low - 1.0
    if exclude:
        outside = [ops.either(first + k < 0.0, first + k > in_size - 1.0) for k in range(4)]
        weights = [ops.where(out, 0.0 * t, w) for out, w in zip(outside, weights)]
        total = weights[0] + weights[1] + weights[2] + weights[3]
        weights = [w / total for w in weights]
    return first, weights


# --- grid_sample (ONNX's GridSample reference, i.e. PyTorch's grid_sampler)

GRID_METHODS = ("nearest", "bilinear", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def grid_borders(size: int, align_corners: bool) -> tuple[float, float]:
    """The extent [low, high] the normalized range [-1, 1] maps to (pixel centres or pixel edges)."""
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def reflect(x, low: float, high: float, dtype: str, ops):
    """Fold x into [low, high] by reflecting at the borders as often as needed (in float64, as ONNX)."""
    span = high - low
    if span == 0:
        return x * 0.0 + low

    def folds(distance):
        count = ops.floor(distance / span)
        return distance - count * span, count - 2.0 * ops.floor(count / 2.0) == 0.0

    def folded(wide):
        rest_below, even_below = folds(low - wide)
        rest_above, even_above = folds(wide - high)
        below = ops.where(even_below, low + rest_below, high - rest_below)
        above = ops.where(even_above, high - rest_above, low + rest_above)
        return ops.where(wide < low, below, ops.where(wide > high, above, wide)).astype(dtype)

    return ops.bind(x.astype("float64"), "float64", folded)


def grid_axis_taps(g, size: int, method: str, padding_mode: str, align_corners: bool, dtype: str, ops):
    """(first tap as a float coordinate, weights of consecutive taps) for normalized grid values g."""
    if align_corners:
        x = (g + 1.0) / 2.0 * (size - 1)
    else:
        x = ((g + 1.0) * size - 1.0) / 2.0
    if method == "nearest":
        x = ops.rint(x)
    low, high = grid_borders(size, align_corners)
    if padding_mode == "border":
        x = ops.where(ops.either(x < low, x > high), ops.clip(x, 0.0, size - 1.0), x)
    elif padding_mode == "reflection":
        x = reflect(x, low, high, dtype, ops)
    if method == "nearest":
        return x, [None]

    def taps(x):
        floor = ops.floor(x)
        t = x - floor
        if method == "bilinear":
            return floor, [1.0 - t, t]
        return floor - 1.0, cubic_weights(t, -0.75)

    return ops.bind(x, dtype, taps)


def grid_pixel(index, size: int, padding_mode: str, align_corners: bool, dtype: str, ops):
    """(pixel index clamped into the image as a float, outside mask or None) of a float tap index.

    With zeros padding the caller reads 0 where the mask is set; border and reflection read a pixel
    for every coordinate but nan, which samples nothing in every mode (PyTorch's grid_sampler: 0).
    """

    def pixel_and_mask(i, outside):
        unknown = ops.isnan(i)
        outside = unknown if outside is None else ops.either(outside, unknown)
        return ops.where(unknown, 0.0, ops.clip(i, 0.0, size - 1.0)), outside

    if padding_mode == "zeros":
        return ops.bind(index, dtype, lambda i: pixel_and_mask(i, ops.either(i < 0.0, i > size - 1.0)))
    if padding_mode == "reflection":
        low, high = grid_borders(size, align_corners)
        index = reflect(index, low, high, dtype, ops)
    return ops.bind(index, dtype, lambda i: pixel_and_mask(i, None))
