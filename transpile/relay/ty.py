"""Relay types: tensors, tuples, functions, type variables, ADT type calls, references."""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

from .node import Node

__all__ = [
    "Type",
    "AnyDim",
    "SymbolicDim",
    "Any",
    "as_dim",
    "IntDim",
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
        return isinstance(other, AnyDim) and not isinstance(other, SymbolicDim)

    def __hash__(self):
        return hash("relay.Any")

    def __repr__(self):
        return "?"


class SymbolicDim(AnyDim):
    """A named dimension known only at run time (TVM's `te.var("n")` / `te.size_var("n")` in a shape).

    Backends and lowerings see an AnyDim (a run-time dimension); type inference keeps the name:
    a SymbolicDim is equal only to itself, so relations passing a dimension through keep it and
    `Tensor[(n, 3)]` unifies with `Tensor[(n, 3)]` but not with `Tensor[(m, 3)]`. Dims made from
    the same tir Var are equal; `var` is None for a dim the text parser made (its identity is the
    object, shared by every use of the name in one parsed text).
    """

    __slots__ = ("name", "var")

    def __init__(self, name: str, var=None):
        self.name = str(name)
        self.var = var

    @classmethod
    def from_var(cls, var) -> "SymbolicDim":
        return cls(getattr(var, "name", None) or getattr(var, "name_hint", "n"), var)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, SymbolicDim) or self.var is None or other.var is None:
            return False
        return bool(self.var.same_as(other.var))

    def __hash__(self):
        return hash(self.var) if self.var is not None else id(self)

    def __repr__(self):
        return self.name


def Any() -> AnyDim:  # noqa: N802 - mirrors tvm.relay.Any
    return AnyDim()


class IntDim(int):
    """A static dimension: an int that also reads like TVM's IntImm (`.value`, `.dtype`).

    Dimensions carry no index width: TVM's int64 shapes (which typed argmax/argmin int64) are int32 here.
    """

    __slots__ = ()
    dtype = "int32"

    @property
    def value(self) -> int:
        return int(self)


def as_dim(value):
    """A dimension of a tensor type: an IntDim, an AnyDim, or a SymbolicDim for a tir Var."""
    if isinstance(value, (AnyDim, IntDim)):
        return value
    if isinstance(value, int):
        return IntDim(value)  # bool and numpy ints become plain dims
    kind = type(value)
    if kind.__module__.startswith("tvm") and hasattr(value, "same_as"):
        if kind.__name__ in ("Var", "SizeVar"):
            return SymbolicDim.from_var(value)
        if kind.__name__ == "IntImm":
            return IntDim(int(value))
        if kind.__name__ == "Any":
            return AnyDim()
        # An arithmetic expression of symbols (n + 1, n * 2): known only at run time.
        return AnyDim()
    return IntDim(int(value))


_DTYPE_ALIASES = {
    "int": "int32",
    "float": "float32",
    "uint": "uint32",
    "bool": "bool",
    "uint1": "bool",  # TVM's DataType::Bool is uint1; its builders accepted either spelling
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
    """A tensor of static rank; dims are ints, Any, or symbolic (SymbolicDim)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence = (), dtype: str = "float32", span=None):
        dims = tuple(as_dim(d) for d in shape)
        self._init(shape=dims, dtype=normalize_dtype(dtype), span=span)

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
        # Equal up to renaming of the type parameters, as tvm's `==` on types was.
        return isinstance(other, FuncType) and alpha_equal(self, other)

    def __hash__(self):
        return alpha_hash(self)


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

    def __call__(self, *args) -> "TypeCall":
        """The ADT applied to type arguments, as in tvm: `List(a)`, `nat()`."""
        return TypeCall(self, args)


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


def _bind_params(left: FuncType, right: FuncType, env: dict) -> dict | None:
    if len(left.type_params) != len(right.type_params):
        return None
    inner = dict(env)
    inner.update(zip(left.type_params, right.type_params))
    return inner


def alpha_equal(left: Type, right: Type, env: dict | None = None) -> bool:
    """Structural equality of types where the type parameters of function types may be renamed.

    `env` maps the left side's bound TypeVars to the right side's; free TypeVars compare by identity.
    """
    env = env or {}
    if isinstance(left, TypeVar):
        bound = env.get(left)
        if bound is not None:
            return bound is right
        return left is right and right not in env.values()
    if isinstance(left, FuncType):
        if not isinstance(right, FuncType) or len(left.arg_types) != len(right.arg_types):
            return False
        inner = _bind_params(left, right, env)
        if inner is None:
            return False
        return all(alpha_equal(a, b, inner) for a, b in zip(left.arg_types, right.arg_types)) and alpha_equal(
            left.ret_type, right.ret_type, inner
        )
    if isinstance(left, TupleType):
        return (
            isinstance(right, TupleType)
            and len(left.fields) == len(right.fields)
            and all(alpha_equal(a, b, env) for a, b in zip(left.fields, right.fields))
        )
    if isinstance(left, TypeCall):
        return (
            isinstance(right, TypeCall)
            and alpha_equal(left.func, right.func, env)
            and len(left.args) == len(right.args)
            and all(alpha_equal(a, b, env) for a, b in zip(left.args, right.args))
        )
    if isinstance(left, RefType):
        return isinstance(right, RefType) and alpha_equal(left.value, right.value, env)
    return left == right


def alpha_hash(ty: Type, bound: dict | None = None) -> int:
    """A hash consistent with alpha_equal: bound TypeVars hash by their binding position."""
    bound = bound or {}
    if isinstance(ty, TypeVar):
        position = bound.get(ty)
        return hash(("bound", position)) if position is not None else hash(ty)
    if isinstance(ty, FuncType):
        inner = dict(bound)
        inner.update((param, (len(bound), i)) for i, param in enumerate(ty.type_params))
        parts = tuple(alpha_hash(a, inner) for a in ty.arg_types)
        return hash(("FuncType", parts, alpha_hash(ty.ret_type, inner), len(ty.type_params)))
    if isinstance(ty, TupleType):
        return hash(("TupleType", tuple(alpha_hash(f, bound) for f in ty.fields)))
    if isinstance(ty, TypeCall):
        return hash(("TypeCall", alpha_hash(ty.func, bound), tuple(alpha_hash(a, bound) for a in ty.args)))
    if isinstance(ty, RefType):
        return hash(("RefType", alpha_hash(ty.value, bound)))
    return hash(ty)


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


def is_scalar_tensor(ty: Type) -> bool:
    return isinstance(ty, TensorType) and ty.shape == ()
