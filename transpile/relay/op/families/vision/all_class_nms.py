"""vision.all_class_non_max_suppression (TVM's nms.cc AllClassNMSRel and topi/vision/nms.py, v0.19).

Per batch and class: scores sorted descending (stable, NaN last); the boxes scoring above
score_threshold are candidates; greedily, a candidate not yet suppressed is selected (until
max_output_boxes_per_class, if positive) and suppresses the later candidates of positive score
with IoU >= iou_threshold. An iou_threshold <= 0 selects nothing, as in TVM. Outputs are TVM's
padded ones (padding rows are zeros): "onnx" gives (batch * classes * boxes, 3) rows of
(batch, class, box) and the total count; "tensorflow" gives per batch (classes * boxes, 2) rows
of (class, box), their scores and the count per batch.
"""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType, TupleType
from ...common import fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import to_str
from ._common import VisionOpDef, first_value, same_dim, scalar_tensor, tensor_of_rank
from .all_class_nms_te import all_class_nms_te
from .nms import descending_order, iou

FORMATS = ("onnx", "tensorflow")


def _all_class_nms_rel(arg_types, attrs):
    name = "vision.all_class_non_max_suppression"
    boxes = tensor_of_rank(arg_types[0], 3, name, "boxes")
    scores = tensor_of_rank(arg_types[1], 3, name, "scores")
    for position, what in ((2, "max_output_boxes_per_class"), (3, "iou_threshold"), (4, "score_threshold")):
        scalar_tensor(arg_types[position], name, what)
    if not same_dim(boxes.shape[2], 4):
        raise RelationError(f"{name}: boxes must have 4 coordinates per box, got {fmt_type(boxes)}")
    if not (same_dim(boxes.shape[0], scores.shape[0]) and same_dim(boxes.shape[1], scores.shape[2])):
        raise RelationError(
            f"{name}: scores {fmt_type(scores)} must be (batch, classes, boxes) for boxes {fmt_type(boxes)}"
        )
    if attrs.output_format not in FORMATS:
        raise RelationError(f"{name}: output_format must be 'onnx' or 'tensorflow', got {attrs.output_format!r}")
    batch, classes, count = boxes.shape[0], scores.shape[1], boxes.shape[1]
    if attrs.output_format == "onnx":
        static = not isinstance(batch, AnyDim) and not isinstance(count, AnyDim) and not isinstance(classes, AnyDim)
        rows = batch * classes * count if static else AnyDim()
        return TupleType([TensorType((rows, 3), "int64"), TensorType((1,), "int64")])
    per_batch = classes * count if not isinstance(count, AnyDim) and not isinstance(classes, AnyDim) else AnyDim()
    return TupleType(
        [
            TensorType((batch, per_batch, 2), "int64"),
            TensorType((batch, per_batch), "float32"),
            TensorType((batch,), "int64"),
        ]
    )


def select_boxes(boxes, scores, max_output: int, iou_threshold, score_threshold):
    """The boxes one class selects, in selection order, and their scores."""
    order = descending_order(scores)
    ranked = scores[order]
    candidates = int(np.count_nonzero(ranked > score_threshold))
    if not (iou_threshold > 0) or candidates == 0:
        return order[:0], ranked[:0]
    limit = max_output if max_output > 0 else candidates
    live = ranked[:candidates].copy()
    chosen = []
    for j in range(candidates):
        if len(chosen) >= limit:
            break
        if not live[j] > -1:
            continue
        chosen.append(j)
        later = np.arange(j + 1, candidates)
        later = later[live[later] > 0]
        overlaps = iou(boxes[order[j]], boxes[order[later]], 0)
        live[later[overlaps >= iou_threshold]] = -1
    chosen = np.asarray(chosen, dtype=np.int64)
    return order[chosen], ranked[chosen]


def _all_class_nms_impl(args, attrs, out_type):
    boxes, scores = np.asarray(args[0]), np.asarray(args[1])
    max_output = int(first_value(args[2]))
    iou_threshold = first_value(args[3]).astype(boxes.dtype)
    score_threshold = first_value(args[4]).astype(scores.dtype)
    batch, classes, count = scores.shape
    if attrs.output_format == "onnx":
        rows = np.zeros((batch * classes * count, 3), dtype="int64")
        total = 0
        for b in range(batch):
            for c in range(classes):
                picked, _ = select_boxes(boxes[b], scores[b, c], max_output, iou_threshold, score_threshold)
                rows[total : total + picked.size] = np.stack(
                    [np.full(picked.size, b), np.full(picked.size, c), picked], axis=1
                )
                total += picked.size
        return rows, np.array([total], dtype="int64")
    pairs = np.zeros((batch, classes * count, 2), dtype="int64")
    picked_scores = np.zeros((batch, classes * count), dtype="float32")
    totals = np.zeros((batch,), dtype="int64")
    for b in range(batch):
        total = 0
        for c in range(classes):
            picked, ranked = select_boxes(boxes[b], scores[b, c], max_output, iou_threshold, score_threshold)
            pairs[b, total : total + picked.size, 0] = c
            pairs[b, total : total + picked.size, 1] = picked
            picked_scores[b, total : total + picked.size] = ranked
            total += picked.size
        totals[b] = total
    return pairs, picked_scores, totals


register(
    VisionOpDef(
        "vision.all_class_non_max_suppression",
        5,
        _all_class_nms_rel,
        OpPattern.OPAQUE,
        _all_class_nms_impl,
        te_impl=all_class_nms_te,
        attrs=(AttrField("output_format", "onnx", to_str, "onnx or tensorflow: the layout of the outputs"),),
        extras={
            "input_names": ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"),
            "input_defaults": {
                "max_output_boxes_per_class": (-1, "int32"),
                "iou_threshold": (-1.0, "float32"),
                "score_threshold": (-1.0, "float32"),
            },
            "tuple_outputs_of": lambda attrs: 2 if attrs.output_format == "onnx" else 3,
            "support_level": 5,
        },
        description="Non-maximum suppression of every class separately (ONNX NonMaxSuppression).",
    )
)
