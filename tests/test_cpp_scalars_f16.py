"""float16 scalars in the cpp backend: plain `_Float16` values rounded after every operation, as numpy does."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("tvm")
if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
    pytest.skip("the cpp backend needs g++", allow_module_level=True)

import transpile
from transpile import relay
from transpile.backends.cpp import CppBackend
from transpile.runtime import ADTValue, RefValue

BACKEND = CppBackend()
H = np.float16

# Every inline scalar operator on two halves, one result each (a single build for all of them).
ELEMENTWISE = """
def @main(%x: float16, %y: float16) -> (float16, float16, float16, float16, float16, float16, float16,
                                        bool, bool, bool, float16, float32, float64, int32, float16) {
  (%x + %y, %x - %y, %x * %y, %x / %y, negative(%x), maximum(%x, %y), minimum(%x, %y),
   %x < %y, %x == %y, %x >= %y, where(%x > %y, %x, %y),
   cast(%x, dtype="float32"), cast(%x, dtype="float64"), cast(%y, dtype="int32"),
   cast(cast(%x, dtype="float64") * 3.3f64, dtype="float16"))
}
"""

# a * b + c: one kernel of two operations; numpy rounds the product to float16 before adding.
MULTIPLY_ADD = "def @main(%a: float16, %b: float16, %c: float16) -> float16 { %a * %b + %c }"

LOOPS = """
def @accumulate(%n: int32, %acc: float16) -> float16 {
  if (%n == 0) { %acc } else { @accumulate(%n - 1, %acc * 1.001f16 + 0.1f16) }
}
def @nested(%n: int32, %x: float16) -> float16 {
  if (%n == 0) { %x } else { @nested(%n - 1, %x) * 0.999f16 + 3f16 }
}
def @main(%n: int32, %x: float16) -> (float16, float16) { (@accumulate(%n, 0f16), @nested(%n, %x)) }
"""

STRUCTURES = """
type Reading {
  Sample(float16, int32),
  Missing,
}
def @main(%r: Reading, %k: float16) -> (Reading, float16, ref(float16)) {
  let %cell = ref(%k);
  match (%r) {
    Sample(%v, %count) => {
      let %ignored = ref_write(%cell, ref_read(%cell) - %v);
      (Sample(%v * %k, %count + 1), exp(%v), %cell)
    },
    Missing => (Missing, %k, %cell),
  }
}
"""

_built: dict = {}


def compiled(text: str):
    if text not in _built:
        _built[text] = transpile.compile(relay.parse('#[version = "0.0.5"]\n' + text), backend=BACKEND)
    return _built[text]


def assert_same_halves(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)  # exact, NaN where numpy has NaN


def _interesting_halves() -> list:
    specials = [0.0, -0.0, 1.0, -2.5, 0.1, 1 / 3, 65504.0, -65504.0, 6.0e-8, 6.1e-5, 300.7, np.inf, -np.inf, np.nan]
    return [H(v) for v in specials]


def test_float16_scalars_are_plain_cpp_values_with_inline_kernels():
    source = transpile.emit(relay.parse('#[version = "0.0.5"]\n' + MULTIPLY_ADD), backend=BACKEND)
    assert "static inline _Float16 k_" in source  # no TVM kernel call for scalar float16 arithmetic
    assert "__tvm_ffi_" not in source
    # the product is rounded to float16 before the addition
    assert "const _Float16 v1 = static_cast<_Float16>(static_cast<float>(p0) * static_cast<float>(p1));" in source


def test_each_inline_operator_matches_numpy_bit_for_bit():
    run = compiled(ELEMENTWISE)
    values = _interesting_halves()
    with np.errstate(all="ignore"):
        for x in values:
            for y in values:
                got = run(x, y)
                expected = (
                    x + y,
                    x - y,
                    x * y,
                    x / y,
                    -x,
                    np.maximum(x, y),
                    np.minimum(x, y),
                    np.bool_(x < y),
                    np.bool_(x == y),
                    np.bool_(x >= y),
                    np.where(x > y, x, y),
                    np.float32(x),
                    np.float64(x),
                    None if not np.isfinite(y) else np.int32(y),
                    H(np.float64(x) * 3.3),
                )
                for index, (a, e) in enumerate(zip(got, expected)):
                    if e is None:  # float -> int of inf/NaN: undefined in numpy too
                        continue
                    assert_same_halves(a, np.asarray(e)), (x, y, index)


def test_every_operation_rounds_to_float16_like_numpy():
    run = compiled(MULTIPLY_ADD)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(1, 2, (2, 400)).astype(H)
    c = rng.uniform(0, 0.01, 400).astype(H)
    per_operation = a * b + c  # numpy: float16 * float16 -> float16, then + float16
    rounded_once = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(H)
    assert np.count_nonzero(per_operation != rounded_once) > 10  # the inputs do tell the two apart
    got = np.array([run(x, y, z) for x, y, z in zip(a, b, c)])
    assert_same_halves(got, per_operation)


def test_recursion_over_float16_scalars_and_literals():
    run = compiled(LOOPS)
    acc = H(0)
    for _ in range(300):
        acc = acc * H(1.001) + H(0.1)
    nested = H(-1.5)
    for _ in range(300):
        nested = nested * H(0.999) + H(3)
    got_acc, got_nested = run(np.int32(300), H(-1.5))
    assert_same_halves(got_acc, acc)
    assert_same_halves(got_nested, nested)
    # Python numbers are accepted for float16 parameters (lossless: rounding is inherent to floats)
    assert_same_halves(run(0, 0.5)[1], H(0.5))


def test_float16_in_adt_fields_refs_and_tvm_kernels():
    run = compiled(STRUCTURES)
    reading, e, cell = run(ADTValue("Sample", (H(0.7), np.int32(4))), H(1.3))
    assert reading.constructor == "Sample"
    assert_same_halves(reading.fields[0], H(0.7) * H(1.3))
    assert_same_halves(reading.fields[1], np.int32(5))
    np.testing.assert_allclose(np.float32(e), np.exp(np.float32(0.7)), rtol=1e-3)  # exp runs as a TVM kernel
    assert isinstance(cell, RefValue)
    assert_same_halves(cell.value, H(1.3) - H(0.7))
    missing, k, cell = run(ADTValue("Missing", ()), H(2.5))
    assert missing.constructor == "Missing"
    assert_same_halves(k, H(2.5))
    assert_same_halves(cell.value, H(2.5))
    with pytest.raises(transpile.TranspileError, match="float16"):
        run(ADTValue("Sample", (np.float32(0.7), np.int32(4))), H(1.3))


def test_typed_main_takes_and_returns_0d_float16_tensors():
    import tvm

    art = transpile.build(relay.parse('#[version = "0.0.5"]\n' + MULTIPLY_ADD), backend=BACKEND)
    main = tvm.runtime.load_module(str(art.library_path))["main"]
    a, b, c = H(1.26953125), H(1.4873046875), H(0.00305938720703125)
    out = main(*[tvm.runtime.tensor(np.asarray(v)) for v in (a, b, c)]).numpy()
    assert_same_halves(out, a * b + c)
