"""TE lowerings of vision.get_valid_counts and vision.non_max_suppression: hand-written TIR.

topi.vision's kernels call topi.argsort (a tvm.contrib.sort packed function, not linked into our
libraries) and differ from TVM v0.19 in which boxes they keep; these follow nms.py's numpy
reference step by step: a stable descending rank sort (NaN last), then greedy suppression, one
batch per parallel iteration. tvm is imported inside the functions.
"""

from __future__ import annotations

__all__ = ["get_valid_counts_te", "non_max_suppression_te", "scalar_load", "ranked_before", "box_iou"]


def scalar_load(buffer):
    """The first value of a 0-d or 1-element buffer (a threshold or limit input)."""
    from tvm import tirx

    return tirx.BufferLoad(buffer, [0] * len(buffer.shape))


def ranked_before(a, b):
    """Whether score `a` ranks strictly before `b` in a descending order with NaN last."""
    from tvm import tirx

    return tirx.Or(a > b, tirx.And(tirx.isnan(b), tirx.Not(tirx.isnan(a))))


def box_iou(corner_a, corner_b, dtype: str):
    """IoU of boxes given as (x1, y1, x2, y2) expressions in either order, as nms.iou computes it."""
    from tvm import tirx

    def ltrb(c):
        return tirx.min(c[0], c[2]), tirx.min(c[1], c[3]), tirx.max(c[0], c[2]), tirx.max(c[1], c[3])

    al, at, ar, ab = ltrb(corner_a)
    bl, bt, br, bb = ltrb(corner_b)
    zero = tirx.const(0, dtype)
    width = tirx.max(zero, tirx.min(ar, br) - tirx.max(al, bl))
    height = tirx.max(zero, tirx.min(ab, bb) - tirx.max(at, bt))
    area = height * width
    union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - area
    return tirx.Select(union <= zero, zero, area / union)


def _get_valid_counts_ir(data, threshold, counts, boxes, indices, attrs):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, anchors, length = data.shape
    dtype = str(data.dtype)
    with IRBuilder() as builder:
        x, out, idx, cnt = (T.buffer_proxy(b) for b in (data, boxes, indices, counts))
        limit = scalar_load(threshold).astype(dtype)
        with T.parallel(0, batch) as b:
            cursor = T.buffer_proxy(T.decl_buffer([1], "int32", scope="local"))
            cursor[0] = 0
            with T.serial(0, anchors) as j:
                valid = x[b, j, attrs.score_index] > limit
                if attrs.id_index >= 0:
                    valid = tirx.And(valid, x[b, j, attrs.id_index] >= tirx.const(0, dtype))
                with T.If(valid):
                    with T.Then():
                        with T.serial(0, length) as k:
                            out[b, cursor[0], k] = x[b, j, k]
                        idx[b, cursor[0]] = j
                        cursor[0] = cursor[0] + 1
            with T.serial(0, anchors) as j:
                with T.If(j >= cursor[0]):
                    with T.Then():
                        with T.serial(0, length) as k:
                            out[b, j, k] = tirx.const(-1, dtype)
                        idx[b, j] = -1
            cnt[b] = cursor[0]
        return builder.get()


def get_valid_counts_te(inputs, attrs, out_type):
    from tvm import te

    data, threshold = inputs
    batch, anchors, length = data.shape
    outs = te.extern(
        [(batch,), (batch, anchors, length), (batch, anchors)],
        [data, threshold],
        lambda ins, outs: _get_valid_counts_ir(ins[0], ins[1], outs[0], outs[1], outs[2], attrs),
        dtype=["int32", str(data.dtype), "int32"],
        name="T_get_valid_counts",
    )
    return list(outs)


def _nms_ir(data, valid_count, indices, max_output, iou_threshold, outs, attrs):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, anchors, length = data.shape
    dtype = str(data.dtype)
    score, cls, start = attrs.score_index, attrs.id_index, attrs.coord_start
    minus_one = tirx.const(-1, dtype)
    zero = tirx.const(0, dtype)
    with IRBuilder() as builder:
        x, counts_in, idx = T.buffer_proxy(data), T.buffer_proxy(valid_count), T.buffer_proxy(indices)
        limit = scalar_load(max_output)
        threshold = scalar_load(iou_threshold).astype(dtype)
        outs = [T.buffer_proxy(o) for o in outs]
        with T.parallel(0, batch) as b:
            rows = T.buffer_proxy(T.decl_buffer([anchors, length], dtype))
            box = T.buffer_proxy(T.decl_buffer([anchors], "int32"))
            order = T.buffer_proxy(T.decl_buffer([anchors], "int32"))
            # count, kept before suppression, selected so far, scratch
            state = T.buffer_proxy(T.decl_buffer([4], "int32", scope="local"))
            state[0] = tirx.max(tirx.min(counts_in[b], anchors), 0)
            with T.serial(0, anchors) as j:
                box[j] = -1
                with T.serial(0, length) as k:
                    rows[j, k] = minus_one
            with T.If(threshold > zero):
                with T.Then():
                    with T.serial(0, state[0]) as j:
                        state[3] = 0
                        with T.serial(0, state[0]) as k:
                            earlier = tirx.Or(
                                ranked_before(x[b, k, score], x[b, j, score]),
                                tirx.And(tirx.Not(ranked_before(x[b, j, score], x[b, k, score])), k < j),
                            )
                            with T.If(earlier):
                                with T.Then():
                                    state[3] = state[3] + 1
                        order[state[3]] = j
                    state[1] = state[0]
                    if attrs.top_k > 0:
                        state[1] = tirx.min(state[0], attrs.top_k)
                    with T.serial(0, state[1]) as j:
                        box[j] = order[j]
                        with T.serial(0, length) as k:
                            rows[j, k] = x[b, order[j], k]
                    state[2] = 0
                    with T.serial(0, state[0]) as j:
                        with T.If(state[2] == limit):
                            with T.Then():
                                box[j] = -1
                                with T.serial(0, length) as k:
                                    rows[j, k] = minus_one
                            with T.Else():
                                with T.If(rows[j, score] > zero):
                                    with T.Then():
                                        state[3] = 0
                                        with T.serial(0, j) as k:
                                            candidate = rows[k, score] > zero
                                            if cls >= 0:
                                                candidate = tirx.And(candidate, rows[k, cls] >= zero)
                                                if not attrs.force_suppress:
                                                    candidate = tirx.And(candidate, rows[k, cls] == rows[j, cls])
                                            with T.If(candidate):
                                                with T.Then():
                                                    corners_j = [rows[j, start + i] for i in range(4)]
                                                    corners_k = [rows[k, start + i] for i in range(4)]
                                                    with T.If(box_iou(corners_j, corners_k, dtype) >= threshold):
                                                        with T.Then():
                                                            state[3] = 1
                                        with T.If(state[3] == 1):
                                            with T.Then():
                                                box[j] = -1
                                                with T.serial(0, length) as k:
                                                    rows[j, k] = minus_one
                                            with T.Else():
                                                state[2] = state[2] + 1
                with T.Else():
                    with T.serial(0, state[0]) as j:
                        box[j] = j
                        with T.serial(0, length) as k:
                            rows[j, k] = x[b, j, k]
            state[3] = 0
            if attrs.return_indices:
                picked, counts = outs
                with T.serial(0, anchors) as j:
                    picked[b, j] = -1
                with T.serial(0, anchors) as j:
                    with T.If(box[j] >= 0):
                        with T.Then():
                            original = idx[b, box[j]]
                            with T.If(original >= 0):
                                with T.Then():
                                    picked[b, state[3]] = original
                                    state[3] = state[3] + 1
                counts[b, 0] = state[3]
            else:
                (out,) = outs
                with T.serial(0, anchors) as j:
                    with T.serial(0, length) as k:
                        out[b, j, k] = rows[j, k] if not attrs.invalid_to_bottom else minus_one
                if attrs.invalid_to_bottom:
                    with T.serial(0, anchors) as j:
                        with T.If(rows[j, 0] >= zero):
                            with T.Then():
                                with T.serial(0, length) as k:
                                    out[b, state[3], k] = rows[j, k]
                                state[3] = state[3] + 1
        return builder.get()


def non_max_suppression_te(inputs, attrs, out_type):
    from tvm import te

    data = inputs[0]
    batch, anchors, _ = data.shape
    if attrs.return_indices:
        shapes, dtypes = [(batch, anchors), (batch, 1)], ["int32", "int32"]
    else:
        shapes, dtypes = [data.shape], [str(data.dtype)]
    outs = te.extern(
        shapes,
        list(inputs),
        lambda ins, outs: _nms_ir(*ins, list(outs), attrs),
        dtype=dtypes,
        name="T_non_max_suppression",
    )
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return outs if attrs.return_indices else outs[0]
