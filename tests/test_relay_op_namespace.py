"""relay.op as TVM had it: every builder under relay.op.<name>, relay.op.get -> Op, relay.op.op registration."""

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import TranspileError
from transpile.relay.op import registry
from transpile.relay.op.op_entry import OpRegistrationError


@pytest.fixture
def scratch_registry(monkeypatch):
    """Operators registered by a test disappear after it (the registry is process-global)."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def test_every_registered_operator_is_under_relay_op_and_relay():
    for opdef in registry.registered_ops():
        *prefix, short = opdef.name.split(".")
        via_op, via_relay = relay.op, relay
        for part in prefix:
            via_op, via_relay = getattr(via_op, part), getattr(via_relay, part)
        assert getattr(via_op, short) is opdef is getattr(via_relay, short), opdef.name
    assert relay.op.nn is relay.nn and relay.op.image is relay.image
    assert relay.op.logsumexp is relay.logsumexp


def test_operator_submodules_import_by_name():
    import transpile.relay.op.nn as nn_module
    from transpile.relay.op import op as op_module

    assert nn_module is relay.nn
    assert op_module.get is relay.op.get


def test_get_returns_the_op_node_the_parser_produces():
    parsed = relay.parse_expr("abs(1)")
    assert parsed.op is relay.op.get("abs")
    relay.assert_structural_equal(parsed, relay.Call(relay.op.get("abs"), [relay.const(1)]))
    with pytest.raises(OpRegistrationError, match="not registered"):
        relay.op.get("no_such_operator")


def test_op_node_exposes_registry_properties():
    add = relay.op.get("add")
    assert add.name == "add" and add.num_inputs == 2
    assert add.get_attr("TOpPattern") == int(relay.OpPattern.BROADCAST)
    assert add.get_attr("TOpIsStateful") is False
    assert add.get_attr("NoSuchAttribute") is None and not add.has_attr("NoSuchAttribute")
    assert relay.op.get("concatenate").num_inputs == 1
    assert relay.op.get("nn.conv2d").description


def test_builders_under_relay_op_build_runnable_programs():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    y = relay.var("y", shape=(2, 3), dtype="float32")
    body = relay.op.concatenate([relay.op.add(x, y), relay.op.nn.relu(relay.op.negative(x))], axis=0)
    body = relay.op.take(body, relay.const([0, 3], "int32"), axis=0)
    mod = relay.IRModule.from_expr(relay.Function([x, y], body))
    a = np.arange(6, dtype="float32").reshape(2, 3) - 2
    b = np.ones((2, 3), dtype="float32")
    expected = np.concatenate([a + b, np.maximum(-a, 0)])[[0, 3]]
    for backend in ("interpreter", "cpp"):
        np.testing.assert_allclose(np.asarray(transpile.compile(mod, backend=backend)(a, b)), expected)


def _register_unary(name, relation_name="Identity", relation=None):
    from transpile.relay.op import op as _op

    _op.register(name, "a test operator")
    _op.get(name).set_num_inputs(1)
    _op.get(name).add_argument("data", "Tensor", "the input")
    _op.get(name).add_type_rel(relation_name, relation)
    _op.get(name).set_support_level(1)
    _op.register_pattern(name, _op.OpPattern.ELEMWISE)
    _op.register_stateful(name, False)
    return _op.get(name)


def test_custom_operator_with_a_stock_relation_type_checks(scratch_registry):
    op = _register_unary("test_ns_custom_identity")
    assert op.num_inputs == 1 and op.support_level == 1 and op.description == "a test operator"
    assert op.get_attr("TOpPattern") == int(relay.OpPattern.ELEMWISE)
    assert [a.name for a in op.arguments] == ["data"]
    tensor = relay.TensorType((4, 5), "float32")
    x = relay.var("x", tensor)
    func = relay.infer_type_expr(relay.Function([x], relay.add(relay.Call(op, [x]), x)))
    assert func.checked_type == relay.FuncType([tensor], tensor)


def test_custom_operator_with_a_broadcast_relation(scratch_registry):
    from transpile.relay.op import op as _op

    _op.register("test_ns_custom_badd")
    _op.get("test_ns_custom_badd").set_num_inputs(2)
    _op.get("test_ns_custom_badd").add_type_rel("Broadcast")
    x = relay.var("x", shape=(10, 4))
    y = relay.var("y", shape=(5, 10, 1))
    func = relay.infer_type_expr(relay.Function([x, y], relay.Call(_op.get("test_ns_custom_badd"), [x, y])))
    assert func.checked_type.ret_type == relay.TensorType((5, 10, 4), "float32")


def test_custom_operator_with_a_python_relation(scratch_registry):
    def first_row_relation(arg_types, attrs):
        (data,) = arg_types
        return relay.TensorType(data.shape[1:], data.dtype)

    op = _register_unary("test_ns_custom_row", "first_row", first_row_relation)
    x = relay.var("x", shape=(3, 7), dtype="int8")
    func = relay.infer_type_expr(relay.Function([x], relay.Call(op, [x])))
    assert func.checked_type.ret_type == relay.TensorType((7,), "int8")
    # It prints and parses back as a call of the same operator.
    reparsed = relay.parse(relay.IRModule.from_expr(func).astext())
    assert reparsed["main"].body.op is op


def test_custom_operator_errors_are_clear(scratch_registry):
    from transpile.relay.op import op as _op

    op = _register_unary("test_ns_custom_dup")
    with pytest.raises(OpRegistrationError, match="registered before"):
        _op.register("test_ns_custom_dup")
    with pytest.raises(OpRegistrationError, match="no built-in type relation named 'Nope'"):
        op.add_type_rel("Nope")
    x = relay.var("x", shape=(2,))
    mod = relay.IRModule.from_expr(relay.Function([x], relay.Call(op, [x])))
    with pytest.raises(TranspileError, match="without an implementation"):
        transpile.compile(mod, backend="interpreter")(np.zeros(2, "float32"))
    _op.register("test_ns_custom_untyped")
    untyped = relay.Function([x], relay.Call(_op.get("test_ns_custom_untyped"), [x]))
    with pytest.raises(relay.RelayTypeError, match="has no type relation yet"):
        relay.infer_type_expr(untyped)
