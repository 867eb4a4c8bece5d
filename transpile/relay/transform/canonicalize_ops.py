"""CanonicalizeOps: `nn.bias_add(x, b, axis)` -> `add(x, expand_dims(b))` (TVM's canonicalize_ops.cc).

The bias gets unit dimensions after `axis` so it broadcasts like bias_add did; a plain `add` then
fuses (and constant-folds) like any other broadcast.
"""

from __future__ import annotations

from ..ty import TensorType
from .infra import FunctionPass
from .patterns import call, expand_bias_to_match_axis, op_name, type_of
from .rewriter import Rewriter

__all__ = ["CanonicalizeOps", "canonicalize_ops"]


class _Canonicalizer(Rewriter):
    def rewrite_call(self, original, new):
        if op_name(new) != "nn.bias_add":
            return new
        data_type = type_of(original.args[0])
        if not isinstance(data_type, TensorType):
            return new
        ndim = data_type.ndim
        axis = new.attrs.axis + ndim if new.attrs.axis < 0 else new.attrs.axis
        return call("add", new.args[0], expand_bias_to_match_axis(new.args[1], ndim, [axis]), span=new.span)


def canonicalize_ops(func, mod=None, ctx=None):
    return _Canonicalizer().visit(func)


def CanonicalizeOps():
    """TVM's CanonicalizeOps pass (opt_level 3)."""
    return FunctionPass(canonicalize_ops, 3, "CanonicalizeOps")
