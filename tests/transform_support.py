"""Helpers for the graph-level pass tests (tests/test_transform_*.py), in the style of TVM's pass tests."""

from __future__ import annotations

import numpy as np

from transpile import relay
from transpile.relay import transform

HEADER = '#[version = "0.0.5"]\n'


def run_opt_pass(expr, opt_pass):
    """`opt_pass` applied to `expr` as @main of a module; the function back (or its body), like TVM's tests."""
    assert isinstance(opt_pass, transform.Pass)
    mod = relay.IRModule.from_expr(expr)
    mod = opt_pass(mod)
    entry = mod["main"]
    return entry if isinstance(expr, relay.Function) else entry.body


def run_infer_type(expr):
    return run_opt_pass(expr, transform.InferType())


def assert_same(actual, expected):
    """Structural equality of two expressions after type inference (TVM's tvm.ir.structural_equal)."""
    relay.assert_structural_equal(run_infer_type(actual), run_infer_type(expected))


def random_inputs(func, seed: int = 0, positive: bool = False):
    """Random float arguments for every parameter of a typed function."""
    rng = np.random.default_rng(seed)
    out = []
    for param in func.params:
        ty = param.checked_type
        data = rng.uniform(0.5, 1.5, ty.shape) if positive else rng.standard_normal(ty.shape)
        out.append(np.asarray(data, dtype=ty.dtype))
    return out


def assert_same_results(before, after, *args, rtol=1e-5, atol=1e-5):
    """The interpreter gives `before` and `after` (Functions or modules) the same results on `args`."""

    def run(program):
        mod = program if isinstance(program, relay.IRModule) else relay.IRModule.from_expr(program)
        return relay.evaluate(mod, *args)

    np.testing.assert_allclose(run(after), run(before), rtol=rtol, atol=atol)


def positive_scale(shape, seed: int = 0):
    return np.random.default_rng(seed).uniform(0.5, 1, size=shape).astype("float32")
