"""ONNX converters of quantization, losses, transformer, signal, detection and the explained rejections.

Each case builds a one-node model, runs it through from_onnx + transpile.compile and compares
with onnx's ReferenceEvaluator (or onnxruntime where the reference has no implementation). The
ONNX wheel's own node cases of these operators run at the end, on the interpreter: they must
pass unless an explained limitation (a type Relay lacks, a rejected operator) applies.
Inputs named in `consts` become initializers (constants at import); `feeds` are graph inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import transpile  # noqa: E402
from transpile.relay.frontend import UnsupportedOperatorsError, from_onnx  # noqa: E402

RNG = np.random.default_rng(7)


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _model(nodes, feeds, consts, outputs, opset):
    inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for name, v in feeds.items()
    ]
    initializers = [onnx.numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items()]
    infos = [helper.make_value_info(name, onnx.TypeProto()) for name in outputs]
    graph = helper.make_graph(nodes, "g", inputs, infos, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def check(node, feeds, consts=None, opset=23, judge="onnx", backend="interpreter", rtol=1e-5, atol=1e-5):
    """Import the one-node model, run it on `feeds`, compare every output with the judge's."""
    consts = consts or {}
    outputs = [o for o in node.output if o]
    model = _model([node], feeds, consts, outputs, opset)
    if judge == "ort":
        ort = pytest.importorskip("onnxruntime")
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    else:
        expected = ReferenceEvaluator(model).run(None, feeds)
    mod, _ = from_onnx(model)
    result = transpile.compile(mod, backend=backend)(*feeds.values())
    got = [result] if len(outputs) == 1 else list(result)
    assert len(got) == len(expected)
    for one, other in zip(got, expected):
        one, other = np.asarray(one), np.asarray(other)
        assert one.shape == other.shape, (one.shape, other.shape)
        assert one.dtype == other.dtype, (one.dtype, other.dtype)
        if other.dtype.kind == "f":
            np.testing.assert_allclose(one, other, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(one, other)
    return mod


def rejected(node, feeds, consts=None, opset=23) -> str:
    """The unsupported-operator message of importing the one-node model."""
    with pytest.raises(UnsupportedOperatorsError) as info:
        from_onnx(_model([node], feeds, consts or {}, [o for o in node.output if o], opset))
    return str(info.value)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# ---------------------------------------------------------------------- quantization


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([-300.0, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 127.4, 300.0], "float32")
    check(node("QuantizeLinear", ["x", "s", "z"]), {"x": x}, {"s": np.float32(1.0), "z": np.int8(0)}, opset=10)
    check(node("QuantizeLinear", ["x", "s", "z"]), {"x": x}, {"s": np.float32(2.0), "z": np.uint8(100)}, opset=13)


@pytest.mark.parametrize("axis", [1, -1])
def test_quantize_per_axis(axis):
    x = _f32(2, 3, 4) * 50
    channels = x.shape[axis]
    consts = {"s": np.linspace(0.5, 2, channels).astype("float32"), "z": np.arange(channels).astype("int16") * 7}
    check(node("QuantizeLinear", ["x", "s", "z"], axis=axis), {"x": x}, consts, opset=21)
    check(
        node("DequantizeLinear", ["q", "s", "z"], axis=axis),
        {"q": RNG.integers(-500, 500, x.shape).astype("int16")},
        consts,
        opset=21,
    )


def test_quantize_blocked_with_a_partial_last_block():
    x = _f32(3, 7) * 20
    scale = np.abs(_f32(3, 3)) + 0.1  # blocks of 3 over 7 columns: the last block has one column
    zero = RNG.integers(0, 20, (3, 3)).astype("uint16")
    check(node("QuantizeLinear", ["x", "s", "z"], axis=1, block_size=3), {"x": x}, {"s": scale, "z": zero}, opset=21)
    q = RNG.integers(0, 60000, (3, 7)).astype("uint16")
    check(node("DequantizeLinear", ["q", "s", "z"], axis=1, block_size=3), {"q": q}, {"s": scale, "z": zero}, opset=21)


def test_quantize_output_dtype_without_zero_point_and_half_inputs():
    x = (_f32(4, 5) * 100).astype("float16")
    check(
        node("QuantizeLinear", ["x", "s"], output_dtype=TensorProto.INT8), {"x": x}, {"s": np.float16(0.75)}, opset=21
    )
    check(node("QuantizeLinear", ["x", "s"]), {"x": x}, {"s": np.float32(3.0)}, opset=19)


def test_dequantize_int32_and_output_dtype():
    q = RNG.integers(-(2**30), 2**30, (3, 4)).astype("int32")
    check(node("DequantizeLinear", ["q", "s"]), {"q": q}, {"s": np.float32(1e-3)}, opset=19, rtol=1e-6)
    q8 = RNG.integers(0, 255, (2, 3)).astype("uint8")
    consts = {"s": np.float32(0.5), "z": np.uint8(128)}
    check(node("DequantizeLinear", ["q", "s", "z"], output_dtype=TensorProto.FLOAT16), {"q": q8}, consts, opset=23)


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.5], [-3.0, -0.5, -7.25], [0.0, 0.0, 0.0], [-1.0, 0.3, 254.0]])
def test_dynamic_quantize_linear(values):
    x = np.array(values, "float32").reshape(1, 3)
    check(node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"]), {"x": x}, opset=11)


def test_qdq_convolution_against_onnxruntime():
    """The QDQ form of a quantized model: int8 weights dequantized, activations quantized and back."""
    weight = RNG.integers(-127, 127, (4, 3, 3, 3)).astype("int8")
    nodes = [
        node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        node("DequantizeLinear", ["w", "ws"], ["wd"], axis=0),
        node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
        node("QuantizeLinear", ["c", "ys", "yz"], ["cq"]),
        node("DequantizeLinear", ["cq", "ys", "yz"], ["y"]),
    ]
    consts = {
        "xs": np.float32(0.02),
        "xz": np.uint8(128),
        "w": weight,
        "ws": (np.abs(_f32(4)) * 0.01 + 0.001).astype("float32"),
        "ys": np.float32(0.05),
        "yz": np.uint8(120),
    }
    feeds = {"x": _f32(1, 3, 6, 6)}
    model = _model(nodes, feeds, consts, ["y"], 13)
    ort = pytest.importorskip("onnxruntime")
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mod, _ = from_onnx(model)
    got = transpile.compile(mod, backend="interpreter")(feeds["x"])
    # One quantization step apart at most, where the float convolution lands on a rounding tie.
    np.testing.assert_allclose(got, expected, atol=0.05 + 1e-6)
    assert np.mean(got == expected) > 0.95


def test_float8_quantization_is_rejected_with_its_reason():
    message = rejected(
        node("QuantizeLinear", ["x", "s"], output_dtype=TensorProto.FLOAT8E4M3FN), {"x": _f32(3)}, {"s": np.float32(1)}
    )
    assert "FLOAT8E4M3FN" in message and "QuantizeLinear" in message


# ---------------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_negative_log_likelihood_loss(reduction, weighted):
    x = _f32(3, 5, 2, 2)
    target = RNG.integers(0, 5, (3, 2, 2)).astype("int32")
    target[0, 0, 0] = -1  # ignored, and out of range
    consts = {"w": np.abs(_f32(5))} if weighted else {}
    inputs = ["x", "t", "w"] if weighted else ["x", "t"]
    # onnxruntime: the reference forgets ignore_index=-1 when averaging without weights.
    loss = node("NegativeLogLikelihoodLoss", inputs, reduction=reduction, ignore_index=-1)
    check(loss, {"x": x, "t": target}, consts, opset=13, judge="ort")


def test_softmax_cross_entropy_with_log_prob_and_no_ignore_index():
    sce = node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss", "log_prob"], reduction="mean")
    check(sce, {"x": _f32(4, 6), "t": RNG.integers(0, 6, (4,)).astype("int64")}, opset=12)
    sce_sum = node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["loss"], reduction="sum", ignore_index=2)
    check(
        sce_sum, {"x": _f32(2, 3, 5), "t": RNG.integers(0, 3, (2, 5)).astype("int64")}, {"w": np.abs(_f32(3))}, opset=13
    )


# ---------------------------------------------------------------------- transformer operators


def test_attention_3d_gqa_with_past_short_float_mask_and_scores():
    attention = node(
        "Attention",
        ["q", "k", "v", "mask", "pk", "pv"],
        ["y", "present_k", "present_v", "scores"],
        q_num_heads=4,
        kv_num_heads=2,
        softcap=3.0,
        qk_matmul_output_mode=2,
    )
    feeds = {
        "q": _f32(2, 3, 4 * 8),
        "k": _f32(2, 3, 2 * 8),
        "v": _f32(2, 3, 2 * 6),
        "mask": _f32(3, 4),  # 4 of the 2 + 3 keys: the last key is hidden
        "pk": _f32(2, 2, 2, 8),
        "pv": _f32(2, 2, 2, 6),
    }
    check(attention, feeds, opset=23, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", [0, 1, 3])
def test_attention_4d_bool_mask_causal_softmax_precision(mode):
    mask = RNG.random((2, 1, 4, 6)) > 0.3
    mask[0, 0, 1] = False  # a row with no visible key gives zeros
    attention = node(
        "Attention",
        ["q", "k", "v", "mask"],
        ["y", "", "", "scores"],
        is_causal=1,
        scale=0.3,
        softmax_precision=TensorProto.DOUBLE,
        qk_matmul_output_mode=mode,
    )
    check(attention, {"q": _f32(2, 3, 4, 5), "k": _f32(2, 3, 6, 5), "v": _f32(2, 3, 6, 7), "mask": mask}, rtol=1e-4)


def test_attention_raw_scores_under_softcap_against_onnxruntime():
    attention = node("Attention", ["q", "k", "v"], ["y", "", "", "scores"], softcap=1.0, qk_matmul_output_mode=0)
    feeds = {name: _f32(1, 2, 3, 4) * 4 for name in ("q", "k", "v")}
    check(attention, feeds, judge="ort", rtol=1e-4)


def test_attention_external_cache_and_windows():
    attention = node("Attention", ["q", "k", "v", "", "", "", "n"], is_causal=1, left_window_size=2)
    feeds = {"q": _f32(2, 2, 3, 4), "k": _f32(2, 2, 7, 4), "v": _f32(2, 2, 7, 4), "n": np.array([5, 2], "int64")}
    check(attention, feeds, opset=25, rtol=1e-4)
    window = node("Attention", ["q", "k", "v"], left_window_size=1, right_window_size=1)
    check(window, {"q": _f32(1, 2, 5, 4), "k": _f32(1, 2, 5, 4), "v": _f32(1, 2, 5, 3)}, opset=25, rtol=1e-4)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_partial_with_positions(interleaved):
    rotary = node(
        "RotaryEmbedding", ["x", "cos", "sin", "pos"], num_heads=2, rotary_embedding_dim=4, interleaved=interleaved
    )
    feeds = {"x": _f32(2, 3, 2 * 6), "pos": RNG.integers(0, 10, (2, 3)).astype("int64")}
    check(rotary, feeds, {"cos": _f32(10, 2), "sin": _f32(10, 2)}, opset=23)


def test_tensor_scatter_swiglu_and_causal_conv():
    scatter = node("TensorScatter", ["cache", "update", "at"], ["y"], axis=2, mode="circular")
    feeds = {"cache": _f32(2, 3, 5, 4), "update": _f32(2, 3, 3, 4), "at": np.array([1, 4], "int64")}
    check(scatter, feeds, opset=24)
    check(node("SwiGLU", ["a", "b"], alpha=1.7), {"a": _f32(3, 4), "b": _f32(3, 4)}, opset=28)
    conv = node("CausalConvWithState", ["x", "w", "", "state"], ["y", "next"], activation="silu")
    check(conv, {"x": _f32(2, 3, 5), "state": _f32(2, 3, 3)}, {"w": _f32(3, 1, 4)}, opset=27, rtol=1e-4)


def test_linear_attention_delta_rule_with_past_state():
    attention = node(
        "LinearAttention",
        ["q", "k", "v", "s", "", "beta"],
        ["y", "state"],
        q_num_heads=4,
        kv_num_heads=2,
        update_rule="delta",
    )
    feeds = {
        "q": _f32(1, 4, 4 * 3),
        "k": _f32(1, 4, 2 * 3) * 0.5,
        "v": _f32(1, 4, 2 * 2),
        "s": _f32(1, 2, 3, 2),
        "beta": RNG.random((1, 4, 2)).astype("float32"),
    }
    check(attention, feeds, opset=27, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- signal


@pytest.mark.parametrize(
    "shape, attrs, length",
    [
        ((2, 8, 3, 1), dict(axis=1), 11),  # real, zero-padded
        ((2, 8, 3, 2), dict(axis=2), 2),  # complex, truncated
        ((1, 5, 2), dict(axis=1, onesided=1), None),  # rfft of an odd length
        ((1, 4, 2), dict(axis=1, inverse=1), None),
        ((3, 5, 2), dict(axis=1, inverse=1, onesided=1), 9),  # irfft to an odd length
    ],
)
def test_dft_opset17(shape, attrs, length):
    inputs = ["x", "n"] if length else ["x"]
    consts = {"n": np.array(length, "int64")} if length else {}
    check(node("DFT", inputs, **attrs), {"x": _f32(*shape)}, consts, opset=17, rtol=1e-4, atol=1e-4)


def test_stft_with_run_time_window_and_complex_signal():
    stft = node("STFT", ["x", "step", "w"], onesided=0)
    check(stft, {"x": _f32(2, 20, 2), "w": _f32(6)}, {"step": np.array(3, "int64")}, opset=17, rtol=1e-4, atol=1e-4)


def test_mel_weight_matrix_folds_at_import():
    mel = node("MelWeightMatrix", ["bins", "n", "rate", "low", "high"], output_datatype=TensorProto.DOUBLE)
    consts = {
        "bins": np.array(8, "int64"),
        "n": np.array(32, "int64"),
        "rate": np.array(16000, "int64"),
        "low": np.array(100, "float32"),
        "high": np.array(6000, "float32"),
    }
    model = _model([mel], {}, consts, ["y"], 17)
    mod, _ = from_onnx(model)
    np.testing.assert_allclose(
        transpile.compile(mod, backend="interpreter")(), ReferenceEvaluator(model).run(None, {})[0]
    )


# ---------------------------------------------------------------------- detection, columns, Det, TfIdf


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_adaptive_grid_with_constant_rois(mode):
    rois = np.array([[0.5, 1.0, 7.0, 6.5], [2.0, 2.0, 2.2, 9.0], [0.0, 0.0, 9.0, 9.0]], "float32")
    roi = node("RoiAlign", ["x", "rois", "bi"], mode=mode, output_height=2, output_width=3, spatial_scale=0.9)
    check(roi, {"x": _f32(2, 3, 8, 9)}, {"rois": rois, "bi": np.array([1, 0, 1], "int64")}, opset=16, rtol=1e-4)


def test_roi_align_opset10_and_rejected_adaptive_grid():
    roi = node("RoiAlign", ["x", "rois", "bi"], output_height=3, output_width=2, sampling_ratio=2)
    rois = np.abs(_f32(4, 4)) * 3
    rois[:, 2:] += rois[:, :2]
    # onnxruntime: opset 10 has no coordinate_transformation_mode (its behaviour is output_half_pixel).
    check(roi, {"x": _f32(1, 2, 7, 7), "rois": rois, "bi": np.zeros(4, "int64")}, opset=10, judge="ort", rtol=1e-4)
    adaptive = node("RoiAlign", ["x", "rois", "bi"])
    message = rejected(adaptive, {"x": _f32(1, 2, 7, 7), "rois": rois, "bi": np.zeros(4, "int64")})
    assert "sampling_ratio=0" in message


def test_max_roi_pool_against_onnxruntime():
    rois = np.array([[0, 1.2, 0.4, 5.6, 4.5], [1, 0, 0, 9, 9], [1, 3, 5, 3, 5], [0, -2.5, 2.5, 1.5, 20]], "float32")
    pool = node("MaxRoiPool", ["x", "rois"], pooled_shape=[3, 2], spatial_scale=0.5)
    check(pool, {"x": _f32(2, 3, 6, 5), "rois": rois}, opset=1, judge="ort")


def test_non_max_suppression_folds_constant_inputs_and_rejects_run_time_ones():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 10, 1, 11], [1, 1, 0, 0], [0, 100, 1, 101]]], "float32")
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.3], [0.1, 0.8, 0.85, 0.2, 0.9]]], "float32")
    consts = {
        "b": boxes,
        "s": scores,
        "k": np.array([2], "int64"),
        "iou": np.array([0.5], "float32"),
        "t": np.array([0.25], "float32"),
    }
    nms = node("NonMaxSuppression", ["b", "s", "k", "iou", "t"])
    model = _model([nms], {}, consts, ["y"], 11)
    mod, _ = from_onnx(model)
    np.testing.assert_array_equal(
        transpile.compile(mod, backend="interpreter")(), ReferenceEvaluator(model).run(None, {})[0]
    )
    message = rejected(node("NonMaxSuppression", ["b", "s"]), {"b": boxes, "s": scores}, opset=11)
    assert "data-dependent output shape" in message


def test_unique_folds_constant_inputs():
    table = np.array([[2, 1, 2], [3, 1, 3], [2, 1, 2]], "float32")
    # (The reference orders unsorted results along axis 0 of the unflattened input: 1-D only there.)
    for x, attrs in (
        (np.array([4, 1, 4, 0, 1], "int64"), dict(sorted=0)),
        (table, dict(axis=1)),
        (table, dict(axis=-1)),
    ):
        unique = node("Unique", ["x"], ["y", "first", "inverse", "counts"], **attrs)
        model = _model([unique], {}, {"x": x}, ["y", "first", "inverse", "counts"], 11)
        mod, _ = from_onnx(model)
        for got, expected in zip(
            transpile.compile(mod, backend="interpreter")(), ReferenceEvaluator(model).run(None, {})
        ):
            np.testing.assert_array_equal(got, expected)
    assert "data-dependent" in rejected(node("Unique", ["x"]), {"x": _f32(5)}, opset=11)


def test_col2im_3d_with_strides_pads_and_dilations():
    col2im = node("Col2Im", ["x", "image", "block"], strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1], dilations=[1, 2, 1])
    image, block = np.array([5, 6, 5], "int64"), np.array([2, 2, 3], "int64")
    # blocks per axis: (5+1-2)//2+1 = 3, (6+1-3)//1+1 = 5, (5+1-3)//2+1 = 2
    check(col2im, {"x": _f32(2, 2 * 12, 3 * 5 * 2)}, {"image": image, "block": block}, opset=18)


def test_deform_conv_groups_offset_groups_and_mask():
    deform = node(
        "DeformConv",
        ["x", "w", "off", "b", "mask"],
        group=2,
        offset_group=2,
        strides=[2, 1],
        pads=[1, 1, 1, 0],
        dilations=[1, 2],
    )
    # out: h (6 + 2 - 3) // 2 + 1 = 3, w (5 + 1 - 3) // 1 + 1 = 4
    feeds = {
        "x": _f32(1, 4, 6, 5),
        "off": _f32(1, 2 * 3 * 2 * 2, 3, 4),
        "mask": RNG.random((1, 2 * 3 * 2, 3, 4)).astype("float32"),
    }
    check(deform, feeds, {"w": _f32(6, 2, 3, 2), "b": _f32(6)}, opset=22, rtol=1e-4, atol=1e-5)


def test_det_by_elimination_and_singular_matrices():
    x = _f32(3, 5, 5)
    x[1, :, 2] = 0  # a zero column: determinant 0 without NaN
    x[2] = x[2][[1, 0, 3, 2, 4]]
    mod = check(node("Det", ["x"]), {"x": x}, opset=11, rtol=1e-4, atol=1e-5)
    assert "argmax" in mod.astext()
    check(node("Det", ["x"]), {"x": _f32(2, 3, 3, 3)}, opset=11, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "mode, weights, judge",
    [
        ("IDF", None, "ort"),
        ("IDF", [0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 0.75], "onnx"),
        ("TFIDF", [0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 0.75], "onnx"),
    ],
)
def test_tf_idf_vectorizer_modes(mode, weights, judge):
    attrs = dict(
        mode=mode,
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=2,
        ngram_counts=[0, 4],
        ngram_indexes=[0, 1, 2, 3, 4, 5, 6],
        pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
    )
    if weights:
        attrs["weights"] = weights
    x = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], "int32")
    check(node("TfIdfVectorizer", ["x"], **attrs), {"x": x}, opset=9, judge=judge)


def test_random_and_string_operators_are_rejected_with_their_reasons():
    message = rejected(node("RandomNormalLike", ["x"]), {"x": _f32(3)}, opset=1)
    assert "RandomNormalLike" in message and "random-number generator" in message
    message = rejected(node("Bernoulli", ["x"]), {"x": _f32(3)}, opset=15)
    assert "non-deterministic" in message
    # Listed with the operators nobody converts, before any conversion.
    nodes = [
        node("RandomUniformLike", ["x"], ["r"]),
        node("NoSuchOp", ["r"], ["y"]),
        node("ImageDecoder", ["b"], ["i"]),
    ]
    model = _model(nodes, {"x": _f32(3), "b": np.zeros(4, "uint8")}, {}, ["y", "i"], 20)
    with pytest.raises(UnsupportedOperatorsError) as info:
        from_onnx(model)
    assert [u.op for u in info.value.unsupported] == ["RandomUniformLike", "NoSuchOp", "ImageDecoder"]
    assert "random-number generator" in info.value.unsupported[0].detail
    assert "image codecs" in info.value.unsupported[2].detail


# ---------------------------------------------------------------------- compiled (cpp)


def test_cpp_attention_and_quantization():
    attention = node("Attention", ["q", "k", "v"], is_causal=1)
    check(attention, {"q": _f32(1, 2, 4, 8), "k": _f32(1, 2, 4, 8), "v": _f32(1, 2, 4, 8)}, backend="cpp", rtol=1e-4)
    consts = {"s": np.array([0.1, 0.2, 0.05], "float32"), "z": np.array([3, -4, 0], "int8")}
    check(node("QuantizeLinear", ["x", "s", "z"], axis=1), {"x": _f32(2, 3, 4)}, consts, opset=13, backend="cpp")


def test_cpp_dft_and_roi_align():
    check(node("DFT", ["x"], onesided=1), {"x": _f32(2, 16, 1)}, opset=20, backend="cpp", rtol=1e-4, atol=1e-4)
    rois = np.array([[0.5, 1.0, 7.0, 6.5], [2.0, 2.0, 4.2, 6.0]], "float32")
    roi = node("RoiAlign", ["x", "rois", "bi"], output_height=2, output_width=2, sampling_ratio=2)
    check(roi, {"x": _f32(1, 2, 8, 8), "rois": rois, "bi": np.zeros(2, "int64")}, opset=16, backend="cpp", rtol=1e-4)


# ---------------------------------------------------------------------- the ONNX wheel's node cases

_MINE = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "Attention", "RotaryEmbedding", "SwiGLU", "TensorScatter", "LinearAttention",
    "CausalConvWithState", "DFT", "STFT", "MelWeightMatrix", "RoiAlign", "MaxRoiPool", "NonMaxSuppression", "Col2Im",
    "DeformConv", "Det", "TfIdfVectorizer", "Unique", "Bernoulli", "Multinomial", "RandomNormal", "RandomUniform",
    "RandomNormalLike", "RandomUniformLike", "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch",
    "ImageDecoder",
}  # fmt: skip
# The expected outputs are complex64 FFT rounding noise (1.9e-7) where the exact value is ~0, under atol 1e-7:
# even the float64 inverse DFT of the stored input misses them by 1.5e-6.
_NOISY_EXPECTATIONS = {"test_dft_inverse", "test_dft_inverse_opset19"}


def _node_cases():
    suites = pytest.importorskip("transpile.testing.onnx_suites")
    cases = []
    for case in suites.suite_cases("node"):
        model, _ = case.load()
        if {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")} & _MINE:
            cases.append(case)
    return suites, cases


def test_onnx_node_cases_of_these_operators():
    suites, cases = _node_cases()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [suites.run_case(case, "interpreter") for case in cases]
    counts = {
        status: sum(r.status == status for r in results) for status in ("passed", "expected", "unsupported", "failed")
    }
    assert counts["passed"] >= 260, counts
    for result in results:
        if result.status == "unsupported":  # only the explained rejections
            assert all(": " in part for part in result.reason.split("unsupported: ", 1)[1].split("; ")), result.reason
        elif result.status == "failed":
            assert result.case in _NOISY_EXPECTATIONS, (result.case, result.reason)
