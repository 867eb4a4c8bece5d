"""Backward scale folding: `multiply(conv2d(x, w), s)` -> `conv2d(x, w * s)` for a per-output-channel s.

Prepare (post-order): a call used by exactly one parent tells that parent which of its axes a
scale could be pushed into: conv2d and dense their output channel axis; relu / leaky_relu pass
their operand's axes on (the scale must then be positive); add / subtract pass them on when the
other operand only broadcasts along those axes, or when both operands carry the same axes; so does
bias_add along its axis.
Transform: a `multiply` by a tensor varying only along its operand's axes is removed and its scale
pushed down: into the weights of the conv2d / dense, through relu, and onto both operands of an
add (a broadcast operand or bias_add's bias is multiplied by the scale). TVM's BackwardFoldScaleAxis.
"""

from __future__ import annotations

from ... import expr as E
from ...visitor import ExprMutator
from ..dag import ReferenceCounts, post_order
from ..patterns import call, expand_bias_to_match_axis, is_primitive, op_name, tensor_type
from .common import Message, conv_layout, dense_weight_ok, expand_scale, match_broadcast_to_left_axes

__all__ = ["backward_fold_scale_axis"]


def _prepare_message(node: E.Call, messages: dict, add_sides: dict) -> Message | None:
    """The axes along which `node`'s result could absorb a scale, or None.

    For add / subtract, `add_sides[id(node)]` records which operands will take the scale: "lhs" or
    "rhs" (the other one is multiplied by it) or "both".
    """
    name = op_name(node)
    if name == "nn.conv2d":
        layout = conv_layout(node)
        return Message((layout.out_channel,)) if layout is not None else None
    if name == "nn.dense":
        out_type = tensor_type(node)
        return Message((out_type.ndim - 1,)) if dense_weight_ok(node) and out_type is not None else None
    if name in ("nn.relu", "nn.leaky_relu"):
        inner = messages.get(id(node.args[0]))
        return inner.requiring(positive=True) if inner is not None else None
    if name == "nn.bias_add":
        inner = messages.get(id(node.args[0]))
        data_type = tensor_type(node.args[0])
        if inner is None or data_type is None:
            return None
        axis = node.attrs.axis + data_type.ndim if node.attrs.axis < 0 else node.attrs.axis
        return inner if inner.axes == (axis,) else None
    if name in ("add", "subtract"):
        lhs, rhs = node.args
        lhs_msg, rhs_msg = messages.get(id(lhs)), messages.get(id(rhs))
        lhs_type, rhs_type = tensor_type(lhs), tensor_type(rhs)
        if lhs_msg is not None and match_broadcast_to_left_axes(lhs_type, rhs_type, lhs_msg.axes):
            add_sides[id(node)] = "lhs"
            return lhs_msg
        if rhs_msg is not None and match_broadcast_to_left_axes(rhs_type, lhs_type, rhs_msg.axes):
            add_sides[id(node)] = "rhs"
            return rhs_msg
        if lhs_msg is not None and rhs_msg is not None and lhs_msg.axes == rhs_msg.axes and lhs_type == rhs_type:
            add_sides[id(node)] = "both"
            return lhs_msg.requiring(positive=rhs_msg.require_positive)
    return None


def _prepare(func) -> tuple[dict[int, Message], dict[int, str]]:
    """Messages of the calls that may absorb a scale, by node id, and the scaled sides of adds."""
    refs = ReferenceCounts(func)
    messages: dict[int, Message] = {}
    add_sides: dict[int, str] = {}
    for node in _post_order_calls(func):
        if refs.uses(node) != 1:
            continue  # a result used twice cannot be rescaled for one of its users
        message = _prepare_message(node, messages, add_sides)
        if message is not None:
            messages[id(node)] = message
    return messages, add_sides


def _post_order_calls(root) -> list[E.Call]:
    """Operator calls in post-order (operands first), not entering fused kernels."""
    return [node for node in post_order(root) if op_name(node) is not None]


class _BackwardTransformer(ExprMutator):
    def __init__(self, messages: dict[int, Message], add_sides: dict[int, str]):
        super().__init__()
        self.messages = messages
        self.add_sides = add_sides

    def visit_function(self, f):
        if is_primitive(f):
            return f
        return super().visit_function(f)

    def visit_call(self, node):
        if op_name(node) == "multiply":
            folded = self._fold_multiply(node)
            if folded is not None:
                return folded
        return super().visit_call(node)

    def _fold_multiply(self, node):
        lhs, rhs = node.args
        for value, scale in ((lhs, rhs), (rhs, lhs)):
            message = self.messages.get(id(value))
            if message is None:
                continue
            ok, squeezed = match_broadcast_to_left_axes(tensor_type(value), tensor_type(scale), message.axes, scale)
            if ok and message.accepts(squeezed):
                return self.transform(value, message, self.visit(squeezed))
        return None

    def transform(self, node, message: Message, scale):
        """`node` computing its result already multiplied by `scale` along `message.axes`."""
        name = op_name(node)
        if name == "nn.conv2d":
            layout = conv_layout(node)
            weight = call(
                "multiply",
                self.visit(node.args[1]),
                expand_bias_to_match_axis(scale, layout.kernel_ndim, [layout.kernel_out]),
            )
            return E.Call(node.op, [self.visit(node.args[0]), weight], node.attrs, node.type_args, node.span)
        if name == "nn.dense":
            weight = call("multiply", self.visit(node.args[1]), expand_bias_to_match_axis(scale, 2, [0]))
            return E.Call(node.op, [self.visit(node.args[0]), weight], node.attrs, node.type_args, node.span)
        if name in ("nn.relu", "nn.leaky_relu"):
            return E.Call(
                node.op, [self.transform(node.args[0], message, scale)], node.attrs, node.type_args, node.span
            )
        if name in ("add", "subtract"):
            return self._transform_add(node, message, scale)
        if name == "nn.bias_add":
            data = self.transform(node.args[0], message, scale)
            bias = call("multiply", self.visit(node.args[1]), scale)
            return E.Call(node.op, [data, bias], node.attrs, node.type_args, node.span)
        raise AssertionError(f"no backward scale rule for {name}")  # _prepare gave it no message

    def _transform_add(self, node, message: Message, scale):
        lhs, rhs = node.args
        side = self.add_sides[id(node)]
        ndim = tensor_type(node).ndim
        if side == "both":
            args = [self.transform(lhs, message, scale), self.transform(rhs, message, scale)]
        elif side == "lhs":
            args = [self.transform(lhs, message, scale), self._rescaled(rhs, scale, ndim, message)]
        else:
            args = [self._rescaled(lhs, scale, ndim, message), self.transform(rhs, message, scale)]
        return E.Call(node.op, args, node.attrs, node.type_args, node.span)

    def _rescaled(self, operand, scale, ndim: int, message: Message):
        """The broadcast operand of an add (a bias), multiplied by the scale pushed through the add."""
        return call("multiply", self.visit(operand), expand_scale(scale, ndim, message.axes))


def backward_fold_scale_axis(func):
    """`func` with per-channel multiplies after conv2d / dense folded into their weights."""
    messages, add_sides = _prepare(func)
    if not messages:
        return func
    return _BackwardTransformer(messages, add_sides).visit(func)
