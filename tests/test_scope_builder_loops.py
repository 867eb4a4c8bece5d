"""relay.ScopeBuilder and relay.loops.while_loop: the expressions they build, and those programs run."""

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.relay.loops import LoopError, while_loop
from transpile.relay.scope_builder import ScopeBuilder, ScopeBuilderError


def _int(value):
    return relay.const(value, "int32")


def _countdown_sum_module():
    """@sum_up(i, acc) = if i == 0 then acc else @sum_up(i - 1, acc + i), built with a ScopeBuilder."""
    mod = relay.IRModule()
    sum_up = relay.GlobalVar("sum_up")
    i = relay.var("i", shape=(), dtype="int32")
    acc = relay.var("acc", shape=(), dtype="int32")
    sb = ScopeBuilder()
    with sb.if_scope(relay.equal(i, _int(0))):
        sb.ret(acc)
    with sb.else_scope():
        next_i = sb.let("next_i", relay.subtract(i, _int(1)))
        sb.ret(relay.Call(sum_up, [next_i, relay.add(acc, i)]))
    mod[sum_up] = relay.Function([i, acc], sb.get(), ret_type=relay.TensorType((), "int32"))
    n = relay.var("n", shape=(), dtype="int32")
    mod["main"] = relay.Function([n], sum_up(n, _int(0)))
    return mod


def test_lets_wrap_the_result_in_binding_order():
    x = relay.var("x", shape=(2,))
    sb = ScopeBuilder()
    t1 = sb.let("t1", relay.add(x, x))
    t2 = sb.let(("t2", relay.TensorType((2,), "float32")), relay.multiply(t1, x))
    sb.ret(t2)
    built = sb.get()
    assert isinstance(built, relay.Let) and built.var is t1
    assert isinstance(built.body, relay.Let) and built.body.var is t2
    assert t2.type_annotation == relay.TensorType((2,), "float32")
    assert built.body.body is t2


def test_if_else_scopes_build_an_if_with_scoped_lets():
    cond = relay.var("c", "bool")
    x = relay.var("x", shape=())
    sb = ScopeBuilder()
    with sb.if_scope(cond):
        doubled = sb.let("doubled", relay.add(x, x))
        sb.ret(doubled)
    with sb.else_scope():
        sb.ret(x)
    built = sb.get()
    assert isinstance(built, relay.If) and built.cond is cond
    assert isinstance(built.true_branch, relay.Let) and built.true_branch.var is doubled
    assert built.false_branch is x


def test_misuse_is_reported():
    sb = ScopeBuilder()
    with pytest.raises(ScopeBuilderError, match="else_scope must directly follow"):
        sb.else_scope()
    sb = ScopeBuilder()
    with sb.if_scope(relay.const(True)):
        sb.ret(relay.const(1))
    with pytest.raises(ScopeBuilderError, match="no else scope"):
        sb.get()
    sb = ScopeBuilder()
    sb.ret(relay.const(1))
    with pytest.raises(ScopeBuilderError, match="already called"):
        sb.ret(relay.const(2))
    sb = ScopeBuilder()
    with pytest.raises(ScopeBuilderError, match="outermost"):
        with sb.if_scope(relay.const(True)):
            sb.get()
    sb = ScopeBuilder()
    with pytest.raises(ScopeBuilderError, match="ret was not called"):
        sb.get()


def test_scope_builder_is_exported_like_tvm():
    import transpile.relay.scope_builder as module

    assert relay.ScopeBuilder is module.ScopeBuilder
    assert relay.loops.while_loop is while_loop


@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
def test_recursive_scope_builder_program_runs(backend):
    run = transpile.compile(_countdown_sum_module(), backend=backend)
    assert int(np.asarray(run(np.array(10, dtype="int32")))) == 55
    assert int(np.asarray(run(np.array(0, dtype="int32")))) == 0


def _counting_loop():
    """while i < 10: (i, s) = (i + 1, s + i); the final s."""
    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(), dtype="int32")
    loop = while_loop(lambda i, s: relay.less(i, _int(10)), [i, s], lambda i, s: (i + _int(1), s + i))
    start = relay.var("start", shape=(), dtype="int32")
    result = relay.TupleGetItem(loop(start, _int(0)), 1)
    return relay.IRModule.from_expr(relay.Function([start], result))


def test_while_loop_is_a_let_bound_recursive_function():
    i = relay.var("i", shape=(), dtype="int32")
    loop = while_loop(lambda i: relay.less(i, _int(3)), [i], lambda i: [i + _int(1)])
    assert isinstance(loop, relay.Let) and loop.var.name_hint == "while_loop" and loop.body is loop.var
    func = loop.value
    assert [p.name_hint for p in func.params] == ["i"] and func.params[0] is not i
    assert func.params[0].type_annotation == relay.TensorType((), "int32")
    assert isinstance(func.body, relay.If)
    assert isinstance(func.body.false_branch, relay.Tuple)


@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
def test_while_loop_runs(backend):
    run = transpile.compile(_counting_loop(), backend=backend)
    assert int(np.asarray(run(np.array(0, dtype="int32")))) == 45
    assert int(np.asarray(run(np.array(7, dtype="int32")))) == 7 + 8 + 9


def test_while_loop_over_an_unannotated_initial_value_infers_its_type():
    # A non-Var loop value gets a placeholder type, tied to it by a `unify` binding (as in TVM).
    loop = while_loop(lambda x: relay.less(x, _int(5)), [_int(0)], lambda x: [x + _int(2)])
    mod = relay.IRModule.from_expr(relay.Function([], relay.TupleGetItem(loop(_int(1)), 0)))
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type.ret_type == relay.TensorType((), "int32")
    assert int(np.asarray(transpile.compile(mod, backend="interpreter")())) == 5


def test_while_loop_body_arity_is_checked():
    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(), dtype="int32")
    with pytest.raises(LoopError, match="returned 1 value"):
        while_loop(lambda i, s: relay.less(i, _int(1)), [i, s], lambda i, s: [i])
