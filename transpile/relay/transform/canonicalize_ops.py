"""CanonicalizeOps: `nn.bias_add(x, b, axis)` -> `add(x, expand_dims(b))` (TVM's canonicalize_ops.cc).

The bias gets unit dimensions after `axis` so it broadcasts like bias_add did; a plain `add` then
fuses (and constant-folds) like any other broadcast. Only when the channel count is static on
both sides: with a `?` one, bias_add keeps its run-time check that the lengths are equal.
"""

from __future__ import annotations

from ..ty import AnyDim, TensorType
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
        bias_type = type_of(original.args[1])
        if not (isinstance(bias_type, TensorType) and _static(data_type.shape[axis]) and _static(bias_type.shape[0])):
            return new  # `add` would broadcast a bias of length 1 that bias_add rejects at run time
        return call("add", new.args[0], expand_bias_to_match_axis(new.args[1], ndim, [axis]), span=new.span)


def _static(dim) -> bool:
    return not isinstance(dim, AnyDim)


def canonicalize_ops(func, mod=None, ctx=None):
    return _Canonicalizer().visit(func)


def CanonicalizeOps():
    """TVM's CanonicalizeOps pass (opt_level 3)."""
    return FunctionPass(canonicalize_ops, 3, "CanonicalizeOps")
