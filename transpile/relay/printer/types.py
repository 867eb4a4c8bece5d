"""Text of Relay types, with type-variable names kept unique within their scope."""

from __future__ import annotations

from ..ty import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from .names import bare_name

__all__ = ["TypePrinter", "dims_text"]


def dims_text(shape, dim_name=None) -> str:
    """`5, ?, n`: a symbolic dimension prints by name (`dim_name` makes names unique), `?` otherwise."""
    parts = []
    for d in shape:
        if isinstance(d, SymbolicDim):
            parts.append(dim_name(d) if dim_name is not None else _identifier(d.name))
        elif isinstance(d, AnyDim):
            parts.append("?")
        else:
            parts.append(str(d))
    return ", ".join(parts)


def _identifier(name: str) -> str:
    """`name` as the parser reads it in a shape: an identifier starting with a letter."""
    if not (name and name[0].isascii() and name[0].isalpha()):
        name = "d" + name
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in name)


class TypePrinter:
    """Prints types; binders (function/ADT type parameters) get names unique among those in scope.

    TVM printed type parameters by their raw name hints; we add a numeric suffix only when two
    distinct type variables in scope would otherwise print alike, so re-parsing keeps them apart.
    """

    def __init__(self):
        self._names: dict[TypeVar, str] = {}
        self._live: dict[str, int] = {}
        self._shadowed: list[tuple[TypeVar, str | None]] = []
        self._dim_names: dict[SymbolicDim, str] = {}
        self._dim_names_used: set[str] = set()

    def dim_name(self, dim: SymbolicDim) -> str:
        """The name of a symbolic dimension: its own, suffixed when another symbol printed so."""
        name = self._dim_names.get(dim)
        if name is None:
            base = name = _identifier(dim.name)
            suffix = 0
            while name in self._dim_names_used:
                suffix += 1
                name = f"{base}{suffix}"
            self._dim_names[dim] = name
            self._dim_names_used.add(name)
        return name

    def _allocate(self, tv: TypeVar) -> str:
        base = tv.name_hint or "t"
        if not (base[0].isascii() and base[0].isalpha()):
            base = "t" + base
        base = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in base)
        name, suffix = base, 0
        while self._live.get(name):
            suffix += 1
            name = f"{base}{suffix}"
        self._live[name] = self._live.get(name, 0) + 1
        self._names[tv] = name
        return name

    def bind(self, type_vars) -> list[str]:
        names = []
        for tv in type_vars:
            self._shadowed.append((tv, self._names.get(tv)))
            names.append(self._allocate(tv))
        return names

    def unbind(self, type_vars) -> None:
        for _ in type_vars:
            tv, previous = self._shadowed.pop()
            self._live[self._names[tv]] -= 1
            if previous is None:
                del self._names[tv]
            else:
                self._names[tv] = previous

    def name(self, tv: TypeVar) -> str:
        name = self._names.get(tv)
        # A type variable used outside any binder (free) keeps its name for the printer's life.
        return name if name is not None else self._allocate(tv)

    def __call__(self, ty) -> str:
        if ty is None:
            return "_"
        if isinstance(ty, TensorType):
            if not ty.shape:
                return ty.dtype
            return f"Tensor[({dims_text(ty.shape, self.dim_name)}), {ty.dtype}]"
        if isinstance(ty, TupleType):
            inner = ", ".join(self(f) for f in ty.fields)
            return f"({inner},)" if len(ty.fields) == 1 else f"({inner})"
        if isinstance(ty, TypeVar):
            return self.name(ty)
        if isinstance(ty, GlobalTypeVar):
            return bare_name(ty.name_hint)
        if isinstance(ty, TypeCall):
            head = self(ty.func)
            if not ty.args:
                return head
            return head + "[" + ", ".join(self(a) for a in ty.args) + "]"
        if isinstance(ty, FuncType):
            names = self.bind(ty.type_params)
            try:
                params = f"[{', '.join(names)}]" if names else ""
                args = ", ".join(self(a) for a in ty.arg_types)
                return f"fn {params}({args}) -> {self(ty.ret_type)}"
            finally:
                self.unbind(ty.type_params)
        if isinstance(ty, RefType):
            return f"ref({self(ty.value)})"
        if isinstance(ty, IncompleteType):
            return "_"  # what TVM's parser reads as an incomplete type
        return str(ty)
