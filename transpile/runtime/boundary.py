"""Converting Python values into tensors at a program's boundary, shared by every backend's checks."""

from __future__ import annotations

import gc
import math
import threading
from contextlib import contextmanager

import numpy as np

__all__ = [
    "ArgumentPath",
    "Mismatch",
    "as_array",
    "number_to_array",
    "shape_fits",
    "intake_tensor",
    "aligned",
    "gc_paused",
]

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
    if len(shape) != 0:
        raise Mismatch("a Python number can only be passed for a scalar (0-d) tensor")
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if kind == "b":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return np.asarray(bool(value))
        raise Mismatch("only True/False convert to bool")
    if isinstance(value, complex) and kind != "c":
        raise Mismatch(f"a complex number does not convert to {dtype.name}")
    if kind in "iu":
        if isinstance(value, float):
            if not (math.isfinite(value) and value.is_integer()):
                raise Mismatch(f"not representable exactly as {dtype.name}")
            value = int(value)
        low, high = _int_range(dtype)
        if not low <= value <= high:
            raise Mismatch(f"out of the range of {dtype.name}")
        return np.asarray(value, dtype=dtype)
    if kind == "f":
        # Rounding to the nearest float is inherent to floats; overflow to infinity is a loss.
        try:
            number = float(value)
        except OverflowError:  # an int beyond every float
            raise Mismatch(f"out of the range of {dtype.name}") from None
        if math.isfinite(number) and abs(number) >= _overflow_threshold(dtype):
            raise Mismatch(f"out of the range of {dtype.name}")
        return np.asarray(number, dtype=dtype)
    with np.errstate(over="ignore"):
        converted = np.asarray(value, dtype=dtype)
    if math.isfinite(abs(complex(value))) and not np.all(np.isfinite(converted)):
        raise Mismatch(f"out of the range of {dtype.name}")
    return converted


_INT_RANGES: dict = {}
_OVERFLOW_THRESHOLDS: dict = {}


def _int_range(dtype: np.dtype) -> tuple[int, int]:
    found = _INT_RANGES.get(dtype)
    if found is None:
        info = np.iinfo(dtype)
        found = _INT_RANGES[dtype] = (int(info.min), int(info.max))
    return found


def _overflow_threshold(dtype: np.dtype) -> float:
    """The magnitude from which a float64 rounds to infinity in `dtype`: max + half an ulp of max."""
    found = _OVERFLOW_THRESHOLDS.get(dtype)
    if found is None:
        info = np.finfo(dtype)
        if dtype.itemsize >= 8:
            found = math.inf  # a finite float64 never overflows; wider floats hold every float64
        else:
            found = float(info.max) + 2.0 ** (info.maxexp - info.nmant - 2)  # ulp(max) = 2**(maxexp-1-nmant)
        _OVERFLOW_THRESHOLDS[dtype] = found
    return found


def as_array(value) -> np.ndarray | None:
    """An ndarray view of a numpy array, numpy scalar or DLPack tensor; None for anything else."""
    if isinstance(value, np.ndarray):
        if type(value) is np.ndarray:
            return value
        # Subclasses change operator meaning (np.matrix: `*` is a matrix product) or carry data
        # kernels would ignore (a masked array's mask): compute on the plain array, or refuse.
        if isinstance(value, np.ma.MaskedArray) and np.ma.getmask(value) is not np.ma.nomask:
            if np.ma.getmask(value).any():
                raise Mismatch("a masked array with masked elements; pass value.filled(...) instead")
        return value.view(np.ndarray)
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


_gc_pause_lock = threading.Lock()
_gc_pauses = 0  # conversions under way that paused the collector, on any thread
_gc_was_enabled = False  # whether the collector ran before the first of them


@contextmanager
def gc_paused():
    """No automatic garbage collection while bulk values (millions of list nodes) are built.

    Every object built survives, so the collections that their allocation triggers only walk the
    heap to free nothing: with them, building a list's nodes cost 2-3 times as much. Nests and
    overlaps across threads (the collector runs again when the last pause ends, and only if it
    ran before the first); a collection is then due, and walks the new objects once."""
    global _gc_pauses, _gc_was_enabled
    with _gc_pause_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_pause_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
