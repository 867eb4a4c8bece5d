"""vision.roi_align and vision.roi_pool (TVM's rcnn_op.cc and topi/vision/rcnn, v0.19).

rois rows are [batch_index, x1, y1, x2, y2] in input pixels times 1 / spatial_scale. roi_align
averages (or takes the max of) a grid of bilinear samples per output bin: sample_ratio per axis,
or ceil(bin size) when it is <= 0; a sample more than one pixel outside the image is 0, others are
clamped to the image. roi_pool takes the max over the pixels of each bin (0 for an empty bin),
with the roi corners rounded half to even (TVM's te.round) and TVM's 1e-5 slack on bin edges.
Values are computed in float32.
"""

from __future__ import annotations

import math

import numpy as np

from ....ty import TensorType
from ...common import fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, to_float, to_int, to_ints, to_str
from ._common import tensor_of_rank
from .roi_te import roi_align_te, roi_pool_te

BAD_BATCH = "the batch index of a roi must index the images of data"


def _roi_rel(name: str, modes=None):
    def rel(arg_types, attrs):
        data = tensor_of_rank(arg_types[0], 4, name, "data")
        rois = tensor_of_rank(arg_types[1], 2, name, "rois")
        if isinstance(rois.shape[1], int) and rois.shape[1] != 5:
            raise RelationError(
                f"{name}: rois must be (num_roi, 5) rows of [batch, x1, y1, x2, y2], got {fmt_type(rois)}"
            )
        if attrs.layout not in ("NCHW", "NHWC"):
            raise RelationError(f"{name}: layout must be NCHW or NHWC, got {attrs.layout!r}")
        if len(attrs.pooled_size) != 2 or any(s is None or s < 1 for s in attrs.pooled_size):
            raise RelationError(f"{name}: pooled_size must be 2 positive extents, got {list(attrs.pooled_size)}")
        if modes is not None and attrs.mode not in modes:
            raise RelationError(f"{name}: mode must be 'avg' or 'max', got {attrs.mode!r}")
        ph, pw = attrs.pooled_size
        if attrs.layout == "NCHW":
            return TensorType((rois.shape[0], data.shape[1], ph, pw), data.dtype)
        return TensorType((rois.shape[0], ph, pw, data.shape[3]), data.dtype)

    return rel


def _as_nchw(data, layout: str):
    return data if layout == "NCHW" else data.transpose(0, 3, 1, 2)


def _from_nchw(out, layout: str):
    return out if layout == "NCHW" else out.transpose(0, 2, 3, 1)


def _batch_indices(rois, batch: int, name: str):
    index = rois[:, 0].astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= batch):
        raise ValueError(f"{name}: {BAD_BATCH}")
    return index


def _bilinear(image, ys, xs):
    """image (C, H, W) sampled at every (ys[i], xs[j]) -> (C, len(ys), len(xs)); 0 far outside."""
    _, height, width = image.shape
    f32 = np.float32
    y_far = (ys < -1) | (ys > height)
    x_far = (xs < -1) | (xs > width)
    ys = np.clip(ys, f32(0), f32(height - 1))
    xs = np.clip(xs, f32(0), f32(width - 1))
    y_low, x_low = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    y_frac, x_frac = ys - y_low.astype(f32), xs - x_low.astype(f32)
    total = 0
    for y_index, y_weight in ((y_low, f32(1) - y_frac), (y_low + 1, y_frac)):
        for x_index, x_weight in ((x_low, f32(1) - x_frac), (x_low + 1, x_frac)):
            inside = (y_index < height)[:, None] & (x_index < width)[None, :]
            values = image[:, np.minimum(y_index, height - 1)][:, :, np.minimum(x_index, width - 1)]
            total = total + np.where(inside, values * (y_weight[:, None] * x_weight[None, :]), f32(0))
    return np.where(y_far[:, None] | x_far[None, :], f32(0), total)


def grid_size(extent, pooled: int, sample_ratio: int) -> int:
    return sample_ratio if sample_ratio > 0 else int(math.ceil(extent / np.float32(pooled)))


def _roi_align_impl(args, attrs, out_type):
    data, rois = np.asarray(args[0]), np.asarray(args[1]).astype(np.float32)
    images = _as_nchw(data, attrs.layout).astype(np.float32)
    ph, pw = attrs.pooled_size
    batches = _batch_indices(rois, images.shape[0], "vision.roi_align")
    out = np.zeros((len(rois), images.shape[1], ph, pw), dtype=np.float32)
    scale = np.float32(attrs.spatial_scale)
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = roi[1:] * scale
        roi_h, roi_w = max(y2 - y1, np.float32(1)), max(x2 - x1, np.float32(1))
        bin_h, bin_w = roi_h / np.float32(ph), roi_w / np.float32(pw)
        grid_h, grid_w = grid_size(roi_h, ph, attrs.sample_ratio), grid_size(roi_w, pw, attrs.sample_ratio)
        count = max(grid_h * grid_w, 1)
        ys = (
            y1
            + np.arange(ph, dtype=np.float32)[:, None] * bin_h
            + (np.arange(grid_h, dtype=np.float32)[None, :] + np.float32(0.5)) * bin_h / np.float32(grid_h)
        )
        xs = (
            x1
            + np.arange(pw, dtype=np.float32)[:, None] * bin_w
            + (np.arange(grid_w, dtype=np.float32)[None, :] + np.float32(0.5)) * bin_w / np.float32(grid_w)
        )
        samples = _bilinear(images[batches[r]], ys.reshape(-1), xs.reshape(-1))
        samples = samples.reshape(images.shape[1], ph, grid_h, pw, grid_w)
        if grid_h * grid_w == 0:
            continue
        if attrs.mode == "avg":
            out[r] = (samples / np.float32(count)).sum(axis=(2, 4), dtype=np.float32)
        else:
            out[r] = samples.max(axis=(2, 4))
    return _from_nchw(out, attrs.layout).astype(data.dtype)


def _roi_pool_impl(args, attrs, out_type):
    data, rois = np.asarray(args[0]), np.asarray(args[1]).astype(np.float32)
    images = _as_nchw(data, attrs.layout)
    _, channels, height, width = images.shape
    ph, pw = attrs.pooled_size
    batches = _batch_indices(rois, images.shape[0], "vision.roi_pool")
    out = np.zeros((len(rois), channels, ph, pw), dtype=data.dtype)
    scale = np.float32(attrs.spatial_scale)
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = (int(v) for v in np.rint(roi[1:] * scale))
        roi_h, roi_w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bin_h, bin_w = np.float32(roi_h) / np.float32(ph), np.float32(roi_w) / np.float32(pw)
        # TVM's epsilon keeps float error from widening a bin by a pixel.
        eps = np.float32(1e-5)
        for i in range(ph):
            top = min(max(int(np.floor(np.float32(i) * bin_h + eps)) + y1, 0), height)
            bottom = min(max(int(np.ceil(np.float32(i + 1) * bin_h - eps)) + y1, 0), height)
            for j in range(pw):
                left = min(max(int(np.floor(np.float32(j) * bin_w + eps)) + x1, 0), width)
                right = min(max(int(np.ceil(np.float32(j + 1) * bin_w - eps)) + x1, 0), width)
                if bottom > top and right > left:
                    out[r, :, i, j] = images[batches[r], :, top:bottom, left:right].max(axis=(1, 2))
    return _from_nchw(out, attrs.layout)


register(
    NNOpDef(
        "vision.roi_align",
        2,
        _roi_rel("vision.roi_align", ("avg", "max")),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _roi_align_impl,
        te_impl=roi_align_te,
        attrs=(
            AttrField("pooled_size", convert=to_ints, doc="(height, width) of the output bins"),
            AttrField("spatial_scale", convert=to_float, doc="input pixels per roi unit"),
            AttrField("sample_ratio", -1, to_int, "samples per bin and axis; <= 0: ceil(bin size)"),
            AttrField("layout", "NCHW", to_str),
            AttrField("mode", "avg", to_str, "avg or max"),
        ),
        extras={"input_names": ("data", "rois"), "support_level": 5},
        description="Bilinear region-of-interest pooling (Mask R-CNN's RoIAlign).",
    )
)

register(
    NNOpDef(
        "vision.roi_pool",
        2,
        _roi_rel("vision.roi_pool"),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _roi_pool_impl,
        te_impl=roi_pool_te,
        attrs=(
            AttrField("pooled_size", convert=to_ints, doc="(height, width) of the output bins"),
            AttrField("spatial_scale", convert=to_float, doc="input pixels per roi unit"),
            AttrField("layout", "NCHW", to_str),
        ),
        extras={"input_names": ("data", "rois"), "support_level": 5},
        description="Max pooling over regions of interest (Fast R-CNN's RoIPool).",
    )
)
