"""CanonicalizeOps: nn.bias_add becomes add with an expand_dims'd bias (TVM's canonicalize_ops.cc)."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform

from transform_support import assert_same, assert_same_results, random_inputs, run_infer_type, run_opt_pass


@pytest.mark.parametrize(
    "shape, axis, expanded",
    [
        ((1, 8, 5, 5), 1, lambda b: relay.expand_dims(b, axis=1, num_newaxis=2)),
        ((1, 5, 5, 8), -1, lambda b: b),
        ((1, 5, 5, 8), 3, lambda b: b),
        ((8, 3), 0, lambda b: relay.expand_dims(b, axis=1, num_newaxis=1)),
        ((2, 8), 1, lambda b: b),
    ],
)
def test_bias_add_becomes_add(shape, axis, expanded):
    x = relay.var("x", shape=shape)
    bias = relay.var("bias", shape=(shape[axis],))
    before = run_infer_type(relay.Function([x, bias], relay.nn.bias_add(x, bias, axis=axis)))
    after = run_opt_pass(before, transform.CanonicalizeOps())
    assert_same(after, relay.Function([x, bias], relay.add(x, expanded(bias))))
    assert_same_results(before, after, *random_inputs(before))


def test_constant_bias_folds_to_a_broadcastable_constant():
    x = relay.var("x", shape=(1, 4, 3, 3))
    bias = np.arange(4, dtype="float32")
    before = relay.Function([x], relay.nn.relu(relay.nn.bias_add(x, relay.const(bias))))
    with transform.PassContext(opt_level=3):  # CanonicalizeOps is an opt_level 3 pass
        after = run_opt_pass(before, transform.Sequential([transform.CanonicalizeOps(), transform.FoldConstant()]))
    add = after.body.args[0]
    assert add.op.name == "add" and add.args[1].data.shape == (4, 1, 1)
    np.testing.assert_array_equal(add.args[1].data.ravel(), bias)


def test_other_calls_are_unchanged():
    x = relay.var("x", shape=(2, 3))
    before = relay.Function([x], relay.add(relay.nn.relu(x), x))
    assert_same(run_opt_pass(before, transform.CanonicalizeOps()), before)
