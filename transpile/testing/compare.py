"""Comparison of backend results with expected values: tensors within tolerances, same dtype and shape."""

from __future__ import annotations

import numpy as np

from ..runtime import ADTValue, RefValue

__all__ = ["assert_values_close", "describe"]


def describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, tuple):
        return f"tuple of {len(value)}"
    if isinstance(value, ADTValue):
        return f"ADTValue {value.constructor} with {len(value.fields)} field(s)"
    if isinstance(value, RefValue):
        return "RefValue"
    return f"{type(value).__name__} {value!r}"[:200]


def _fail(path: str, message: str):
    raise AssertionError(f"{path}: {message}")


def assert_values_close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6, path: str = "result") -> None:
    """Deep comparison: ndarrays (same dtype and shape; floats allclose, others exact), tuples,
    ADT values (same constructor, fields recursively) and references (contents)."""
    if isinstance(expected, (np.ndarray, np.generic)):
        expected = np.asarray(expected)
        if not isinstance(actual, np.ndarray):
            _fail(path, f"expected a numpy.ndarray {describe(expected)}, got {describe(actual)}")
        if actual.dtype != expected.dtype:
            _fail(path, f"expected dtype {expected.dtype}, got {actual.dtype}")
        if actual.shape != expected.shape:
            _fail(path, f"expected shape {expected.shape}, got {actual.shape}")
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=path)
    elif isinstance(expected, tuple):
        if not isinstance(actual, tuple):
            _fail(path, f"expected a tuple of {len(expected)}, got {describe(actual)}")
        if len(actual) != len(expected):
            _fail(path, f"expected a tuple of {len(expected)}, got a tuple of {len(actual)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_values_close(a, e, rtol, atol, f"{path}[{i}]")
    elif isinstance(expected, ADTValue):
        if not isinstance(actual, ADTValue):
            _fail(path, f"expected {describe(expected)}, got {describe(actual)}")
        # Iterative along the last field: lists thousands of elements long must not exhaust the stack.
        while True:
            if actual.constructor != expected.constructor or len(actual.fields) != len(expected.fields):
                _fail(path, f"expected {describe(expected)}, got {describe(actual)}")
            n = len(expected.fields)
            for i in range(n - 1):
                assert_values_close(
                    actual.fields[i], expected.fields[i], rtol, atol, f"{path}.{expected.constructor}[{i}]"
                )
            if n == 0:
                return
            a_last, e_last = actual.fields[-1], expected.fields[-1]
            last_path = f"{path}.{expected.constructor}[{n - 1}]"
            if isinstance(e_last, ADTValue) and isinstance(a_last, ADTValue):
                actual, expected, path = a_last, e_last, last_path
                continue
            assert_values_close(a_last, e_last, rtol, atol, last_path)
            return
    elif isinstance(expected, RefValue):
        if not isinstance(actual, RefValue):
            _fail(path, f"expected a RefValue, got {describe(actual)}")
        assert_values_close(actual.value, expected.value, rtol, atol, f"{path}.value")
    elif expected is None:
        _fail(path, "the case has no expected value")
    else:
        if actual != expected:
            _fail(path, f"expected {expected!r}, got {actual!r}")
