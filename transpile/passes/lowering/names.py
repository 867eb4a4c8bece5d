"""Readable, sanitized LIR names: identifiers from Relay names, and ADT-instance names from their type arguments."""

from __future__ import annotations

import re

from ...relay import ty as rty

__all__ = ["sanitize", "type_name_part", "MAX_NAME"]

MAX_NAME = 60
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def sanitize(name: str, fallback: str = "v") -> str:
    """`name` reduced to [A-Za-z0-9_] (runs of other characters become one `_`); never empty."""
    cleaned = _NOT_IDENT.sub("_", str(name)).strip("_") if name else ""
    return cleaned or fallback


def _dims(shape) -> str:
    return "x".join("any" if isinstance(d, rty.AnyDim) else str(d) for d in shape)


def type_name_part(ty) -> str:
    """The piece of an ADT-instance name for a type argument.

    Scalars are their dtype (`List_int32`), other tensors spell their shape
    (`Tree_Tensor_2x3_float32`), ADTs nest (`Option_List_int32`), tuples, closures and
    references say what they are (`Tuple_int32_bool`, `Fn_int32_to_bool`, `Ref_float32`).
    """
    if isinstance(ty, rty.TensorType):
        if ty.shape == ():
            return ty.dtype
        return f"Tensor_{_dims(ty.shape)}_{ty.dtype}"
    if isinstance(ty, rty.TupleType):
        if not ty.fields:
            return "Unit"
        return "Tuple_" + "_".join(type_name_part(f) for f in ty.fields)
    if isinstance(ty, rty.TypeCall):
        head = type_name_part(ty.func)
        return "_".join([head, *(type_name_part(a) for a in ty.args)])
    if isinstance(ty, rty.GlobalTypeVar):
        return sanitize(ty.name_hint, "Adt")
    if isinstance(ty, rty.FuncType):
        args = "_".join(type_name_part(a) for a in ty.arg_types) or "Unit"
        return f"Fn_{args}_to_{type_name_part(ty.ret_type)}"
    if isinstance(ty, rty.RefType):
        return "Ref_" + type_name_part(ty.value)
    return sanitize(type(ty).__name__)
