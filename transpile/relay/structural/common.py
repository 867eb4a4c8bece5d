"""Normalizations shared by structural equality and hashing (they must agree on them)."""

from __future__ import annotations

import numpy as np

from ..expr import Call, Constructor, Op
from ..printer.values import printed_defaults, same_attr_value
from ..ty import TypeCall

__all__ = ["norm_type", "bare_constructor", "op_defaults", "attr_items", "constant_equal"]


def norm_type(ty):
    """`List[]` (a TypeCall without arguments) is the ADT itself."""
    if isinstance(ty, TypeCall) and not ty.args:
        return ty.func
    return ty


def bare_constructor(e):
    """The constructor of `Nil` written bare or as `Nil()`, else None."""
    if isinstance(e, Constructor) and not e.inputs:
        return e
    if isinstance(e, Call) and not e.args and not e.attrs and isinstance(e.op, Constructor) and not e.op.inputs:
        return e.op
    return None


def op_defaults(op) -> dict:
    """Attribute defaults of a registered operator callee ({} for anything else)."""
    return printed_defaults(op.name) if isinstance(op, Op) else {}


def attr_items(attrs, defaults: dict) -> dict:
    """Attributes that differ from the operator's defaults (missing ones count as default)."""
    return {k: v for k, v in (attrs or {}).items() if not (k in defaults and same_attr_value(v, defaults[k]))}


def constant_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
