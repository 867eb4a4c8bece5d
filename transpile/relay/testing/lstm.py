"""An unrolled LSTM test network (TVM's relay.testing.lstm), built from operators (no Prelude).

Each step calls its own LSTM cell Function (inputs, (h, c), i2h/h2h dense weights and biases) → (h', (h', c'));
every step reads a fresh input variable named `data`, states start at zeros, the net returns the last h.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["lstm_cell", "get_net", "get_workload"]


def _types(num_hidden, batch_size, dtype):
    from ..ty import TensorType, TupleType

    hidden = TensorType((batch_size, num_hidden), dtype)
    weight = TensorType((4 * num_hidden, num_hidden), dtype)
    bias = TensorType((4 * num_hidden,), dtype)
    state = TupleType([hidden, hidden])
    return hidden, weight, bias, state, TupleType([hidden, state])


def lstm_cell(num_hidden, batch_size=1, dtype="float32", name=""):
    """One LSTM step as a Function: gates = i2h(x) + h2h(h) split in 4 (input, forget, transform, output);
    c' = σ(f)·c + σ(i)·tanh(t); h' = σ(o)·tanh(c'). Every intermediate is let-bound with its type."""
    from .. import add, multiply, sigmoid, split, tanh
    from ..expr import Function, Tuple, TupleGetItem, Var
    from ..scope_builder import ScopeBuilder
    from ..ty import TensorType, TupleType

    hidden_type, weight_type, bias_type, state_type, result_type = _types(num_hidden, batch_size, dtype)
    gates_type = TensorType((batch_size, 4 * num_hidden), dtype)
    inputs = Var("inputs", hidden_type)
    states = Var("states", state_type)
    i2h_weight, i2h_bias = Var("i2h_weight", weight_type), Var("i2h_bias", bias_type)
    h2h_weight, h2h_bias = Var("h2h_weight", weight_type), Var("h2h_bias", bias_type)

    builder = ScopeBuilder()
    i2h = builder.let(
        ("i2h", gates_type),
        layers.dense_add_bias(inputs, units=num_hidden * 4, weight=i2h_weight, bias=i2h_bias, name=f"{name}i2h"),
    )
    h2h = builder.let(
        ("h2h", gates_type),
        layers.dense_add_bias(
            TupleGetItem(states, 0), units=num_hidden * 4, weight=h2h_weight, bias=h2h_bias, name=f"{name}h2h"
        ),
    )
    gates = builder.let(("gates", gates_type), add(i2h, h2h))
    sliced = builder.let(
        ("slice_gates", TupleType([hidden_type] * 4)), split(gates, indices_or_sections=4, axis=1).astuple()
    )
    in_gate = builder.let(("in_gate", hidden_type), sigmoid(TupleGetItem(sliced, 0)))
    forget_gate = builder.let(("forget_gate", hidden_type), sigmoid(TupleGetItem(sliced, 1)))
    in_transform = builder.let(("in_transform", hidden_type), tanh(TupleGetItem(sliced, 2)))
    out_gate = builder.let(("out_gate", hidden_type), sigmoid(TupleGetItem(sliced, 3)))
    next_c = builder.let(
        ("next_c", hidden_type),
        add(multiply(forget_gate, TupleGetItem(states, 1)), multiply(in_gate, in_transform)),
    )
    next_h = builder.let(("next_h", hidden_type), multiply(out_gate, tanh(next_c)))
    result = builder.let(("ret", result_type), Tuple([next_h, Tuple([next_h, next_c])]))
    builder.ret(result)
    return Function([inputs, states, i2h_weight, i2h_bias, h2h_weight, h2h_bias], builder.get(), result_type)


def get_net(iterations, num_hidden, batch_size=1, dtype="float32"):
    """`iterations` LSTM steps unrolled, step i with parameters `i2h_<i>_weight` … `h2h_<i>_bias`, as a Function."""
    from .. import zeros
    from ..analysis import free_vars
    from ..expr import Call, Function, Tuple, TupleGetItem, Var
    from ..scope_builder import ScopeBuilder

    if iterations < 1:
        raise TranspileError(f"lstm.get_net: iterations must be at least 1, got {iterations}")
    hidden_type, weight_type, bias_type, state_type, result_type = _types(num_hidden, batch_size, dtype)
    builder = ScopeBuilder()
    zero = builder.let(("zeros", hidden_type), zeros((batch_size, num_hidden), dtype))
    states = builder.let(("init_states", state_type), Tuple([zero, zero]))
    out = None
    for step in range(iterations):
        arguments = [
            Var("data", hidden_type),
            states,
            Var(f"i2h_{step}_weight", weight_type),
            Var(f"i2h_{step}_bias", bias_type),
            Var(f"h2h_{step}_weight", weight_type),
            Var(f"h2h_{step}_bias", bias_type),
        ]
        cell = lstm_cell(num_hidden, batch_size, dtype, f"lstm_{step}")
        called = builder.let((f"call_{step}", result_type), Call(cell, arguments))
        out = builder.let((f"out_{step}", hidden_type), TupleGetItem(called, 0))
        states = builder.let((f"states_{step}", state_type), TupleGetItem(called, 1))
    builder.ret(out)
    body = builder.get()
    return Function(free_vars(body), body, hidden_type)


def get_workload(iterations, num_hidden, batch_size=1, dtype="float32"):
    """(module, params) of the unrolled LSTM, weights Xavier-initialized (seed 0), biases zero."""
    return create_workload(get_net(iterations, num_hidden, batch_size, dtype))
