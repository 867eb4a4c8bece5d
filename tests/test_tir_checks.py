"""The tir backend checks each kernel's requirements before calling it and takes empty arrays of any strides.

Issue 12 item 5 on tir: an operator lowering may `require(...)` a condition its kernel relies on
(take needs a non-empty axis, argmax/argmin a non-empty sequence); the caller PrimFunc asserts
it before the call, so the program raises EvaluationError as the interpreter and cpp do instead
of reading outside a buffer. An empty numpy array has strides of 0, which TVM's check for a
compact argument rejected ("Mismatched p_a.strides"); parameters without elements take any
strides. The tir backend has no `?` dimensions: programs with them are refused when compiled.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, UnsupportedFeatureError

pytest.importorskip("tvm")

COMPILED = ["tir", "cpp"]


def _empty(shape, dtype="float32", aligned=True) -> np.ndarray:
    """A writable C-contiguous array without elements and with strides of 0, as numpy makes them
    (np.zeros(0) has strides (0,)), on a 64-byte aligned address (what the boundary passes
    through untouched) or a misaligned one (what it copies first)."""
    base = np.zeros(256, dtype=np.uint8)
    offset = (-base.ctypes.data) % 64 + (0 if aligned else 4)
    array = np.lib.stride_tricks.as_strided(base[offset:].view(np.dtype(dtype)), shape, (0,) * len(shape))
    assert array.size == 0 and array.flags.c_contiguous and array.flags.writeable
    return array


def _outcome(program: str, args, backend: str):
    """('ok', result) or ('error', the EvaluationError's message) of running `program`."""
    run = transpile.compile(relay.parse(program), backend=backend)
    try:
        return "ok", run(*args)
    except EvaluationError as exc:
        return "error", str(exc)


def _assert_same(got, expected) -> None:
    got = list(got) if isinstance(got, tuple) else [got]
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape, (g, e)
        np.testing.assert_array_equal(g, e)


# ----------------------------------------------------------------------------- requirements (item 5)

TAKE_FROM_EMPTY = "def @main(%a: Tensor[(0), float32], %i: Tensor[(2), int32]) { take(%a, %i, axis=0) }"
ARGMAX_OF_EMPTY = "def @main(%a: Tensor[(0), float32]) { argmax(%a) }"
ARGMIN_OF_EMPTY_ROWS = "def @main(%a: Tensor[(2, 0), float32]) { (argmin(%a, axis=[1]), add(%a, %a)) }"


@pytest.mark.parametrize("backend", COMPILED)
def test_take_from_an_empty_axis_raises_like_the_interpreter(backend):
    args = [np.zeros(0, "float32"), np.array([0, 3], "int32")]
    assert _outcome(TAKE_FROM_EMPTY, args, "interpreter")[0] == "error"
    kind, message = _outcome(TAKE_FROM_EMPTY, args, backend)
    assert kind == "error", f"{backend} returned {message}"  # it used to read past the buffer: [0, 0]
    assert "take: cannot do a non-empty take from an empty axis" in message
    assert "argument shapes (0,), (2,)" in message


@pytest.mark.parametrize("backend", COMPILED)
@pytest.mark.parametrize("aligned", [True, False])
def test_argmax_of_an_empty_tensor_raises_like_the_interpreter(backend, aligned):
    args = [_empty((0,), aligned=aligned)]
    assert _outcome(ARGMAX_OF_EMPTY, args, "interpreter")[0] == "error"
    kind, message = _outcome(ARGMAX_OF_EMPTY, args, backend)
    assert kind == "error", f"{backend} returned {message}"
    assert "argmax: attempt to get argmax of an empty sequence" in message
    assert "strides" not in message


@pytest.mark.parametrize("backend", COMPILED)
def test_argmin_over_empty_rows_raises_like_the_interpreter(backend):
    args = [_empty((2, 0))]
    assert _outcome(ARGMIN_OF_EMPTY_ROWS, args, "interpreter")[0] == "error"
    kind, message = _outcome(ARGMIN_OF_EMPTY_ROWS, args, backend)
    assert kind == "error", f"{backend} returned {message}"
    assert "argmin: attempt to get argmin of an empty sequence; argument shapes (2, 0)" in message


def test_the_check_is_an_assert_right_before_the_kernel_call():
    script = transpile.emit(relay.parse(ARGMAX_OF_EMPTY), backend="tir")
    lines = [line.strip() for line in script.splitlines()]
    (check,) = [i for i, line in enumerate(lines) if line.startswith("assert ")]
    assert '"ValueError"' in lines[check].replace("'", '"') and "argmax of an empty sequence" in lines[check]
    assert "fused_argmax" in lines[check + 1] and not lines[check + 1].startswith("assert")


def test_a_check_only_fails_when_its_call_runs():
    """The assert sits in the branch holding the call: the other branch returns normally."""
    program = "def @main(%c: bool, %a: Tensor[(0), float32]) { if (%c) { argmax(%a) } else { 7 } }"
    run = transpile.compile(relay.parse(program), backend="tir")
    assert int(run(np.array(False), _empty((0,)))) == 7
    with pytest.raises(EvaluationError, match="argmax of an empty sequence"):
        run(np.array(True), _empty((0,)))


def test_a_failed_check_in_a_callee_reaches_the_caller():
    program = """
    def @first(%a: Tensor[(0), float32]) -> int32 { argmax(%a) }
    def @main(%a: Tensor[(0), float32], %b: Tensor[(3), float32]) -> int32 { add(@first(%a), argmax(%b)) }
    """
    args = [_empty((0,)), np.array([1, 5, 2], "float32")]
    assert _outcome(program, args, "interpreter")[0] == "error"
    kind, message = _outcome(program, args, "tir")
    assert kind == "error", f"tir returned {message}"
    assert "argmax of an empty sequence" in message


# ----------------------------------------------------------------------------- empty arrays at the boundary

# Programs that take (and give) arrays without elements and need no check.
EMPTY_BUT_FINE = [
    (
        "def @main(%a: Tensor[(0), float32], %i: Tensor[(0), int32]) { take(%a, %i, axis=0) }",
        lambda aligned: [_empty((0,), aligned=aligned), _empty((0,), "int32", aligned=aligned)],
    ),
    (
        "def @main(%a: Tensor[(2, 0), float32]) { (sum(%a, axis=[1]), argmax(%a, axis=[0]), multiply(%a, 2f)) }",
        lambda aligned: [_empty((2, 0), aligned=aligned)],
    ),
    (
        "def @main(%a: Tensor[(0, 3), bool], %b: Tensor[(3), float32]) { (logical_not(%a), negative(%b)) }",
        lambda aligned: [_empty((0, 3), "bool", aligned=aligned), np.array([1, -2, 3], "float32")],
    ),
]


@pytest.mark.parametrize("index", range(len(EMPTY_BUT_FINE)))
def test_arrays_without_elements_are_taken_with_any_strides(index):
    program, make_args = EMPTY_BUT_FINE[index]
    expected = transpile.compile(relay.parse(program), backend="interpreter")(*make_args(True))
    run = transpile.compile(relay.parse(program), backend="tir")
    for aligned in (True, False):
        _assert_same(run(*make_args(aligned)), expected)


def test_an_empty_array_of_the_wrong_shape_is_still_refused():
    run = transpile.compile(relay.parse(TAKE_FROM_EMPTY), backend="tir")
    with pytest.raises(EvaluationError, match=r"expected Tensor\[\(0\), float32\] but got an array of shape \(0, 1\)"):
        run(_empty((0, 1)), np.array([0, 1], "int32"))


# ----------------------------------------------------------------------------- `?` dimensions

DYNAMIC_MISMATCHES = [
    (
        "def @main(%a: Tensor[(?), float32], %b: Tensor[(?), float32]) { add(%a, %b) }",
        [np.ones(2, "float32"), np.ones(3, "float32")],
    ),
    (
        "def @main(%a: Tensor[(2, ?), float32], %w: Tensor[(4, ?), float32]) { nn.dense(%a, %w, units=4) }",
        [np.ones((2, 3), "float32"), np.ones((4, 5), "float32")],
    ),
]


@pytest.mark.parametrize("index", range(len(DYNAMIC_MISMATCHES)))
def test_mismatched_dynamic_dimensions_never_run_on_tir(index):
    """tir has static shapes only: a `?` dimension is refused when compiling, with its location
    (the interpreter and cpp raise EvaluationError when these run; see test_dynamic_shape_checks)."""
    program, args = DYNAMIC_MISMATCHES[index]
    with pytest.raises(EvaluationError):
        transpile.compile(relay.parse(program), backend="interpreter")(*args)
    with pytest.raises(UnsupportedFeatureError, match="dynamic_shapes") as info:
        transpile.compile(relay.parse(program), backend="tir")(*args)
    assert info.value.span is not None
