"""Forward scale folding: `conv2d(multiply(x, s), w)` -> `conv2d(x, w * s)` for a per-input-channel s.

Prepare (consumers first): conv2d and dense ask their data for a scale along its channel axis;
relu / leaky_relu forward the request (the scale must then be positive); add / subtract forward it
to the operand the other one only broadcasts against (the scale must then be a constant without
zeros: the other operand gets divided by it). A value used several times gets the
intersection of its users' requests, and nothing if any user cannot take a scale.
Rewrite (operands first): a requested `multiply` by a per-channel tensor becomes a pending scale
(`_Scaled`) carried through relu and add (the added operand is divided by the scale) until a
conv2d / dense multiplies it into its weights. Anything else receiving a pending scale applies it
(multiplies), so the program's meaning never depends on the requests. TVM's ForwardFoldScaleAxis.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import expr as E
from ...visitor import ExprMutator
from ..patterns import call, expand_bias_to_match_axis, is_primitive, op_name, tensor_type
from ..dag import children, post_order
from .common import (
    Message,
    conv_layout,
    dense_weight_ok,
    expand_scale,
    intersect,
    is_all_nonzero_constant,
    match_broadcast_to_left_axes,
)

__all__ = ["forward_fold_scale_axis"]

_UNSET = object()


def _requests(node: E.Call, out: Message | None) -> list[Message | None]:
    """What each operand of `node` is asked for, given what `node` itself is asked for."""
    name = op_name(node)
    none = [None] * len(node.args)
    if name == "nn.conv2d":
        layout = conv_layout(node)
        return [Message((layout.data_channel,)), None] if layout is not None else none
    if name == "nn.dense":
        data_type = tensor_type(node.args[0])
        return [Message((data_type.ndim - 1,)), None] if dense_weight_ok(node) and data_type is not None else none
    if name in ("nn.relu", "nn.leaky_relu"):
        return [out.requiring(positive=True) if out is not None else None]
    if name in ("add", "subtract") and out is not None:
        lhs_type, rhs_type = tensor_type(node.args[0]), tensor_type(node.args[1])
        if match_broadcast_to_left_axes(lhs_type, rhs_type, out.axes):
            return [out.requiring(nonzero=True), None]
        if match_broadcast_to_left_axes(rhs_type, lhs_type, out.axes):
            return [None, out.requiring(nonzero=True)]
    return none


def _prepare(func) -> dict[int, Message]:
    """The request reaching each call, by node id (calls without one are left out)."""
    messages: dict[int, object] = {}

    def update(node, message):
        known = messages.get(id(node), _UNSET)
        messages[id(node)] = message if known is _UNSET else intersect(known, message)

    update(func, None)
    for node in reversed(post_order(func)):
        if op_name(node) is not None:
            out = messages.get(id(node), _UNSET)
            for arg, request in zip(node.args, _requests(node, None if out is _UNSET else out)):
                update(arg, request)
        else:
            for child in children(node):
                update(child, None)
    return {key: m for key, m in messages.items() if isinstance(m, Message)}


@dataclass(frozen=True)
class _Scaled:
    """`value` still to be multiplied by `scale` along `axes` (TVM's ScaledExpr)."""

    value: E.Expr
    axes: tuple[int, ...]
    scale: E.Expr


class _ForwardRewriter(ExprMutator):
    def __init__(self, messages: dict[int, Message]):
        super().__init__()
        self.messages = messages
        self.realized: dict[int, E.Expr] = {}

    def visit_scaled(self, expr):
        """The rewritten expression, possibly a pending `_Scaled`."""
        return super().visit(expr)

    def visit(self, expr):
        result = super().visit(expr)
        if not isinstance(result, _Scaled):
            return result
        done = self.realized.get(id(expr))
        if done is None:
            ndim = tensor_type(expr).ndim
            done = self.realized[id(expr)] = call(
                "multiply", result.value, expand_scale(result.scale, ndim, result.axes)
            )
        return done

    def visit_function(self, f):
        if is_primitive(f):
            return f
        return super().visit_function(f)

    def visit_call(self, node):
        name = op_name(node)
        rule = _RULES.get(name)
        if rule is not None:
            out = rule(self, node)
            if out is not None:
                return out
        return super().visit_call(node)

    def _rebuild(self, node, args):
        return E.Call(node.op, args, node.attrs, node.type_args, node.span)

    def multiply(self, node):
        message = self.messages.get(id(node))
        if message is None:
            return None
        lhs, rhs = node.args
        for value, scale in ((lhs, rhs), (rhs, lhs)):
            ok, squeezed = match_broadcast_to_left_axes(tensor_type(value), tensor_type(scale), message.axes, scale)
            if ok and message.accepts(squeezed):
                return _Scaled(self.visit(value), message.axes, self.visit(squeezed))
        return None

    def relu(self, node):
        data = self.visit_scaled(node.args[0])
        if not isinstance(data, _Scaled):
            return None
        return _Scaled(self._rebuild(node, [data.value]), data.axes, data.scale)

    def add(self, node):
        lhs, rhs = (self.visit_scaled(a) for a in node.args)
        if isinstance(lhs, _Scaled) == isinstance(rhs, _Scaled):
            return None
        scaled, other, scaled_index = (lhs, node.args[1], 0) if isinstance(lhs, _Scaled) else (rhs, node.args[0], 1)
        if not is_all_nonzero_constant(scaled.scale):
            return None  # dividing by a zero (or unknown) scale would lose the value; prepare asked for none
        ndim = tensor_type(node.args[scaled_index]).ndim
        divided = call("divide", self.visit(other), expand_scale(scaled.scale, ndim, scaled.axes))
        args = [scaled.value, divided] if scaled_index == 0 else [divided, scaled.value]
        return _Scaled(self._rebuild(node, args), scaled.axes, scaled.scale)

    def conv2d(self, node):
        data = self.visit_scaled(node.args[0])
        if not isinstance(data, _Scaled):
            return None
        layout = conv_layout(node)
        if layout is None:
            return None
        axis = layout.kernel_out if layout.depthwise else layout.kernel_in
        weight = call(
            "multiply", self.visit(node.args[1]), expand_bias_to_match_axis(data.scale, layout.kernel_ndim, [axis])
        )
        return self._rebuild(node, [data.value, weight])

    def dense(self, node):
        data = self.visit_scaled(node.args[0])
        if not isinstance(data, _Scaled) or not dense_weight_ok(node):
            return None
        weight = call("multiply", self.visit(node.args[1]), expand_bias_to_match_axis(data.scale, 2, [1]))
        return self._rebuild(node, [data.value, weight])


_RULES = {
    "multiply": _ForwardRewriter.multiply,
    "nn.relu": _ForwardRewriter.relu,
    "nn.leaky_relu": _ForwardRewriter.relu,
    "add": _ForwardRewriter.add,
    "subtract": _ForwardRewriter.add,
    "nn.conv2d": _ForwardRewriter.conv2d,
    "nn.dense": _ForwardRewriter.dense,
}


def forward_fold_scale_axis(func):
    """`func` with per-channel multiplies before conv2d / dense folded into their weights."""
    messages = _prepare(func)
    if not messages:
        return func
    return _ForwardRewriter(messages).visit(func)
