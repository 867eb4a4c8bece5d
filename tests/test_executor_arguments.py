"""How TVM-style executors take arguments: the graph executor converts dtypes, the debug and VM
executors stay strict, the VM takes a one-field list for a tensor, shapes are always checked."""

from __future__ import annotations

import numpy as np
import pytest

import transpile.tvm_compat as tvm
from transpile.errors import TranspileError
from transpile.tvm_compat import relay


@pytest.fixture(autouse=True)
def interpreter_backend(monkeypatch):
    monkeypatch.setenv("TRANSPILE_TVM_BACKEND", "interpreter")


def double_function(shape, dtype="float32"):
    x = relay.var("x", shape=shape, dtype=dtype)
    return relay.Function([x], relay.add(x, x))


def test_graph_executor_converts_the_dtype_of_a_fitting_array():
    func = double_function((relay.Any(), 2))
    result = relay.create_executor("graph").evaluate(func)(np.array([[1, 2], [3, 4]], dtype="int64"))
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result.numpy(), [[2, 4], [6, 8]])


@pytest.mark.parametrize("kind", ["debug", "vm"])
def test_debug_and_vm_executors_keep_the_dtype_check(kind):
    run = relay.create_executor(kind).evaluate(double_function((2,)))
    with pytest.raises(TranspileError, match="float32"):
        run(np.array([1, 2], dtype="int32"))


@pytest.mark.parametrize("kind", ["graph", "vm"])
def test_a_shape_that_does_not_fit_is_an_error(kind):
    run = relay.create_executor(kind).evaluate(double_function((2,)))
    with pytest.raises(TranspileError, match="shape"):
        run(np.ones(3, dtype="float64" if kind == "graph" else "float32"))


def test_vm_takes_a_one_field_list_for_a_tensor():
    exe = relay.vm.compile(tvm.IRModule.from_expr(double_function(())), target="llvm")
    result = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu()).invoke("main", [np.array(1.5, dtype="float32")])
    assert float(result.numpy()) == 3.0


def test_vm_converts_tuple_fields_only_where_the_type_is_a_tuple():
    ttype = relay.TupleType([relay.TensorType((2,)), relay.TensorType((1,))])
    tup = relay.var("tup", type_annotation=ttype)
    func = relay.Function([tup], relay.TupleGetItem(tup, 1))
    run = relay.create_executor("vm").evaluate(func)
    fields = [np.zeros(2, dtype="float32"), np.array([7.0], dtype="float32")]
    np.testing.assert_array_equal(run(fields).numpy(), [7.0])
    with pytest.raises(TranspileError, match="field 0"):
        run([np.zeros(5, dtype="float32"), fields[1]])
