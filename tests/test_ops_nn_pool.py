"""Pooling operators: relations (incl. ceil_mode, layouts, errors) and numpy kernels vs naive loops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_ops_nn_support import Any, T, infer, run
from transpile.relay.op import RelationError, registry

rng = np.random.default_rng(3)


def naive_pool2d(x, kind, pool, strides, padding, dilation=(1, 1), ceil_mode=False, count_include_pad=False):
    """NCHW: visit every window tap; padding taps are -inf for max and skipped (or counted) for avg."""
    n, c, h, w = x.shape
    top, left, bottom, right = padding

    def out_size(size, before, after, k, s, d):
        span = size + before + after - ((k - 1) * d + 1)
        return (-(-span // s) if ceil_mode else span // s) + 1

    oh = out_size(h, top, bottom, pool[0], strides[0], dilation[0])
    ow = out_size(w, left, right, pool[1], strides[1], dilation[1])
    out = np.zeros((n, c, oh, ow))
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    values, counted = [], 0
                    for ky in range(pool[0]):
                        for kx in range(pool[1]):
                            y = i * strides[0] + ky * dilation[0] - top
                            xx = j * strides[1] + kx * dilation[1] - left
                            if 0 <= y < h and 0 <= xx < w:
                                values.append(x[b, ch, y, xx])
                                counted += 1
                            elif -top <= y < h + bottom and -left <= xx < w + right:
                                counted += count_include_pad
                    if kind == "max":
                        out[b, ch, i, j] = max(values) if values else -np.inf
                    else:
                        out[b, ch, i, j] = sum(values) / max(counted, 1)
    return out


def test_pool_schema():
    opdef = registry.get("nn.max_pool2d")
    assert opdef.attr_names == ("pool_size", "strides", "dilation", "padding", "layout", "out_layout", "ceil_mode")
    assert "pool_size" not in opdef.defaults()  # required in TVM's C++ attrs, so always printed
    assert registry.get("nn.avg_pool2d").attr_names[-1] == "count_include_pad"
    assert registry.get("nn.global_avg_pool2d").attr_names == ("layout", "out_layout")
    assert registry.get("nn.adaptive_avg_pool2d").attr_names == ("output_size", "layout", "out_layout")


def test_pool_builder_widens_like_tvm():
    from transpile.relay.expr import var

    call = registry.get("nn.max_pool2d")(var("x", shape=(1, 3, 8, 8)), pool_size=3, strides=2, padding=1)
    assert call.attrs.pool_size == (3, 3) and call.attrs.strides == (2, 2) and call.attrs.padding == (1, 1, 1, 1)


@pytest.mark.parametrize(
    "op, data, given, expected",
    [
        (
            "nn.max_pool2d",
            T(1, 64, 112, 112),
            dict(pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
            T(1, 64, 56, 56),
        ),
        (
            "nn.max_pool2d",
            T(1, 16, 16, 3),
            dict(pool_size=[4, 4], strides=[4, 4], padding=[0, 0, 0, 0], layout="NHWC"),
            T(1, 4, 4, 3),
        ),
        ("nn.max_pool2d", T(1, 1, 6, 6), dict(pool_size=[3, 3], strides=[2, 2], ceil_mode=True), T(1, 1, 3, 3)),
        ("nn.max_pool2d", T(1, 1, 6, 6), dict(pool_size=[3, 3], strides=[2, 2]), T(1, 1, 2, 2)),
        ("nn.avg_pool2d", T(1, 2, 9, 9), dict(pool_size=[2, 2], dilation=[2, 2]), T(1, 2, 7, 7)),
        ("nn.avg_pool2d", T(1, 2, Any(), 9), dict(pool_size=[3, 3]), T(1, 2, Any(), 7)),
        ("nn.max_pool2d", T(1, 2, 8, 8, 4), dict(pool_size=[2, 2], strides=[2, 2], layout="NCHW4c"), T(1, 2, 4, 4, 4)),
        ("nn.max_pool1d", T(1, 3, 10), dict(pool_size=[3], strides=[2], padding=[1]), T(1, 3, 5)),
        ("nn.global_avg_pool2d", T(1, 2048, 7, 7), {}, T(1, 2048, 1, 1)),
        ("nn.global_max_pool2d", T(1, 7, 7, 5), dict(layout="NHWC"), T(1, 1, 1, 5)),
        ("nn.adaptive_avg_pool2d", T(1, 3, 10, 9), dict(output_size=[4, 3]), T(1, 3, 4, 3)),
        ("nn.adaptive_avg_pool2d", T(1, 3, 10, 9), dict(output_size=[2]), T(1, 3, 2, 2)),
        ("nn.adaptive_max_pool2d", T(1, 3, 10, 9), {}, T(1, 3, 10, 9)),
    ],
)
def test_pool_relations(op, data, given, expected):
    assert infer(op, [data], **given) == expected


@pytest.mark.parametrize(
    "op, data, given, message",
    [
        ("nn.max_pool2d", T(1, 3, 8, 8), dict(pool_size=[2, 2], layout="NCH"), r"must contain H and W"),
        ("nn.max_pool2d", T(1, 3, 8, 8), dict(pool_size=[2, 2], layout="NCHW8h"), r"cannot be split"),
        ("nn.max_pool2d", T(1, 3, 8), dict(pool_size=[2, 2]), r"does not have the rank of layout 'NCHW'"),
        ("nn.avg_pool2d", T(1, 3, 2, 2), dict(pool_size=[3, 3]), r"would be 0"),
        (
            "nn.avg_pool2d",
            T(1, 3, 8, 8),
            dict(pool_size=[3, 3], padding=[1, 1, 1]),
            r"padding must have 1, 2 or 4 values",
        ),
        ("nn.global_avg_pool2d", T(1, 3, 8, 8), dict(layout="NCW"), r"must contain H and W"),
    ],
)
def test_pool_relation_errors(op, data, given, message):
    with pytest.raises(RelationError, match=message):
        infer(op, [data], **given)


def test_pool_required_pool_size():
    with pytest.raises(ValueError, match="requires attribute 'pool_size'"):
        infer("nn.max_pool2d", [T(1, 1, 4, 4)])


def test_max_pool_by_hand():
    x = np.array([[1, 2, 5, 0], [3, 4, 1, 1], [0, 0, 9, 8], [7, 0, 6, 2]], dtype="float32")[None, None]
    np.testing.assert_array_equal(run("nn.max_pool2d", x, pool_size=[2, 2], strides=[2, 2])[0, 0], [[4, 5], [7, 9]])
    negative = -np.ones((1, 1, 2, 2), "float32")
    # padding must not leak zeros into the max of negative data
    np.testing.assert_array_equal(
        run("nn.max_pool2d", negative, pool_size=[3, 3], padding=[1, 1]), -np.ones((1, 1, 2, 2))
    )


def test_avg_pool_count_include_pad_by_hand():
    x = np.ones((1, 1, 2, 2), "float32")
    excl = run("nn.avg_pool2d", x, pool_size=[3, 3], padding=[1, 1, 1, 1])
    incl = run("nn.avg_pool2d", x, pool_size=[3, 3], padding=[1, 1, 1, 1], count_include_pad=True)
    np.testing.assert_allclose(excl, np.ones((1, 1, 2, 2)))
    np.testing.assert_allclose(incl, np.full((1, 1, 2, 2), 4 / 9), rtol=1e-6)


@pytest.mark.parametrize(
    "given",
    [
        dict(pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]),
        dict(pool_size=[2, 3], strides=[1, 2], padding=[0, 1, 1, 0]),
        dict(pool_size=[3, 3], strides=[2, 2], ceil_mode=True),
        dict(pool_size=[3, 2], strides=[2, 2], padding=[1, 0], ceil_mode=True, count_include_pad=True),
        dict(pool_size=[2, 2], dilation=[2, 2], padding=[1, 1]),
    ],
)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_matches_naive_loops(kind, given):
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    if kind == "max":
        given = {k: v for k, v in given.items() if k != "count_include_pad"}
    pads = list(given.get("padding", [0]))
    pads = pads * 4 if len(pads) == 1 else pads * 2 if len(pads) == 2 else pads
    expected = naive_pool2d(
        x,
        kind,
        given["pool_size"],
        given.get("strides", (1, 1)),
        pads,
        given.get("dilation", (1, 1)),
        given.get("ceil_mode", False),
        given.get("count_include_pad", False),
    )
    got = run(f"nn.{kind}_pool2d", x, **given)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    nhwc = run(f"nn.{kind}_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC", **given)
    np.testing.assert_allclose(nhwc, expected.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_pool1d_matches_2d_with_unit_height():
    x = rng.standard_normal((1, 2, 9)).astype("float32")
    got = run("nn.avg_pool1d", x, pool_size=[3], strides=[2], padding=[1], count_include_pad=True)
    expected = naive_pool2d(x[:, :, None], "avg", (1, 3), (1, 2), (0, 1, 0, 1), count_include_pad=True)[:, :, 0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_global_and_adaptive_pools():
    x = rng.standard_normal((1, 2, 5, 7)).astype("float32")
    np.testing.assert_allclose(run("nn.global_avg_pool2d", x), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(run("nn.global_max_pool2d", x), x.max(axis=(2, 3), keepdims=True))
    got = run("nn.adaptive_avg_pool2d", x, output_size=[2, 3])
    for i in range(2):
        for j in range(3):
            h0, h1 = i * 5 // 2, math.ceil((i + 1) * 5 / 2)
            w0, w1 = j * 7 // 3, math.ceil((j + 1) * 7 / 3)
            np.testing.assert_allclose(got[:, :, i, j], x[:, :, h0:h1, w0:w1].mean(axis=(2, 3)), rtol=1e-6)
    np.testing.assert_allclose(
        run("nn.adaptive_avg_pool2d", x, output_size=[1, 1]), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6
    )


def test_global_avg_pool_float16_is_accurate():
    x = np.full((1, 1, 64, 64), 0.1, dtype="float16")
    got = run("nn.global_avg_pool2d", x)
    assert got.dtype == np.float16 and abs(float(got[0, 0, 0, 0]) - 0.1) < 1e-3
