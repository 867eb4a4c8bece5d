"""What forward and backward scale folding share: messages, broadcast matching, layouts, positivity."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import expr as E
from ...op.registry import lookup
from ...ty import TensorType
from ..patterns import call, expand_bias_to_match_axis, op_name, tensor_type

__all__ = [
    "Message",
    "intersect",
    "match_broadcast_to_left_axes",
    "expand_scale",
    "is_all_positive_constant",
    "is_all_nonzero_constant",
    "ConvLayout",
    "conv_layout",
    "dense_weight_ok",
]


@dataclass(frozen=True)
class Message:
    """Axes a per-axis scale may travel on; whether it must be positive (it crosses a relu) and
    free of zeros (an added operand will be divided by it, forward folding only)."""

    axes: tuple[int, ...]
    require_positive: bool = False
    require_nonzero: bool = False

    def requiring(self, positive: bool = False, nonzero: bool = False) -> "Message":
        return Message(self.axes, self.require_positive or positive, self.require_nonzero or nonzero)

    def accepts(self, scale) -> bool:
        """Whether `scale` (an expression) meets the requirements."""
        if self.require_positive and not is_all_positive_constant(scale):
            return False
        return not self.require_nonzero or is_all_nonzero_constant(scale)


def intersect(a: Message | None, b: Message | None) -> Message | None:
    """Both consumers' demands (TVM's Intersect): None from either side wins; empty axes mean None."""
    if a is None or b is None:
        return None
    axes = tuple(x for x in a.axes if x in b.axes)
    if not axes:
        return None
    return Message(axes, a.require_positive or b.require_positive, a.require_nonzero or b.require_nonzero)


def match_broadcast_to_left_axes(lhs_type, rhs_type, axes, rhs=None):
    """Whether `rhs` broadcast against `lhs` varies only along `axes` (and matches lhs there).

    With `rhs` given, returns (True, scale) where scale is rhs squeezed to the axes' extents (a
    scalar rhs is repeated to a vector), else (False, None); without it, a bool. TVM's
    MatchBroadcastToLeftAxes.
    """
    failure = (False, None) if rhs is not None else False
    if not isinstance(lhs_type, TensorType) or not isinstance(rhs_type, TensorType):
        return failure
    if lhs_type.concrete_shape is None or rhs_type.concrete_shape is None or lhs_type.dtype != rhs_type.dtype:
        return failure
    lhs_shape, rhs_shape = lhs_type.shape, rhs_type.shape
    if len(lhs_shape) < len(rhs_shape):
        return failure
    if not rhs_shape and axes:
        if rhs is None:
            return True
        if len(axes) != 1:
            return failure
        vector = call("repeat", call("expand_dims", rhs, axis=0, num_newaxis=1), repeats=lhs_shape[axes[0]], axis=0)
        return True, vector
    base = len(lhs_shape) - len(rhs_shape)
    squeeze = []
    for i, extent in enumerate(lhs_shape):
        if i in axes:
            if i < base or rhs_shape[i - base] != extent:
                return failure
        elif i >= base:
            if rhs_shape[i - base] != 1:
                return failure
            squeeze.append(i - base)
    if rhs is None:
        return True
    if squeeze:
        rhs = call("squeeze", rhs, axis=squeeze)
    return True, rhs


def expand_scale(scale, ndim: int, axes) -> E.Expr:
    """A scale over `axes` made broadcastable against a rank-`ndim` tensor (TVM's ReshapeOrExpandToMatchAxis)."""
    return expand_bias_to_match_axis(scale, ndim, list(axes))


def _constant_value(expr):
    """The value of a tree of operator calls over constants, else None."""
    if type(expr) is E.Constant:
        return expr.data
    name = op_name(expr)
    if name is None:
        return None
    args = [_constant_value(a) for a in expr.args]
    out_type = tensor_type(expr)
    if out_type is None or any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):
            return np.asarray(lookup(name).numpy_impl(args, expr.attrs, out_type))
    except Exception:
        return None


def is_all_positive_constant(expr) -> bool:
    """A constant (possibly reshaped / repeated) whose every element is > 0: it commutes with relu."""
    value = _constant_value(expr)
    return value is not None and value.size > 0 and bool(np.all(value > 0))


def is_all_nonzero_constant(expr) -> bool:
    """A constant with no zero element: dividing by it and multiplying back gives the value again."""
    value = _constant_value(expr)
    return value is not None and value.size > 0 and bool(np.all(value != 0))


@dataclass(frozen=True)
class ConvLayout:
    """Where the channels are: C in the data / output tensor, O and I in the kernel."""

    data_channel: int
    out_channel: int
    kernel_out: int
    kernel_in: int
    kernel_ndim: int
    depthwise: bool


def conv_layout(conv: E.Call) -> ConvLayout | None:
    """The channel axes of an nn.conv2d in a simple (unblocked) layout that is full or depthwise, else None."""
    attrs = conv.attrs
    data_layout, kernel_layout = attrs.data_layout, attrs.kernel_layout
    out_layout = attrs.out_layout or data_layout
    if any(c.islower() for c in data_layout + kernel_layout + out_layout):
        return None  # blocked layouts (NCHW16c) are not folded
    if "C" not in data_layout or "C" not in out_layout or "O" not in kernel_layout or "I" not in kernel_layout:
        return None
    weight_type = tensor_type(conv.args[1])
    if weight_type is None or weight_type.concrete_shape is None or weight_type.ndim != len(kernel_layout):
        return None
    shape = weight_type.shape
    depthwise = shape[kernel_layout.index("O")] == attrs.groups and shape[kernel_layout.index("I")] == 1
    if attrs.groups != 1 and not depthwise:
        return None  # grouped convolutions mix channels per group: not folded (as TVM)
    return ConvLayout(
        data_layout.index("C"),
        out_layout.index("C"),
        kernel_layout.index("O"),
        kernel_layout.index("I"),
        len(kernel_layout),
        depthwise,
    )


def dense_weight_ok(dense: E.Call) -> bool:
    """nn.dense with a statically shaped rank-2 weight (units, in)."""
    weight_type = tensor_type(dense.args[1])
    return weight_type is not None and weight_type.concrete_shape is not None and weight_type.ndim == 2
