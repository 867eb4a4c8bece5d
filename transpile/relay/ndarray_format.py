"""TVM's binary tensor format (runtime::SaveDLTensor / NDArray::Load): numpy arrays to and from bytes.

Layout, all little-endian (TVM <= 0.19, include/tvm/runtime/ndarray.h):

    u64 magic 0xDD5E40F096B4A13F | u64 reserved (0) | i32 device_type (1 = CPU) | i32 device_id
    | i32 ndim | u8 dtype code | u8 dtype bits | u16 dtype lanes | i64 shape[ndim]
    | i64 data byte size (= product(shape) * ceil(bits / 8)) | data, C order

The same records appear base64-encoded in a `#[metadata]` section (`b64ndarrays`) and one after
another in a `save_param_dict` file.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ..errors import TranspileError

__all__ = ["NDARRAY_MAGIC", "WeightsFormatError", "encode_ndarray", "decode_ndarray", "dl_dtype"]

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
CPU_DEVICE = 1  # kDLCPU: TVM always saved tensors as CPU tensors
# No real tensor comes close; the bound keeps a corrupt header from being read as a huge shape.
MAX_NDIM = 64

_HEAD = struct.Struct("<QQiiiBBH")  # magic, reserved, device type, device id, ndim, code, bits, lanes
_I64 = struct.Struct("<q")


class WeightsFormatError(TranspileError):
    """Serialized weights (a TVM tensor record, a parameter file) that are malformed or unsupported."""


# DLDataType (code, bits) -> numpy dtype. TVM <= 0.19 stored bool as uint1 (code 1, bits 1, one byte per
# value); DLPack >= 0.8, and with it TVM >= 0.20, uses kDLBool (code 6, bits 8).
_TO_NUMPY = {
    (0, 8): "int8",
    (0, 16): "int16",
    (0, 32): "int32",
    (0, 64): "int64",
    (1, 1): "bool",
    (1, 8): "uint8",
    (1, 16): "uint16",
    (1, 32): "uint32",
    (1, 64): "uint64",
    (2, 16): "float16",
    (2, 32): "float32",
    (2, 64): "float64",
    (6, 8): "bool",
}
# numpy dtype -> (code, bits) as TVM <= 0.19 wrote it.
_FROM_NUMPY = {name: key for key, name in _TO_NUMPY.items() if key != (6, 8)}
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "handle", 4: "bfloat", 5: "complex", 6: "bool", 7: "float8_e5m2"}


def _numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    family = _CODE_NAMES.get(code)
    if lanes != 1:
        raise WeightsFormatError(f"vector dtype {family or code}{bits}x{lanes} is not supported (only lanes=1)")
    name = _TO_NUMPY.get((code, bits))
    if name is None:
        if family is None:
            raise WeightsFormatError(f"unknown dtype code {code} (bits={bits})")
        raise WeightsFormatError(f"dtype {family}{bits} (code {code}, {bits} bits) has no numpy equivalent")
    return np.dtype(name)


def dl_dtype(dtype) -> tuple[int, int]:
    """The (code, bits) TVM wrote for a numpy dtype; WeightsFormatError if TVM's format cannot hold it."""
    key = _FROM_NUMPY.get(np.dtype(dtype).name)
    if key is None:
        raise WeightsFormatError(f"dtype {np.dtype(dtype).name} cannot be saved in TVM's tensor format")
    return key


def encode_ndarray(array) -> bytes:
    """The bytes TVM's NDArray::Save writes for `array` (numpy, C order, little-endian)."""
    array = np.asarray(array)
    code, bits = dl_dtype(array.dtype)
    # Not np.ascontiguousarray: it turns 0-d arrays into 1-d ones.
    data = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
    head = _HEAD.pack(NDARRAY_MAGIC, 0, CPU_DEVICE, 0, data.ndim, code, bits, 1)
    shape = struct.pack(f"<{data.ndim}q", *data.shape)
    # join takes the array's buffer directly: one copy of the data, however large.
    return b"".join([head, shape, _I64.pack(data.nbytes), memoryview(data.reshape(-1)).cast("B")])


def _truncated(what: str, needed: int, available: int) -> WeightsFormatError:
    return WeightsFormatError(f"truncated {what}: {needed} bytes needed, {max(available, 0)} present")


def decode_ndarray(buffer, offset: int = 0) -> tuple[np.ndarray, int]:
    """(array, offset just past it) for the tensor record at `offset` of `buffer`.

    The array is a read-only view of `buffer` (copy it to keep it past the buffer). Raises
    WeightsFormatError saying what is wrong: magic number, device, dtype, sizes, truncation.
    """
    view = memoryview(buffer).cast("B")
    available = len(view) - offset
    if available < _HEAD.size:
        raise _truncated("tensor header", _HEAD.size, available)
    magic, _reserved, device_type, _device_id, ndim, code, bits, lanes = _HEAD.unpack_from(view, offset)
    if magic != NDARRAY_MAGIC:
        raise WeightsFormatError(f"not a TVM tensor: magic number {magic:#018x}, expected {NDARRAY_MAGIC:#018x}")
    if device_type != CPU_DEVICE:
        raise WeightsFormatError(f"device type {device_type}: TVM saves tensors as CPU tensors (device type 1)")
    if not 0 <= ndim <= MAX_NDIM:
        raise WeightsFormatError(f"invalid number of dimensions {ndim}")
    dtype = _numpy_dtype(code, bits, lanes)
    position = offset + _HEAD.size
    if len(view) - position < 8 * ndim + 8:
        raise _truncated("tensor shape", 8 * ndim + 8, len(view) - position)
    shape = struct.unpack_from(f"<{ndim}q", view, position)
    position += 8 * ndim
    if any(d < 0 for d in shape):
        raise WeightsFormatError(f"negative dimension in shape {shape}")
    (nbytes,) = _I64.unpack_from(view, position)
    position += 8
    count = math.prod(shape)
    if nbytes != count * dtype.itemsize:
        raise WeightsFormatError(
            f"data size {nbytes} bytes does not match shape {shape} of {dtype.name} ({count * dtype.itemsize} bytes)"
        )
    if len(view) - position < nbytes:
        raise _truncated(f"tensor data (shape {shape}, {dtype.name})", nbytes, len(view) - position)
    if dtype == np.bool_:
        # Any nonzero byte is true; numpy's bool must hold exactly 0 or 1.
        raw = np.frombuffer(view, dtype=np.uint8, count=count, offset=position)
        array = (raw != 0).reshape(shape)
    else:
        array = np.frombuffer(view, dtype=dtype.newbyteorder("<"), count=count, offset=position).reshape(shape)
        if not array.dtype.isnative:
            array = array.astype(dtype)
    return array, position + nbytes
