"""Text of types and expressions for type-error messages."""

from __future__ import annotations

from .. import expr as E
from ..ty import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)

__all__ = ["show_type", "describe_expr", "callee_name"]


def show_type(ty: Type) -> str:
    """The type in Relay text syntax (via the printer once it exists)."""
    try:
        from ..printer import type_to_text
    except ImportError:
        return _fallback(ty)
    try:
        return type_to_text(ty)
    except Exception:  # a printer bug must not hide the type error being reported
        return _fallback(ty)


def _fallback(ty) -> str:
    if isinstance(ty, TensorType):
        dims = ", ".join(repr(d) for d in ty.shape)  # `?`, a symbol's name, or the number
        return f"Tensor[({dims}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        inner = ", ".join(_fallback(f) for f in ty.fields)
        return f"({inner},)" if len(ty.fields) == 1 else f"({inner})"
    if isinstance(ty, FuncType):
        params = f"[{', '.join(_fallback(p) for p in ty.type_params)}]" if ty.type_params else ""
        args = ", ".join(_fallback(a) for a in ty.arg_types)
        return f"fn {params}({args}) -> {_fallback(ty.ret_type)}"
    if isinstance(ty, TypeCall):
        head = _fallback(ty.func)
        return f"{head}[{', '.join(_fallback(a) for a in ty.args)}]" if ty.args else head
    if isinstance(ty, (TypeVar, GlobalTypeVar)):
        return ty.name_hint
    if isinstance(ty, RefType):
        return f"ref({_fallback(ty.value)})"
    if isinstance(ty, IncompleteType):
        return "?"
    return repr(ty)


def callee_name(op) -> str:
    """How a message names the function being called."""
    if isinstance(op, E.GlobalVar):
        return f"@{op.name_hint}"
    if isinstance(op, E.Constructor):
        return f"constructor {op.name_hint}"
    if isinstance(op, E.Var):
        return f"%{op.name_hint}"
    if isinstance(op, E.Op):
        return f"operator {op.name}"
    return "the function"


def describe_expr(e) -> str:
    """A short phrase naming an expression, e.g. '%x' or 'the call of add'."""
    if isinstance(e, E.Var):
        return f"%{e.name_hint}"
    if isinstance(e, E.Call):
        op = e.op
        if isinstance(op, E.Op):
            return f"the call of {op.name}"
        if isinstance(op, (E.GlobalVar, E.Var)):
            return f"the call of {callee_name(op)}"
        if isinstance(op, E.Constructor):
            return f"the constructor call {op.name_hint}"
        return "this call"
    if isinstance(e, E.TupleGetItem):
        return f"the tuple projection .{e.index}"
    if isinstance(e, E.Function):
        return "this function"
    if isinstance(e, E.Match):
        return "this match expression"
    if isinstance(e, E.If):
        return "this if expression"
    if isinstance(e, E.RefRead):
        return "this ref_read"
    return "this expression"
