"""IR nodes, builder API and IRModule behave like tvm.relay's."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import TranspileError
from transpile import relay
from transpile.relay import analysis


def test_nodes_are_immutable():
    x = relay.var("x", shape=(2,))
    with pytest.raises(AttributeError, match="immutable"):
        x.name_hint = "y"
    c = relay.const(np.ones(3, "float32"))
    with pytest.raises(ValueError):
        c.data[0] = 5.0


def test_var_builder_forms():
    assert relay.var("x", shape=(2, 3)).type_annotation == relay.TensorType((2, 3), "float32")
    assert relay.var("n", "int32").type_annotation == relay.scalar_type("int32")
    t = relay.TupleType([relay.scalar_type("int64")])
    assert relay.var("t", t).type_annotation is t
    assert relay.var("u").type_annotation is None
    # Distinct variables with the same name are different variables.
    assert relay.var("x") != relay.var("x")


def test_const_dtypes_follow_tvm():
    assert relay.const(1.5).data.dtype == np.float32
    assert relay.const(3).data.dtype == np.int32
    assert relay.const(True).data.dtype == np.bool_
    assert relay.const(2, "int64").data.dtype == np.int64
    assert relay.const(np.zeros((2, 2), "float16")).data.shape == (2, 2)
    assert relay.const([1.0, 2.0]).data.dtype == np.float32


def test_python_operators_build_op_calls():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(2,))
    cases = {
        "add": x + y,
        "subtract": x - y,
        "multiply": x * y,
        "divide": x / y,
        "less": x < y,
        "greater_equal": x >= y,
        "negative": -x,
    }
    for name, call in cases.items():
        assert isinstance(call, relay.Call)
        assert call.op is relay.Op.get(name)
    scaled = x * 2.0
    assert isinstance(scaled.args[1], relay.Constant) and scaled.args[1].data.dtype == np.float32
    assert (1.0 + x).args[0].data == np.float32(1.0)


def test_op_builders_fill_default_attrs():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    call = relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
    assert call.op.name == "nn.conv2d"
    assert call.attrs.channels == 4
    assert tuple(call.attrs.strides) == (1, 1)
    assert call.attrs["data_layout"] == "NCHW"
    with pytest.raises(ValueError, match="no attribute"):
        relay.nn.conv2d(x, w, bogus=1)


def test_tuple_and_projection():
    a, b = relay.var("a"), relay.var("b")
    tup = relay.Tuple([a, b])
    assert tup[1] is b
    item = relay.TupleGetItem(tup, 0)
    assert item.index == 0 and item.tuple_value is tup
    call = relay.Call(relay.GlobalVar("f"), [a])
    assert isinstance(call[1], relay.TupleGetItem)


def test_global_var_equality_is_by_name():
    assert relay.GlobalVar("f") == relay.GlobalVar("f")
    assert hash(relay.GlobalVar("f")) == hash(relay.GlobalVar("f"))
    assert relay.GlobalVar("f") != relay.GlobalVar("g")


def test_types_compare_by_value_and_type_vars_by_identity():
    assert relay.TensorType((1, relay.Any()), "float") == relay.TensorType((1, relay.Any()), "float32")
    assert relay.TensorType((1,), "float32") != relay.TensorType((1,), "float16")
    a1, a2 = relay.TypeVar("A"), relay.TypeVar("A")
    assert a1 != a2 and a1 == a1
    assert relay.TupleType([a1]) == relay.TupleType([a1])


def _list_adt():
    lst = relay.GlobalTypeVar("List")
    a = relay.TypeVar("A")
    cons = relay.Constructor("Cons", [a, relay.TypeCall(lst, [a])], lst)
    nil = relay.Constructor("Nil", [], lst)
    return lst, relay.TypeData(lst, [a], [cons, nil])


def test_type_data_assigns_constructor_tags():
    _, data = _list_adt()
    assert [(c.name_hint, c.tag) for c in data.constructors] == [("Cons", 0), ("Nil", 1)]


def test_module_functions_and_types():
    mod = relay.IRModule()
    lst, data = _list_adt()
    mod.add_type_data(lst, data)
    assert mod.get_constructor("Nil").tag == 1
    gtv, cons, nil = mod.get_type("List")
    assert gtv == lst and cons.name_hint == "Cons" and nil.name_hint == "Nil"
    with pytest.raises(TranspileError, match="duplicate definition of type List"):
        mod.add_type_data(lst, data)
    other = relay.GlobalTypeVar("Other")
    clash = relay.TypeData(other, [], [relay.Constructor("Nil", [], other)])
    with pytest.raises(TranspileError, match="constructor Nil is already defined by type List"):
        mod.add_type_data(other, clash)

    x = relay.var("x", shape=(2,))
    mod["double"] = relay.Function([x], x + x)
    assert "double" in mod and relay.GlobalVar("double") in mod
    assert mod.get_global_var("double").name_hint == "double"
    with pytest.raises(TranspileError, match="duplicate global function @double"):
        mod.add(relay.GlobalVar("double"), relay.Function([x], x))
    with pytest.raises(KeyError, match="@missing"):
        mod["missing"]


def test_from_expr_wraps_free_vars_in_main():
    x, y = relay.var("x"), relay.var("y")
    mod = relay.IRModule.from_expr(x * y + x)
    main = mod["main"]
    assert list(main.params) == [x, y]
    func = relay.Function([x], x)
    assert relay.IRModule.from_expr(func)["main"] is func


def test_free_and_bound_vars():
    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    body = relay.Let(z, x + y, z * x)
    func = relay.Function([x], body)
    assert analysis.free_vars(func) == [y]
    assert set(analysis.bound_vars(func)) == {x, z}


def test_visitor_handles_long_let_chains_without_recursion():
    x = relay.var("x", shape=())
    body = x
    for i in range(20_000):
        v = relay.var(f"v{i}")
        body = relay.Let(v, x, body)
    assert analysis.free_vars(body) == [x]


def test_attrs_are_frozen_and_attribute_accessible():
    attrs = relay.Attrs({"axis": [1, 2], "keepdims": False})
    assert attrs.axis == (1, 2) and attrs["keepdims"] is False
    with pytest.raises(AttributeError):
        attrs.axis = 3
    assert attrs == {"axis": (1, 2), "keepdims": False}
    assert hash(attrs) == hash(relay.Attrs(axis=(1, 2), keepdims=False))


def test_std_and_logsumexp_builders_compose_registered_operators():
    x = relay.var("x", shape=(2, 3))
    mod = relay.IRModule.from_expr(relay.Tuple([relay.std(x, axis=1), relay.logsumexp(x, axis=0)]))
    data = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 4.0]], "float32")
    std, lse = relay.evaluate(mod, data)
    np.testing.assert_allclose(std, [np.sqrt(2.0 / 3.0), np.sqrt(2.0)], rtol=1e-6)
    np.testing.assert_allclose(lse, np.log([np.e**0 + np.e**1, 2 * np.e, np.e**2 + np.e**4]), rtol=1e-6)


def test_type_variable_analyses_split_bound_from_free():
    from transpile.relay import analysis

    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    x, y = relay.var("x", a), relay.var("y", b)
    identity = relay.Function([x], x, a, [a])
    assert analysis.free_type_vars(identity) == []
    assert analysis.bound_type_vars(identity) == [a]
    leaky = relay.Function([x, y], x, a, [a])
    assert analysis.free_type_vars(leaky) == [b]
    assert analysis.all_type_vars(leaky) == [a, b]
    poly = relay.FuncType([a], b, [a])
    assert analysis.free_type_vars(poly) == [b]
    assert analysis.bound_type_vars(poly) == [a]
