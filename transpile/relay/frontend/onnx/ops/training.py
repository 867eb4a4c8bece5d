"""Converter of the ONNX training operator Gradient (domain ai.onnx.preview.training), by first-order reverse-mode AD.

`Gradient(xs, zs, y)` outputs dy/dx for each x in xs, y being a function of the tensors named in
xs and zs. The importer has already built y's graph, so the converter differentiates that graph
(seed ones: the gradient of the sum of y's elements). The node's inputs are the point where the
gradient is evaluated; where an input is not the tensor its name in xs/zs denotes, the graph is
re-evaluated with the input in that tensor's place.
"""

from __future__ import annotations

from ....expr import Constant, Expr
from ....transform.gradient import GradientError, first_order_gradient, replace_nodes
from ..converters import converter


def _named_value(ctx, name: str, role: str) -> Expr:
    values = ctx.graph.values
    if name not in values:
        raise ctx.b.error(f"{role} {name!r} is produced by no earlier node, initializer or graph input")
    value = values[name]
    if not isinstance(value, Expr):
        raise ctx.unsupported(f"{role} {name!r} is not a tensor")
    return value


@converter("Gradient", domain="ai.onnx.preview.training")
def gradient(ctx):
    xs, zs, y = list(ctx.attr("xs", [])), list(ctx.attr("zs", [])), ctx.attr("y")
    if not xs or not y:
        raise ctx.b.error("Gradient needs the attributes xs (a non-empty list of names) and y")
    target = _named_value(ctx, y, "y")
    wrt = [_named_value(ctx, name, "xs entry") for name in xs]
    for name, value in zip(xs, wrt):
        if isinstance(value, Constant):
            raise ctx.unsupported(
                f"xs entry {name!r} became a constant at import (a frozen initializer, or computed from them): "
                "import with freeze_params=False to differentiate with respect to it"
            )
    try:
        grads = first_order_gradient(target, wrt)
    except GradientError as exc:
        raise ctx.unsupported(exc.message) from None
    replaced = {}
    for index, name in enumerate(xs + zs):
        given = ctx.input(index, required=False)
        named = _named_value(ctx, name, "zs entry" if index >= len(xs) else "xs entry")
        if given is not None and given is not named:
            replaced[id(named)] = given
    return replace_nodes(grads, replaced) if replaced else grads
