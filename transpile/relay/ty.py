"""Relay types: tensors, tuples, functions, type variables, ADT type calls, references."""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

from .node import Node

__all__ = [
    "Type",
    "AnyDim",
    "Any",
    "TensorType",
    "TupleType",
    "FuncType",
    "TypeVar",
    "GlobalTypeVar",
    "TypeCall",
    "RefType",
    "IncompleteType",
    "TypeKind",
    "scalar_type",
    "is_scalar_tensor",
    "normalize_dtype",
]


class TypeKind:
    """Kinds of type variables, as in tvm.ir.TypeKind."""

    Type = 0
    ShapeVar = 1
    BaseType = 2
    Constraint = 4
    AdtHandle = 5
    TypeData = 6


class AnyDim:
    """A dimension unknown until run time (`?` in text, `relay.Any()` in the builder)."""

    __slots__ = ()

    def __eq__(self, other):
        return isinstance(other, AnyDim)

    def __hash__(self):
        return hash("relay.Any")

    def __repr__(self):
        return "?"


def Any() -> AnyDim:  # noqa: N802 - mirrors tvm.relay.Any
    return AnyDim()


_DTYPE_ALIASES = {
    "int": "int32",
    "float": "float32",
    "uint": "uint32",
    "bool": "bool",
    "double": "float64",
}


def normalize_dtype(dtype) -> str:
    """Canonical dtype string: 'float' -> 'float32', numpy dtypes -> their name."""
    if not isinstance(dtype, str):
        import numpy as np

        dtype = np.dtype(dtype).name
    return _DTYPE_ALIASES.get(dtype, dtype)


class Type(Node):
    """Base of all Relay types."""

    __slots__ = ()

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        """Relay text of the type with version header, as tvm's astext printed it."""
        from .printer import astext

        return astext(self, show_meta_data, annotate)

    def __ne__(self, other):
        return not self == other


class TensorType(Type):
    """A tensor of static rank; dims are ints or Any."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence = (), dtype: str = "float32", span=None):
        dims = []
        for d in shape:
            if isinstance(d, AnyDim):
                dims.append(d)
            else:
                dims.append(int(d))
        self._init(shape=tuple(dims), dtype=normalize_dtype(dtype), span=span)

    @property
    def concrete_shape(self) -> tuple[int, ...] | None:
        """The shape as ints, or None when a dimension is Any."""
        if any(isinstance(d, AnyDim) for d in self.shape):
            return None
        return self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash(("TensorType", self.shape, self.dtype))


class TupleType(Type):
    __slots__ = ("fields",)

    def __init__(self, fields: Iterable[Type], span=None):
        self._init(fields=tuple(fields), span=span)

    def __eq__(self, other):
        return isinstance(other, TupleType) and self.fields == other.fields

    def __hash__(self):
        return hash(("TupleType", self.fields))


class FuncType(Type):
    __slots__ = ("arg_types", "ret_type", "type_params", "type_constraints")

    def __init__(self, arg_types, ret_type, type_params=(), type_constraints=(), span=None):
        self._init(
            arg_types=tuple(arg_types),
            ret_type=ret_type,
            type_params=tuple(type_params or ()),
            type_constraints=tuple(type_constraints or ()),
            span=span,
        )

    def __eq__(self, other):
        # Exact (not alpha) equality; use structural_equal for equality up to renaming.
        return (
            isinstance(other, FuncType)
            and self.arg_types == other.arg_types
            and self.ret_type == other.ret_type
            and self.type_params == other.type_params
        )

    def __hash__(self):
        return hash(("FuncType", self.arg_types, self.ret_type, len(self.type_params)))


class TypeVar(Type):
    """A type parameter; equality is identity (two `A`s in different functions differ)."""

    __slots__ = ("name_hint", "kind")

    def __init__(self, name_hint: str, kind: int = TypeKind.Type, span=None):
        self._init(name_hint=name_hint, kind=kind, span=span)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


class GlobalTypeVar(Type):
    """The name of an ADT (e.g. List); equal when the names are equal."""

    __slots__ = ("name_hint", "kind")

    def __init__(self, name_hint: str, kind: int = TypeKind.AdtHandle, span=None):
        self._init(name_hint=name_hint, kind=kind, span=span)

    def __eq__(self, other):
        return isinstance(other, GlobalTypeVar) and self.name_hint == other.name_hint

    def __hash__(self):
        return hash(("GlobalTypeVar", self.name_hint))


class TypeCall(Type):
    """An ADT applied to type arguments, e.g. List[int32]."""

    __slots__ = ("func", "args")

    def __init__(self, func: Type, args: Iterable[Type], span=None):
        self._init(func=func, args=tuple(args), span=span)

    def __eq__(self, other):
        return isinstance(other, TypeCall) and self.func == other.func and self.args == other.args

    def __hash__(self):
        return hash(("TypeCall", self.func, self.args))


class RefType(Type):
    __slots__ = ("value",)

    def __init__(self, value: Type, span=None):
        self._init(value=value, span=span)

    def __eq__(self, other):
        return isinstance(other, RefType) and self.value == other.value

    def __hash__(self):
        return hash(("RefType", self.value))


_incomplete_ids = itertools.count()


class IncompleteType(Type):
    """A placeholder type solved by inference; equality is identity."""

    __slots__ = ("kind", "uid")

    def __init__(self, kind: int = TypeKind.Type, span=None):
        self._init(kind=kind, uid=next(_incomplete_ids), span=span)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


def is_scalar_tensor(ty: Type) -> bool:
    return isinstance(ty, TensorType) and ty.shape == ()
