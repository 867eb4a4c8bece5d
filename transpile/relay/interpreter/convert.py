"""Checking and converting Python values passed to Relay functions, guided by the parameter types."""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ...runtime import ADTValue, RefValue
from ...runtime.boundary import ArgumentPath, Mismatch, intake_tensor, shape_fits
from ..ty import AnyDim, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, TypeCall, TypeVar
from .values import describe_value

__all__ = ["convert_argument", "convert_arguments", "convert_result", "type_text", "subst_type"]


def type_text(ty) -> str:
    """Relay text of a type (the printer's when available)."""
    if ty is None:
        return "?"
    try:
        from ..printer import type_to_text

        return type_to_text(ty)
    except Exception:  # the printer is optional here: messages must render regardless
        return _fallback_type_text(ty)


def _fallback_type_text(ty) -> str:
    if isinstance(ty, TensorType):
        dims = ", ".join("?" if isinstance(d, AnyDim) else str(d) for d in ty.shape)
        return f"Tensor[({dims}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        inner = ", ".join(_fallback_type_text(f) for f in ty.fields)
        return f"({inner},)" if len(ty.fields) == 1 else f"({inner})"
    if isinstance(ty, FuncType):
        args = ", ".join(_fallback_type_text(a) for a in ty.arg_types)
        return f"fn ({args}) -> {_fallback_type_text(ty.ret_type)}"
    if isinstance(ty, TypeCall):
        args = ", ".join(_fallback_type_text(a) for a in ty.args)
        return f"{_fallback_type_text(ty.func)}[{args}]"
    if isinstance(ty, RefType):
        return f"ref({_fallback_type_text(ty.value)})"
    if isinstance(ty, (TypeVar, GlobalTypeVar)):
        return ty.name_hint
    return "?"


def subst_type(ty, mapping: dict):
    """`ty` with type variables replaced per `mapping` (no capture issues: Relay type vars are unique)."""
    if not mapping:
        return ty
    if isinstance(ty, TypeVar):
        return mapping.get(ty, ty)
    if isinstance(ty, TupleType):
        return TupleType([subst_type(f, mapping) for f in ty.fields])
    if isinstance(ty, TypeCall):
        return TypeCall(ty.func, [subst_type(a, mapping) for a in ty.args])
    if isinstance(ty, RefType):
        return RefType(subst_type(ty.value, mapping))
    if isinstance(ty, FuncType):
        inner = {k: v for k, v in mapping.items() if k not in ty.type_params}
        return FuncType(
            [subst_type(a, inner) for a in ty.arg_types],
            subst_type(ty.ret_type, inner),
            ty.type_params,
            ty.type_constraints,
        )
    return ty


_Path = ArgumentPath


def _fail(path: _Path, ty, value, detail: str = ""):
    message = f"{path.render()}: expected {type_text(ty)} but got {describe_value(value)}"
    if detail:
        message += f" ({detail})"
    raise EvaluationError(message)


def _convert_tensor(value, ty: TensorType, path):
    try:
        array = intake_tensor(value, ty.dtype, ty.shape)
    except Mismatch as mismatch:
        _fail(path, ty, value, mismatch.detail)
    if array is None:
        _fail(path, ty, value)
    if array.dtype != np.dtype(ty.dtype) or not shape_fits(array.shape, ty.shape):
        _fail(path, ty, array)
    return array


class Converter:
    """Converts Python values to Relay values of a given type for one module's ADTs."""

    def __init__(self, mod):
        self.mod = mod
        self._adt_cache: dict = {}
        self._interned: dict = {}

    def convert(self, value, ty, path):
        if ty is None or isinstance(ty, (TypeVar, IncompleteType)):
            return self._convert_unknown(value)
        if isinstance(ty, TensorType):
            return _convert_tensor(value, ty, path)
        if isinstance(ty, TupleType):
            if not isinstance(value, (tuple, list)) or len(value) != len(ty.fields):
                _fail(path, ty, value)
            return tuple(
                self.convert(v, t, _Path(path, f"field {i}")) for i, (v, t) in enumerate(zip(value, ty.fields))
            )
        if isinstance(ty, (TypeCall, GlobalTypeVar)):
            return self._convert_adt(value, ty, path)
        if isinstance(ty, FuncType):
            if not callable(value):
                _fail(path, ty, value)
            return value
        if isinstance(ty, RefType):
            if not isinstance(value, RefValue):
                _fail(path, ty, value)
            # The cell is shared with the caller: convert its contents in place.
            value.value = self.convert(value.value, ty.value, _Path(path, "the reference contents"))
            return value
        return value

    def _convert_unknown(self, value):
        # A polymorphic parameter: any Relay value; Python numbers follow relay.const's defaults.
        if isinstance(value, bool):
            return np.asarray(value)
        if isinstance(value, int):
            return np.asarray(value, dtype="int32" if -(2**31) <= value < 2**31 else "int64")
        if isinstance(value, float):
            return np.asarray(value, dtype="float32")
        if isinstance(value, np.generic):
            return np.asarray(value)
        if isinstance(value, list):
            return tuple(self._convert_unknown(v) for v in value)
        return value

    def _adt_constructors(self, ty):
        """{constructor name: (constructor, field types)} for an ADT type, or None for an opaque type.

        Cached per type object; field types are interned, so the tail of a List[T] has the very
        type object of the list itself and long lists convert without recomputing anything.
        """
        cached = self._adt_cache.get(id(ty))
        if cached is not None and cached[0] is ty:
            return cached[1]
        gtv, args = (ty.func, ty.args) if isinstance(ty, TypeCall) else (ty, ())
        data = self.mod.type_definitions.get(gtv) if isinstance(gtv, GlobalTypeVar) else None
        ctors = None
        if data is not None:
            mapping = dict(zip(data.type_vars, args))
            ctors = {
                c.name_hint: (c, [self._intern(subst_type(t, mapping)) for t in c.inputs]) for c in data.constructors
            }
        self._adt_cache[id(ty)] = (ty, ctors)
        return ctors

    def _intern(self, ty):
        return self._interned.setdefault(ty, ty)

    def _convert_adt(self, value, ty, path):
        ctors = self._adt_constructors(ty)
        if ctors is None:  # an extern type or an unknown head: opaque to us
            return value
        if not isinstance(value, ADTValue):
            _fail(path, ty, value)
        entry = ctors.get(value.constructor)
        if entry is None:
            head = ty.func if isinstance(ty, TypeCall) else ty
            _fail(
                path,
                ty,
                value,
                f"constructor {value.constructor} is not one of {head.name_hint}'s constructors {', '.join(ctors)}",
            )
        ctor, field_types = entry
        if len(value.fields) != len(field_types):
            _fail(path, ty, value, f"{ctor.name_hint} takes {len(field_types)} field(s), got {len(value.fields)}")
        fields = []
        changed = False
        for i, (field, field_ty) in enumerate(zip(value.fields, field_types)):
            new = self.convert(field, field_ty, _Path(path, f"field {i} of {ctor.name_hint}"))
            changed = changed or new is not field
            fields.append(new)
        return ADTValue(value.constructor, fields) if changed else value


def convert_arguments(converter: Converter, code, args, what: str):
    """Check arity, then convert each argument by its parameter's type."""
    if len(args) != code.arity:
        names = ", ".join(f"%{p.name_hint}" for p in code.params)
        raise EvaluationError(f"{what} expects {code.arity} argument(s) ({names}) but got {len(args)}")
    return [
        converter.convert(arg, ty, _Path(None, f"argument {i + 1} (%{param.name_hint}) of {what}"))
        for i, (arg, ty, param) in enumerate(zip(args, code.param_types, code.params))
    ]


def convert_result(converter: Converter, value, ty, what: str):
    """A value returned by a Python function called from Relay, checked against its Relay type."""
    return converter.convert(value, ty, _Path(None, f"the result of {what}"))


def convert_argument(converter: Converter, value, ty, what: str):
    return converter.convert(value, ty, _Path(None, what))
