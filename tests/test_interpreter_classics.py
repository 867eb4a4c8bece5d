"""The classic relay-aot and py_converter test programs, run by the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import evaluate
from transpile.runtime import ADTValue, RefValue

I32 = relay.TensorType((), "int32")
F32 = relay.TensorType((), "float32")


def i32(value) -> np.ndarray:
    return np.array(value, dtype="int32")


def f32(value) -> np.ndarray:
    return np.array(value, dtype="float32")


def assert_value(actual, expected) -> None:
    """Deep equality with exact dtypes for tensors."""
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"expected an array, got {actual!r}"
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    elif isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected):
            assert_value(a, e)
    else:
        assert actual == expected


def nat_value(n: int) -> ADTValue:
    value = ADTValue("zero")
    for _ in range(n):
        value = ADTValue("succ", (value,))
    return value


# ----- tensors and arithmetic ------------------------------------------------------------------


def test_identity():
    x = relay.var("x", shape=(10,))
    data = np.arange(10, dtype="float32")
    assert_value(evaluate(relay.Function([x], x), data), data)


def test_add():
    x = relay.var("x", shape=(10,))
    y = relay.var("y", shape=(10,))
    a = np.linspace(0, 1, 10).astype("float32")
    b = np.linspace(3, 5, 10).astype("float32")
    assert_value(evaluate(relay.Function([x, y], relay.add(x, y)), a, b), a + b)


def test_mult_op():
    x = relay.var("x", shape=(10,))
    y = relay.var("y", shape=(10,))
    a = np.arange(10, dtype="float32")
    b = np.full(10, 3, dtype="float32")
    body = relay.multiply(relay.add(x, y), y)
    assert_value(evaluate(relay.Function([x, y], body), a, b), (a + b) * b)


def test_double_via_global():
    mod = relay.IRModule()
    double = relay.GlobalVar("double")
    x = relay.var("x", shape=(10,))
    mod[double] = relay.Function([x], relay.add(x, x))
    y = relay.var("y", shape=(10,))
    mod["main"] = relay.Function([y], double(y))
    data = np.arange(10, dtype="float32")
    assert_value(evaluate(mod, data), data * 2)


def test_constant_42_and_add_42():
    assert_value(evaluate(relay.Function([], relay.const(42))), i32(42))
    x = relay.var("x", "int32")
    assert_value(evaluate(relay.Function([x], relay.add(x, relay.const(42))), 8), i32(50))


def test_int_arithmetic():
    x = relay.var("x", "int32")
    y = relay.var("y", "int32")
    # (x * 3 - y) // 2 with Relay's division rounding toward zero for ints: (7*3 - 30) / 2 = -9 / 2 = -4
    body = relay.divide(relay.subtract(relay.multiply(x, relay.const(3)), y), relay.const(2))
    assert_value(evaluate(relay.Function([x, y], body), 7, 30), i32(-4))


def test_abs_via_if():
    x = relay.var("x", "int32")
    body = relay.If(relay.less(x, relay.const(0)), relay.negative(x), x)
    func = relay.Function([x], body)
    assert_value(evaluate(func, -8), i32(8))
    assert_value(evaluate(func, 5), i32(5))


def test_float_scalar_arithmetic_from_python_numbers():
    x = relay.var("x", "float32")
    body = relay.multiply(relay.add(x, relay.const(0.5)), relay.const(2.0))
    assert_value(evaluate(relay.Function([x], body), 1.25), f32(3.5))


# ----- recursion ---------------------------------------------------------------------------------


def _sum_to_module() -> relay.IRModule:
    mod = relay.IRModule()
    sum_up = relay.GlobalVar("sum_up")
    n = relay.var("n", "int32")
    body = relay.If(
        relay.equal(n, relay.const(0)),
        relay.const(0),
        relay.add(n, sum_up(relay.subtract(n, relay.const(1)))),
    )
    mod[sum_up] = relay.Function([n], body, I32)
    m = relay.var("m", "int32")
    mod["main"] = relay.Function([m], sum_up(m))
    return mod


def test_recursive_sum_global():
    assert_value(evaluate(_sum_to_module(), 10), i32(55))
    assert_value(evaluate(_sum_to_module(), 0), i32(0))


def test_recursive_sum_local():
    n = relay.var("n", "int32")
    f = relay.var("f", relay.FuncType([I32], I32))
    k = relay.var("k", "int32")
    loop = relay.Function(
        [k],
        relay.If(relay.equal(k, relay.const(0)), relay.const(0), relay.add(k, f(relay.subtract(k, relay.const(1))))),
        I32,
    )
    func = relay.Function([n], relay.Let(f, loop, f(n)))
    assert_value(evaluate(func, 10), i32(55))


def test_local_recursive_closure_escapes_its_scope():
    # let %f = fn(%k) { if k == 0 { 0 } else { k * step + f(k - 1) } } captures %step and
    # itself; the closure is returned to Python and called there after @main has returned.
    step = relay.var("step", "int32")
    f = relay.var("f", relay.FuncType([I32], I32))
    k = relay.var("k", "int32")
    loop = relay.Function(
        [k],
        relay.If(
            relay.equal(k, relay.const(0)),
            relay.const(0),
            relay.add(relay.multiply(k, step), f(relay.subtract(k, relay.const(1)))),
        ),
        I32,
    )
    closure = evaluate(relay.Function([step], relay.Let(f, loop, f)), 3)
    assert callable(closure)
    assert_value(closure(4), i32(3 * (4 + 3 + 2 + 1)))
    assert_value(closure(np.int32(1)), i32(3))


def test_closure_captures_outer_scope_of_nested_functions():
    # fn(%x) { fn(%y) { fn(%z) { x - y * z } } } applied three times.
    x, y, z = relay.var("x", "int32"), relay.var("y", "int32"), relay.var("z", "int32")
    inner = relay.Function([z], relay.subtract(x, relay.multiply(y, z)))
    middle = relay.Function([y], inner)
    outer = relay.Function([x], middle)
    a = relay.var("a", "int32")
    body = relay.Call(relay.Call(relay.Call(outer, [a]), [relay.const(4)]), [relay.const(5)])
    assert_value(evaluate(relay.Function([a], body), 100), i32(80))


def test_higher_order_call_and_composition_of_globals():
    mod = relay.IRModule()
    inc, dbl, compose = relay.GlobalVar("inc"), relay.GlobalVar("dbl"), relay.GlobalVar("compose")
    x = relay.var("x", "int32")
    mod[inc] = relay.Function([x], relay.add(x, relay.const(1)))
    y = relay.var("y", "int32")
    mod[dbl] = relay.Function([y], relay.multiply(y, relay.const(2)))
    fn_ty = relay.FuncType([I32], I32)
    f, g, v = relay.var("f", fn_ty), relay.var("g", fn_ty), relay.var("v", "int32")
    mod[compose] = relay.Function([f, g], relay.Function([v], f(g(v))))
    n = relay.var("n", "int32")
    mod["main"] = relay.Function([n], relay.Tuple([compose(inc, dbl)(n), compose(dbl, inc)(n)]))
    assert_value(evaluate(mod, 5), (i32(11), i32(12)))


# ----- nat ---------------------------------------------------------------------------------------


def test_nat_values_and_addition():
    p = relay.Prelude()
    three = p.s(p.s(p.s(p.z())))
    four = p.s(three)
    mod = p.mod
    mod["main"] = relay.Function([], relay.Tuple([three, p.nat_add(three, four)]))
    value_three, sum_value = evaluate(mod)
    assert value_three == nat_value(3)
    assert sum_value == nat_value(7)
    assert sum_value == ADTValue("succ", (nat_value(6),))


def test_nat_addition_with_python_arguments():
    p = relay.Prelude()
    a = relay.var("a", p.nat)
    b = relay.var("b", p.nat)
    p.mod["main"] = relay.Function([a, b], p.nat_add(a, b))
    assert evaluate(p.mod, nat_value(3), nat_value(4)) == nat_value(7)


# ----- references and tuples ---------------------------------------------------------------------


def test_ref_write_then_read():
    r = relay.var("r")
    body = relay.Let(
        r, relay.RefCreate(relay.const(1)), relay.Tuple([relay.RefWrite(r, relay.const(2)), relay.RefRead(r)])
    )
    unit, value = evaluate(relay.Function([], body))
    assert unit == ()
    assert_value(value, i32(2))


def test_ref_aliasing():
    # %a and %b are the same cell: writing through %b is seen through %a.
    a, b = relay.var("a"), relay.var("b")
    body = relay.Let(
        a,
        relay.RefCreate(relay.const(10)),
        relay.Let(b, a, relay.Let(relay.var("_"), relay.RefWrite(b, relay.const(20)), relay.RefRead(a))),
    )
    assert_value(evaluate(relay.Function([], body)), i32(20))


def test_ref_returned_to_python_is_a_shared_cell():
    r = relay.var("r")
    ref, rewrite = evaluate(
        relay.Function(
            [],
            relay.Let(
                r,
                relay.RefCreate(relay.const(1)),
                relay.Tuple([r, relay.Function([], relay.RefWrite(r, relay.const(7)))]),
            ),
        )
    )
    assert isinstance(ref, RefValue)
    assert_value(ref.value, i32(1))
    rewrite()
    assert_value(ref.value, i32(7))


def test_tuples():
    x = relay.var("x", "int32")
    y = relay.var("y", shape=(2,))
    t = relay.Tuple([x, relay.Tuple([y, relay.Tuple([])])])
    body = relay.Tuple([relay.TupleGetItem(relay.TupleGetItem(t, 1), 0), relay.TupleGetItem(t, 0), t])
    data = np.array([1.5, 2.5], dtype="float32")
    got = evaluate(relay.Function([x, y], body), 3, data)
    assert_value(got, (data, i32(3), (i32(3), (data, ()))))


def test_empty_tuple():
    assert evaluate(relay.Function([], relay.Tuple([]))) == ()


# ----- match -------------------------------------------------------------------------------------


def test_match_order_first_clause_wins():
    p = relay.Prelude()
    xs = relay.var("xs", relay.TypeCall(p.l, [I32]))
    h, t = relay.var("h"), relay.var("t")
    body = relay.Match(
        xs,
        [
            relay.Clause(
                relay.PatternConstructor(p.cons, [relay.PatternVar(h), relay.PatternWildcard()]), relay.const(1)
            ),
            relay.Clause(relay.PatternWildcard(), relay.const(2)),
            relay.Clause(
                relay.PatternConstructor(p.cons, [relay.PatternWildcard(), relay.PatternVar(t)]), relay.const(3)
            ),
            relay.Clause(relay.PatternConstructor(p.nil), relay.const(4)),
        ],
    )
    p.mod["main"] = relay.Function([xs], body)
    assert_value(evaluate(p.mod, ADTValue("Cons", (5, ADTValue("Nil")))), i32(1))
    # Nil skips the Cons clause and stops at the wildcard, never reaching the Nil clause.
    assert_value(evaluate(p.mod, ADTValue("Nil")), i32(2))


def test_nested_patterns():
    # match (xs) { Cons(a, Cons(b, Nil)) => a * b, Cons(a, Cons(_, Cons(c, _))) => a - c, Cons(a, _) => a, Nil => -1 }
    p = relay.Prelude()
    xs = relay.var("xs", relay.TypeCall(p.l, [I32]))
    a, b, c = relay.var("a"), relay.var("b"), relay.var("c")
    PC, PV, PW = relay.PatternConstructor, relay.PatternVar, relay.PatternWildcard
    body = relay.Match(
        xs,
        [
            relay.Clause(PC(p.cons, [PV(a), PC(p.cons, [PV(b), PC(p.nil)])]), relay.multiply(a, b)),
            relay.Clause(PC(p.cons, [PV(a), PC(p.cons, [PW(), PC(p.cons, [PV(c), PW()])])]), relay.subtract(a, c)),
            relay.Clause(PC(p.cons, [PV(a), PW()]), a),
            relay.Clause(PC(p.nil), relay.const(-1)),
        ],
    )
    p.mod["main"] = relay.Function([xs], body)

    def lst(*items):
        value = ADTValue("Nil")
        for item in reversed(items):
            value = ADTValue("Cons", (i32(item), value))
        return value

    assert_value(evaluate(p.mod, lst(6, 7)), i32(42))
    assert_value(evaluate(p.mod, lst(10, 0, 4, 9)), i32(6))
    assert_value(evaluate(p.mod, lst(5)), i32(5))
    assert_value(evaluate(p.mod, lst()), i32(-1))


def test_match_on_tuple_patterns_and_option():
    p = relay.Prelude()
    o1 = relay.var("o1", relay.TypeCall(p.optional, [I32]))
    o2 = relay.var("o2", relay.TypeCall(p.optional, [I32]))
    x, y = relay.var("x"), relay.var("y")
    PC, PV, PT, PW = relay.PatternConstructor, relay.PatternVar, relay.PatternTuple, relay.PatternWildcard
    body = relay.Match(
        relay.Tuple([o1, o2]),
        [
            relay.Clause(PT([PC(p.some, [PV(x)]), PC(p.some, [PV(y)])]), relay.add(x, y)),
            relay.Clause(PT([PC(p.some, [PV(x)]), PW()]), x),
            relay.Clause(PW(), relay.const(0)),
        ],
    )
    p.mod["main"] = relay.Function([o1, o2], body)
    some = lambda v: ADTValue("Some", (v,))  # noqa: E731
    assert_value(evaluate(p.mod, some(3), some(4)), i32(7))
    assert_value(evaluate(p.mod, some(3), ADTValue("None")), i32(3))
    assert_value(evaluate(p.mod, ADTValue("None"), some(4)), i32(0))


# ----- evaluation order --------------------------------------------------------------------------


def _appending(log, value):
    """`log := value :: !log` followed by `value`: an expression with an observable effect."""
    p_cons = log[1]
    return relay.Let(
        relay.var("_"),
        relay.RefWrite(log[0], p_cons(relay.const(value), relay.RefRead(log[0]))),
        relay.const(value),
    )


def test_left_to_right_effect_order():
    # Arguments of operator calls, tuple fields, constructor and closure call arguments are
    # evaluated left to right: each one prepends its number to a log held in a reference.
    p = relay.Prelude()
    r = relay.var("log")
    log = (r, p.cons)
    f = relay.var("f")
    a, b, c = relay.var("a", "int32"), relay.var("b", "int32"), relay.var("c", "int32")
    body = relay.Let(
        r,
        relay.RefCreate(p.nil()),
        relay.Let(
            f,
            relay.Function([a, b, c], relay.add(a, relay.add(b, c))),
            relay.Let(
                relay.var("_t"),
                relay.Tuple([_appending(log, 1), relay.add(_appending(log, 2), _appending(log, 3))]),
                relay.Let(
                    relay.var("_c"),
                    f(_appending(log, 4), _appending(log, 5), _appending(log, 6)),
                    relay.RefRead(r),
                ),
            ),
        ),
    )
    log_value = evaluate(relay.Function([], body), mod=p.mod)
    order = []
    while log_value.constructor == "Cons":
        order.append(int(log_value.fields[0]))
        log_value = log_value.fields[1]
    assert order[::-1] == [1, 2, 3, 4, 5, 6]


def test_if_evaluates_only_the_taken_branch():
    r = relay.var("r")
    cond = relay.var("cond", "bool")
    write = lambda v: relay.Let(relay.var("_"), relay.RefWrite(r, relay.const(v)), relay.const(0))  # noqa: E731
    body = relay.Let(
        r,
        relay.RefCreate(relay.const(0)),
        relay.Let(relay.var("_i"), relay.If(cond, write(1), write(2)), relay.RefRead(r)),
    )
    func = relay.Function([cond], body)
    assert_value(evaluate(func, True), i32(1))
    assert_value(evaluate(func, False), i32(2))


# ----- operators with tuples ---------------------------------------------------------------------


def test_stack():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(2, 3))
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = -a
    got = evaluate(relay.Function([x, y], relay.stack(relay.Tuple([x, y]), axis=1)), a, b)
    assert_value(got, np.stack([a, b], axis=1))


def test_split():
    x = relay.var("x", shape=(6, 2))
    data = np.arange(12, dtype="float32").reshape(6, 2)
    got = evaluate(relay.Function([x], relay.split(x, indices_or_sections=3, axis=0).astuple()), data)
    assert_value(got, tuple(np.split(data, 3, axis=0)))
    got = evaluate(relay.Function([x], relay.split(x, indices_or_sections=(1, 4), axis=0).astuple()), data)
    assert_value(got, (data[:1], data[1:4], data[4:]))


def test_batch_norm():
    shape = (2, 3, 4)
    x = relay.var("x", shape=shape)
    gamma, beta = relay.var("gamma", shape=(3,)), relay.var("beta", shape=(3,))
    mean, var = relay.var("mean", shape=(3,)), relay.var("var", shape=(3,))
    call = relay.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-5)
    func = relay.Function([x, gamma, beta, mean, var], call.astuple())
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype("float32")
    g, b, m = (rng.standard_normal(3).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 2.0, 3).astype("float32")
    out, moving_mean, moving_var = evaluate(func, data, g, b, m, v)
    expected = (data - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-5) * g[None, :, None] + b[None, :, None]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(moving_mean, m)
    np.testing.assert_array_equal(moving_var, v)


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (5, 120), (10, 3628800)])
def test_factorial_text_program(n, expected):
    mod = relay.parse("""
        #[version = "0.0.5"]
        def @fact(%n: int32) -> int32 {
          if (%n <= 1) { 1 } else { %n * @fact(%n - 1) }
        }
        def @main(%n: int32) -> int32 { @fact(%n) }
        """)
    assert_value(evaluate(mod, n), i32(expected))
