"""Building inputs and expected values: typed numpy scalars, seeded random tensors, Prelude ADT values."""

from __future__ import annotations

import numpy as np

from ...runtime import ADTValue, RefValue

__all__ = [
    "f32",
    "i32",
    "i64",
    "boolean",
    "rand",
    "rand_int",
    "plist",
    "nat",
    "some",
    "none",
    "rose",
    "RefValue",
    "ADTValue",
]


def f32(x):
    return np.asarray(x, dtype="float32")


def i32(x):
    return np.asarray(x, dtype="int32")


def i64(x):
    return np.asarray(x, dtype="int64")


def boolean(x):
    return np.asarray(x, dtype="bool")


def rand(seed: int, *shape, low: float = -1.0, high: float = 1.0):
    """A float32 tensor of uniform values from a generator seeded with `seed`."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype("float32")


def rand_int(seed: int, *shape, low: int = -10, high: int = 10, dtype: str = "int32"):
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


def plist(values) -> ADTValue:
    """A Prelude List: Cons(v0, Cons(v1, ... Nil))."""
    result = ADTValue("Nil", ())
    for value in reversed(list(values)):
        result = ADTValue("Cons", (value, result))
    return result


def nat(n: int) -> ADTValue:
    result = ADTValue("zero", ())
    for _ in range(n):
        result = ADTValue("succ", (result,))
    return result


def some(value) -> ADTValue:
    return ADTValue("Some", (value,))


def none() -> ADTValue:
    return ADTValue("None", ())


def rose(value, children=()) -> ADTValue:
    return ADTValue("Rose", (value, plist(children)))
