"""The meta table: decoding the `#[metadata]` section and resolving `meta[kind][index]` references.

The section is TVM's SaveJSON graph (see metadata.py); transpile's printer used to write its own
`{kind: [{"dtype", "shape", "data"}]}` table, which is still read.
"""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from ...errors import ParseError, Span
from ..attrs import MetaRef
from ..expr import Constant, Expr
from .metadata import CONSTANT_KIND, OpaqueMetaObject, is_tvm_metadata, read_tvm_metadata

__all__ = ["decode_metadata", "merge_meta_tables", "MetaTable", "MissingMetadataError"]


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
    """The meta table of a `#[metadata]` section: TVM's SaveJSON graph or transpile's older JSON table."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the #[metadata] section is not valid JSON: {exc}", span) from None
    if is_tvm_metadata(payload):
        return read_tvm_metadata(payload, span)
    if not isinstance(payload, dict):
        raise ParseError("the #[metadata] section must be a JSON object (TVM's meta table)", span)
    table = {}
    for kind, entries in payload.items():
        if not isinstance(entries, list):
            raise ParseError(f"metadata entry {kind!r} must be a list", span)
        if kind == CONSTANT_KIND:
            table[kind] = [_constant_from_json(e, f"meta[{kind}][{i}]", span) for i, e in enumerate(entries)]
        else:
            table[kind] = list(entries)
    return table


def merge_meta_tables(section: dict | None, init_meta_table: dict | None) -> dict | None:
    """TVM's rule (parser.cc InitParser): the section's entries of a kind first, then the init table's."""
    if init_meta_table is None:
        return section
    merged = {kind: list(entries) for kind, entries in (section or {}).items()}
    for kind, entries in init_meta_table.items():
        merged.setdefault(kind, []).extend(entries)
    return merged


class MissingMetadataError(ParseError):
    """The text references meta constants but carries no `#[metadata]` section and none were supplied."""

    def __init__(self, kind: str, count: int, span: Span, remedy: str | None = None):
        self.kind = kind
        self.count = count
        refs = f"meta[{kind}][0]" if count == 1 else f"meta[{kind}][0] to meta[{kind}][{count - 1}]"
        remedy = remedy or (
            f"supply them with relay.parse(text, init_meta_table={{{kind!r}: [...]}}), "
            "or re-export the module from TVM with mod.astext(show_meta_data=True)"
        )
        super().__init__(
            f"the program uses {count} {kind} value{'s' if count != 1 else ''} ({refs}) but has no #[metadata] "
            f"section to take them from (TVM leaves it out when printing with show_meta_data=False): {remedy}",
            span,
        )


class MetaTable:
    """Looks up `meta[kind][index]` for expression and attribute positions."""

    def __init__(self, table: dict | None, referenced: dict[str, int] | None = None):
        self.table = dict(table or {})
        self.has_table = table is not None
        self.referenced = referenced or {}  # kind -> 1 + the highest index the text uses
        self._converted: dict = {}

    def _entry(self, kind: str, index: int, span: Span):
        entries = self.table.get(kind)
        if entries is None and not self.has_table and kind == CONSTANT_KIND:
            raise MissingMetadataError(kind, self.referenced.get(kind, index + 1), span)
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
            if isinstance(value, OpaqueMetaObject):
                raise ParseError(
                    f"meta[{kind}][{index}] is a {value.type_key} object of the metadata section, which transpile "
                    "keeps only as an attribute value, not as an expression (only relay.Constant entries are)",
                    span,
                )
            raise ParseError(f"meta[{kind}][{index}] is not an expression", span)
        return expr

    def attr(self, kind: str, index: int, span: Span):
        value = self._entry(kind, index, span)
        expr = self._as_expr(kind, index, value)
        return expr if expr is not None else MetaRef(kind, index)
