"""LIR types: Relay tensor types plus monomorphic tuple, ADT-instance, closure and reference types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..relay.ty import AnyDim, TensorType

__all__ = [
    "fits",
    "TensorType",
    "TupleT",
    "AdtT",
    "ClosureT",
    "RefT",
    "UNIT",
    "LirType",
    "is_scalar",
    "is_tensor",
    "bool_scalar",
    "type_text",
    "from_relay_type",
]


@dataclass(frozen=True, slots=True)
class TupleT:
    """A tuple of values; the empty tuple is the unit type (result of ref_set)."""

    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True, slots=True)
class AdtT:
    """A monomorphic ADT instance, named by its AdtDef (e.g. "List_int32")."""

    name: str


@dataclass(frozen=True, slots=True)
class ClosureT:
    """A first-class function value: explicit parameter types and result type."""

    params: tuple
    ret: object

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))


@dataclass(frozen=True, slots=True)
class RefT:
    """A mutable reference cell holding a value of type `value`."""

    value: object


LirType = TensorType | TupleT | AdtT | ClosureT | RefT

UNIT = TupleT(())


def fits(actual, expected) -> bool:
    """Whether a value of type `actual` may flow where `expected` is declared.

    Types must be equal, except that a `?` dimension accepts any size (Relay lets a
    Tensor[(?, 1)] argument meet a Tensor[(?, ?)] parameter). Containers are invariant otherwise.
    """
    if actual == expected:
        return True
    if isinstance(actual, TensorType) and isinstance(expected, TensorType):
        return (
            actual.dtype == expected.dtype
            and len(actual.shape) == len(expected.shape)
            and all(isinstance(e, AnyDim) or a == e for a, e in zip(actual.shape, expected.shape))
        )
    if isinstance(actual, TupleT) and isinstance(expected, TupleT):
        return len(actual.fields) == len(expected.fields) and all(map(fits, actual.fields, expected.fields))
    return False


def is_tensor(ty) -> bool:
    return isinstance(ty, TensorType)


def is_scalar(ty) -> bool:
    """A 0-d tensor: backends may keep it as a plain machine scalar."""
    return isinstance(ty, TensorType) and ty.shape == ()


def bool_scalar() -> TensorType:
    return TensorType((), "bool")


def _dims(shape) -> str:
    return ", ".join("?" if isinstance(d, AnyDim) else str(d) for d in shape)


def type_text(ty) -> str:
    """The LIR text of a type: Tensor[(2, 3), float32], (A, B), List_int32, closure(A) -> B, ref(A)."""
    if isinstance(ty, TensorType):
        return f"Tensor[({_dims(ty.shape)}), {ty.dtype}]"
    if isinstance(ty, TupleT):
        if len(ty.fields) == 1:
            return f"({type_text(ty.fields[0])},)"
        return "(" + ", ".join(type_text(f) for f in ty.fields) + ")"
    if isinstance(ty, AdtT):
        return ty.name
    if isinstance(ty, ClosureT):
        return "closure(" + ", ".join(type_text(p) for p in ty.params) + f") -> {type_text(ty.ret)}"
    if isinstance(ty, RefT):
        return f"ref({type_text(ty.value)})"
    # Not an LIR type (e.g. a Relay TypeVar that escaped monomorphization): say what it is.
    return f"<not an LIR type: {type(ty).__name__} {ty!r}>"


def from_relay_type(ty, adt_name: Callable[[object], str] | None = None):
    """Translate a monomorphic Relay type into an LIR type.

    `adt_name(relay_type)` names the ADT instance for a GlobalTypeVar or TypeCall (the
    monomorphization pass decides the naming scheme); without it ADT types are rejected.
    Raises ValueError for types that cannot appear in the LIR (type variables, incomplete types).
    """
    from ..relay import ty as rty

    if isinstance(ty, TensorType):
        return ty
    if isinstance(ty, rty.TupleType):
        return TupleT(tuple(from_relay_type(f, adt_name) for f in ty.fields))
    if isinstance(ty, rty.FuncType):
        if ty.type_params:
            raise ValueError(f"polymorphic function type has no LIR form: {ty!r}")
        return ClosureT(
            tuple(from_relay_type(a, adt_name) for a in ty.arg_types), from_relay_type(ty.ret_type, adt_name)
        )
    if isinstance(ty, rty.RefType):
        return RefT(from_relay_type(ty.value, adt_name))
    if isinstance(ty, (rty.GlobalTypeVar, rty.TypeCall)):
        if adt_name is None:
            raise ValueError(f"ADT type {ty!r} needs an adt_name function to become an LIR type")
        return AdtT(adt_name(ty))
    raise ValueError(f"{type(ty).__name__} {ty!r} has no LIR form (the LIR is monomorphic)")
