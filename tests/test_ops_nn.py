"""nn activations, dense/matmul, bias_add, norms, dropout, pad, upsampling; corpus attribute coverage."""

from __future__ import annotations

import re

import numpy as np
import pytest

from test_ops_nn_support import Any, T, TupleType, infer, run
from transpile.relay.op import OpPattern, RelationError, registry

rng = np.random.default_rng(11)


def rand(*shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# schemas and patterns


@pytest.mark.parametrize(
    "name, attrs, pattern",
    [
        ("nn.relu", (), OpPattern.ELEMWISE),
        ("nn.leaky_relu", ("alpha",), OpPattern.ELEMWISE),
        ("nn.prelu", ("axis",), OpPattern.BROADCAST),
        ("nn.softmax", ("axis",), OpPattern.OPAQUE),
        ("nn.log_softmax", ("axis",), OpPattern.OPAQUE),
        ("nn.dense", ("units", "out_dtype"), OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.matmul", ("units", "out_dtype", "transpose_a", "transpose_b"), OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.batch_matmul", ("out_dtype", "transpose_a", "transpose_b"), OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.bias_add", ("axis",), OpPattern.BROADCAST),
        ("nn.batch_flatten", (), OpPattern.INJECTIVE),
        ("nn.batch_norm", ("axis", "epsilon", "center", "scale"), OpPattern.OPAQUE),
        ("nn.layer_norm", ("axis", "epsilon", "center", "scale"), OpPattern.OPAQUE),
        ("nn.dropout", ("rate",), OpPattern.OPAQUE),
        ("nn.pad", ("pad_width", "pad_mode"), OpPattern.INJECTIVE),
        ("nn.upsampling", ("scale_h", "scale_w", "layout", "method", "align_corners"), OpPattern.INJECTIVE),
    ],
)
def test_schema_and_pattern(name, attrs, pattern):
    opdef = registry.get(name)
    assert opdef.attr_names == attrs
    assert opdef.pattern == pattern


def test_defaults_follow_the_cpp_attrs_and_the_builder_follows_python():
    from transpile.relay.expr import var

    x = var("x", shape=(2, 3, 4))
    assert registry.get("nn.batch_matmul").defaults()["transpose_b"] is False
    assert registry.get("nn.batch_matmul")(x, x).attrs.transpose_b is True
    assert registry.get("nn.leaky_relu").defaults()["alpha"] == 0.25
    assert registry.get("nn.leaky_relu")(x).attrs.alpha == 0.01
    assert "units" not in registry.get("nn.dense").defaults()  # always printed, as `units=None`
    assert registry.get("nn.dense")(x, x).attrs.units is None
    pad = registry.get("nn.pad")(x, ((0, 0), (1, 1), (2, 2)))
    assert pad.attrs.pad_width == ((0, 0), (1, 1), (2, 2)) and int(pad.args[1].data) == 0
    dropout = registry.get("nn.dropout")(x, 0.2)
    assert dropout.index == 0 and dropout.tuple_value.attrs.rate == 0.2


def _call_attribute_names(text: str, start: int) -> list[str]:
    """Attribute names written at nesting depth 1 of the call whose '(' is at text[start]."""
    depth, names, i = 0, [], start
    while i < len(text):
        char = text[i]
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if char == '"':
            i = text.index('"', i + 1) + 1
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return names
        elif depth == 1:
            match = re.match(r"([a-z_]+)=", text[i:])
            if match and not text[i - 1].isalnum() and text[i - 1] != "_":
                names.append(match.group(1))
                i += match.end()
                continue
        i += 1
    return names


def test_every_corpus_nn_attribute_is_in_the_schema(corpus_dir):
    """Unknown attribute names are parse errors: every one the corpus writes must exist."""
    seen = 0
    for path in sorted(corpus_dir.rglob("*.relay")):
        text = path.read_text()
        for match in re.finditer(r"\b(nn\.[a-z_0-9]+)\(", text):
            opdef = registry.lookup(match.group(1))
            if opdef is None:
                continue
            for attr in _call_attribute_names(text, match.end() - 1):
                assert attr in opdef.attr_names, f"{path.name}: {opdef.name} has no attribute {attr}"
                seen += 1
    assert seen > 700


# ---------------------------------------------------------------------------------------------
# activations


def test_relu_and_leaky_relu():
    x = np.array([-2.0, -0.5, 0.0, 3.0], dtype="float32")
    np.testing.assert_array_equal(run("nn.relu", x), [0, 0, 0, 3])
    np.testing.assert_allclose(run("nn.leaky_relu", x, alpha=0.1), [-0.2, -0.05, 0, 3], rtol=1e-6)
    assert run("nn.relu", x.astype("float16")).dtype == np.float16
    assert infer("nn.relu", [T(Any(), 3, dtype="int8")]) == T(Any(), 3, dtype="int8")


def test_prelu():
    x = np.array([[[-1.0, 2.0]], [[-3.0, -4.0]]], dtype="float32").transpose(1, 0, 2)  # (1, 2, 2)
    alpha = np.array([0.5, 0.25], dtype="float32")
    np.testing.assert_allclose(run("nn.prelu", x, alpha), [[[-0.5, 2.0], [-0.75, -1.0]]])
    with pytest.raises(RelationError, match=r"alpha must be Tensor\[\(2\), float32\]"):
        infer("nn.prelu", [T(1, 2, 2), T(3)])


def test_softmax_and_log_softmax():
    x = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]], dtype="float32")
    e = np.exp([1.0, 2.0, 3.0])
    expected = np.array([e / e.sum(), [1 / 3] * 3])
    np.testing.assert_allclose(run("nn.softmax", x), expected, rtol=1e-6)
    np.testing.assert_allclose(run("nn.log_softmax", x), np.log(expected), rtol=1e-5)
    np.testing.assert_allclose(run("nn.softmax", x.T, axis=0), expected.T, rtol=1e-6)
    with pytest.raises(RelationError, match="axis 2 is out of range"):
        infer("nn.softmax", [T(2, 3)], axis=2)


# ---------------------------------------------------------------------------------------------
# dense, matmul, batch_matmul, bias_add, batch_flatten


@pytest.mark.parametrize(
    "op, types, given, expected",
    [
        ("nn.dense", [T(1, 784), T(256, 784)], dict(units=None), T(1, 256)),
        ("nn.dense", [T(1, 784), T(256, 784)], dict(units=256), T(1, 256)),
        (
            "nn.dense",
            [T(50, 32, 768, dtype="float16"), T(2304, 768, dtype="float16")],
            dict(units=2304),
            T(50, 32, 2304, dtype="float16"),
        ),
        (
            "nn.dense",
            [T(1, 8, dtype="int8"), T(4, 8, dtype="int8")],
            dict(units=None, out_dtype="int32"),
            T(1, 4, dtype="int32"),
        ),
        ("nn.dense", [T(Any(), 8), T(4, 8)], dict(units=None), T(Any(), 4)),
        ("nn.matmul", [T(3, 5), T(5, 2)], dict(units=None), T(3, 2)),
        ("nn.matmul", [T(5, 3), T(2, 5)], dict(units=None, transpose_a=True, transpose_b=True), T(3, 2)),
        ("nn.batch_matmul", [T(4, 3, 5), T(4, 2, 5)], dict(transpose_b=True), T(4, 3, 2)),
        ("nn.batch_matmul", [T(1, 3, 5), T(4, 5, 2)], {}, T(4, 3, 2)),
        (
            "nn.batch_matmul",
            [T(4, 5, 3), T(4, 5, 2)],
            dict(transpose_a=True, out_dtype="float16"),
            T(4, 3, 2, dtype="float16"),
        ),
        ("nn.bias_add", [T(1, 10, 12, 12), T(10)], {}, T(1, 10, 12, 12)),
        ("nn.bias_add", [T(1, 12, 10), T(10)], dict(axis=-1), T(1, 12, 10)),
        ("nn.batch_flatten", [T(2, 3, 4, 5)], {}, T(2, 60)),
        ("nn.batch_flatten", [T(2, Any(), 5)], {}, T(2, Any())),
    ],
)
def test_linear_relations(op, types, given, expected):
    assert infer(op, types, **given) == expected


@pytest.mark.parametrize(
    "op, types, given, message",
    [
        (
            "nn.dense",
            [T(1, 784), T(256, 512)],
            dict(units=None),
            r"nn.dense: input Tensor\[\(1, 784\), float32\] and weight Tensor\[\(256, 512\), float32\] disagree on the reduction dimension \(784 vs 512\)",
        ),
        (
            "nn.dense",
            [T(1, 784), T(256, 784)],
            dict(units=128),
            r"does not match units=128 .* expected shape \(128, 784\)",
        ),
        ("nn.dense", [T(1, 784), T(256, 784, 1)], dict(units=None), r"weight must have rank 2"),
        (
            "nn.batch_matmul",
            [T(4, 3, 5), T(4, 5, 2)],
            dict(transpose_b=True),
            r"disagree on the reduction dimension \(5 vs 2\)",
        ),
        ("nn.batch_matmul", [T(4, 3, 5), T(3, 5, 2)], {}, r"batch dimensions .* do not match \(4 vs 3\)"),
        ("nn.batch_matmul", [T(3, 5), T(3, 5, 2)], {}, r"both arguments must have rank 3"),
        ("nn.bias_add", [T(1, 10, 12), T(12)], {}, r"bias must be Tensor\[\(10\), float32\] to match axis 1"),
        ("nn.bias_add", [T(1, 10), T(10, dtype="float16")], {}, r"bias must be Tensor\[\(10\), float32\]"),
        ("nn.bias_add", [T(1, 10), T(10)], dict(axis=2), r"axis 2 is out of range"),
    ],
)
def test_linear_relation_errors(op, types, given, message):
    with pytest.raises(RelationError, match=message):
        infer(op, types, **given)


def test_dense_units_is_required_like_tvm():
    # DenseAttrs.units has no C++ default: TVM rejected text without it and printed `units=None`.
    with pytest.raises(ValueError, match="requires attribute 'units'"):
        infer("nn.dense", [T(1, 4), T(2, 4)])


def test_dense_matmul_batch_matmul_values():
    x = np.array([[1.0, 2.0, 3.0]], dtype="float32")
    w = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype="float32")
    np.testing.assert_array_equal(run("nn.dense", x, w, units=None), [[1.0, 6.0]])
    np.testing.assert_array_equal(run("nn.matmul", x, w.T, units=2), [[1.0, 6.0]])
    a, b = rand(2, 3, 4), rand(2, 5, 4)
    expected = np.stack([a[i] @ b[i].T for i in range(2)])
    np.testing.assert_allclose(run("nn.batch_matmul", a, b, transpose_b=True), expected, rtol=1e-5, atol=1e-6)
    broadcast = run("nn.batch_matmul", a[:1], b.transpose(0, 2, 1))
    np.testing.assert_allclose(broadcast, np.stack([a[0] @ b[i].T for i in range(2)]), rtol=1e-5, atol=1e-6)
    i8 = np.full((1, 4), 100, dtype="int8")
    assert run("nn.dense", i8, i8, units=None, out_dtype="int32")[0, 0] == 40000


def test_dense_float16_accuracy():
    x = np.full((1, 2048), 0.01, dtype="float16")
    w = np.ones((3, 2048), dtype="float16")
    got = run("nn.dense", x, w, units=3)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, np.full((1, 3), 2048 * float(np.float16(0.01))), rtol=1e-3)


def test_bias_add_and_batch_flatten_values():
    x = np.zeros((1, 2, 2, 1), dtype="float32")
    got = run("nn.bias_add", x, np.array([1.0, 2.0], dtype="float32"))
    np.testing.assert_array_equal(got[0, :, :, 0], [[1, 1], [2, 2]])
    y = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(run("nn.batch_flatten", y), y.reshape(2, 12))


# ---------------------------------------------------------------------------------------------
# normalization and dropout


def test_batch_norm_relation_returns_three_fields():
    out = infer("nn.batch_norm", [T(1, 3, 4, 4), T(3), T(3), T(3), T(3)])
    assert out == TupleType([T(1, 3, 4, 4), T(3), T(3)])
    out = infer("nn.batch_norm", [T(1, 4, 4, 3), T(3), T(3), T(3), T(3)], axis=-1)
    assert out.fields[1] == T(3)
    with pytest.raises(RelationError, match=r"moving_var must be Tensor\[\(3\), float32\] to match axis 1"):
        infer("nn.batch_norm", [T(1, 3, 4, 4), T(3), T(3), T(3), T(4)])
    with pytest.raises(RelationError, match=r"gamma must be Tensor\[\(3\), float16\]"):
        infer("nn.batch_norm", [T(1, 3, 4, 4, dtype="float16"), T(3), T(3), T(3), T(3)])
    with pytest.raises(RelationError, match="axis -2 is out of range"):
        infer("nn.batch_norm", [T(1, 3, 4, 4), T(4), T(4), T(4), T(4)], axis=-2)


def test_batch_norm_inference_formula():
    x = np.array([[[[1.0]], [[4.0]]]], dtype="float32")  # (1, 2, 1, 1)
    gamma, beta = np.array([2.0, 1.0], "float32"), np.array([0.5, 0.0], "float32")
    mean, var = np.array([0.0, 2.0], "float32"), np.array([3.0, 1.0], "float32")
    out, m, v = run("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1.0)
    np.testing.assert_allclose(out[0, :, 0, 0], [1.0 / 2.0 * 2.0 + 0.5, (4.0 - 2.0) / np.sqrt(2.0)], rtol=1e-6)
    np.testing.assert_array_equal(m, mean)
    np.testing.assert_array_equal(v, var)
    unscaled, _, _ = run("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1.0, scale=False, center=False)
    np.testing.assert_allclose(unscaled[0, :, 0, 0], [0.5, 2.0 / np.sqrt(2.0)], rtol=1e-6)


def test_layer_instance_group_norm_and_l2_normalize():
    x = rand(2, 4, 3, 5)
    gamma, beta = rand(5), rand(5)
    got = run("nn.layer_norm", x, gamma, beta, epsilon=1e-5)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(got, (x - mu) / np.sqrt(var + 1e-5) * gamma + beta, rtol=1e-4, atol=1e-5)
    with pytest.raises(RelationError, match=r"gamma must be Tensor\[\(5\), float32\]"):
        infer("nn.layer_norm", [T(2, 5), T(4), T(5)])

    g4, b4 = rand(4), rand(4)
    got = run("nn.instance_norm", x, g4, b4)
    mu, var = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * g4[:, None, None] + b4[:, None, None]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)

    got = run("nn.group_norm", x, g4, b4, num_groups=2)
    grouped = x.reshape(2, 2, 2, 3, 5)
    mu, var = grouped.mean((2, 3, 4), keepdims=True), grouped.var((2, 3, 4), keepdims=True)
    expected = ((grouped - mu) / np.sqrt(var + 1e-5)).reshape(x.shape) * g4[:, None, None] + b4[:, None, None]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(RelationError, match=r"num_groups \(3\) must divide the 4 channels"):
        infer("nn.group_norm", [T(2, 4, 3), T(4), T(4)], num_groups=3)

    v = np.array([[3.0, 4.0], [0.0, 0.0]], dtype="float32")
    np.testing.assert_allclose(run("nn.l2_normalize", v, eps=1e-12, axis=[1]), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_dropout_is_identity_with_unit_mask():
    assert infer("nn.dropout", [T(2, 3)]) == TupleType([T(2, 3), T(2, 3)])
    x = rand(2, 3)
    out, mask = run("nn.dropout", x, rate=0.7)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.ones((2, 3)))


# ---------------------------------------------------------------------------------------------
# pad and upsampling


def test_pad_relation_and_values():
    assert infer("nn.pad", [T(1, 3, 4, 4), T()], pad_width=[[0, 0], [0, 0], [2, 2], [1, 0]]) == T(1, 3, 8, 5)
    # TVM never constrained pad_value: float16 data padded with an int32 literal type-checks.
    assert infer(
        "nn.pad", [T(1, 383, 128, dtype="float16"), T(dtype="int32")], pad_width=[[0, 0], [0, 1], [0, 0]]
    ) == T(1, 384, 128, dtype="float16")
    with pytest.raises(RelationError, match=r"pad_width has 2 pairs but data Tensor\[\(1, 3, 4\), float32\] has 3"):
        infer("nn.pad", [T(1, 3, 4), T()], pad_width=[[0, 0], [1, 1]])
    with pytest.raises(RelationError, match="pad_mode must be one of"):
        infer("nn.pad", [T(3), T()], pad_width=[[1, 1]], pad_mode="wrap")
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    got = run("nn.pad", x, np.array(9, dtype="int32"), pad_width=[[1, 0], [0, 2]])
    np.testing.assert_array_equal(got, [[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]])
    np.testing.assert_array_equal(
        run("nn.pad", x, np.float32(0), pad_width=[[0, 0], [1, 1]], pad_mode="edge"), [[1, 1, 2, 2], [3, 3, 4, 4]]
    )
    np.testing.assert_array_equal(run("nn.pad", x, np.float32(0), pad_width=[[0, 0], [-1, 0]]), [[2], [4]])


def test_upsampling():
    assert infer("nn.upsampling", [T(1, 3, 4, 5)], scale_h=2.0, scale_w=3.0) == T(1, 3, 8, 15)
    assert infer("nn.upsampling", [T(1, 4, 5, 3)], scale_h=2.0, scale_w=0.5, layout="NHWC") == T(1, 8, 2, 3)
    with pytest.raises(RelationError, match="method must be one of"):
        infer("nn.upsampling", [T(1, 3, 4, 5)], scale_h=2.0, scale_w=2.0, method="bicubic2")
    with pytest.raises(ValueError, match="requires attribute 'scale_h'"):
        infer("nn.upsampling", [T(1, 3, 4, 5)])
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")[None, None]
    nearest = run("nn.upsampling", x, scale_h=2.0, scale_w=2.0)
    np.testing.assert_array_equal(nearest[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    # align_corners maps output 1 of 3 to source 0.5, which rounds half away from zero to 1.
    nearest_corners = run("nn.upsampling", x, scale_h=1.5, scale_w=1.5, align_corners=True)
    np.testing.assert_array_equal(nearest_corners[0, 0], [[1, 2, 2], [3, 4, 4], [3, 4, 4]])
    thirds = run("nn.upsampling", np.arange(3, dtype="float32").reshape(1, 1, 1, 3), scale_h=1.0, scale_w=3.0)
    np.testing.assert_array_equal(thirds[0, 0, 0], [0, 0, 0, 1, 1, 1, 2, 2, 2])
    corners = run("nn.upsampling", x, scale_h=1.5, scale_w=1.5, method="bilinear", align_corners=True)
    np.testing.assert_allclose(corners[0, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]], rtol=1e-6)
    asym = run("nn.upsampling", x, scale_h=2.0, scale_w=2.0, method="bilinear")
    np.testing.assert_allclose(asym[0, 0, 0], [1, 1.5, 2, 2], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# attribute conversion


def test_attribute_values_are_normalized_from_text_forms():
    from transpile.relay.attrs import MetaRef
    from transpile.relay.expr import const
    from test_ops_nn_support import attrs_of

    attrs = attrs_of(
        "nn.conv2d", strides=np.array([2, 2]), padding=[np.int64(1)], groups=np.int32(2), out_dtype="float"
    )
    assert attrs.strides == (2, 2) and attrs.padding == (1,) and attrs.groups == 2 and attrs.out_dtype == "float32"
    assert type(attrs.groups) is int
    assert attrs_of("nn.leaky_relu", alpha=const(0.5)).alpha == 0.5
    assert attrs_of("nn.pad", pad_width=[[0, 0], [1, 2]]).pad_width == ((0, 0), (1, 2))
    assert attrs_of("nn.conv2d", out_layout=MetaRef("Foo", 0)).out_layout == MetaRef("Foo", 0)
    with pytest.raises(ValueError, match="cannot read 'two' as int"):
        attrs_of("nn.conv2d", groups="two")


@pytest.mark.parametrize(
    "op, types, given, message",
    [
        ("nn.max_pool2d", [T(1, 1, 4, 4)], dict(pool_size=[2, 2], strides=[0, 1]), r"strides must be >= 1"),
        ("nn.avg_pool2d", [T(1, 1, 4, 4)], dict(pool_size=[0, 2]), r"pool_size must be >= 1"),
        ("nn.conv2d", [T(1, 1, 4, 4), T(1, 1, 2, 2)], dict(dilation=[0, 1]), r"dilation must be >= 1"),
        ("nn.conv2d_transpose", [T(1, 1, 4, 4), T(1, 1, 2, 2)], dict(strides=[1, 0]), r"strides must be >= 1"),
    ],
)
def test_degenerate_window_attributes_are_relation_errors(op, types, given, message):
    with pytest.raises(RelationError, match=message):
        infer(op, types, **given)
