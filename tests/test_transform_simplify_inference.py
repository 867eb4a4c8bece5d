"""SimplifyInference: batch_norm, dropout, layer/instance/group norm and l2_normalize as arithmetic
(cases from TVM's tests/python/relay/test_pass_simplify_inference.py, plus let-bound and numeric checks)."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform

from transform_support import HEADER, assert_same, assert_same_results, run_infer_type, run_opt_pass


def simple_bn(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, shape=None, dtype="float32"):
    """TVM's expected expansion: x * (gamma / sqrt(var + eps)) + (beta - mean * scale), per channel."""
    scale = relay.multiply(relay.const(1, dtype) / relay.sqrt(moving_var + relay.const(epsilon, dtype)), gamma)
    shift = relay.add(relay.multiply(relay.negative(moving_mean), scale), beta)
    num_newaxis = len(shape) - (axis + 1)
    if num_newaxis:
        scale = relay.expand_dims(scale, axis=1, num_newaxis=num_newaxis)
        shift = relay.expand_dims(shift, axis=1, num_newaxis=num_newaxis)
    return x * scale + shift


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dim, axis, nstep", [(2, 1, 1), (4, 1, 1), (4, 0, 3)])
def test_simplify_batchnorm(dim, axis, nstep, dtype):
    eps = 0.01
    ttype1 = relay.TensorType(tuple(10 for _ in range(dim)), dtype)
    ttype2 = relay.TensorType((10,), dtype)
    x = relay.var("x", ttype1)
    beta = relay.var("beta", ttype2)
    gamma = relay.var("gamma", ttype2)
    moving_var = relay.var("moving_var", ttype2)
    moving_mean = relay.var("moving_mean", ttype2)
    y1, y2 = x, x
    for _ in range(nstep):
        y1 = relay.nn.batch_norm(
            y1 + relay.const(1, dtype), gamma, beta, moving_mean, moving_var, epsilon=eps, axis=axis
        )[0]
        y1 = relay.nn.dropout(y1)
        y2 = simple_bn(
            y2 + relay.const(1, dtype),
            gamma,
            beta,
            moving_mean,
            moving_var,
            epsilon=eps,
            axis=axis,
            shape=ttype1.shape,
            dtype=dtype,
        )
    params = [x, gamma, beta, moving_mean, moving_var]
    simplified = run_opt_pass(relay.Function(params, y1), transform.SimplifyInference())
    assert_same(simplified, relay.Function(params, y2))


def test_batchnorm_numerics_center_scale_and_negative_axis():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 3, 4, 5))
    params = [relay.const(rng.uniform(0.5, 2, 5).astype("float32")) for _ in range(4)]
    for center in (True, False):
        for scale in (True, False):
            out = relay.nn.batch_norm(x, *params, axis=-1, epsilon=1e-3, center=center, scale=scale)[0]
            before = run_infer_type(relay.Function([x], out))
            after = run_opt_pass(before, transform.SimplifyInference())
            assert "nn.batch_norm" not in str(after)
            data = rng.standard_normal((2, 3, 4, 5)).astype("float32")
            assert_same_results(before, after, data)


def test_batchnorm_statistics_outputs_are_the_moving_statistics():
    x = relay.var("x", shape=(1, 3, 2, 2))
    gamma, beta, mean, var = (relay.var(n, shape=(3,)) for n in ("gamma", "beta", "mean", "var"))
    bn = relay.nn.batch_norm(x, gamma, beta, mean, var)
    out = run_opt_pass(
        relay.Function([x, gamma, beta, mean, var], relay.Tuple([bn[1], bn[2]])), transform.SimplifyInference()
    )
    assert out.body.fields[0] is out.params[3] and out.body.fields[1] is out.params[4]


def test_let_bound_batch_norm_and_dropout():
    mod = relay.parse(HEADER + """
def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
          %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
  let %t = nn.batch_norm(%x, %g, %b, %m, %v);
  let %y = %t.0;
  let %d = nn.dropout(%y, rate=0.3);
  %d.0
}
""")
    out = transform.SimplifyInference()(mod)
    text = str(out["main"])
    assert "multiply" in text and "%d.0" not in text
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((1, 2, 3, 3)).astype("float32")] + [
        rng.uniform(0.5, 1.5, 2).astype("float32") for _ in range(4)
    ]
    assert_same_results(mod, out, *args)


@pytest.mark.parametrize(
    "make, shape, channels",
    [
        (lambda x, g, b: relay.nn.layer_norm(x, g, b, axis=-1, epsilon=1e-4), (2, 3, 6), 6),
        (lambda x, g, b: relay.nn.layer_norm(x, g, b, axis=1, center=False), (2, 3, 6), 3),
        (lambda x, g, b: relay.nn.instance_norm(x, g, b, axis=1, epsilon=1e-3), (2, 3, 4, 5), 3),
        (lambda x, g, b: relay.nn.instance_norm(x, g, b, axis=-1, scale=False), (2, 4, 5, 3), 3),
        (lambda x, g, b: relay.nn.group_norm(x, g, b, num_groups=2, axis=1), (2, 4, 3, 3), 4),
        (lambda x, g, b: relay.nn.group_norm(x, g, b, num_groups=3, axis=-1), (2, 3, 3, 6), 6),
    ],
)
def test_normalizations_become_arithmetic(make, shape, channels):
    x = relay.var("x", shape=shape)
    gamma, beta = relay.var("g", shape=(channels,)), relay.var("b", shape=(channels,))
    before = run_infer_type(relay.Function([x, gamma, beta], make(x, gamma, beta)))
    after = run_opt_pass(before, transform.SimplifyInference())
    assert before.body.op.name not in str(after)
    rng = np.random.default_rng(2)
    args = [
        rng.standard_normal(shape).astype("float32"),
        rng.uniform(0.5, 1.5, channels).astype("float32"),
        rng.standard_normal(channels).astype("float32"),
    ]
    assert_same_results(before, after, *args, rtol=1e-4, atol=1e-5)


def test_l2_normalize():
    x = relay.var("x", shape=(2, 3, 4))
    for axis in ([1], [1, 2], []):
        before = run_infer_type(relay.Function([x], relay.nn.l2_normalize(x, eps=1e-6, axis=axis)))
        after = run_opt_pass(before, transform.SimplifyInference())
        assert "l2_normalize" not in str(after)
        assert_same_results(before, after, np.random.default_rng(3).standard_normal((2, 3, 4)).astype("float32"))


def test_everything_else_is_left_alone():
    src = HEADER + """
def @main(%x: Tensor[(2, 2), float32], %r: ref(Tensor[(2, 2), float32])) {
  let %f = fn (%y: Tensor[(2, 2), float32]) { nn.relu(%y) };
  let %w = ref_write(%r, %f(%x));
  if (sum(%x) > 0f) { ref_read(%r) } else { %x }
}
"""
    mod = relay.transform.InferType()(relay.parse(src))
    out = transform.SimplifyInference()(mod)
    relay.assert_structural_equal(out["main"], mod["main"])
