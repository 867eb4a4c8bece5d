"""First-order reverse-mode AD: the graph walk, relay.transform.gradient's contract, and ONNX's Gradient operator.

The per-operator rules are checked numerically in test_gradient_rules.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.relay.transform.gradient import FirstOrderGradient, GradientError, first_order_gradient

from gradient_support import check_gradient, randn


def _evaluate(func, *args):
    return transpile.compile(relay.IRModule.from_expr(func), backend="interpreter")(*args)


def _count_calls(expr, name: str) -> int:
    count, stack, seen = 0, [expr], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, relay.Call):
            count += node.op.name == name
            stack.extend(node.args)
        elif isinstance(node, relay.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, relay.TupleGetItem):
            stack.append(node.tuple_value)
        elif isinstance(node, relay.Function):
            stack.append(node.body)
    return count


# ---------------------------------------------------------------- relay.transform.gradient


def test_gradient_returns_result_and_parameter_gradients():
    t = relay.TensorType((10, 10), "float32")
    x = relay.var("x", t)
    grad_fn = relay.transform.gradient(relay.Function([x], x + x))
    assert relay.structural_equal(grad_fn.checked_type, relay.FuncType([t], relay.TupleType([t, relay.TupleType([t])])))
    value = np.random.default_rng(0).random((10, 10)).astype("float32")
    forward, (grad,) = _evaluate(grad_fn, value)
    np.testing.assert_allclose(forward, 2 * value)
    np.testing.assert_allclose(grad, np.full((10, 10), 2.0, dtype="float32"))


def test_gradient_of_unused_integer_and_tuple_parameters():
    x = relay.var("x", shape=(3,), dtype="float64")
    unused = relay.var("unused", shape=(2,), dtype="float64")
    count = relay.var("count", shape=(), dtype="int32")
    pair = relay.var("pair", relay.TupleType([relay.TensorType((3,), "float64"), relay.TensorType((3,), "float64")]))
    body = relay.sum(x * relay.TupleGetItem(pair, 1)) + relay.cast(count, "float64")
    grad_fn = relay.transform.gradient(relay.Function([x, unused, count, pair], body))
    xv, a, b = randn(3), randn(3), randn(3)
    forward, (gx, gunused, gcount, (ga, gb)) = _evaluate(grad_fn, xv, randn(2), np.int32(4), (a, b))
    np.testing.assert_allclose(forward, np.sum(xv * b) + 4)
    np.testing.assert_allclose(gx, b)
    np.testing.assert_array_equal(gunused, np.zeros(2))
    assert gcount.dtype == np.int32 and gcount == 0
    np.testing.assert_array_equal(ga, np.zeros(3))
    np.testing.assert_allclose(gb, xv)


def test_shared_subexpressions_are_differentiated_once_and_summed():
    x = relay.var("x", shape=(4,), dtype="float64")
    e = relay.exp(x)
    grad_fn = relay.transform.gradient(relay.Function([x], relay.sum(e * e + e)), mode="first_order")
    assert _count_calls(grad_fn.body, "exp") == 1  # the exp rule reuses the forward result
    value = randn(4)
    _, (grad,) = _evaluate(grad_fn, value)
    np.testing.assert_allclose(grad, 2 * np.exp(2 * value) + np.exp(value))


def test_let_bindings_are_inlined_and_a_deep_chain_does_not_recurse():
    grad_fn = relay.transform.gradient(
        relay.parse_expr("fn (%x: Tensor[(3), float64]) { let %y = exp(%x); let %z = multiply(%y, %x); sum(%z) }")
    )
    value = randn(3)
    _, (grad,) = _evaluate(grad_fn, value)
    np.testing.assert_allclose(grad, np.exp(value) * (value + 1))

    x = relay.var("x", shape=(2,), dtype="float64")
    chain = [relay.var(f"v{i}", shape=(2,), dtype="float64") for i in range(3000)]
    body = chain[-1]
    for i in reversed(range(len(chain))):
        body = relay.Let(chain[i], (chain[i - 1] if i else x) * relay.const(1.0001, "float64"), body)
    _, (grad,) = _evaluate(relay.transform.gradient(relay.Function([x], body)), randn(2))
    np.testing.assert_allclose(grad, np.full(2, 1.0001**3000))


def test_gradient_of_a_global_and_the_module_pass():
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%w: Tensor[(2, 3), float64], %x: Tensor[(4, 3), float64]) { sum(nn.relu(nn.dense(%x, %w, units=2))) }"
    )
    by_global = relay.transform.gradient(mod.get_global_var("main"), mod)
    rewritten = FirstOrderGradient()(mod)
    w, x = randn(2, 3), randn(4, 3)
    expected = ((x @ w.T) > 0).astype("float64").T @ x
    _, (gw, gx) = _evaluate(by_global, w, x)
    np.testing.assert_allclose(gw, expected)
    _, (gw2, _) = transpile.compile(rewritten, backend="interpreter")(w, x)
    np.testing.assert_allclose(gw2, expected)


def test_what_first_order_mode_refuses():
    x = relay.var("x", shape=(3,), dtype="float32")
    with pytest.raises(GradientError, match="unknown mode 'third_order'"):
        relay.transform.gradient(relay.Function([x], x * x), mode="third_order")
    branchy = relay.Function([x], relay.If(relay.const(True), x, x * x))
    with pytest.raises(GradientError, match="dataflow functions only; found an if expression"):
        relay.transform.gradient(branchy, mode="first_order")
    with pytest.raises(GradientError, match="operator prod has no gradient rule"):
        relay.transform.gradient(relay.Function([x], relay.prod(x)), mode="first_order")
    with pytest.raises(GradientError, match="expects a Function or a GlobalVar"):
        relay.transform.gradient(x * x)


def test_non_float_paths_need_no_rule():
    # argmax has no gradient rule, but its integer result never carries a gradient.
    check_gradient(lambda v: relay.sum(relay.take(v, relay.argmax(v, axis=[1]), axis=1)) * relay.sum(v), randn(2, 3))


# ---------------------------------------------------------------- first_order_gradient


def test_gradient_with_respect_to_an_interior_node_with_a_seed():
    x = relay.var("x", shape=(3,), dtype="float64")
    hidden = relay.tanh(x)
    out = relay.exp(hidden) * x
    seed = relay.const(np.array([1.0, 2.0, 3.0]))
    g_hidden, g_x = first_order_gradient(out, [hidden, x], seed=seed)
    value = randn(3)
    got_hidden, got_x = _evaluate(relay.Function([x], relay.Tuple([g_hidden, g_x])), value)
    th = np.tanh(value)
    np.testing.assert_allclose(got_hidden, np.array([1.0, 2.0, 3.0]) * np.exp(th) * value)
    np.testing.assert_allclose(got_x, np.array([1.0, 2.0, 3.0]) * (np.exp(th) * (1 - th**2) * value + np.exp(th)))


def test_second_order_by_differentiating_a_gradient():
    x = relay.var("x", shape=(3,), dtype="float64")
    (first,) = first_order_gradient(x * x * x, [x])
    (second,) = first_order_gradient(first, [x])
    value = randn(3)
    np.testing.assert_allclose(_evaluate(relay.Function([x], second), value), 6 * value)


def test_a_small_network_matches_central_differences():
    def network(x, w1, b1, w2):
        hidden = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
        return relay.nn.log_softmax(relay.nn.dense(hidden, w2))

    check_gradient(network, randn(2, 4), randn(5, 4), randn(5), randn(3, 5))


def test_network_gradient_on_the_cpp_backend_matches_the_interpreter():
    # Lowers the rules' building blocks through TE: transposed and swapped convolutions, the
    # pools' tap masks, scatter_nd, pad, collapse_sum_like, matmul.
    rng = np.random.default_rng(5)
    x, w, w2 = (
        relay.var("x", shape=(2, 3, 9, 9)),
        relay.var("w", shape=(4, 3, 3, 3)),
        relay.var("w2", shape=(4, 2, 3, 3)),
    )
    d, b = relay.var("d", shape=(5, 24)), relay.var("b", shape=(5,))
    h = relay.nn.relu(relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1)))
    h = relay.nn.max_pool2d(h, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), ceil_mode=True)
    h = relay.nn.conv2d(h, w2, groups=2, padding=(1, 1))
    h = relay.nn.avg_pool2d(h, pool_size=(2, 2), strides=(1, 1), padding=(1, 1))
    h = relay.strided_slice(h, begin=[0, 0, 0, 0], end=[2, 4, 4, 4], strides=[1, 2, 1, 2])
    h = relay.take(h, relay.const(np.array([1, 0, 1], dtype="int64")), axis=3)
    h = relay.sigmoid(relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(h), d), b))
    loss = relay.sum(relay.nn.log_softmax(h) * relay.const(rng.standard_normal((2, 5)).astype("float32")))
    mod = relay.IRModule.from_expr(relay.transform.gradient(relay.Function([x, w, w2, d, b], loss)))
    args = [rng.standard_normal(s).astype("float32") for s in ((2, 3, 9, 9), (4, 3, 3, 3), (4, 2, 3, 3), (5, 24), (5,))]
    expected = transpile.compile(mod, backend="interpreter")(*args)
    got = transpile.compile(mod, backend="cpp")(*args)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- ONNX Gradient


onnx = pytest.importorskip("onnx")


def _simple_case(name):
    from onnx.backend.test.loader import load_model_tests

    (case,) = [t for t in load_model_tests(kind="simple") if t.name == name]
    data = os.path.join(case.model_dir, "test_data_set_0")

    def tensors(prefix):
        files = sorted(f for f in os.listdir(data) if f.startswith(prefix))
        return [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f))) for f in files]

    return onnx.load(os.path.join(case.model_dir, "model.onnx")), tensors("input_"), tensors("output_")


@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
@pytest.mark.parametrize("name", ["test_gradient_of_add", "test_gradient_of_add_and_mul"])
def test_onnx_gradient_backend_cases(name, backend):
    from transpile.relay.frontend import from_onnx

    model, inputs, outputs = _simple_case(name)
    mod, _ = from_onnx(model)
    got = transpile.compile(mod, backend=backend)(*inputs)
    assert len(got) == len(outputs)
    for g, e in zip(got, outputs):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def _training_model(xs, zs, y_name, extra_inputs=None, gradient_inputs=None):
    """Y = sum((X @ W + B)^2) with W, B initializers; a Gradient node over it."""
    from onnx import helper

    rng = np.random.default_rng(9)
    w, b = rng.standard_normal((3, 2)).astype("float32"), rng.standard_normal((2,)).astype("float32")
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["XW"]),
        helper.make_node("Add", ["XW", "B"], ["H"]),
        helper.make_node("Mul", ["H", "H"], ["H2"]),
        helper.make_node("ReduceSum", ["H2"], ["Y"], keepdims=0),
        helper.make_node(
            "Gradient",
            gradient_inputs or xs + zs,
            [f"d_{n}" for n in xs],
            domain="ai.onnx.preview.training",
            xs=xs,
            y=y_name,
            **({"zs": zs} if zs else {}),
        ),
    ]
    inputs = [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, (4, 3))] + list(extra_inputs or [])
    outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in ["Y"] + [f"d_{n}" for n in xs]]
    graph = helper.make_graph(
        nodes,
        "train",
        inputs,
        outputs,
        initializer=[onnx.numpy_helper.from_array(w, "W"), onnx.numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    return model, w, b


def test_onnx_gradient_with_respect_to_initializers_and_an_intermediate():
    from transpile.relay.frontend import from_onnx

    model, w, b = _training_model(["W", "B", "H"], ["X"], "Y")
    mod, params = from_onnx(model, freeze_params=False)
    x = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    y, dw, db, dh = transpile.compile(mod, backend="interpreter")(x, params["W"], params["B"])
    h = x @ w + b
    np.testing.assert_allclose(y, np.sum(h * h), rtol=1e-5)
    np.testing.assert_allclose(dh, 2 * h, rtol=1e-5)
    np.testing.assert_allclose(db, np.sum(2 * h, axis=0), rtol=1e-5)
    np.testing.assert_allclose(dw, x.T @ (2 * h), rtol=1e-5)


def test_onnx_gradient_at_another_point():
    from onnx import helper

    from transpile.relay.frontend import from_onnx

    # The Gradient node is fed H1 in place of H: dY/dH is evaluated at H = H1.
    h1 = helper.make_tensor_value_info("H1", onnx.TensorProto.FLOAT, (4, 2))
    model, _, _ = _training_model(["H"], [], "Y", extra_inputs=[h1], gradient_inputs=["H1"])
    mod, _ = from_onnx(model)
    rng = np.random.default_rng(2)
    x, h1_value = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((4, 2)).astype("float32")
    _, dh = transpile.compile(mod, backend="interpreter")(x, h1_value)
    np.testing.assert_allclose(dh, 2 * h1_value, rtol=1e-6)


def test_onnx_gradient_with_respect_to_a_frozen_initializer_is_reported():
    from transpile.relay.frontend import UnsupportedOperatorsError, from_onnx

    model, _, _ = _training_model(["W"], ["X"], "Y")
    with pytest.raises(UnsupportedOperatorsError, match="freeze_params=False"):
        from_onnx(model)
