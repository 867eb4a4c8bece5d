"""The tir callable's short cut for plain aligned numpy arrays, and the arrays that must avoid it."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(16), float32], %s: float32) -> (Tensor[(16), float32], float32) {
  (multiply(%x, %s), sum(%x))
}"""


@pytest.fixture(scope="module")
def main():
    return transpile.compile(relay.parse(SOURCE), backend="tir")


def _aligned(values):
    raw = np.empty(values.nbytes + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64
    out = raw[offset : offset + values.nbytes].view(values.dtype)
    out[...] = values
    return out


def _unaligned(values):
    raw = np.empty(values.nbytes + 68, np.uint8)
    offset = (-raw.ctypes.data) % 64 + 4
    out = raw[offset : offset + values.nbytes].view(values.dtype)
    out[...] = values
    return out


@pytest.mark.parametrize(
    "make_x",
    [_aligned, _unaligned, lambda v: v[::-1].copy()[::-1], lambda v: np.frombuffer(v.tobytes(), v.dtype)],
    ids=["aligned", "unaligned", "non_contiguous", "read_only"],
)
def test_every_array_kind_gives_the_numpy_result(main, make_x):
    values = np.linspace(-3, 5, 16, dtype="float32")
    scaled, total = main(make_x(values), np.array(0.5, "float32"))
    np.testing.assert_allclose(scaled, values * np.float32(0.5), rtol=1e-6)
    np.testing.assert_allclose(total, values.sum(), rtol=1e-5)
    assert total.shape == () and total.dtype == np.float32


def test_wrong_arguments_get_the_checked_messages(main):
    with pytest.raises(EvaluationError, match=r"argument 1 of @main\(%x, %s\): expected Tensor\[\(16\), float32\]"):
        main(np.zeros(16, "float64"), np.array(1, "float32"))
    with pytest.raises(EvaluationError, match=r"expects 2 argument\(s\) but got 1"):
        main(np.zeros(16, "float32"))
