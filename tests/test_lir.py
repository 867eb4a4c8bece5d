"""The little IR: hand-built programs print as golden text, and the verifier names every malformed part."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from transpile import TranspileError
import transpile.relay as relay
from transpile.errors import Span
from transpile.lir import (
    UNIT,
    AdtDef,
    AdtField,
    AdtT,
    AtomValue,
    Block,
    Call,
    Case,
    ClosureCall,
    ClosureT,
    ConstDef,
    ConstRef,
    CtorDef,
    Fail,
    FunctionDef,
    If,
    KernelCall,
    Let,
    LIRError,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Param,
    Program,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    RefT,
    TensorType,
    TupleT,
    Var,
    atoms_of,
    from_relay_type,
    is_scalar,
    iter_lets,
    kernel_from_function,
    map_atoms,
    print_program,
    problems_of,
    tail_lets,
    transform_blocks,
    type_of,
    verify,
)
from transpile.lir.kernels import kernel_base_name
from transpile.relay.op.registry import OpPattern

I32 = TensorType((), "int32")
F32 = TensorType((), "float32")
BOOL = TensorType((), "bool")
F2 = TensorType((2,), "float32")
LIST = AdtT("List_int32")


def let(name, ty, value, span=None):
    return Let(Var(name, ty), value, span)


def kernel(name, build, *types):
    params = [relay.var(n, t) for n, t in zip("abcdefgh", types)]
    return kernel_from_function(name, relay.infer_type_expr(relay.Function(params, build(*params))))


# ---------------------------------------------------------------- programs


def sum_program(sum_body=None, main_body=None) -> Program:
    """Prelude-style sum over a monomorphic List of int32."""
    xs, h, t, r, s = Var("xs", LIST), Var("h", I32), Var("t", LIST), Var("r", I32), Var("s", I32)
    cons = Block((let("r", I32, Call("sum", (t,))), let("s", I32, KernelCall("fused_add", (h, r)))), s)
    body = sum_body or Block(
        (let("0", I32, Match(xs, (Case("Cons", (h, t), cons), Case("Nil", (), Block((), Literal(0, I32)))))),),
        Var("0", I32),
    )
    main = main_body or Block((let("y", I32, Call("sum", (xs,), tail=True)),), Var("y", I32))
    return Program(
        adts=(AdtDef("List_int32", (CtorDef("Cons", 0, (I32, LIST)), CtorDef("Nil", 1))),),
        constants=(),
        kernels=(kernel("fused_add", lambda a, b: a + b, I32, I32),),
        functions=(
            FunctionDef("sum", (Param("xs", LIST),), I32, body, relay_name="sum"),
            FunctionDef("main", (Param("xs", LIST),), I32, main, relay_name="main"),
        ),
        entry="main",
    )


SUM_TEXT = """\
entry @main

adt List_int32 { Cons(Tensor[(), int32], List_int32) = 0, Nil = 1 }

kernel fused_add(%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), int32] [broadcast] { add(%a, %b) }

fn @sum(%xs: List_int32) -> Tensor[(), int32] {
  %0 = match %xs {
    Cons(%h, %t) => {
      %r = call @sum(%t)
      %s = kernel fused_add(%h, %r)
      return %s
    }
    Nil => {
      return 0i32
    }
  }
  return %0
}

fn @main(%xs: List_int32) -> Tensor[(), int32] {
  %y = tailcall @sum(%xs)
  return %y
}
"""


def closure_program(main_body=None) -> Program:
    """A lifted closure capturing a hoisted tensor constant."""
    x, k, f = Var("x", F2), Var("k", F2), Var("f", ClosureT((F2,), F2))
    body = Block((let("y", F2, KernelCall("fused_multiply", (x, k))),), Var("y", F2))
    main = main_body or Block(
        (
            let("f", f.type, MakeClosure("lambda_0", (ConstRef("c0", F2),))),
            let("r", F2, ClosureCall(f, (x,), tail=True)),
        ),
        Var("r", F2),
    )
    return Program(
        adts=(),
        constants=(ConstDef("c0", np.array([2.0, 3.0], "float32"), F2),),
        kernels=(kernel("fused_multiply", lambda a, b: a * b, F2, F2),),
        functions=(
            FunctionDef("lambda_0", (Param("x", F2),), F2, body, env=(Param("k", F2),), relay_name="main"),
            FunctionDef("main", (Param("x", F2),), F2, main, relay_name="main"),
        ),
    )


CLOSURE_TEXT = """\
entry @main

const c0: Tensor[(2), float32]  /* 2 values */

kernel fused_multiply(%a: Tensor[(2), float32], %b: Tensor[(2), float32]) -> Tensor[(2), float32] [broadcast] { multiply(%a, %b) }

fn @lambda_0 env(%k: Tensor[(2), float32]) (%x: Tensor[(2), float32]) -> Tensor[(2), float32] {  // from @main
  %y = kernel fused_multiply(%x, %k)
  return %y
}

fn @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  %f = make_closure @lambda_0(const c0)
  %r = tailcall_closure %f(%x)
  return %r
}
"""


def loop_program(loop_stmts=None, cond=None, else_block=None, tail=True) -> Program:
    """A local tail-recursive loop closure: an If whose then branch calls the closure body itself."""
    n, step, c, m = Var("n", I32), Var("step", I32), Var("c", BOOL), Var("m", I32)
    then = Block(
        (let("m", I32, KernelCall("fused_subtract", (n, step))), let("z", I32, Call("loop", (m,), tail))), Var("z", I32)
    )
    stmts = loop_stmts or (
        let("c", BOOL, KernelCall("fused_greater", (n, Literal(0, I32)))),
        let("r", I32, If(cond or c, then, else_block or Block((), n)), Span("loop.relay", 3, 5)),
    )
    f = Var("f", ClosureT((I32,), I32))
    main = Block(
        (let("f", f.type, MakeClosure("loop", (Literal(1, I32),))), let("r", I32, ClosureCall(f, (n,), tail=True))),
        Var("r", I32),
    )
    return Program(
        adts=(),
        constants=(),
        kernels=(
            kernel("fused_greater", lambda a, b: a > b, I32, I32),
            kernel("fused_subtract", lambda a, b: a - b, I32, I32),
        ),
        functions=(
            FunctionDef(
                "loop",
                (Param("n", I32),),
                I32,
                Block(stmts, Var("r", I32)),
                env=(Param("step", I32),),
                relay_name="main",
            ),
            FunctionDef("main", (Param("n", I32),), I32, main, relay_name="main"),
        ),
    )


LOOP_TEXT = """\
entry @main

kernel fused_greater(%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), bool] [broadcast] { greater(%a, %b) }
kernel fused_subtract(%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), int32] [broadcast] { subtract(%a, %b) }

fn @loop env(%step: Tensor[(), int32]) (%n: Tensor[(), int32]) -> Tensor[(), int32] {  // from @main
  %c = kernel fused_greater(%n, 0i32)
  %r = if %c {
    %m = kernel fused_subtract(%n, %step)
    %z = tailcall @loop(%m)
    return %z
  } else {
    return %n
  }
  return %r
}

fn @main(%n: Tensor[(), int32]) -> Tensor[(), int32] {
  %f = make_closure @loop(1i32)
  %r = tailcall_closure %f(%n)
  return %r
}
"""

X14, W34, B3, Y13 = (TensorType(s, "float32") for s in ((1, 4), (3, 4), (3,), (1, 3)))
OPTION = AdtT("Option_t13")


def data_program() -> Program:
    """Refs, tuples, a renamed-constructor ADT with a default case, and a multi-line fused kernel."""
    x, b, cell, old, d = Var("x", X14), Var("b", B3), Var("cell", RefT(X14)), Var("old", X14), Var("d", Y13)
    pair, first, o, v = Var("pair", TupleT((Y13, X14))), Var("first", Y13), Var("o", OPTION), Var("v", Y13)
    result_type = TupleT((Y13, X14))
    stmts = (
        let("cell", cell.type, RefNew(x)),
        let("old", X14, RefGet(cell)),
        let("d", Y13, KernelCall("fused_dense_bias_add_relu", (old, ConstRef("w0", W34), b))),
        let("pair", pair.type, MakeTuple((d, old))),
        let("first", Y13, Proj(pair, 0)),
        let("u", UNIT, RefSet(cell, x)),
        let("o", OPTION, MakeAdt("Option_t13", "Some_t13", (first,))),
        let(
            "g",
            Y13,
            Match(
                o,
                (Case("Some_t13", (v,), Block((), v)),),
                Block((let("e", Y13, Fail("unreachable", Y13)),), Var("e", Y13)),
            ),
        ),
        let("g2", Y13, AdtField(o, "Some_t13", 0)),
        let("res", result_type, MakeTuple((Var("g2", Y13), old))),
    )
    dense = kernel(
        "fused_dense_bias_add_relu",
        lambda a, w, bias: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(a, w), bias)),
        X14,
        W34,
        B3,
    )
    return Program(
        adts=(AdtDef("Option_t13", (CtorDef("Some_t13", 0, (Y13,), "Some"), CtorDef("None_t13", 1, (), "None"))),),
        constants=(ConstDef("w0", np.arange(12, dtype="float32").reshape(3, 4), W34),),
        kernels=(dense,),
        functions=(
            FunctionDef("main", (Param("x", X14), Param("b", B3)), result_type, Block(stmts, Var("res", result_type))),
        ),
    )


DATA_TEXT = """\
entry @main

adt Option_t13 { Some_t13(Tensor[(1, 3), float32]) = 0 as "Some", None_t13 = 1 as "None" }

const w0: Tensor[(3, 4), float32]  /* 12 values */

kernel fused_dense_bias_add_relu(%a: Tensor[(1, 4), float32], %b: Tensor[(3, 4), float32], %c: Tensor[(3), float32]) -> Tensor[(1, 3), float32] [out_elemwise_fusable] {
  %0 = nn.dense(%a, %b, units=None);
  %1 = nn.bias_add(%0, %c);
  nn.relu(%1)
}

fn @main(%x: Tensor[(1, 4), float32], %b: Tensor[(3), float32]) -> (Tensor[(1, 3), float32], Tensor[(1, 4), float32]) {
  %cell: ref(Tensor[(1, 4), float32]) = ref_new(%x)
  %old: Tensor[(1, 4), float32] = ref_get(%cell)
  %d: Tensor[(1, 3), float32] = kernel fused_dense_bias_add_relu(%old, const w0, %b)
  %pair: (Tensor[(1, 3), float32], Tensor[(1, 4), float32]) = (%d, %old)
  %first: Tensor[(1, 3), float32] = %pair.0
  %u: () = ref_set(%cell, %x)
  %o: Option_t13 = Option_t13::Some_t13(%first)
  %g: Tensor[(1, 3), float32] = match %o {
    Some_t13(%v: Tensor[(1, 3), float32]) => {
      return %v
    }
    _ => {
      %e: Tensor[(1, 3), float32] = fail "unreachable"
      return %e
    }
  }
  %g2: Tensor[(1, 3), float32] = field %o as Some_t13.0
  %res: (Tensor[(1, 3), float32], Tensor[(1, 4), float32]) = (%g2, %old)
  return %res
}
"""


# ---------------------------------------------------------------- golden printing


@pytest.mark.parametrize(
    "build, expected, show_types",
    [
        (sum_program, SUM_TEXT, False),
        (closure_program, CLOSURE_TEXT, False),
        (loop_program, LOOP_TEXT, False),
        (data_program, DATA_TEXT, True),
    ],
    ids=["sum", "closure", "loop", "data"],
)
def test_golden_text_and_verifies(build, expected, show_types):
    program = build()
    verify(program)
    assert print_program(program, show_types=show_types) == expected
    assert str(program) == print_program(program)


def test_show_spans_and_literals():
    text = print_program(loop_program(), show_spans=True)
    assert "  %r = if %c {  // loop.relay:3:5" in text
    from transpile.lir.printer import literal_text

    cases = [
        (Literal(True, BOOL), "True"),
        (Literal(np.int64(-7), TensorType((), "int64")), "-7i64"),
        (Literal(255, TensorType((), "uint8")), "255u8"),
        (Literal(1e-05, TensorType((), "float64")), "1e-05f64"),
        (Literal(2, F32), "2.0f32"),
        (Literal(float("-inf"), F32), "-inff32"),
    ]
    assert [literal_text(lit) for lit, _ in cases] == [want for _, want in cases]


# ---------------------------------------------------------------- types, lookups, helpers


def test_types_and_lookups():
    assert is_scalar(I32) and not is_scalar(F2) and not is_scalar(LIST)
    assert TupleT([I32]) == TupleT((I32,)) and ClosureT([I32], F2) == ClosureT((I32,), F2)
    assert from_relay_type(relay.TupleType([I32, relay.RefType(F2)])) == TupleT((I32, RefT(F2)))
    assert from_relay_type(relay.FuncType([I32], F2)) == ClosureT((I32,), F2)
    assert from_relay_type(relay.TypeCall(relay.GlobalTypeVar("List"), [I32]), lambda t: "List_int32") == LIST
    with pytest.raises(ValueError, match="monomorphic"):
        from_relay_type(relay.TypeVar("A"))
    program = sum_program()
    assert program.function("sum").params[0].type == LIST
    assert program.adt("List_int32").constructor("Nil").tag == 1
    assert program.find_kernel("nope") is None
    with pytest.raises(KeyError, match="no function named 'prod'"):
        program.function("prod")
    with pytest.raises(dataclasses.FrozenInstanceError):
        program.entry = "sum"
    const = closure_program().constant("c0")
    with pytest.raises(ValueError):
        const.value[0] = 9.0


def test_type_of_every_value():
    program = data_program()
    got = {stmt.var.name: type_of(stmt.value, program) for stmt in iter_lets(program.function("main").body)}
    assert got["cell"] == RefT(X14) and got["u"] == UNIT and got["o"] == OPTION
    assert got["pair"] == TupleT((Y13, X14)) and got["first"] == Y13 and got["g2"] == Y13 and got["e"] == Y13
    assert type_of(MakeClosure("lambda_0", ()), closure_program()) == ClosureT((F2,), F2)
    with pytest.raises(LIRError, match="projection .2 out of range for a tuple of 2 field"):
        type_of(Proj(Var("p", TupleT((I32, I32))), 2), program)


def test_kernel_from_function_names_ops_and_pattern():
    k = data_program().kernel("fused_dense_bias_add_relu")
    assert k.ops == ("nn.dense", "nn.bias_add", "nn.relu")
    assert k.pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert kernel_base_name(k.ops) == "fused_dense_bias_add_relu"
    assert [p.name for p in k.params] == ["a", "b", "c"] and k.result == Y13


def test_walk_helpers():
    program = loop_program()
    body = program.function("loop").body
    assert [s.var.name for s in iter_lets(body)] == ["c", "r", "m", "z"]
    assert [s.var.name for s in tail_lets(body)] == ["r", "z"]
    renamed = map_atoms(
        KernelCall("k", (Var("n", I32), Literal(0, I32))), lambda a: Var("q", I32) if isinstance(a, Var) else a
    )
    assert atoms_of(renamed) == (Var("q", I32), Literal(0, I32))

    def untail(block):
        stmts = tuple(
            (
                Let(s.var, dataclasses.replace(s.value, tail=False), s.span)
                if isinstance(s.value, (Call, ClosureCall))
                else s
            )
            for s in block.stmts
        )
        return Block(stmts, block.result)

    plain = transform_blocks(program, untail)
    assert "tailcall" not in print_program(plain) and print_program(plain).count("call @loop(%m)") == 1
    verify(plain)


# ---------------------------------------------------------------- verifier: malformed programs


def replace_fn(program: Program, name: str, **changes) -> Program:
    functions = tuple(dataclasses.replace(f, **changes) if f.name == name else f for f in program.functions)
    return dataclasses.replace(program, functions=functions)


def main_body(*stmts, result):
    return Block(stmts, result)


XS = Var("xs", LIST)

MALFORMED = {
    "use before def": (
        sum_program(
            main_body=main_body(
                let("a", I32, Call("sum", (Var("b", LIST),))), let("b", LIST, AtomValue(XS)), result=Var("a", I32)
            )
        ),
        ["fn @main: `%a = call @sum(%b)`: %b is used before its definition"],
    ),
    "duplicate def": (
        sum_program(
            main_body=main_body(
                let("y", I32, Call("sum", (XS,))), let("y", I32, Call("sum", (XS,))), result=Var("y", I32)
            )
        ),
        ["fn @main: `%y = call @sum(%xs)`: %y is defined more than once"],
    ),
    "let type mismatch": (
        sum_program(main_body=main_body(let("y", F2, Call("sum", (XS,))), result=Var("y", F2))),
        [
            "fn @main: `%y = call @sum(%xs)`: %y has type Tensor[(2), float32], but the value has type Tensor[(), int32]",
            "fn @main: `return %y`: the function body returns Tensor[(2), float32], but Tensor[(), int32] is expected",
        ],
    ),
    "wrong arity": (
        sum_program(main_body=main_body(let("y", I32, Call("sum", (XS, XS))), result=Var("y", I32))),
        ["fn @main: `%y = call @sum(%xs, %xs)`: @sum takes 1 argument, got 2"],
    ),
    "argument type": (
        sum_program(main_body=main_body(let("y", I32, Call("sum", (Literal(3, I32),))), result=Var("y", I32))),
        ["fn @main: `%y = call @sum(3i32)`: argument 1 of @sum has type Tensor[(), int32], but List_int32 is expected"],
    ),
    "unknown constructor": (
        sum_program(
            sum_body=Block((let("0", I32, Match(XS, (Case("Snoc", (), Block((), Literal(0, I32))),))),), Var("0", I32))
        ),
        [
            "fn @sum: `%0 = match %xs {...}`: ADT List_int32 has no constructor Snoc",
            "fn @sum: `%0 = match %xs {...}`: match is not exhaustive: no case for Cons, Nil and no default",
        ],
    ),
    "duplicate case": (
        sum_program(
            sum_body=Block(
                (
                    let(
                        "0",
                        I32,
                        Match(
                            XS,
                            (
                                Case("Nil", (), Block((), Literal(0, I32))),
                                Case("Cons", (None, None), Block((), Literal(1, I32))),
                                Case("Cons", (Var("h", I32), None), Block((), Var("h", I32))),
                            ),
                        ),
                    ),
                ),
                Var("0", I32),
            )
        ),
        ["fn @sum: `%0 = match %xs {...}`: constructor Cons has more than one case"],
    ),
    "binder count": (
        sum_program(
            sum_body=Block(
                (
                    let(
                        "0",
                        I32,
                        Match(XS, (Case("Cons", (None,), Block((), Literal(1, I32))),), Block((), Literal(0, I32))),
                    ),
                ),
                Var("0", I32),
            )
        ),
        ["fn @sum: `%0 = match %xs {...}`: case Cons binds 1 variable, but Cons has 2 fields"],
    ),
    "tail call not in tail position": (
        sum_program(
            main_body=main_body(
                let("y", I32, Call("sum", (XS,), tail=True)),
                let("z", I32, AtomValue(Var("y", I32))),
                result=Var("z", I32),
            )
        ),
        ["fn @main: `%y = tailcall @sum(%xs)`: tail call is not in tail position"],
    ),
    "missing function": (
        sum_program(main_body=main_body(let("y", I32, Call("prod", (XS,))), result=Var("y", I32))),
        ["fn @main: `%y = call @prod(%xs)`: unknown function @prod"],
    ),
    "unknown kernel": (
        sum_program(
            main_body=main_body(let("y", I32, KernelCall("fused_sub", (Literal(1, I32),))), result=Var("y", I32))
        ),
        ["fn @main: `%y = kernel fused_sub(1i32)`: unknown kernel fused_sub"],
    ),
    "kernel argument type": (
        sum_program(
            main_body=main_body(
                let("y", I32, KernelCall("fused_add", (Literal(1, I32), Literal(2.0, F32)))), result=Var("y", I32)
            )
        ),
        [
            "fn @main: `%y = kernel fused_add(1i32, 2.0f32)`: argument 2 of kernel fused_add has type Tensor[(), float32], but Tensor[(), int32] is expected"
        ],
    ),
    "closure env count": (
        closure_program(
            main_body=main_body(
                let("f", ClosureT((F2,), F2), MakeClosure("lambda_0", (Var("x", F2), Var("x", F2)))),
                result=Var("f", ClosureT((F2,), F2)),
            )
        ),
        [
            "fn @main: `%f = make_closure @lambda_0(%x, %x)`: @lambda_0 captures 1 value, got 2",
            "fn @main: `return %f`: the function body returns closure(Tensor[(2), float32]) -> Tensor[(2), float32], but Tensor[(2), float32] is expected",
        ],
    ),
    "closure env type": (
        closure_program(
            main_body=main_body(
                let("f", ClosureT((F2,), F2), MakeClosure("lambda_0", (Literal(1.0, F32),))),
                let("r", F2, ClosureCall(Var("f", ClosureT((F2,), F2)), (Var("x", F2),))),
                result=Var("r", F2),
            )
        ),
        [
            "fn @main: `%f = make_closure @lambda_0(1.0f32)`: captured value 1 of @lambda_0 has type Tensor[(), float32], but Tensor[(2), float32] is expected"
        ],
    ),
    "closure body called directly": (
        closure_program(main_body=main_body(let("r", F2, Call("lambda_0", (Var("x", F2),))), result=Var("r", F2))),
        [
            "fn @main: `%r = call @lambda_0(%x)`: @lambda_0 is a closure body: build it with make_closure and use call_closure"
        ],
    ),
    "closure call arity": (
        closure_program(
            main_body=main_body(
                let("f", ClosureT((F2,), F2), MakeClosure("lambda_0", (ConstRef("c0", F2),))),
                let("r", F2, ClosureCall(Var("f", ClosureT((F2,), F2)), ())),
                result=Var("r", F2),
            )
        ),
        ["fn @main: `%r = call_closure %f()`: closure %f takes 1 argument, got 0"],
    ),
    "make_closure of a plain function": (
        replace_fn(closure_program(), "lambda_0", env=None),
        [
            "fn @lambda_0: `%y = kernel fused_multiply(%x, %k)`: %k is not defined",
            "fn @main: `%f = make_closure @lambda_0(const c0)`: make_closure of @lambda_0, which is not a closure body (it has no env)",
        ],
    ),
    "non-bool if condition": (
        loop_program(cond=Var("n", I32)),
        [
            "fn @loop: `%r = if %n {...} else {...}`: if condition has type Tensor[(), int32], but Tensor[(), bool] is expected"
        ],
    ),
    "branch type mismatch": (
        loop_program(else_block=Block((), Literal(0.0, F32))),
        ["fn @loop: `return 0.0f32`: the else branch returns Tensor[(), float32], but Tensor[(), int32] is expected"],
    ),
    "use outside scope": (
        loop_program(
            loop_stmts=(
                let("c", BOOL, KernelCall("fused_greater", (Var("n", I32), Literal(0, I32)))),
                let(
                    "r0",
                    I32,
                    If(
                        Var("c", BOOL),
                        Block((let("m", I32, AtomValue(Var("n", I32))),), Var("m", I32)),
                        Block((), Var("n", I32)),
                    ),
                ),
                let("r", I32, AtomValue(Var("m", I32))),
            )
        ),
        ["fn @loop: `%r = %m`: %m is used outside the scope of its definition"],
    ),
    "var used at another type": (
        sum_program(main_body=main_body(let("y", I32, AtomValue(Var("xs", I32))), result=Var("y", I32))),
        ["fn @main: `%y = %xs`: %xs is used at type Tensor[(), int32], but it is defined with type List_int32"],
    ),
    "literal out of range": (
        sum_program(
            main_body=main_body(let("y", I32, AtomValue(Literal(300, TensorType((), "uint8")))), result=Var("y", I32))
        ),
        [
            "fn @main: `%y = 300u8`: literal 300 is out of range for uint8",
        ],
    ),
    "missing constant and relay type": (
        sum_program(
            main_body=main_body(
                let("q", relay.TypeVar("A"), AtomValue(ConstRef("c9", F2))),
                let("y", I32, Call("sum", (XS,))),
                result=Var("y", I32),
            )
        ),
        [
            "fn @main: `%q = const c9`: unknown constant c9",
            "fn @main: `%q = const c9`: %q: TypeVar A is not an LIR type",
        ],
    ),
    "missing entry and duplicate names": (
        dataclasses.replace(sum_program(), entry="start", constants=(ConstDef("sum", np.zeros((), "int32"), I32),)),
        ["program: sum is defined 2 times (constant, function)", "program: entry @start is not a defined function"],
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_verifier_names_each_problem(name):
    program, expected = MALFORMED[name]
    assert problems_of(program) == expected
    with pytest.raises(LIRError) as info:
        verify(program)
    assert info.value.problems == expected
    assert isinstance(info.value, TranspileError)


def test_error_text_lists_every_problem_and_carries_span():
    program, expected = MALFORMED["let type mismatch"]
    with pytest.raises(LIRError) as info:
        verify(program)
    assert str(info.value) == "invalid LIR (2 problems):\n" + "\n".join("  " + p for p in expected)
    bad = loop_program(cond=Var("n", I32))
    with pytest.raises(LIRError) as info:
        verify(bad)
    assert info.value.span == Span("loop.relay", 3, 5)
    assert str(info.value).startswith("loop.relay:3:5: invalid LIR: fn @loop: `%r = if %n {...} else {...}`")


def test_kernel_problems():
    program = sum_program()
    a = relay.var("a", I32)
    bad_body = relay.infer_type_expr(relay.Function([a], relay.add(a, relay.const(np.ones(2, "int32")))))
    kernels = (
        dataclasses.replace(program.kernel("fused_add"), params=(Param("a", I32),), body=bad_body, ops=("multiply",)),
    )
    assert problems_of(dataclasses.replace(program, kernels=kernels)) == [
        "kernel fused_add: body returns Tensor[(2), int32], but the kernel result is Tensor[(), int32]",
        "kernel fused_add: body holds a constant of shape (2,); hoist it into a ConstDef and pass it as an argument",
        "kernel fused_add: ops ['multiply'] do not list the body's operators ['add']",
        "fn @sum: `%s = kernel fused_add(%h, %r)`: kernel fused_add takes 1 argument, got 2",
    ]
    untyped = relay.Function([a], relay.add(a, a))
    kernels = (dataclasses.replace(program.kernel("fused_add"), params=(Param("a", I32),), body=untyped),)
    problems = problems_of(dataclasses.replace(program, kernels=kernels))
    assert problems[0] == "kernel fused_add: body is not type-checked (run relay.infer_type_expr on it)"


def test_problems_inside_blocks_are_reported_even_when_the_scrutinee_is_bad():
    body = Block(
        (
            let(
                "0",
                I32,
                Match(
                    Var("ys", LIST),
                    (Case("Cons", (None, None), Block((), Var("nope", I32))),),
                    Block((), Literal(0, I32)),
                ),
            ),
        ),
        Var("0", I32),
    )
    assert problems_of(sum_program(sum_body=body)) == [
        "fn @sum: `%0 = match %ys {...}`: %ys is not defined",
        "fn @sum: `return %nope`: %nope is not defined",
    ]


def test_junk_is_reported_not_crashed_on():
    junk = main_body(
        let("a", I32, AtomValue(relay.const(1))),
        let("b", I32, "call sum"),
        let("c", I32, If(Var("xs", LIST), "then", Block((), Literal(1, I32)))),
        result=Var("a", I32),
    )
    problems = problems_of(sum_program(main_body=junk))
    assert problems == [
        "fn @main: `%a = <not an atom: 1>`: Constant is not an atom",
        "fn @main: `%b = <not a value: 'call sum'>`: str is not an LIR value",
        "fn @main: `%c = if %xs {...} else {...}`: if condition has type List_int32, but Tensor[(), bool] is expected",
        "fn @main: the then branch must be a Block, found str",
    ]
    assert "call sum" in print_program(sum_program(main_body=junk))


def test_deep_programs_verify_and_print():
    # Long ANF chains (corpus models have 1 500+ bindings) and deeply nested branches.
    n = Var("n", I32)
    stmts = [let("v0", I32, AtomValue(n))]
    for i in range(1, 3000):
        stmts.append(let(f"v{i}", I32, KernelCall("fused_add", (Var(f"v{i - 1}", I32), Literal(1, I32)))))
    block = Block(tuple(stmts), Var("v2999", I32))
    cond = Var("c", BOOL)
    for depth in range(600):
        block = Block((let(f"if{depth}", I32, If(cond, block, Block((), n))),), Var(f"if{depth}", I32))
    main = FunctionDef("main", (Param("n", I32), Param("c", BOOL)), I32, block)
    program = dataclasses.replace(sum_program(), functions=(sum_program().function("sum"), main))
    verify(program)
    text = print_program(program)
    assert text.count("kernel fused_add(") == 3001 and "%v2999 = kernel fused_add(%v2998, 1i32)" in text


def test_static_dimensions_fit_where_any_is_declared():
    from transpile.lir.types import fits

    any_dim = relay.Any()
    assert fits(TensorType((5, 1), "float32"), TensorType((any_dim, any_dim), "float32"))
    assert not fits(TensorType((any_dim, 1), "float32"), TensorType((5, 1), "float32"))
    assert not fits(TensorType((5,), "float32"), TensorType((any_dim, any_dim), "float32"))
    assert not fits(TensorType((5, 1), "int32"), TensorType((any_dim, 1), "float32"))
    from transpile.lir import TupleT

    assert fits(TupleT((TensorType((2,), "int8"),)), TupleT((TensorType((any_dim,), "int8"),)))


def test_a_relay_name_with_a_newline_stays_in_its_comment():
    from transpile.lir.printer import function_text

    func = FunctionDef("f", (), TensorType((), "int32"), Block((), Literal(1, TensorType((), "int32"))), relay_name="a\n\"*/b")
    text = function_text(func)
    assert text.splitlines()[0].endswith('// from @a\\n"*/b')
