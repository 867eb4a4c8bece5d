"""Hardening of the python backend (issue 12): boundary values, errors, failures in generated code, hostile names."""

from __future__ import annotations

import ast
import dataclasses
import sys
import threading

import numpy as np
import pytest

import transpile
import transpile.relay as relay
from transpile.backends.python import PythonBackend
from transpile.backends.python.kernels import _attr_text, _out_spec
from transpile.errors import EvaluationError, TranspileError, UnsupportedFeatureError
from transpile.lir import (
    Block,
    FunctionDef,
    KernelCall,
    Let,
    LIRError,
    Literal,
    Param,
    Program,
    TensorType,
    Var,
    kernel_from_function,
)
from transpile.relay import deep
from transpile.runtime import ADTValue

I32 = TensorType((), "int32")
BACKEND = PythonBackend()


def run(backend: str, text: str, *args, entry: str = "main", prelude: bool = False):
    mod = relay.parse(text, init_module=relay.Prelude().mod if prelude else None)
    return transpile.compile(mod, backend=backend, entry=entry)(*args)


def outcome(backend: str, text: str, *args, **kwargs):
    """("ok", value) or ("error", exception class) of running `text` on `backend`."""
    try:
        return "ok", run(backend, text, *args, **kwargs)
    except TranspileError as exc:
        return "error", type(exc)


def assert_same_as_interpreter(text: str, *args, **kwargs):
    expected = outcome("interpreter", text, *args, **kwargs)
    got = outcome("python", text, *args, **kwargs)
    assert got[0] == expected[0], (expected, got)
    if got[0] == "error":
        assert got[1] is expected[1]
    else:
        np.testing.assert_array_equal(got[1], expected[1])
        assert type(got[1]) is type(expected[1]) is np.ndarray and got[1].dtype == expected[1].dtype
    return got


def native_backend(backend: str):
    if backend in ("cpp", "tir"):
        pytest.importorskip("tvm")


# ---------------------------------------------------------------- item 4: values at the boundary

MULTIPLY = "def @main(%a: Tensor[(2, 2), float32], %b: Tensor[(2, 2), float32]) { multiply(%a, %b) }"


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp", "tir"])
def test_matrix_arguments_get_array_semantics(backend):
    native_backend(backend)
    matrix = np.matrix([[1, 2], [3, 4]], dtype="float32")
    result = run(backend, MULTIPLY, matrix, matrix)
    # Elementwise, as for plain arrays (np.matrix's `*` would be the matrix product [[7, 10], [15, 22]]).
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, [[1, 4], [9, 16]])


class Tagged(np.ndarray):
    """An ndarray subclass that changes `*` (as np.matrix does)."""

    def __mul__(self, other):
        return np.zeros_like(np.asarray(self))


def boundary_values():
    base = np.arange(4, dtype="float32").reshape(2, 2)
    read_only = base.copy()
    read_only.flags.writeable = False
    misaligned = np.zeros(17, np.uint8)[1:].view("float32").reshape(2, 2)
    misaligned[...] = base
    assert not misaligned.flags.aligned
    return {
        "subclass": base.view(Tagged),
        "masked_without_mask": np.ma.masked_array(base),
        "masked": np.ma.masked_array(base, mask=[[1, 0], [0, 0]]),
        "negative_strides": np.arange(4, dtype="float32").reshape(2, 2)[::-1, ::-1],
        "non_contiguous": np.arange(8, dtype="float32").reshape(2, 4)[:, ::2],
        "read_only": read_only,
        "misaligned": misaligned,
        "big_endian": base.astype(">f4"),
        "list": base.tolist(),
        "float64": base.astype("float64"),
    }


@pytest.mark.parametrize("case", sorted(boundary_values()))
def test_odd_arrays_behave_as_on_the_interpreter(case):
    value = boundary_values()[case]
    plain = np.arange(4, dtype="float32").reshape(2, 2)
    assert_same_as_interpreter(MULTIPLY, value, plain)
    assert_same_as_interpreter(MULTIPLY, plain, value)


SCALARS = "def @main(%x: int32, %y: bool, %z: float32) { (add(%x, 1), logical_not(%y), multiply(%z, 2f)) }"


@pytest.mark.parametrize(
    "args",
    [
        (3, True, 1.5),
        (np.int32(3), np.bool_(True), np.float32(1.5)),
        (np.array(3, "int32"), np.array(True), np.array(1.5, "float32")),
        (True, 1, 1),
        (np.int64(3), True, 1.5),
        (3.0, True, np.float64(1.5)),
        (3.5, True, 1.5),
        (2**40, True, 1.5),
        (3, 2, 1.5),
        ([3], True, 1.5),
        (np.array([3], "int32"), True, 1.5),
    ],
)
def test_scalar_arguments_behave_as_on_the_interpreter(args):
    expected = outcome("interpreter", SCALARS, *args)
    got = outcome("python", SCALARS, *args)
    assert got[0] == expected[0]
    if got[0] == "error":
        assert got[1] is expected[1] is EvaluationError
    else:
        for g, e in zip(got[1], expected[1]):
            assert type(g) is type(e) is np.ndarray and g.dtype == e.dtype and g == e


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_matrices_inside_tuples_and_lists():
    text = """
    def @main(%t: (Tensor[(2, 2), float32], List[Tensor[(2, 2), float32]])) {
      match (%t.1) { Cons(%h, _) => multiply(%t.0, %h), Nil => %t.0 }
    }"""
    m = np.matrix([[1, 2], [3, 4]], dtype="float32")
    got = assert_same_as_interpreter(text, (m, ADTValue("Cons", (m, ADTValue("Nil")))), prelude=True)
    np.testing.assert_array_equal(got[1], [[1, 4], [9, 16]])


# ---------------------------------------------------------------- item 13: every "cannot do X" path


def _kernel(name, build, *types):
    params = [relay.var(n, t) for n, t in zip("abcdefgh", types)]
    return kernel_from_function(name, relay.infer_type_expr(relay.Function(params, build(*params))))


def _program(kernel=None, stmts=None, result=None, env=None) -> Program:
    """`main(%n: int32)` calling `kernel` (an add by default) on %n and 1, or running `stmts`."""
    kernel = kernel or _kernel("k", lambda a, b: a + b, I32, I32)
    n = Var("n", I32)
    if stmts is None:
        stmts = (Let(Var("r", I32), KernelCall(kernel.name, (n, Literal(1, I32)))),)
        result = Var("r", I32)
    main = FunctionDef("main", (Param("n", I32),), I32, Block(tuple(stmts), result), env=env)
    return Program(adts=(), constants=(), kernels=(kernel,), functions=(main,))


def _with_body(kernel, body):
    """`kernel` with its Relay body replaced (types inferred again where possible)."""
    return dataclasses.replace(kernel, body=body)


def test_the_well_formed_base_program_runs():
    assert BACKEND.build(_program()).load()(41) == 42


def test_entry_closure_is_reported_as_ill_formed():
    with pytest.raises(LIRError, match="entry @main is a closure body"):
        BACKEND.build(_program(env=()), verify=False)


def test_unknown_lir_value_is_reported_as_ill_formed():
    program = _program(stmts=(Let(Var("r", I32), "not a value"),), result=Var("r", I32))
    with pytest.raises(LIRError, match="fn @main: str is not an LIR value"):
        BACKEND.build(program, verify=False)


def test_undefined_variable_is_reported_as_ill_formed():
    program = _program(stmts=(), result=Var("nowhere", I32))
    with pytest.raises(LIRError, match="%nowhere is not defined"):
        BACKEND.build(program, verify=False)


def test_unknown_atom_is_reported_as_ill_formed():
    program = _program(stmts=(Let(Var("r", I32), KernelCall("k", (3.5, Literal(1, I32)))),), result=Var("r", I32))
    with pytest.raises(LIRError, match="3.5 is not an LIR atom"):
        BACKEND.build(program, verify=False)


def test_unwritable_attribute_value_is_unsupported():
    with pytest.raises(UnsupportedFeatureError, match="backend 'python' does not support attribute values of type"):
        _attr_text(object(), "nn.pad", "pad_width")
    kernel = _kernel("k", lambda a: relay.sum(a, axis=[0]), TensorType((2,), "int32"))
    call = kernel.body.body
    odd = relay.Call(call.op, call.args, {**dict(call.attrs), "axis": (1j,)})
    odd._set_checked_type(call.checked_type)
    with pytest.raises(UnsupportedFeatureError, match=r"attribute values of type complex: sum\(axis=1j\)"):
        BACKEND.build(_program(_with_body(kernel, relay.Function(kernel.body.params, odd))), verify=False)


def test_unexpressible_operator_result_is_unsupported():
    with pytest.raises(UnsupportedFeatureError, match="backend 'python' does not support operator results of type"):
        _out_spec(relay.FuncType([], relay.TensorType((), "int32")), "f")


def test_kernel_body_that_is_not_a_function_is_ill_formed():
    kernel = _kernel("k", lambda a, b: a + b, I32, I32)
    with pytest.raises(LIRError, match="kernel k: its body is a Var, not a relay.Function"):
        BACKEND.build(_program(_with_body(kernel, kernel.body.params[0])), verify=False)


def test_kernel_free_variable_is_ill_formed():
    kernel = _kernel("k", lambda a, b: a + b, I32, I32)
    body = relay.Function(kernel.body.params, relay.var("stray", "int32"))
    body.body._set_checked_type(relay.TensorType((), "int32"))
    with pytest.raises(LIRError, match="kernel k uses the free variable %stray"):
        BACKEND.build(_program(_with_body(kernel, body)), verify=False)


def test_kernel_tensor_constant_is_ill_formed():
    kernel = _kernel("k", lambda a, b: a + b, I32, I32)
    body = relay.Function(kernel.body.params, relay.const(np.ones(3, "int32")))
    with pytest.raises(LIRError, match="kernel k holds a non-scalar constant"):
        BACKEND.build(_program(_with_body(kernel, body)), verify=False)


def test_kernel_control_flow_is_ill_formed():
    kernel = _kernel("k", lambda a, b: a + b, I32, I32)
    a, b = kernel.body.params
    body = relay.Function(kernel.body.params, relay.If(relay.const(True), a, b))
    with pytest.raises(LIRError, match="kernel k: a kernel body holds only operator calls, tuples and lets, not If"):
        BACKEND.build(_program(_with_body(kernel, body)), verify=False)


def test_unregistered_operator_is_unsupported():
    kernel = _kernel("k", lambda a, b: a + b, I32, I32)
    call = kernel.body.body
    odd = relay.Call(relay.Op("no_such_op"), call.args)
    odd._set_checked_type(call.checked_type)
    with pytest.raises(
        UnsupportedFeatureError, match="does not support operator no_such_op: it is not in the operator"
    ):
        BACKEND.build(_program(_with_body(kernel, relay.Function(kernel.body.params, odd))), verify=False)


def test_operator_missing_required_attributes_is_unsupported():
    kernel = _kernel("k", lambda a: relay.reshape(a, newshape=(1,)), I32)
    call = kernel.body.body
    bare = relay.Call(call.op, call.args)
    bare._set_checked_type(call.checked_type)
    with pytest.raises(UnsupportedFeatureError, match="does not support the attributes of operator reshape"):
        BACKEND.build(_program(_with_body(kernel, relay.Function(kernel.body.params, bare))), verify=False)


def test_data_dependent_arange_runs_like_the_interpreter():
    text = 'def @main(%a: float32, %b: float32, %c: float32) { arange(%a, %b, %c, dtype="float32") }'
    got = assert_same_as_interpreter(text, np.float32(0), np.float32(5), np.float32(1))
    np.testing.assert_array_equal(got[1], [0, 1, 2, 3, 4])
    mod = relay.IRModule.from_expr(
        relay.Function([], relay.arange(relay.const(0.0), relay.const(5.0), relay.const(1.0)))
    )
    np.testing.assert_array_equal(transpile.compile(mod, backend="python")(), np.arange(5, dtype="float32"))


# ---------------------------------------------------------------- item 14: failures inside generated code


@pytest.mark.parametrize(
    "text, args, message",
    [
        (
            "def @main(%a: Tensor[(?), float32], %b: Tensor[(?), float32]) {\n  %0 = multiply(%a, 2f);\n  add(%0, %b)\n}",
            (np.ones(3, "float32"), np.ones(4, "float32")),
            r"from_string:3:3: kernel fused_multiply_add \(multiply, add\) failed: ValueError: operands could not be",
        ),
        (
            "def @main(%a: Tensor[(?, ?), float32], %b: Tensor[(?, ?), float32]) {\n  nn.dense(%a, %b, units=None)\n}",
            (np.ones((2, 3), "float32"), np.ones((4, 5), "float32")),
            r"from_string:2:3: kernel fused_dense \(nn.dense\) failed: ValueError: matmul",
        ),
        (
            "def @main(%a: Tensor[(?), float32]) {\n  reshape(%a, newshape=[2, 3])\n}",
            (np.ones(5, "float32"),),
            r"from_string:2:3: kernel fused_reshape \(reshape\) failed: ValueError: cannot reshape array of size 5",
        ),
        (
            "def @main(%x: Tensor[(1, ?, 4, 4), float32], %w: Tensor[(2, ?, 3, 3), float32]) {\n"
            "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  nn.relu(%0)\n}",
            (np.ones((1, 3, 4, 4), "float32"), np.ones((2, 2, 3, 3), "float32")),
            r"from_string:2:8: kernel fused_conv2d_relu \(nn.conv2d, nn.relu\) failed: operator nn.conv2d failed:",
        ),
    ],
    ids=["add", "dense", "reshape", "conv2d"],
)
def test_mismatched_dynamic_dims_raise_evaluation_errors_with_the_line(text, args, message):
    assert_same_as_interpreter(text, *args)
    with pytest.raises(EvaluationError, match=message) as info:
        run("python", text, *args)
    assert info.value.span is not None and info.value.span.line == int(message.split(":")[1])
    assert isinstance(info.value.__cause__, Exception)  # the numpy failure, with the generated lines


RUNAWAY = """
def @down(%n: int32) -> int32 { if (equal(%n, 0)) { 0 } else { add(@down(subtract(%n, 1)), 1) } }
def @main(%n: int32) -> int32 { @down(%n) }"""


def with_recursion_limit(limit: int, fn):
    """fn() on a thread marked as transpile's big-stack thread, with a small recursion limit, so
    running out of frames takes thousands of calls instead of millions."""
    outcome = {}

    def body():
        deep._state.deep = True  # run_deep then runs work directly on this thread, under this limit
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(limit)
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # re-raised on the test's thread
            outcome["error"] = exc
        finally:
            sys.setrecursionlimit(saved)

    saved_size = threading.stack_size(256 << 20)
    try:
        worker = threading.Thread(target=body)
        worker.start()
    finally:
        threading.stack_size(saved_size)
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_running_out_of_frames_is_an_evaluation_error():
    functions = {b: transpile.compile(relay.parse(RUNAWAY), backend=b) for b in ("interpreter", "python")}
    for backend, f in functions.items():
        with pytest.raises(EvaluationError, match="recursion too deep") as info:
            with_recursion_limit(20_000, lambda: f(100_000))
        assert info.value.__cause__ is None  # no chain holding every frame
    with pytest.raises(EvaluationError, match=r"generated Python ran out of frames after \d+ nested calls"):
        with_recursion_limit(20_000, lambda: functions["python"](100_000))
    assert functions["python"](1000) == 1000


@pytest.mark.slow
def test_runaway_recursion_is_an_evaluation_error():
    with pytest.raises(EvaluationError, match="recursion too deep"):
        run("interpreter", RUNAWAY, 3_000_000)
    with pytest.raises(EvaluationError, match=r"recursion too deep: the generated Python ran out of frames after \d+"):
        run("python", RUNAWAY, 3_000_000)


def test_failures_of_the_callers_callbacks_pass_through_unchanged():
    text = "def @main(%f: fn (int32) -> int32) { add(%f(1), 1) }"

    def failing(_):
        raise KeyError("the caller's own bug")

    for backend in ("interpreter", "python"):
        with pytest.raises(KeyError, match="the caller's own bug"):
            run(backend, text, failing)


def test_returned_closures_report_failures_too():
    text = "def @main(%a: Tensor[(?), float32]) { fn (%b: Tensor[(?), float32]) { add(%a, %b) } }"
    closure = run("python", text, np.ones(3, "float32"))
    np.testing.assert_array_equal(closure(np.ones(3, "float32")), [2, 2, 2])
    with pytest.raises(EvaluationError, match=r"from_string:1:\d+: kernel \w+ \(add\) failed: ValueError"):
        closure(np.ones(4, "float32"))


def test_incomplete_match_keeps_its_own_message():
    text = "def @main(%o: Option[int32]) { match? (%o) { Some(%v) => %v } }"
    for backend in ("interpreter", "python"):
        with pytest.raises(EvaluationError):
            run(backend, text, ADTValue("None"), prelude=True)


# ---------------------------------------------------------------- items 16, 17: hostile names

HOSTILE = [
    "x\n#include <bad>",
    'a"b',
    "a'b",
    'q"""\\',
    "*/",
    "/*",
    "\x00",
    "a\x00b",
    "é",
    "日本",
    "None",
    "print",
    "np",
    "self",
    "__init__",
    "__class__",
    "a-b",
    "a_b",
    "1abc",
    "class",
    "ops",
    "ADTValue",
    "EvaluationError",
    "decode_constant",
    "\\",
    "\r",
    "\t",
    "\u2028",
    "#",
    "",
    " ",
    "main",
    "\x7f",
    "\ud800",
    "__transpile_blob_0__",
    "__transpile_comment_0__",
]


def hostile_module(name: str):
    """Type, constructors, globals, parameters and lets all named `name` (or `name` plus a suffix
    that sanitizes to the same identifier), with a large constant embedded in the module.
    """
    vec = relay.TensorType((40,), "float32")
    gtv = relay.GlobalTypeVar(name)
    wrap = relay.Constructor(name, [vec], gtv)
    empty = relay.Constructor(name + "\x00", [], gtv)  # sanitizes like `name`
    mod = relay.IRModule()
    mod.add_type_data(gtv, relay.TypeData(gtv, [], [wrap, empty]))
    unwrap, scale, outer = (relay.GlobalVar(name + "-"), relay.GlobalVar(name + "_"), relay.GlobalVar(name))
    value, field = relay.var(name + "o", relay.TypeCall(gtv, [])), relay.var(name, vec)
    mod[unwrap] = relay.Function(
        [value],
        relay.Match(
            value,
            [
                relay.Clause(relay.PatternConstructor(wrap, [relay.PatternVar(field)]), relay.add(field, field)),
                relay.Clause(relay.PatternConstructor(empty, []), relay.zeros((40,), "float32")),
            ],
        ),
    )
    x = relay.var(name, vec)
    mod[scale] = relay.Function([x], relay.multiply(x, relay.const(np.arange(40, dtype="float32"))))
    y, bound = relay.var(name, vec), relay.var(name, vec)
    mod[outer] = relay.Function(
        [y], relay.Let(bound, relay.Call(scale, [y]), relay.Call(unwrap, [relay.Call(wrap, [bound])]))
    )
    arg = relay.var(name, vec)
    mod["entry_point"] = relay.Function(
        [arg], relay.Tuple([relay.Call(outer, [arg]), relay.Call(wrap, [arg]), relay.Call(empty, [])])
    )
    return mod


@pytest.mark.parametrize("name", HOSTILE, ids=[repr(n) for n in HOSTILE])
def test_hostile_names_give_working_modules(name, tmp_path):
    mod = hostile_module(name)
    ones = np.ones(40, "float32")
    expected = transpile.compile(mod, backend="interpreter", entry="entry_point")(ones)
    artifact = transpile.build(mod, backend="python", entry="entry_point")
    ast.parse(artifact.source)
    artifact.source.encode("utf-8")  # exportable as a file
    got = artifact.load()(ones)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[0], 2 * np.arange(40, dtype="float32"))
    assert got[1].constructor == expected[1].constructor == name
    assert got[2] == expected[2] == ADTValue(name + "\x00")
    artifact.export(tmp_path / "exported")
    reloaded = transpile.load(tmp_path / "exported")(ones)
    assert reloaded[2].constructor == name + "\x00"


def test_unprintable_names_are_escaped_in_comments_and_docstrings():
    artifact = transpile.build(hostile_module("a\x00b\ud800"), backend="python", entry="entry_point")
    assert "\x00" not in artifact.source and "\ud800" not in artifact.source
    assert "a\\x00b\\ud800" in artifact.source  # readable in the docstring


@pytest.mark.parametrize("first, second", [("a-b", "a_b"), ("x", "x\x00")])
def test_constructors_that_sanitize_alike(first, second):
    gtv = relay.GlobalTypeVar("T")
    bare, holding = relay.Constructor(first, [], gtv), relay.Constructor(second, [relay.TensorType((), "int32")], gtv)
    mod = relay.IRModule()
    mod.add_type_data(gtv, relay.TypeData(gtv, [], [bare, holding]))
    mod["main"] = relay.Function([], relay.Tuple([relay.Call(bare, []), relay.Call(holding, [relay.const(1)])]))
    expected = transpile.compile(mod, backend="interpreter")()
    assert transpile.compile(mod, backend="python")() == expected


# ---------------------------------------------------------------- readable spellings the registry defines otherwise


@pytest.mark.parametrize(
    "text, args",
    [
        # logical_not of a float tensor keeps the input's dtype (numpy's would give bool)
        ('def @main(%x: Tensor[(3), float32]) { logical_not(%x) }', [np.array([0, 2, np.nan], "float32")]),
        # float -> integer casts of nan/inf/out-of-range values are the registry's, not astype's
        ('def @main(%x: Tensor[(9), float32]) { cast(%x, dtype="uint32") }', [np.full(9, np.nan, "float32")]),
        ('def @main(%x: Tensor[(2), float32]) { cast(%x, dtype="int8") }', [np.array([-np.inf, 300], "float32")]),
        # a folded non-finite 0-d constant stays 0-d
        ("def @main() -> float32 { divide(1f, 0f) }", []),
    ],
)
def test_spellings_agree_with_the_registry(text, args):
    mod = relay.parse('#[version = "0.0.5"]\n' + text)
    expected = transpile.compile(mod, backend="interpreter")(*args)
    got = transpile.compile(mod, backend="python")(*args)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_a_later_parse_of_the_same_name_does_not_change_what_an_error_quotes():
    first = relay.parse('#[version = "0.0.5"]\ndef @main(%a: Tensor[(?), float32], %b: Tensor[(?), float32]) {\n  add(%a, %b)\n}\n')
    run = transpile.compile(first, backend="python")
    relay.parse('#[version = "0.0.5"]\ndef @main() -> int32 {\n  1\n}\n')  # also named from_string
    with pytest.raises(EvaluationError) as info:
        run(np.ones(3, "float32"), np.ones(4, "float32"))
    assert "add(%a, %b)" in str(info.value)
