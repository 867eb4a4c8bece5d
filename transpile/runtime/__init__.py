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
        return values_equal(self, other)

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
    """Deep equality over tensors, tuples, ADT values and refs (refs compare contents).

    Iterative (a stack of pairs still to compare): a List of a million elements, or a tree nested a
    million deep, compares without deep recursion."""
    pending = [(a, b)]
    refs_seen = set()  # pairs of cells already compared: cyclic references end
    while pending:
        a, b = pending.pop()
        if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
            a_arr, b_arr = np.asarray(a), np.asarray(b)
            if not (a_arr.shape == b_arr.shape and a_arr.dtype == b_arr.dtype and np.array_equal(a_arr, b_arr)):
                return False
        elif isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif isinstance(a, ADTValue) and isinstance(b, ADTValue):
            if a.constructor != b.constructor or len(a.fields) != len(b.fields):
                return False
            pending.extend(zip(a.fields, b.fields))
        elif isinstance(a, RefValue) and isinstance(b, RefValue):
            if a is not b and (id(a), id(b)) not in refs_seen:
                refs_seen.add((id(a), id(b)))
                pending.append((a.value, b.value))
        elif not a == b:
            return False
    return True
