"""Run-time shape checks where a `?` dimension meets a static one.

Relay's unifier lets a Tensor[(?), int32] value (say an `arange` result) flow where
Tensor[(3), int32] is declared (a return annotation, a parameter, a let annotation), as TVM's
did. The LIR is stricter: a static type must hold. At such a point the lowering inserts a check
that the value really has the declared sizes and a cast to the declared type, written with
registered operators so every backend runs it:

    %ok = all(equal(shape_of(%v), [3]))           (dims left `?` are masked out)
    %w  = if %ok { reshape(%v, newshape=[3]) } else { fail "..." }
"""

from __future__ import annotations

import numpy as np

from ...lir import MakeTuple, Proj
from ...lir.types import TupleT
from ...relay import expr as rx
from ...relay.ty import AnyDim, TensorType

__all__ = ["needs_narrowing", "narrow"]


def needs_narrowing(actual, expected) -> bool:
    """Whether `actual` has a `?` where `expected` (same dtypes and ranks) has a size."""
    if isinstance(actual, TensorType) and isinstance(expected, TensorType):
        return (
            actual.dtype == expected.dtype
            and len(actual.shape) == len(expected.shape)
            and any(isinstance(a, AnyDim) and not isinstance(e, AnyDim) for a, e in zip(actual.shape, expected.shape))
            and all(
                isinstance(a, AnyDim) or isinstance(e, AnyDim) or a == e for a, e in zip(actual.shape, expected.shape)
            )
        )
    if isinstance(actual, TupleT) and isinstance(expected, TupleT) and len(actual.fields) == len(expected.fields):
        pairs = list(zip(actual.fields, expected.fields))
        return any(needs_narrowing(a, e) for a, e in pairs) and all(a == e or needs_narrowing(a, e) for a, e in pairs)
    return False


def narrow(lowerer, atom, expected, span):
    """`atom` checked at run time to have type `expected` (see the module docstring)."""
    actual = atom.type
    if isinstance(actual, TupleT):
        fields = []
        for index, (field, want) in enumerate(zip(actual.fields, expected.fields)):
            part = lowerer.emit("t", field, Proj(atom, index))
            fields.append(narrow(lowerer, part, want, span) if field != want else part)
        return lowerer.emit("t", expected, MakeTuple(tuple(fields)), span)
    return _narrow_tensor(lowerer, atom, expected, span)


def _narrow_tensor(lowerer, atom, expected: TensorType, span):
    from ... import relay as op
    from ...relay.typing import infer_type_expr
    from ..match_compile import match_fail

    value = rx.Var("value", atom.type)
    lowerer.scope[value] = atom
    dims = list(expected.shape)
    free = [isinstance(d, AnyDim) for d in dims]
    target = np.array([0 if f else int(d) for d, f in zip(dims, free)], dtype="int64")
    same = op.equal(op.shape_of(value, dtype="int64"), rx.const(target))
    if any(free):  # sizes the declared type leaves open are not checked
        same = op.logical_or(rx.const(np.array(free)), same)
    checks = infer_type_expr(rx.Tuple([op.all(same), op.reshape(value, newshape=[int(t) for t in target])]))
    ok, cast = checks.fields
    where = f" at {span}" if span is not None else ""
    fail = match_fail(
        f"shape mismatch{where}: a value of type {_text(atom.type)} is used where {_text(expected)} "
        "is declared, but its run-time shape differs",
        expected,
    )
    return lowerer.emit("narrowed", expected, lowerer.value(rx.If(ok, cast, fail), expected), span)


def _text(ty) -> str:
    from ...lir.types import type_text

    return type_text(ty)
