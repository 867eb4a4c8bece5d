"""Lowering normalized Relay to the LIR: golden text, verification, and semantics on a tiny LIR evaluator.

Inputs are written in the normalized form the earlier passes produce (let chains over atoms,
`fn (..., Primitive=1)` kernels applied at their lets, one-level matches). Semantics are checked
by running the LIR with `run_lir` (below, also used by test_pass_closure/test_pipeline) against
hand-computed numpy results.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile.relay as relay
from transpile.errors import Span, TranspileError
from transpile.lir import (
    AdtField,
    AtomValue,
    Call,
    ClosureCall,
    ConstRef,
    Fail,
    If,
    KernelCall,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    iter_lets,
    print_program,
    tail_lets,
    verify,
)
from transpile.lir.types import UNIT, AdtT, TensorType
from transpile.passes.lower import LoweringError, lower
from transpile.passes.tailcall import mark_tail_calls
from transpile.relay.deep import deep_recursion
from transpile.runtime import ADTValue, RefValue, values_equal

# ---------------------------------------------------------------- a tiny LIR evaluator


class LirClosure:
    def __init__(self, program, func, env):
        self.program, self.func, self.env = program, func, tuple(env)

    def __call__(self, *args):
        return _call(self.program, self.func, self.env, args)


class LirFailure(Exception):
    pass


def _kernel(kernel, args):
    from transpile.relay import expr as rx

    values = {p: a for p, a in zip(kernel.body.params, args)}

    def ev(e):
        if isinstance(e, rx.Var):
            return values[e]
        if isinstance(e, rx.Constant):
            return e.data
        if isinstance(e, rx.Tuple):
            return tuple(ev(f) for f in e.fields)
        if isinstance(e, rx.TupleGetItem):
            return ev(e.tuple_value)[e.index]
        opdef = e.op.definition
        out = e.checked_type
        result = opdef.numpy_impl([ev(a) for a in e.args], e.attrs, out)
        if isinstance(out, relay.TensorType):
            return np.asarray(result, dtype=out.dtype)
        return tuple(np.asarray(r, dtype=t.dtype) for r, t in zip(result, out.fields))

    return ev(kernel.body.body)


def _call(program, func, env, args):
    scope = {p.name: v for p, v in zip(func.params, args)}
    if func.env is not None:
        scope.update({p.name: v for p, v in zip(func.env, env)})
    return _block(program, func, env, func.body, scope)


def _atom(program, atom, scope):
    if isinstance(atom, Literal):
        return atom.numpy()
    if isinstance(atom, ConstRef):
        return program.constant(atom.name).value
    return scope[atom.name]


def _block(program, func, env, block, scope):
    scope = dict(scope)
    for stmt in block.stmts:
        scope[stmt.var.name] = _value(program, func, env, stmt.value, scope)
    return _atom(program, block.result, scope)


def _value(program, func, env, v, scope):
    a = lambda x: _atom(program, x, scope)  # noqa: E731
    if isinstance(v, AtomValue):
        return a(v.atom)
    if isinstance(v, KernelCall):
        return _kernel(program.kernel(v.kernel), [a(x) for x in v.args])
    if isinstance(v, Call):
        target = program.function(v.func)
        return _call(program, target, env if target.env is not None else (), [a(x) for x in v.args])
    if isinstance(v, ClosureCall):
        return a(v.closure)(*[a(x) for x in v.args])
    if isinstance(v, MakeClosure):
        return LirClosure(program, program.function(v.func), [a(x) for x in v.captured])
    if isinstance(v, MakeTuple):
        return tuple(a(x) for x in v.fields)
    if isinstance(v, Proj):
        return a(v.tuple_value)[v.index]
    if isinstance(v, MakeAdt):
        ctor = program.adt(v.adt).constructor(v.ctor)
        return ADTValue(ctor.relay_name, tuple(a(x) for x in v.fields))
    if isinstance(v, AdtField):
        return a(v.value).fields[v.index]
    if isinstance(v, RefNew):
        return RefValue(a(v.value))
    if isinstance(v, RefGet):
        return a(v.ref).value
    if isinstance(v, RefSet):
        a(v.ref).value = a(v.value)
        return ()
    if isinstance(v, If):
        branch = v.then if bool(a(v.cond)) else v.else_
        return _block(program, func, env, branch, scope)
    if isinstance(v, Match):
        value = a(v.scrutinee)
        adt = program.adt(v.scrutinee.type.name)
        for case in v.cases:
            if adt.constructor(case.ctor).relay_name == value.constructor:
                inner = dict(scope)
                for binder, field in zip(case.binders, value.fields):
                    if binder is not None:
                        inner[binder.name] = field
                return _block(program, func, env, case.body, inner)
        return _block(program, func, env, v.default, scope)
    if isinstance(v, Fail):
        raise LirFailure(v.message)
    raise AssertionError(f"unknown LIR value {v!r}")


@deep_recursion
def run_lir(program, *args):
    """Run the program's entry on Python values (numpy arrays, tuples, ADTValue, RefValue)."""
    return _call(program, program.entry_function, (), args)


# ---------------------------------------------------------------- helpers


def typed(src: str):
    return relay.transform.InferType()(relay.parse(src))


def lowered(src: str, entry: str = "main"):
    program = mark_tail_calls(lower(typed(src), entry))
    verify(program)
    return program


def i32(v):
    return np.array(v, dtype="int32")


def f32(v):
    return np.array(v, dtype="float32")


def list_value(items):
    value = ADTValue("Nil")
    for item in reversed(items):
        value = ADTValue("Cons", (item, value))
    return value


LIST_TYPE = """
type List[A] {
  Cons(A, List[A]),
  Nil,
}
"""

# ---------------------------------------------------------------- golden programs

CLOSURE_SRC = """#[version = "0.0.5"]
def @main(%k: Tensor[(2), float32], %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %scale = fn (%v: Tensor[(2), float32]) -> Tensor[(2), float32] {
    let %y = (fn (%p0: Tensor[(2), float32], %p1: Tensor[(2), float32], Primitive=1) { multiply(%p0, %p1) })(%v, %k);
    %y
  };
  let %r = %scale(%x);
  %r
}
"""

CLOSURE_LIR = """\
entry @main

kernel fused_multiply(%p0: Tensor[(2), float32], %p1: Tensor[(2), float32]) -> Tensor[(2), float32] [broadcast] { multiply(%p0, %p1) }

fn @scale env(%k: Tensor[(2), float32]) (%v: Tensor[(2), float32]) -> Tensor[(2), float32] {  // from @main
  %y = kernel fused_multiply(%v, %k)
  return %y
}

fn @main(%k: Tensor[(2), float32], %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  %scale = make_closure @scale(%k)
  %r = tailcall_closure %scale(%x)
  return %r
}
"""

SUM_SRC = '#[version = "0.0.5"]' + LIST_TYPE + """
def @sum(%xs: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  match (%xs) {
    Cons(%h, %t) => {
      let %r = @sum(%t);
      let %s = (fn (%p0: Tensor[(), int32], %p1: Tensor[(), int32], Primitive=1) { add(%p0, %p1) })(%h, %r);
      %s
    },
    Nil => 0,
  }
}

def @main(%xs: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  let %n = @sum(%xs);
  %n
}
"""

SUM_LIR = """\
entry @main

adt List_int32 { Cons(Tensor[(), int32], List_int32) = 0, Nil = 1 }

kernel fused_add(%p0: Tensor[(), int32], %p1: Tensor[(), int32]) -> Tensor[(), int32] [broadcast] { add(%p0, %p1) }

fn @sum(%xs: List_int32) -> Tensor[(), int32] {
  %t_1 = match %xs {
    Cons(%h, %t) => {
      %r = call @sum(%t)
      %s = kernel fused_add(%h, %r)
      return %s
    }
    Nil => {
      return 0i32
    }
  }
  return %t_1
}

fn @main(%xs: List_int32) -> Tensor[(), int32] {
  %n = tailcall @sum(%xs)
  return %n
}
"""

LOOP_SRC = """#[version = "0.0.5"]
def @main(%n: Tensor[(), int32]) -> Tensor[(), int32] {
  let %loop = fn (%i: Tensor[(), int32], %acc: Tensor[(), int32]) -> Tensor[(), int32] {
    let %c = (fn (%p0: Tensor[(), int32], Primitive=1) { greater(%p0, 0) })(%i);
    let %res = if (%c) {
      let %j = (fn (%p0: Tensor[(), int32], Primitive=1) { subtract(%p0, 1) })(%i);
      let %a = (fn (%p0: Tensor[(), int32], %p1: Tensor[(), int32], Primitive=1) { add(%p0, %p1) })(%acc, %i);
      let %next = %loop(%j, %a);
      %next
    } else {
      %acc
    };
    %res
  };
  let %out = %loop(%n, 0);
  %out
}
"""

LOOP_LIR = """\
entry @main

kernel fused_greater(%p0: Tensor[(), int32]) -> Tensor[(), bool] [broadcast] { greater(%p0, 0) }
kernel fused_subtract(%p0: Tensor[(), int32]) -> Tensor[(), int32] [broadcast] { subtract(%p0, 1) }
kernel fused_add(%p0: Tensor[(), int32], %p1: Tensor[(), int32]) -> Tensor[(), int32] [broadcast] { add(%p0, %p1) }

fn @loop env() (%i: Tensor[(), int32], %acc: Tensor[(), int32]) -> Tensor[(), int32] {  // from @main
  %c = kernel fused_greater(%i)
  %res = if %c {
    %j = kernel fused_subtract(%i)
    %a = kernel fused_add(%acc, %i)
    %next = tailcall @loop(%j, %a)
    return %next
  } else {
    return %acc
  }
  return %res
}

fn @main(%n: Tensor[(), int32]) -> Tensor[(), int32] {
  %loop = make_closure @loop()
  %out = tailcall_closure %loop(%n, 0i32)
  return %out
}
"""


@pytest.mark.parametrize(
    "src, expected",
    [(CLOSURE_SRC, CLOSURE_LIR), (SUM_SRC, SUM_LIR), (LOOP_SRC, LOOP_LIR)],
    ids=["closure", "list_sum", "letrec_loop"],
)
def test_golden_lir(src, expected):
    assert print_program(lowered(src)) == expected


def test_semantics_of_golden_programs():
    k, x = f32([2.0, 3.0]), f32([5.0, -1.0])
    assert values_equal(run_lir(lowered(CLOSURE_SRC), k, x), f32([10.0, -3.0]))
    assert values_equal(run_lir(lowered(SUM_SRC), list_value([i32(4), i32(5), i32(-2)])), i32(7))
    assert values_equal(run_lir(lowered(SUM_SRC), list_value([])), i32(0))
    assert values_equal(run_lir(lowered(LOOP_SRC), i32(10)), i32(55))


# ---------------------------------------------------------------- constants, kernels, types


MLP_SRC = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w1: Tensor[(3, 4), float32], %b1: Tensor[(3), float32],
          %w2: Tensor[(3, 3), float32], %b2: Tensor[(3), float32]) -> Tensor[(1, 3), float32] {
  let %h = (fn (%p0: Tensor[(1, 4), float32], %p1: Tensor[(3, 4), float32], %p2: Tensor[(3), float32], Primitive=1) {
    nn.relu(nn.bias_add(nn.dense(%p0, %p1, units=None), %p2))
  })(%x, %w1, %b1);
  let %o = (fn (%q0: Tensor[(1, 3), float32], %q1: Tensor[(3, 3), float32], %q2: Tensor[(3), float32], Primitive=1) {
    nn.relu(nn.bias_add(nn.dense(%q0, %q1, units=None), %q2))
  })(%h, %w2, %b2);
  let %p = (fn (%r0: Tensor[(1, 3), float32], %r1: Tensor[(3, 3), float32], %r2: Tensor[(3), float32], Primitive=1) {
    nn.relu(nn.bias_add(nn.dense(%r0, %r1, units=None), %r2))
  })(%o, %w2, %b2);
  %p
}
"""


def test_mlp_kernels_are_deduplicated_and_named_from_their_ops():
    program = lowered(MLP_SRC)
    assert [k.name for k in program.kernels] == ["fused_dense_bias_add_relu", "fused_dense_bias_add_relu_1"]
    body = program.entry_function.body
    assert [s.value.kernel for s in body.stmts] == [
        "fused_dense_bias_add_relu",
        "fused_dense_bias_add_relu_1",
        "fused_dense_bias_add_relu_1",
    ]
    rng = np.random.default_rng(0)
    x, w1, b1, w2, b2 = (rng.standard_normal(s).astype("float32") for s in ((1, 4), (3, 4), (3,), (3, 3), (3,)))
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    expected = relu(relu(relu(x @ w1.T + b1) @ w2.T + b2) @ w2.T + b2)
    np.testing.assert_allclose(run_lir(program, x, w1, b1, w2, b2), expected, rtol=1e-5)


def test_constants_are_hoisted_deduplicated_and_scalars_become_literals():
    w = relay.const(np.arange(6, dtype="float32").reshape(2, 3))
    w_again = relay.const(np.arange(6, dtype="float32").reshape(2, 3))
    other = relay.const(np.ones((2, 3), "float32"))
    x = relay.var("x", shape=(2, 3))
    p = [relay.var(f"p{i}", shape=(2, 3)) for i in range(2)]
    kernel = relay.Function(p, relay.add(p[0], p[1])).with_attr("Primitive", 1)
    kernel2 = relay.Function(p, relay.add(p[0], p[1])).with_attr("Primitive", 1)
    a, b, c, d = (relay.var(n) for n in "abcd")
    body = relay.Let(
        a,
        relay.Call(kernel, [x, w]),
        relay.Let(
            b,
            relay.Call(kernel2, [a, w_again]),
            relay.Let(c, relay.Call(kernel, [b, other]), relay.Let(d, relay.Tuple([c, relay.const(2.5)]), d)),
        ),
    )
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], body)))
    program = mark_tail_calls(lower(mod))
    verify(program)
    assert [(c.name, c.type) for c in program.constants] == [
        ("c0", TensorType((2, 3), "float32")),
        ("c1", TensorType((2, 3), "float32")),
    ]
    assert [k.name for k in program.kernels] == ["fused_add"]
    stmts = program.entry_function.body.stmts
    assert [s.value.args[1] for s in stmts[:3]] == [
        ConstRef("c0", TensorType((2, 3), "float32")),
        ConstRef("c0", TensorType((2, 3), "float32")),
        ConstRef("c1", TensorType((2, 3), "float32")),
    ]
    assert stmts[3].value == MakeTuple((stmts[2].var, Literal(2.5, TensorType((), "float32"))))
    xv = np.full((2, 3), 1.0, "float32")
    out = run_lir(program, xv)
    np.testing.assert_array_equal(out[0], xv + 2 * np.arange(6, dtype="float32").reshape(2, 3) + 1)
    assert values_equal(out[1], f32(2.5))


def test_unfused_operators_become_single_op_kernels_and_shared_nodes_run_once():
    # Not in ANF and not fused: nested calls get temporaries, each operator its own kernel.
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) -> (Tensor[(3), float32], Tensor[(3), float32]) {
  %0 = add(%x, %y);
  %1 = nn.relu(%0);
  (%1, multiply(%1, 2f))
}
"""
    program = lowered(src)
    assert [k.name for k in program.kernels] == ["fused_add", "fused_relu", "fused_multiply"]
    text = print_program(program)
    assert text.count("kernel fused_add(") == 2  # the definition and one call: %0 is computed once
    assert "multiply(%p0, 2f)" in text  # scalar constants stay inside the kernel
    x, y = f32([1, -5, 2]), f32([1, 1, 1])
    out = run_lir(program, x, y)
    np.testing.assert_array_equal(out[0], f32([2, 0, 3]))
    np.testing.assert_array_equal(out[1], f32([4, 0, 6]))


def test_kernel_params_are_normalized_tuple_params_flattened_and_constants_hoisted():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) -> Tensor[(4), float32] {
  let %t = (%x, %y);
  let %r = (fn (%p0: (Tensor[(2), float32], Tensor[(2), float32]), Primitive=1) {
    let %c = concatenate(%p0);
    add(%c, meta[relay.Constant][0])
  })(%t);
  %r
}
"""
    table = {"relay.Constant": [relay.const(np.array([1, 2, 3, 4], "float32"))]}
    mod = relay.transform.InferType()(relay.parse(src, init_meta_table=table))
    program = mark_tail_calls(lower(mod))
    verify(program)
    kernel = program.kernels[0]
    assert kernel.name == "fused_concatenate_add"
    assert [p.name for p in kernel.params] == ["p0", "p1", "p2"]
    text = print_program(program)
    assert "%r = kernel fused_concatenate_add(%t_1, %t_2, const c0)" in text
    out = run_lir(program, f32([1, 2]), f32([3, 4]))
    np.testing.assert_array_equal(out, f32([2, 4, 6, 8]))


ADT_NAMES_SRC = '#[version = "0.0.5"]' + LIST_TYPE + """
type Option[A] {
  Some(A),
  None,
}

type Tree[A] {
  Rose(A, List[Tree[A]]),
}

type nat {
  z,
  s(nat),
}

def @main(%t: Tree[Tensor[(2, 3), float32]], %o: Option[List[Tensor[(), int32]]], %n: nat,
          %q: List[(Tensor[(), bool], Tensor[(?), float16])]) -> Option[List[Tensor[(), int32]]] {
  %o
}
"""


def test_adt_instances_get_readable_unique_names():
    program = lowered(ADT_NAMES_SRC)
    assert print_program(program).split("\n\n")[1] == (
        "adt Tree_Tensor_2x3_float32 { Rose(Tensor[(2, 3), float32], List_Tree_Tensor_2x3_float32) = 0 }\n"
        "adt List_Tree_Tensor_2x3_float32 { Cons(Tree_Tensor_2x3_float32, List_Tree_Tensor_2x3_float32) = 0, Nil = 1 }\n"
        "adt Option_List_int32 { Some(List_int32) = 0, None = 1 }\n"
        "adt List_int32 { Cons(Tensor[(), int32], List_int32) = 0, Nil = 1 }\n"
        "adt nat { z = 0, s(nat) = 1 }\n"
        "adt List_Tuple_bool_Tensor_any_float16 { Cons((Tensor[(), bool], Tensor[(?), float16]), "
        "List_Tuple_bool_Tensor_any_float16) = 0, Nil = 1 }"
    )


# ---------------------------------------------------------------- match, refs, tuples


MATCH_SRC = '#[version = "0.0.5"]' + LIST_TYPE + """
def @head_or(%xs: List[Tensor[(), int32]], %d: Tensor[(), int32]) -> Tensor[(), int32] {
  match (%xs) {
    Cons(%h, _) => %h,
    Cons(_, _) => %d,
    _ => %d,
  }
}

def @second(%xs: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  match? (%xs) {
    Cons(_, %rest) => {
      let %v = match? (%rest) {
        Cons(%y, _) => %y,
      };
      %v
    },
  }
}

def @main(%xs: List[Tensor[(), int32]]) -> (Tensor[(), int32], Tensor[(), int32]) {
  let %a = @head_or(%xs, -1);
  let %b = @second(%xs);
  (%a, %b)
}
"""


def test_match_default_duplicate_clauses_and_failure():
    program = lowered(MATCH_SRC)
    text = print_program(program)
    head_or = text[text.index("fn @head_or") : text.index("fn @second")]
    # The second Cons clause can never run; the wildcard covers only Nil, which the cases miss.
    assert head_or.count("Cons(") == 1 and "_ => {" in head_or
    second = text[text.index("fn @second") : text.index("fn @main")]
    assert second.count('fail "match failed: no clause for Nil"') == 2
    assert values_equal(run_lir(program, list_value([i32(7), i32(8)])), (i32(7), i32(8)))
    with pytest.raises(LirFailure, match="no clause for Nil"):
        run_lir(program, list_value([i32(7)]))


def test_match_fail_op_becomes_fail_and_irrefutable_match_is_inlined():
    # The real match compiler makes the one-level matches and the transpile.match_fail marker.
    from transpile.passes.anf import to_anf
    from transpile.passes.match_compile import compile_matches

    src = '#[version = "0.0.5"]' + LIST_TYPE + """
def @main(%xs: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  let %pair = (%xs, %xs);
  match? (%pair) {
    (Cons(%a, Cons(%b, _)), _) => add(%a, %b),
  }
}
"""
    mod = compile_matches(to_anf(typed(src)))
    program = mark_tail_calls(lower(mod))
    verify(program)
    text = print_program(program)
    assert text.count('fail "no clause of match at from_string:9:3 matched"') == 2
    assert "match" in text and "%pair" in text
    assert values_equal(run_lir(program, list_value([i32(21), i32(21), i32(5)])), i32(42))
    with pytest.raises(LirFailure, match="no clause of match"):
        run_lir(program, list_value([i32(1)]))


def test_irrefutable_tuple_match_is_inlined_as_projections():
    src = """#[version = "0.0.5"]
def @main(%p: (Tensor[(), int32], Tensor[(), float32])) -> Tensor[(), float32] {
  let %r = match (%p) {
    (_, %y) => %y,
  };
  %r
}
"""
    program = lowered(src)
    body = program.entry_function.body
    assert [type(s.value).__name__ for s in body.stmts] == ["Proj", "AtomValue"]
    assert values_equal(run_lir(program, (i32(1), f32(2.5))), f32(2.5))


REFS_SRC = """#[version = "0.0.5"]
def @main(%x: Tensor[(), float32]) -> (Tensor[(), float32], Tensor[(), float32], ()) {
  let %cell = ref(%x);
  let %old = ref_read(%cell);
  let %d = (fn (%p0: Tensor[(), float32], Primitive=1) { multiply(%p0, 2f) })(%old);
  let %u = ref_write(%cell, %d);
  let %new = ref_read(%cell);
  let %pair = (%old, %new);
  let %first = %pair.0;
  (%first, %new, %u)
}
"""


def test_refs_and_tuples():
    program = lowered(REFS_SRC)
    body = program.entry_function.body
    kinds = [type(s.value).__name__ for s in body.stmts]
    assert kinds == ["RefNew", "RefGet", "KernelCall", "RefSet", "RefGet", "MakeTuple", "Proj", "MakeTuple"]
    assert body.stmts[3].var.type == UNIT
    assert values_equal(run_lir(program, f32(3.0)), (f32(3.0), f32(6.0), ()))


def test_spans_are_carried_to_lets():
    program = lowered(CLOSURE_SRC)
    spans = {s.var.name: s.span for s in iter_lets(program.entry_function.body)}
    assert spans["r"] == Span("from_string", 7, 12, spans["r"].end_line, spans["r"].end_column)
    assert program.function("scale").span.line == 3
    assert "// from_string:7:12" in print_program(program, show_spans=True)


# ---------------------------------------------------------------- tail calls


def test_tail_marking_is_exact_and_idempotent():
    program = lowered(LOOP_SRC)
    marked = {
        f.name: sorted(s.var.name for s in iter_lets(f.body) if getattr(s.value, "tail", False))
        for f in program.functions
    }
    assert marked == {"loop": ["next"], "main": ["out"]}
    for f in program.functions:
        assert {s.var.name for s in tail_lets(f.body) if isinstance(s.value, (Call, ClosureCall))} == set(
            marked[f.name]
        )
    assert mark_tail_calls(program) == program
    # A call that is not in tail position loses a stale mark.
    sum_program = lowered(SUM_SRC)
    assert "call @sum(%t)" in print_program(sum_program) and "tailcall @sum(%t)" not in print_program(sum_program)


def test_deep_tail_recursive_loop_runs_in_lir():
    # The loop is 3 000 iterations deep in the evaluator (no loops there): the LIR itself stays small.
    assert values_equal(run_lir(lowered(LOOP_SRC), i32(3000)), i32(3000 * 3001 // 2))


# ---------------------------------------------------------------- contract violations


def test_polymorphic_function_is_rejected_with_a_hint():
    src = """#[version = "0.0.5"]
def @id[A](%x: A) -> A { %x }
def @main(%x: Tensor[(), int32]) -> Tensor[(), int32] { @id(%x) }
"""
    with pytest.raises(LoweringError, match="polymorphic .*monomorphization"):
        lower(typed(src))


def test_nested_patterns_are_rejected_with_a_hint():
    src = '#[version = "0.0.5"]' + LIST_TYPE + """
def @main(%xs: List[Tensor[(), int32]]) -> Tensor[(), int32] {
  match (%xs) {
    Cons(_, Cons(%y, _)) => %y,
    _ => 0,
  }
}
"""
    with pytest.raises(LoweringError, match="compile_matches") as info:
        lower(typed(src))
    assert isinstance(info.value, TranspileError) and info.value.span.line == 9


def test_lowering_types_are_lir_types():
    program = lowered(SUM_SRC)
    assert program.function("sum").params[0].type == AdtT("List_int32")
    assert program.function("sum").ret == TensorType((), "int32")


def test_let_bound_primitive_function_calls_are_kernel_calls():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %k = fn (%p0: Tensor[(2), float32], Primitive=1) { negative(%p0) };
  let %a = %k(%x);
  let %b = %k(%a);
  %b
}
"""
    program = lowered(src)
    assert [k.name for k in program.kernels] == ["fused_negative"]
    assert [type(s.value).__name__ for s in program.entry_function.body.stmts] == ["KernelCall", "KernelCall"]
    np.testing.assert_array_equal(run_lir(program, f32([1, -2])), f32([1, -2]))


def test_match_failure_wrapped_as_a_primitive_call_becomes_fail():
    from transpile.passes.match_compile import match_fail
    from transpile.relay import expr as rx

    mod = relay.parse('#[version = "0.0.5"]' + LIST_TYPE)
    list_ty = relay.TypeCall(mod.get_global_type_var("List"), [relay.scalar_type("int32")])
    xs, h = relay.var("xs", list_ty), relay.var("h")
    cons = mod.get_constructor("Cons")
    i32_ty = relay.scalar_type("int32")
    wrapped = relay.Function([], match_fail("no clause matched", i32_ty)).with_attr("Primitive", 1)
    wrapped._set_checked_type(relay.FuncType([], i32_ty))
    failing = rx.Call(wrapped, [])
    failing._set_checked_type(i32_ty)
    body = relay.Match(
        xs,
        [
            relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternWildcard()]), h),
            relay.Clause(relay.PatternWildcard(), failing),
        ],
    )
    for node, ty in ((xs, list_ty), (h, i32_ty), (body, i32_ty)):
        node._set_checked_type(ty)
    main = relay.Function([xs], body)
    main._set_checked_type(relay.FuncType([list_ty], i32_ty))
    mod["main"] = main
    program = mark_tail_calls(lower(mod))
    verify(program)
    assert program.kernels == () and 'fail "no clause matched"' in print_program(program)
    with pytest.raises(LirFailure, match="no clause matched"):
        run_lir(program, list_value([]))


def test_operator_free_primitive_functions_are_inlined_per_call():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) -> ((Tensor[(2), float32], Tensor[(2), float32]), (Tensor[(2), float32], Tensor[(2), float32])) {
  %0 = fn (%p0: Tensor[(2), float32], %p1: Tensor[(2), float32], Primitive=1) { (%p1, %p0) };
  let %a = %0(%x, %y);
  let %b = %0(%y, %x);
  (%a, %b)
}
"""
    program = lowered(src)
    assert program.kernels == ()
    x, y = f32([1, 2]), f32([3, 4])
    assert values_equal(run_lir(program, x, y), ((y, x), (x, y)))
