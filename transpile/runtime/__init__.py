"""Values shared by every backend at the Python boundary: ADT values and references."""

from __future__ import annotations

import numpy as np

__all__ = ["ADTValue", "RefValue", "values_equal"]


class ADTValue:
    """A value of an algebraic data type: constructor name plus field values; equal by value."""

    __slots__ = ("constructor", "fields")

    def __init__(self, constructor: str, fields=()):
        self.constructor = constructor
        self.fields = tuple(fields)

    def __eq__(self, other):
        if not isinstance(other, ADTValue):
            return NotImplemented
        return self.constructor == other.constructor and values_equal(self.fields, other.fields)

    def __hash__(self):
        return hash((self.constructor, len(self.fields)))

    def __repr__(self):
        if not self.fields:
            return f"ADTValue({self.constructor!r})"
        return f"ADTValue({self.constructor!r}, {self.fields!r})"


class RefValue:
    """A mutable reference cell; identity matters (aliases share updates)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"RefValue({self.value!r})"


def values_equal(a, b) -> bool:
    """Deep equality over tensors, tuples, ADT values and refs (refs compare contents)."""
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        return a_arr.shape == b_arr.shape and a_arr.dtype == b_arr.dtype and bool(np.array_equal(a_arr, b_arr))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, ADTValue) and isinstance(b, ADTValue):
        return a == b
    if isinstance(a, RefValue) and isinstance(b, RefValue):
        return a is b or values_equal(a.value, b.value)
    return a == b
