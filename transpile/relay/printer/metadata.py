"""Writing the `#[metadata]` section as TVM <= 0.19 did: SaveJSON of the meta table, dmlc JSON layout.

The nodes come in TVM's indexing order (depth first from the root Map: each kind's Array, then each
entry and the objects it refers to), every relay.Constant carries the fields TVM 0.19's LoadJSON
requires (`data` indexes `b64ndarrays`; `virtual_device_` is the shared fully unconstrained
VirtualDevice, as TVM printed it), and the text follows dmlc's JSONWriter: objects and arrays of
strings or objects one item per line, arrays of numbers inline, a map of one entry inline. So TVM
reads the section back, and a module TVM printed is reprinted the same way.
"""

from __future__ import annotations

import base64
import json

from ..ndarray_format import encode_ndarray

__all__ = ["TVM_SCHEMA_VERSION", "metadata_section_parts"]

# The node layout written below is TVM 0.19's (the last Relay release); the version tells
# TVM's json_compact upgrader which layout it reads.
TVM_SCHEMA_VERSION = "0.19.0"
CONSTANT_KIND = "relay.Constant"


def _node(type_key: str, attrs: dict | None = None, keys: list | None = None, data: list | None = None) -> list[str]:
    """One node of `nodes`, indented as an element of that array, as pieces."""
    fields = [f'      "type_key": {json.dumps(type_key)}']
    if attrs:
        if len(attrs) == 1:  # dmlc writes a one-entry map on one line
            ((key, value),) = attrs.items()
            fields.append(f'      "attrs": {{{json.dumps(key)}: {json.dumps(value)}}}')
        else:
            lines = ",\n".join(f"        {json.dumps(k)}: {json.dumps(attrs[k])}" for k in sorted(attrs))
            fields.append('      "attrs": {\n' + lines + "\n      }")
    if keys:
        fields.append('      "keys": [\n' + ",\n".join(f"        {json.dumps(k)}" for k in keys) + "\n      ]")
    if data:
        fields.append(f'      "data": [{", ".join(str(i) for i in data)}]')
    return ["    {\n" + ",\n".join(fields) + "\n    }"]


def metadata_section_parts(constants: list, ref_sizes: dict[str, int]) -> list[str]:
    """The JSON after `#[metadata]` for `constants` (meta[relay.Constant][i]) and opaque references.

    `ref_sizes` maps other kinds (e.g. VirtualDevice) to how many entries the text uses; transpile
    keeps no object for them, so they are written as null entries. Returned as pieces to join once:
    tables of real models reach hundreds of megabytes.
    """
    kinds = ([CONSTANT_KIND] if constants else []) + sorted(ref_sizes)
    nodes: list[list[str]] = [_node("")]
    root = len(nodes)
    nodes.append([])  # the root Map, filled once its arrays' indices are known
    map_data = []
    virtual_device = None
    for kind in kinds:
        array_index = len(nodes)
        map_data.append(array_index)
        nodes.append([])
        if kind != CONSTANT_KIND:
            nodes[array_index] = _node("Array", data=[0] * ref_sizes[kind])
            continue
        items = []
        for tensor_index in range(len(constants)):
            items.append(len(nodes))
            nodes.append([])
            if virtual_device is None:
                virtual_device = len(nodes)
                unconstrained = {"device_type_int": "-1", "target": "0", "virtual_device_id": "-1"}
                nodes.append(_node("VirtualDevice", {**unconstrained, "memory_scope": str(virtual_device + 1)}))
                nodes.append(_node("runtime.String"))  # the empty memory scope
            fields = {"data": str(tensor_index), "virtual_device_": str(virtual_device)}
            nodes[items[-1]] = _node(CONSTANT_KIND, {"_checked_type_": "0", "span": "0", **fields})
        nodes[array_index] = _node("Array", data=items)
    nodes[root] = _node("Map", keys=kinds, data=map_data)

    parts = ["{\n", f'  "root": {root},\n', '  "nodes": [\n']
    for i, node in enumerate(nodes):
        parts += node
        parts.append(",\n" if i + 1 < len(nodes) else "\n")
    parts.append("  ],\n")
    if constants:
        parts.append('  "b64ndarrays": [\n')
        for i, constant in enumerate(constants):
            parts += ['    "', base64.b64encode(encode_ndarray(constant.data)).decode("ascii"), '"']
            parts.append(",\n" if i + 1 < len(constants) else "\n")
        parts.append("  ],\n")
    else:
        parts.append('  "b64ndarrays": [],\n')
    parts.append(f'  "attrs": {{"tvm_version": "{TVM_SCHEMA_VERSION}"}}\n}}')
    return parts
