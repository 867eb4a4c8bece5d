"""vision.get_valid_counts and vision.non_max_suppression (TVM's nms.cc and topi/vision/nms.py, v0.19).

The numbers are TVM's CPU kernels': boxes are ranked by a stable descending sort of their score
(NaN last) among the first valid_count rows; greedy suppression keeps a box unless an earlier kept
box of the same class (any class with force_suppress) overlaps it with IoU >= iou_threshold. Boxes
with a score <= 0 are neither counted against max_output_size nor used to suppress, but stay in
the output, as TVM's hybrid_nms left them. iou_threshold <= 0 disables sorting and suppression.
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType, TupleType
from ...common import fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import to_bool, to_int
from ._common import VisionOpDef, first_value, same_dim, scalar_tensor, tensor_of_rank
from .nms_te import get_valid_counts_te, non_max_suppression_te

# ---------------------------------------------------------------- get_valid_counts


def _check_box_index(op_name: str, what: str, index: int, length, allow_negative: bool) -> None:
    if isinstance(length, int) and (index >= length or (index < 0 and not allow_negative)):
        raise RelationError(f"{op_name}: {what}={index} is outside the box length {length}")


def _get_valid_counts_rel(arg_types, attrs):
    name = "vision.get_valid_counts"
    data = tensor_of_rank(arg_types[0], 3, name, "data")
    scalar_tensor(arg_types[1], name, "score_threshold")
    _check_box_index(name, "score_index", attrs.score_index, data.shape[2], False)
    _check_box_index(name, "id_index", attrs.id_index, data.shape[2], True)
    return TupleType(
        [
            TensorType((data.shape[0],), "int32"),
            TensorType(data.shape, data.dtype),
            TensorType((data.shape[0], data.shape[1]), "int32"),
        ]
    )


def _get_valid_counts_impl(args, attrs, out_type):
    data = np.asarray(args[0])
    threshold = first_value(args[1])
    valid = data[:, :, attrs.score_index] > threshold
    if attrs.id_index >= 0:
        valid &= data[:, :, attrs.id_index] >= 0
    counts = valid.sum(axis=1).astype("int32")
    boxes = np.full(data.shape, -1, dtype=data.dtype)
    indices = np.full(data.shape[:2], -1, dtype="int32")
    for batch in range(data.shape[0]):
        kept = np.flatnonzero(valid[batch])
        boxes[batch, : kept.size] = data[batch, kept]
        indices[batch, : kept.size] = kept
    return counts, boxes, indices


register(
    VisionOpDef(
        "vision.get_valid_counts",
        2,
        _get_valid_counts_rel,
        OpPattern.OPAQUE,
        _get_valid_counts_impl,
        te_impl=get_valid_counts_te,
        attrs=(
            AttrField("id_index", 0, to_int, "index of the class id in a box row, -1: no class"),
            AttrField("score_index", 1, to_int, "index of the score in a box row"),
        ),
        extras={
            "input_names": ("data", "score_threshold"),
            "input_defaults": {"score_threshold": (0.0, "float32")},
            "tuple_outputs_of": lambda attrs: 3,
            "support_level": 5,
        },
        description="Count the boxes scoring above a threshold and move them to the top.",
    )
)

# ---------------------------------------------------------------- non_max_suppression


def _nms_rel(arg_types, attrs):
    name = "vision.non_max_suppression"
    data = tensor_of_rank(arg_types[0], 3, name, "data")
    valid_count = tensor_of_rank(arg_types[1], 1, name, "valid_count")
    indices = tensor_of_rank(arg_types[2], 2, name, "indices")
    scalar_tensor(arg_types[3], name, "max_output_size")
    scalar_tensor(arg_types[4], name, "iou_threshold")
    if not (same_dim(valid_count.shape[0], data.shape[0]) and same_dim(indices.shape[0], data.shape[0])):
        raise RelationError(
            f"{name}: valid_count {fmt_type(valid_count)} and indices {fmt_type(indices)} must have the batch "
            f"size of data {fmt_type(data)}"
        )
    length = data.shape[2]
    if isinstance(length, int) and attrs.coord_start + 4 > length:
        raise RelationError(f"{name}: coord_start={attrs.coord_start} leaves no 4 coordinates in {fmt_type(data)}")
    _check_box_index(name, "score_index", attrs.score_index, length, False)
    _check_box_index(name, "id_index", attrs.id_index, length, True)
    if attrs.return_indices:
        return TupleType([TensorType((data.shape[0], data.shape[1]), "int32"), TensorType((data.shape[0], 1), "int32")])
    return TensorType(data.shape, data.dtype)


def corners(boxes: np.ndarray, start: int):
    """(left, top, right, bottom) of box rows whose 4 coordinates start at `start`, in either order."""
    a, b, c, d = (boxes[..., start + i] for i in range(4))
    return np.minimum(a, c), np.minimum(b, d), np.maximum(a, c), np.maximum(b, d)


def iou(box, others, start: int):
    """IoU of one box with each of `others`, in the boxes' dtype; 0 where the union is not positive."""
    al, at, ar, ab = corners(box, start)
    bl, bt, br, bb = corners(others, start)
    zero = np.zeros((), dtype=others.dtype)
    width = np.maximum(zero, np.minimum(ar, br) - np.maximum(al, bl))
    height = np.maximum(zero, np.minimum(ab, bb) - np.maximum(at, bt))
    area = height * width
    union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - area
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union <= zero, zero, area / np.where(union <= zero, 1, union)).astype(others.dtype)


def descending_order(scores: np.ndarray) -> np.ndarray:
    """A stable descending order, NaN last (nms_te ranks the same way)."""
    return np.argsort(-scores, kind="stable")


def _nms_rows(rows, count: int, attrs, max_output: int, iou_threshold):
    """One batch: the rows after suppression and the (sorted) input row of each, -1 where removed."""
    out = np.full(rows.shape, -1, dtype=rows.dtype)
    box = np.full(rows.shape[0], -1, dtype=np.int64)
    score, cls = attrs.score_index, attrs.id_index
    if not iou_threshold > 0:
        out[:count], box[:count] = rows[:count], np.arange(count)
        return out, box
    order = descending_order(rows[:count, score])
    keep = attrs.top_k if 0 < attrs.top_k < count else count
    out[:keep], box[:keep] = rows[order[:keep]], order[:keep]
    selected = 0
    for j in range(count):
        if selected == max_output:
            out[j], box[j] = -1, -1
            continue
        if not out[j, score] > 0:
            continue
        earlier = out[:j]
        candidates = earlier[:, score] > 0
        if cls >= 0:
            candidates &= earlier[:, cls] >= 0
            if not attrs.force_suppress:
                candidates &= earlier[:, cls] == out[j, cls]
        overlaps = iou(out[j], earlier[candidates], attrs.coord_start)
        if np.any(overlaps >= iou_threshold):
            out[j], box[j] = -1, -1
        else:
            selected += 1
    return out, box


def _nms_impl(args, attrs, out_type):
    data, valid_count, indices = (np.asarray(a) for a in args[:3])
    max_output = int(first_value(args[3]))
    iou_threshold = first_value(args[4]).astype(data.dtype)
    batch, anchors = data.shape[:2]
    results = np.empty_like(data)
    picked = np.full((batch, anchors), -1, dtype="int32")
    counts = np.zeros((batch, 1), dtype="int32")
    for b in range(batch):
        count = int(np.clip(valid_count[b], 0, anchors))
        rows, box = _nms_rows(data[b], count, attrs, max_output, iou_threshold)
        if attrs.return_indices:
            kept = box[box >= 0]
            kept = indices[b, kept]
            kept = kept[kept >= 0]
            picked[b, : kept.size] = kept
            counts[b, 0] = kept.size
        elif attrs.invalid_to_bottom:
            # TVM's rearrange_box_out tests the row's first column.
            valid = rows[rows[:, 0] >= 0]
            results[b] = -1
            results[b, : len(valid)] = valid
        else:
            results[b] = rows
    if attrs.return_indices:
        return picked, counts
    return results


def _nms_outputs(attrs):
    return 2 if attrs.return_indices else None


register(
    VisionOpDef(
        "vision.non_max_suppression",
        5,
        _nms_rel,
        OpPattern.OPAQUE,
        _nms_impl,
        te_impl=non_max_suppression_te,
        attrs=(
            AttrField("force_suppress", False, to_bool, "suppress across classes"),
            AttrField("top_k", -1, to_int, "keep at most the top_k best boxes before suppression, -1: all"),
            AttrField("coord_start", 2, to_int, "index of the first of the 4 box coordinates"),
            AttrField("score_index", 1, to_int),
            AttrField("id_index", 0, to_int, "index of the class id, -1: no class"),
            AttrField("return_indices", True, to_bool, "return (box indices, count) instead of the boxes"),
            AttrField("invalid_to_bottom", False, to_bool, "move the remaining boxes to the top"),
        ),
        extras={
            "input_names": ("data", "valid_count", "indices", "max_output_size", "iou_threshold"),
            "input_defaults": {"max_output_size": (-1, "int32"), "iou_threshold": (0.5, "float32")},
            "tuple_outputs_of": _nms_outputs,
            "support_level": 5,
        },
        description="Greedy non-maximum suppression of scored boxes.",
    )
)
