"""Parameter files: `.npz` archives and TVM's `save_param_dict` format, told apart by their content.

TVM's format (src/runtime/file_utils.cc, SaveParams / LoadParams), little-endian:

    u64 magic 0xF7E58D4F05049CB7 | u64 reserved (0)
    | u64 name count, then per name: u64 byte length + UTF-8 bytes
    | u64 tensor count (= name count), then one NDArray record per name (see ndarray_format)
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
from pathlib import Path

import numpy as np

from ..errors import TranspileError
from .ndarray_format import WeightsFormatError, decode_ndarray, encode_ndarray

__all__ = [
    "PARAMS_MAGIC",
    "save_param_dict",
    "load_param_dict",
    "load_params",
    "save_params",
    "tensor_value",
    "split_meta_entries",
]

PARAMS_MAGIC = 0xF7E58D4F05049CB7
_PARAMS_PREFIX = struct.pack("<Q", PARAMS_MAGIC)
_ZIP_PREFIXES = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with entries / an empty zip (np.savez of {})
_NPY_PREFIX = b"\x93NUMPY"
_U64 = struct.Struct("<Q")


def tensor_value(value, what: str) -> np.ndarray:
    """`value` (numpy array or scalar, DLPack tensor, nested lists, number) as a numpy array."""
    from ..runtime.boundary import Mismatch, as_array

    try:
        array = as_array(value)
    except Mismatch as exc:
        raise TranspileError(f"{what} is not a usable tensor: {exc.detail}") from None
    if array is None:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise TranspileError(f"{what} is not a tensor: {exc}") from None
    if array.dtype.kind not in "biuf":
        raise TranspileError(f"{what} has dtype {array.dtype}, not a numeric or bool tensor")
    return array


def _named_arrays(params, where: str) -> dict[str, np.ndarray]:
    if not hasattr(params, "items"):
        raise TypeError(f"{where} must be a dict of name -> array, got {type(params).__name__}")
    arrays = {}
    for name, value in params.items():
        if not isinstance(name, str):
            raise TranspileError(f"{where}: parameter names must be strings, got {name!r}")
        arrays[name] = tensor_value(value, f"parameter {name!r}")
    return arrays


def save_param_dict(params) -> bytes:
    """TVM's `save_param_dict`: the parameters {name: array} as bytes in TVM's parameter format."""
    arrays = _named_arrays(params, "save_param_dict")
    parts = [_U64.pack(PARAMS_MAGIC), _U64.pack(0), _U64.pack(len(arrays))]
    for name in arrays:
        encoded = name.encode("utf-8")
        parts += [_U64.pack(len(encoded)), encoded]
    parts.append(_U64.pack(len(arrays)))
    parts += [encode_ndarray(array) for array in arrays.values()]
    return b"".join(parts)


def _read_u64(view: memoryview, position: int, what: str, where: str) -> tuple[int, int]:
    if len(view) - position < 8:
        raise WeightsFormatError(f"{where}: truncated at byte {position} while reading {what}")
    return _U64.unpack_from(view, position)[0], position + 8


def load_param_dict(data, where: str = "the parameter bytes") -> dict[str, np.ndarray]:
    """TVM's `load_param_dict`: {name: numpy array} from bytes in TVM's parameter format."""
    view = memoryview(data).cast("B")
    magic, position = _read_u64(view, 0, "the magic number", where)
    if magic != PARAMS_MAGIC:
        raise WeightsFormatError(
            f"{where}: not a TVM parameter file: magic number {magic:#018x}, expected {PARAMS_MAGIC:#018x}"
        )
    _reserved, position = _read_u64(view, position, "the reserved field", where)
    count, position = _read_u64(view, position, "the number of names", where)
    if count > (len(view) - position) // 8:
        raise WeightsFormatError(f"{where}: claims {count} names, more than its {len(view)} bytes can hold")
    names = []
    for i in range(count):
        length, position = _read_u64(view, position, f"the length of name {i}", where)
        if length > len(view) - position:
            raise WeightsFormatError(f"{where}: truncated in name {i} ({length} bytes announced)")
        try:
            names.append(bytes(view[position : position + length]).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise WeightsFormatError(f"{where}: name {i} is not UTF-8: {exc}") from None
        position += length
    tensors, position = _read_u64(view, position, "the number of tensors", where)
    if tensors != count:
        raise WeightsFormatError(f"{where}: {count} names but {tensors} tensors")
    params = {}
    for name in names:
        try:
            array, position = decode_ndarray(view, position)
        except WeightsFormatError as exc:
            raise WeightsFormatError(f"{where}: tensor {name!r} (at byte {position}): {exc.message}") from None
        params[name] = array.copy()  # own the memory: the caller's buffer may go away
    return params


def _load_npz(data: bytes, where: str) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise WeightsFormatError(f"{where}: not a readable .npz archive: {exc}") from None


def load_params(source) -> dict[str, np.ndarray]:
    """{name: numpy array} from a parameter file (a path) or its bytes: `.npz` or TVM's format.

    The format is recognized by the first bytes, whatever the file is called.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, where = bytes(source), "the parameter bytes"
    elif isinstance(source, (str, os.PathLike)):
        where = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise TranspileError(f"cannot read parameter file {where}: {exc.strerror or exc}") from None
    else:
        raise TypeError(f"load_params takes a path or bytes, got {type(source).__name__}")
    if data.startswith(_PARAMS_PREFIX):
        return load_param_dict(data, where)
    if data.startswith(_ZIP_PREFIXES):
        return _load_npz(data, where)
    if data.startswith(_NPY_PREFIX):
        raise WeightsFormatError(f"{where} is a .npy file (one unnamed array); parameters need names: use .npz")
    raise WeightsFormatError(
        f"{where} is neither an .npz archive nor a TVM parameter file (save_param_dict): "
        f"it starts with {data[:8].hex() or 'nothing'}"
    )


def save_params(params, path, format: str | None = None) -> Path:  # noqa: A002 - the natural name
    """Write {name: array} to `path` as `.npz` or TVM's format (`format` "npz"/"tvm"; default: by suffix)."""
    path = Path(path)
    chosen = format or ("npz" if path.suffix.lower() == ".npz" else "tvm")
    if chosen == "npz":
        arrays = _named_arrays(params, "save_params")
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        data = buffer.getvalue()
    elif chosen == "tvm":
        data = save_param_dict(params)
    else:
        raise ValueError(f"format must be 'npz' or 'tvm', got {format!r}")
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise TranspileError(f"cannot write parameter file {path}: {exc.strerror or exc}") from None
    return path


# A meta reference as the text writes it (the lexer accepts the same shape).
_META_NAME = re.compile(r"meta\[(?P<kind>[^\[\]\s]+)\]\[(?P<index>\d+)\]")


def split_meta_entries(params: dict) -> tuple[dict, dict]:
    """({kind: [values]}, other params) from params where some names are meta references.

    A text printed without its `#[metadata]` section still says `meta[relay.Constant][3]`; a parameter
    file can supply those values under exactly that name. Indices must run 0..n-1 without gaps.
    """
    found: dict[str, dict[int, object]] = {}
    named = {}
    for name, value in params.items():
        match = _META_NAME.fullmatch(name)
        if match is None:
            named[name] = value
            continue
        found.setdefault(match.group("kind"), {})[int(match.group("index"))] = value
    table = {}
    for kind, entries in found.items():
        missing = [i for i in range(max(entries) + 1) if i not in entries]
        if missing:
            shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
            raise TranspileError(
                f"the parameters give meta[{kind}][i] for {len(entries)} indices but not for {shown}: "
                "indices must run from 0 without gaps"
            )
        table[kind] = [entries[i] for i in range(len(entries))]
    return table, named
