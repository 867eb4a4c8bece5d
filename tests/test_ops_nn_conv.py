"""nn.conv2d / nn.conv2d_transpose / nn.conv1d: type relations and numpy kernels vs naive loops."""

from __future__ import annotations

import numpy as np
import pytest

from test_ops_nn_support import Any, T, attrs_of, infer, run
from transpile.relay.op import RelationError, registry


def naive_conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW / OIHW reference: the textbook 6-deep loop (plus batch and group bookkeeping)."""
    n, c, h, wd = x.shape
    o, ig, kh, kw = w.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wd + left + right - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for y in range(oh):
                for xx in range(ow):
                    acc = 0.0
                    for ic in range(ig):
                        for ky in range(kh):
                            for kx in range(kw):
                                iy = y * strides[0] + ky * dilation[0] - top
                                ix = xx * strides[1] + kx * dilation[1] - left
                                if 0 <= iy < h and 0 <= ix < wd:
                                    acc += x[b, g * ig + ic, iy, ix] * w[oc, ic, ky, kx]
                    out[b, oc, y, xx] = acc
    return out


def naive_conv2d_transpose(x, w, strides, padding, output_padding, groups=1, dilation=(1, 1)):
    """IOHW weight; every input pixel scatters the kernel into the (cropped) output."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    ig = c // groups
    top, left, bottom, right = padding
    oh = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 - top - bottom + output_padding[0]
    ow = (wd - 1) * strides[1] + (kw - 1) * dilation[1] + 1 - left - right + output_padding[1]
    out = np.zeros((n, groups * og, oh, ow))
    for b in range(n):
        for ic in range(c):
            g = ic // ig
            for y in range(h):
                for xx in range(wd):
                    for o in range(og):
                        for ky in range(kh):
                            for kx in range(kw):
                                oy = y * strides[0] + ky * dilation[0] - top
                                ox = xx * strides[1] + kx * dilation[1] - left
                                if 0 <= oy < oh and 0 <= ox < ow:
                                    out[b, g * og + o, oy, ox] += x[b, ic, y, xx] * w[ic, o, ky, kx]
    return out


rng = np.random.default_rng(7)


def rand(*shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# attribute schema


def test_conv2d_schema_matches_tvm_order_and_defaults():
    opdef = registry.get("nn.conv2d")
    assert opdef.attr_names == (
        "strides",
        "padding",
        "dilation",
        "groups",
        "channels",
        "kernel_size",
        "data_layout",
        "kernel_layout",
        "out_layout",
        "out_dtype",
    )
    assert opdef.defaults() == {
        "strides": (1, 1),
        "padding": (0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
        "out_layout": "",
        "out_dtype": "",
    }
    assert opdef.pattern == 4


def test_parsed_padding_is_kept_as_written_but_builder_widens_it_like_tvm():
    assert attrs_of("nn.conv2d", padding=[1, 1]).padding == (1, 1)
    from transpile.relay.expr import var

    call = registry.get("nn.conv2d")(
        var("x", shape=(1, 3, 8, 8)), var("w", shape=(4, 3, 3, 3)), padding=1, kernel_size=3
    )
    assert call.attrs.padding == (1, 1, 1, 1)
    assert call.attrs.kernel_size == (3, 3)
    call = registry.get("nn.conv2d")(var("x", shape=(1, 3, 8, 8)), var("w", shape=(4, 3, 3, 3)), (2, 2), (1, 2))
    assert call.attrs.strides == (2, 2) and call.attrs.padding == (1, 2, 1, 2)


def test_unknown_conv2d_attribute_is_rejected():
    with pytest.raises(ValueError, match="no attribute"):
        attrs_of("nn.conv2d", padings=[1, 1])


# ---------------------------------------------------------------------------------------------
# conv2d type relation


@pytest.mark.parametrize(
    "data, weight, given, expected",
    [
        (
            T(1, 3, 224, 224),
            T(64, 3, 7, 7),
            dict(strides=[2, 2], padding=[3, 3, 3, 3], channels=64, kernel_size=[7, 7]),
            T(1, 64, 112, 112),
        ),
        (
            T(1, 32, 112, 112),
            T(32, 1, 3, 3),
            dict(padding=[1, 1, 1, 1], groups=32, channels=32, kernel_size=[3, 3]),
            T(1, 32, 112, 112),
        ),
        (T(1, 64, 56, 56), T(128, 2, 3, 3), dict(padding=[1, 1], groups=32), T(1, 128, 56, 56)),
        (T(2, 5, 7, 4), T(3, 3, 4, 6), dict(data_layout="NHWC", kernel_layout="HWIO", strides=[2, 1]), T(2, 2, 5, 6)),
        (
            T(1, 9, 9, 8),
            T(3, 3, 8, 1),
            dict(data_layout="NHWC", kernel_layout="HWOI", groups=8, channels=8, kernel_size=[3, 3]),
            T(1, 7, 7, 8),
        ),
        (T(1, 4, 10, 10), T(6, 4, 3, 3), dict(dilation=[2, 2], padding=[1]), T(1, 6, 8, 8)),
        (T(1, 4, 10, 10), T(6, 4, 3, 3), dict(out_layout="NHWC"), T(1, 8, 8, 6)),
        (T(Any(), 4, Any(), 10), T(6, 4, 3, 3), {}, T(Any(), 6, Any(), 8)),
        (T(1, 4, 10, 10), T(Any(), 4, 3, Any()), {}, T(1, Any(), 8, Any())),
        (
            T(1, 4, 8, 8, dtype="int8"),
            T(6, 4, 1, 1, dtype="int8"),
            dict(out_dtype="int32"),
            T(1, 6, 8, 8, dtype="int32"),
        ),
        (
            T(1, 3, 8, 8, dtype="float16"),
            T(4, 3, 3, 3, dtype="float16"),
            dict(channels=4, kernel_size=[3, 3]),
            T(1, 4, 6, 6, dtype="float16"),
        ),
    ],
)
def test_conv2d_relation(data, weight, given, expected):
    assert infer("nn.conv2d", [data, weight], **given) == expected


@pytest.mark.parametrize(
    "data, weight, given, message",
    [
        (
            T(1, 3, 8, 8),
            T(4, 5, 3, 3),
            {},
            r"channel mismatch: data Tensor\[\(1, 3, 8, 8\), float32\] has 3 input channels",
        ),
        (T(1, 8, 8, 8), T(4, 3, 3, 3), dict(groups=2), r"divided by groups \(2\) must equal the input channels \(3\)"),
        (T(1, 6, 8, 8), T(4, 2, 3, 3), dict(groups=4), r"input channels \(6\) .* not divisible by groups \(4\)"),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(channels=5), r"has 4 output channels but channels=5"),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(kernel_size=[5, 5]), r"inconsistent with kernel_size=\[5, 5\]"),
        (
            T(1, 3, 8, 8),
            T(4, 3, 3, 3),
            dict(channels=4, kernel_size=[1, 1]),
            r"expected shape \(4, 3, 1, 1\) in kernel layout OIHW",
        ),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(data_layout="NCHW16c"), r"data_layout 'NCHW16c' is not supported"),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(kernel_layout="OIHX"), r"kernel_layout 'OIHX' is not supported"),
        (T(1, 3, 8), T(4, 3, 3, 3), {}, r"data must have rank 4 for layout NCHW, got Tensor\[\(1, 3, 8\), float32\]"),
        (T(1, 3, 2, 2), T(4, 3, 3, 3), {}, r"output height would be 0"),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(padding=[1, 1, 1]), r"padding must have 1, 2 or 4 values"),
        (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(groups=0), r"groups must be >= 1"),
    ],
)
def test_conv2d_relation_errors(data, weight, given, message):
    with pytest.raises(RelationError, match=message):
        infer("nn.conv2d", [data, weight], **given)


def test_conv2d_rejects_non_tensor_arguments():
    from transpile.relay.ty import TupleType

    with pytest.raises(RelationError, match="nn.conv2d: weight must be a tensor"):
        infer("nn.conv2d", [T(1, 3, 8, 8), TupleType([T(1)])])


# ---------------------------------------------------------------------------------------------
# conv2d numpy kernel


def test_conv2d_tiny_by_hand():
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    w = np.array([[[[1, 0], [0, -1]]]], dtype="float32")  # x[i, j] - x[i+1, j+1] = -5 everywhere
    np.testing.assert_array_equal(run("nn.conv2d", x, w), np.full((1, 1, 3, 3), -5, dtype="float32"))
    ones = np.ones((1, 1, 3, 3), dtype="float32")
    # padding 1 around a 4x4 input: corner windows see 4 inputs, edges 6, interior 9.
    counts = run("nn.conv2d", np.ones((1, 1, 4, 4), "float32"), ones, padding=[1, 1, 1, 1])
    np.testing.assert_array_equal(counts[0, 0], [[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]])


@pytest.mark.parametrize(
    "c, o, h, w, k, given",
    [
        (3, 4, 7, 6, (3, 3), dict(padding=[1, 1, 1, 1])),
        (3, 4, 9, 8, (3, 2), dict(strides=[2, 3], padding=[2, 0, 1, 1])),
        (2, 3, 9, 9, (3, 3), dict(dilation=[2, 1], padding=[2, 2])),
        (4, 6, 6, 6, (3, 3), dict(groups=2, padding=[1])),
        (5, 5, 6, 7, (3, 3), dict(groups=5, strides=[2, 2], padding=[1, 1, 1, 1])),
        (4, 8, 5, 5, (1, 1), dict(strides=[2, 2])),
        (4, 8, 5, 5, (1, 1), {}),
        (3, 6, 6, 5, (3, 3), dict(groups=3, padding=[1, 0])),
    ],
)
def test_conv2d_nchw_matches_naive_loops(c, o, h, w, k, given):
    groups = given.get("groups", 1)
    x = rand(2, c, h, w)
    weight = rand(o, c // groups, *k)
    expected = naive_conv2d(
        x,
        weight,
        tuple(given.get("strides", (1, 1))),
        tuple(registry_pad(given.get("padding", [0]))),
        tuple(given.get("dilation", (1, 1))),
        groups,
    )
    np.testing.assert_allclose(run("nn.conv2d", x, weight, **given), expected, rtol=1e-4, atol=1e-4)


def registry_pad(padding):
    padding = list(padding)
    return padding * 4 if len(padding) == 1 else padding * 2 if len(padding) == 2 else padding


def test_conv2d_nhwc_hwio_equals_nchw():
    x = rand(1, 3, 6, 5)
    w = rand(4, 3, 3, 3)
    expected = naive_conv2d(x, w, (1, 2), (1, 0, 1, 2), (1, 1), 1)
    got = run(
        "nn.conv2d",
        x.transpose(0, 2, 3, 1),
        w.transpose(2, 3, 1, 0),
        strides=[1, 2],
        padding=[1, 0, 1, 2],
        data_layout="NHWC",
        kernel_layout="HWIO",
    )
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_depthwise_hwoi_with_channel_multiplier():
    # TF-style depthwise: weight (kh, kw, C, multiplier); output channel c * M + m reads input channel c.
    x = rand(1, 5, 5, 3)
    w = rand(3, 3, 3, 2)
    got = run("nn.conv2d", x, w, data_layout="NHWC", kernel_layout="HWOI", groups=3, channels=6, kernel_size=[3, 3])
    assert got.shape == (1, 3, 3, 6)
    for c in range(3):
        for m in range(2):
            expected = naive_conv2d(x[..., c][:, None], w[:, :, c, m][None, None])
            np.testing.assert_allclose(got[..., c * 2 + m], expected[:, 0], rtol=1e-4, atol=1e-4)


def test_conv2d_int8_accumulates_in_out_dtype():
    x = np.full((1, 2, 3, 3), 100, dtype="int8")
    w = np.full((1, 2, 3, 3), 100, dtype="int8")
    got = run("nn.conv2d", x, w, out_dtype="int32")
    assert got.dtype == np.int32 and got[0, 0, 0, 0] == 100 * 100 * 18


def test_conv2d_float16_keeps_dtype():
    x = rand(1, 8, 5, 5, dtype="float16")
    w = rand(4, 8, 3, 3, dtype="float16")
    got = run("nn.conv2d", x, w, padding=[1, 1, 1, 1])
    assert got.dtype == np.float16
    expected = naive_conv2d(x.astype("float64"), w.astype("float64"), padding=(1, 1, 1, 1))
    np.testing.assert_allclose(got, expected, rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------------------------------------
# conv2d_transpose and conv1d


def test_conv2d_transpose_schema_and_builder_order():
    opdef = registry.get("nn.conv2d_transpose")
    assert opdef.attr_names[:5] == ("channels", "kernel_size", "strides", "output_padding", "padding")
    assert opdef.defaults()["kernel_layout"] == "IOHW"
    from transpile.relay.expr import var

    call = opdef(var("x", shape=(1, 2, 4, 4)), var("w", shape=(2, 3, 3, 3)), 2, 1)  # strides, padding
    assert call.attrs.strides == (2, 2) and call.attrs.padding == (1, 1, 1, 1)


@pytest.mark.parametrize(
    "data, weight, given, expected",
    [
        (T(1, 4, 5, 5), T(4, 3, 3, 3), dict(strides=[2, 2], padding=[1, 1, 1, 1]), T(1, 3, 9, 9)),
        (T(1, 4, 5, 5), T(4, 3, 3, 3), dict(strides=[2, 2], padding=[1, 1], output_padding=[1, 1]), T(1, 3, 10, 10)),
        (T(1, 4, 5, 5), T(4, 2, 3, 3), dict(groups=2), T(1, 4, 7, 7)),
        (T(1, 4, 5, 5), T(4, 3, 2, 2), dict(channels=3, kernel_size=[2, 2], strides=[2, 2]), T(1, 3, 10, 10)),
    ],
)
def test_conv2d_transpose_relation(data, weight, given, expected):
    assert infer("nn.conv2d_transpose", [data, weight], **given) == expected


def test_conv2d_transpose_channel_mismatch():
    with pytest.raises(RelationError, match=r"data Tensor\[\(1, 4, 5, 5\), float32\] has 4 input channels but weight"):
        infer("nn.conv2d_transpose", [T(1, 4, 5, 5), T(3, 3, 3, 3)])


@pytest.mark.parametrize(
    "given",
    [
        dict(strides=[2, 2], padding=[1, 1, 1, 1]),
        dict(strides=[2, 1], padding=[0, 1, 1, 0], output_padding=[1, 0]),
        dict(groups=2, strides=[1, 2]),
        dict(dilation=[2, 2], padding=[1, 1]),
    ],
)
def test_conv2d_transpose_matches_naive_scatter(given):
    groups = given.get("groups", 1)
    x = rand(1, 4, 4, 3)
    w = rand(4, 6 // groups, 3, 3)
    expected = naive_conv2d_transpose(
        x,
        w,
        tuple(given.get("strides", (1, 1))),
        tuple(registry_pad(given.get("padding", [0]))),
        tuple(given.get("output_padding", (0, 0))),
        groups,
        tuple(given.get("dilation", (1, 1))),
    )
    np.testing.assert_allclose(run("nn.conv2d_transpose", x, w, **given), expected, rtol=1e-4, atol=1e-4)


def test_conv1d_relation_and_kernel():
    assert infer("nn.conv1d", [T(2, 3, 10), T(4, 3, 3)], padding=[1, 1], strides=[2]) == T(2, 4, 5)
    assert infer("nn.conv1d", [T(2, 10, 3), T(3, 3, 4)], data_layout="NWC", kernel_layout="WIO") == T(2, 8, 4)
    with pytest.raises(RelationError, match="channel mismatch"):
        infer("nn.conv1d", [T(2, 3, 10), T(4, 2, 3)])
    x = rand(1, 2, 7)
    w = rand(3, 2, 3)
    expected = naive_conv2d(x[:, :, None], w[:, :, None], (1, 2), (0, 2, 0, 1), (1, 1))[:, :, 0]
    np.testing.assert_allclose(run("nn.conv1d", x, w, strides=[2], padding=[2, 1]), expected, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# nn.contrib_conv2d_NCHWc (blocked layouts, as in the AOT corpus program)


def test_contrib_conv2d_nchwc_relation():
    given = dict(
        padding=[1, 1, 1, 1],
        channels=4,
        kernel_size=[3, 3],
        data_layout="NCHW4c",
        kernel_layout="OIHW4i4o",
        out_layout="NCHW4c",
    )
    assert infer("nn.contrib_conv2d_NCHWc", [T(1, 1, 4, 4, 4), T(1, 1, 3, 3, 4, 4)], **given) == T(1, 1, 4, 4, 4)
    assert registry.get("nn.contrib_conv2d_NCHWc").defaults()["data_layout"] == "NCHW"  # Conv2DAttrs
    with pytest.raises(RelationError, match="channels and kernel_size must be set"):
        infer(
            "nn.contrib_conv2d_NCHWc",
            [T(1, 1, 4, 4, 4), T(1, 1, 3, 3, 4, 4)],
            data_layout="NCHW4c",
            kernel_layout="OIHW4i4o",
        )
    with pytest.raises(RelationError, match="does not match channels=8"):
        infer("nn.contrib_conv2d_NCHWc", [T(1, 1, 4, 4, 4), T(1, 1, 3, 3, 4, 4)], **{**given, "channels": 8})


def test_contrib_conv2d_nchwc_equals_plain_conv_on_repacked_tensors():
    x = rand(1, 8, 5, 5)
    w = rand(4, 8, 3, 3)
    expected = naive_conv2d(x, w, padding=(1, 1, 1, 1))
    packed_x = x.reshape(1, 2, 4, 5, 5).transpose(0, 1, 3, 4, 2)  # NCHW4c
    packed_w = w.reshape(2, 2, 2, 4, 3, 3).transpose(0, 2, 4, 5, 3, 1)  # OIHW4i2o: (O/2, I/4, H, W, 4i, 2o)
    got = run(
        "nn.contrib_conv2d_NCHWc",
        packed_x,
        packed_w,
        padding=[1, 1, 1, 1],
        channels=4,
        kernel_size=[3, 3],
        data_layout="NCHW4c",
        kernel_layout="OIHW4i2o",
        out_layout="NCHW2c",
    )
    np.testing.assert_allclose(got, expected.reshape(1, 2, 2, 5, 5).transpose(0, 1, 3, 4, 2), rtol=1e-4, atol=1e-4)
