"""Run-time checks where a value typed with `?` dimensions is used where sizes are declared.

Type inference accepts a Tensor[(?), int32] value (an `arange` result, a dynamic parameter)
where Tensor[(3), int32] is declared, as TVM's unifier did. The compiled backends check such
a value's shape when it gets there (transpile.passes.lowering.narrow); the interpreter checks
at the same places: function results, call arguments, let annotations and if branches.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ..ty import AnyDim, TensorType, TupleType

__all__ = ["shape_guard", "guarded"]


def _checks(actual, expected, path=()):
    """(tuple path, {axis: size}) for each tensor where `expected` fixes a size `actual` leaves open."""
    if isinstance(actual, TensorType) and isinstance(expected, TensorType):
        if len(actual.shape) != len(expected.shape):
            return []
        sizes = {
            axis: int(e)
            for axis, (a, e) in enumerate(zip(actual.shape, expected.shape))
            if isinstance(a, AnyDim) and not isinstance(e, AnyDim)
        }
        return [(path, sizes, expected)] if sizes else []
    if isinstance(actual, TupleType) and isinstance(expected, TupleType) and len(actual.fields) == len(expected.fields):
        out = []
        for index, (a, e) in enumerate(zip(actual.fields, expected.fields)):
            out.extend(_checks(a, e, (*path, index)))
        return out
    return []


def shape_guard(actual, expected, span):
    """None when nothing needs checking, else a function value -> value raising EvaluationError
    when the value's shape lacks a size `expected` declares where `actual` has `?`."""
    if actual is None or expected is None:
        return None
    checks = _checks(actual, expected)
    if not checks:
        return None

    def guard(value):
        for path, sizes, declared in checks:
            part = value
            for index in path:
                part = part[index]
            shape = np.shape(part)
            if any(shape[axis] != size for axis, size in sizes.items()):
                from ..printer import type_to_text

                raise EvaluationError(
                    f"shape mismatch: a value of shape {tuple(shape)} is used where {type_to_text(declared)} "
                    "is declared",
                    span,
                )
        return value

    return guard


def guarded(evaluator, guard):
    """`evaluator` with its result checked by `guard` (None: unchanged)."""
    if guard is None:
        return evaluator
    return lambda fr: guard(evaluator(fr))
