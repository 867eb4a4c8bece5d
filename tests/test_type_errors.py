"""Ill-typed programs: each error names the types involved and points at the offending expression."""

from __future__ import annotations

import pytest

from transpile.errors import RelayTypeError, Span
from transpile.relay.expr import (
    Call,
    Clause,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    RefCreate,
    RefWrite,
    Tuple,
    TupleGetItem,
    TypeData,
    Var,
    const,
    var,
)
from transpile.relay.module import IRModule
from transpile.relay.op.registry import make_call
from transpile.relay.printer import type_to_text
from transpile.relay.ty import FuncType, GlobalTypeVar, TensorType, TupleType, TypeCall, TypeVar, scalar_type
from transpile.relay.typing import infer_type, infer_type_expr

F32 = scalar_type("float32")
I32 = scalar_type("int32")


def at(line, column):
    return Span("prog.rly", line, column)


def op(name, *args, span=None, **attrs):
    return make_call(name, list(args), attrs, span=span)


def check_error(run, *fragments, line, column):
    with pytest.raises(RelayTypeError) as info:
        run()
    err = info.value
    for fragment in fragments:
        assert fragment in err.message, f"{fragment!r} not in {err.message!r}"
    assert (err.source_name, err.line, err.column) == ("prog.rly", line, column), str(err)
    return err


def t(ty):
    return type_to_text(ty)


def list_module():
    mod = IRModule()
    lst = GlobalTypeVar("List")
    a = TypeVar("A")
    mod.add_type_data(
        lst, TypeData(lst, [a], [Constructor("Cons", [a, TypeCall(lst, [a])], lst), Constructor("Nil", [], lst)])
    )
    _, cons, nil = mod.get_type("List")
    return mod, lst, cons, nil


def test_argument_mismatch_names_both_types_and_the_argument():
    mod = IRModule()
    a, b = var("a", shape=(3,)), var("b", shape=(3,))
    mod["f"] = Function([a, b], op("add", a, b), span=at(1, 1))
    bad = const([1, 2, 3], "int32", span=at(4, 22))
    mod["main"] = Function([], Call(GlobalVar("f"), [const([1.0, 2.0, 3.0]), bad], span=at(4, 3)), span=at(3, 1))
    err = check_error(
        lambda: infer_type(mod),
        f"type mismatch: expected {t(TensorType((3,)))} but found {t(TensorType((3,), 'int32'))}",
        "in argument 2 of @f",
        line=4,
        column=22,
    )
    assert "Tensor[(3), float32]" in err.message and "Tensor[(3), int32]" in err.message


def test_if_condition_must_be_a_bool_scalar():
    x = var("x", shape=(2,), dtype="bool")
    fn = Function([x], If(x, const(1), const(2), span=at(2, 3)), span=at(1, 1))
    check_error(
        lambda: infer_type_expr(fn),
        f"expected {t(scalar_type('bool'))} but found {t(TensorType((2,), 'bool'))}",
        "in the condition of if",
        line=2,
        column=3,  # the condition (a Var without span) falls back to the if
    )


def test_if_branches_must_agree():
    c = var("c", "bool")
    fn = Function([c], If(c, const(1), const(2.0, span=at(5, 12)), span=at(3, 3)), span=at(1, 1))
    check_error(
        lambda: infer_type_expr(fn),
        f"the true branch has type {t(I32)} but the false branch has type {t(F32)}",
        line=5,
        column=12,
    )


def test_return_annotation_mismatch():
    mod = IRModule()
    x = var("x", "int32")
    body = op("add", x, x, span=at(2, 3))
    mod["f"] = Function([x], body, F32, span=at(1, 1))
    check_error(
        lambda: infer_type(mod),
        f"function @f returns {t(I32)} but is annotated to return {t(F32)}",
        line=2,
        column=3,
    )


def test_operator_outside_the_registry():
    x = var("x", shape=(2,))
    call = Call(Op.get("on_device"), [x], {"virtual_device": None}, span=at(7, 9))
    check_error(
        lambda: infer_type_expr(Function([x], call, span=at(6, 1))),
        "operator on_device is not in the operator registry",
        line=7,
        column=9,
    )


def test_operator_argument_count():
    x = var("x", shape=(2,))
    call = Call(Op.get("add"), [x, x, x], span=at(2, 5))
    check_error(
        lambda: infer_type_expr(Function([x], call)),
        "operator add expects 2 arguments but 3 were given",
        line=2,
        column=5,
    )


def test_relation_error_is_reported_at_the_call():
    x, y = var("x", shape=(2, 3)), var("y", shape=(4,))
    call = op("add", x, y, span=at(3, 10))
    with pytest.raises(RelayTypeError) as info:
        infer_type_expr(Function([x, y], call))
    assert (info.value.line, info.value.column) == (3, 10)
    assert "add" in info.value.message and "(2, 3)" in info.value.message and "(4)" in info.value.message


def test_relation_blocked_on_unknown_argument():
    x = Var("x")
    call = op("add", x, const(1.0), span=at(1, 14))
    check_error(
        lambda: infer_type_expr(Function([x], call, span=at(1, 1))),
        "cannot infer argument types of add (argument 1 has an unknown type)",
        line=1,
        column=14,
    )


def test_unused_unannotated_parameter_cannot_be_inferred():
    x = Var("x", span=at(2, 8))
    check_error(
        lambda: infer_type_expr(Function([x], const(1), span=at(2, 1))),
        "cannot infer the type of %x",
        line=2,
        column=8,
    )


def test_let_annotation_mismatch():
    v = Var("v", TensorType((2, 2)), span=at(3, 7))
    value = const([1.0, 2.0], span=at(3, 28))
    fn = Function([], Let(v, value, v))
    check_error(
        lambda: infer_type_expr(fn),
        f"let %v is annotated {t(TensorType((2, 2)))} but its value has type {t(TensorType((2,)))}",
        "rank 2 vs 1",
        line=3,
        column=28,
    )


def test_calling_a_tensor():
    x = Var("x", F32, span=at(4, 3))
    fn = Function([x], Call(x, [const(2.0)], span=at(4, 3)))
    check_error(
        lambda: infer_type_expr(fn),
        f"cannot call %x: it has type {t(F32)}, which is not a function type",
        line=4,
        column=3,
    )


def test_wrong_number_of_arguments_to_a_global():
    mod = IRModule()
    x = var("x", "int32")
    mod["f"] = Function([x], x)
    mod["main"] = Function([], Call(GlobalVar("f"), [const(1), const(2)], span=at(9, 4)))
    check_error(lambda: infer_type(mod), "@f expects 1 argument but 2 were given", line=9, column=4)


def test_match_clauses_must_agree():
    mod, lst, cons, nil = list_module()
    xs = Var("xs", TypeCall(lst, [I32]))
    h = Var("h")
    body = Match(
        xs,
        [
            Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(Var("t"))]), h),
            Clause(PatternConstructor(nil), const(0.5, span=at(6, 12))),
        ],
        span=at(4, 3),
    )
    mod["main"] = Function([xs], body)
    check_error(
        lambda: infer_type(mod),
        f"clause 2 of match has type {t(F32)} but the earlier clauses have type {t(I32)}",
        line=6,
        column=12,
    )


def test_pattern_of_another_type():
    mod, lst, cons, nil = list_module()
    opt = GlobalTypeVar("Option")
    a = TypeVar("A")
    mod.add_type_data(opt, TypeData(opt, [a], [Constructor("Some", [a], opt), Constructor("None", [], opt)]))
    some = mod.get_constructor("Some")
    xs = Var("xs", TypeCall(lst, [I32]))
    pattern = PatternConstructor(some, [PatternVar(Var("v"))], span=at(3, 5))
    mod["main"] = Function([xs], Match(xs, [Clause(pattern, const(1))]))
    err = check_error(lambda: infer_type(mod), "in the pattern Some", line=3, column=5)
    assert t(TypeCall(lst, [I32])) in err.message and "Option" in err.message


def test_tuple_projection_errors():
    pair = Var("pair", TupleType([F32, I32]))
    fn = Function([pair], TupleGetItem(pair, 2, span=at(2, 9)))
    check_error(
        lambda: infer_type_expr(fn),
        f"tuple index .2 is out of range for type {t(TupleType([F32, I32]))} with 2 fields",
        line=2,
        column=9,
    )
    x = var("x", "float32")
    fn = Function([x], TupleGetItem(x, 0, span=at(5, 2)))
    check_error(
        lambda: infer_type_expr(fn), f"cannot take field .0 of a value of non-tuple type {t(F32)}", line=5, column=2
    )


def test_undefined_global():
    mod = IRModule()
    mod["main"] = Function([], Call(GlobalVar("missing", span=at(2, 3)), [], span=at(2, 3)))
    check_error(lambda: infer_type(mod), "global function @missing is not defined in the module", line=2, column=3)


def test_global_without_type_params_is_monomorphic():
    mod = IRModule()
    x = Var("x")
    mod["id"] = Function([x], x)
    second = const(True, span=at(3, 20))
    mod["main"] = Function([], Tuple([Call(GlobalVar("id"), [const(1)]), Call(GlobalVar("id"), [second])]))
    check_error(
        lambda: infer_type(mod),
        f"type mismatch: expected {t(I32)} but found {t(scalar_type('bool'))} in argument 1 of @id",
        line=3,
        column=20,
    )


def test_self_application_is_an_infinite_type():
    x = Var("x")
    inner = Call(x, [x], span=at(1, 20))
    check_error(
        lambda: infer_type_expr(Function([x], inner)),
        "a type cannot contain itself",
        "in argument 1 of %x",
        line=1,
        column=20,
    )


def test_adt_arity_in_annotations():
    mod, lst, _, _ = list_module()
    bad = TypeCall(lst, [I32, I32], span=at(1, 15))
    mod["main"] = Function([Var("xs", bad)], const(0))
    check_error(lambda: infer_type(mod), "type List expects 1 type argument but 2 were given", line=1, column=15)


def test_ref_write_of_the_wrong_type():
    r = Var("r")
    value = const(1, span=at(2, 20))
    fn = Function([], Let(r, RefCreate(const(0.5)), RefWrite(r, value)))
    check_error(
        lambda: infer_type_expr(fn),
        f"type mismatch: expected {t(F32)} but found {t(I32)} in the value stored by ref_write",
        line=2,
        column=20,
    )


def test_constructor_pattern_field_count():
    mod, lst, cons, _ = list_module()
    xs = Var("xs", TypeCall(lst, [I32]))
    pattern = PatternConstructor(cons, [PatternVar(Var("h"))], span=at(2, 4))
    mod["main"] = Function([xs], Match(xs, [Clause(pattern, const(1))], complete=False))
    check_error(lambda: infer_type(mod), "constructor Cons has 2 fields but the pattern has 1", line=2, column=4)


def test_missing_span_falls_back_to_the_enclosing_function():
    x = var("x", shape=(2,))
    y = var("y", shape=(3,))
    fn = Function([x, y], Tuple([op("subtract", x, y)]), span=at(8, 1))
    with pytest.raises(RelayTypeError) as info:
        infer_type_expr(fn)
    assert (info.value.line, info.value.column) == (8, 1)


def test_polymorphic_body_cannot_use_tensor_operators_on_type_variables():
    a = TypeVar("A")
    x = Var("x", a)
    call = op("add", x, x, span=at(1, 30))
    err = check_error(lambda: infer_type_expr(Function([x], call, a, [a])), "add", line=1, column=30)
    assert "A" in err.message


def test_function_type_arity_mismatch():
    g = Var("g", FuncType([F32, F32], F32))
    x = var("x", "float32")
    one_arg = Function([x], x, span=at(2, 13))
    apply = Var("apply")
    apply_fn = Function([g], Call(g, [const(1.0), const(2.0)]))
    prog = Function([], Let(apply, apply_fn, Call(apply, [one_arg])))
    check_error(
        lambda: infer_type_expr(prog), "functions of 2 and 1 parameters", "in argument 1 of %apply", line=2, column=13
    )


def test_structured_mismatch_names_the_inner_conflict():
    g = Var("g", FuncType([TupleType([F32, TensorType((2, 3))])], F32))
    arg = Tuple([const(1.0), var("m", shape=(2, 4))], span=at(6, 6))
    check_error(
        lambda: infer_type_expr(Function([], Call(g, [arg]))),
        "dimension 1 is 3 vs 4",
        f"{t(TensorType((2, 3)))} vs {t(TensorType((2, 4)))}",
        line=6,
        column=6,
    )


# ----- programs in Relay text: positions come from the parser ----------------------------------------

HEADER = '#[version = "0.0.5"]\n'
LIST_AND_OPTION = """type List[A] {
  Cons(A, List[A]),
  Nil,
}
type Option[A] {
  Some(A),
  None,
}
"""

TEXT_CASES = {
    "argument": (
        """def @f(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) {
  add(%a, %b)
}
def @main(%x: Tensor[(3), float32]) {
  @f(%x, cast(%x, dtype="int32"))
}
""",
        ["expected Tensor[(3), float32] but found Tensor[(3), int32] in argument 2 of @f"],
        (6, 10),
    ),
    "argument_var": (
        """def @f(%a: Tensor[(3), float32]) {
  %a
}
def @main(%x: Tensor[(3), int32]) {
  @f(%x)
}
""",
        ["expected Tensor[(3), float32] but found Tensor[(3), int32] in argument 1 of @f"],
        (6, 3),  # a variable's node is shared by its uses: the call is reported
    ),
    "return": (
        """def @f(%x: int32) -> float32 {
  let %y = add(%x, 1);
  %y
}
""",
        ["function @f returns int32 but is annotated to return float32"],
        (3, 12),
    ),
    "condition": (
        """def @main(%x: Tensor[(2), bool]) {
  if (%x) { 1 } else { 2 }
}
""",
        ["expected bool but found Tensor[(2), bool] in the condition of if"],
        (3, 3),
    ),
    "branches": (
        """def @main(%c: bool, %x: float32) {
  if (%c) { %x } else { 1 }
}
""",
        ["the true branch has type float32 but the false branch has type int32"],
        (3, 25),
    ),
    "unregistered": (
        """def @main(%x: Tensor[(2), float32]) {
  %0 = negative(%x);
  on_device(%0, virtual_device=meta[VirtualDevice][0])
}
""",
        ["operator on_device is not in the operator registry"],
        (4, 3),
    ),
    "relation": (
        """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0, %y);
  %1
}
""",
        ["add", "(2, 3)", "(4)", "broadcast"],
        (4, 8),
    ),
    "blocked": (
        """def @main() {
  let %f = fn (%x) { add(%x, 1f) };
  0
}
""",
        ["cannot infer argument types of add (argument 1 has an unknown type)"],
        (3, 22),
    ),
    "clauses": (
        LIST_AND_OPTION + """def @len[A](%l: List[A]) -> int32 {
  match (%l) {
    Cons(_, %t) => add(@len(%t), 1),
    Nil => 0f,
  }
}
""",
        ["clause 2 of match has type float32 but the earlier clauses have type int32"],
        (13, 12),
    ),
    "pattern": (
        LIST_AND_OPTION + """def @f(%l: List[int32]) -> int32 {
  match? (%l) {
    Some(%x) => %x,
  }
}
""",
        ["expected List[int32] but found Option[", "in the pattern Some"],
        (12, 5),
    ),
    "let_annotation": (
        """def @main(%x: Tensor[(2, 2), float32]) {
  let %y: Tensor[(4), float32] = %x;
  %y
}
""",
        ["let %y is annotated Tensor[(4), float32] but its value has type Tensor[(2, 2), float32]", "rank 1 vs 2"],
        (3, 7),
    ),
    "projection": (
        """def @main(%p: (float32, int32)) {
  %p.2
}
""",
        ["tuple index .2 is out of range for type (float32, int32) with 2 fields"],
        (3, 3),
    ),
    "monomorphic_global": (
        """def @id(%x) { %x }
def @main() {
  (@id(1), @id(2f))
}
""",
        ["expected int32 but found float32 in argument 1 of @id"],
        (4, 16),
    ),
    "ref_write": (
        """def @main() {
  let %r = ref(0f);
  ref_write(%r, 1);
  ref_read(%r)
}
""",
        ["expected float32 but found int32 in the value stored by ref_write"],
        (4, 17),
    ),
    "not_a_function": (
        """def @main(%x: float32) {
  %x(1f)
}
""",
        ["cannot call %x: it has type float32, which is not a function type"],
        (3, 3),
    ),
    "not_exhaustive": (
        LIST_AND_OPTION + """def @f(%l: List[(int32, Option[int32])]) -> int32 {
  match (%l) {
    Cons((%x, Some(_)), _) => %x,
    Nil => 0,
  }
}
""",
        ["match is not exhaustive: no clause matches Cons((_, None), _)", "match?"],
        (11, 3),
    ),
    "unknown_param": (
        """def @main(%x, %y: int32) {
  %y
}
""",
        ["cannot infer the type of %x"],
        (2, 11),
    ),
}


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_text_program_errors(name):
    from transpile.relay.expr import const as make_const
    from transpile.relay.parser import parse

    body, fragments, (line, column) = TEXT_CASES[name]
    table = {"relay.Constant": [make_const([1, 2, 3], "int32")], "VirtualDevice": [None]}
    mod = parse(HEADER + body, source_name=f"{name}.rly", init_meta_table=table)
    with pytest.raises(RelayTypeError) as info:
        infer_type(mod)
    err = info.value
    for fragment in fragments:
        assert fragment in err.message, f"{fragment!r} not in {err.message!r}"
    assert (err.source_name, err.line, err.column) == (f"{name}.rly", line, column), str(err)
    assert str(err).startswith(f"{name}.rly:{line}:{column}: ")
