"""Closure conversion and lambda lifting: envs, letrec self-reference, escaping closures, globals and
constructors as values — checked on the LIR structure and by running it (test_pass_lower.run_lir)."""

from __future__ import annotations

import numpy as np
import pytest

import transpile.relay as relay
from transpile.lir import Call, ClosureCall, MakeAdt, MakeClosure, iter_lets, print_program, verify
from transpile.lir.types import AdtT, ClosureT, TensorType
from transpile.passes.closure import captured_vars
from transpile.passes.lower import lower
from transpile.passes.tailcall import mark_tail_calls
from transpile.runtime import ADTValue, values_equal

from test_pass_lower import LIST_TYPE, LirClosure, i32, list_value, run_lir, typed

I32 = TensorType((), "int32")


def lowered(src: str, entry: str = "main"):
    program = mark_tail_calls(lower(typed('#[version = "0.0.5"]\n' + src), entry))
    verify(program)
    return program


def lets(program, name):
    return {s.var.name: s.value for s in iter_lets(program.function(name).body)}


def test_captured_vars_are_the_free_vars_in_order_without_the_closure_itself():
    x, y, f = relay.var("x", "int32"), relay.var("y", "int32"), relay.var("f")
    a = relay.var("a", "int32")
    fn = relay.Function([a], relay.Tuple([y, relay.Call(f, [x]), a, x]))
    assert captured_vars(fn) == [y, f, x]
    assert captured_vars(fn, self_var=f) == [y, x]


CURRY = """
def @main(%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), int32] {
  let %adder = fn (%x: Tensor[(), int32]) -> fn (Tensor[(), int32]) -> Tensor[(), int32] {
    let %inner = fn (%y: Tensor[(), int32]) -> Tensor[(), int32] {
      let %s = add(%x, %y);
      let %t = add(%s, %a);
      %t
    };
    %inner
  };
  let %add_a = %adder(%b);
  let %r = %add_a(%b);
  %r
}
"""


def test_nested_closures_capture_outer_params_and_env():
    program = lowered(CURRY)
    inner, adder = program.function("inner"), program.function("adder")
    # inner's env: the outer param %x and main's %a, in order of first use.
    assert [(p.name, p.type) for p in inner.env] == [("x", I32), ("a", I32)]
    assert [p.name for p in adder.env] == ["a"]
    assert lets(program, "adder")["inner"] == MakeClosure("inner", (adder.params[0].var(), adder.env[0].var()))
    assert values_equal(run_lir(program, i32(1), i32(10)), i32(21))


LETREC_SELF_VALUE = """
def @main(%n: Tensor[(), int32], %k: Tensor[(), int32]) -> Tensor[(), int32] {
  let %f = fn (%i: Tensor[(), int32]) -> Tensor[(), int32] {
    let %c = greater(%i, 0);
    let %r = if (%c) {
      let %again = %f;
      let %j = subtract(%i, 1);
      let %v = %again(%j);
      let %w = add(%v, %k);
      %w
    } else {
      let %h = fn (%m: Tensor[(), int32]) -> Tensor[(), int32] {
        let %u = %f(%m);
        %u
      };
      let %z = %h(-1);
      %z
    };
    %r
  };
  let %out = %f(%n);
  %out
}
"""


def test_letrec_self_reference_as_a_value_rebuilds_the_closure_from_its_env():
    program = lowered(LETREC_SELF_VALUE)
    f = program.function("f")
    assert [p.name for p in f.env] == ["k"]
    body = lets(program, "f")
    # %again is %f used as a value: the closure is rebuilt from f's own env inside its body.
    rebuilt = [v for v in body.values() if isinstance(v, MakeClosure) and v.func == "f"]
    assert rebuilt == [MakeClosure("f", (f.env[0].var(),)), MakeClosure("f", (f.env[0].var(),))]
    # The inner closure %h captures %f (rebuilt for it) and calls it as a closure.
    h = program.function("h")
    assert [(p.name, p.type) for p in h.env] == [("f", ClosureT((I32,), I32))]
    assert isinstance(lets(program, "h")["u"], ClosureCall)
    # (It never terminates at run time; test_self_value_program_runs_when_it_terminates runs one that does.)


def test_letrec_direct_self_call_reuses_the_env_and_is_a_tail_call():
    src = """
def @main(%n: Tensor[(), int32], %step: Tensor[(), int32]) -> Tensor[(), int32] {
  let %count = fn (%i: Tensor[(), int32], %acc: Tensor[(), int32]) -> Tensor[(), int32] {
    let %c = greater(%i, 0);
    if (%c) {
      let %j = subtract(%i, %step);
      let %a = add(%acc, 1);
      %count(%j, %a)
    } else {
      %acc
    }
  };
  %count(%n, 0)
}
"""
    program = lowered(src)
    count = program.function("count")
    assert [p.name for p in count.env] == ["step"]
    self_calls = [v for v in lets(program, "count").values() if isinstance(v, Call)]
    assert self_calls == [Call("count", self_calls[0].args, tail=True)]
    assert values_equal(run_lir(program, i32(10), i32(3)), i32(4))


ESCAPING = """
def @make_counter(%step: Tensor[(), int32]) -> fn (Tensor[(), int32], Tensor[(), int32]) -> Tensor[(), int32] {
  let %loop = fn (%i: Tensor[(), int32], %acc: Tensor[(), int32]) -> Tensor[(), int32] {
    let %c = greater(%i, 0);
    if (%c) {
      %loop(subtract(%i, 1), add(%acc, %step))
    } else {
      %acc
    }
  };
  %loop
}

def @main(%n: Tensor[(), int32]) -> (Tensor[(), int32], Tensor[(), int32]) {
  let %by2 = @make_counter(2);
  let %by5 = @make_counter(5);
  (%by2(%n, 0), %by5(%n, 1))
}
"""


def test_letrec_closure_escaping_its_defining_function():
    program = lowered(ESCAPING)
    loop = program.function("loop")
    assert loop.relay_name == "make_counter" and [p.name for p in loop.env] == ["step"]
    assert lets(program, "make_counter")["loop"] == MakeClosure(
        "loop", (program.function("make_counter").params[0].var(),)
    )
    assert values_equal(run_lir(program, i32(4)), (i32(8), i32(21)))


GLOBAL_AS_VALUE = """
def @inc(%x: Tensor[(), int32]) -> Tensor[(), int32] {
  add(%x, 1)
}

def @twice(%f: fn (Tensor[(), int32]) -> Tensor[(), int32], %x: Tensor[(), int32]) -> Tensor[(), int32] {
  %f(%f(%x))
}

def @main(%x: Tensor[(), int32]) -> (Tensor[(), int32], Tensor[(), int32], fn (Tensor[(), int32]) -> Tensor[(), int32]) {
  let %a = @twice(@inc, %x);
  let %b = @twice(@inc, %a);
  (%a, %b, @inc)
}
"""


def test_global_used_as_a_value_gets_one_wrapper_closure():
    program = lowered(GLOBAL_AS_VALUE)
    wrapper = program.function("inc_closure")
    assert wrapper.env == () and wrapper.relay_name == "inc"
    text = print_program(program)
    assert "fn @inc_closure env() (%a0: Tensor[(), int32]) -> Tensor[(), int32] {  // from @inc\n" in text
    assert "  %r = tailcall @inc(%a0)\n" in text
    assert text.count("make_closure @inc_closure()") == 3  # one wrapper, a closure at each use
    a, b, f = run_lir(program, i32(5))
    assert values_equal((a, b), (i32(7), i32(9)))
    assert isinstance(f, LirClosure) and values_equal(f(i32(41)), i32(42))


CTOR_AS_VALUE = LIST_TYPE + """
def @apply(%f: fn (Tensor[(), int32], List[Tensor[(), int32]]) -> List[Tensor[(), int32]],
           %x: Tensor[(), int32], %xs: List[Tensor[(), int32]]) -> List[Tensor[(), int32]] {
  %f(%x, %xs)
}

def @main(%x: Tensor[(), int32]) -> List[Tensor[(), int32]] {
  let %one = @apply(Cons, %x, Nil);
  @apply(Cons, 7, %one)
}
"""


def test_constructor_used_as_a_value_gets_a_wrapper_closure():
    program = lowered(CTOR_AS_VALUE)
    wrapper = program.function("List_int32_Cons")
    assert wrapper.env == () and [p.type for p in wrapper.params] == [I32, AdtT("List_int32")]
    assert lets(program, "List_int32_Cons")["r"] == MakeAdt(
        "List_int32", "Cons", tuple(p.var() for p in wrapper.params)
    )
    assert print_program(program).count("make_closure @List_int32_Cons()") == 2
    assert run_lir(program, i32(3)) == list_value([i32(7), i32(3)])


def test_anonymous_lambdas_are_named_after_their_global():
    src = """
def @main(%x: Tensor[(), int32]) -> fn (Tensor[(), int32]) -> Tensor[(), int32] {
  fn (%y: Tensor[(), int32]) -> Tensor[(), int32] { add(%x, %y) }
}
"""
    program = lowered(src)
    assert [f.name for f in program.functions] == ["main_lambda", "main"]
    closure = run_lir(program, i32(2))
    assert values_equal(closure(i32(3)), i32(5))


def test_lifted_names_never_clash_with_globals():
    src = """
def @loop(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }

def @main(%x: Tensor[(), int32]) -> Tensor[(), int32] {
  let %loop = fn (%y: Tensor[(), int32]) -> Tensor[(), int32] { @loop(%y) };
  %loop(%x)
}
"""
    program = lowered(src)
    assert sorted(f.name for f in program.functions) == ["loop", "loop_1", "main"]
    assert program.function("loop_1").env == ()


def test_closure_types_in_adts_and_tuples():
    src = LIST_TYPE + """
def @main(%x: Tensor[(), int32]) -> List[fn (Tensor[(), int32]) -> Tensor[(), int32]] {
  let %f = fn (%y: Tensor[(), int32]) -> Tensor[(), int32] { add(%x, %y) };
  Cons(%f, Nil)
}
"""
    program = lowered(src)
    assert [a.name for a in program.adts] == ["List_Fn_int32_to_int32"]
    value = run_lir(program, i32(1))
    assert isinstance(value, ADTValue) and value.constructor == "Cons"
    assert values_equal(value.fields[0](i32(4)), i32(5))
    assert value.fields[1] == ADTValue("Nil")


@pytest.mark.parametrize("n, expected", [(0, 0), (3, 6)])
def test_self_value_program_runs_when_it_terminates(n, expected):
    # f(i) = i > 0 ? again(i - 1) + k : 0, with %again = %f rebuilt as a closure value.
    src = """
def @main(%n: Tensor[(), int32], %k: Tensor[(), int32]) -> Tensor[(), int32] {
  let %f = fn (%i: Tensor[(), int32]) -> Tensor[(), int32] {
    if (greater(%i, 0)) {
      let %again = %f;
      add(%again(subtract(%i, 1)), %k)
    } else {
      0
    }
  };
  %f(%n)
}
"""
    program = lowered(src)
    assert any(isinstance(v, MakeClosure) and v.func == "f" for v in lets(program, "f").values())
    assert values_equal(run_lir(program, i32(n), i32(2)), i32(expected))
    assert np.asarray(run_lir(program, i32(n), i32(2))).dtype == np.int32
