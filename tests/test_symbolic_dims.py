"""Symbolic dimensions (TVM's `te.var("n")` in a shape): identity, inference, text, and running at several sizes."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import RelayTypeError, UnsupportedFeatureError
from transpile.relay.ty import AnyDim, SymbolicDim, TensorType

tvm = pytest.importorskip("tvm")
from tvm import te  # noqa: E402


def infer(expr):
    """The checked type of `expr` (inferred as the body of a function of its free variables)."""
    mod = relay.transform.InferType()(relay.IRModule.from_expr(expr))
    return mod["main"].body.checked_type


# ----- identity ----------------------------------------------------------------------------------
def test_a_tir_var_becomes_a_symbolic_dim_equal_only_to_dims_of_the_same_var():
    n, other_n = te.var("n"), te.var("n")
    shape = TensorType((5, n, 5)).shape
    assert isinstance(shape[1], SymbolicDim) and shape[1].name == "n"
    assert TensorType((5, n, 5)) == TensorType((5, n, 5))
    assert hash(TensorType((5, n, 5))) == hash(TensorType((5, n, 5)))
    assert TensorType((5, n, 5)) != TensorType((5, other_n, 5))  # same name, another variable
    assert TensorType((5, n, 5)) != TensorType((5, relay.Any(), 5))
    assert TensorType((5, relay.Any(), 5)) != TensorType((5, n, 5))
    assert TensorType((relay.Any(),)) == TensorType((relay.Any(),))


def test_a_symbolic_dim_is_a_run_time_dim_to_everything_that_handles_any():
    n = te.var("n")
    ty = TensorType((n, 3))
    assert isinstance(ty.shape[0], AnyDim)
    assert ty.concrete_shape is None


def test_tir_constants_become_ints_and_symbolic_arithmetic_a_run_time_dim():
    n = te.var("n")
    assert TensorType((tvm.tirx.IntImm("int32", 4), 2)).shape == (4, 2)
    dim = TensorType((n + 1,)).shape[0]
    assert isinstance(dim, AnyDim) and not isinstance(dim, SymbolicDim)


# ----- inference ---------------------------------------------------------------------------------
def test_broadcast_keeps_a_symbol_met_by_itself_or_by_one():
    n = te.var("n")
    x = relay.var("x", TensorType((5, n, 5)))
    y = relay.var("y", TensorType((n, 1)))
    assert infer(relay.add(x, y)) == TensorType((5, n, 5))
    assert infer(relay.multiply(y, relay.var("z", shape=(1, 1)))) == TensorType((n, 1))
    unknown = infer(relay.add(y, relay.var("u", shape=(relay.Any(), 1)))).shape[0]
    assert isinstance(unknown, AnyDim) and not isinstance(unknown, SymbolicDim)


@pytest.mark.parametrize("other", ["m", 5])
def test_a_symbol_does_not_broadcast_with_another_symbol_or_a_constant_other_than_one(other):
    n = te.var("n")
    other_dim = te.var("m") if other == "m" else other
    x = relay.var("x", shape=(n, 2))
    y = relay.var("y", shape=(other_dim, 2))
    with pytest.raises(RelayTypeError, match="not broadcastable"):
        infer(relay.add(x, y))


def test_reductions_transpose_and_expand_dims_pass_symbols_through():
    n, t = te.var("n"), te.var("t")
    x = relay.var("x", shape=(n, t, 100))
    assert infer(relay.sum(x, axis=1, keepdims=True)) == TensorType((n, 1, 100))
    assert infer(relay.max(x, axis=2)) == TensorType((n, t))
    assert infer(relay.transpose(x)) == TensorType((100, t, n))
    assert infer(relay.expand_dims(x, axis=2)) == TensorType((n, t, 1, 100))


def test_concatenate_keeps_the_symbols_of_the_other_axes():
    n, t = te.var("n"), te.var("t")
    x = relay.var("x", shape=(n, t, 100))
    y = relay.var("y", shape=(n, t, 100))
    assert infer(relay.concatenate([x, y], axis=-1)) == TensorType((n, t, 200))
    joined = infer(relay.concatenate([x, y], axis=0)).shape  # n + n: known only at run time
    assert joined[1:] == TensorType((t, 100)).shape and isinstance(joined[0], AnyDim) and not isinstance(joined[0], SymbolicDim)


def test_dense_keeps_the_batch_symbols_and_takes_the_units_from_the_weight():
    n, c, units = te.var("n"), te.var("c"), te.var("units")
    x = relay.var("x", shape=(n, c, 4))
    w = relay.var("w", shape=(units, 4))
    assert infer(relay.nn.dense(x, w)) == TensorType((n, c, units))


def test_a_symbol_unifies_with_a_constant_but_not_with_another_symbol():
    n, m = te.var("n"), te.var("m")
    x = relay.var("x", shape=(n, 3))
    # An annotation fixing the symbol: the let-bound value has the constant's type.
    y = relay.var("y", shape=(4, 3))
    assert infer(relay.Let(y, x, y)) == TensorType((4, 3))
    z = relay.var("z", shape=(m, 3))
    with pytest.raises(RelayTypeError, match="dimension 0"):
        infer(relay.Let(z, x, z))


# ----- text --------------------------------------------------------------------------------------
def test_symbols_print_by_name_and_parse_back_structurally_equal():
    n, c = te.var("n"), te.var("c")
    x = relay.var("x", shape=(n, c, 8))
    y = relay.var("y", shape=(n, 1, 8))
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x, y], relay.add(x, y))))
    text = mod.astext()
    assert "Tensor[(n, c, 8), float32]" in text and "Tensor[(n, 1, 8), float32]" in text
    reparsed = relay.transform.InferType()(relay.parse(text))
    assert relay.structural_equal(reparsed, mod)
    body_type = reparsed["main"].body.checked_type
    params = reparsed["main"].params
    assert body_type.shape[0] is params[0].type_annotation.shape[0]  # one name, one dimension


def test_two_symbols_with_one_name_print_apart_and_stay_apart():
    first, second = te.var("n"), te.var("n")
    x = relay.var("x", shape=(first,))
    y = relay.var("y", shape=(second,))
    func = relay.Function([x, y], relay.Tuple([x, y]))
    text = func.astext()
    assert "Tensor[(n), float32]" in text and "Tensor[(n1), float32]" in text
    reparsed = relay.parse_expr(text) if hasattr(relay, "parse_expr") else None
    if reparsed is not None:
        assert relay.structural_equal(reparsed, func)
        assert not relay.structural_equal(relay.parse_expr(text.replace("n1", "n")), func)


def test_parsed_symbols_are_shared_within_one_text_and_checked_by_inference():
    source = """
    #[version = "0.0.5"]
    def @main(%x: Tensor[(n, 3), float32], %y: Tensor[(n, 3), float32], %z: Tensor[(m, 3), float32]) {
      (add(%x, %y), %z)
    }
    """
    mod = relay.transform.InferType()(relay.parse(source))
    params = mod["main"].params
    n_dim = params[0].type_annotation.shape[0]
    assert isinstance(n_dim, SymbolicDim) and n_dim is params[1].type_annotation.shape[0]
    assert params[2].type_annotation.shape[0] != n_dim
    assert mod["main"].body.checked_type.fields[0] == TensorType((n_dim, 3))
    clash = source.replace("(add(%x, %y), %z)", "add(%x, %z)")
    with pytest.raises(RelayTypeError):
        relay.transform.InferType()(relay.parse(clash))


# ----- running -----------------------------------------------------------------------------------
def _symbolic_module():
    n = te.var("n")
    x = relay.var("x", shape=(n, 3))
    y = relay.var("y", shape=(n, 1))
    joined = relay.concatenate([relay.add(x, y), relay.exp(x)], axis=1)
    total = relay.sum(joined, axis=1, keepdims=True)
    return relay.IRModule.from_expr(relay.Function([x, y], relay.Tuple([joined, total])))


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_one_compiled_program_runs_at_several_sizes_of_a_symbol(backend):
    program = transpile.compile(_symbolic_module(), backend=backend)
    rng = np.random.default_rng(7)
    for rows in (2, 5):
        a = rng.random((rows, 3), dtype=np.float32)
        b = rng.random((rows, 1), dtype=np.float32)
        joined, total = program(a, b)
        expected = np.concatenate([a + b, np.exp(a)], axis=1)
        np.testing.assert_allclose(np.asarray(joined), expected, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(total), expected.sum(axis=1, keepdims=True), rtol=1e-5)


def test_tir_refuses_symbolic_dims_as_it_refuses_any():
    with pytest.raises(UnsupportedFeatureError, match="dynamic"):
        transpile.compile(_symbolic_module(), backend="tir")
