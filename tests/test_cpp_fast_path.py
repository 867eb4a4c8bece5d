"""The cpp callable's short cut for plain numpy arrays agrees with the fully checked path."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends.cpp.boundary import make_native_entry
from transpile.errors import EvaluationError

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %k: Tensor[(3), int32]) -> (Tensor[(2, 3), float32], float32, Tensor[(3), int32]) {
  (multiply(%x, cast(%k, dtype="float32")), sum(%x), add(%k, 1))
}"""


@pytest.fixture(scope="module")
def paths():
    artifact = transpile.build(relay.parse(SOURCE), backend="cpp")
    fast = artifact.load()
    checked = make_native_entry(artifact.module["transpile_call"], artifact.info)  # no typed export: the slow path
    return fast, checked


def _expected(x, k):
    return x * k.astype("float32"), np.float32(x.sum()), k + 1


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.dtype == np.asarray(w).dtype and g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_plain_arrays_give_the_same_results_on_both_paths(paths):
    fast, checked = paths
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2.5
    k = np.array([3, -1, 7], "int32")
    _same(fast(x, k), _expected(x, k))
    _same(checked(x, k), _expected(x, k))


@pytest.mark.parametrize(
    "make_x",
    [
        lambda x: x[:, ::-1].copy()[:, ::-1],  # non-contiguous view
        lambda x: np.frombuffer(x.tobytes(), "float32").reshape(2, 3),  # read-only
        lambda x: np.frombuffer(b"\0" + x.tobytes(), "float32", offset=1).reshape(2, 3),  # unaligned
    ],
    ids=["non_contiguous", "read_only", "unaligned"],
)
def test_arguments_outside_the_short_cut_still_work(paths, make_x):
    fast, _ = paths
    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    k = np.array([2, 0, -4], "int32")
    _same(fast(make_x(x), k), _expected(x, k))


def test_errors_are_the_checked_paths_errors(paths):
    fast, checked = paths
    k = np.zeros(3, "int32")
    for bad in (np.zeros((2, 3), "float64"), np.zeros((3, 2), "float32")):
        with pytest.raises(EvaluationError) as fast_error:
            fast(bad, k)
        with pytest.raises(EvaluationError) as checked_error:
            checked(bad, k)
        assert str(fast_error.value) == str(checked_error.value)
        assert "argument 1" in str(fast_error.value) or "%x" in str(fast_error.value)
    with pytest.raises(EvaluationError, match=r"expects 2 argument\(s\) but got 1"):
        fast(np.zeros((2, 3), "float32"))
