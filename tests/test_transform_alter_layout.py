"""AlterOpLayout: NCHW convolutions to nn.contrib_conv2d_NCHWc, packed activations carried through
elementwise ops and pools, weights re-packed by FoldConstant, results unchanged."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform
from transpile.relay.transform.alter_op_layout import alter_op_layout, channel_block

F32 = "float32"
rng = np.random.default_rng(0)


def const(*shape, scale=0.3):
    return relay.const((rng.standard_normal(shape) * scale).astype(F32))


def small_cnn():
    """ResNet / MobileNet in miniature: stem conv on RGB, bias + relu, a residual 1x1 / 3x3 block,
    max pool, a 24-channel layer (blocks of 8), a depthwise conv with relu6, global pool, dense."""
    x = relay.var("x", shape=(1, 3, 20, 20))
    y = relay.nn.conv2d(x, const(32, 3, 3, 3), strides=(2, 2), padding=(1, 1))
    y = relay.nn.relu(relay.add(y, const(32, 1, 1)))  # 10x10
    skip = y
    y = relay.nn.relu(relay.add(relay.nn.conv2d(y, const(16, 32, 1, 1)), const(16, 1, 1)))
    y = relay.nn.conv2d(y, const(32, 16, 3, 3), padding=(1, 1))
    y = relay.nn.relu(relay.add(y, skip) * const(1, 32, 1, 1) + relay.const(0.5))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))  # 5x5
    y = relay.nn.conv2d(y, const(24, 32, 1, 1))
    y = relay.nn.conv2d(y, const(24, 1, 3, 3), padding=(1, 1), groups=24, channels=24, kernel_size=(3, 3))
    y = relay.clip(y, 0.0, 6.0)
    y = relay.nn.global_avg_pool2d(y)
    y = relay.nn.dense(relay.nn.batch_flatten(y), const(10, 24))
    return relay.IRModule.from_expr(relay.Function([x], y))


def ops(mod) -> Counter:
    return Counter(re.findall(r"= ([A-Za-z_.0-9]+)\(", mod.astext()))


@pytest.fixture(scope="module")
def altered():
    mod = transform.InferType()(small_cnn())
    return mod, transform.FoldConstant()(transform.AlterOpLayout(lanes=16)(mod))


def test_every_conv_becomes_packed_and_activations_stay_packed(altered):
    _, new = altered
    counts = ops(new)
    assert counts["nn.contrib_conv2d_NCHWc"] == 5 and counts["nn.conv2d"] == 0
    # Only the input (NCHW -> NCHW3c) and the pooled result (-> NCHW for batch_flatten) change layout;
    # the weights' layout_transforms were folded into constants.
    assert counts["layout_transform"] == 2
    text = new.astext()
    assert 'layout="NCHW16c"' in text  # max_pool2d and global_avg_pool2d run packed
    assert 'data_layout="NCHW3c"' in text and 'kernel_layout="OIHW3i16o"' in text  # RGB stem: one block of 3
    assert 'out_layout="NCHW8c"' in text  # 24 channels: blocks of 8
    assert 'kernel_layout="OIHW1i8o"' in text  # depthwise keeps its input's block


def test_results_are_unchanged(altered):
    mod, new = altered
    x = rng.standard_normal((1, 3, 20, 20)).astype(F32)
    np.testing.assert_allclose(relay.evaluate(new, x), relay.evaluate(mod, x), rtol=1e-4, atol=1e-5)


def test_packed_model_compiles_and_runs_on_cpp(altered):
    import transpile

    pytest.importorskip("tvm")
    mod, new = altered
    x = rng.standard_normal((1, 3, 20, 20)).astype(F32)
    out = transpile.compile(new, backend="cpp")(x)
    np.testing.assert_allclose(out, relay.evaluate(mod, x), rtol=1e-4, atol=1e-5)


def test_channel_blocks():
    assert channel_block(64, 16) == 16
    assert channel_block(24, 16) == 8
    assert channel_block(3, 16) == 3  # fits one vector: one block
    assert channel_block(18, 16) is None  # no block of 4 or more, too many for one vector
    assert channel_block(64, 8) == 8


def test_operand_varying_over_width_is_computed_in_nchw():
    x = relay.var("x", shape=(1, 16, 6, 6))
    y = relay.nn.conv2d(x, const(16, 16, 1, 1))
    y = relay.nn.relu(y + const(6))  # broadcast along W: no packed form of this operand
    mod = transform.InferType()(relay.IRModule.from_expr(relay.Function([x], y)))
    new = transform.AlterOpLayout(lanes=16)(mod)
    text = new.astext()
    assert "nn.contrib_conv2d_NCHWc" in text and 'dst_layout="NCHW")' in text
    xv = rng.standard_normal((1, 16, 6, 6)).astype(F32)
    np.testing.assert_allclose(relay.evaluate(new, xv), relay.evaluate(mod, xv), rtol=1e-5, atol=1e-6)


def test_unblockable_and_non_nchw_convs_are_left_alone():
    x = relay.var("x", shape=(1, 18, 6, 6))
    y = relay.nn.conv2d(x, const(18, 18, 3, 3), padding=(1, 1))  # 18 channels: no block
    nhwc = relay.var("n", shape=(1, 6, 6, 16))
    z = relay.nn.conv2d(nhwc, const(3, 3, 16, 16), data_layout="NHWC", kernel_layout="HWIO")
    mod = transform.InferType()(relay.IRModule.from_expr(relay.Function([x, nhwc], relay.Tuple([y, z]))))
    new = transform.AlterOpLayout(lanes=16)(mod)
    assert "contrib_conv2d_NCHWc" not in new.astext()


def test_functions_with_control_flow_are_not_rewritten():
    x = relay.var("x", shape=(1, 16, 6, 6))
    c = relay.var("c", shape=(), dtype="bool")
    conv = relay.nn.conv2d(x, const(16, 16, 1, 1))
    func = relay.Function([x, c], relay.If(c, conv, x))
    mod = transform.InferType()(relay.IRModule.from_expr(func))
    assert alter_op_layout(mod["main"], mod, None, lanes=16) is mod["main"]


def test_pass_metadata_and_vector_width():
    p = transform.AlterOpLayout()
    assert p.name == "AlterOpLayout" and p.opt_level == 3
    x = relay.var("x", shape=(1, 16, 4, 4))
    mod = transform.InferType()(relay.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(x, const(32, 16, 1, 1)))))
    assert 'data_layout="NCHW8c"' in transform.AlterOpLayout(lanes=8)(mod).astext()
