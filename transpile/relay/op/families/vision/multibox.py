"""vision.multibox_transform_loc: SSD box decoding (TVM's multibox_op.cc and topi/vision/ssd, v0.19).

Per anchor: the best class from `start` on (start 1 unless keep_background; scores must beat -1,
the first of equal best wins), demoted to background when it scores below threshold; kept rows
(every one with keep_background, else the non-background ones) are moved to the top as
[class id (minus 1 without background), score, x1, y1, x2, y2], the box decoded from the anchor
by the variances-scaled offsets (centre shift, exp size), clipped to [0, 1] with clip. Rows past
the valid count are -1 (TVM left them undefined).
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType, TupleType
from ...common import fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, to_bool, to_float, to_floats
from ._common import same_dim, tensor_of_rank


def _transform_loc_rel(arg_types, attrs):
    name = "vision.multibox_transform_loc"
    cls_prob = tensor_of_rank(arg_types[0], 3, name, "cls_prob")
    loc_pred = tensor_of_rank(arg_types[1], 2, name, "loc_pred")
    anchor = tensor_of_rank(arg_types[2], 3, name, "anchor")
    anchors = cls_prob.shape[2]
    if not same_dim(anchor.shape[1], anchors) or not same_dim(anchor.shape[2], 4):
        raise RelationError(
            f"{name}: anchor {fmt_type(anchor)} must be (1, anchors, 4) for cls_prob {fmt_type(cls_prob)}"
        )
    if isinstance(anchors, int) and not same_dim(loc_pred.shape[1], anchors * 4):
        raise RelationError(
            f"{name}: loc_pred {fmt_type(loc_pred)} must hold 4 values per anchor of {fmt_type(cls_prob)}"
        )
    if len(attrs.variances) != 4:
        raise RelationError(f"{name}: variances must be 4 values, got {list(attrs.variances)}")
    batch = cls_prob.shape[0]
    return TupleType([TensorType((batch, anchors, 6), cls_prob.dtype), TensorType((batch,), "int32")])


def _decode(anchor, offsets, variances, clip: bool):
    """(..., 4) anchors [x1, y1, x2, y2] moved by (..., 4) offsets; float32 as TVM's kernel."""
    f32 = np.float32
    two = f32(2)
    al, at, ar, ab = (anchor[..., i] for i in range(4))
    px, py, pw, ph = (offsets[..., i] for i in range(4))
    vx, vy, vw, vh = (f32(v) for v in variances)
    aw, ah = ar - al, ab - at
    ax, ay = (al + ar) / two, (at + ab) / two
    ox, oy = px * vx * aw + ax, py * vy * ah + ay
    ow, oh = np.exp(pw * vw) * aw / two, np.exp(ph * vh) * ah / two
    box = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)
    return np.clip(box, f32(0), f32(1)) if clip else box


def _transform_loc_impl(args, attrs, out_type):
    cls_prob, loc_pred, anchor = (np.asarray(a) for a in args)
    batch, classes, anchors = cls_prob.shape
    start = 0 if attrs.keep_background else 1
    f32 = np.float32
    candidates = cls_prob[:, start:, :]
    if candidates.shape[1]:
        best = candidates.max(axis=1)
        cls_id = np.where(best > -1, start + candidates.argmax(axis=1), 0)
        score = np.maximum(best, f32(-1))
    else:
        cls_id, score = np.zeros((batch, anchors), np.int64), np.full((batch, anchors), -1, cls_prob.dtype)
    cls_id = np.where((cls_id > 0) & (score < f32(attrs.threshold)), 0, cls_id)
    keep = np.full(cls_id.shape, True) if attrs.keep_background else cls_id > 0
    boxes = _decode(anchor[0].astype(f32), loc_pred.reshape(batch, anchors, 4).astype(f32), attrs.variances, attrs.clip)
    rows = np.concatenate(
        [(cls_id - (0 if attrs.keep_background else 1))[..., None].astype(f32), score[..., None].astype(f32), boxes],
        axis=-1,
    )
    out = np.full((batch, anchors, 6), -1, dtype=cls_prob.dtype)
    counts = keep.sum(axis=1).astype("int32")
    for b in range(batch):
        out[b, : counts[b]] = rows[b, keep[b]]
    return out, counts


def _transform_loc_ir(cls_prob, loc_pred, anchor, out, counts, attrs):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, classes, anchors = cls_prob.shape
    dtype = str(out.dtype)
    start = 0 if attrs.keep_background else 1
    f32 = lambda v: tirx.const(v, "float32") if isinstance(v, (int, float)) else v.astype("float32")  # noqa: E731
    with IRBuilder() as builder:
        probs, loc, anc, o, cnt = (T.buffer_proxy(b) for b in (cls_prob, loc_pred, anchor, out, counts))
        with T.parallel(0, batch) as b:
            state = T.buffer_proxy(T.decl_buffer([2], "int32", scope="local"))  # valid count, class id
            best = T.buffer_proxy(T.decl_buffer([1], "float32", scope="local"))
            state[0] = 0
            with T.serial(0, anchors) as j:
                best[0] = f32(-1.0)
                state[1] = 0
                with T.serial(start, classes) as k:
                    with T.If(f32(probs[b, k, j]) > best[0]):
                        with T.Then():
                            state[1] = k
                            best[0] = f32(probs[b, k, j])
                with T.If(tirx.And(state[1] > 0, best[0] < f32(float(np.float32(attrs.threshold))))):
                    with T.Then():
                        state[1] = 0
                kept = tirx.const(True) if attrs.keep_background else state[1] > 0
                with T.If(kept):
                    with T.Then():
                        row = state[0]
                        shift = 0 if attrs.keep_background else 1
                        o[b, row, 0] = (state[1] - shift).astype(dtype)
                        o[b, row, 1] = best[0].astype(dtype)
                        al, at, ar, ab = (f32(anc[0, j, i]) for i in range(4))
                        px, py, pw, ph = (f32(loc[b, j * 4 + i]) for i in range(4))
                        vx, vy, vw, vh = (f32(float(np.float32(v))) for v in attrs.variances)
                        aw, ah = ar - al, ab - at
                        ax, ay = (al + ar) / f32(2.0), (at + ab) / f32(2.0)
                        ox, oy = px * vx * aw + ax, py * vy * ah + ay
                        ow, oh = tirx.exp(pw * vw) * aw / f32(2.0), tirx.exp(ph * vh) * ah / f32(2.0)
                        for i, value in enumerate((ox - ow, oy - oh, ox + ow, oy + oh)):
                            if attrs.clip:
                                value = tirx.max(tirx.min(value, f32(1.0)), f32(0.0))
                            o[b, row, 2 + i] = value.astype(dtype)
                        state[0] = state[0] + 1
            with T.serial(0, anchors) as j:
                with T.If(j >= state[0]):
                    with T.Then():
                        with T.serial(0, 6) as i:
                            o[b, j, i] = tirx.const(-1, dtype)
            cnt[b] = state[0]
        return builder.get()


def _transform_loc_te(inputs, attrs, out_type):
    from tvm import te

    cls_prob, loc_pred, anchor = inputs
    batch, _, anchors = cls_prob.shape
    outs = te.extern(
        [(batch, anchors, 6), (batch,)],
        [cls_prob, loc_pred, anchor],
        lambda ins, outs: _transform_loc_ir(*ins, *outs, attrs),
        dtype=[str(cls_prob.dtype), "int32"],
        name="T_multibox_transform_loc",
    )
    return list(outs)


register(
    NNOpDef(
        "vision.multibox_transform_loc",
        3,
        _transform_loc_rel,
        OpPattern.OPAQUE,
        _transform_loc_impl,
        te_impl=_transform_loc_te,
        attrs=(
            AttrField("clip", True, to_bool, "clip the boxes to [0, 1]"),
            AttrField("threshold", 0.01, to_float, "the score a non-background class needs"),
            AttrField("variances", (0.1, 0.1, 0.2, 0.2), to_floats, "scales of the x, y, w, h offsets"),
            AttrField("keep_background", False, to_bool, "keep rows whose best class is the background"),
        ),
        extras={"input_names": ("cls_prob", "loc_pred", "anchor"), "tuple_outputs": 2, "support_level": 5},
        description="Decode SSD box offsets against their anchors and pick each anchor's class.",
    )
)
