"""TVM's `#[metadata]` section: real texts TVM printed, hand-assembled tables, round trips, bad input."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from transpile import ParseError, relay
from transpile.relay import Constant, Function, IRModule, MetaRef, Tuple, var
from transpile.relay.parser.meta import MissingMetadataError
from tvm_bytes import BFLOAT, BOOL_DLPACK, FLOAT, INT, UINT, metadata_json, ndarray_record

DATA = Path(__file__).resolve().parent / "data" / "tvm_metadata"
H = '#[version = "0.0.5"]\n'


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def bits32(array) -> list[int]:
    return [int(v) for v in np.asarray(array, dtype="<f4").reshape(-1).view("<u4")]


# ----- texts TVM printed ------------------------------------------------------------------------------


def test_tvm_0_8_section_gives_the_constant():
    mod = relay.parse(read("tvm080_constant.relay"))
    body = mod["main"].body
    assert isinstance(body, Constant) and body.data.dtype == np.float32
    np.testing.assert_array_equal(body.data, [[1, 2, 3], [4, 5, 6]])


def test_tvm_0_12_dense_model_constant_values():
    dense = relay.parse(read("tvm012_dense.relay"))["main"].body
    multiply = dense.args[0].args[0].args[0]  # dense(add(relu(multiply(%x, c)), %in_bias), %weight)
    constant = multiply.args[1]
    assert constant.data.shape == (5,) and constant.data.dtype == np.float32
    # The base64 record's data bytes, read by hand as little-endian float32 bit patterns.
    assert bits32(constant.data) == [0x3F0EDF2F, 0x3F643753, 0x3F094942, 0x3F2EB522, 0x3F597A6D]


def test_tvm_0_12_float16_constants_share_their_virtual_device_node():
    body = relay.parse(read("tvm012_float16.relay"))["main"].body
    first, second, third = body.args[0].args[0].args[1], body.args[0].args[1], body.args[1]
    for c in (first, second, third):
        assert c.data.dtype == np.float16 and c.data.shape == (32,)
    assert [int(v) for v in first.data[:4].view("<u2")] == [0x3B73, 0x3947, 0x3B2F, 0x3625]


def test_reprinting_a_tvm_text_reproduces_it():
    """Our printer writes the section exactly as TVM 0.12-0.19 did (only tvm_version differs)."""
    for name in ("tvm012_float16.relay", "tvm012_dense.relay"):
        original = read(name)
        printed = relay.parse(original).astext()
        assert printed.replace('"tvm_version": "0.19.0"', '"tvm_version": "0.12.dev0"') == original.rstrip("\n")


# ----- hand-assembled tables: dtypes and shapes ------------------------------------------------------

CASES = [
    # (code, bits, shape, numpy values)
    (INT, 64, (2, 2), np.array([[1, -2], [2**40, -(2**62)]], dtype="int64")),
    (INT, 8, (3,), np.array([-128, 0, 127], dtype="int8")),
    (UINT, 8, (), np.array(200, dtype="uint8")),
    (UINT, 1, (4,), np.array([True, False, False, True])),  # TVM <= 0.19's bool: uint1, a byte each
    (BOOL_DLPACK, 8, (2,), np.array([False, True])),  # DLPack's kDLBool (TVM >= 0.20)
    (FLOAT, 32, (), np.array(-0.5, dtype="float32")),
    (FLOAT, 16, (2, 1), np.array([[1.5], [-65504]], dtype="float16")),
    (FLOAT, 64, (1,), np.array([np.pi])),
    (FLOAT, 32, (0, 3), np.zeros((0, 3), dtype="float32")),
]


def _section_text(records, body="()") -> str:
    return H + f"def @main() {{\n  {body}\n}}\n\n#[metadata]\n" + metadata_json(records)


def test_hand_assembled_constants_of_every_dtype():
    records = [
        ndarray_record(code, bits, shape, values.astype(values.dtype.newbyteorder("<")).tobytes())
        for code, bits, shape, values in CASES
    ]
    refs = ", ".join(f"meta[relay.Constant][{i}]" for i in range(len(CASES)))
    fields = relay.parse(_section_text(records, f"({refs})"))["main"].body.fields
    for field, (_, _, shape, values) in zip(fields, CASES):
        assert field.data.shape == shape
        assert field.data.dtype == (np.bool_ if values.dtype == np.bool_ else values.dtype)
        np.testing.assert_array_equal(field.data, values)


def test_nonzero_bool_bytes_read_as_true():
    text = _section_text([ndarray_record(UINT, 1, (3,), bytes([0, 1, 7]))], "meta[relay.Constant][0]")
    np.testing.assert_array_equal(relay.parse(text)["main"].body.data, [False, True, True])


def test_init_meta_table_entries_follow_the_sections_as_in_tvm():
    text = _section_text(
        [ndarray_record(INT, 32, (), struct.pack("<i", 7))], "(meta[relay.Constant][0], meta[relay.Constant][1])"
    )
    extra = np.array([1.0, 2.0], dtype="float32")
    fields = relay.parse(text, init_meta_table={"relay.Constant": [extra]})["main"].body.fields
    assert fields[0].data == 7
    np.testing.assert_array_equal(fields[1].data, extra)


def test_other_kinds_are_kept_as_attribute_references():
    device = {
        "type_key": "VirtualDevice",
        "attrs": {"device_type_int": "1", "memory_scope": "0", "target": "0", "virtual_device_id": "0"},
    }
    payload = metadata_json(
        [ndarray_record(FLOAT, 32, (2,), np.ones(2, "<f4").tobytes())], extra_kinds={"VirtualDevice": [device]}
    )
    text = (
        H + "def @main() {\n  on_device(meta[relay.Constant][0], virtual_device=meta[VirtualDevice][0])\n}\n"
        "#[metadata]\n" + payload
    )
    call = relay.parse(text)["main"].body
    assert call.attrs.virtual_device == MetaRef("VirtualDevice", 0)
    np.testing.assert_array_equal(call.args[0].data, [1, 1])


# ----- the printer writes the section; print -> parse round trips -------------------------------------


def _module_with(*constants):
    x = var("x", shape=(2,))
    return IRModule({"main": Function([x], Tuple([x, *[Constant(c) for c in constants]]))})


def test_round_trip_keeps_values_dtypes_and_shapes():
    constants = [values for *_, values in CASES] + [np.array(3, dtype="int16").reshape(1)]
    mod = _module_with(*constants)
    text = mod.astext(show_meta_data=True)
    assert '\n#[metadata]\n{\n  "root": 1,\n  "nodes": [\n' in text
    back = relay.parse(text)
    assert relay.structural_equal(back, mod)
    for field, values in zip(back["main"].body.fields[1:], constants):
        assert field.data.dtype == values.dtype and field.data.shape == values.shape
        np.testing.assert_array_equal(field.data, values)


def test_printed_section_is_tvm_savejson():
    text = _module_with(np.array([True, False]), np.arange(3, dtype="int8")).astext()
    payload = json.loads(text.split("#[metadata]\n")[1])
    nodes = payload["nodes"]
    root = nodes[payload["root"]]
    assert nodes[0] == {"type_key": ""} and root["type_key"] == "Map" and root["keys"] == ["relay.Constant"]
    constants = [nodes[i] for i in nodes[root["data"][0]]["data"]]
    assert [c["type_key"] for c in constants] == ["relay.Constant", "relay.Constant"]
    # Every field TVM 0.19's LoadJSON requires, ObjectRefs as node indices, data as b64ndarrays indices.
    assert set(constants[0]["attrs"]) == {"_checked_type_", "data", "span", "virtual_device_"}
    assert nodes[int(constants[0]["attrs"]["virtual_device_"])]["type_key"] == "VirtualDevice"
    records = [base64.b64decode(b) for b in payload["b64ndarrays"]]
    assert records[0] == ndarray_record(UINT, 1, (2,), bytes([1, 0]))  # bool written as TVM <= 0.19 did
    assert records[1] == ndarray_record(INT, 8, (3,), bytes([0, 1, 2]))
    assert payload["attrs"] == {"tvm_version": "0.19.0"}


def test_show_meta_data_false_keeps_tvms_comment():
    text = _module_with(np.ones(3, "float32")).astext(show_meta_data=False)
    assert "#[metadata]" not in text and "the metadata section has been omitted" in text


def test_virtual_device_references_round_trip_as_null_entries():
    text = (
        H + "def @main() {\n  on_device(meta[relay.Constant][0], virtual_device=meta[VirtualDevice][0])\n}\n"
        "#[metadata]\n"
        + metadata_json(
            [ndarray_record(FLOAT, 32, (1,), b"\0\0\x80?")],
            extra_kinds={"VirtualDevice": [{"type_key": "VirtualDevice"}]},
        )
    )
    mod = relay.parse(text)
    back = relay.parse(mod.astext())
    assert back["main"].body.attrs.virtual_device == MetaRef("VirtualDevice", 0)
    assert relay.structural_equal(back, mod)


# ----- bad input: clear ParseErrors at the section -----------------------------------------------------


def _error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        relay.parse(text)
    return info.value


def _one(record_or_b64, body="meta[relay.Constant][0]") -> str:
    return _section_text([record_or_b64], body)


GOOD = ndarray_record(FLOAT, 32, (2,), np.ones(2, "<f4").tobytes())


@pytest.mark.parametrize(
    "record, message",
    [
        (
            base64.b64encode(GOOD).decode()[:-3],
            "b64ndarrays[0] (the data of meta[relay.Constant][0]) is not valid base64",
        ),
        (GOOD[:-4], "truncated tensor data (shape (2,), float32): 8 bytes needed, 4 present"),
        (GOOD[:20], "truncated tensor header: 32 bytes needed, 20 present"),
        (ndarray_record(FLOAT, 32, (2,), b"\0" * 8, magic=0x1234), "not a TVM tensor: magic number 0x0000000000001234"),
        (ndarray_record(9, 32, (2,), b"\0" * 8), "unknown dtype code 9 (bits=32)"),
        (ndarray_record(BFLOAT, 16, (2,), b"\0" * 4), "dtype bfloat16 (code 4, 16 bits) has no numpy equivalent"),
        (ndarray_record(FLOAT, 32, (2,), b"\0" * 32, lanes=4), "vector dtype float32x4 is not supported"),
        (ndarray_record(FLOAT, 32, (2,), b"\0" * 8, size=12), "data size 12 bytes does not match shape (2,)"),
        (ndarray_record(FLOAT, 32, (2,), b"\0" * 8, device=2), "device type 2: TVM saves tensors as CPU tensors"),
    ],
)
def test_bad_tensor_records(record, message):
    error = _error(_one(record))
    assert error.line == 6 and message in error.message, error.message


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p: p.update(root=42), "`root` refers to node 42, but there are 4 nodes"),
        (lambda p: p["nodes"][1].update(type_key="Array"), "the root is a 'Array' node, expected a Map"),
        (lambda p: p["nodes"][2].update(type_key="relay.Tuple"), "the relay.Constant entries are a 'relay.Tuple' node"),
        (
            lambda p: p["nodes"][3].update(type_key="relay.Var"),
            "meta[relay.Constant][0] is a relay.Var node, not a relay.Constant",
        ),
        (
            lambda p: p["nodes"][3].update(attrs={"span": "0"}),
            "meta[relay.Constant][0] is a relay.Constant without a `data`",
        ),
        (lambda p: p["nodes"][3]["attrs"].update(data="5"), "refers to b64ndarrays[5], but there are 1 arrays"),
        (lambda p: p.update(nodes={"a": 1}), "`nodes` must be a list of objects"),
        (lambda p: p["nodes"][1].update(keys=["relay.Constant", "x"]), "as many string `keys` as `data` entries"),
    ],
)
def test_malformed_tables(mutate, message):
    payload = json.loads(metadata_json([GOOD]))
    mutate(payload)
    error = _error(H + "def @main() {\n  meta[relay.Constant][0]\n}\n\n#[metadata]\n" + json.dumps(payload))
    assert error.line == 6 and message in error.message, error.message


def test_unsupported_kind_used_as_an_expression():
    payload = metadata_json([GOOD], extra_kinds={"relay.Var": [{"type_key": "relay.Var", "attrs": {}}]})
    error = _error(H + "def @main() {\n  meta[relay.Var][0]\n}\n#[metadata]\n" + payload)
    assert (error.line, error.column) == (3, 3)
    assert "meta[relay.Var][0] is a relay.Var object of the metadata section" in error.message


def test_invalid_json():
    error = _error(H + 'def @main() { 1 }\n#[metadata]\n{"root": 1, ')
    assert error.line == 3 and error.message.startswith("the #[metadata] section is not valid JSON")


# ----- no section at all -------------------------------------------------------------------------------


def test_missing_section_says_what_is_missing_and_how_to_supply_it():
    text = (
        H + "def @main(%x: Tensor[(2), float32]) {\n  %0 = add(%x, meta[relay.Constant][0]);\n"
        "  multiply(%0, meta[relay.Constant][4])\n}\n"
    )
    with pytest.raises(MissingMetadataError) as info:
        relay.parse(text)
    error = info.value
    assert (error.line, error.column, error.count) == (3, 16, 5)
    assert "uses 5 relay.Constant values (meta[relay.Constant][0] to meta[relay.Constant][4])" in error.message
    assert "no #[metadata] section" in error.message and "init_meta_table" in error.message
    assert "show_meta_data=True" in error.message
    supplied = [np.full(2, i, "float32") for i in range(5)]
    mod = relay.parse(text, init_meta_table={"relay.Constant": supplied})
    np.testing.assert_array_equal(mod["main"].body.args[1].data, [4, 4])
