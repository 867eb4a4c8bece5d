"""Converters of ONNX detection operators: RoiAlign, MaxRoiPool (gathers over static shapes), NonMaxSuppression.

RoiAlign computes every sampling point of every ROI bin from the ROI coordinates, gathers the
four neighbours of each from the (N*H*W, C) image and blends or maxes them; its grid has a fixed
size when sampling_ratio > 0 (or when the ROIs are constants). MaxRoiPool maxes each bin through
masks over the image rows and columns. NonMaxSuppression's output length depends on the data: it
is computed at import when its inputs are constants and rejected otherwise.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .unsupported import DATA_DEPENDENT


def _scalar(b, value, dtype):
    return b.const(np.array(value, dtype=dtype))


def _column(b, table, index: int):
    return b.call("take", table, b.const(np.array(index, dtype="int64")), axis=1)


def _image(ctx, x):
    b = ctx.b
    if b.ndim_of(x) != 4:
        raise b.error(f"the input must be N x C x H x W, got {b.type_of(x)}")
    _, _, height, width = b.shape_of(x)
    if not isinstance(height, int) or not isinstance(width, int):
        raise b.error(f"the spatial size of {b.type_of(x)} must be known at import")
    return height, width


# ---------------------------------------------------------------------------------- RoiAlign


def _roi_grids(ctx, rois, output: int, begin: int, end: int, half_pixel: bool, scale: float):
    """Per-ROI sample counts along one axis for sampling_ratio=0: ceil(roi extent / bins), from constant ROIs."""
    values = ctx.b.value_of(rois)
    if values is None:
        raise ctx.unsupported(
            "sampling_ratio=0 sizes each ROI's sampling grid by the ROI itself, known only at run time; "
            "give sampling_ratio > 0 (or constant ROIs)"
        )
    values = np.asarray(values)
    extent = values[:, end] * values.dtype.type(scale) - values[:, begin] * values.dtype.type(scale)
    if not half_pixel:
        extent = np.maximum(extent, 1)
    return np.ceil(extent / output).astype("int64")


def _axis_samples(ctx, start, extent, bins: int, grid, size: int, dtype):
    """Sample positions along one axis (R, bins, G) and their bilinear taps, with RoiAlign's border rules."""
    b = ctx.b
    most = int(np.max(grid)) if isinstance(grid, np.ndarray) else grid
    most = max(most, 1)
    steps = np.arange(most) + 0.5
    if isinstance(grid, np.ndarray):  # (R, 1, G) fractions of a bin, per ROI
        fractions = steps.reshape(1, 1, -1) / np.maximum(grid, 1).reshape(-1, 1, 1)
        in_grid = np.arange(most).reshape(1, 1, -1) < grid.reshape(-1, 1, 1)
    else:
        fractions, in_grid = (steps / most).reshape(1, 1, -1), None
    offsets = b.const((np.arange(bins).reshape(1, -1, 1) + fractions).astype(dtype))
    bin_size = b.call("divide", extent, _scalar(b, bins, dtype))
    position = b.call(
        "add",
        b.call("reshape", start, newshape=[-1, 1, 1]),
        b.call("multiply", b.call("reshape", bin_size, newshape=[-1, 1, 1]), offsets),
    )
    outside = b.call(
        "logical_or",
        b.call("less", position, _scalar(b, -1.0, dtype)),
        b.call("greater", position, _scalar(b, float(size), dtype)),
    )
    position = b.call("maximum", position, _scalar(b, 0.0, dtype))
    low = b.call("floor", position)
    at_edge = b.call("greater_equal", low, _scalar(b, float(size - 1), dtype))
    last = _scalar(b, float(size - 1), dtype)
    low = b.call("where", at_edge, last, low)
    high = b.call("where", at_edge, last, b.call("add", low, _scalar(b, 1.0, dtype)))
    position = b.call("where", at_edge, low, position)
    upper_weight = b.call("subtract", position, low)
    lower_weight = b.call("subtract", _scalar(b, 1.0, dtype), upper_weight)
    taps = [(b.call("cast", low, dtype="int64"), lower_weight), (b.call("cast", high, dtype="int64"), upper_weight)]
    return taps, outside, in_grid


@converter("RoiAlign")
def roi_align(ctx):
    b = ctx.b
    x, rois, batch_indices = ctx.input(0), ctx.input(1), ctx.input(2)
    height, width = _image(ctx, x)
    dtype = b.dtype_of(x)
    default_mode = "half_pixel" if ctx.opset >= 16 else "output_half_pixel"
    transform = ctx.attr("coordinate_transformation_mode", default_mode)
    if transform not in ("half_pixel", "output_half_pixel"):
        raise b.error(f"coordinate_transformation_mode must be half_pixel or output_half_pixel, got {transform!r}")
    half_pixel = transform == "half_pixel"
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise b.error(f"mode must be avg or max, got {mode!r}")
    out_h, out_w = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    ratio, scale = int(ctx.attr("sampling_ratio", 0)), float(ctx.attr("spatial_scale", 1.0))
    if b.ndim_of(rois) != 2 or b.shape_of(rois)[1] != 4:
        raise b.error(f"rois must be num_rois x 4, got {b.type_of(rois)}")

    corners = b.call(
        "subtract", b.call("multiply", rois, _scalar(b, scale, dtype)), _scalar(b, 0.5 if half_pixel else 0.0, dtype)
    )
    start_w, start_h, end_w, end_h = (_column(b, corners, i) for i in range(4))
    extent_w, extent_h = b.call("subtract", end_w, start_w), b.call("subtract", end_h, start_h)
    if not half_pixel:  # malformed ROIs count as 1 x 1
        extent_w = b.call("maximum", extent_w, _scalar(b, 1.0, dtype))
        extent_h = b.call("maximum", extent_h, _scalar(b, 1.0, dtype))
    grid_h = ratio if ratio > 0 else _roi_grids(ctx, rois, out_h, 1, 3, half_pixel, scale)
    grid_w = ratio if ratio > 0 else _roi_grids(ctx, rois, out_w, 0, 2, half_pixel, scale)
    rows, rows_outside, rows_in_grid = _axis_samples(ctx, start_h, extent_h, out_h, grid_h, height, dtype)
    cols, cols_outside, cols_in_grid = _axis_samples(ctx, start_w, extent_w, out_w, grid_w, width, dtype)

    # Samples are laid out (R, out_h, G_h, out_w, G_w); rows expand on the right, columns on the left.
    def along_rows(v):
        return b.call("expand_dims", v, axis=3, num_newaxis=2)

    def along_cols(v):
        return b.call("expand_dims", v, axis=1, num_newaxis=2)

    channels = b.static_shape(x, "the input")[1]
    channels_last = b.call("reshape", b.call("transpose", x, axes=[0, 2, 3, 1]), newshape=[-1, channels])
    base = b.call(
        "reshape",
        b.call("multiply", b.call("cast", batch_indices, dtype="int64"), _scalar(b, height * width, "int64")),
        newshape=[-1, 1, 1, 1, 1],
    )
    taps = []
    for row, row_weight in rows:
        for col, col_weight in cols:
            index = b.call(
                "add",
                base,
                b.call("add", along_rows(b.call("multiply", row, _scalar(b, width, "int64"))), along_cols(col)),
            )
            weight = b.call("multiply", along_rows(row_weight), along_cols(col_weight))
            values = b.call("take", channels_last, index, axis=0)  # (..., C)
            taps.append(b.call("multiply", values, b.call("expand_dims", weight, axis=5)))
    skipped = b.call("expand_dims", b.call("logical_or", along_rows(rows_outside), along_cols(cols_outside)), axis=5)
    zero = _scalar(b, 0.0, dtype)
    if mode == "avg":
        sample = b.call("add", b.call("add", taps[0], taps[1]), b.call("add", taps[2], taps[3]))
    else:  # the largest weighted neighbour, as onnxruntime computes it
        sample = b.call("maximum", b.call("maximum", taps[0], taps[1]), b.call("maximum", taps[2], taps[3]))
    sample = b.call("where", skipped, zero, sample)
    if rows_in_grid is None and cols_in_grid is None:
        pooled = b.call("mean" if mode == "avg" else "max", sample, axis=[2, 4])
    else:
        in_grid = np.logical_and(
            np.ones((1, 1, 1, 1, 1), bool) if rows_in_grid is None else rows_in_grid[:, :, :, None, None],
            np.ones((1, 1, 1, 1, 1), bool) if cols_in_grid is None else cols_in_grid[:, None, None, :, :],
        )[..., None]
        counts = np.sum(in_grid, axis=(2, 4))
        if mode == "avg":
            total = b.call("sum", b.call("where", b.const(in_grid), sample, zero), axis=[2, 4])
            pooled = b.call("divide", total, b.const(np.maximum(counts, 1).astype(dtype)))
        else:  # a ROI with no samples pools to 0
            best = b.call("max", b.call("where", b.const(in_grid), sample, _scalar(b, -np.inf, dtype)), axis=[2, 4])
            pooled = b.call("where", b.const(counts > 0), best, zero)
    return b.call("transpose", pooled, axes=[0, 3, 1, 2])


# ---------------------------------------------------------------------------------- MaxRoiPool


def _round_half_away(b, x, dtype):
    """C's round(): halves away from zero (Relay's round goes to even)."""
    magnitude = b.call("floor", b.call("add", b.call("abs", x), _scalar(b, 0.5, dtype)))
    return b.call("where", b.call("less", x, _scalar(b, 0.0, dtype)), b.call("negative", magnitude), magnitude)


def _bin_bounds(b, start, end, bins: int, size: int, dtype):
    """[begin, end) of each of `bins` bins over [start, end] (R, bins), clipped to the image: Caffe's ROI pooling."""
    extent = b.call(
        "maximum", b.call("add", b.call("subtract", end, start), _scalar(b, 1.0, dtype)), _scalar(b, 1.0, dtype)
    )
    bin_size = b.call("reshape", b.call("divide", extent, _scalar(b, float(bins), dtype)), newshape=[-1, 1])
    steps = np.arange(bins, dtype=dtype).reshape(1, -1)
    start = b.call("reshape", start, newshape=[-1, 1])

    def clipped(v):
        return b.call("clip", b.call("add", v, start), a_min=0.0, a_max=float(size))

    lower = clipped(b.call("floor", b.call("multiply", b.const(steps), bin_size)))
    upper = clipped(b.call("ceil", b.call("multiply", b.const(steps + 1), bin_size)))
    return lower, upper


@converter("MaxRoiPool")
def max_roi_pool(ctx):
    b = ctx.b
    x, rois = ctx.input(0), ctx.input(1)
    height, width = _image(ctx, x)
    dtype = b.dtype_of(x)
    pooled_shape = ctx.attr("pooled_shape")
    if pooled_shape is None or len(pooled_shape) != 2:
        raise b.error(f"pooled_shape must give (height, width), got {pooled_shape}")
    out_h, out_w = (int(v) for v in pooled_shape)
    if b.ndim_of(rois) != 2 or b.shape_of(rois)[1] != 5:
        raise b.error(f"rois must be num_rois x 5 (batch index, x1, y1, x2, y2), got {b.type_of(rois)}")
    scale = _scalar(b, float(ctx.attr("spatial_scale", 1.0)), dtype)
    batch = b.call("cast", _column(b, rois, 0), dtype="int64")
    x1, y1, x2, y2 = (_round_half_away(b, b.call("multiply", _column(b, rois, i), scale), dtype) for i in range(1, 5))
    row_begin, row_end = _bin_bounds(b, y1, y2, out_h, height, dtype)
    col_begin, col_end = _bin_bounds(b, x1, x2, out_w, width, dtype)

    def inside(begin, end, size):  # (R, bins, size): position p is in [begin, end)
        positions = b.const(np.arange(size, dtype=dtype).reshape(1, 1, -1))
        begin, end = b.call("expand_dims", begin, axis=2), b.call("expand_dims", end, axis=2)
        return b.call("logical_and", b.call("greater_equal", positions, begin), b.call("less", positions, end))

    lowest = _scalar(b, -np.inf, dtype)
    images = b.call("take", x, batch, axis=0)  # (R, C, H, W)
    # The max over a rectangle is the max over its rows of the max over its columns.
    by_column = b.call("reshape", inside(col_begin, col_end, width), newshape=[-1, 1, 1, out_w, width])
    row_maxima = b.call("max", b.call("where", by_column, b.call("expand_dims", images, axis=3), lowest), axis=[4])
    by_row = b.call("reshape", inside(row_begin, row_end, height), newshape=[-1, 1, out_h, height, 1])
    pooled = b.call("max", b.call("where", by_row, b.call("expand_dims", row_maxima, axis=2), lowest), axis=[3])
    empty = b.call(
        "logical_or",
        b.call("reshape", b.call("less_equal", row_end, row_begin), newshape=[-1, 1, out_h, 1]),
        b.call("reshape", b.call("less_equal", col_end, col_begin), newshape=[-1, 1, 1, out_w]),
    )
    return b.call("where", empty, _scalar(b, 0.0, dtype), pooled)


# ---------------------------------------------------------------------------------- NonMaxSuppression


@converter("NonMaxSuppression")
def non_max_suppression(ctx):
    b = ctx.b
    values = [b.value_of(ctx.input(i)) if ctx.has_input(i) else None for i in range(5)]
    if any(ctx.has_input(i) and values[i] is None for i in range(5)):
        raise ctx.unsupported(DATA_DEPENDENT)

    def first(value, default):
        return default if value is None or np.size(value) == 0 else np.asarray(value).reshape(-1)[0]

    center_point_box = int(ctx.attr("center_point_box", 0))
    if center_point_box not in (0, 1):
        raise b.error(f"center_point_box must be 0 or 1, got {center_point_box}")
    boxes, scores = np.asarray(values[0]), np.asarray(values[1])
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[2] != boxes.shape[1]:
        raise b.error(f"boxes {boxes.shape} and scores {scores.shape} must be (B, N, 4) and (B, C, N)")
    selected = select_boxes(
        boxes,
        scores,
        max(int(first(values[2], 0)), 0),
        float(first(values[3], 0.0)),
        None if values[4] is None or np.size(values[4]) == 0 else float(first(values[4], 0.0)),
        center_point_box,
    )
    return b.const(np.array(selected, dtype="int64").reshape(-1, 3))


def _corners(box, center_point_box: int):
    """(y_min, x_min, y_max, x_max) of one box in either ONNX box format."""
    if center_point_box:
        x, y, w, h = box
        return y - h / 2, x - w / 2, y + h / 2, x + w / 2
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _overlaps(a, b, threshold: float) -> bool:
    """IoU(a, b) > threshold; boxes without area never suppress."""
    height = min(a[2], b[2]) - max(a[0], b[0])
    width = min(a[3], b[3]) - max(a[1], b[1])
    if height <= 0 or width <= 0:
        return False
    intersection = height * width
    area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    union = area_a + area_b - intersection
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return intersection / union > threshold


def select_boxes(boxes, scores, per_class: int, iou_threshold: float, score_threshold, center_point_box: int):
    """[batch, class, box] triples kept by greedy NMS: by decreasing score (lower index first on ties)."""
    selected = []
    for batch in range(boxes.shape[0]):
        corners = [_corners(box, center_point_box) for box in boxes[batch]]
        for cls in range(scores.shape[1]):
            class_scores = scores[batch, cls]
            candidates = [
                i for i in range(len(class_scores)) if score_threshold is None or class_scores[i] > score_threshold
            ]
            candidates.sort(key=lambda i: (-class_scores[i], i))
            kept: list[int] = []
            for i in candidates:
                if len(kept) >= per_class:
                    break
                if not any(_overlaps(corners[i], corners[j], iou_threshold) for j in kept):
                    kept.append(i)
            selected.extend([batch, cls, i] for i in kept)
    return selected
