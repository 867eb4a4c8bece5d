"""Smoke test of `python -m bench boundary` at tiny sizes: numbers are produced and results checked (no timing)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

# bench/ lives at the repository root and is not an installed package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import boundary  # noqa: E402
from bench.boundary_report import render  # noqa: E402
from bench.workloads.models import python_list  # noqa: E402

pytest.importorskip("tvm_ffi")


def quiet(message):
    pass


def test_lists_are_measured_and_checked_on_every_backend():
    rows, building = boundary.measure_lists(("python", "cpp", "interpreter"), (100,), calls=2, log=quiet)
    assert [(r.backend, r.elements) for r in rows] == [
        (b, e) for e in boundary.ELEMENTS for b in ("python", "cpp", "interpreter")
    ]
    for row in rows:
        assert row.problem == "", (row.backend, row.elements, row.problem)
        assert row.per_element("in") > 0 and row.per_element("in+out") > 0
    assert set(building) == {(e, 100) for e in boundary.ELEMENTS}
    text = render(rows, building, [], "test", (0.0, 0.0, 0.0), 1.0)
    assert "| cpp | float32[4] arrays | 100 |" in text and "Item 19, cpp, a List of 100 int32 Python ints" in text


def test_the_list_check_rejects_a_wrong_result():
    values = np.arange(5, dtype="int32")
    assert boundary._list_problem("in+out", values, python_list(list(values))) == ""
    assert boundary._list_problem("in+out", values, python_list(list(values[:4]))) != ""
    assert boundary._list_problem("in+out", values, python_list(list(values + 1))) != ""
    assert boundary._list_problem("in", values, np.int32(0)) != ""


def test_threads_are_measured_and_checked():
    backends = ("cpp", "tir") + (("C API",) if shutil.which("gcc") else ())
    rows = boundary.measure_threads(backends, (1, 2), calls=2, rounds=1, log=quiet)
    assert [(r.backend, r.threads) for r in rows] == [(b, t) for b in backends for t in (1, 2)]
    for row in rows:
        assert row.problem == "", (row.backend, row.threads, row.problem)
        assert row.rate > 0
    text = render([], {}, rows, "test", (0.0, 0.0, 0.0), 1.0)
    assert "| tir | 2 | 2 |" in text and "Item 21, cpp:" in text and "Warning" not in text


def test_a_thread_with_another_result_is_reported():
    inputs = [np.zeros(3, "float32"), np.ones(3, "float32")]
    _, problem = boundary._python_threads(lambda x: x, inputs, inputs, threads=2, calls=2)
    assert problem == ""
    _, problem = boundary._python_threads(lambda x: x, inputs, inputs[::-1], threads=2, calls=2)
    assert "got other results" in problem


def test_the_mlp_reference_is_the_program():
    from transpile.testing.numpy_reference import reference_evaluate

    text, weights, reference = boundary.mlp()
    x = np.random.default_rng(0).standard_normal((boundary.BATCH, boundary.WIDTH)).astype("float32")
    expected = reference_evaluate(boundary._module(text, weights, prelude=False), x)
    np.testing.assert_allclose(reference(x), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
