"""Every operator gradient rule (transpile/relay/op/gradients) against central differences in float64.

Each case builds a small graph around one operator (shapes chosen to exercise broadcasting,
reductions over several axes, strides, padding, groups, ties excluded), differentiates it with a
random cotangent and compares every element of every input's gradient. The last test checks that
the cases together reach every operator that has a rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay.op.gradients import differentiable_ops

from gradient_support import check_gradient, randn

C = relay.const


def _bool(*shape):
    return C(np.random.default_rng(3).random(shape) > 0.5)


def _ints(values):
    return C(np.array(values, dtype="int64"))


def _positive(*shape):
    return randn(*shape, low=0.5, high=2.0)


def _case(name, build, *inputs, **tolerances):
    return pytest.param(build, inputs, tolerances, id=name)


ELEMWISE = [
    _case("add_broadcast", lambda x, y: x + y, randn(2, 3), randn(3)),
    _case("subtract_broadcast_both", lambda x, y: x - y, randn(2, 1, 3), randn(4, 1)),
    _case("multiply_broadcast", lambda x, y: x * y, randn(2, 3), randn(1, 3)),
    _case("divide", lambda x, y: x / y, randn(2, 3), _positive(3)),
    _case("negative", lambda x: -x, randn(2, 3)),
    _case("power", lambda x, y: relay.power(x, y), _positive(2, 3), randn(3)),
    _case("maximum", lambda x, y: relay.maximum(x, y), randn(2, 3), randn(3)),
    _case("minimum", lambda x, y: relay.minimum(x, y), randn(2, 3), randn(2, 1)),
    _case("where", lambda x, y: relay.where(_bool(2, 3), x, y), randn(2, 3), randn(3)),
    _case("clip", lambda x: relay.clip(x, -0.5, 0.7), randn(3, 4, away_from=(-0.5, 0.7))),
    _case("exp", lambda x: relay.exp(x), randn(2, 3)),
    _case("fast_exp", lambda x: relay.fast_exp(x), randn(2, 3), rtol=1e-4, atol=1e-4),
    _case("log", lambda x: relay.log(x), _positive(2, 3)),
    _case("log2", lambda x: relay.log2(x), _positive(2, 3)),
    _case("log10", lambda x: relay.log10(x), _positive(2, 3)),
    _case("sqrt", lambda x: relay.sqrt(x), _positive(2, 3)),
    _case("rsqrt", lambda x: relay.rsqrt(x), _positive(2, 3)),
    _case("abs", lambda x: relay.abs(x), randn(2, 3, away_from=(0,))),
    _case("erf", lambda x: relay.erf(x), randn(2, 3)),
    _case("fast_erf", lambda x: relay.fast_erf(x), randn(2, 3), rtol=1e-4, atol=1e-4),
    _case("sin", lambda x: relay.sin(x), randn(2, 3)),
    _case("cos", lambda x: relay.cos(x), randn(2, 3)),
    _case("tan", lambda x: relay.tan(x), randn(2, 3, low=-1.0, high=1.0)),
    _case("sinh", lambda x: relay.sinh(x), randn(2, 3)),
    _case("cosh", lambda x: relay.cosh(x), randn(2, 3)),
    _case("tanh", lambda x: relay.tanh(x), randn(2, 3)),
    _case("fast_tanh", lambda x: relay.fast_tanh(x), randn(2, 3), rtol=1e-4, atol=1e-4),
    _case("asin", lambda x: relay.asin(x), randn(2, 3, low=-0.9, high=0.9)),
    _case("acos", lambda x: relay.acos(x), randn(2, 3, low=-0.9, high=0.9)),
    _case("atan", lambda x: relay.atan(x), randn(2, 3)),
    _case("asinh", lambda x: relay.asinh(x), randn(2, 3)),
    _case("acosh", lambda x: relay.acosh(x), randn(2, 3, low=1.2, high=3.0)),
    _case("atanh", lambda x: relay.atanh(x), randn(2, 3, low=-0.9, high=0.9)),
    _case("sigmoid", lambda x: relay.sigmoid(x), randn(2, 3)),
    _case("relu", lambda x: relay.nn.relu(x), randn(3, 4, away_from=(0,))),
    _case("leaky_relu", lambda x: relay.nn.leaky_relu(x, alpha=0.2), randn(3, 4, away_from=(0,))),
    _case("copy", lambda x: relay.copy(x) * x, randn(2, 3)),
    _case(
        "cast_roundtrip",
        lambda x: relay.cast(relay.cast(x, "float32") * C(np.float32(3)), "float64"),
        randn(2, 3),
        rtol=1e-4,
        atol=1e-4,
        eps=1e-2,
    ),  # linear, so a float32-sized step is exact
    _case("cast_like", lambda x, y: relay.cast_like(x, y) * y, randn(2, 3), randn(2, 3)),
    _case(
        "piecewise_constant",
        lambda x: relay.floor(x) + relay.ceil(x) * x + relay.round(x) + relay.trunc(x) + relay.sign(x) * x,
        randn(2, 3, away_from=(-2, -1, -0.5, 0, 0.5, 1, 2)),
    ),
    _case("zeros_ones_like", lambda x: relay.zeros_like(x) + relay.ones_like(x) * x, randn(2, 3)),
    _case("full_like", lambda x, v: relay.full_like(x, v) * x, randn(2, 3), randn()),
]

REDUCE = [
    _case("sum_axis", lambda x: relay.sum(x, axis=[1]), randn(2, 3, 4)),
    _case("sum_all", lambda x: relay.sum(x), randn(2, 3)),
    _case("sum_keepdims_negative_axis", lambda x: relay.sum(x, axis=[-1, 0], keepdims=True), randn(2, 3, 4)),
    _case("sum_exclude", lambda x: relay.sum(x, axis=[1], exclude=True), randn(2, 3, 4)),
    _case("mean_axes", lambda x: relay.mean(x, axis=[0, 2]), randn(2, 3, 4)),
    _case("mean_all_keepdims", lambda x: relay.mean(x, keepdims=True), randn(2, 3)),
    _case("max_axis", lambda x: relay.max(x, axis=[1]), randn(3, 4)),
    _case("min_keepdims", lambda x: relay.min(x, axis=[0, 2], keepdims=True), randn(2, 3, 2)),
    _case("max_all", lambda x: relay.max(x), randn(3, 4)),
    _case("variance_of_mean", lambda x: relay.variance(x, axis=[1], keepdims=True), randn(2, 5)),
    _case(
        "variance_unbiased_given_mean",
        lambda x, m: relay.variance(x, m, axis=[1], unbiased=True),
        randn(2, 5),
        randn(2, 1),
    ),
    _case("cumsum", lambda x: relay.cumsum(x, axis=1), randn(2, 4)),
    _case("cumsum_exclusive_flat", lambda x: relay.cumsum(x, exclusive=True), randn(2, 3)),
]

TRANSFORM = [
    _case("reshape", lambda x: relay.reshape(x, newshape=(3, -1)) * C(randn(3, 4)), randn(2, 6)),
    _case("reshape_like", lambda x, y: relay.reshape_like(x, y) * y, randn(2, 6), randn(4, 3)),
    _case("contrib_reverse_reshape", lambda x: relay.contrib_reverse_reshape(x, newshape=(-1, 0)), randn(2, 3, 4)),
    _case("batch_flatten", lambda x: relay.nn.batch_flatten(x), randn(2, 3, 2)),
    _case("squeeze", lambda x: relay.squeeze(x, axis=[1]), randn(2, 1, 3)),
    _case("expand_dims", lambda x: relay.expand_dims(x, axis=1, num_newaxis=2) * C(randn(2, 1, 1, 3)), randn(2, 3)),
    _case("transpose_axes", lambda x: relay.transpose(x, axes=[1, -1, 0]), randn(2, 3, 4)),
    _case("transpose_reverse", lambda x: relay.transpose(x), randn(2, 3, 4)),
    _case("broadcast_to", lambda x: relay.broadcast_to(x, shape=(2, 3, 4)), randn(3, 1)),
    _case("broadcast_to_like", lambda x, y: relay.broadcast_to_like(x, y) * y, randn(1, 3), randn(2, 3)),
    _case("collapse_sum_like", lambda x, y: relay.collapse_sum_like(x, y) * y, randn(2, 3), randn(3)),
    _case("concatenate", lambda a, b, c: relay.concatenate([a, b, c], axis=1), randn(2, 1), randn(2, 3), randn(2, 2)),
    _case("concatenate_shared", lambda a: relay.concatenate([a, a * a], axis=-1), randn(2, 2)),
    _case("stack", lambda a, b: relay.stack([a, b], axis=-1), randn(2, 3), randn(2, 3)),
    _case("split_sections", lambda x: relay.split(x, 3, axis=1).astuple(), randn(2, 6)),
    _case("split_some_used", lambda x: relay.split(x, [1, 3], axis=0)[2] * C(randn(1, 2)), randn(4, 2)),
    _case("tile", lambda x: relay.tile(x, reps=(2, 1, 3)), randn(2, 3)),
    _case("repeat", lambda x: relay.repeat(x, repeats=3, axis=-1), randn(2, 2)),
    _case("reverse", lambda x: relay.reverse(x, axis=1), randn(2, 3)),
]

INDEXING = [
    _case("take_axis_repeated", lambda x: relay.take(x, _ints([2, 0, 2, -1]), axis=1), randn(2, 3)),
    _case("take_wrap_2d_indices", lambda x: relay.take(x, _ints([[3, -1], [0, 5]]), axis=0, mode="wrap"), randn(3, 2)),
    _case("take_flat", lambda x: relay.take(x, _ints([5, 0, 5])), randn(2, 3)),
    _case("take_scalar_index", lambda x: relay.take(x, _ints(1), axis=1), randn(2, 3, 2)),
    _case(
        "take_runtime_indices",
        lambda x: relay.take(x, relay.cast(relay.reshape(relay.sum(relay.ones_like(x)), (1,)), "int64"), axis=1),
        randn(2, 3),
    ),
    _case("strided_slice_unit", lambda x: relay.strided_slice(x, begin=[1, 0], end=[3, 2]), randn(4, 3)),
    _case(
        "strided_slice_steps", lambda x: relay.strided_slice(x, begin=[0, 3], end=[4, 0], strides=[2, -1]), randn(5, 4)
    ),
    _case("strided_slice_axes", lambda x: relay.strided_slice(x, begin=[1], end=[-1], axes=[2]), randn(2, 2, 4)),
    _case("gather", lambda x: relay.gather(x, 1, _ints([[0, 0, 2], [1, 2, 1]])), randn(2, 3)),
    _case("gather_nd", lambda x: relay.gather_nd(x, _ints([[0, 1, 1], [2, 0, 2]])), randn(2, 3, 2)),
    _case("pad", lambda x, v: relay.nn.pad(x, ((0, 1), (2, 1)), pad_value=v), randn(2, 3), randn()),
]

NN = [
    _case("dense", lambda x, w: relay.nn.dense(x, w), randn(3, 4), randn(2, 4)),
    _case("dense_3d", lambda x, w: relay.nn.dense(x, w), randn(2, 3, 4), randn(5, 4)),
    _case("matmul_nn", lambda a, b: relay.nn.matmul(a, b), randn(3, 4), randn(4, 2)),
    _case("matmul_tn", lambda a, b: relay.nn.matmul(a, b, transpose_a=True), randn(4, 3), randn(4, 2)),
    _case("matmul_nt_3d", lambda a, b: relay.nn.matmul(a, b, transpose_b=True), randn(2, 3, 4), randn(2, 4)),
    _case(
        "matmul_tt", lambda a, b: relay.nn.matmul(a, b, transpose_a=True, transpose_b=True), randn(4, 3), randn(2, 4)
    ),
    _case("matmul_1d", lambda a, b: relay.nn.matmul(a, b), randn(4), randn(4, 3)),
    _case(
        "batch_matmul_nt", lambda a, b: relay.nn.batch_matmul(a, b, transpose_b=True), randn(2, 3, 4), randn(2, 5, 4)
    ),
    _case(
        "batch_matmul_nn_broadcast",
        lambda a, b: relay.nn.batch_matmul(a, b, transpose_b=False),
        randn(2, 3, 4),
        randn(1, 4, 2),
    ),
    _case(
        "batch_matmul_tn",
        lambda a, b: relay.nn.batch_matmul(a, b, transpose_a=True, transpose_b=False),
        randn(1, 4, 3),
        randn(2, 4, 2),
    ),
    _case(
        "batch_matmul_tt",
        lambda a, b: relay.nn.batch_matmul(a, b, transpose_a=True, transpose_b=True),
        randn(2, 4, 3),
        randn(2, 2, 4),
    ),
    _case("bias_add", lambda x, b: relay.nn.bias_add(x, b), randn(2, 3, 2, 2), randn(3)),
    _case("bias_add_last_axis", lambda x, b: relay.nn.bias_add(x, b, axis=-1), randn(2, 3), randn(3)),
    _case("softmax", lambda x: relay.nn.softmax(x), randn(2, 4)),
    _case("softmax_axis1", lambda x: relay.nn.softmax(x, axis=1), randn(2, 3, 2)),
    _case("log_softmax", lambda x: relay.nn.log_softmax(x), randn(2, 4)),
    _case("prelu", lambda x, a: relay.nn.prelu(x, a), randn(2, 3, 2, away_from=(0,)), randn(3)),
    _case("conv2d_pad", lambda x, w: relay.nn.conv2d(x, w, padding=(1, 1)), randn(1, 2, 4, 4), randn(3, 2, 3, 3)),
    _case(
        "conv2d_stride_asym_pad",
        lambda x, w: relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 0, 0, 1)),
        randn(2, 1, 5, 6),
        randn(2, 1, 3, 2),
    ),
    _case(
        "conv2d_dilation",
        lambda x, w: relay.nn.conv2d(x, w, dilation=(2, 1), padding=(1, 1)),
        randn(1, 2, 6, 4),
        randn(2, 2, 2, 3),
    ),
    _case(
        "conv2d_groups",
        lambda x, w: relay.nn.conv2d(x, w, groups=2, strides=(2, 1), padding=(1, 1)),
        randn(2, 4, 5, 4),
        randn(6, 2, 3, 3),
    ),
    _case(
        "conv2d_depthwise",
        lambda x, w: relay.nn.conv2d(x, w, groups=3, padding=(1, 1)),
        randn(1, 3, 4, 4),
        randn(3, 1, 3, 3),
    ),
    _case("conv1d", lambda x, w: relay.nn.conv1d(x, w, strides=(2,), padding=(1, 2)), randn(2, 2, 7), randn(3, 2, 3)),
    _case("conv3d", lambda x, w: relay.nn.conv3d(x, w, padding=(1, 0, 1)), randn(1, 2, 3, 3, 3), randn(2, 2, 2, 2, 2)),
]

POOL = [
    _case("global_avg_pool2d", lambda x: relay.nn.global_avg_pool2d(x), randn(2, 3, 2, 3)),
    _case("global_avg_pool2d_nhwc", lambda x: relay.nn.global_avg_pool2d(x, layout="NHWC"), randn(2, 2, 3, 3)),
    _case("global_max_pool2d", lambda x: relay.nn.global_max_pool2d(x), randn(2, 2, 3, 3)),
    _case("avg_pool2d", lambda x: relay.nn.avg_pool2d(x, pool_size=(2, 2), strides=(2, 2)), randn(1, 2, 4, 4)),
    _case(
        "avg_pool2d_pad_exclusive",
        lambda x: relay.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1)),
        randn(1, 2, 5, 5),
    ),
    _case(
        "avg_pool2d_pad_inclusive_ceil",
        lambda x: relay.nn.avg_pool2d(
            x, pool_size=(3, 2), strides=(2, 2), padding=(1, 0), ceil_mode=True, count_include_pad=True
        ),
        randn(1, 1, 6, 5),
    ),
    _case(
        "avg_pool1d_dilated",
        lambda x: relay.nn.avg_pool1d(x, pool_size=(2,), dilation=(2,), padding=(1,)),
        randn(2, 2, 6),
    ),
    _case("avg_pool3d", lambda x: relay.nn.avg_pool3d(x, pool_size=(2, 2, 2), strides=(1, 2, 2)), randn(1, 1, 3, 4, 4)),
    _case(
        "max_pool2d_overlapping",
        lambda x: relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(1, 1), padding=(1, 1)),
        randn(1, 2, 4, 4),
    ),
    _case(
        "max_pool2d_stride_ceil",
        lambda x: relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2), ceil_mode=True),
        randn(2, 1, 5, 5),
    ),
    _case("max_pool1d", lambda x: relay.nn.max_pool1d(x, pool_size=(3,), strides=(2,), padding=(1,)), randn(1, 2, 7)),
    _case("max_pool3d", lambda x: relay.nn.max_pool3d(x, pool_size=(2, 2, 2), strides=(1, 1, 1)), randn(1, 1, 3, 3, 3)),
]

ALL_CASES = ELEMWISE + REDUCE + TRANSFORM + INDEXING + NN + POOL


@pytest.mark.parametrize("build, inputs, tolerances", ALL_CASES)
def test_rule_matches_central_differences(build, inputs, tolerances):
    check_gradient(build, *inputs, **tolerances)


def _called_ops(expr) -> set:
    names, stack, seen = set(), [expr], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, relay.Call):
            names.add(node.op.name)
            stack.extend(node.args)
        elif isinstance(node, relay.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, relay.TupleGetItem):
            stack.append(node.tuple_value)
    return names


def test_the_cases_reach_every_rule():
    reached = set()
    for case in ALL_CASES:
        build, inputs, _ = case.values
        params = [relay.var(f"x{i}", shape=v.shape, dtype=v.dtype.name) for i, v in enumerate(inputs)]
        reached |= _called_ops(build(*params))
    assert sorted(set(differentiable_ops()) - reached) == []
