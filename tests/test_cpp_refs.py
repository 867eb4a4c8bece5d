"""References crossing the cpp backend's boundary keep their identity: writes, aliasing, returned cells, callbacks.

Each test runs on every installed backend too: the interpreter (a RefValue *is* the cell) is the
behaviour the others must share.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends import backends
from transpile.errors import TranspileError
from transpile.runtime import ADTValue, RefValue

BACKENDS = [b for b in ("interpreter", "python", "cpp", "lir-eval") if b in backends()]


def i32(v):
    return np.asarray(v, dtype="int32")


_compiled: dict = {}


def compiled(text: str, backend: str):
    key = (text, backend)
    if key not in _compiled:
        if backend == "cpp":
            pytest.importorskip("tvm")
            if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
                pytest.skip("the cpp backend needs g++")
        _compiled[key] = transpile.compile(relay.parse('#[version = "0.0.5"]\n' + text), backend=backend)
    return _compiled[key]


RETURNS_ITS_ARGUMENT = """
def @main(%r: ref(int32)) -> (ref(int32), ref(int32), ref(int32), int32) {
  let %fresh = ref(7);
  let %ignored = ref_write(%r, 9);
  (%r, %fresh, %fresh, ref_read(%r))
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_returned_reference_is_the_refvalue_passed_in(backend):
    cell = RefValue(i32(1))
    same, fresh, fresh_again, read = compiled(RETURNS_ITS_ARGUMENT, backend)(cell)
    assert same is cell
    assert fresh is fresh_again and fresh is not cell  # one new cell returned twice is one RefValue
    np.testing.assert_array_equal(cell.value, i32(9))
    np.testing.assert_array_equal(fresh.value, i32(7))
    np.testing.assert_array_equal(read, i32(9))


REPOINTS = """
def @main(%outer: ref(ref(int32)), %other: ref(int32)) -> int32 {
  let %inner = ref_read(%outer);
  let %i1 = ref_write(%outer, %other);
  let %i2 = ref_write(%other, ref_read(%inner) + 5);
  ref_read(ref_read(%outer))
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reference_stored_into_another_keeps_its_identity(backend):
    inner, other = RefValue(i32(10)), RefValue(i32(0))
    outer = RefValue(inner)
    result = compiled(REPOINTS, backend)(outer, other)
    np.testing.assert_array_equal(result, i32(15))
    assert outer.value is other  # written back as the caller's own RefValue, not a copy
    np.testing.assert_array_equal(other.value, i32(15))
    np.testing.assert_array_equal(inner.value, i32(10))


CYCLE = """
type Chain {
  Link(ref(Chain)),
  End,
}

def @main(%x: int32) -> ref(Chain) {
  let %r = ref(End);
  let %ignored = ref_write(%r, Link(%r));
  %r
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cycle_through_a_reference_comes_back_as_a_cycle(backend):
    cell = compiled(CYCLE, backend)(i32(0))
    assert isinstance(cell, RefValue) and cell.value.constructor == "Link"
    assert cell.value.fields[0] is cell


CALLBACK = """
def @main(%f: fn (ref(int32), ref(int32)) -> ref(int32), %x: int32) -> (int32, bool) {
  let %r = ref(%x);
  let %back = %f(%r, %r);
  let %ignored = ref_write(%back, ref_read(%back) + 1);
  (ref_read(%r), %x == 0)
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_callback_sees_one_cell_and_its_writes_reach_the_program(backend):
    seen = []

    def callback(a, b):
        seen.append(a is b)
        a.value = a.value * i32(3)
        return b

    result, _ = compiled(CALLBACK, backend)(callback, i32(4))
    assert seen == [True]
    np.testing.assert_array_equal(result, i32(13))  # 4 * 3 in the callback, + 1 in the program


CLOSURE = """
def @main(%k: int32) -> fn (ref(int32)) -> int32 {
  fn (%r: ref(int32)) -> int32 {
    let %old = ref_read(%r);
    let %ignored = ref_write(%r, %old * %k);
    %old
  }
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_returned_closure_writes_into_the_refvalue_it_is_called_with(backend):
    scale = compiled(CLOSURE, backend)(i32(5))
    cell = RefValue(i32(2))
    np.testing.assert_array_equal(scale(cell), i32(2))
    np.testing.assert_array_equal(cell.value, i32(10))
    np.testing.assert_array_equal(scale(cell), i32(10))
    np.testing.assert_array_equal(cell.value, i32(50))


TWO_TYPES = "def @main(%a: ref(int32), %b: ref(float32)) -> int32 { ref_read(%a) }"


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_refvalue_where_two_reference_types_are_expected_is_rejected(backend):
    cell = RefValue(i32(1))
    with pytest.raises(TranspileError, match="float32"):
        compiled(TWO_TYPES, backend)(cell, cell)


def test_the_cpp_library_numbers_references_and_sends_their_contents_back():
    pytest.importorskip("tvm")
    source = transpile.emit(relay.parse('#[version = "0.0.5"]\n' + REPOINTS), backend="cpp")
    assert "refs.send_contents(w, received);" in source
    assert "r.refs.get<int32_t>(k)" in source and "w.refs.find(v.get())" in source


@pytest.mark.parametrize("backend", BACKENDS)
def test_adt_holding_a_reference_shares_it_with_the_arguments(backend):
    text = """
type Box {
  Boxed(ref(int32)),
}

def @main(%b: Box, %r: ref(int32)) -> int32 {
  match (%b) {
    Boxed(%c) => {
      let %ignored = ref_write(%c, 42);
      ref_read(%r)
    },
  }
}
"""
    cell = RefValue(i32(0))
    np.testing.assert_array_equal(compiled(text, backend)(ADTValue("Boxed", (cell,)), cell), i32(42))
    np.testing.assert_array_equal(cell.value, i32(42))
