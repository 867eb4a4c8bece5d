"""The reference interpreter: argument conversion and errors, sharing, closures from Python, depth."""

from __future__ import annotations

import time

import numpy as np
import pytest

from transpile import EvaluationError, relay
from transpile.relay import evaluate
from transpile.relay.deep import run_deep
from transpile.relay.interpreter import compiler as interp_compiler
from transpile.runtime import ADTValue, RefValue

I32 = relay.TensorType((), "int32")


def i32(value):
    return np.array(value, dtype="int32")


def _matrix_func():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", "float32")
    return relay.Function([x, y], relay.multiply(x, y))


# ----- argument conversion -----------------------------------------------------------------------


def test_python_numbers_convert_to_the_parameter_dtype():
    x = relay.var("x", "int32")
    y = relay.var("y", "float32")
    z = relay.var("z", "int64")
    func = relay.Function([x, y, z], relay.Tuple([x, y, z]))
    a, b, c = evaluate(func, 3, 2, 2**40)
    assert a.dtype == np.int32 and a.shape == () and int(a) == 3
    assert b.dtype == np.float32 and float(b) == 2.0
    assert c.dtype == np.int64 and int(c) == 2**40


def test_numpy_scalars_and_zero_d_arrays_are_accepted_with_the_exact_dtype():
    x = relay.var("x", "int32")
    func = relay.Function([x], relay.add(x, relay.const(1)))
    assert int(evaluate(func, np.int32(4))) == 5
    assert int(evaluate(func, np.array(4, dtype="int32"))) == 5
    with pytest.raises(EvaluationError, match=r"expected int32 but got an array of shape \(\) and dtype int64"):
        evaluate(func, np.array(4, dtype="int64"))


def test_lossy_python_number_is_an_error():
    x = relay.var("x", "int32")
    func = relay.Function([x], x)
    with pytest.raises(EvaluationError) as info:
        evaluate(func, 3.5)
    message = str(info.value)
    assert message.startswith("argument 1 (%x) of @main: expected")
    assert "got the float 3.5" in message and "not representable exactly as int32" in message
    with pytest.raises(EvaluationError, match="out of the range of int32"):
        evaluate(func, 2**31)
    # Integral floats lose nothing.
    assert int(evaluate(func, 7.0)) == 7


def test_shape_mismatch_message():
    with pytest.raises(EvaluationError) as info:
        evaluate(_matrix_func(), np.zeros((3,), dtype="float64"), 1.0)
    assert str(info.value) == (
        "argument 1 (%x) of @main: expected Tensor[(2, 3), float32] but got an array of shape (3,) and dtype float64"
    )


def test_dtype_mismatch_is_not_silently_converted():
    with pytest.raises(EvaluationError, match=r"argument 1 \(%x\) of @main: expected Tensor\[\(2, 3\), float32\]"):
        evaluate(_matrix_func(), np.zeros((2, 3), dtype="float64"), 1.0)


def test_arity_errors():
    with pytest.raises(EvaluationError, match=r"@main expects 2 argument\(s\) \(%x, %y\) but got 1"):
        evaluate(_matrix_func(), np.zeros((2, 3), dtype="float32"))
    with pytest.raises(EvaluationError, match=r"expects 2 argument\(s\) \(%x, %y\) but got 3"):
        evaluate(_matrix_func(), np.zeros((2, 3), dtype="float32"), 1.0, 2.0)


def test_any_dimension_accepts_any_size():
    x = relay.var("x", relay.TensorType((relay.Any(), 2), "float32"))
    func = relay.Function([x], relay.add(x, x))
    for rows in (1, 5):
        data = np.ones((rows, 2), dtype="float32")
        np.testing.assert_array_equal(evaluate(func, data), 2 * data)
    with pytest.raises(EvaluationError, match="shape"):
        evaluate(func, np.ones((2, 3), dtype="float32"))


def test_dlpack_objects_are_accepted():
    class Wrapped:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    x = relay.var("x", shape=(3,))
    data = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(evaluate(relay.Function([x], relay.add(x, x)), Wrapped(data)), data * 2)


def test_tuple_arguments_are_checked_recursively():
    t = relay.var("t", relay.TupleType([I32, relay.TensorType((2,), "float32")]))
    func = relay.Function([t], relay.TupleGetItem(t, 0))
    assert int(evaluate(func, (4, np.zeros(2, dtype="float32")))) == 4
    with pytest.raises(
        EvaluationError, match=r"field 1 of argument 1 \(%t\) of @main: expected Tensor\[\(2\), float32\]"
    ):
        evaluate(func, (4, np.zeros(3, dtype="float32")))
    with pytest.raises(EvaluationError, match="got a tuple of 1 value"):
        evaluate(func, (4,))


def test_adt_arguments_are_checked_for_constructor_membership():
    p = relay.Prelude()
    xs = relay.var("xs", relay.TypeCall(p.l, [I32]))
    p.mod["main"] = relay.Function([xs], p.length(xs))
    assert int(evaluate(p.mod, ADTValue("Cons", (1, ADTValue("Cons", (2, ADTValue("Nil"))))))) == 2
    with pytest.raises(EvaluationError) as info:
        evaluate(p.mod, ADTValue("Some", (1,)))
    assert "argument 1 (%xs) of @main" in str(info.value)
    assert "constructor Some is not one of List's constructors Cons, Nil" in str(info.value)
    with pytest.raises(EvaluationError, match="expected List"):
        evaluate(p.mod, np.zeros(2, dtype="float32"))
    # The element type is checked too, deep inside the list.
    with pytest.raises(EvaluationError, match="not representable exactly as int32"):
        evaluate(p.mod, ADTValue("Cons", (1, ADTValue("Cons", (2.5, ADTValue("Nil"))))))


# ----- closures and functions crossing the Python boundary ----------------------------------------


def test_closure_called_from_python_converts_its_arguments():
    k = relay.var("k", "float32")
    x = relay.var("x", shape=(2,))
    closure = evaluate(relay.Function([k], relay.Function([x], relay.multiply(x, k))), 3)
    np.testing.assert_array_equal(closure(np.array([1, 2], dtype="float32")), np.array([3, 6], dtype="float32"))
    with pytest.raises(EvaluationError, match=r"argument 1 \(%x\)"):
        closure(np.array([1, 2, 3], dtype="float32"))
    with pytest.raises(EvaluationError, match="expects 1 argument"):
        closure()


def test_python_callable_passed_as_a_relay_function():
    f = relay.var("f", relay.FuncType([I32], I32))
    n = relay.var("n", "int32")
    func = relay.Function([f, n], relay.add(f(n), relay.const(1)))
    assert int(evaluate(func, lambda v: v * 10, 4)) == 41
    with pytest.raises(EvaluationError, match="the result of the Python function"):
        evaluate(func, lambda v: "not a tensor", 4)


def test_global_function_as_value_and_constructor_as_value():
    p = relay.Prelude()
    mod = relay.parse(
        """
        #[version = "0.0.5"]
        def @inc(%x: int32) -> int32 { %x + 1 }
        def @main(%xs: List[int32]) -> List[int32] {
          @foldr(Cons, Nil, @map(@inc, %xs))
        }
        """,
        init_module=p.mod,
    )
    got = evaluate(mod, ADTValue("Cons", (1, ADTValue("Cons", (2, ADTValue("Nil"))))))
    assert got == ADTValue("Cons", (i32(2), ADTValue("Cons", (i32(3), ADTValue("Nil")))))


def test_refs_from_python():
    r = relay.var("r", relay.RefType(I32))
    func = relay.Function([r], relay.RefWrite(r, relay.add(relay.RefRead(r), relay.const(1))))
    cell = RefValue(41)
    assert evaluate(func, cell) == ()
    assert isinstance(cell.value, np.ndarray) and int(cell.value) == 42


# ----- sharing -----------------------------------------------------------------------------------


def test_shared_subexpression_is_evaluated_once_per_activation():
    # %bump = (counter := !counter + 1; !counter) is one node used three times: it runs once.
    counter = relay.var("counter")
    bump = relay.Let(
        relay.var("_"),
        relay.RefWrite(counter, relay.add(relay.RefRead(counter), relay.const(1))),
        relay.RefRead(counter),
    )
    body = relay.Let(
        counter,
        relay.RefCreate(relay.const(0)),
        relay.Tuple([bump, relay.add(bump, bump), relay.RefRead(counter)]),
    )
    first, doubled, final = evaluate(relay.Function([], body))
    assert (int(first), int(doubled), int(final)) == (1, 2, 1)


def test_shared_node_in_a_function_runs_once_per_call():
    # @twice_counted(r) = (%0 = r := !r + 1; (%0, %0)); called twice, the counter reaches 2.
    mod = relay.IRModule()
    g = relay.GlobalVar("bump_once")
    r = relay.var("r", relay.RefType(I32))
    write = relay.RefWrite(r, relay.add(relay.RefRead(r), relay.const(1)))
    mod[g] = relay.Function([r], relay.Tuple([write, write]))
    cell = relay.var("cell")
    mod["main"] = relay.Function(
        [],
        relay.Let(
            cell,
            relay.RefCreate(relay.const(0)),
            relay.Let(relay.var("_a"), g(cell), relay.Let(relay.var("_b"), g(cell), relay.RefRead(cell))),
        ),
    )
    assert int(evaluate(mod)) == 2


def test_deep_graph_sharing_is_linear():
    # x1 = x0 + x0, x2 = x1 + x1, ... (each node used twice): 2^60 evaluations without sharing.
    x = relay.var("x", "float32")
    node = x
    for _ in range(60):
        node = relay.add(node, node)
    start = time.perf_counter()
    assert float(evaluate(relay.Function([x], node), 1.0)) == 2.0**60
    assert time.perf_counter() - start < 5


# ----- run-time errors ---------------------------------------------------------------------------


def test_incomplete_match_reports_location_and_value():
    p = relay.Prelude()
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%xs: List[int32]) -> int32 {
  match? (%xs) {
    Cons(%x, Nil) => %x,
  }
}
""",
        source_name="partial.rly",
        init_module=p.mod,
    )
    assert int(evaluate(mod, ADTValue("Cons", (5, ADTValue("Nil"))))) == 5
    with pytest.raises(EvaluationError) as info:
        evaluate(mod, ADTValue("Cons", (1, ADTValue("Cons", (2, ADTValue("Nil"))))))
    error = info.value
    assert "no clause of match at partial.rly:3:" in error.message
    assert "matched value Cons(1, Cons(2, Nil))" in error.message
    assert error.line == 3


def test_prelude_hd_of_empty_list_fails_cleanly():
    p = relay.Prelude()
    xs = relay.var("xs", relay.TypeCall(p.l, [I32]))
    p.mod["main"] = relay.Function([xs], p.hd(xs))
    with pytest.raises(EvaluationError, match="no clause of match at .* matched value Nil"):
        evaluate(p.mod, ADTValue("Nil"))


def test_unknown_entry_is_an_error():
    with pytest.raises(EvaluationError, match="no function @nope"):
        evaluate(relay.IRModule.from_expr(relay.Function([], relay.const(1))), entry="nope")


# ----- depth -------------------------------------------------------------------------------------


COUNT_SRC = """
#[version = "0.0.5"]
def @count(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { 1 + @count(%n - 1) }
}
def @main(%n: int32) -> int32 { @count(%n) }
"""


def test_100000_nested_calls():
    mod = relay.parse(COUNT_SRC)
    start = time.process_time()  # CPU time: robust to other processes sharing the machine
    result = evaluate(mod, 100_000)
    elapsed = time.process_time() - start
    assert result.dtype == np.int32 and int(result) == 100_000
    assert elapsed < 10, f"100 000 nested calls took {elapsed:.1f} s of CPU time"


def test_runaway_recursion_raises_evaluation_error(monkeypatch):
    # The real limit (10^6 nested calls) takes a while to reach; the guard is the same code path.
    monkeypatch.setattr(interp_compiler, "MAX_CALL_DEPTH", 5_000)
    mod = relay.parse("""
        #[version = "0.0.5"]
        def @forever(%n: int32) -> int32 { 1 + @forever(%n + 1) }
        def @main(%n: int32) -> int32 { @forever(%n) }
        """)
    with pytest.raises(EvaluationError, match="recursion too deep"):
        evaluate(mod, 0)


def test_deep_python_recursion_limit_becomes_evaluation_error(monkeypatch):
    # With the call guard out of the way, Python's own frame limit is reported the same way.
    import sys

    monkeypatch.setattr(interp_compiler, "MAX_CALL_DEPTH", 10**9)
    mod = relay.parse(COUNT_SRC)
    old = sys.getrecursionlimit()

    def run_with_low_limit():
        sys.setrecursionlimit(20_000)
        try:
            return evaluate(mod, 1_000_000)
        finally:
            sys.setrecursionlimit(old)

    with pytest.raises(EvaluationError, match="recursion too deep"):
        run_deep(run_with_low_limit)


# ----- entry points and module changes -----------------------------------------------------------


def test_evaluate_expressions_and_functions():
    assert int(evaluate(relay.add(relay.const(1), relay.const(2)))) == 3
    x = relay.var("x", "int32")
    # Free variables of an expression become parameters, in order of appearance.
    assert int(evaluate(relay.subtract(x, relay.const(2)), 5)) == 3


def test_module_changes_after_an_evaluation_are_seen():
    mod = relay.IRModule()
    x = relay.var("x", "int32")
    mod["main"] = relay.Function([x], relay.add(x, relay.const(1)))
    assert int(evaluate(mod, 1)) == 2
    y = relay.var("y", "int32")
    mod["main"] = relay.Function([y], relay.multiply(y, relay.const(10)))
    assert int(evaluate(mod, 1)) == 10


def test_other_entry_points():
    mod = relay.parse("""
        #[version = "0.0.5"]
        def @square(%x: int32) -> int32 { %x * %x }
        def @main(%x: int32) -> int32 { @square(%x) + 1 }
        """)
    assert int(evaluate(mod, 4, entry="square")) == 16
    assert int(evaluate(mod, 4)) == 17


def test_operators_outside_the_registry_are_rejected_before_running():
    mod = relay.parse('#[version = "0.0.5"]\ndef @main(%x: float32) { device_copy(%x, src_device=1, dst_device=2) }')
    with pytest.raises(EvaluationError, match="operator device_copy is not in the operator registry") as info:
        evaluate(mod, 1.0)
    assert (info.value.line, info.value.column) == (2, 26)
