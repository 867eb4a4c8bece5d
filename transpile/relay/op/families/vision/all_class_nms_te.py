"""TE lowering of vision.all_class_non_max_suppression: hand-written TIR following all_class_nms.py.

One serial pass over (batch, class) rows: a stable descending rank sort of the row's scores, then
greedy suppression, each selection written at the running offset of its batch (tensorflow) or of
the whole output (onnx). tvm is imported inside the functions.
"""

from __future__ import annotations

from .nms_te import box_iou, ranked_before, scalar_load

__all__ = ["all_class_nms_te"]


def _all_class_nms_ir(boxes, scores, max_output, iou_threshold, score_threshold, outs, onnx: bool):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, classes, count = scores.shape
    box_dtype, score_dtype = str(boxes.dtype), str(scores.dtype)
    with IRBuilder() as builder:
        xb, xs = T.buffer_proxy(boxes), T.buffer_proxy(scores)
        limit = scalar_load(max_output)
        overlap_limit = scalar_load(iou_threshold).astype(box_dtype)
        score_limit = scalar_load(score_threshold).astype(score_dtype)
        outs = [T.buffer_proxy(o) for o in outs]
        # The scratch buffers need an enclosing frame: one pass over everything.
        with T.serial(0, 1):
            order = T.buffer_proxy(T.decl_buffer([count], "int32"))
            live = T.buffer_proxy(T.decl_buffer([count], score_dtype))
            # candidates, selected in this class, write offset, scratch
            state = T.buffer_proxy(T.decl_buffer([4], "int64", scope="local"))
            zero64 = tirx.const(0, "int64")
            if onnx:
                rows, total = outs
                with T.serial(0, batch * classes * count) as r:
                    for column in range(3):
                        rows[r, column] = zero64
            else:
                pairs, picked_scores, totals = outs
                with T.serial(0, batch) as b:
                    with T.serial(0, classes * count) as r:
                        pairs[b, r, 0] = zero64
                        pairs[b, r, 1] = zero64
                        picked_scores[b, r] = tirx.const(0, "float32")
            state[2] = zero64
            with T.serial(0, batch) as b:
                if not onnx:
                    state[2] = zero64
                with T.serial(0, classes) as c:
                    state[0] = zero64
                    with T.serial(0, count) as j:
                        state[3] = zero64
                        with T.serial(0, count) as k:
                            earlier = tirx.Or(
                                ranked_before(xs[b, c, k], xs[b, c, j]),
                                tirx.And(tirx.Not(ranked_before(xs[b, c, j], xs[b, c, k])), k < j),
                            )
                            with T.If(earlier):
                                with T.Then():
                                    state[3] = state[3] + 1
                        order[state[3]] = j
                        with T.If(xs[b, c, j] > score_limit):
                            with T.Then():
                                state[0] = state[0] + 1
                    with T.serial(0, count) as j:
                        live[j] = xs[b, c, order[j]]
                    state[1] = zero64
                    with T.If(overlap_limit > tirx.const(0, box_dtype)):
                        with T.Then():
                            with T.serial(0, state[0]) as j:
                                open_slots = tirx.Or(limit <= 0, state[1] < limit.astype("int64"))
                                with T.If(tirx.And(open_slots, live[j] > tirx.const(-1, score_dtype))):
                                    with T.Then():
                                        chosen = order[j].astype("int64")
                                        if onnx:
                                            rows[state[2], 0] = b.astype("int64")
                                            rows[state[2], 1] = c.astype("int64")
                                            rows[state[2], 2] = chosen
                                        else:
                                            pairs[b, state[2], 0] = c.astype("int64")
                                            pairs[b, state[2], 1] = chosen
                                            picked_scores[b, state[2]] = live[j].astype("float32")
                                        state[1] = state[1] + 1
                                        state[2] = state[2] + 1
                                        with T.serial(0, state[0]) as k:
                                            with T.If(tirx.And(k > j, live[k] > tirx.const(0, score_dtype))):
                                                with T.Then():
                                                    corners_j = [xb[b, order[j], i] for i in range(4)]
                                                    corners_k = [xb[b, order[k], i] for i in range(4)]
                                                    iou = box_iou(corners_j, corners_k, box_dtype)
                                                    with T.If(iou >= overlap_limit):
                                                        with T.Then():
                                                            live[k] = tirx.const(-1, score_dtype)
                if not onnx:
                    totals[b] = state[2]
            if onnx:
                total[0] = state[2]
        return builder.get()


def all_class_nms_te(inputs, attrs, out_type):
    from tvm import te

    boxes, scores = inputs[0], inputs[1]
    batch, classes, count = scores.shape
    onnx = attrs.output_format == "onnx"
    if onnx:
        shapes, dtypes = [(batch * classes * count, 3), (1,)], ["int64", "int64"]
    else:
        shapes = [(batch, classes * count, 2), (batch, classes * count), (batch,)]
        dtypes = ["int64", "float32", "int64"]
    outs = te.extern(
        shapes,
        list(inputs),
        lambda ins, outs: _all_class_nms_ir(*ins, list(outs), onnx),
        dtype=dtypes,
        name="T_all_class_non_max_suppression",
    )
    return list(outs)
