"""vision.* and image.crop_and_resize: relations, numpy semantics on hand-made cases with known answers,
the TVM-style builders, and every installed backend against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends import backends
from transpile.relay.op.registry import get, normalize_attrs
from transpile.relay.ty import Any, TupleType

from op_support import T, rel, rel_error

BACKENDS = [b for b in ("python", "cpp", "tir") if b in backends()]
# Native builds of the bigger modules: `make test-all` runs them (the python backend always does).
SLOW_NATIVE = [pytest.param(b, marks=pytest.mark.slow) if b != "python" else b for b in BACKENDS]


def run(name, *args, **attrs):
    """numpy_impl of one call, its result checked against the relation's type."""
    opdef = get(name)
    args = [np.asarray(a) for a in args]
    normalized = normalize_attrs(opdef, attrs)
    out_type = opdef.type_rel([T(a.shape, a.dtype.name) for a in args], normalized)
    out = opdef.numpy_impl(args, normalized, out_type)
    types = list(out_type.fields) if isinstance(out_type, TupleType) else [out_type]
    for value, ty in zip(out if isinstance(out, tuple) else [out], types):
        assert value.dtype == np.dtype(ty.dtype)
        assert all(isinstance(d, type(Any())) or d == s for d, s in zip(ty.shape, value.shape)), (ty, value.shape)
    return out


def scalar(value, dtype):
    return np.array(value, dtype)


# ---------------------------------------------------------------- relations


def test_relations_follow_tvm():
    assert rel("vision.get_valid_counts", T((2, 7, 6)), T(())) == TupleType(
        [T((2,), "int32"), T((2, 7, 6)), T((2, 7), "int32")]
    )
    nms_args = (T((1, Any(), 6)), T((1,), "int32"), T((1, Any()), "int32"), T((), "int32"), T(()))
    indices, count = rel("vision.non_max_suppression", *nms_args).fields
    assert count == T((1, 1), "int32") and indices.dtype == "int32" and isinstance(indices.shape[1], type(Any()))
    assert rel("vision.non_max_suppression", *nms_args, return_indices=False).shape[2] == 6
    acn = (T((2, 5, 4)), T((2, 3, 5)), T((), "int32"), T(()), T(()))
    assert rel("vision.all_class_non_max_suppression", *acn) == TupleType([T((30, 3), "int64"), T((1,), "int64")])
    assert rel("vision.all_class_non_max_suppression", *acn, output_format="tensorflow") == TupleType(
        [T((2, 15, 2), "int64"), T((2, 15)), T((2,), "int64")]
    )
    dynamic = rel("vision.all_class_non_max_suppression", T((2, Any(), 4)), T((2, 3, Any())), *acn[2:])
    assert isinstance(dynamic.fields[0].shape[0], type(Any()))
    crop = (T((2, 8, 9, 3)), T((Any(), 4)), T((Any(),), "int32"))
    assert rel("image.crop_and_resize", *crop, crop_size=(4, 5), layout="NHWC").shape[1:] == (4, 5, 3)
    assert rel("image.crop_and_resize", *crop, crop_size=(4, 5), out_dtype="float64").shape[1:] == (8, 4, 5)


def test_relation_errors_name_the_problem():
    assert "data must be a 3-D tensor" in rel_error("vision.get_valid_counts", T((7, 6)), T(()))
    assert "score_index=6 is outside" in rel_error("vision.get_valid_counts", T((1, 7, 6)), T(()), score_index=6)
    nms = (T((1, 4, 6)), T((1,), "int32"), T((1, 4), "int32"), T((), "int32"), T(()))
    assert "valid_count must be a 1-D" in rel_error("vision.non_max_suppression", nms[0], T((1, 1), "int32"), *nms[2:])
    assert "coord_start=3" in rel_error("vision.non_max_suppression", *nms, coord_start=3)
    assert "iou_threshold must be a scalar" in rel_error("vision.non_max_suppression", *nms[:4], T((2,)))
    acn = (T((1, 5, 4)), T((1, 2, 5)), T((), "int32"), T(()), T(()))
    assert "output_format" in rel_error("vision.all_class_non_max_suppression", *acn, output_format="tflite")
    assert "(batch, classes, boxes)" in rel_error(
        "vision.all_class_non_max_suppression", acn[0], T((1, 2, 6)), *acn[2:]
    )
    crop = (T((1, 3, 8, 8)), T((2, 4)), T((2,), "int32"))
    assert "method must be" in rel_error("image.crop_and_resize", *crop, crop_size=(2, 2), method="cubic")
    assert "boxes must be (num_boxes, 4)" in rel_error(
        "image.crop_and_resize", crop[0], T((2, 5)), crop[2], crop_size=(2, 2)
    )
    assert "crop_size must be 2" in rel_error("image.crop_and_resize", *crop, crop_size=(2,))


# ---------------------------------------------------------------- get_valid_counts, non_max_suppression

# [class, score, x1, y1, x2, y2]; boxes 0 and 1 overlap with IoU 0.5 exactly (2 / 4).
BOXES = np.array(
    [
        [
            [0, 0.9, 0, 0, 2, 2],
            [0, 0.8, 0, 0, 2, 1],
            [1, 0.7, 0, 0, 2, 1],
            [0, 0.2, 10, 10, 11, 11],
            [-1, 0.95, 5, 5, 6, 6],
        ]
    ],
    "float32",
)


def test_get_valid_counts_moves_valid_boxes_up():
    count, boxes, indices = run("vision.get_valid_counts", BOXES, scalar(0.5, "float32"))
    assert count.tolist() == [3]  # box 4 has class -1, box 3 scores too little
    np.testing.assert_array_equal(boxes[0, :3], BOXES[0, :3])
    assert (boxes[0, 3:] == -1).all() and indices.tolist() == [[0, 1, 2, -1, -1]]
    count, _, indices = run("vision.get_valid_counts", BOXES, scalar(0.5, "float32"), id_index=-1)
    assert count.tolist() == [4] and indices.tolist() == [[0, 1, 2, 4, -1]]
    count, boxes, indices = run("vision.get_valid_counts", np.zeros((2, 0, 6), "float32"), scalar(0, "float32"))
    assert count.tolist() == [0, 0] and boxes.shape == (2, 0, 6) and indices.shape == (2, 0)


def nms(data, valid_count, max_output=-1, iou_threshold=0.5, indices=None, **attrs):
    anchors = data.shape[1]
    indices = np.tile(np.arange(anchors, dtype="int32"), (data.shape[0], 1)) if indices is None else indices
    return run(
        "vision.non_max_suppression",
        data,
        np.array(valid_count, "int32"),
        indices,
        scalar(max_output, "int32"),
        scalar(iou_threshold, "float32"),
        **attrs,
    )


def test_nms_suppresses_an_overlap_at_the_threshold_within_a_class():
    picked, count = nms(BOXES, [3])
    assert picked.tolist() == [[0, 2, -1, -1, -1]] and count.tolist() == [[2]]  # box 1: IoU 0.5 >= 0.5
    picked, count = nms(BOXES, [3], iou_threshold=0.51)
    assert picked.tolist() == [[0, 1, 2, -1, -1]] and count.tolist() == [[3]]
    picked, _ = nms(BOXES, [3], force_suppress=True)
    assert picked.tolist() == [[0, -1, -1, -1, -1]]  # box 2 (IoU 0.5 with box 0) goes too
    picked, _ = nms(BOXES, [3], id_index=-1)
    assert picked.tolist() == [[0, -1, -1, -1, -1]]


def test_nms_limits_sorting_and_outputs():
    data = BOXES.copy()
    data[0, :, 1] = [0.5, 0.9, 0.5, 0.7, 0.1]  # ties keep the input order
    picked, count = nms(data, [5], iou_threshold=1.01, id_index=-1)  # nothing overlaps that much
    assert picked.tolist() == [[1, 3, 0, 2, 4]] and count.tolist() == [[5]]
    picked, count = nms(data, [5], iou_threshold=0.9, id_index=-1)  # 2 is a copy of 1
    assert picked.tolist() == [[1, 3, 0, 4, -1]] and count.tolist() == [[4]]
    picked, _ = nms(data, [5], iou_threshold=1.01, id_index=-1, top_k=2)
    assert picked.tolist() == [[1, 3, -1, -1, -1]]
    picked, _ = nms(data, [5], max_output=3, iou_threshold=1.01, id_index=-1)
    assert picked.tolist() == [[1, 3, 0, -1, -1]]
    picked, _ = nms(data, [5], iou_threshold=1.01, id_index=-1, indices=np.array([[4, 3, -1, 1, 0]], "int32"))
    assert picked.tolist() == [[3, 1, 4, 0, -1]]  # mapped through indices, -1 dropped
    picked, count = nms(data, [0])
    assert (picked == -1).all() and count.tolist() == [[0]]
    picked, count = nms(data, [2], iou_threshold=0.0)  # no threshold: the first valid_count rows as they are
    assert picked.tolist() == [[0, 1, -1, -1, -1]] and count.tolist() == [[2]]


def test_nms_box_output_and_invalid_to_bottom():
    out = nms(BOXES, [3], return_indices=False)
    np.testing.assert_array_equal(out[0, [0, 2]], BOXES[0, [0, 2]])
    assert (out[0, [1, 3, 4]] == -1).all()  # suppressed and invalid rows
    out = nms(BOXES, [3], return_indices=False, invalid_to_bottom=True)
    np.testing.assert_array_equal(out[0, :2], BOXES[0, [0, 2]])
    assert (out[0, 2:] == -1).all()


def test_builders_take_tvm_arguments():
    data = relay.var("data", shape=(1, 5, 6))
    counts = relay.vision.get_valid_counts(data, 0.5, 0, score_index=1)
    assert len(counts) == 3 and counts.astuple().attrs.score_index == 1
    picked = relay.vision.non_max_suppression(data, counts[0], counts[2], iou_threshold=0.3, top_k=2)
    assert len(picked) == 2 and picked.astuple().attrs.top_k == 2
    boxes_out = relay.vision.non_max_suppression(data, counts[0], counts[2], 4, return_indices=False)
    assert boxes_out.args[3].data.tolist() == 4 and boxes_out.args[4].data.dtype == np.float32
    acn = relay.vision.all_class_non_max_suppression(relay.var("b", shape=(1, 5, 4)), relay.var("s", shape=(1, 2, 5)))
    assert len(acn) == 2 and acn.astuple().args[3].data.tolist() == -1.0
    text = relay.Function([data], picked.astuple()).astext()
    assert "vision.non_max_suppression" in text and "top_k=2" in text


# ---------------------------------------------------------------- all_class_non_max_suppression

ACN_BOXES = np.array(
    [
        [[0, 0, 2, 2], [0, 0, 2, 1], [5, 5, 6, 6], [0, 0, 1, 2]],
        [[0, 0, 1, 1], [0, 0, 1, 1], [3, 3, 4, 4], [9, 9, 8, 8]],
    ],
    "float32",
)
ACN_SCORES = np.array(
    [[[0.9, 0.8, 0.1, 0.7], [0.2, 0.3, 0.6, 0.5]], [[0.4, 0.4, 0.9, 0.3], [0.0, 0.0, 0.0, 0.0]]], "float32"
)


def all_class(max_output=-1, iou=0.5, score=0.15, output_format="onnx"):
    return run(
        "vision.all_class_non_max_suppression",
        ACN_BOXES,
        ACN_SCORES,
        scalar(max_output, "int64"),
        scalar(iou, "float32"),
        scalar(score, "float32"),
        output_format=output_format,
    )


def test_all_class_nms_onnx_rows():
    rows, total = all_class()
    # batch 0 class 0: 0 (0.9) suppresses 1 and 3 (IoU 0.5); class 1: 2, 3, 1 (no overlap >= 0.5 among them
    # but 3 and 1: IoU 1/3); batch 1 class 0: 2, then 0 (0.4, first of the tie) suppresses 1 (IoU 1), 3.
    expected = [[0, 0, 0], [0, 1, 2], [0, 1, 3], [0, 1, 1], [1, 0, 2], [1, 0, 0], [1, 0, 3]]
    assert total.tolist() == [7] and rows[:7].tolist() == expected and (rows[7:] == 0).all()
    rows, total = all_class(max_output=1)
    assert rows[: total[0]].tolist() == [[0, 0, 0], [0, 1, 2], [1, 0, 2]]
    _, total = all_class(iou=0.0)  # TVM selects nothing without a positive IoU threshold
    assert total.tolist() == [0]


def test_all_class_nms_tensorflow_rows():
    pairs, scores, totals = all_class(output_format="tensorflow", score=0.35)
    assert totals.tolist() == [3, 2]
    assert pairs[0, :3].tolist() == [[0, 0], [1, 2], [1, 3]] and pairs[1, :2].tolist() == [[0, 2], [0, 0]]
    np.testing.assert_array_equal(scores[0, :4], np.array([0.9, 0.6, 0.5, 0], "float32"))


# ---------------------------------------------------------------- crop_and_resize

IMAGE = np.arange(2 * 4 * 5 * 3, dtype="float32").reshape(2, 4, 5, 3)  # NHWC


def test_crop_and_resize_known_values():
    whole = np.array([[0, 0, 1, 1]], "float32")
    out = run("image.crop_and_resize", IMAGE, whole, np.array([1], "int32"), crop_size=(4, 5), layout="NHWC")
    np.testing.assert_array_equal(out[0], IMAGE[1])  # the whole image at its own size
    centre = np.array([[0, 0, 1, 1]], "float32")
    out = run("image.crop_and_resize", IMAGE, centre, np.array([0], "int32"), crop_size=(1, 1), layout="NHWC")
    np.testing.assert_allclose(out[0, 0, 0], (IMAGE[0, 1, 2] + IMAGE[0, 2, 2]) / 2)  # y 1.5, x 2
    outside = np.array([[-1, 0, 0, 1]], "float32")
    out = run(
        "image.crop_and_resize",
        IMAGE,
        outside,
        np.array([0], "int32"),
        crop_size=(3, 2),
        layout="NHWC",
        extrapolation_value=-7,
    )
    assert (out[0, 0] == -7).all() and (out[0, 2] != -7).all()  # y -3, -1.5 outside; 0 inside
    near = run(
        "image.crop_and_resize",
        IMAGE.transpose(0, 3, 1, 2),
        np.array([[0, 0, 0.5, 0.5]], "float32"),
        np.array([0], "int32"),
        crop_size=(2, 2),
        method="nearest_neighbor",
    )
    # y in {0, 1.5} -> rows {0, 2} (half to even), x in {0, 2} -> columns {0, 2}
    np.testing.assert_array_equal(near[0], IMAGE[0][np.ix_([0, 2], [0, 2])].transpose(2, 0, 1))


def test_crop_and_resize_rejects_a_bad_box_index():
    with pytest.raises(ValueError, match="box_indices must index"):
        run("image.crop_and_resize", IMAGE, np.zeros((1, 4), "float32"), np.array([2], "int32"), crop_size=(2, 2))


# ---------------------------------------------------------------- backends against the reference


def _compare(mod, args, backend, exact=True):
    expected = relay.evaluate(mod, *args)
    got = transpile.compile(mod, backend=backend)(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    got = got if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if exact:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
        else:  # interpolation may round differently in the last place (contracted multiply-adds)
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6, atol=1e-5)


def _module(params, body):
    from transpile.tvm_compat import IRModule

    mod = IRModule()
    mod["main"] = relay.Function(params, body)
    return mod


@pytest.mark.parametrize("backend", BACKENDS)
def test_nms_pipeline_on_backends(backend):
    data = relay.var("data", shape=BOXES.shape)
    counts = relay.vision.get_valid_counts(data, 0.1, id_index=0, score_index=1)
    picked = relay.vision.non_max_suppression(data, counts[0], counts[2], 3, 0.5, top_k=4)
    boxes = relay.vision.non_max_suppression(
        counts[1], counts[0], counts[2], -1, 0.51, return_indices=False, invalid_to_bottom=True
    )
    scores = relay.var("scores", shape=ACN_SCORES.shape)
    acn_boxes = relay.var("acn_boxes", shape=ACN_BOXES.shape)
    onnx = relay.vision.all_class_non_max_suppression(acn_boxes, scores, 2, 0.5, 0.15)
    tf = relay.vision.all_class_non_max_suppression(acn_boxes, scores, -1, 0.3, 0.0, "tensorflow")
    body = relay.Tuple(
        [counts[0], counts[1], counts[2], picked[0], picked[1], boxes, onnx[0], onnx[1], tf[0], tf[1], tf[2]]
    )
    mod = _module([data, acn_boxes, scores], body)
    _compare(mod, [BOXES, ACN_BOXES, ACN_SCORES], backend)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "tir"])
def test_vision_with_unknown_dimensions(backend):
    data = relay.var("data", shape=(1, Any(), 6))
    counts = relay.vision.get_valid_counts(data, 0.3)
    picked = relay.vision.non_max_suppression(data, counts[0], counts[2], -1, 0.5, force_suppress=True)
    boxes = relay.var("boxes", shape=(Any(), 4))
    box_indices = relay.var("box_indices", shape=(Any(),), dtype="int32")
    image = relay.var("image", shape=IMAGE.shape)
    crop = relay.image.crop_and_resize(image, boxes, box_indices, (3, 2), "NHWC", "bilinear", 1.5)
    mod = _module([data, image, boxes, box_indices], relay.Tuple([counts[0], picked[0], picked[1], crop]))
    crop_boxes = np.array([[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [-0.5, 0.2, 1.5, 0.4]], "float32")
    _compare(mod, [BOXES, IMAGE, crop_boxes, np.array([0, 1, 1], "int32")], backend, exact=False)
    empty = [np.zeros((1, 0, 6), "float32"), IMAGE, np.zeros((0, 4), "float32"), np.zeros((0,), "int32")]
    _compare(mod, empty, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_crop_and_resize_on_backends(backend):
    image = relay.var("image", shape=(2, 3, 4, 5))
    boxes = relay.var("boxes", shape=(3, 4))
    box_indices = relay.var("box_indices", shape=(3,), dtype="int32")
    body = relay.Tuple(
        [
            relay.image.crop_and_resize(image, boxes, box_indices, (3, 4)),
            relay.image.crop_and_resize(
                image,
                boxes,
                box_indices,
                (1, 2),
                method="nearest_neighbor",
                extrapolation_value=-1.0,
                out_dtype="int32",
            ),
        ]
    )
    crop_boxes = np.array([[0, 0, 1, 1], [0.25, 0.1, 0.8, 0.9], [-0.5, 0.3, 1.25, 0.6]], "float32")
    args = [IMAGE.reshape(2, 3, 4, 5), crop_boxes, np.array([1, 0, 1], "int32")]
    _compare(_module([image, boxes, box_indices], body), args, backend, exact=False)


# ---------------------------------------------------------------- roi_align, roi_pool, multibox_prior, yolo_reorg

RAMP = np.tile(np.arange(5, dtype="float32"), (1, 2, 4, 1))  # (1, 2, 4, 5): the value is the x coordinate
GRID = np.arange(20, dtype="float32").reshape(1, 1, 4, 5)  # y * 5 + x


def test_roi_align_samples_a_ramp():
    rois = np.array([[0, 1, 1, 3, 3], [0, -10, 0, -8, 2]], "float32")
    out = run("vision.roi_align", RAMP, rois, pooled_size=(1, 2), spatial_scale=1.0, sample_ratio=2)
    np.testing.assert_allclose(out[0, :, 0], [[1.5, 2.5]] * 2)  # samples at x 1.25, 1.75 | 2.25, 2.75
    assert (out[1] == 0).all()  # more than a pixel left of the image
    out = run("vision.roi_align", RAMP, rois[:1], pooled_size=(1, 2), spatial_scale=1.0, sample_ratio=2, mode="max")
    np.testing.assert_allclose(out[0, 0, 0], [1.75, 2.75])
    nhwc = run(
        "vision.roi_align",
        RAMP.transpose(0, 2, 3, 1),
        rois[:1] * 2,
        pooled_size=(1, 2),
        spatial_scale=0.5,
        layout="NHWC",
    )
    np.testing.assert_allclose(nhwc[0, 0, :, 0], [1.5, 2.5])  # sample_ratio -1: ceil(bin size 1): one sample
    with pytest.raises(ValueError, match="batch index of a roi"):
        run("vision.roi_align", RAMP, np.array([[1, 0, 0, 1, 1]], "float32"), pooled_size=(1, 1), spatial_scale=1.0)


def test_roi_pool_takes_bin_maxima():
    out = run("vision.roi_pool", GRID, np.array([[0, 0, 0, 3, 3]], "float32"), pooled_size=(2, 2), spatial_scale=1.0)
    assert out[0, 0].tolist() == [[6, 8], [16, 18]]
    out = run(
        "vision.roi_pool", GRID, np.array([[0, 20, 20, 30, 30]], "float32"), pooled_size=(1, 1), spatial_scale=1.0
    )
    assert out.tolist() == [[[[0.0]]]]  # the bin is empty once clamped to the image


def test_multibox_prior_known_boxes():
    boxes = run("vision.multibox_prior", np.zeros((1, 1, 2, 2), "float32"), sizes=(0.5,), ratios=(1.0, 4.0))
    assert boxes.shape == (1, 8, 4)
    np.testing.assert_allclose(boxes[0, :3], [[0, 0, 0.5, 0.5], [-0.25, 0.125, 0.75, 0.375], [0.5, 0, 1, 0.5]])
    clipped = run(
        "vision.multibox_prior", np.zeros((1, 1, 2, 2), "float32"), sizes=(0.5,), ratios=(1.0, 4.0), clip=True
    )
    np.testing.assert_allclose(clipped[0, 1], [0, 0.125, 0.75, 0.375])
    assert "sizes and ratios" in rel_error("vision.multibox_prior", T((1, 1, 2, 2)), sizes=())


def test_yolo_reorg_moves_blocks_into_channels():
    out = run("vision.yolo_reorg", np.arange(16, dtype="float32").reshape(1, 4, 2, 2), stride=2)
    assert out.reshape(-1).tolist() == [0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15]
    assert "stride 2 must divide" in rel_error("vision.yolo_reorg", T((1, 4, 3, 2)), stride=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_and_anchor_ops_on_backends(backend):
    data = relay.var("data", shape=(2, 3, 7, 8))
    rois = relay.var("rois", shape=(4, 5))
    nhwc = relay.transpose(data, (0, 2, 3, 1))
    body = relay.Tuple(
        [
            relay.vision.roi_align(data, rois, (3, 2), 0.5, 2),
            relay.vision.roi_align(nhwc, rois, (2, 2), 1.0, -1, "NHWC", "max"),
            relay.vision.roi_pool(data, rois, (3, 3), 0.8),
            relay.vision.multibox_prior(data, (0.3, 0.5), (1.0, 2.0, 0.5), (0.2, -1.0), (0.5, 0.25), True),
            relay.vision.yolo_reorg(relay.reshape(data, (2, 12, 7, 2)), 1),
            relay.vision.yolo_reorg(
                relay.reshape(relay.strided_slice(data, (0, 0, 0, 0), (2, 3, 6, 8)), (2, 4, 6, 6)), 2
            ),
        ]
    )
    values = np.random.default_rng(3).uniform(size=(2, 3, 7, 8)).astype("float32")
    roi_rows = np.array([[0, 1, 1, 5, 6], [1, 0.5, 2, 7.4, 6.2], [1, -2, -1, 3, 9], [0, 3, 3, 3.2, 3.1]], "float32")
    _compare(_module([data, rois], body), [values, roi_rows], backend, exact=False)


def test_multibox_transform_loc_decodes_and_filters():
    cls_prob = np.array([[[0.1, 0.9], [0.7, 0.05], [0.2, 0.05]]], "float32")  # (1, classes 3, anchors 2)
    loc_pred = np.array([[0.5, 0, 0, 0, 0, 0, 0, 0]], "float32")
    anchor = np.array([[[0.1, 0.2, 0.5, 0.6], [0.4, 0.4, 0.8, 1.2]]], "float32")
    rows, count = run("vision.multibox_transform_loc", cls_prob, loc_pred, anchor, threshold=0.1)
    assert count.tolist() == [1]  # anchor 1's best class scores 0.05 < 0.1: background, dropped
    np.testing.assert_allclose(rows[0, 0], [0, 0.7, 0.12, 0.2, 0.52, 0.6], rtol=1e-6)
    assert (rows[0, 1] == -1).all()
    rows, count = run("vision.multibox_transform_loc", cls_prob, loc_pred, anchor, keep_background=True)
    assert count.tolist() == [2] and rows[0, :, 0].tolist() == [1, 0]
    np.testing.assert_allclose(rows[0, 1, 2:], [0.4, 0.4, 0.8, 1.0], rtol=1e-6)  # clipped
    assert "variances must be 4" in rel_error(
        "vision.multibox_transform_loc", T((1, 3, 2)), T((1, 8)), T((1, 2, 4)), variances=(0.1,)
    )


@pytest.mark.parametrize("backend", SLOW_NATIVE)
def test_ssd_decoding_on_backends(backend):
    feature = relay.var("feature", shape=(1, 4, 3, 3))
    cls_prob = relay.var("cls_prob", shape=(1, 3, 18))
    loc_pred = relay.var("loc_pred", shape=(1, 72))
    anchors = relay.vision.multibox_prior(feature, (0.4,), (1.0, 2.0))
    decoded = relay.vision.multibox_transform_loc(cls_prob, loc_pred, anchors, threshold=0.3)
    picked = relay.vision.non_max_suppression(
        decoded[0], decoded[1], relay.const(np.arange(18, dtype="int32")[None]), top_k=5, return_indices=False
    )
    mod = _module([feature, cls_prob, loc_pred], relay.Tuple([decoded[0], decoded[1], picked]))
    rng = np.random.default_rng(11)
    args = [
        np.zeros((1, 4, 3, 3), "float32"),
        rng.uniform(size=(1, 3, 18)).astype("float32"),
        rng.normal(scale=0.5, size=(1, 72)).astype("float32"),
    ]
    _compare(mod, args, backend, exact=False)


def test_text_round_trip():
    data, img, rois = (
        relay.var("data", shape=(1, 5, 6)),
        relay.var("img", shape=(1, 4, 8, 8)),
        relay.var("rois", shape=(2, 5)),
    )
    counts = relay.vision.get_valid_counts(data, 0.5)
    body = relay.Tuple(
        [
            relay.vision.non_max_suppression(data, counts[0], counts[2], top_k=2, iou_threshold=0.3)[0],
            relay.vision.roi_align(img, rois, (2, 2), 0.5, mode="max"),
            relay.vision.roi_pool(img, rois, (2, 2), 0.5),
            relay.image.crop_and_resize(
                img,
                relay.const(np.zeros((2, 4), "float32")),
                relay.const(np.zeros(2, "int32")),
                (3, 3),
                method="nearest_neighbor",
            ),
            relay.vision.multibox_prior(img, (0.5,), (1.0, 2.0), clip=True),
            relay.vision.yolo_reorg(img, 2),
            relay.vision.all_class_non_max_suppression(
                relay.var("b", shape=(1, 5, 4)), relay.var("s", shape=(1, 2, 5)), output_format="tensorflow"
            )[1],
        ]
    )
    mod = _module(relay.analysis.free_vars(body), body)
    assert relay.structural_equal(relay.parse(mod.astext())["main"], mod["main"])


def test_proposal_known_rows():
    cls_prob = np.array([[[[0.7, 0.2]], [[0.3, 0.8]]]], "float32")  # (1, 2 anchors-channels, 1, 2): one anchor
    bbox_pred = np.zeros((1, 4, 1, 2), "float32")
    im_info = np.array([[10, 10, 1]], "float32")
    attrs = dict(
        scales=(1.0,),
        ratios=(1.0,),
        feature_stride=4,
        threshold=0.7,
        rpn_pre_nms_top_n=10,
        rpn_post_nms_top_n=5,
        rpn_min_size=1,
    )
    rows = run("vision.proposal", cls_prob, bbox_pred, im_info, **attrs)
    # anchor [0, 0, 3, 3] on cells x 0 and 4; the better cell first, then the kept boxes repeat
    assert rows.tolist() == [[0, 4, 0, 7, 3], [0, 0, 0, 3, 3]] * 2 + [[0, 4, 0, 7, 3]]
    rows = run("vision.proposal", cls_prob, bbox_pred, im_info, **{**attrs, "rpn_min_size": 5})
    assert rows[:2].tolist() == [[0, -2.5, -2.5, 5.5, 5.5], [0, 1.5, -2.5, 9.5, 5.5]]  # too small: grown, score -1
    message = rel_error("vision.proposal", T((1, 4, 1, 2)), T((1, 4, 1, 2)), T((1, 3)), **attrs)
    assert "2 and bbox_pred 4 channels per anchor" in message


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b == "python"])  # no TE lowering yet
def test_proposal_on_backends(backend):
    rng = np.random.default_rng(5)
    cls_prob = relay.var("cls_prob", shape=(2, 12, 3, 4))
    bbox_pred = relay.var("bbox_pred", shape=(2, 24, 3, 4))
    im_info = relay.var("im_info", shape=(2, 3))
    body = relay.Tuple(
        [
            relay.vision.proposal(cls_prob, bbox_pred, im_info, (2.0, 4.0), (0.5, 1.0, 2.0), 16, 0.6, 50, 20, 4, False),
            relay.vision.proposal(cls_prob, bbox_pred, im_info, (2.0, 4.0), (0.5, 1.0, 2.0), 16, 0.5, -1, 7, 4, True),
        ]
    )
    args = [
        rng.uniform(size=(2, 12, 3, 4)).astype("float32"),
        rng.normal(scale=0.3, size=(2, 24, 3, 4)).astype("float32"),
        np.array([[40, 60, 1.0], [30, 50, 0.5]], "float32"),
    ]
    _compare(_module([cls_prob, bbox_pred, im_info], body), args, backend, exact=False)
