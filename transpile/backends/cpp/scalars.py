"""Which 0-d tensors the cpp backend keeps as plain C++ scalars (shared by code generation and the light Python boundary)."""

from __future__ import annotations

from ...lir.types import TensorType

__all__ = ["SCALAR_CTYPES", "is_cpp_scalar"]

# 0-d tensors of these dtypes live as plain C++ values; others (bfloat16, ...) stay tensors.
# float16 is the compiler's _Float16 (g++ >= 12, clang >= 15 on x86-64 and aarch64); its
# arithmetic is spelled out per operation in kernels.py so that every result rounds like numpy's.
SCALAR_CTYPES = {
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "_Float16",
    "float32": "float",
    "float64": "double",
}


def is_cpp_scalar(ty) -> bool:
    return isinstance(ty, TensorType) and ty.shape == () and ty.dtype in SCALAR_CTYPES
