"""Operator registry and operator families (see registry.py)."""

from .registry import OpDef, OpPattern, AttrField, REQUIRED, RelationError, lookup, get, registered_ops, make_call  # noqa: F401
