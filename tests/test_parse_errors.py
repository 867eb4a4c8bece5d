"""Malformed Relay text: every error is a ParseError at the offending token with a clear message."""

from __future__ import annotations

import json

import pytest

from transpile.errors import ParseError, TranspileError
from transpile.relay.module import IRModule
from transpile.relay.parser import fromtext, parse, parse_expr

H = '#[version = "0.0.5"]\n'

# (entry point, source, line, column, exact message)
CASES = [
    ("expr", "let x = 1; ()", 1, 5, "let binder must be a local variable (%name), found x"),
    ("expr", "let @x = 1; ()", 1, 5, "let binder must be a local variable (%name), found @x"),
    ("expr", "if (True) {\n  let %x = ();\n  ()\n} else {\n  %x\n}", 5, 3, "unbound variable %x"),
    ("expr", "2147483648i32", 1, 1, "int literal 2147483648 out of range for int32"),
    ("expr", "(1, -32769i16)", 1, 5, "int literal -32769 out of range for int16"),
    ("expr", "3.40283e+38f32", 1, 1, "float literal 3.40283e+38 out of range for float32"),
    ("expr", "65505f16", 1, 1, "float literal 65505 out of range for float16"),
    ("expr", "9223372036854775808", 1, 1, "int literal 9223372036854775808 out of range for int64"),
    ("expr", "1.0i8", 1, 1, "invalid integer literal 1.0i8: an `i` suffix needs a whole number"),
    ("expr", "12abc", 1, 1, "invalid numeric literal 12abc"),
    ("expr", "meta[type_key][1337]", 1, 1, "meta reference meta[type_key][1337] not found in the meta table"),
    ("module", H + "def @f() { 1 }\n\ndef @f() { 2 }\n", 4, 5, "duplicate global function @f"),
    (
        "module",
        H + "type List[A] { Cons(A, List[A]), Nil }\ntype List[A] { Nil2 }\n",
        3,
        6,
        "duplicate definition of type List",
    ),
    ("module", H + "type T { A }\ntype U { B, A }\n", 3, 13, "duplicate constructor A: already defined by type T"),
    (
        "module",
        H + "type T { A }\ndef @main(%x: T) -> int32 {\n  match (%x) {\n    A => 0,\n    B(%y) => 1,\n  }\n}\n",
        6,
        5,
        "unknown constructor B",
    ),
    ("module", H + "def @main(%x: int32) -> int32 {\n  @helper(%x)\n}\n", 3, 3, "undefined global function @helper"),
    ("module", H + "def @main(%x: Vec[int32]) { %x }\n", 2, 15, "unknown type Vec"),
    ("module", H + "extern type Storage { S }\n", 2, 21, "an extern type may not have constructors"),
    ("module", H + "1 + 1\n", 2, 1, "expected a top-level definition (`def`, `type` or `extern type`) but found `1`"),
    (
        "module",
        H + "def @main() {\n  fn (%x) { type T { A } }\n}",
        3,
        13,
        "type definitions (`type`) must be at the top level of a module",
    ),
    (
        "expr",
        "def @id(%x) { %x }",
        1,
        1,
        "function definitions (`def`) are not allowed in an expression; use relay.parse for modules",
    ),
    ("expr", "free_var %x: int32;\nlet %y = %x\n%y", 3, 1, "expected `;` after a let binding but found `%y`"),
    ("expr", "fn (%x: int32;) { %x }", 1, 14, "expected `,` or `)` but found `;`"),
    ("expr", "let %t: Tensor[(2, 2), float32; = 1; %t", 1, 31, "expected `]` but found `;`"),
    ("expr", "(1, 2", 1, 6, "expected `,` or `)` but found end of input"),
    ("expr", "if (True) { 1 }", 1, 16, "expected `else` but found end of input"),
    ("expr", "add(1, 2, 3) 4", 1, 14, "expected end of input but found `4`"),
    ("expr", "fn (%x: Tensor[(2, 2), flaot32]) { %x }", 1, 24, "unknown dtype flaot32"),
    ("expr", "fn (%x) -> { %x }", 1, 12, "expected a type but found `{`"),
    ("expr", "match (1) {\n  _ -> 1\n}", 2, 5, "expected `=>` after the pattern but found `->`"),
    ("expr", "let %x = (1, 2); %x.a", 1, 21, "expected a tuple index after `.` but found `a`"),
    ("expr", "free_var %a: int32;\nfn (%x: int32, %x: int32) { %x }", 2, 16, "duplicate parameter %x"),
    (
        "expr",
        "nn.relu(axis=1, %x)",
        1,
        17,
        "expected `)` closing the call (attributes come after all arguments) but found `%x`",
    ),
    ("expr", "add(1, 2, axis=1, axis=2)", 1, 19, "duplicate attribute axis"),
    (
        "expr",
        'fn (%a) {\n  on_device(%a, virtual_device="cpu)\n}',
        2,
        32,
        "unterminated string literal (strings end on the same line)",
    ),
    ("expr", "/* a /* nested */ comment never closed\n1", 1, 1, "unterminated block comment `/*`"),
    ("expr", "%", 1, 1, "expected a variable name after `%`"),
    ("expr", "free_var x: int32; 1", 1, 10, "expected a local variable (%name) after `free_var` but found `x`"),
    ("expr", '#[version = "0.0.4"]\n1', 1, 1, 'unsupported text format version "0.0.4" (expected "0.0.5")'),
    ("expr", "1 +", 1, 4, "expected an expression but found end of input"),
    ("expr", "add(1, $)", 1, 8, "unexpected character `$`"),
]


@pytest.mark.parametrize("entry, source, line, column, message", CASES, ids=[c[4][:48] for c in CASES])
def test_malformed_program(entry, source, line, column, message):
    parser = parse if entry == "module" else parse_expr
    with pytest.raises(ParseError) as info:
        parser(source, source_name="bad.relay")
    error = info.value
    assert (error.line, error.column, error.message) == (line, column, message)
    assert error.source_name == "bad.relay"
    assert isinstance(error, TranspileError)


def test_error_text_quotes_the_line_with_a_caret():
    with pytest.raises(ParseError) as info:
        parse_expr("let %x = 1;\nadd(%x, %y)", source_name="caret.relay")
    assert str(info.value) == "caret.relay:2:9: unbound variable %y\n  add(%x, %y)\n          ^^"


def test_unknown_attribute_of_registered_operator_points_at_the_attribute():
    with pytest.raises(ParseError) as info:
        parse_expr("nn.conv2d(1, 2,\n          chanels=8)")
    assert (info.value.line, info.value.column) == (2, 11)
    assert info.value.message.startswith("operator nn.conv2d has no attribute(s) chanels")


def test_non_expression_meta_reference_in_expression_position():
    with pytest.raises(ParseError) as info:
        parse_expr("add(1, meta[VirtualDevice][0])", init_meta_table={"VirtualDevice": [object()]})
    assert (info.value.column, info.value.message) == (8, "meta[VirtualDevice][0] is not an expression")


def test_meta_index_past_the_end_of_the_table():
    with pytest.raises(ParseError) as info:
        parse_expr("meta[relay.Constant][2]", init_meta_table={"relay.Constant": []})
    assert info.value.message == (
        "meta reference meta[relay.Constant][2] not found in the meta table (it has 0 relay.Constant entries)"
    )


def test_malformed_tvm_metadata_is_located():
    src = H + 'def @main() { 1 }\n#[metadata]\n{"root": 1, "nodes": [], "attrs": {}}'
    with pytest.raises(ParseError) as info:
        parse(src)
    assert info.value.line == 3
    assert info.value.message == (
        "the #[metadata] section is not a valid TVM meta table: `root` refers to node 1, but there are 0 nodes"
    )


def test_redefining_a_type_of_the_init_module_is_an_error():
    base = parse(H + "type Box { B(int32) }")
    with pytest.raises(ParseError) as info:
        parse(H + "type Box { C }", init_module=base)
    assert info.value.message == "duplicate definition of type Box: the initial module already defines it"


def test_definitions_in_an_expression_are_rejected_by_parse_expr_but_fine_in_modules():
    src = H + "type Ayy { Lmao }\ntype Haha { Lmao }"
    with pytest.raises(ParseError) as info:
        parse_expr(src)
    assert (info.value.line, info.value.column) == (2, 1)
    with pytest.raises(ParseError) as info:
        parse(src)
    assert (info.value.line, info.value.column, info.value.message) == (
        3,
        13,
        "duplicate constructor Lmao: already defined by type Ayy",
    )
    assert isinstance(fromtext(H + "type Ayy { Lmao }\ntype Lmao { Ayy }"), IRModule)


def test_deep_nesting_parses_and_unclosed_nesting_is_an_error():
    # Deep input runs on a big-stack thread; it must never crash the interpreter.
    depth = 20000
    assert parse_expr("(" * depth + "1" + ")" * depth).data.item() == 1
    with pytest.raises(ParseError) as info:
        parse_expr("(" * depth)
    assert (info.value.column, info.value.message) == (depth + 1, "expected an expression but found end of input")


# The corpus's invalid programs (TVM's own parser tests), each rejected at a precise location.
INVALID_CORPUS = {
    "invalid/expr/test_ir_parser__1.relay": (1, 1, "int literal 2147483648 out of range for int32"),
    "invalid/expr/test_ir_parser__2.relay": (1, 1, "int literal 32768 out of range for int16"),
    "invalid/expr/test_ir_parser__3.relay": (1, 1, "float literal 3.40283e+38 out of range for float32"),
    "invalid/expr/test_ir_parser__4.relay": (1, 1, "float literal 65505 out of range for float16"),
    "invalid/expr/test_ir_parser__5.relay": (1, 1, "meta reference meta[type_key][1337] not found in the meta table"),
    "invalid/expr/test_ir_parser__6.relay": (1, 5, "let binder must be a local variable (%name), found @x"),
    "invalid/expr/test_ir_parser__7.relay": (1, 5, "let binder must be a local variable (%name), found x"),
    "invalid/expr/test_ir_parser__8.relay": (6, 17, "unbound variable %x"),
    "invalid/test_ir_parser__1.relay": (10, 18, "duplicate definition of type List"),
    "invalid/expr/test_ir_parser__9.relay": (
        2,
        13,
        "type definitions (`type`) are not allowed in an expression; use relay.parse for modules",
    ),
    "invalid/expr/test_ir_parser__10.relay": (
        2,
        13,
        "type definitions (`type`) are not allowed in an expression; use relay.parse for modules",
    ),
    "invalid/expr/test_ir_parser__11.relay": (
        2,
        13,
        "function definitions (`def`) are not allowed in an expression; use relay.parse for modules",
    ),
}


def test_every_invalid_corpus_program_is_listed(corpus_dir):
    manifest = json.loads((corpus_dir / "MANIFEST.json").read_text())
    assert {r["file"] for r in manifest if r["expected"] == "error"} == set(INVALID_CORPUS)


@pytest.mark.parametrize("name", sorted(INVALID_CORPUS))
def test_invalid_corpus_program_is_rejected(corpus_dir, name):
    record = next(r for r in json.loads((corpus_dir / "MANIFEST.json").read_text()) if r["file"] == name)
    parser = parse if record["kind"] == "module" else parse_expr
    with pytest.raises(ParseError) as info:
        parser((corpus_dir / name).read_text(), source_name=name)
    assert (info.value.line, info.value.column, info.value.message) == INVALID_CORPUS[name]
    assert info.value.source_name == name
