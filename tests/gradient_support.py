"""Numerical checking of Relay gradients: central differences in float64 through the reference interpreter."""

from __future__ import annotations

import numpy as np

import transpile
from transpile import relay
from transpile.relay.transform.gradient import first_order_gradient

RNG = np.random.default_rng(20261124)


def randn(*shape, low=None, high=None, away_from=None):
    """float64 test data; `away_from` moves values off the given kinks (by at least 0.1)."""
    if low is not None:
        values = RNG.uniform(low, high, size=shape)
    else:
        values = RNG.standard_normal(shape)
    for kink in away_from or ():
        values = np.where(np.abs(values - kink) < 0.1, values + np.where(values >= kink, 0.2, -0.2), values)
    return np.asarray(values, dtype="float64")


def _compile(params, body):
    return transpile.compile(relay.IRModule.from_expr(relay.Function(params, body)), backend="interpreter")


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _flatten(item)]
    return [np.asarray(value)]


def _cotangent(ty):
    """A random cotangent of type `ty` (numpy), so that no symmetry hides a wrong gradient."""
    if isinstance(ty, relay.TupleType):
        return tuple(_cotangent(f) for f in ty.fields)
    return RNG.standard_normal([int(d) for d in ty.shape]).astype(ty.dtype)


def _as_const(value):
    if isinstance(value, tuple):
        return relay.Tuple([_as_const(v) for v in value])
    return relay.const(value)


def check_gradient(build, *inputs, rtol=1e-6, atol=1e-6, eps=1e-6):
    """Compare first_order_gradient of `build(*vars)` with central differences of sum(output * cotangent)."""
    params = [relay.var(f"x{i}", shape=v.shape, dtype=v.dtype.name) for i, v in enumerate(inputs)]
    output = build(*params)
    forward = relay.Function(params, output)
    relay.infer_type(forward)
    cotangent = _cotangent(output.checked_type)
    grads = first_order_gradient(output, params, seed=_as_const(cotangent))
    analytic = _compile(params, relay.Tuple(grads))(*inputs)
    run = _compile(params, output)
    weights = _flatten(cotangent)

    def loss(values):
        return sum(float(np.sum(out * w)) for out, w in zip(_flatten(run(*values)), weights))

    for index, value in enumerate(inputs):
        numeric = np.zeros_like(value)
        for position in np.ndindex(*value.shape):
            values = [v.copy() for v in inputs]
            values[index][position] = value[position] + eps
            up = loss(values)
            values[index][position] = value[position] - eps
            numeric[position] = (up - loss(values)) / (2 * eps)
        np.testing.assert_allclose(analytic[index], numeric, rtol=rtol, atol=atol, err_msg=f"gradient of input {index}")
    return analytic
