"""Converting Python values into tensors at a program's boundary, shared by every backend's checks."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ArgumentPath", "Mismatch", "as_array", "number_to_array", "shape_fits", "intake_tensor", "aligned"]

ALIGNMENT = 64  # bytes; what native kernels assume of every tensor argument


class ArgumentPath:
    """Where a value sits inside an argument; rendered only when an error is reported."""

    __slots__ = ("parent", "label")

    def __init__(self, parent, label: str):
        self.parent = parent
        self.label = label

    def render(self) -> str:
        labels, node = [], self
        while node is not None:
            labels.append(node.label)
            node = node.parent
        if len(labels) > 8:
            labels = labels[:4] + [f"... {len(labels) - 7} more levels ..."] + labels[-3:]
        return " of ".join(labels)


class Mismatch(Exception):
    """A value does not convert; `detail` says why (callers add the path and the expected type)."""

    def __init__(self, detail: str = ""):
        super().__init__(detail)
        self.detail = detail


def shape_fits(shape, expected) -> bool:
    """Whether a concrete shape matches a declared one whose unknown dims are Any objects (not ints)."""
    if len(shape) != len(expected):
        return False
    return all(not isinstance(e, int) or e == s for s, e in zip(shape, expected))


def number_to_array(value, dtype, shape) -> np.ndarray:
    """A Python number as a 0-d array of `dtype`, only when nothing is lost."""
    if tuple(shape) != ():
        raise Mismatch("a Python number can only be passed for a scalar (0-d) tensor")
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return np.asarray(bool(value))
        raise Mismatch("only True/False convert to bool")
    if isinstance(value, complex) and dtype.kind != "c":
        raise Mismatch(f"a complex number does not convert to {dtype.name}")
    if dtype.kind in "iu":
        if isinstance(value, float):
            if not (math.isfinite(value) and value.is_integer()):
                raise Mismatch(f"not representable exactly as {dtype.name}")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise Mismatch(f"out of the range of {dtype.name}")
        return np.asarray(value, dtype=dtype)
    # Rounding to the nearest float is inherent to floats; overflow to infinity is a loss.
    with np.errstate(over="ignore"):
        converted = np.asarray(value, dtype=dtype)
    if math.isfinite(abs(complex(value))) and not np.all(np.isfinite(converted)):
        raise Mismatch(f"out of the range of {dtype.name}")
    return converted


def as_array(value) -> np.ndarray | None:
    """An ndarray view of a numpy array, numpy scalar or DLPack tensor; None for anything else."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as exc:  # a foreign tensor numpy cannot view (e.g. on a GPU)
            raise Mismatch(f"np.from_dlpack failed: {exc}") from None
    return None


def intake_tensor(value, dtype, shape) -> np.ndarray | None:
    """The array for a tensor parameter: arrays, numpy scalars and DLPack tensors as they are (the
    caller checks dtype and shape), Python numbers converted losslessly, None for other values."""
    array = as_array(value)  # numpy scalars first: np.float64 is also a Python float
    if array is None and isinstance(value, (bool, int, float, complex)):
        return number_to_array(value, dtype, shape)
    return array


def aligned(array: np.ndarray) -> np.ndarray:
    """`array` itself when kernels may use it in place, else a C-contiguous 64-byte aligned copy."""
    if array.flags.c_contiguous and array.flags.writeable and array.ctypes.data % ALIGNMENT == 0:
        return array
    nbytes = max(array.nbytes, 1)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    copy = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy
