"""Reading TVM's `#[metadata]` section: the meta table as TVM's SaveJSON wrote it (TVM <= 0.19).

`astext(show_meta_data=True)` printed `SaveJSON(Map<String, Array<ObjectRef>>)`:

    {"root": 1,
     "nodes": [{"type_key": ""},                                  # node 0 is always null
               {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
               {"type_key": "Array", "data": [3, ...]},
               {"type_key": "relay.Constant",
                "attrs": {"data": "0", "span": "0", "virtual_device_": "4", "_checked_type_": "0"}}, ...],
     "b64ndarrays": ["P6G0lvBAXt0...", ...],                     # base64 NDArray records
     "attrs": {"tvm_version": "0.19.0"}}

Node attributes are strings; an ObjectRef field holds a node index ("0" = null), while an NDArray
field (`relay.Constant`'s `data`) holds an index into `b64ndarrays` (src/node/serialization.cc).
Only what a Relay text needs is decoded: Constants become expressions, null entries stay None and
other objects (VirtualDevice, ...) become opaque entries, usable as `meta[...]` attribute values.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from ...errors import ParseError, Span
from ..expr import Constant
from ..ndarray_format import WeightsFormatError, decode_ndarray

__all__ = ["OpaqueMetaObject", "is_tvm_metadata", "read_tvm_metadata"]

CONSTANT_KIND = "relay.Constant"
# "StrMap" is how TVM <= 0.6 named a map with string keys.
_MAP_KEYS = ("Map", "StrMap")


@dataclass(frozen=True)
class OpaqueMetaObject:
    """A meta-table object transpile keeps only by reference (its TVM type key says what it was)."""

    type_key: str


def is_tvm_metadata(payload) -> bool:
    """Whether a decoded `#[metadata]` JSON value is TVM's SaveJSON graph (rather than transpile's old table)."""
    return isinstance(payload, dict) and "root" in payload and "nodes" in payload


class _Graph:
    """The node list of one SaveJSON document, with checked access."""

    def __init__(self, payload: dict, span: Span):
        self.span = span
        self.nodes = payload["nodes"]
        self.arrays = payload.get("b64ndarrays", [])
        if not isinstance(self.nodes, list) or not all(isinstance(n, dict) for n in self.nodes):
            self.fail("`nodes` must be a list of objects")
        if not isinstance(self.arrays, list) or not all(isinstance(a, str) for a in self.arrays):
            self.fail("`b64ndarrays` must be a list of base64 strings")
        self._decoded: dict[int, object] = {}

    def fail(self, why: str):
        raise ParseError(f"the #[metadata] section is not a valid TVM meta table: {why}", self.span)

    def node(self, index, what: str) -> dict:
        if isinstance(index, str):
            index = _int(index)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.nodes):
            self.fail(f"{what} refers to node {index!r}, but there are {len(self.nodes)} nodes")
        return self.nodes[index]

    def tensor(self, index_text, what: str):
        index = _int(index_text)
        if index is None or not 0 <= index < len(self.arrays):
            self.fail(f"{what} refers to b64ndarrays[{index_text}], but there are {len(self.arrays)} arrays")
        if index not in self._decoded:
            where = f"b64ndarrays[{index}] (the data of {what})"
            try:
                raw = base64.b64decode(self.arrays[index], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ParseError(f"the #[metadata] section's {where} is not valid base64: {exc}", self.span) from None
            try:
                array, _end = decode_ndarray(raw)  # TVM ignores bytes after the record too
            except WeightsFormatError as exc:
                raise ParseError(f"the #[metadata] section's {where}: {exc.message}", self.span) from None
            self._decoded[index] = array
        return self._decoded[index]


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _entry(graph: _Graph, kind: str, position: int, index) -> object:
    what = f"meta[{kind}][{position}]"
    node = graph.node(index, what)
    type_key = node.get("type_key", "")
    if type_key == "":
        return None
    if type_key == CONSTANT_KIND:
        attrs = node.get("attrs")
        if not isinstance(attrs, dict) or "data" not in attrs:
            graph.fail(f"{what} is a relay.Constant without a `data` attribute")
        return Constant(graph.tensor(attrs["data"], what))
    if kind == CONSTANT_KIND:
        graph.fail(f"{what} is a {type_key} node, not a relay.Constant")
    return OpaqueMetaObject(type_key)


def read_tvm_metadata(payload: dict, span: Span) -> dict:
    """{kind: [Constant | None | OpaqueMetaObject, ...]} from TVM's SaveJSON meta table."""
    graph = _Graph(payload, span)
    root = graph.node(payload["root"], "`root`")
    if root.get("type_key") not in _MAP_KEYS:
        graph.fail(f"the root is a {root.get('type_key')!r} node, expected a Map from kinds to arrays")
    keys, data = root.get("keys", []), root.get("data", [])
    if not isinstance(keys, list) or not isinstance(data, list) or len(keys) != len(data):
        graph.fail("the root Map must list as many string `keys` as `data` entries")
    table = {}
    for kind, index in zip(keys, data):
        if not isinstance(kind, str):
            graph.fail(f"meta table kind {kind!r} is not a string")
        array = graph.node(index, f"the {kind} entries")
        if array.get("type_key") != "Array":
            graph.fail(f"the {kind} entries are a {array.get('type_key')!r} node, expected an Array")
        items = array.get("data", [])
        if not isinstance(items, list):
            graph.fail(f"the {kind} Array's `data` must be a list of node indices")
        table[kind] = [_entry(graph, kind, i, item) for i, item in enumerate(items)]
    return table
