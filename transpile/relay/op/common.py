"""Helpers shared by operator definitions: argument checks, broadcasting, attribute converters."""

from __future__ import annotations

from typing import Sequence

from ..ty import AnyDim, SymbolicDim, TensorType, TupleType, Type
from .registry import RelationError

__all__ = [
    "expect_tensor",
    "expect_tuple_of_tensors",
    "broadcast_shapes",
    "same_dtype",
    "int_tuple",
    "int_or_none",
    "optional_int_tuple",
    "normalize_axis",
    "dim_eq",
    "fmt_type",
]


def fmt_type(ty: Type) -> str:
    from ..printer import type_to_text

    return type_to_text(ty)


def expect_tensor(ty: Type, op_name: str, what: str = "argument") -> TensorType:
    if not isinstance(ty, TensorType):
        raise RelationError(f"{op_name}: {what} must be a tensor, got {fmt_type(ty)}")
    return ty


def expect_tuple_of_tensors(ty: Type, op_name: str) -> list[TensorType]:
    if not isinstance(ty, TupleType):
        raise RelationError(f"{op_name}: expected a tuple of tensors, got {fmt_type(ty)}")
    return [expect_tensor(f, op_name, "tuple field") for f in ty.fields]


def dim_eq(a, b) -> bool:
    """Dimensions agree when equal or when either is unknown (Any)."""
    return isinstance(a, AnyDim) or isinstance(b, AnyDim) or a == b


def broadcast_shapes(a: Sequence, b: Sequence, op_name: str = "broadcast") -> tuple:
    """Numpy broadcasting of two static shapes (Any dims broadcast to Any unless the other is >1)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == y:  # also a symbol (SymbolicDim) broadcast with itself, which keeps its name
            out.append(x)
        elif isinstance(x, SymbolicDim) and y == 1 or isinstance(y, SymbolicDim) and x == 1:
            out.append(x if y == 1 else y)  # as TVM: n with 1 is n
        elif isinstance(x, SymbolicDim) and not _unnamed_any(y) or isinstance(y, SymbolicDim) and not _unnamed_any(x):
            # As TVM: a symbol broadcasts only with itself, 1 or `?` (n with 5 or m is unprovable).
            raise RelationError(
                f"{op_name}: shapes {_shape_text(a)} and {_shape_text(b)} are not broadcastable (dimension {x} vs {y})"
            )
        elif isinstance(x, AnyDim) or isinstance(y, AnyDim):
            other = y if isinstance(x, AnyDim) else x
            out.append(other if not isinstance(other, AnyDim) and other != 1 else AnyDim())
        elif y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RelationError(
                f"{op_name}: shapes {_shape_text(a)} and {_shape_text(b)} are not broadcastable (dimension {x} vs {y})"
            )
    return tuple(reversed(out))


def _unnamed_any(dim) -> bool:
    return isinstance(dim, AnyDim) and not isinstance(dim, SymbolicDim)


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def same_dtype(types: Sequence[TensorType], op_name: str) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        listed = " and ".join(fmt_type(t) for t in types)
        raise RelationError(f"{op_name}: argument dtypes must agree, got {listed}")
    return types[0].dtype


def int_tuple(value) -> tuple:
    """An int or a sequence of ints as a tuple of ints."""
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return (int(value),)


def optional_int_tuple(value):
    return None if value is None else int_tuple(value)


def int_or_none(value):
    return None if value is None else int(value)


def normalize_axis(axis: int, ndim: int, op_name: str) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise RelationError(f"{op_name}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis
