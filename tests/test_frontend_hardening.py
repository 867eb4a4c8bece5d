"""Hardening of the frontend (issue 12, items 10, 11, 12, 15, 18 and the shared excerpt registry):
every bad program is a located TranspileError, `?` sizes meeting static ones are checked at run
time on every backend, and printed text parses back for any name the builder accepts."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
import transpile.relay as relay
from transpile.errors import EvaluationError, ParseError, RelayTypeError, TranspileError
from transpile.lir import verify
from transpile.pipeline import lower_to_lir
from transpile.relay import expr as rx
from transpile.relay import ty as rty

COMPILED = ["python", "cpp", "tir"]
ALL_BACKENDS = ["interpreter", *COMPILED]


def compile_text(text: str, backend: str):
    return transpile.compile(relay.parse(text), backend=backend)


def assert_located(exc: TranspileError, line: int, column: int | None = None):
    assert exc.span is not None, f"no location: {exc}"
    assert exc.line == line, str(exc)
    if column is not None:
        assert exc.column == column, str(exc)


# ----- item 10: a non-function let that refers to itself ------------------------------------------
SELF_LET = "def @main(%x: int32) -> int32 {\n  let %v1 = %v1 * 2;\n  %v1\n}"


def test_self_referencing_let_is_a_located_type_error():
    with pytest.raises(RelayTypeError, match="let %v1 refers to itself") as info:
        relay.transform.InferType()(relay.parse(SELF_LET))
    assert_located(info.value, 2, 3)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_self_referencing_let_fails_before_any_backend_runs(backend):
    with pytest.raises(RelayTypeError, match="only a function may be defined recursively") as info:
        compile_text(SELF_LET, backend)(np.int32(3))
    assert_located(info.value, 2)


def test_self_reference_hidden_in_a_closure_of_the_value_is_rejected():
    text = "def @main() -> int32 {\n  let %v = (fn () -> int32 { %v })();\n  %v\n}"
    with pytest.raises(RelayTypeError, match="let %v refers to itself") as info:
        relay.transform.InferType()(relay.parse(text))
    assert_located(info.value, 2)


def test_self_referencing_let_built_with_the_builder_is_rejected():
    v = relay.var("v", "int32")
    body = rx.Let(v, rx.Call(rx.Op.get("add"), [v, relay.const(1, "int32")]), v)
    with pytest.raises(RelayTypeError, match="let %v refers to itself"):
        relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([], body)))


def test_recursive_let_bound_function_is_still_accepted():
    text = """def @main(%n: int32) -> int32 {
      let %count = fn (%i: int32) -> int32 { if (%i == 0) { 0 } else { %count(%i - 1) + 1 } };
      %count(%n)
    }"""
    assert int(relay.evaluate(relay.parse(text), np.int32(5))) == 5


# ----- item 11: a `?` value where static sizes are declared ---------------------------------------
DYNAMIC_RETURN = "def @main(%x: Tensor[(?), float32]) -> Tensor[(3), float32] { add(%x, 1f) }"
DYNAMIC_ARGUMENT = """def @f(%a: Tensor[(3), float32]) -> Tensor[(3), float32] { multiply(%a, 2f) }
def @main(%x: Tensor[(?), float32]) { @f(%x) }"""
DYNAMIC_LET = """def @main(%x: Tensor[(?), float32]) -> Tensor[(?), float32] {
  let %y: Tensor[(3), float32] = negative(%x);
  %y
}"""
DYNAMIC_BRANCH = """def @main(%x: Tensor[(?), float32], %c: bool) {
  if (%c) { %x } else { zeros(shape=[3], dtype="float32") }
}"""
DYNAMIC_TUPLE = """def @main(%x: Tensor[(?, ?), float32]) -> (Tensor[(?, 2), float32], float32) { (%x, 1f) }"""


@pytest.mark.parametrize(
    "text, good, bad, expected",
    [
        (DYNAMIC_RETURN, (np.arange(3, dtype="float32"),), (np.arange(4, dtype="float32"),), [1, 2, 3]),
        (DYNAMIC_ARGUMENT, (np.arange(3, dtype="float32"),), (np.arange(2, dtype="float32"),), [0, 2, 4]),
        (DYNAMIC_LET, (np.arange(3, dtype="float32"),), (np.arange(5, dtype="float32"),), [0, -1, -2]),
        (
            DYNAMIC_BRANCH,
            (np.arange(3, dtype="float32"), np.bool_(True)),
            (np.arange(4, dtype="float32"), np.bool_(True)),
            [0, 1, 2],
        ),
    ],
    ids=["return", "argument", "let", "if-branch"],
)
@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_dynamic_value_meeting_static_sizes_is_checked_at_run_time(backend, text, good, bad, expected):
    fn = compile_text(text, backend)
    np.testing.assert_array_equal(fn(*good), np.array(expected, dtype="float32"))
    with pytest.raises(EvaluationError, match="shape mismatch"):
        fn(*bad)


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_tuple_fields_are_narrowed_per_dimension(backend):
    fn = compile_text(DYNAMIC_TUPLE, backend)
    out = fn(np.ones((5, 2), "float32"))
    assert out[0].shape == (5, 2)
    with pytest.raises(EvaluationError, match="shape mismatch"):
        fn(np.ones((2, 5), "float32"))


@pytest.mark.parametrize("text", [DYNAMIC_RETURN, DYNAMIC_ARGUMENT, DYNAMIC_LET, DYNAMIC_BRANCH, DYNAMIC_TUPLE])
def test_narrowed_programs_pass_the_lir_verifier(text):
    verify(lower_to_lir(relay.parse(text), verify=False))


ARANGE_STATIC = 'def @main(%n: int32) -> Tensor[(3), int32] { arange(0, %n, 1, dtype="int32") }'


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_arange_annotated_static_runs_and_checks_its_length(backend):
    fn = compile_text(ARANGE_STATIC, backend)
    np.testing.assert_array_equal(fn(np.int32(3)), np.arange(3, dtype="int32"))
    with pytest.raises(EvaluationError, match="shape mismatch"):
        fn(np.int32(4))


def test_constant_arange_annotated_static_lowers_to_verified_lir():
    text = 'def @main() -> Tensor[(3), int32] { arange(0, 3, 1, dtype="int32") }'
    verify(lower_to_lir(relay.parse(text), verify=False))
    np.testing.assert_array_equal(compile_text(text, "python")(), np.arange(3, dtype="int32"))


# ----- item 12: a primitive function using a variable of an enclosing scope ---------------------
OPEN_PRIMITIVE = """def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  %0 = fn (%a: Tensor[(3), float32], Primitive=1) { add(%a, %x) };
  %0(%x)
}"""


def test_primitive_function_with_a_free_variable_is_a_located_type_error():
    with pytest.raises(RelayTypeError, match=r"primitive function \(Primitive=1\) uses %x") as info:
        relay.transform.InferType()(relay.parse(OPEN_PRIMITIVE))
    assert_located(info.value, 2, 8)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_primitive_function_with_a_free_variable_fails_on_every_backend(backend):
    with pytest.raises(RelayTypeError, match="may use only its own parameters"):
        compile_text(OPEN_PRIMITIVE, backend)(np.ones(3, "float32"))


def test_closed_primitive_function_still_runs():
    text = OPEN_PRIMITIVE.replace("add(%a, %x)", "add(%a, %a)")
    np.testing.assert_array_equal(compile_text(text, "python")(np.ones(3, "float32")), np.full(3, 2, "float32"))


# ----- item 15: bare names used as values -------------------------------------------------------
@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("def @main(%x: int32) {\n  add\n}", 2, 3, "operator add can only be called"),
        ("def @main(%x: float32) {\n  add(%x, inf)\n}", 2, 11, "unknown name inf"),
        ("def @main() {\n  letFalse\n}", 2, 3, "unknown name letFalse"),
        ("def @main(%x: int32) {\n  %0 = nn.relu;\n  %0\n}", 2, 8, "operator nn.relu can only be called"),
    ],
)
def test_bare_name_used_as_a_value_is_a_located_parse_error(text, line, column, message):
    with pytest.raises(ParseError, match=message) as info:
        relay.parse(text)
    assert_located(info.value, line, column)


@pytest.mark.parametrize("name", ["inf", "letFalse", "nanx"])
def test_unknown_bare_word_as_a_whole_expression_is_a_located_parse_error(name):
    with pytest.raises(ParseError, match=f"unknown name {name}") as info:
        relay.parse_expr(name)
    assert_located(info.value, 1, 1)


def test_operator_name_alone_still_parses_to_the_operator():
    assert relay.parse_expr("add") is rx.Op.get("add")
    assert relay.parse_expr("qnn.quantize") is rx.Op.get("qnn.quantize")


def test_operator_value_built_with_the_builder_is_reported_at_the_enclosing_node():
    mod = relay.parse("def @main(%x: int32) {\n  let %y = 1;\n  %x\n}")
    fn = mod["main"]
    let = fn.body
    bad = rx.Function(fn.params, rx.Let(let.var, rx.Op.get("add"), let.body, span=let.span), span=fn.span)
    with pytest.raises(RelayTypeError, match="operator add can only be called") as info:
        relay.transform.InferType()(relay.IRModule.from_expr(bad))
    assert_located(info.value, 2)


# ----- the excerpt registry: two parses with the same source name -------------------------------
def test_error_quotes_its_own_parse_when_source_names_collide():
    first = relay.parse("def @main(%x: int32) {\n  add(%x, 1f)\n}")
    relay.parse("def @main(%y: float32) {\n  %y\n}")  # same name "from_string", other text
    with pytest.raises(RelayTypeError) as info:
        relay.transform.InferType()(first)
    assert "add(%x, 1f)" in str(info.value)


def test_parse_error_quotes_its_own_text():
    relay.parse("def @main() { 1 }")
    with pytest.raises(ParseError) as info:
        relay.parse("def @main() {\n  let %a = ;\n  %a\n}")
    assert "let %a = ;" in str(info.value)


# ----- item 18: hostile names survive print -> parse ----------------------------------------------
HOSTILE_NAMES = [
    "a\nb", 'a"b', "a\\b", "a\0b", "é", "名前", "1abc", "a::b", "%x", "a b", " ", "", "a`b", "x\u2028y",
    "\x85", "\U0001f600", "tab\there", "@", "a.b", "fn", "let", "if", "match", "def", "type", "free_var",
    "extern", "ref", "Tensor", "int32", "float16x4", "True", "_", "inff", "nan", "meta",
]  # fmt: skip


def hostile_module(name: str) -> relay.IRModule:
    """A global, an ADT and its constructors all named after `name`, used by @main."""
    mod = relay.IRModule()
    adt = rty.GlobalTypeVar(name)
    a = rty.TypeVar("a")
    wrap, empty = rx.Constructor(name, [a], adt), rx.Constructor(name + "!", [], adt)
    mod.add_type_data(adt, rx.TypeData(adt, [a], [wrap, empty]))
    x = relay.var("x", "int32")
    helper = relay.GlobalVar(name)
    mod[helper] = relay.Function([x], x)
    y, v = relay.var("y", "int32"), relay.var("v")
    scrutinee = rx.Call(wrap, [relay.Call(helper, [y])])
    body = relay.Match(
        scrutinee,
        [
            relay.Clause(rx.PatternConstructor(wrap, [rx.PatternVar(v)]), v),
            relay.Clause(rx.PatternConstructor(empty, []), y),
        ],
    )
    mod[relay.GlobalVar("main")] = relay.Function([y], body, rty.TensorType((), "int32"))
    return mod


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=[repr(n) for n in HOSTILE_NAMES])
def test_hostile_names_print_and_parse_back_identically(name):
    mod = hostile_module(name)
    text = mod.astext()
    back = relay.parse(text)
    assert relay.structural_equal(mod, back)
    assert sorted(gv.name_hint for gv in back.functions) == sorted([name, "main"])
    assert {gtv.name_hint for gtv in back.type_definitions} == {name}
    assert {c.name_hint for c in back.constructors()} == {name, name + "!"}
    assert back.astext() == text
    assert int(relay.evaluate(back, np.int32(7))) == 7


def test_plain_names_keep_tvm_spelling():
    text = hostile_module("List2").astext()
    assert "def @List2(" in text and "type List2[" in text and "List2!" not in text.replace("`List2!`", "")
    assert "`" not in text.replace("`List2!`", "") and '@"' not in text


@pytest.mark.parametrize(
    "name, spelled",
    [("a b", '@"a b"'), ('q"', '@"q\\""'), ("n\nl", '@"n\\nl"'), ("z\0", '@"z\\0"'), ("\x85", '@"\\u0085"')],
)
def test_global_names_are_quoted_with_string_escapes(name, spelled):
    mod = relay.IRModule()
    x = relay.var("x", "int32")
    mod[relay.GlobalVar(name)] = relay.Function([x], x)
    assert f"def {spelled}(" in mod.astext()


def test_quoted_name_that_is_no_constructor_is_a_located_parse_error():
    with pytest.raises(ParseError, match="unknown constructor `nope`") as info:
        relay.parse("def @main() {\n  `nope`\n}")
    assert_located(info.value, 2, 3)
