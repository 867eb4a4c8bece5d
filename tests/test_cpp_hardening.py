"""cpp backend hardening (issue 12): references shared with closures, empty-tensor errors, negative literals,
hostile names, located errors. Every program is checked against the interpreter."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends import backends
from transpile.backends.cpp.codegen.names import Namespace, c_string, comment, identifier, is_reserved
from transpile.errors import EvaluationError, UnsupportedFeatureError
from transpile.runtime import ADTValue, RefValue

V = '#[version = "0.0.5"]\n'
REF_BACKENDS = [b for b in ("interpreter", "python", "cpp") if b in backends()]


def _needs_cpp(backend: str) -> None:
    if backend == "cpp":
        pytest.importorskip("tvm")
        if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
            pytest.skip("the cpp backend needs g++")


def compiled(program, backend: str, **options):
    _needs_cpp(backend)
    mod = relay.parse(V + program) if isinstance(program, str) else program
    return transpile.compile(mod, backend=backend, **options)


def i32(v):
    return np.asarray(v, dtype="int32")


# ---------------------------------------------------------------- item 3: references captured by closures

ISSUE_REPRO = """def @main(%r: ref(int32)) -> fn () -> int32 {
  fn () -> int32 { let %u = ref_write(%r, 42); ref_read(%r) }
}"""

COUNTER = """def @main(%r: ref(int32)) -> fn () -> int32 {
  fn () -> int32 { let %u = ref_write(%r, add(ref_read(%r), 1)); ref_read(%r) }
}"""

# The reference crosses after the closure that captured it (later in the result).
MADE_INSIDE = """def @main() -> (fn () -> int32, ref(int32)) {
  let %r = ref(10);
  (fn () -> int32 { let %u = ref_write(%r, add(ref_read(%r), 1)); ref_read(%r) }, %r)
}"""

# The closure is called from a Python callback while @main (which holds %r) is still running.
DURING_CALLBACK = """def @main(%r: ref(int32), %k: fn (fn () -> int32) -> int32) -> int32 {
  %k(fn () -> int32 { let %u = ref_write(%r, add(ref_read(%r), 100)); ref_read(%r) })
}"""


@pytest.mark.parametrize("backend", REF_BACKENDS)
def test_a_returned_closure_writes_into_the_caller_refvalue(backend):
    r = RefValue(i32(1))
    g = compiled(ISSUE_REPRO, backend)(r)
    assert int(r.value) == 1
    assert int(g()) == 42
    assert int(r.value) == 42


@pytest.mark.parametrize("backend", REF_BACKENDS)
def test_a_returned_closure_and_its_refvalue_stay_one_cell_over_many_calls(backend):
    f = compiled(COUNTER, backend)
    r = RefValue(i32(1))
    g = f(r)
    assert (int(g()), int(r.value)) == (2, 2)
    r.value = i32(10)  # a write from Python between calls is what the closure reads next
    assert (int(g()), int(r.value)) == (11, 11)
    h = f(r)  # a second closure over the same RefValue
    assert (int(h()), int(g()), int(r.value)) == (12, 13, 13)


@pytest.mark.parametrize("backend", REF_BACKENDS)
def test_a_reference_made_by_the_program_and_returned_after_its_closure(backend):
    g, cell = compiled(MADE_INSIDE, backend)()
    assert (int(g()), int(cell.value)) == (11, 11)
    cell.value = i32(50)
    assert (int(g()), int(cell.value)) == (51, 51)


@pytest.mark.parametrize("backend", REF_BACKENDS)
def test_a_callback_sees_and_makes_writes_to_the_running_calls_references(backend):
    r = RefValue(i32(1))
    seen = []

    def callback(fn):
        seen.append(int(r.value))
        seen.append(int(fn()))
        seen.append(int(r.value))
        r.value = i32(5)  # seen by the native side when the callback returns
        return fn()

    assert int(compiled(DURING_CALLBACK, backend)(r, callback)) == 105
    assert seen == [1, 101, 101]
    assert int(r.value) == 105


# ---------------------------------------------------------------- item 5: empty tensors


EMPTY_CASES = {
    "take_dynamic": (
        "def @main(%a: Tensor[(?), float32], %i: Tensor[(2), int32]) { take(%a, %i, axis=0) }",
        (np.zeros(0, "float32"), i32([0, 3])),
    ),
    "take_static": (
        "def @main(%a: Tensor[(0), float32], %i: Tensor[(2), int32]) { take(%a, %i, axis=0) }",
        (np.zeros(0, "float32"), i32([0, 3])),
    ),
    "take_flat": (
        "def @main(%a: Tensor[(?, 2), float32], %i: Tensor[(1), int32]) { take(%a, %i) }",
        (np.zeros((0, 2), "float32"), i32([1])),
    ),
    "argmax_dynamic": ("def @main(%a: Tensor[(?), float32]) { argmax(%a) }", (np.zeros(0, "float32"),)),
    "argmax_static": ("def @main(%a: Tensor[(0), float32]) { argmax(%a) }", (np.zeros(0, "float32"),)),
    "argmin_axis": (
        "def @main(%a: Tensor[(2, ?), int32]) { argmin(%a, axis=[1]) }",
        (np.zeros((2, 0), "int32"),),
    ),
}


@pytest.mark.parametrize("case", sorted(EMPTY_CASES))
@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
def test_reading_from_an_empty_tensor_raises_an_evaluation_error(case, backend):
    program, args = EMPTY_CASES[case]
    f = compiled(program, backend)
    with pytest.raises(EvaluationError, match="empty|out of bounds"):
        f(*args)


FINE_WHEN_EMPTY = """def @main(%a: Tensor[(?), float32], %i: Tensor[(?), int32], %b: Tensor[(?, 3), float32]) {
  (take(%a, %i, axis=0), argmax(%b, axis=[1]), take(%a, %i, axis=0, mode="wrap"))
}"""


@pytest.mark.parametrize(
    "a, i, b",
    [
        (np.zeros(0, "float32"), np.zeros(0, "int32"), np.zeros((0, 3), "float32")),  # nothing to read: fine
        (np.array([1.0, 2.0, 3.0], "float32"), i32([2, 0, 7, -1]), np.array([[1, 5, 2]], "float32")),
    ],
)
def test_empty_results_and_non_empty_reads_still_work(a, i, b):
    want = compiled(FINE_WHEN_EMPTY, "interpreter")(a, i, b)
    got = compiled(FINE_WHEN_EMPTY, "cpp")(a, i, b)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- item 8: negative literals

# Unoptimised (opt_level=0), so that negative() of a literal reaches the C++ kernels unfolded.
NEGATIVES = """def @main(%x: int32, %f: float32) {
  (add(%x, negative(-4)), add(%f, negative(-4f)), negative(negative(%x)), subtract(%x, -4),
   add(%x, negative(-2147483648)), negative(-9223372036854775808i64), divide(1f, negative(-0f)),
   divide(1f, subtract(%f, -0f)), subtract(%f, negative(-inff)), negative(nanf), negative(-1.5f64),
   negative(-1.5f16), negative(-128i8), negative(-32768i16), logical_not(logical_not(False)),
   negative(cast(negative(%x), dtype="int64")))
}"""


def test_negative_literals_compile_and_agree_with_the_interpreter():
    args = (i32(3), np.asarray(2.0, "float32"))
    want = compiled(NEGATIVES, "interpreter")(*args)
    got = compiled(NEGATIVES, "cpp", opt_level=0)(*args)
    code = re.sub(r"//.*", "", transpile.emit(relay.parse(V + NEGATIVES), backend="cpp", opt_level=0))
    assert "--" not in code and "9223372036854775808" not in code
    assert len(got) == len(want)
    for k, (w, g) in enumerate(zip(want, got)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, w, err_msg=f"field {k}")
        if w.dtype.kind == "f":
            assert np.array_equal(np.signbit(g), np.signbit(w)), k


def test_shape_expressions_never_print_a_decrement_or_an_out_of_range_literal():
    pytest.importorskip("tvm")
    from tvm import tirx

    from transpile.backends.cpp.codegen.shapes import ShapePrinter

    n = tirx.Var("n", "int64")
    printer = ShapePrinter({n: "p0_dim0"}, "kernel k")
    text = printer.expr(tirx.FloorDiv(tirx.IntImm("int64", -5), tirx.IntImm("int64", 2)))
    assert text == "((-5) >= 0 ? (-5) / 2 : -((-((-5)) + 1) / 2))"  # g++: -3, numpy's -5 // 2
    lowest = printer.expr(tirx.Add(n, tirx.IntImm("int64", -(2**63))))
    assert lowest == "(p0_dim0 + (INT64_C(-9223372036854775807) - 1))"


# ---------------------------------------------------------------- item 11: located errors


def test_a_data_dependent_arange_error_names_line_and_column():
    text = V + 'def @main(%n: int32) {\n  arange(0, %n, 1, dtype="int32")\n}'
    pytest.importorskip("tvm")
    with pytest.raises(UnsupportedFeatureError) as info:
        transpile.emit(relay.parse(text), backend="cpp")
    assert (info.value.line, info.value.column) == (3, 3)
    assert "arange" in str(info.value) and "^" in str(info.value)


# ---------------------------------------------------------------- item 16: hostile names

HOSTILE = [
    "x\n#include <bad>",
    "x\n#error injected",
    "x\r\n#error carriage return",
    'a"b',
    "a'b",
    "*/",
    "/*",
    "a*/b//c",
    "a\\",
    "\\",
    "a\\\n#error continued",
    "\0",
    "a\0b",
    "é",
    "名前",
    "\U0001f600",
    "int",
    "class",
    "std",
    "__x",
    "_X",
    "a__b",
    "A",
    "a",
    "a-b",
    "a_b",
    "a b",
    "1abc",
    "??/",
    "trt",
    "dec_0",
    "r",
    "refs",
    "into_k_fused_add",
    "NAN",
    "int32_t",
    "kDLFloat",
    "p0",
    "v1",
    "",
    "\t",
    "operator+",
    "a::b",
    "%x",
    "@y",
    "errno",
    "next_x",
]

I32 = relay.TensorType((), "int32")


def hostile_module(names):
    """Each name as an ADT, its constructor, a global function, its parameter, a pattern variable and
    a let-bound variable of @main; @main returns the sum of every function's result and an ADT value."""
    mod = relay.IRModule()
    x = relay.var("x\n#error injected", I32)
    lets, first = [], None
    for i, name in enumerate(names):
        adt = relay.GlobalTypeVar(name)
        ctor = relay.Constructor(name, [I32], adt)
        mod.add_type_data(adt, relay.TypeData(adt, [], [ctor]))
        param, field = relay.var(name, I32), relay.var(name, I32)
        clause = relay.Clause(relay.PatternConstructor(ctor, [relay.PatternVar(field)]), field * relay.const(2))
        gv = relay.GlobalVar(name)
        mod[gv] = relay.Function([param], relay.Match(ctor(param + relay.const(i)), [clause]), I32)
        lets.append((relay.var(name, I32), relay.Call(gv, [x])))
        first = ctor if first is None else first
    total = relay.const(0)
    for local, _ in lets:
        total = total + local
    body = relay.Tuple([total, first(x)])
    for local, value in reversed(lets):
        body = relay.Let(local, value, body)
    mod["main"] = relay.Function([x], body)
    return mod


def closures_module(name):
    """`name` in a closure and what it captures, in a tail-recursive loop whose parameters trade
    places (the tail call's temporaries) and in a partial match's missing constructor."""
    mod = relay.IRModule()
    adt = relay.GlobalTypeVar(name)
    hit = relay.Constructor(name, [I32], adt)
    miss = relay.Constructor(name + "\n#error missed */", [], adt)
    mod.add_type_data(adt, relay.TypeData(adt, [], [hit, miss]))
    a, next_a = relay.var(name, I32), relay.var("next_" + name, I32)
    loop = relay.GlobalVar(name + "_loop")
    done = relay.less_equal(a, relay.const(0))
    mod[loop] = relay.Function([a, next_a], relay.If(done, next_a, relay.Call(loop, [next_a - relay.const(1), a])), I32)
    x, y, field = relay.var(name, I32), relay.var(name, I32), relay.var(name, I32)
    captured = relay.var(name + "*/", I32)
    closure = relay.var(name + "\\", relay.FuncType([I32], I32))
    clause = relay.Clause(relay.PatternConstructor(hit, [relay.PatternVar(field)]), field)
    zero = relay.Match(hit(x), [clause], complete=False) - x
    body = relay.Let(
        captured,
        x * relay.const(3),
        relay.Let(closure, relay.Function([y], y + captured), relay.Call(closure, [relay.Call(loop, [x, zero])])),
    )
    mod["main"] = relay.Function([x], body)
    return mod


def _assert_nothing_injected(source: str) -> None:
    for line in source.splitlines():
        assert line.isascii() and line.isprintable(), repr(line)
        assert not line.endswith("\\"), line  # would continue a // comment onto the next line
        if line.lstrip().startswith("#"):
            assert re.fullmatch(r"#include <[\w./]+>", line), line
    assert "#error" not in re.sub(r"//.*|/\*.*?\*/", "", source)


def test_hostile_names_in_every_role_compile_and_run_like_the_interpreter():
    mod = hostile_module(HOSTILE)
    _assert_nothing_injected(transpile.emit(mod, backend="cpp"))
    want = compiled(mod, "interpreter")(i32(5))
    got = compiled(mod, "cpp")(i32(5))
    assert int(got[0]) == int(want[0])
    assert got[1] == want[1] == ADTValue(HOSTILE[0], (i32(5),))


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_inject_nothing_into_the_source(name):
    _needs_cpp("cpp")
    _assert_nothing_injected(transpile.emit(closures_module(name), backend="cpp"))


def test_hostile_names_in_closures_tail_calls_and_partial_matches():
    mod = closures_module("x\n#error injected */ \\")
    want = compiled(mod, "interpreter")(i32(5))
    assert int(want) == 20  # loop(5, 0) = 5, plus the captured 15
    assert int(compiled(mod, "cpp")(i32(5))) == 20


@pytest.mark.parametrize("entry", ["run", "fused_add", "x\n#error injected"])
def test_hostile_entry_names(entry):
    mod = relay.IRModule()
    x = relay.var("a\0b", shape=(2,), dtype="float32")
    mod[relay.GlobalVar(entry)] = relay.Function([x], x + x)
    f = compiled(mod, "cpp", entry=entry)
    np.testing.assert_array_equal(f(np.ones(2, "float32")), np.full(2, 2, "float32"))


def test_identifiers_are_valid_unreserved_and_unique():
    scope = Namespace()
    names = [scope.bind(("k", i), n) for i, n in enumerate(HOSTILE + ["dec", "dec", "dec_1", "int", "int"])]
    assert len(set(names)) == len(names)
    for name in names + [identifier(n) for n in HOSTILE]:
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name), name
        assert "__" not in name and not is_reserved(name), name


def _c_bytes(literal: str) -> bytes:
    assert literal[0] == literal[-1] == '"' and '"' not in literal[1:-1]
    assert re.fullmatch(r"([^\\]|\\[0-7]{3})*", literal[1:-1])  # octal escapes only: none absorbs what follows
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), literal[1:-1]).encode("latin-1")


@pytest.mark.parametrize("text", HOSTILE + ["??=", 'say "hi"\\n'])
def test_string_literals_hold_exactly_the_utf8_bytes(text):
    literal = c_string(text)
    assert literal.isascii() and literal.isprintable() and "??" not in literal
    assert _c_bytes(literal) == text.encode("utf-8")


@pytest.mark.parametrize("text", HOSTILE + ["a */ b", "end\\"])
def test_comments_cannot_end_or_continue(text):
    safe = comment(text)
    assert safe.isascii() and safe.isprintable()
    assert "*/" not in safe and "??" not in safe and not safe.endswith("\\")
