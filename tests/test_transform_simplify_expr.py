"""SimplifyExpr: reshape / transpose / cast chains and identities (cases in the spirit of TVM's
tests/python/relay/test_pass_simplify_expr.py), each checked structurally and numerically."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform

from transform_support import assert_same, assert_same_results, random_inputs, run_infer_type, run_opt_pass


def _check(before, expected, args=None):
    before = run_infer_type(before)
    after = run_opt_pass(before, transform.SimplifyExpr())
    assert_same(after, expected)
    assert_same_results(before, after, *(args if args is not None else random_inputs(before)))


def test_simplify_reshape():
    x = relay.var("x", shape=(1, 16, 16, 16))
    w = relay.var("w", shape=(32, 16, 3, 3))
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    y = relay.reshape(y, newshape=(1, 16, -1))
    y = relay.reshape(y, newshape=(4, 8, -1, 16))
    y = relay.contrib_reverse_reshape(y, newshape=(32, 0, -1))
    before = relay.Function([x, w], y)
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    expected = relay.Function([x, w], relay.reshape(y, newshape=(32, 16, 16), allowzero=True))
    _check(before, expected)


def test_reshape_to_the_same_shape_disappears():
    x = relay.var("x", shape=(2, 3, 4))
    before = relay.Function([x], relay.nn.relu(relay.reshape(relay.reshape(x, (6, 4)), (2, 3, 4))))
    _check(before, relay.Function([x], relay.nn.relu(x)))
    before = relay.Function([x], relay.squeeze(relay.expand_dims(x, axis=0), axis=[0]))
    _check(before, relay.Function([x], x))


def test_shape_only_ops_chain_into_one_reshape():
    x = relay.var("x", shape=(2, 1, 6))
    before = relay.Function([x], relay.expand_dims(relay.squeeze(x, axis=[1]), axis=2))
    _check(before, relay.Function([x], relay.reshape(x, newshape=(2, 6, 1), allowzero=True)))


def test_simplify_transpose():
    x = relay.var("x", shape=(1, 3, 224, 224))
    y = relay.transpose(x, axes=[0, 2, 3, 1])  # to NHWC
    y = relay.transpose(y, axes=[3, 0, 1, 2])
    before = relay.Function([x], relay.nn.relu(y))
    expected = relay.Function([x], relay.nn.relu(relay.transpose(x, axes=[1, 0, 2, 3])))
    _check(before, expected, [np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")])


def test_transpose_pairs_and_identity_cancel():
    x = relay.var("x", shape=(2, 3, 4))
    back = relay.transpose(relay.transpose(x, axes=[2, 0, 1]), axes=[1, 2, 0])
    _check(relay.Function([x], back), relay.Function([x], x))
    _check(relay.Function([x], relay.transpose(relay.transpose(x))), relay.Function([x], x))  # reversed twice
    _check(relay.Function([x], relay.transpose(x, axes=[0, 1, -1])), relay.Function([x], x))


def test_layout_transform_round_trip():
    x = relay.var("x", shape=(1, 8, 4, 4))
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NHWC"), "NHWC", "NCHW")
    _check(relay.Function([x], y), relay.Function([x], x))


def test_simplify_cast():
    x = relay.var("x", shape=(4,), dtype="int32")
    _check(relay.Function([x], relay.cast(x, "int32") + x), relay.Function([x], x + x), [np.arange(4, dtype="int32")])
    widened = relay.cast(relay.cast(x, "int64"), "float64")
    _check(relay.Function([x], widened), relay.Function([x], relay.cast(x, "float64")), [np.arange(4, dtype="int32")])
    back = relay.cast(relay.cast(x, "int64"), "int32")
    _check(relay.Function([x], back), relay.Function([x], x), [np.arange(4, dtype="int32")])
    y = relay.var("y", shape=(4,), dtype="int32")
    _check(relay.Function([x, y], relay.cast_like(x, y)), relay.Function([x, y], x), [np.arange(4, dtype="int32")] * 2)


def test_lossy_casts_are_kept():
    x = relay.var("x", shape=(4,), dtype="float32")
    narrowed = relay.cast(relay.cast(x, "int8"), "float32")  # truncates: not x
    before = relay.Function([x], narrowed)
    _check(before, before, [np.array([1.5, -2.7, 3.0, 300.0], "float32")])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x * relay.const(1.0),
        lambda x: relay.const(1.0) * x,
        lambda x: x + relay.const(-0.0),
        lambda x: relay.const(np.full((3, 4), -0.0, "float32")) + x,
        lambda x: x - relay.const(0.0),
        lambda x: x / relay.const(1.0),
        lambda x: x * relay.ones_like(x),
    ],
)
def test_identities_disappear(make):
    x = relay.var("x", shape=(3, 4))
    _check(relay.Function([x], relay.nn.relu(make(x))), relay.Function([x], relay.nn.relu(x)))


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x + relay.const(0.0),  # -0 + +0 is +0
        lambda x: relay.zeros((3, 4), "float32") + x,
        lambda x: x - relay.const(-0.0),  # -0 - -0 is +0
        lambda x: x * relay.const(0.0),  # nan for x = inf or nan
        lambda x: relay.zeros((3, 4), "float32") / x,
        lambda x: x - x,
    ],
)
def test_float_rewrites_that_are_not_ieee_exact_stay(make):
    x = relay.var("x", shape=(3, 4))
    before = relay.Function([x], make(x))
    _check(before, before, [np.array([[-0.0, 0.0, np.inf, np.nan]] * 3, "float32")])


def test_integer_zero_identities_disappear():
    x = relay.var("x", shape=(3, 4), dtype="int32")
    _check(relay.Function([x], x + relay.zeros((3, 4), "int32")), relay.Function([x], x))


def test_identities_that_broadcast_or_change_dtype_stay():
    x = relay.var("x", shape=(4,))
    widening = relay.Function([x], x * relay.const(np.ones((2, 4), "float32")))  # result is (2, 4)
    _check(widening, widening)
    left_zero = relay.Function([x], relay.const(0.0) - x)  # 0 - x is -x
    _check(left_zero, left_zero)
    left_one = relay.Function([x], relay.const(1.0) / x)
    _check(left_one, left_one)


def test_adjacent_constant_adds_and_multiplies_merge():
    x = relay.var("x", shape=(2, 3), dtype="int32")
    c1, c2 = relay.const(np.arange(3, dtype="int32")), relay.const(2)
    _check(relay.Function([x], (x + c1) + c2), relay.Function([x], x + (c1 + c2)))
    _check(relay.Function([x], (x * c1) * c2), relay.Function([x], x * (c1 * c2)))


def test_adjacent_float_constants_are_not_reassociated():
    x = relay.var("x", shape=(2,))
    before = relay.Function([x], (x * relay.const(1e30)) * relay.const(1e-30))  # inf for x = 1e10
    _check(before, before, [np.array([1e10, 1.0], "float32")])


def test_unknown_shapes_are_left_alone():
    x = relay.var("x", relay.TensorType((relay.Any(), 4), "float32"))
    before = relay.Function([x], relay.reshape(relay.reshape(x, (-1, 2, 2)), (-1, 4)))
    before = run_infer_type(before)
    assert_same(run_opt_pass(before, transform.SimplifyExpr()), before)
