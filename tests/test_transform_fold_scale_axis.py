"""FoldScaleAxis, forward and backward (cases from TVM's tests/python/relay/test_pass_fold_scale_axis.py
for the unblocked layouts, each also checked numerically against the unfolded program)."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform

from transform_support import (
    assert_same,
    assert_same_results,
    positive_scale,
    random_inputs,
    run_infer_type,
    run_opt_pass,
)


def _check_folded(before, expected, fold, positive_inputs=False):
    """`fold` turns `before` into `expected` (structurally) without changing its results."""
    before = run_infer_type(before)
    folded = run_opt_pass(before, fold)
    assert_same(folded, expected)
    args = random_inputs(before, seed=1, positive=positive_inputs)
    assert_same_results(before, folded, *args, rtol=1e-4, atol=1e-4)


def _check_unchanged(before, fold):
    before = run_infer_type(before)
    assert_same(run_opt_pass(before, fold), before)


def _conv(x, w, channels, layout="NCHW", kernel_layout="OIHW", **kw):
    return relay.nn.conv2d(
        x,
        w,
        channels=channels,
        kernel_size=(3, 3),
        padding=(1, 1),
        data_layout=layout,
        kernel_layout=kernel_layout,
        **kw,
    )


# ----- forward ----------------------------------------------------------------------------------


def test_fold_fwd_simple():
    shape, channels = (2, 4, 10, 10), 2
    in_channels = shape[1]
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, in_channels, 3, 3))
    in_bias = relay.var("in_bias", shape=(in_channels, 1, 1))
    in_scale = relay.const(positive_scale((in_channels, 1, 1)))

    y = relay.add(relay.nn.relu(relay.multiply(x, in_scale)), in_bias)
    before = relay.Function([x, weight, in_bias], _conv(y, weight, channels))

    squeezed = relay.squeeze(in_scale, axis=[1, 2])
    y = relay.add(relay.nn.relu(x), relay.divide(in_bias, relay.expand_dims(squeezed, axis=1, num_newaxis=2)))
    w = relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=2))
    expected = relay.Function([x, weight, in_bias], _conv(y, w, channels))
    _check_folded(before, expected, transform.ForwardFoldScaleAxis())


def test_fold_fwd_dual_path_depthwise_nhwc():
    """One scale consumed by two depthwise convolutions."""
    dshape, channels = (2, 4, 10, 3), 3
    x = relay.var("x", shape=dshape)
    weight = relay.var("weight", shape=(3, 3, 1, channels))  # HWIO, one input channel per group
    in_bias = relay.var("in_bias", shape=(channels,))
    in_scale = relay.const(positive_scale((channels,)))

    def conv(data, w):
        return _conv(data, w, channels, "NHWC", "HWIO", groups=channels)

    y = relay.subtract(relay.nn.relu(relay.multiply(in_scale, x)), in_bias)
    before = relay.Function([x, weight, in_bias], relay.add(conv(y, weight), conv(y, weight)))

    y = relay.subtract(relay.nn.relu(x), relay.divide(in_bias, in_scale))
    w = relay.multiply(weight, in_scale)
    expected = relay.Function([x, weight, in_bias], relay.add(conv(y, w), conv(y, w)))
    _check_folded(before, expected, transform.ForwardFoldScaleAxis())


def test_fold_fwd_fail_when_the_scaled_value_is_used_elsewhere():
    shape, channels = (2, 11, 10, 4), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(3, 3, 4, channels))
    in_scale = relay.const(positive_scale((4,)))
    scaled = relay.multiply(x, in_scale)
    y1 = _conv(relay.nn.leaky_relu(scaled, alpha=0.1), weight, channels, "NHWC", "HWIO")
    _check_unchanged(relay.Function([x, weight], relay.add(y1, scaled)), transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("scale_kind", ["variable", "negative"])
def test_fold_fwd_relu_fail(scale_kind):
    """A scale crossing a relu must be a positive constant."""
    shape, channels = (2, 11, 10, 4), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(3, 3, 4, channels))
    if scale_kind == "variable":
        in_scale = relay.var("in_scale", shape=(4,))
        params = [x, weight, in_scale]
    else:
        in_scale = relay.const(-positive_scale((4,)))
        params = [x, weight]
    scaled = relay.multiply(x, in_scale)
    y1 = _conv(relay.nn.relu(scaled), weight, channels, "NHWC", "HWIO")
    _check_unchanged(relay.Function(params, relay.add(y1, scaled)), transform.ForwardFoldScaleAxis())


def test_fold_fwd_let_fail():
    shape, channels = (2, 11, 10, 4), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(3, 3, 4, channels))
    in_bias = relay.var("in_bias", shape=(4,))
    in_scale = relay.const(positive_scale((4,)))
    y = relay.add(relay.nn.relu(relay.multiply(x, in_scale)), in_bias)
    x_var = relay.var("x_var")
    y1 = _conv(x_var, weight, channels, "NHWC", "HWIO")
    before = relay.Function([x, weight, in_bias], relay.Let(x_var, y, relay.add(y1, y)))
    _check_unchanged(before, transform.ForwardFoldScaleAxis())


def test_fold_fwd_negative_scale():
    """Without a relu in between, a negative scale folds."""
    shape, channels = (2, 4, 10, 10), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    in_scale = relay.const(-positive_scale((4, 1, 1)))
    before = relay.Function([x, weight], _conv(relay.multiply(x, in_scale), weight, channels))
    squeezed = relay.squeeze(in_scale, axis=[1, 2])
    w = relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=2))
    _check_folded(before, relay.Function([x, weight], _conv(x, w, channels)), transform.ForwardFoldScaleAxis())


@pytest.mark.parametrize("data_shape, weight_shape", [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_fold_fwd_dense(data_shape, weight_shape):
    x = relay.var("x", shape=data_shape)
    weight = relay.var("weight", shape=weight_shape)
    in_bias = relay.var("in_bias", shape=(data_shape[1],))
    in_scale = relay.const(positive_scale((data_shape[1],)))
    y = relay.add(relay.nn.relu(relay.multiply(x, in_scale)), in_bias)
    before = relay.Function([x, weight, in_bias], relay.nn.dense(y, weight))
    y = relay.add(relay.nn.relu(x), relay.divide(in_bias, in_scale))
    expected = relay.Function([x, weight, in_bias], relay.nn.dense(y, relay.multiply(weight, in_scale)))
    _check_folded(before, expected, transform.ForwardFoldScaleAxis())


def test_fold_fwd_keeps_an_add_it_cannot_divide():
    """A scale with a zero cannot be divided out of the added bias: the multiply stays."""
    x = relay.var("x", shape=(1, 2, 4, 4))
    weight = relay.var("weight", shape=(3, 2, 3, 3))
    bias = relay.var("bias", shape=(2, 1, 1))
    scale = relay.const(np.array([[[0.0]], [[2.0]]], "float32"))
    before = relay.Function([x, weight, bias], _conv(relay.add(relay.multiply(x, scale), bias), weight, 3))
    _check_unchanged(before, transform.ForwardFoldScaleAxis())


# ----- backward ---------------------------------------------------------------------------------


def test_fold_bwd_simple():
    shape, in_channels, channels = (2, 4, 10, 10), 4, 8
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, in_channels, 3, 3))
    out_bias = relay.var("out_bias", shape=(channels,))
    out_scale = relay.const(positive_scale((channels, 1, 1)))

    bias = relay.expand_dims(out_bias, axis=1, num_newaxis=2)
    y = relay.nn.relu(relay.add(_conv(x, weight, channels), bias))
    before = relay.Function([x, weight, out_bias], relay.multiply(y, out_scale))

    squeezed = relay.squeeze(out_scale, axis=[1, 2])
    w = relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=3))
    bias = relay.multiply(
        relay.expand_dims(out_bias, axis=1, num_newaxis=2), relay.expand_dims(squeezed, axis=1, num_newaxis=2)
    )
    expected = relay.Function([x, weight, out_bias], relay.nn.relu(relay.add(_conv(x, w, channels), bias)))
    _check_folded(before, expected, transform.BackwardFoldScaleAxis())


def test_fold_bwd_dual_path():
    shape, channels = (2, 4, 10, 10), 8
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    out_scale = relay.const(positive_scale((channels, 1, 1)))
    y = relay.add(relay.nn.relu(_conv(x, weight, channels)), relay.nn.relu(_conv(x, weight, channels)))
    before = relay.Function([x, weight], relay.multiply(y, out_scale))

    squeezed = relay.squeeze(out_scale, axis=[1, 2])

    def folded_weight():
        return relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=3))

    y = relay.add(
        relay.nn.relu(_conv(x, folded_weight(), channels)), relay.nn.relu(_conv(x, folded_weight(), channels))
    )
    _check_folded(before, relay.Function([x, weight], y), transform.BackwardFoldScaleAxis())


def test_fold_bwd_dual_consumer():
    shape, channels = (2, 4, 10, 10), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    out_scale = relay.const(positive_scale((channels, 1, 1)))
    y0 = relay.nn.relu(relay.multiply(_conv(x, weight, channels), out_scale))
    y1 = relay.nn.relu(relay.multiply(_conv(y0, weight, channels), out_scale))
    y2 = relay.nn.relu(relay.multiply(_conv(y0, weight, channels), out_scale))
    before = relay.Function([x, weight], relay.add(y1, y2))

    def folded_weight():
        squeezed = relay.squeeze(out_scale, axis=[1, 2])
        return relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=3))

    y0 = relay.nn.relu(_conv(x, folded_weight(), channels))
    y1 = relay.nn.relu(_conv(y0, folded_weight(), channels))
    y2 = relay.nn.relu(_conv(y0, folded_weight(), channels))
    _check_folded(before, relay.Function([x, weight], relay.add(y1, y2)), transform.BackwardFoldScaleAxis())


def test_fold_bwd_fail():
    shape, channels = (4, 4, 10, 10), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    out_scale = relay.const(positive_scale((channels, 1, 1)))
    # The two paths put channels on different axes (out_layout CNHW): no common axis.
    y1 = relay.nn.relu(_conv(x, weight, channels))
    y2 = relay.nn.relu(_conv(x, weight, channels, out_layout="CNHW"))
    _check_unchanged(
        relay.Function([x, weight], relay.multiply(relay.add(y1, y2), out_scale)), transform.BackwardFoldScaleAxis()
    )
    # The convolution's result is also used unscaled.
    y1 = _conv(x, weight, channels)
    y = relay.add(relay.multiply(y1, out_scale), relay.nn.relu(y1))
    _check_unchanged(relay.Function([x, weight], y), transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("scale_kind", ["variable", "negative"])
def test_fold_bwd_relu_fail(scale_kind):
    shape, channels = (4, 4, 10, 10), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    if scale_kind == "variable":
        out_scale = relay.var("out_scale", shape=(4, 1, 1))
        params = [x, weight, out_scale]
    else:
        out_scale = relay.const(-positive_scale((4, 1, 1)))
        params = [x, weight]
    y = relay.multiply(relay.nn.relu(_conv(x, weight, channels)), out_scale)
    _check_unchanged(relay.Function(params, y), transform.BackwardFoldScaleAxis())


def test_fold_bwd_negative_scale():
    shape, channels = (2, 4, 10, 10), 8
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    out_scale = relay.const(-positive_scale((channels, 1, 1)))
    before = relay.Function([x, weight], relay.multiply(_conv(x, weight, channels), out_scale))
    squeezed = relay.squeeze(out_scale, axis=[1, 2])
    w = relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=3))
    _check_folded(before, relay.Function([x, weight], _conv(x, w, channels)), transform.BackwardFoldScaleAxis())


@pytest.mark.parametrize("data_shape, weight_shape", [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_fold_bwd_dense(data_shape, weight_shape):
    x = relay.var("x", shape=data_shape)
    weight = relay.var("weight", shape=weight_shape)
    in_bias = relay.var("in_bias", shape=(weight_shape[0],))
    in_scale = relay.const(positive_scale((weight_shape[0],)))
    y = relay.nn.relu(relay.add(relay.nn.dense(x, weight), in_bias))
    before = relay.Function([x, weight, in_bias], relay.multiply(y, in_scale))
    w = relay.multiply(weight, relay.expand_dims(in_scale, axis=1))
    y = relay.nn.relu(relay.add(relay.nn.dense(x, w), relay.multiply(in_bias, in_scale)))
    _check_folded(before, relay.Function([x, weight, in_bias], y), transform.BackwardFoldScaleAxis())


def test_fold_bwd_bias_add():
    shape, channels = (2, 4, 10, 10), 4
    x = relay.var("x", shape=shape)
    weight = relay.var("weight", shape=(channels, 4, 3, 3))
    out_bias = relay.var("out_bias", shape=(channels,))
    out_scale = relay.const(positive_scale((channels, 1, 1)))
    y = relay.nn.relu(relay.nn.bias_add(_conv(x, weight, channels), out_bias))
    before = relay.Function([x, weight, out_bias], relay.multiply(y, out_scale))
    squeezed = relay.squeeze(out_scale, axis=[1, 2])
    w = relay.multiply(weight, relay.expand_dims(squeezed, axis=1, num_newaxis=3))
    y = relay.nn.relu(relay.nn.bias_add(_conv(x, w, channels), relay.multiply(out_bias, squeezed)))
    _check_folded(before, relay.Function([x, weight, out_bias], y), transform.BackwardFoldScaleAxis())


def test_fold_bwd_simple_constant():
    """A scalar scale after conv + bias + relu, with constant weights: FoldScaleAxis leaves new constants."""
    rng = np.random.default_rng(4)
    w_data = rng.standard_normal((16, 3, 3, 3)).astype("float32")
    b_data = rng.standard_normal((16, 1, 1)).astype("float32")
    x = relay.var("data", relay.TensorType((1, 3, 20, 20), "float32"))
    y = relay.nn.relu(relay.add(_conv(x, relay.const(w_data), 16), relay.const(b_data)))
    before = run_infer_type(relay.Function([x], relay.multiply(y, relay.const(2.0))))
    with transform.PassContext(opt_level=3):
        after = transform.Sequential([transform.InferType(), transform.FoldScaleAxis()])(
            relay.IRModule.from_expr(before)
        )["main"]
    y = relay.nn.relu(relay.add(_conv(x, relay.const(w_data * 2), 16), relay.const(b_data * 2)))
    assert_same(after, relay.Function([x], y))
    assert_same_results(before, after, rng.standard_normal((1, 3, 20, 20)).astype("float32"), rtol=1e-5)


def test_grouped_convolutions_are_not_folded():
    x = relay.var("x", shape=(1, 4, 6, 6))
    weight = relay.var("weight", shape=(4, 2, 3, 3))  # 2 groups of 2 channels
    scale = relay.const(positive_scale((4, 1, 1)))
    y = relay.multiply(_conv(x, weight, 4, groups=2), scale)
    _check_unchanged(relay.Function([x, weight], y), transform.BackwardFoldScaleAxis())
    y = _conv(relay.multiply(x, scale), weight, 4, groups=2)
    _check_unchanged(relay.Function([x, weight], y), transform.ForwardFoldScaleAxis())


def test_fold_scale_axis_inside_closures_and_branches():
    """The passes work in every function body, leaving control flow and closures as they are."""
    x = relay.var("x", shape=(1, 2, 5, 5))
    weight = relay.const(np.random.default_rng(5).standard_normal((3, 2, 3, 3)).astype("float32"))
    scale = relay.const(positive_scale((3, 1, 1)))
    y = relay.var("y", shape=(1, 2, 5, 5))
    inner = relay.Function([y], relay.multiply(_conv(y, weight, 3), scale))
    flag = relay.var("flag", "bool")
    f = relay.var("f")
    body = relay.Let(f, inner, relay.If(flag, relay.Call(f, [x]), relay.multiply(_conv(x, weight, 3), scale)))
    before = run_infer_type(relay.Function([x, flag], body))
    with transform.PassContext(opt_level=3):
        after = transform.FoldScaleAxis()(relay.IRModule.from_expr(before))["main"]
    assert "multiply" not in str(after)
    data = np.random.default_rng(6).standard_normal((1, 2, 5, 5)).astype("float32")
    for value in (True, False):
        mod_b, mod_a = relay.IRModule.from_expr(before), relay.IRModule.from_expr(after)
        np.testing.assert_allclose(
            relay.evaluate(mod_a, data, value), relay.evaluate(mod_b, data, value), rtol=1e-5, atol=1e-5
        )
