"""TE lowerings of the sorting, scatter/gather, einsum, trilu and meshgrid operators, checked against numpy_impl."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from te_support import Case, run_cases  # noqa: E402

rng = np.random.default_rng(4321)


def values(shape, dtype, lo=-4, hi=4):
    """Small integers (many ties) as `dtype`; bool as a random mask."""
    data = rng.integers(lo, hi, shape)
    return data > 0 if dtype == "bool" else data.astype(dtype)


def assert_cases(cases):
    failures = run_cases(cases)
    assert not failures, "\n".join(failures)


def with_nans(x):
    x = x.astype("float32")
    x[0, 1, 0] = x[0, 4, 0] = x[1, 2, 1] = np.nan
    x[1, 3, 1] = np.inf
    return x


def test_sort_argsort_topk():
    cases = []
    for dtype in ("float32", "float16", "float64", "int8", "uint8", "int64", "bool"):
        x = values((3, 9, 2), dtype, 0 if dtype == "uint8" else -4)
        if dtype == "float32":
            x = with_nans(x)
        for ascend in (True, False):
            for axis in (0, 1, -1):
                cases.append(Case("argsort", [x], {"axis": axis, "is_ascend": ascend, "dtype": "int64"}))
                cases.append(Case("sort", [x], {"axis": axis, "is_ascend": ascend}))
                cases.append(Case("topk", [x], {"axis": axis, "k": 2, "is_ascend": ascend}))
            cases.append(Case("topk", [x], {"axis": 1, "k": 0, "is_ascend": ascend, "ret_type": "values"}))
            cases.append(Case("topk", [x], {"axis": 1, "k": 5, "is_ascend": ascend, "ret_type": "indices"}))
    cases.append(Case("argsort", [values((1, 1), "float32")], {"dtype": "float32"}))
    cases.append(Case("sort", [values((40,), "float32", -1000, 1000)], {}))
    assert_cases(cases)


def test_searchsorted():
    sequence = np.array([-2.0, 0.0, 0.0, 1.5, 3.0, np.nan, np.nan], "float32")
    probes = np.array([[-3.0, -2.0, 0.0, 1.0, 3.0, 4.0, np.nan, np.inf]], "float32")
    cases = []
    for right in (False, True):
        cases.append(Case("searchsorted", [sequence, probes], {"right": right}))
        rows = np.sort(values((2, 3, 9), "int32", -5, 5), axis=-1)
        cases.append(
            Case("searchsorted", [rows, values((2, 3, 5), "int32", -6, 6)], {"right": right, "dtype": "int64"})
        )
        cases.append(
            Case("searchsorted", [np.sort(values((6,), "uint8", 0, 9)), values((4,), "uint8", 0, 10)], {"right": right})
        )
        cases.append(Case("searchsorted", [np.array([False, True, True]), np.array([True, False])], {"right": right}))
    assert_cases(cases)


def test_gather_nd_and_adv_index():
    cases = []
    for dtype in ("float32", "int8", "bool", "float16"):
        data = values((4, 5, 3), dtype)
        cases += [
            Case("gather_nd", [data, values((2, 6), "int64", -6, 6)]),  # clamped and negative indices
            Case("gather_nd", [data, values((3, 2, 2), "int32", -4, 5)]),
            Case("gather_nd", [data, values((1, 4, 3), "int32", -5, 5)], {"batch_dims": 1}),
            Case("gather_nd", [data, values((2, 4, 2), "int64", 0, 3)], {"batch_dims": 1}),
            Case("adv_index", [[data, values((2, 1), "int64", -5, 5), values((3,), "int32", -6, 6)]]),
            Case("adv_index", [[data, values((2, 3), "int64", -4, 6)]]),
            Case(
                "adv_index",
                [[data, values((), "int32", 0, 4), values((2,), "int32", 0, 4), values((2,), "int8", 0, 3)]],
            ),
        ]
    assert_cases(cases)


def test_scatter_elements():
    cases = []
    for dtype in ("float32", "int32", "float16", "int8", "bool"):
        data = values((4, 5, 3), dtype, -9, 9)
        for reduction in ("update", "add", "mul", "mean", "min", "max"):
            if dtype == "bool" and reduction == "mean":
                continue
            attrs = {"reduction": reduction}
            cases += [
                Case(
                    "scatter_elements",
                    [data, values((4, 3, 2), "int64", -6, 6), values((4, 4, 3), dtype, -9, 9)],
                    {"axis": 1, **attrs},
                ),
                Case(
                    "scatter_elements",
                    [data, values((6, 5, 3), "int32", -4, 5), values((6, 5, 3), dtype, -9, 9)],
                    {"axis": 0, **attrs},
                ),
                Case(
                    "scatter_elements",
                    [data, values((2, 2, 7), "int32", -3, 3), values((3, 2, 7), dtype, -9, 9)],
                    {"axis": -1, **attrs},
                ),
            ]
    nan_data = np.array([1.0, np.nan, 3.0, 4.0], "float32")
    nan_updates = np.array([np.nan, 0.0, 2.0, 5.0, 1.0], "float32")
    for reduction in ("min", "max", "add"):
        cases.append(
            Case("scatter_elements", [nan_data, np.array([0, 1, 2, 2, 3]), nan_updates], {"reduction": reduction})
        )
    assert_cases(cases)


def test_scatter_nd():
    cases = []
    for dtype in ("float32", "int32", "float16", "bool"):
        data = values((4, 5, 3), dtype, -9, 9)
        for mode in ("update", "add", "mul", "min", "max"):
            cases += [
                Case(
                    "scatter_nd", [data, values((2, 7), "int64", -5, 6), values((7, 3), dtype, -9, 9)], {"mode": mode}
                ),
                Case(
                    "scatter_nd",
                    [data, values((3, 2, 2), "int32", -4, 4), values((2, 2), dtype, -9, 9)],
                    {"mode": mode},
                ),
                Case(
                    "scatter_nd",
                    [data, values((1, 9), "int32", -4, 4), values((9, 5, 3), dtype, -9, 9)],
                    {"mode": mode},
                ),
            ]
    assert_cases(cases)


def test_unravel_index():
    cases = []
    for dtype in ("int32", "int64"):
        cases += [
            Case("unravel_index", [np.array([22, 41, 37, -1, 100], dtype), np.array([7, 6], "int64")]),
            Case("unravel_index", [np.array(17, dtype), np.array([3, 0, 4], "int32")]),
            Case("unravel_index", [np.arange(24, dtype=dtype), np.array([2, 3, 4], dtype)]),
        ]
    assert_cases(cases)


def test_einsum_trilu_meshgrid():
    cases = []
    for dtype in ("float32", "int32", "float64"):
        cases += [
            Case("einsum", [[values((2, 3), dtype), values((3, 4), dtype)]], {"equation": "ij,jk->ik"}),
            Case("einsum", [[values((5, 2, 3), dtype), values((1, 3, 4), dtype)]], {"equation": "...ij,...jk"}),
            Case("einsum", [[values((3, 3), dtype)]], {"equation": "ii"}),
            Case(
                "einsum",
                [[values((3,), dtype), values((4,), dtype), values((3, 4), dtype)]],
                {"equation": "i, j, ij -> "},
            ),
            Case("einsum", [[values((2, 3, 4), dtype)]], {"equation": "bij->jbi"}),
        ]
    for dtype in ("float32", "int8", "bool", "float16"):
        x = values((2, 4, 5), dtype)
        for k in (-5, -1, 0, 2, 7):
            for upper in (True, False):
                cases.append(Case("trilu", [x, np.array(k, "int64" if k % 2 else "int32")], {"upper": upper}))
        vector, other, scalar = x[0, 0], x[1, :, 0], x[0, 0, 0]
        cases.append(Case("meshgrid", [[vector, other, scalar]], {"indexing": "ij"}))
        cases.append(Case("meshgrid", [[vector, other, x[0, 1, :3]]], {"indexing": "xy"}))
        cases.append(Case("meshgrid", [[vector]], {"indexing": "xy"}))
    assert_cases(cases)
