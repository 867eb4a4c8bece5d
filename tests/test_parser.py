"""The Relay text parser: node structure for each grammar feature, literals, spans, the corpus."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from transpile.relay.attrs import Attrs, MetaRef
from transpile.relay.expr import (
    Call,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from transpile.relay.module import IRModule
from transpile.relay.parser import fromtext, parse, parse_expr
from transpile.relay.ty import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)

from corpus_support import init_module_or_stand_in, meta_table, records

HEADER = '#[version = "0.0.5"]\n'


def op_name(call) -> str:
    assert isinstance(call, Call) and isinstance(call.op, Op)
    return call.op.name


def scalar(expr):
    assert isinstance(expr, Constant) and expr.data.shape == ()
    return expr.data.item(), expr.data.dtype.name


# ----- literals ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, value, dtype",
    [
        ("1", 1, "int32"),
        ("-42i16", -42, "int16"),
        ("-42i", -42, "int32"),
        ("-42i64", -42, "int64"),
        ("--10", 10, "int32"),
        ("---10", -10, "int32"),
        ("-05", -5, "int32"),
        ("2147483647", 2147483647, "int32"),
        ("2147483648", 2147483648, "int64"),
        ("9223372036854775807", 9223372036854775807, "int64"),
        ("2i64", 2, "int64"),
        ("1f", 1.0, "float32"),
        ("1.56667f", np.float32(1.56667).item(), "float32"),
        ("-10.0f", -10.0, "float32"),
        ("1.5", 1.5, "float32"),
        ("1e-05f", np.float32(1e-05).item(), "float32"),
        ("1e-05f16", np.float16(1e-05).item(), "float16"),
        ("1E+1f", 10.0, "float32"),
        ("1.0e-1f", np.float32(0.1).item(), "float32"),
        ("3f16", 3.0, "float16"),
        ("3f64", 3.0, "float64"),
        ("65504f16", 65504.0, "float16"),
        ("True", True, "bool"),
        ("False", False, "bool"),
    ],
)
def test_scalar_literals(text, value, dtype):
    expr = parse_expr(text)
    assert scalar(expr) == (value, dtype)
    assert (expr.span.line, expr.span.column, expr.span.end_column) == (1, 1, 1 + len(text))


def test_literal_is_not_negated_call_but_minus_between_operands_is_subtraction():
    assert scalar(parse_expr("-7")) == (-7, "int32")
    for text in ("1 - 7", "1-7", "1 --7"):
        call = parse_expr(text)
        assert op_name(call) == "subtract"
        assert scalar(call.args[1]) == ((7, "int32") if text != "1 --7" else (-7, "int32"))


def test_infinity_literal():
    assert scalar(parse_expr("-inff")) == (float("-inf"), "float32")


# ----- operators and precedence --------------------------------------------------------------------
def shape_of(expr):
    """A nested (op, left, right) tuple of an arithmetic expression, leaves as Python numbers."""
    if isinstance(expr, Constant):
        return expr.data.item()
    return (op_name(expr), shape_of(expr.args[0]), shape_of(expr.args[1]))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 * 2 + 3", ("add", ("multiply", 1, 2), 3)),
        ("1 + 2 * 3", ("add", 1, ("multiply", 2, 3))),
        ("1 * (2 + 3)", ("multiply", 1, ("add", 2, 3))),
        ("1 - 2 - 3", ("subtract", ("subtract", 1, 2), 3)),
        ("8 / 4 / 2", ("divide", ("divide", 8, 4), 2)),
        ("1 * 1 + 1 < 1 == 1", ("equal", ("less", ("add", ("multiply", 1, 1), 1), 1), 1)),
        ("1 == 1 < 1 + 1 * 1", ("equal", 1, ("less", 1, ("add", 1, ("multiply", 1, 1))))),
        ("1 <= 2", ("less_equal", 1, 2)),
        ("1 > 2", ("greater", 1, 2)),
        ("1 >= 2", ("greater_equal", 1, 2)),
        ("1 != 2", ("not_equal", 1, 2)),
    ],
)
def test_binary_operator_precedence(text, expected):
    assert shape_of(parse_expr(text)) == expected


def test_binary_operator_call_span_covers_both_operands():
    call = parse_expr("  10 * 20")
    assert (call.span.column, call.span.end_column) == (3, 10)


# ----- bindings and scoping ---------------------------------------------------------------------------
def test_let_with_type_annotation():
    let = parse_expr("let %x: int32 = 1; %x")
    assert isinstance(let, Let)
    assert let.var.name_hint == "x"
    assert let.var.type_annotation == TensorType((), "int32")
    assert scalar(let.value) == (1, "int32")
    assert let.body is let.var


def test_sequence_is_let_of_underscore():
    let = parse_expr("(); 1")
    assert isinstance(let, Let) and let.var.name_hint == "_"
    assert isinstance(let.value, Tuple) and len(let.value) == 0
    assert scalar(let.body) == (1, "int32")


def test_let_chain_and_shadowing():
    outer = parse_expr("let %x = 1; let %y = %x; let %x = 2; (%x, %y)")
    middle = outer.body
    inner = middle.body
    assert middle.value is outer.var
    assert inner.var is not outer.var
    assert inner.body.fields[0] is inner.var
    assert inner.body.fields[1] is middle.var


def test_let_may_define_a_recursive_closure():
    let = parse_expr("let %f = fn (%n: int32) { %f(%n) }; %f")
    assert let.value.body.op is let.var


def test_graph_bindings_share_nodes_without_lets():
    expr = parse_expr("%0 = (); %1 = 1; (%0, %0, %1)")
    assert isinstance(expr, Tuple)
    assert expr.fields[0] is expr.fields[1]
    assert isinstance(expr.fields[0], Tuple)
    assert scalar(expr.fields[2]) == (1, "int32")


def test_graph_binding_chain_builds_a_dag():
    expr = parse_expr("free_var %a: float32; %0 = add(%a, %a); %1 = add(%0, %a); add(%1, %0)")
    assert op_name(expr) == "add"
    assert expr.args[0].args[0] is expr.args[1]


def test_parenthesized_let_as_binding_value():
    expr = parse_expr("%0 = (let %x = 1; %x); add(%0, %0)")
    assert isinstance(expr.args[0], Let) and expr.args[0] is expr.args[1]


def test_free_vars_stay_free():
    expr = parse_expr("free_var %x: float32; free_var %y; add(%x, %y)")
    x, y = expr.args
    assert isinstance(x, Var) and x.type_annotation == TensorType((), "float32")
    assert isinstance(y, Var) and y.type_annotation is None


# ----- tuples, projections, references ------------------------------------------------------------------
def test_tuples():
    assert isinstance(parse_expr("()"), Tuple) and len(parse_expr("()")) == 0
    one = parse_expr("(0,)")
    assert isinstance(one, Tuple) and [scalar(f)[0] for f in one.fields] == [0]
    assert [scalar(f)[0] for f in parse_expr("(0, 1, 2,)").fields] == [0, 1, 2]
    assert scalar(parse_expr("(5)")) == (5, "int32")


def test_projection_of_variables_and_parenthesized_expressions():
    expr = parse_expr("free_var %t: (int32, (int32, int32)); %t.1.0")
    assert isinstance(expr, TupleGetItem) and expr.index == 0
    assert isinstance(expr.tuple_value, TupleGetItem) and expr.tuple_value.index == 1
    proj = parse_expr("(1, 2).1")
    assert proj.index == 1 and isinstance(proj.tuple_value, Tuple)
    graph = parse_expr("%0 = (1, 2); %0.0")
    assert graph.index == 0 and isinstance(graph.tuple_value, Tuple)


def test_references():
    create = parse_expr("ref(1)")
    assert isinstance(create, RefCreate) and scalar(create.value) == (1, "int32")
    let = parse_expr("let %r = ref(1); ref_write(%r, ref_read(%r))")
    write = let.body
    assert isinstance(write, RefWrite) and write.ref is let.var
    assert isinstance(write.value, RefRead) and write.value.ref is let.var


# ----- functions and calls ------------------------------------------------------------------------------
def test_polymorphic_function_with_return_type():
    func = parse_expr("fn [A](%x: A, %y) -> A { %x }")
    assert isinstance(func, Function)
    (a,) = func.type_params
    assert isinstance(a, TypeVar) and a.name_hint == "A"
    assert func.params[0].type_annotation is a and func.params[1].type_annotation is None
    assert func.ret_type is a
    assert func.body is func.params[0]
    assert func.attrs is None


def test_function_attributes_in_parameter_list():
    func = parse_expr('fn (%a, %b, Primitive=1, Compiler="cmsis-nn") { %a }')
    assert [p.name_hint for p in func.params] == ["a", "b"]
    assert func.attrs == {"Primitive": 1, "Compiler": "cmsis-nn"}


def test_parameter_attributes_are_read_and_dropped():
    table = {"VirtualDevice": [object(), object()]}
    func = parse_expr(
        "fn (%a {virtual_device=meta[VirtualDevice][1]}: int32, virtual_device=meta[VirtualDevice][0]) { %a }",
        init_meta_table=table,
    )
    assert func.params[0].type_annotation == TensorType((), "int32")
    assert func.attrs == {"virtual_device": MetaRef("VirtualDevice", 0)}


def test_curried_calls_of_closures():
    let = parse_expr("let %f = fn (%x) { fn (%y) { %x * %y } }; %f(0)(1)")
    call = let.body
    assert isinstance(call, Call) and isinstance(call.op, Call) and call.op.op is let.var
    assert scalar(call.args[0]) == (1, "int32") and call.attrs is None
    inner = let.value.body
    assert isinstance(inner, Function) and op_name(inner.body) == "multiply"
    assert inner.body.args[0] is let.value.params[0]


def test_registered_operator_attributes_are_normalized():
    call = parse_expr(
        "free_var %x: Tensor[(1, 3, 8, 8), float32]; free_var %w: Tensor[(8, 3, 3, 3), float32];"
        'nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3], data_layout="NCHW")'
    )
    assert op_name(call) == "nn.conv2d" and len(call.args) == 2
    assert call.attrs.padding == (1, 1, 1, 1)
    assert call.attrs.channels == 8
    assert tuple(call.attrs.kernel_size) == (3, 3)
    assert call.attrs.data_layout == "NCHW"
    # Defaults are filled in, as TVM's attribute objects had them.
    assert tuple(call.attrs.strides) == (1, 1) and call.attrs.groups == 1


def test_unregistered_operator_keeps_raw_attributes():
    table = {"VirtualDevice": [None]}
    call = parse_expr(
        "free_var %x: float32;"
        'my.custom_op(%x, scale=0.5f, axis=-1, names=["a", "b"], nested=[[1, 2], []], none=None, flag=False,'
        " device=meta[VirtualDevice][0], arg=%x)",
        init_meta_table=table,
    )
    assert op_name(call) == "my.custom_op"
    assert isinstance(call.attrs, Attrs)
    assert call.attrs.scale == 0.5 and call.attrs.axis == -1
    assert call.attrs.names == ("a", "b") and call.attrs.nested == ((1, 2), ())
    assert call.attrs.none is None and call.attrs.flag is False
    assert call.attrs.device == MetaRef("VirtualDevice", 0)
    assert call.attrs.arg is call.args[0]


def test_unregistered_operator_without_attributes_has_none():
    assert parse_expr("free_var %x: float32; on_device(%x)").attrs is None


def test_trailing_and_doubled_commas_and_comments_in_argument_lists():
    call = parse_expr("free_var %x: float32; add(%x, %x, , /* en_id=3 */)")
    assert op_name(call) == "add" and len(call.args) == 2
    relu = parse_expr("free_var %x: Tensor[(2), float32]; nn.relu(%x, /* exprnode_id=420 */)")
    assert op_name(relu) == "nn.relu" and len(relu.args) == 1


def test_bare_operators_are_op_nodes():
    assert parse_expr("add") is Op.get("add")
    assert parse_expr("nn.global_avg_pool2d") is Op.get("nn.global_avg_pool2d")
    assert parse_expr("qnn.quantize") is Op.get("qnn.quantize")


def test_call_attributes_on_a_closure_call_are_kept():
    let = parse_expr('let %f = fn (%x) { %x }; %f(1, name="g")')
    assert let.body.op is let.var and let.body.attrs == {"name": "g"}


# ----- control flow -----------------------------------------------------------------------------------
def test_if_else_with_scoped_branches():
    expr = parse_expr("if (True) { let %x = 1; %x } else { 2 }")
    assert isinstance(expr, If)
    assert scalar(expr.cond) == (True, "bool")
    assert isinstance(expr.true_branch, Let) and expr.true_branch.body is expr.true_branch.var
    assert scalar(expr.false_branch) == (2, "int32")


LIST_MODULE = HEADER + """
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @second[A](%l: List[A], %d: A) -> A {
  match (%l) {
    Cons(_, Cons(%h: A, _)) => %h,
    Cons(%only, Nil) => %d,
    _ => %d,
  }
}

def @pairs(%p: (int32, int32)) -> int32 {
  match? (%p) {
    (%a, %b) => %a + %b
  }
}

def @main() -> List[int32] {
  Cons(1, Nil)
}
"""


def test_adt_definition():
    mod = parse(LIST_MODULE)
    (gtv,) = mod.type_definitions
    data = mod.type_definitions[gtv]
    assert gtv.name_hint == "List"
    (a,) = data.type_vars
    cons, nil = data.constructors
    assert (cons.name_hint, cons.tag, nil.name_hint, nil.tag) == ("Cons", 0, "Nil", 1)
    assert cons.inputs[0] is a
    assert cons.inputs[1] == TypeCall(gtv, [a]) and cons.inputs[1].args[0] is a
    assert nil.inputs == () and cons.belong_to == gtv
    assert mod.get_constructor("Cons") is cons


def test_match_patterns_and_constructor_values():
    mod = parse(LIST_MODULE)
    cons = mod.get_constructor("Cons")
    nil = mod.get_constructor("Nil")
    second = mod["second"]
    match = second.body
    assert isinstance(match, Match) and match.complete and match.data is second.params[0]
    first, only, wildcard = match.clauses
    assert isinstance(first.lhs, PatternConstructor) and first.lhs.constructor is cons
    assert isinstance(first.lhs.patterns[0], PatternWildcard)
    nested = first.lhs.patterns[1]
    assert nested.constructor is cons
    head = nested.patterns[0]
    assert isinstance(head, PatternVar) and head.var.type_annotation is second.type_params[0]
    assert first.rhs is head.var
    assert only.lhs.patterns[1].constructor is nil and only.lhs.patterns[1].patterns == ()
    assert isinstance(wildcard.lhs, PatternWildcard) and wildcard.rhs is second.params[1]

    partial = mod["pairs"].body
    assert not partial.complete
    (clause,) = partial.clauses
    assert isinstance(clause.lhs, PatternTuple)
    a, b = (p.var for p in clause.lhs.patterns)
    assert clause.rhs.args[0] is a and clause.rhs.args[1] is b

    body = mod["main"].body
    assert isinstance(body, Call) and body.op is cons and body.attrs is None
    # A bare nullary constructor denotes its value (a call with no arguments), as in TVM.
    assert isinstance(body.args[1], Call) and body.args[1].op is nil and body.args[1].args == ()
    assert mod["main"].ret_type == TypeCall(GlobalTypeVar("List"), [TensorType((), "int32")])


def test_unapplied_constructor_is_a_constructor_node():
    mod = parse(HEADER + "type L { C(int32) }\ndef @main() { let %f = C; %f(1) }")
    assert isinstance(mod["main"].body.value, Constructor)


def test_types_and_functions_may_be_used_before_their_definition():
    mod = parse(HEADER + "def @main() -> T { @mk() }\ndef @mk() -> T { A }\ntype T { A }")
    assert mod["main"].body.op == GlobalVar("mk")
    assert mod["mk"].body.op is mod.get_constructor("A")


def test_extern_type():
    init = IRModule()
    mod = parse(HEADER + "extern type Storage\ndef @main(%s: Storage[]) { %s }", init_module=init)
    storage = mod.extern_types["Storage"]
    assert mod["main"].params[0].type_annotation == TypeCall(storage, [])
    assert init.extern_types == {}


def test_extern_type_from_init_module():
    init = IRModule()
    storage = init.add_extern_type("Storage")
    mod = parse(HEADER + "def @main(%s: Storage[]) { %s }", init_module=init)
    assert mod["main"].params[0].type_annotation.func is storage


# ----- types ---------------------------------------------------------------------------------------------
def annotation(type_text: str):
    return parse_expr(f"let %v: {type_text} = (); ()").var.type_annotation


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Tensor[(1, 2), float32]", TensorType((1, 2), "float32")),
        ("Tensor[(1), float32]", TensorType((1,), "float32")),
        ("Tensor[(), float32]", TensorType((), "float32")),
        ("Tensor[(?, 3), int8]", TensorType((AnyDim(), 3), "int8")),
        ("float32", TensorType((), "float32")),
        ("int", TensorType((), "int32")),
        ("bool", TensorType((), "bool")),
        ("int8x4", TensorType((), "int8x4")),
        ("uint1x4", TensorType((), "uint1x4")),
        ("(int32,)", TupleType([TensorType((), "int32")])),
        ("(int32, bool)", TupleType([TensorType((), "int32"), TensorType((), "bool")])),
        ("()", TupleType([])),
        ("fn (int32) -> int32", FuncType([TensorType((), "int32")], TensorType((), "int32"))),
        ("fn () -> int32", FuncType([], TensorType((), "int32"))),
        ("ref(float16)", RefType(TensorType((), "float16"))),
    ],
)
def test_types(text, expected):
    assert annotation(text) == expected


def test_incomplete_and_polymorphic_function_types():
    assert isinstance(annotation("_"), IncompleteType)
    poly = annotation("fn [A](A) -> A")
    assert isinstance(poly, FuncType)
    (a,) = poly.type_params
    assert poly.arg_types[0] is a and poly.ret_type is a


def test_dynamic_dimension_is_any():
    ty = annotation("Tensor[(?, 1), float32]")
    assert isinstance(ty.shape[0], AnyDim) and ty.shape[1] == 1


# ----- globals, meta, comments, init module -----------------------------------------------------------
def test_global_references():
    assert parse_expr("@foo") == GlobalVar("foo")
    mod = parse(HEADER + "def @main(%x: int32) { @id(%x) }\ndef @id(%y: int32) { %y }")
    assert [gv.name_hint for gv in mod.functions] == ["main", "id"]
    assert mod["main"].body.op == GlobalVar("id")


def test_meta_constants_from_init_meta_table():
    data = np.arange(6, dtype="float32").reshape(2, 3)
    table = {"relay.Constant": [Constant(np.zeros(1, "int8")), Constant(data)]}
    expr = parse_expr(
        "add(meta[relay.Constant][1] /* ty=Tensor[(2, 3), float32] */, meta[relay.Constant][1])", init_meta_table=table
    )
    assert expr.args[0] is table["relay.Constant"][1] and expr.args[1] is expr.args[0]


def test_metadata_section_provides_the_meta_table():
    data = np.array([[1.5, -2.0, 3.0], [0.0, 4.25, -1.0]], dtype="float32")
    meta = {
        "relay.Constant": [{"dtype": "float32", "shape": [2, 3], "data": base64.b64encode(data.tobytes()).decode()}],
        "VirtualDevice": [None],
    }
    src = (
        HEADER + "def @main() {\n  on_device(meta[relay.Constant][0], virtual_device=meta[VirtualDevice][0])\n}\n"
        "#[metadata]\n" + json.dumps(meta)
    )
    call = parse(src)["main"].body
    np.testing.assert_array_equal(call.args[0].data, data)
    assert call.attrs.virtual_device == MetaRef("VirtualDevice", 0)


def test_comments():
    src = """
    // a line comment
    /* a block /* nested */ comment */
    add(1 /* ty=int32 */, 2) // trailing
    """
    call = parse_expr(src)
    assert shape_of(call) == ("add", 1, 2)
    assert (call.span.line, call.span.column) == (4, 5)


def test_init_module_definitions_are_visible_and_not_mutated():
    base = parse(HEADER + "type Box { B(int32) }\ndef @get(%b: Box) -> int32 { match (%b) { B(%v) => %v } }")
    mod = parse(HEADER + "def @main() -> int32 { @get(B(7)) }", init_module=base)
    assert set(gv.name_hint for gv in mod.functions) == {"get", "main"}
    assert mod["main"].body.args[0].op is base.get_constructor("B")
    assert mod["get"] is base["get"]
    assert "main" not in base


def test_fromtext_chooses_module_or_expression():
    assert isinstance(fromtext(HEADER + "def @main() { 1 }"), IRModule)
    assert scalar(fromtext(HEADER + "1")) == (1, "int32")


# ----- spans ----------------------------------------------------------------------------------------------
def test_spans_point_at_first_tokens():
    src = HEADER + (
        "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
        "  %0 = add(%x, 1f);\n"
        "  let %y = multiply(%0, %0);\n"
        "  (%y, %x).0\n"
        "}\n"
    )
    func = parse(src, source_name="spans.relay")["main"]
    assert func.span.source_name == "spans.relay"
    assert (func.span.line, func.span.column, func.span.end_line, func.span.end_column) == (2, 1, 6, 2)
    x = func.params[0]
    assert (x.span.line, x.span.column, x.span.end_column) == (2, 11, 13)
    assert (x.type_annotation.span.line, x.type_annotation.span.column) == (2, 15)
    let = func.body
    assert (let.span.line, let.span.column, let.span.end_line, let.span.end_column) == (4, 3, 5, 13)
    multiply = let.value
    assert (multiply.span.line, multiply.span.column, multiply.span.end_column) == (4, 12, 28)
    add = multiply.args[0]
    assert (add.span.line, add.span.column, add.span.end_column) == (3, 8, 19)
    one = add.args[1]
    assert (one.span.line, one.span.column, one.span.end_column) == (3, 16, 18)
    projection = let.body
    assert (projection.span.line, projection.span.column, projection.span.end_column) == (5, 3, 13)


# ----- size and depth ----------------------------------------------------------------------------------------
def test_deep_nesting_parses():
    depth = 3000
    expr = parse_expr("free_var %x: float32; " + "negative(" * depth + "%x" + ")" * depth)
    count = 0
    while isinstance(expr, Call):
        expr, count = expr.args[0], count + 1
    assert count == depth and isinstance(expr, Var)
    nested = parse_expr("(" * depth + "1" + ")" * depth)
    assert scalar(nested) == (1, "int32")


def test_long_binding_chain_parses():
    lines = ["free_var %a: float32;", "%0 = add(%a, %a);", "%1 = add(%0, %a);"]
    lines += [f"%{i} = add(%{i - 1}, %{i - 2});" for i in range(2, 5000)]
    expr = parse_expr("\n".join(lines) + "\n%4999")
    assert op_name(expr) == "add" and expr.args[1] is expr.args[0].args[0]


# ----- the real-world corpus ------------------------------------------------------------------------------
_INFIX_OPS = {
    "add",
    "subtract",
    "multiply",
    "divide",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
}
# Constant values are irrelevant to parsing: big models get small stand-in tensors (see corpus_support).
_ELEMENT_BUDGET = 40_000_000


def _op_counts(root) -> dict:
    from collections import Counter

    from transpile.relay.expr import Clause, Expr
    from transpile.relay.node import Node

    counts, seen, stack = Counter(), set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Call) and isinstance(node.op, Op):
            counts[node.op.name] += 1
        children = list(Node.fields(node).values())
        if isinstance(node, Call) and node.attrs:
            children += list(node.attrs.values())
        for child in children:
            for item in child if isinstance(child, tuple) else (child,):
                if isinstance(item, (Expr, Clause)):
                    stack.append(item)
    return counts


@pytest.mark.parametrize("record", records(expected="ok"), ids=lambda r: r["file"])
def test_corpus_file_parses(corpus_dir, record):
    text = (corpus_dir / record["file"]).read_text()
    init = init_module_or_stand_in(record, text)
    table = meta_table(record, element_budget=_ELEMENT_BUDGET)
    if record["kind"] == "module":
        result = parse(text, source_name=record["file"], init_module=init, init_meta_table=table)
        assert isinstance(result, IRModule)
        assert result.functions or result.type_definitions or result.extern_types
        roots = list(result.functions.values())
    else:
        result = parse_expr(text, source_name=record["file"], init_module=init, init_meta_table=table)
        roots = [result]
    counts = {}
    for root in roots:
        for name, n in _op_counts(root).items():
            counts[name] = counts.get(name, 0) + n
    # The manifest counts operator calls in the source text (and constructor calls as well);
    # each written call must be exactly one parsed Call node (graph bindings share, never copy).
    constructors = {c.name_hint for c in result.constructors()} if isinstance(result, IRModule) else set()
    for name, expected in record["op_counts"].items():
        if name not in constructors:
            assert counts.get(name, 0) == expected, name
    assert set(counts) - set(record["op_counts"]) <= _INFIX_OPS


def test_long_graph_binding_chain_from_the_corpus(corpus_dir):
    text = (corpus_dir / "test_pass_plan_devices__62.relay").read_text()
    body = parse(text)["main"].body
    depth = 0
    while isinstance(body, Call) and op_name(body) == "add":
        body, depth = body.args[0], depth + 1
    assert depth >= 1555


def test_extern_type_is_a_type_definition_without_constructors_as_in_tvm():
    mod = parse('#[version = "0.0.5"]\nextern type T[A]\n')
    (data,) = [d for g, d in mod.type_definitions.items() if g.name_hint == "T"]
    assert [v.name_hint for v in data.type_vars] == ["A"] and not data.constructors
    assert "T" in mod.extern_types
    assert "extern type T[A]" in mod.astext()


def test_an_underscore_annotation_equals_no_annotation():
    from transpile.relay.expr import Let, Tuple, Var
    from transpile.relay.structural import assert_structural_equal

    unit = Tuple([])
    assert_structural_equal(parse_expr("let %v : _ = (); ()"), Let(Var("v"), unit, unit), map_free_vars=True)
