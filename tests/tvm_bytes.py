"""Hand-assembled TVM binary records for tests, written from TVM's spec, independent of transpile's code.

NDArray::Save (include/tvm/runtime/ndarray.h, v0.19): u64 magic, u64 reserved, i32 device type, i32
device id, i32 ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim], i64 byte size, data.
SaveParams (src/runtime/file_utils.cc): u64 magic, u64 reserved, u64 n + (u64 len, bytes) names,
u64 n, NDArray records.
"""

from __future__ import annotations

import base64
import json
import struct

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
PARAMS_MAGIC = 0xF7E58D4F05049CB7

# DLDataType codes
INT, UINT, FLOAT, BFLOAT, BOOL_DLPACK = 0, 1, 2, 4, 6


def ndarray_record(code, bits, shape, data: bytes, *, lanes=1, magic=NDARRAY_MAGIC, device=1, size=None) -> bytes:
    head = struct.pack("<QQiiiBBH", magic, 0, device, 0, len(shape), code, bits, lanes)
    dims = b"".join(struct.pack("<q", d) for d in shape)
    return head + dims + struct.pack("<q", len(data) if size is None else size) + data


def param_dict_bytes(named_records, *, magic=PARAMS_MAGIC, tensor_count=None) -> bytes:
    out = struct.pack("<QQ", magic, 0) + struct.pack("<Q", len(named_records))
    for name, _ in named_records:
        encoded = name.encode("utf-8")
        out += struct.pack("<Q", len(encoded)) + encoded
    out += struct.pack("<Q", len(named_records) if tensor_count is None else tensor_count)
    return out + b"".join(record for _, record in named_records)


def metadata_json(records, *, constant_nodes=None, extra_kinds=None) -> str:
    """A SaveJSON meta table {relay.Constant: [...]} over base64 `records`, in TVM 0.19's node layout."""
    nodes = [{"type_key": ""}, None, None]
    items = []
    for i in range(len(records)):
        items.append(len(nodes))
        attrs = {"_checked_type_": "0", "data": str(i), "span": "0", "virtual_device_": "0"}
        nodes.append({"type_key": "relay.Constant", "attrs": attrs})
    if constant_nodes is not None:  # replace the Constant nodes wholesale (malformed-input tests)
        nodes[3:] = constant_nodes
        items = list(range(3, 3 + len(constant_nodes)))
    keys, data = ["relay.Constant"], [2]
    nodes[2] = {"type_key": "Array", "data": items}
    for kind, kind_nodes in (extra_kinds or {}).items():
        array_index = len(nodes)
        nodes.append(None)
        members = []
        for node in kind_nodes:
            members.append(len(nodes))
            nodes.append(node)
        nodes[array_index] = {"type_key": "Array", "data": members}
        keys.append(kind)
        data.append(array_index)
    nodes[1] = {"type_key": "Map", "keys": keys, "data": data}
    payload = {
        "root": 1,
        "nodes": nodes,
        "b64ndarrays": [r if isinstance(r, str) else base64.b64encode(r).decode() for r in records],
        "attrs": {"tvm_version": "0.19.0"},
    }
    return json.dumps(payload, indent=2)
