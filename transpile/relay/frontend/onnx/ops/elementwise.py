"""Converters of ONNX elementwise operators: arithmetic, comparison, logic, unary math, activations."""

from __future__ import annotations

from ..converters import converter
from .support import broadcast_legacy

_BINARY = {
    "Add": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    "Div": "divide",
}


def _binary(relay_op):
    def convert(ctx):
        a, b = ctx.input(0), ctx.input(1)
        if ctx.opset < 7:
            b = broadcast_legacy(ctx, a, b)
        return ctx.b.call(relay_op, a, b)

    return convert


for _onnx_op, _relay_op in _BINARY.items():
    converter(_onnx_op)(_binary(_relay_op))


@converter("Relu")
def relu(ctx):
    return ctx.b.call("nn.relu", ctx.input(0))


@converter("Identity")
def identity(ctx):
    return ctx.input(0)
