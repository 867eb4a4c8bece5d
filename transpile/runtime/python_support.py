"""The few helpers generated Python modules use besides numpy: run-time failures and large constants."""

from __future__ import annotations

import base64

import numpy as np

from ..errors import EvaluationError

__all__ = ["EvaluationError", "decode_constant"]


def decode_constant(dtype: str, shape: tuple, data: str) -> np.ndarray:
    """A read-only array from the base64 text of its raw little-endian bytes (C order)."""
    array = np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
    array = array.astype(np.dtype(dtype), copy=False)
    array.flags.writeable = False
    return array
