"""vision.proposal: Faster R-CNN's region proposal layer (TVM's rcnn_op.cc and topi/vision/rcnn/proposal.py, v0.19).

Anchors (per ratio, then scale, as TVM generates them around a feature_stride cell) are moved by
bbox_pred (centre/size regression, or corner offsets with iou_loss), clipped to the image; boxes
narrower than im_scale * rpn_min_size, or on cells beyond the image, score -1. Per batch the
boxes are sorted by score (stable, descending), the first rpn_pre_nms_top_n kept, and greedy NMS
drops a box overlapping an earlier kept one with IoU > threshold (pixel areas, +1). The kept
boxes fill the batch's rpn_post_nms_top_n rows [batch, x1, y1, x2, y2] cyclically, as TVM's
kernel did; a batch with no box keeps zero rows (TVM left them undefined). float32 arithmetic.
No TE lowering yet (interpreter and python backends): a first one stalled TVM's TIR pipeline.
"""

from __future__ import annotations

import math

import numpy as np

from ....ty import TensorType
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, to_bool, to_float, to_floats, to_int
from ._common import same_dim, tensor_of_rank
from .nms import descending_order


def _proposal_rel(arg_types, attrs):
    name = "vision.proposal"
    cls_prob = tensor_of_rank(arg_types[0], 4, name, "cls_prob")
    bbox_pred = tensor_of_rank(arg_types[1], 4, name, "bbox_pred")
    im_info = tensor_of_rank(arg_types[2], 2, name, "im_info")
    anchors = len(attrs.scales) * len(attrs.ratios)
    if anchors == 0:
        raise RelationError(f"{name}: scales and ratios must not be empty")
    if not same_dim(cls_prob.shape[1], 2 * anchors) or not same_dim(bbox_pred.shape[1], 4 * anchors):
        raise RelationError(
            f"{name}: cls_prob needs 2 and bbox_pred 4 channels per anchor ({anchors} anchors), got "
            f"{cls_prob.shape[1]} and {bbox_pred.shape[1]}"
        )
    if not same_dim(im_info.shape[1], 3):
        raise RelationError(f"{name}: im_info must be (batch, 3) rows of [height, width, scale]")
    if not all(isinstance(d, int) for d in cls_prob.shape):
        raise RelationError(f"{name}: cls_prob must have a static shape")
    return TensorType((cls_prob.shape[0] * attrs.rpn_post_nms_top_n, 5), cls_prob.dtype)


def base_anchors(attrs) -> list:
    """The anchor corners around cell (0, 0), in TVM's order (k -> ratio k // scales, scale k % scales)."""
    size = float(attrs.feature_stride)
    centre = 0.5 * (size - 1.0)
    out = []
    for k in range(len(attrs.scales) * len(attrs.ratios)):
        ratio, scale = attrs.ratios[k // len(attrs.scales)], attrs.scales[k % len(attrs.scales)]
        new_w = math.floor(math.sqrt(math.floor(size * size / ratio)) + 0.5) * scale
        new_h = math.floor(new_w / scale * ratio + 0.5) * scale
        out.append(
            (
                centre - 0.5 * (new_w - 1.0),
                centre - 0.5 * (new_h - 1.0),
                centre + 0.5 * (new_w - 1.0),
                centre + 0.5 * (new_h - 1.0),
            )
        )
    return out


def _predict(cls_prob, bbox_pred, im_info, attrs):
    """(batch, H * W * anchors, 5) boxes [x1, y1, x2, y2, score] before sorting."""
    f32 = np.float32
    batch, _, height, width = cls_prob.shape
    anchors = np.array(base_anchors(attrs), dtype=f32)  # (A, 4)
    count = len(anchors)
    stride = attrs.feature_stride
    ys = (np.arange(height) * stride).astype(f32)[:, None, None]
    xs = (np.arange(width) * stride).astype(f32)[None, :, None]
    x1, y1 = anchors[:, 0] + xs, anchors[:, 1] + ys
    x2, y2 = anchors[:, 2] + xs, anchors[:, 3] + ys  # (H, W, A)
    deltas = bbox_pred.astype(f32).reshape(batch, count, 4, height, width).transpose(0, 3, 4, 1, 2)
    d0, d1, d2, d3 = (deltas[..., i] for i in range(4))
    one, half = f32(1), f32(0.5)
    if attrs.iou_loss:
        px1, py1, px2, py2 = x1 + d0, y1 + d1, x2 + d2, y2 + d3
    else:
        w, h = x2 - x1 + one, y2 - y1 + one
        cx, cy = x1 + half * (w - one), y1 + half * (h - one)
        pcx, pcy = d0 * w + cx, d1 * h + cy
        pw, ph = np.exp(d2) * w, np.exp(d3) * h
        px1, py1 = pcx - half * (pw - one), pcy - half * (ph - one)
        px2, py2 = pcx + half * (pw - one), pcy + half * (ph - one)
    info = im_info.astype(f32)
    im_h, im_w = info[:, 0][:, None, None, None], info[:, 1][:, None, None, None]
    zero = f32(0)
    px1, px2 = (np.maximum(np.minimum(v, im_w - one), zero) for v in (px1, px2))
    py1, py2 = (np.maximum(np.minimum(v, im_h - one), zero) for v in (py1, py2))
    scores = cls_prob.astype(f32)[:, count:].transpose(0, 2, 3, 1)  # (B, H, W, A)
    real_h = (info[:, 0] / f32(stride)).astype(np.int64)[:, None, None, None]
    real_w = (info[:, 1] / f32(stride)).astype(np.int64)[:, None, None, None]
    cell_h, cell_w = np.arange(height)[None, :, None, None], np.arange(width)[None, None, :, None]
    scores = np.where((cell_h >= real_h) | (cell_w >= real_w), f32(-1), scores)
    min_size = (info[:, 2] * f32(attrs.rpn_min_size))[:, None, None, None]
    small = ((px2 - px1 + one) < min_size) | ((py2 - py1 + one) < min_size)
    grow = np.where(small, min_size / f32(2), zero)
    boxes = np.stack([px1 - grow, py1 - grow, px2 + grow, py2 + grow, np.where(small, f32(-1), scores)], axis=-1)
    return boxes.reshape(batch, -1, 5)


def pixel_iou(a, b):
    f32 = np.float32
    one, zero = f32(1), f32(0)
    w = np.maximum(zero, np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one)
    h = np.maximum(zero, np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one)
    inter = w * h
    union = (
        (a[..., 2] - a[..., 0] + one) * (a[..., 3] - a[..., 1] + one)
        + (b[..., 2] - b[..., 0] + one) * (b[..., 3] - b[..., 1] + one)
        - inter
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / union


def _proposal_impl(args, attrs, out_type):
    cls_prob, bbox_pred, im_info = (np.asarray(a) for a in args)
    boxes = _predict(cls_prob, bbox_pred, im_info, attrs)
    batch, total = boxes.shape[:2]
    keep_n = min(attrs.rpn_pre_nms_top_n, total) if attrs.rpn_pre_nms_top_n > 0 else total
    post = attrs.rpn_post_nms_top_n
    out = np.zeros((batch * post, 5), dtype=np.float32)
    threshold = np.float32(attrs.threshold)
    for b in range(batch):
        ranked = boxes[b, descending_order(boxes[b, :, 4])[:keep_n]]
        removed = np.zeros(keep_n, dtype=bool)
        for i in range(keep_n - 1):
            if not removed[i]:
                removed[i + 1 :] |= pixel_iou(ranked[i], ranked[i + 1 :]) > threshold
        kept = ranked[~removed, :4]
        if len(kept):
            rows = np.resize(kept, (post, 4))  # cycles through the kept boxes
            out[b * post : (b + 1) * post, 0] = b
            out[b * post : (b + 1) * post, 1:] = rows
    return out.astype(out_type.dtype)


register(
    NNOpDef(
        "vision.proposal",
        3,
        _proposal_rel,
        OpPattern.OPAQUE,
        _proposal_impl,
        attrs=(
            AttrField("scales", (4.0, 8.0, 16.0, 32.0), to_floats, "anchor scales"),
            AttrField("ratios", (0.5, 1.0, 2.0), to_floats, "anchor aspect ratios"),
            AttrField("feature_stride", 16, to_int, "input pixels per feature map cell"),
            AttrField("threshold", 0.7, to_float, "NMS IoU threshold"),
            AttrField("rpn_pre_nms_top_n", 6000, to_int, "boxes kept before NMS, <= 0: all"),
            AttrField("rpn_post_nms_top_n", 300, to_int, "output rows per batch"),
            AttrField("rpn_min_size", 16, to_int, "minimum box size, times the image scale"),
            AttrField("iou_loss", False, to_bool, "bbox_pred are corner offsets, not centre/size regression"),
        ),
        extras={"input_names": ("cls_prob", "bbox_pred", "im_info"), "support_level": 5},
        description="Region proposals from RPN scores and box regressions (Faster R-CNN).",
    )
)
