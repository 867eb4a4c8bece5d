"""The dyn.* operators and the builders' rule that makes them: a shape argument that is an
expression (not a Python value or Constant) becomes a tensor input of the `dyn.` operator."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import TranspileError, UnsupportedFeatureError
from transpile.relay.op.registry import RelationError
from transpile.relay.ty import AnyDim


def run(params, body, *args, backend="interpreter"):
    module = relay.IRModule.from_expr(relay.Function(params, body))
    return transpile.compile(module, backend=backend)(*args)


def op_name(expr) -> str:
    return expr.op.name


def test_static_values_and_constants_keep_the_static_operator():
    x = relay.var("x", shape=(2, 3))
    assert op_name(relay.reshape(x, newshape=relay.const([3, 2]))) == "reshape"
    assert op_name(relay.zeros((2, 2), "float32")) == "zeros"
    assert op_name(relay.topk(x, relay.const(2), ret_type="values")) == "topk"


def test_zeros_ones_full_with_a_shape_variable():
    shape = relay.var("shape", shape=(2,), dtype="int32")
    fill = relay.full(relay.const(1.5), shape, "float32")
    assert op_name(fill) == "dyn.full" and op_name(relay.ones(shape, "int32")) == "dyn.ones"
    out = run([shape], fill, np.array([2, 3], dtype="int32"))
    np.testing.assert_array_equal(out, np.full((2, 3), 1.5, dtype="float32"))
    zeros = run([shape], relay.zeros(shape, "int32"), np.array([1, 4], dtype="int32"))
    assert zeros.dtype == np.int32 and zeros.shape == (1, 4) and not zeros.any()


def test_reshape_with_a_shape_variable_keeps_the_special_codes():
    x = relay.var("x", shape=(2, 3, 4))
    newshape = relay.var("newshape", shape=(2,), dtype="int64")
    y = relay.reshape(x, newshape=newshape)
    assert op_name(y) == "dyn.reshape"
    typed = relay.transform.InferType()(relay.IRModule.from_expr(y))["main"].body.checked_type
    assert len(typed.shape) == 2 and all(isinstance(dim, AnyDim) for dim in typed.shape)
    data = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(run([x, newshape], y, data, np.array([0, -1])), data.reshape(2, 12))


def test_topk_with_k_variable():
    x = relay.var("x", shape=(relay.Any(),))
    k = relay.var("k", shape=(), dtype="int32")
    data = np.array([3.0, 1.0, 4.0, 1.5, 9.0], dtype="float32")
    out = run([x, k], relay.topk(x, k, ret_type="values"), data, np.array(2, dtype="int32"))
    np.testing.assert_array_equal(out, [9.0, 4.0])


def test_strided_slice_with_begin_end_variables():
    x = relay.var("x", shape=(4, 5))
    begin = relay.var("begin", shape=(2,), dtype="int32")
    end = relay.var("end", shape=(2,), dtype="int32")
    y = relay.strided_slice(x, begin=begin, end=end, strides=[1, 2])
    assert op_name(y) == "dyn.strided_slice"
    data = np.arange(20, dtype="float32").reshape(4, 5)
    out = run([x, begin, end], y, data, np.array([1, 0], dtype="int32"), np.array([3, 5], dtype="int32"))
    np.testing.assert_array_equal(out, data[1:3, 0:5:2])
    with pytest.raises(RelationError, match="axes"):
        relay.strided_slice(x, begin=begin, end=end, axes=[0, 1])


def test_shape_input_must_be_a_static_length_integer_vector():
    bad = relay.var("shape", shape=(relay.Any(),), dtype="int32")
    with pytest.raises(TranspileError, match="static length"):
        relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([bad], relay.zeros(bad, "float32"))))


def test_cpp_reports_dynamic_operators_as_unsupported():
    shape = relay.var("shape", shape=(1,), dtype="int32")
    with pytest.raises(UnsupportedFeatureError, match="dyn.ones"):
        run([shape], relay.ones(shape, "float32"), np.array([3], dtype="int32"), backend="cpp")
