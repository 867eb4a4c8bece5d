"""Gradients of the elementwise and broadcasting operators: arithmetic, transcendental functions, activations, selections."""

from __future__ import annotations

import math

from . import register_gradient
from ._support import op, scalar, tensor_type, unbroadcast


def _dtype(expr) -> str:
    return tensor_type(expr).dtype


def _const(value, like):
    return scalar(value, _dtype(like))


# ---------------------------------------------------------------- arithmetic


@register_gradient("add")
def _add(orig, grad):
    x, y = orig.args
    return [unbroadcast(grad, x, orig), unbroadcast(grad, y, orig)]


@register_gradient("subtract")
def _subtract(orig, grad):
    x, y = orig.args
    return [unbroadcast(grad, x, orig), unbroadcast(op("negative", grad), y, orig)]


@register_gradient("multiply")
def _multiply(orig, grad):
    x, y = orig.args
    return [unbroadcast(grad * y, x, orig), unbroadcast(grad * x, y, orig)]


@register_gradient("divide")
def _divide(orig, grad):
    # d(x / y)/dy = -x / y^2 = -(x / y) / y: the forward result saves a division.
    x, y = orig.args
    return [unbroadcast(grad / y, x, orig), unbroadcast(op("negative", grad * orig / y), y, orig)]


@register_gradient("negative")
def _negative(orig, grad):
    return [op("negative", grad)]


@register_gradient("power")
def _power(orig, grad):
    x, y = orig.args
    one = _const(1, orig)
    grad_x = grad * y * op("power", x, y - one)
    # d(x^y)/dy = x^y log x; where x == 0 the limit (y > 0) is 0, not 0 * -inf.
    safe = op("equal", x, _const(0, x))
    grad_y = op("where", safe, _const(0, orig), grad * orig * op("log", x))
    return [unbroadcast(grad_x, x, orig), unbroadcast(grad_y, y, orig)]


@register_gradient("maximum")
def _maximum(orig, grad):
    return _select_binary(orig, grad, "greater")


@register_gradient("minimum")
def _minimum(orig, grad):
    return _select_binary(orig, grad, "less")


def _select_binary(orig, grad, wins: str):
    """max/min: the gradient goes to the selected operand; ties split it evenly (as PyTorch does)."""
    x, y = orig.args
    half = grad * _const(0.5, orig)
    zero = _const(0, orig)
    tie = op("equal", x, y)
    grad_x = op("where", op(wins, x, y), grad, op("where", tie, half, zero))
    grad_y = op("where", op(wins, y, x), grad, op("where", tie, half, zero))
    return [unbroadcast(grad_x, x, orig), unbroadcast(grad_y, y, orig)]


@register_gradient("where")
def _where(orig, grad):
    cond, x, y = orig.args
    zero = _const(0, orig)
    return [
        None,
        unbroadcast(op("where", cond, grad, zero), x, orig),
        unbroadcast(op("where", cond, zero, grad), y, orig),
    ]


@register_gradient("clip")
def _clip(orig, grad):
    (x,) = orig.args
    dtype = _dtype(x)
    inside = op(
        "logical_and",
        op("greater_equal", x, scalar(orig.attrs.a_min, dtype)),
        op("less_equal", x, scalar(orig.attrs.a_max, dtype)),
    )
    return [op("where", inside, grad, _const(0, orig))]


# ---------------------------------------------------------------- exponentials, roots, logarithms


def _exp(orig, grad):
    return [grad * orig]


register_gradient("exp", _exp)
register_gradient("fast_exp", _exp)


@register_gradient("log")
def _log(orig, grad):
    return [grad / orig.args[0]]


def _log_base(base: float):
    def rule(orig, grad):
        x = orig.args[0]
        return [grad / (x * _const(math.log(base), x))]

    return rule


register_gradient("log2", _log_base(2.0))
register_gradient("log10", _log_base(10.0))


@register_gradient("sqrt")
def _sqrt(orig, grad):
    return [grad * _const(0.5, orig) / orig]


@register_gradient("rsqrt")
def _rsqrt(orig, grad):
    # d(x^-1/2)/dx = -1/2 x^-3/2 = -1/2 rsqrt(x)^3
    return [grad * _const(-0.5, orig) * orig * orig * orig]


@register_gradient("abs")
def _abs(orig, grad):
    return [grad * op("sign", orig.args[0])]


def _erf(orig, grad):
    x = orig.args[0]
    return [grad * _const(2.0 / math.sqrt(math.pi), x) * op("exp", op("negative", x * x))]


register_gradient("erf", _erf)
register_gradient("fast_erf", _erf)


# ---------------------------------------------------------------- trigonometric and hyperbolic


@register_gradient("sin")
def _sin(orig, grad):
    return [grad * op("cos", orig.args[0])]


@register_gradient("cos")
def _cos(orig, grad):
    return [op("negative", grad * op("sin", orig.args[0]))]


@register_gradient("tan")
def _tan(orig, grad):
    # 1 + tan^2 x = 1 / cos^2 x
    return [grad * (_const(1, orig) + orig * orig)]


@register_gradient("sinh")
def _sinh(orig, grad):
    return [grad * op("cosh", orig.args[0])]


@register_gradient("cosh")
def _cosh(orig, grad):
    return [grad * op("sinh", orig.args[0])]


def _tanh(orig, grad):
    return [grad * (_const(1, orig) - orig * orig)]


register_gradient("tanh", _tanh)
register_gradient("fast_tanh", _tanh)


def _inverse_trig(sign: float, inside_sign: float, root: bool):
    """d/dx of asin, acos, atan, asinh, acosh, atanh: sign / f(1 + inside_sign x^2) (f = sqrt or identity)."""

    def rule(orig, grad):
        x = orig.args[0]
        one = _const(1, x)
        square = x * x
        base = one + square if inside_sign > 0 else one - square
        if root:
            base = op("sqrt", base)
        return [grad * _const(sign, x) / base]

    return rule


register_gradient("asin", _inverse_trig(1.0, -1.0, True))
register_gradient("acos", _inverse_trig(-1.0, -1.0, True))
register_gradient("atan", _inverse_trig(1.0, 1.0, False))
register_gradient("asinh", _inverse_trig(1.0, 1.0, True))
register_gradient("atanh", _inverse_trig(1.0, -1.0, False))


@register_gradient("acosh")
def _acosh(orig, grad):
    x = orig.args[0]
    return [grad / op("sqrt", x * x - _const(1, x))]


# ---------------------------------------------------------------- activations


@register_gradient("sigmoid")
def _sigmoid(orig, grad):
    return [grad * orig * (_const(1, orig) - orig)]


@register_gradient("nn.relu")
def _relu(orig, grad):
    x = orig.args[0]
    return [op("where", op("greater", x, _const(0, x)), grad, _const(0, orig))]


@register_gradient("nn.leaky_relu")
def _leaky_relu(orig, grad):
    x = orig.args[0]
    return [op("where", op("greater", x, _const(0, x)), grad, grad * _const(orig.attrs.alpha, orig))]


# ---------------------------------------------------------------- identities, conversions, constants


@register_gradient("copy")
def _copy(orig, grad):
    return [grad]


@register_gradient("cast")
def _cast(orig, grad):
    return [op("cast_like", grad, orig.args[0])]


@register_gradient("cast_like")
def _cast_like(orig, grad):
    return [op("cast_like", grad, orig.args[0]), None]


def _zero(orig, grad):
    return [None] * len(orig.args)


# Piecewise-constant functions and fresh tensors: the derivative is zero (almost) everywhere.
for _name in ("zeros_like", "ones_like", "floor", "ceil", "round", "trunc", "sign"):
    register_gradient(_name, _zero)


@register_gradient("full_like")
def _full_like(orig, grad):
    fill = orig.args[1]
    return [None, op("cast_like", op("sum", grad), fill)]
