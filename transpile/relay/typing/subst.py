"""Type substitution: replacing type variables, instantiating polymorphic function types."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..ty import FuncType, IncompleteType, RefType, TupleType, Type, TypeCall, TypeVar

__all__ = ["substitute", "instantiate", "free_type_vars"]


def substitute(ty: Type, mapping: Mapping[TypeVar, Type]) -> Type:
    """`ty` with each TypeVar in `mapping` replaced; nodes without replacements are shared."""
    if not mapping:
        return ty
    if isinstance(ty, TypeVar):
        return mapping.get(ty, ty)
    if isinstance(ty, TupleType):
        fields = [substitute(f, mapping) for f in ty.fields]
        return ty if _same(fields, ty.fields) else TupleType(fields, ty.span)
    if isinstance(ty, FuncType):
        inner = mapping
        if ty.type_params:  # the function's own parameters shadow outer bindings
            inner = {k: v for k, v in mapping.items() if k not in ty.type_params}
        args = [substitute(a, inner) for a in ty.arg_types]
        ret = substitute(ty.ret_type, inner)
        if _same(args, ty.arg_types) and ret is ty.ret_type:
            return ty
        return FuncType(args, ret, ty.type_params, ty.type_constraints, ty.span)
    if isinstance(ty, TypeCall):
        args = [substitute(a, mapping) for a in ty.args]
        return ty if _same(args, ty.args) else TypeCall(ty.func, args, ty.span)
    if isinstance(ty, RefType):
        value = substitute(ty.value, mapping)
        return ty if value is ty.value else RefType(value, ty.span)
    return ty


def instantiate(fn_ty: FuncType, type_args: Sequence[Type] = ()) -> tuple[FuncType, tuple[Type, ...]]:
    """A monomorphic copy of `fn_ty`: the given type arguments first, fresh IncompleteTypes after."""
    params = fn_ty.type_params
    if not params:
        return fn_ty, ()
    args = list(type_args)[: len(params)]
    args += [IncompleteType() for _ in range(len(params) - len(args))]
    mapping = dict(zip(params, args))
    inst = FuncType(
        [substitute(a, mapping) for a in fn_ty.arg_types],
        substitute(fn_ty.ret_type, mapping),
        (),
        fn_ty.type_constraints,
        fn_ty.span,
    )
    return inst, tuple(args)


def free_type_vars(ty: Type) -> list[TypeVar]:
    """Type variables of `ty` not bound by an inner function type, in order of appearance."""
    found: dict[TypeVar, None] = {}

    def walk(t, bound):
        if isinstance(t, TypeVar):
            if t not in bound:
                found.setdefault(t)
        elif isinstance(t, TupleType):
            for f in t.fields:
                walk(f, bound)
        elif isinstance(t, FuncType):
            inner = bound | set(t.type_params)
            for a in t.arg_types:
                walk(a, inner)
            walk(t.ret_type, inner)
        elif isinstance(t, TypeCall):
            walk(t.func, bound)
            for a in t.args:
                walk(a, bound)
        elif isinstance(t, RefType):
            walk(t.value, bound)

    walk(ty, frozenset())
    return list(found)


def _same(new, old) -> bool:
    return all(a is b for a, b in zip(new, old))
