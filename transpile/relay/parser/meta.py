"""The meta table: decoding the `#[metadata]` section and resolving `meta[kind][index]` references."""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from ...errors import ParseError, Span
from ..attrs import MetaRef
from ..expr import Constant, Expr

__all__ = ["decode_metadata", "MetaTable"]

CONSTANT_KIND = "relay.Constant"


def _constant_from_json(entry, where: str, span: Span) -> Constant | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or not {"dtype", "shape", "data"} <= set(entry):
        raise ParseError(f"{where} must be an object with `dtype`, `shape` and `data` fields", span)
    try:
        dtype = np.dtype(entry["dtype"])
        shape = tuple(int(d) for d in entry["shape"])
        raw = base64.b64decode(entry["data"], validate=True)
        data = np.frombuffer(raw, dtype=dtype).reshape(shape)
    except (TypeError, ValueError, binascii.Error) as exc:
        raise ParseError(f"{where} is not a valid tensor: {exc}", span) from None
    return Constant(data)


def decode_metadata(text: str, span: Span) -> dict:
    """The meta table written by transpile's printer after `#[metadata]` (a JSON object)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the #[metadata] section is not valid JSON: {exc}", span) from None
    if not isinstance(payload, dict):
        raise ParseError("the #[metadata] section must be a JSON object mapping kinds to lists", span)
    if "root" in payload and "nodes" in payload:
        raise ParseError(
            "TVM's own metadata JSON (with `root` and `nodes`) is not supported; pass the constants with "
            "init_meta_table or re-print the program with transpile",
            span,
        )
    table = {}
    for kind, entries in payload.items():
        if not isinstance(entries, list):
            raise ParseError(f"metadata entry {kind!r} must be a list", span)
        if kind == CONSTANT_KIND:
            table[kind] = [_constant_from_json(e, f"meta[{kind}][{i}]", span) for i, e in enumerate(entries)]
        else:
            table[kind] = list(entries)
    return table


class MetaTable:
    """Looks up `meta[kind][index]` for expression and attribute positions."""

    def __init__(self, table: dict | None):
        self.table = dict(table or {})
        self._converted: dict = {}

    def _entry(self, kind: str, index: int, span: Span):
        entries = self.table.get(kind)
        if entries is None or index >= len(entries):
            detail = "" if entries is None else f" (it has {len(entries)} {kind} entries)"
            raise ParseError(f"meta reference meta[{kind}][{index}] not found in the meta table{detail}", span)
        return entries[index]

    def _as_expr(self, kind: str, index: int, value):
        if isinstance(value, Expr):
            return value
        if isinstance(value, (np.ndarray, np.generic)) and kind == CONSTANT_KIND:
            # Convert once so every reference to the same entry is the same node.
            key = (kind, index)
            if key not in self._converted:
                self._converted[key] = Constant(np.asarray(value))
            return self._converted[key]
        return None

    def expr(self, kind: str, index: int, span: Span) -> Expr:
        value = self._entry(kind, index, span)
        expr = self._as_expr(kind, index, value)
        if expr is None:
            if value is None and kind == CONSTANT_KIND:
                raise ParseError(f"meta[{kind}][{index}] has no value in the meta table", span)
            raise ParseError(f"meta[{kind}][{index}] is not an expression", span)
        return expr

    def attr(self, kind: str, index: int, span: Span):
        value = self._entry(kind, index, span)
        expr = self._as_expr(kind, index, value)
        return expr if expr is not None else MetaRef(kind, index)
