"""Random argument values for generated programs, edge values included (0, -0, nan, inf, huge, INT_MIN...)."""

from __future__ import annotations

import numpy as np

from .gentypes import Dim, TensorT

__all__ = ["random_tensor", "concrete_shape", "FLOAT_EDGES", "int_edges"]

FLOAT_EDGES = (0.0, -0.0, np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-40, 0.5, -1.0, 65504.0)


def int_edges(dtype: str) -> tuple:
    info = np.iinfo(dtype)
    return (0, 1, -1, info.min, info.max, info.min + 1, 2, -2)


def concrete_shape(t: TensorT) -> tuple:
    """The run-time shape of a parameter: static dims as they are, each Dim its chosen size."""
    shape = []
    for d in t.shape:
        if isinstance(d, Dim):
            if d.size is None:
                raise ValueError(f"{d!r} of a parameter has no run-time size")
            shape.append(d.size)
        else:
            shape.append(d)
    return tuple(shape)


def random_tensor(t: TensorT, rng: np.random.Generator, edge_rate: float) -> np.ndarray:
    """Values of `t` (its Dims at their chosen sizes); a fraction `edge_rate` of elements are edge values."""
    shape = concrete_shape(t)
    if t.dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if t.is_float:
        scale = rng.choice([1.0, 1.0, 10.0, 1000.0])
        values = rng.standard_normal(size=shape) * scale
        if rng.random() < 0.3:
            values = np.round(values)  # integral floats make exact ties for comparisons and rounding
        edges = np.asarray(FLOAT_EDGES, dtype=np.float64)
        with np.errstate(over="ignore"):
            array = values.astype(t.dtype)
            edge_values = edges.astype(t.dtype)
    else:
        bound = int(rng.choice([4, 10, 1000]))
        array = rng.integers(-bound, bound + 1, size=shape).astype(t.dtype)
        edge_values = np.asarray(int_edges(t.dtype), dtype=t.dtype)
    if edge_rate > 0 and array.size:
        mask = rng.random(size=shape) < edge_rate
        picks = rng.integers(0, len(edge_values), size=shape)
        array = np.where(mask, edge_values[picks], array).astype(t.dtype)
    return np.array(array, dtype=t.dtype, order="C")  # (ascontiguousarray makes a 0-d array 1-d)
