"""Type inference: inferred types on every node, polymorphism, ADTs, recursion, operator relations."""

from __future__ import annotations

import time

import pytest

from transpile.relay.expr import (
    Call,
    Clause,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
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
from transpile.relay.transform import InferType, Sequential, module_pass
from transpile.relay.ty import (
    Any,
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
    scalar_type,
)
from transpile.relay.typing import infer_type, infer_type_expr

F32 = scalar_type("float32")
I32 = scalar_type("int32")
BOOL = scalar_type("bool")
UNIT = TupleType([])


def op(name, *args, **attrs):
    return make_call(name, list(args), attrs)


def list_module():
    """type List[A] { Cons(A, List[A]), Nil } built by hand, as the Prelude defines it."""
    mod = IRModule()
    lst = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(lst, [a])], lst)
    nil = Constructor("Nil", [], lst)
    mod.add_type_data(lst, TypeData(lst, [a], [cons, nil]))
    _, cons, nil = mod.get_type("List")
    return mod, lst, cons, nil


def list_of(lst, elem):
    return TypeCall(lst, [elem])


def make_list(cons, nil, *values):
    out = Call(nil, [])
    for v in reversed(values):
        out = Call(cons, [v, out])
    return out


# ----- operators ---------------------------------------------------------------------------------


def test_broadcast_relation_types_every_node():
    x = var("x", shape=(3, 4))
    y = var("y", shape=(4,))
    add = op("add", x, y)
    mul = op("multiply", add, const(2.0))
    fn = Function([x, y], mul)
    infer_type_expr(fn)
    assert x.checked_type == TensorType((3, 4), "float32")
    assert y.checked_type == TensorType((4,), "float32")
    assert add.checked_type == TensorType((3, 4), "float32")
    assert mul.args[1].checked_type == F32
    assert mul.checked_type == TensorType((3, 4), "float32")
    assert fn.checked_type == FuncType([x.checked_type, y.checked_type], TensorType((3, 4), "float32"))
    assert add.inferred_type_args_ == ()


def test_reduction_relations_through_calls():
    x = var("x", shape=(2, 3, 5))
    s = op("sum", x, axis=[1])
    m = op("mean", s, axis=[0], keepdims=True)
    fn = Function([x], Tuple([s, m]))
    infer_type_expr(fn)
    assert s.checked_type == TensorType((2, 5), "float32")
    assert m.checked_type == TensorType((1, 5), "float32")
    assert fn.checked_type.ret_type == TupleType([TensorType((2, 5)), TensorType((1, 5))])


def test_any_dims_unify_with_known_dims():
    x = var("x", shape=(Any(), 4))
    g = Var("g", FuncType([TensorType((2, 4))], F32))
    call = Call(g, [x])
    fn = Function([x], call)
    infer_type_expr(fn)
    assert fn.checked_type == FuncType([TensorType((Any(), 4))], F32)


# ----- functions, lets, closures -----------------------------------------------------------------


def test_unannotated_param_inferred_from_annotated_callee():
    f = Var("f", FuncType([TensorType((2,))], F32))
    x = Var("x")
    call = Call(f, [x])
    fn = Function([x], call)
    infer_type_expr(fn)
    assert x.checked_type == TensorType((2,), "float32")
    assert call.checked_type == F32
    assert fn.checked_type == FuncType([TensorType((2,))], F32)


def test_let_annotation_and_let_types():
    x = var("x", "float32")
    v = Var("v", F32)
    w = Var("w")
    body = Let(v, op("add", x, const(1.0)), Let(w, Tuple([v, const(3)]), w))
    fn = Function([x], body)
    infer_type_expr(fn)
    assert v.checked_type == F32
    assert w.checked_type == TupleType([F32, I32])
    assert body.checked_type == TupleType([F32, I32])
    assert body.body.checked_type == TupleType([F32, I32])


def test_let_bound_recursive_closure():
    # let %loop = fn (%i: int32) { if (%i < 10) { %loop(%i + 1) } else { %i } }; %loop(0)
    loop = Var("loop")
    i = var("i", "int32")
    recurse = Call(loop, [op("add", i, const(1))])
    cond = op("less", i, const(10))
    closure = Function([i], If(cond, recurse, i))
    call = Call(loop, [const(0)])
    prog = Function([], Let(loop, closure, call))
    infer_type_expr(prog)
    assert loop.checked_type == FuncType([I32], I32)
    assert closure.checked_type == FuncType([I32], I32)
    assert recurse.checked_type == I32
    assert cond.checked_type == BOOL
    assert call.checked_type == I32


def test_curried_calls_and_closures():
    a = var("a", "float32")
    b = var("b", "float32")
    inner = Function([b], op("add", a, b))
    adder = Var("adder")
    curried = Call(Call(adder, [const(1.0)]), [const(2.0)])
    prog = Function([], Let(adder, Function([a], inner), curried))
    infer_type_expr(prog)
    assert adder.checked_type == FuncType([F32], FuncType([F32], F32))
    assert curried.op.checked_type == FuncType([F32], F32)
    assert curried.checked_type == F32


def test_calling_a_param_of_unknown_type_makes_it_a_function():
    g = Var("g")
    v = var("v", "float32")
    apply = Function([g, v], Call(g, [v]))
    x = var("x", "float32")
    mod = IRModule()
    mod["apply"] = apply
    closure = Function([x], op("cast", x, dtype="int32"))
    main_call = Call(mod.get_global_var("apply"), [closure, const(1.5)])
    mod["main"] = Function([], main_call)
    infer_type(mod)
    assert g.checked_type == FuncType([F32], I32)
    assert apply.checked_type == FuncType([FuncType([F32], I32), F32], I32)
    assert main_call.checked_type == I32


def test_shared_subexpressions_are_typed_once():
    x = var("x", shape=(2,))
    y = op("add", x, x)
    z = op("multiply", y, y)
    fn = Function([x], z)
    infer_type_expr(fn)
    assert y.checked_type == TensorType((2,))
    assert z.checked_type == TensorType((2,))


# ----- globals and polymorphism ------------------------------------------------------------------


def test_polymorphic_identity_instantiated_at_two_types():
    mod = IRModule()
    a = TypeVar("A")
    x = Var("x", a)
    ident = GlobalVar("id")
    mod[ident] = Function([x], x, a, [a])
    c1 = Call(ident, [const(1.0)])
    c2 = Call(ident, [Tuple([const(1), const(True)])])
    mod["main"] = Function([], Tuple([c1, c2]))
    out = InferType()(mod)
    assert out is not mod
    assert out["id"].checked_type == FuncType([a], a, [a])
    assert x.checked_type is a
    assert c1.checked_type == F32 and c1.inferred_type_args_ == (F32,)
    assert c2.checked_type == TupleType([I32, BOOL])
    assert c2.inferred_type_args_ == (TupleType([I32, BOOL]),)
    assert out["main"].checked_type == FuncType([], TupleType([F32, TupleType([I32, BOOL])]))


def test_composition_of_globals_and_forward_references():
    # @quad is defined before @double and calls it twice; neither has a return annotation.
    mod = IRModule()
    x = var("x", shape=(3,))
    y = var("y", shape=(3,))
    double = GlobalVar("double")
    inner = Call(double, [y])
    outer = Call(double, [inner])
    mod["quad"] = Function([y], outer)
    mod[double] = Function([x], op("add", x, x))
    out = infer_type(mod)
    assert out["quad"].checked_type == FuncType([TensorType((3,))], TensorType((3,)))
    assert inner.checked_type == TensorType((3,))
    assert outer.inferred_type_args_ == ()


def test_unannotated_global_gets_its_type_from_its_callers():
    mod = IRModule()
    p = Var("p")
    mod["inc"] = Function([p], op("add", p, const(1.0)))
    call = Call(GlobalVar("inc"), [const(2.0)])
    mod["main"] = Function([], call)
    out = infer_type(mod)
    assert p.checked_type == F32
    assert out["inc"].checked_type == FuncType([F32], F32)


def test_global_recursion_sum_over_list():
    mod, lst, cons, nil = list_module()
    xs = Var("xs", list_of(lst, I32))
    h, t = Var("h"), Var("t")
    total = GlobalVar("sum")
    rec = Call(total, [t])
    body = Match(
        xs,
        [
            Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), op("add", h, rec)),
            Clause(PatternConstructor(nil), const(0)),
        ],
    )
    mod[total] = Function([xs], body)  # no return annotation: inferred as int32
    built = make_list(cons, nil, const(1), const(2))
    mod["main"] = Function([], Call(total, [built]))
    out = infer_type(mod)
    assert out["sum"].checked_type == FuncType([list_of(lst, I32)], I32)
    assert h.checked_type == I32
    assert t.checked_type == list_of(lst, I32)
    assert rec.checked_type == I32
    assert body.checked_type == I32
    assert built.checked_type == list_of(lst, I32)
    assert built.inferred_type_args_ == (I32,)
    assert built.args[1].args[1].inferred_type_args_ == (I32,)  # the Nil at the end


def test_map_with_closure_and_polymorphic_global_as_value():
    mod, lst, cons, nil = list_module()
    a, b = TypeVar("A"), TypeVar("B")
    f = Var("f", FuncType([a], b))
    xs = Var("xs", list_of(lst, a))
    x, rest = Var("x"), Var("rest")
    mapper = GlobalVar("map")
    mod[mapper] = Function(
        [f, xs],
        Match(
            xs,
            [
                Clause(
                    PatternConstructor(cons, [PatternVar(x), PatternVar(rest)]),
                    Call(cons, [Call(f, [x]), Call(mapper, [f, rest])]),
                ),
                Clause(PatternConstructor(nil), Call(nil, [])),
            ],
        ),
        list_of(lst, b),
        [a, b],
    )
    c = TypeVar("C")
    z = Var("z", c)
    ident = GlobalVar("id")
    mod[ident] = Function([z], z, c, [c])
    # main: (@map(fn (%e) { cast(%e + 1f, int32) }, [1f, 2f]), @map(@id, [True]))
    e = Var("e")
    closure = Function([e], op("cast", op("add", e, const(1.0)), dtype="int32"))
    mapped = Call(mapper, [closure, make_list(cons, nil, const(1.0), const(2.0))])
    ident_value = GlobalVar("id")  # a separate node: this occurrence gets its instance type
    mapped_id = Call(mapper, [ident_value, make_list(cons, nil, const(True))])
    mod["main"] = Function([], Tuple([mapped, mapped_id]))
    infer_type(mod)
    assert e.checked_type == F32
    assert closure.checked_type == FuncType([F32], I32)
    assert mapped.checked_type == list_of(lst, I32)
    assert mapped.inferred_type_args_ == (F32, I32)
    assert mapped_id.inferred_type_args_ == (BOOL, BOOL)
    assert ident_value.checked_type == FuncType([BOOL], BOOL)
    assert x.checked_type is a and rest.checked_type == list_of(lst, a)


def test_constructor_as_a_value():
    # def @main[A]() -> fn(A, List[A]) -> List[A] { Cons }   (from TVM's eta-expansion tests)
    mod, lst, cons, nil = list_module()
    a = TypeVar("A")
    fn_type = FuncType([a, list_of(lst, a)], list_of(lst, a))
    mod["main"] = Function([], cons, fn_type, [a])
    out = infer_type(mod)
    assert out["main"].checked_type == FuncType([], fn_type, [a])
    data = mod.type_definitions[lst]
    assert cons.checked_type == FuncType(cons.inputs, TypeCall(lst, data.type_vars), data.type_vars)


def test_nested_matches_on_nested_patterns():
    mod, lst, cons, nil = list_module()
    xs = Var("xs", list_of(lst, TupleType([F32, I32])))
    p, q, r, tail = Var("p"), Var("q"), Var("r"), Var("tail")
    inner = Match(
        tail,
        [
            Clause(PatternConstructor(cons, [PatternVar(r), PatternWildcard()]), TupleGetItem(r, 0)),
            Clause(PatternWildcard(), p),
        ],
    )
    outer = Match(
        xs,
        [
            Clause(
                PatternConstructor(cons, [PatternTuple([PatternVar(p), PatternVar(q)]), PatternVar(tail)]),
                inner,
            ),
            Clause(PatternConstructor(nil), const(0.0)),
        ],
    )
    mod["main"] = Function([xs], outer)
    out = infer_type(mod)
    assert p.checked_type == F32 and q.checked_type == I32
    assert tail.checked_type == list_of(lst, TupleType([F32, I32]))
    assert r.checked_type == TupleType([F32, I32])
    assert inner.checked_type == F32
    assert out["main"].checked_type.ret_type == F32


def test_nullary_adt_spelled_both_ways():
    mod = IRModule()
    nat = GlobalTypeVar("nat")
    z = Constructor("Z", [], nat)
    s = Constructor("S", [TypeCall(nat, [])], nat)
    mod.add_type_data(nat, TypeData(nat, [], [z, s]))
    _, z, s = mod.get_type("nat")
    a = Var("a", nat)  # bare GlobalTypeVar annotation
    b = Var("b", TypeCall(nat, []))
    pred = Var("pred")
    plus = GlobalVar("plus")
    body = Match(
        a,
        [
            Clause(PatternConstructor(z), b),
            Clause(PatternConstructor(s, [PatternVar(pred)]), Call(s, [Call(plus, [pred, b])])),
        ],
    )
    mod[plus] = Function([a, b], body, nat)
    two = Call(s, [Call(s, [Call(z, [])])])
    mod["main"] = Function([], Call(plus, [two, two]))
    out = infer_type(mod)
    canonical = TypeCall(nat, [])
    assert a.checked_type == canonical and b.checked_type == canonical
    assert pred.checked_type == canonical
    assert out["plus"].checked_type == FuncType([canonical, canonical], canonical)
    assert out["main"].checked_type.ret_type == canonical


def test_unconstrained_type_argument_defaults_to_unit():
    mod, lst, cons, nil = list_module()
    empty = Call(nil, [])
    mod["main"] = Function([], empty)
    out = infer_type(mod)
    assert empty.inferred_type_args_ == (UNIT,)
    assert out["main"].checked_type == FuncType([], list_of(lst, UNIT))


# ----- tuples and references ---------------------------------------------------------------------


def test_tuple_projection_including_deferred_projection():
    # let %first = fn (%pair) { %pair.0 }; %first((1f, 2))  -- the projection waits for %pair's type
    pair = Var("pair")
    proj = TupleGetItem(pair, 0)
    first = Var("first")
    call = Call(first, [Tuple([const(1.0), const(2)])])
    prog = Function([], Let(first, Function([pair], proj), call))
    infer_type_expr(prog)
    assert pair.checked_type == TupleType([F32, I32])
    assert proj.checked_type == F32
    assert call.checked_type == F32


def test_references():
    r = Var("r")
    unit = Var("u")
    read = RefRead(r)
    write = RefWrite(r, op("add", RefRead(r), const(1.0)))
    create = RefCreate(const(0.0))
    prog = Function([], Let(r, create, Let(unit, write, read)))
    infer_type_expr(prog)
    assert create.checked_type == RefType(F32)
    assert r.checked_type == RefType(F32)
    assert write.checked_type == UNIT and unit.checked_type == UNIT
    assert read.checked_type == F32


def test_reference_of_unknown_type_is_solved_by_a_later_write():
    # fn (%r) { let %u = %r := 1i; ref_read(%r) }
    r = Var("r")
    read = RefRead(r)
    prog = Function([r], Let(Var("u"), RefWrite(r, const(1)), read))
    infer_type_expr(prog)
    assert r.checked_type == RefType(I32)
    assert read.checked_type == I32


# ----- module plumbing ---------------------------------------------------------------------------


def test_infer_type_expr_uses_module_globals():
    mod = IRModule()
    x = var("x", shape=(2,))
    mod["neg"] = Function([x], op("negative", x))
    infer_type(mod)
    call = Call(mod.get_global_var("neg"), [var("v", shape=(2,))])
    assert infer_type_expr(call, mod) is call
    assert call.checked_type == TensorType((2,))


def test_sequential_runs_passes_in_order():
    seen = []

    @module_pass
    def record(mod):
        seen.append(mod["main"].checked_type)
        return mod

    x = var("x", "int32")
    mod = IRModule.from_expr(Function([x], op("add", x, x)))
    out = Sequential([InferType(), record])(mod)
    assert seen == [FuncType([I32], I32)]
    assert out["main"].checked_type == FuncType([I32], I32)


def test_deep_call_chain_is_linear():
    # 3000 nested calls (no lets) and a 3000-binding let chain: both must check quickly.
    x = var("x", shape=(4, 4))
    expr = x
    for _ in range(3000):
        expr = op("add", expr, const(1.0))
    fn = Function([x], expr)
    body = x
    bindings = []
    for i in range(3000):
        v = Var(f"v{i}")
        bindings.append((v, op("multiply", body, const(2.0))))
        body = v
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    fn2 = Function([x], body)
    start = time.perf_counter()
    infer_type_expr(fn)
    infer_type_expr(fn2)
    elapsed = time.perf_counter() - start
    assert fn.checked_type.ret_type == TensorType((4, 4))
    assert fn2.checked_type.ret_type == TensorType((4, 4))
    assert bindings[-1][0].checked_type == TensorType((4, 4))
    assert elapsed < 5.0


@pytest.mark.parametrize("n", [1, 2])
def test_tuple_input_operators_receive_the_tuple(n):
    from transpile.relay.op.registry import lookup

    if lookup("concatenate") is None:
        pytest.skip("concatenate is not registered yet")
    xs = [var(f"x{i}", shape=(2, 3)) for i in range(n + 1)]
    cat = op("concatenate", Tuple(xs), axis=0)
    fn = Function(xs, cat)
    infer_type_expr(fn)
    assert cat.checked_type == TensorType((2 * (n + 1), 3))


# ----- programs in Relay text --------------------------------------------------------------------

LIST_TEXT = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
"""


def parse(text):
    from transpile.relay.parser import parse as parse_module

    return parse_module(text, source_name="typing_test.rly")


def test_text_program_with_closures_over_a_polymorphic_fold():
    mod = parse(LIST_TEXT + """
def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match (%xs) {
    Cons(%h, %t) => @foldl(%f, %f(%acc, %h), %t),
    Nil => %acc,
  }
}
def @main(%v: Tensor[(3), float32]) {
  let %scale = 2f;
  let %step = fn (%acc, %x) { add(%acc, multiply(%x, %scale)) };
  let %l = Cons(%v, Cons(%v, Nil));
  @foldl(%step, zeros(shape=[3], dtype="float32"), %l)
}
""")
    out = infer_type(mod)
    main = out["main"]
    assert main.checked_type == FuncType([TensorType((3,))], TensorType((3,)))
    step = main.body.body.var
    assert step.name_hint == "step"
    assert step.checked_type == FuncType([TensorType((3,)), TensorType((3,))], TensorType((3,)))
    call = main.body.body.body.body
    assert call.inferred_type_args_ == (TensorType((3,)), TensorType((3,)))
    fold_type = out["foldl"].checked_type
    a, b = fold_type.type_params
    assert fold_type.arg_types[2] == TypeCall(GlobalTypeVar("List"), [b])
    assert fold_type.ret_type is a


def test_prelude_functions_have_their_declared_types():
    from transpile.relay.prelude import Prelude

    mod = IRModule()
    prelude = Prelude(mod)
    out = infer_type(prelude.mod if hasattr(prelude, "mod") else mod)
    lst = GlobalTypeVar("List")
    length = out["length"].checked_type
    (a,) = length.type_params
    assert length == FuncType([TypeCall(lst, [a])], I32, [a])
    assert out["sum"].checked_type == FuncType([TypeCall(lst, [I32])], I32)
    compose = out["compose"].checked_type
    a, b, c = compose.type_params
    assert compose == FuncType([FuncType([b], c), FuncType([a], b)], FuncType([a], c), [a, b, c])


def test_exhaustive_matches_over_nested_tuples_and_constructors_are_accepted():
    mod = parse(LIST_TEXT + """
def @pairs(%a: (List[()], List[int32])) -> int32 {
  match (%a) {
    (Cons((), Nil), Cons(%x, _)) => %x,
    (Nil, _) => 1,
    (Cons(_, Cons(_, _)), _) => 2,
    (_, Nil) => 3,
  }
}
def @partial(%l: List[int32]) -> int32 {
  match? (%l) {
    Cons(%h, _) => %h,
  }
}
""")
    out = infer_type(mod)
    assert out["pairs"].checked_type.ret_type == I32
    assert out["partial"].checked_type.ret_type == I32


def test_shared_global_var_node_carries_the_generic_type():
    mod = IRModule()
    a = TypeVar("A")
    x = Var("x", a)
    ident = GlobalVar("id")
    mod[ident] = Function([x], x, a, [a])
    shared = GlobalVar("id")
    first, second = Call(shared, [const(1)]), Call(shared, [const(2.0)])
    mod["main"] = Function([], Tuple([first, second]))
    out = infer_type(mod)
    assert shared.checked_type == FuncType([a], a, [a])
    assert ident.checked_type == out["id"].checked_type
    assert (first.inferred_type_args_, second.inferred_type_args_) == ((I32,), (F32,))
