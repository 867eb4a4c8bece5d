"""FoldConstant: constant subgraphs evaluated at compile time (cases from TVM's
tests/python/relay/test_pass_fold_constant.py, plus effects, dtypes, size limits and the whole language)."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform
from transpile.relay.printer import astext

from transform_support import HEADER, assert_same, assert_same_results, run_infer_type, run_opt_pass


def untyped_text(node) -> str:
    """The node's text without the /* ty= */ comments str() shows once types are inferred."""
    return astext(node, show_types=False)


def test_fold_const():
    c_data = np.array([1, 2, 3]).astype("float32")
    t = relay.TensorType([1, 2, 3], "float32")

    def before():
        c = relay.const(c_data)
        x = relay.var("x", t)
        y = relay.add(c, c)
        y = relay.multiply(y, relay.const(2, "float32"))
        y = relay.add(x, y)
        z = relay.add(y, c)
        return relay.Function([x], z)

    def expected():
        x = relay.var("x", t)
        c_folded = (c_data + c_data) * 2
        y = relay.add(x, relay.const(c_folded))
        z = relay.add(y, relay.const(c_data))
        return relay.Function([x], z)

    assert_same(run_opt_pass(before(), transform.FoldConstant()), expected())


def test_fold_let():
    c_data = np.array(1).astype("float32")
    t = relay.TensorType([1], "float32")
    x = relay.var("x", t)
    t1, t2, t3 = relay.var("t1"), relay.var("t2"), relay.var("t3")
    before = relay.Function(
        [x],
        relay.Let(t1, relay.const(c_data), relay.Let(t2, relay.add(t1, t1), relay.Let(t3, relay.add(t2, x), t3))),
    )
    x2, t3b = relay.var("x", t), relay.var("t3")
    expected = relay.Function([x2], relay.Let(t3b, relay.add(relay.const(c_data + c_data), x2), t3b))
    assert_same(run_opt_pass(before, transform.FoldConstant()), expected)


def test_fold_tuple():
    c_data = np.array(1).astype("float32")
    t = relay.TensorType([1], "float32")
    c = relay.const(c_data)
    x = relay.var("x", t)
    y = relay.Tuple([x, c])
    z = relay.add(relay.add(y[1], c), y[0])
    x2 = relay.var("x", t)
    expected = relay.Function([x2], relay.add(relay.const(c_data + c_data), x2))
    assert_same(run_opt_pass(relay.Function([x], z), transform.FoldConstant()), expected)


def test_fold_concat():
    c_data = np.array([[1, 2, 3]]).astype("float32")
    before = relay.Function([], relay.concatenate((relay.const(c_data), relay.const(c_data)), axis=0))
    expected = relay.Function([], relay.const(np.concatenate((c_data, c_data), axis=0)))
    assert_same(run_opt_pass(before, transform.FoldConstant()), expected)


@pytest.mark.parametrize("dtype", ["int32", "float32", "int64"])
def test_fold_shape_of(dtype):
    c_shape = (8, 9, 10)
    x = relay.var("x", shape=c_shape, dtype="float32")
    y = relay.var("y", shape=c_shape, dtype="float32")
    before = relay.Function([x, y], relay.shape_of(x + y, dtype))
    expected = relay.Function([x, y], relay.const(np.array(c_shape).astype(dtype), dtype=dtype))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert_same(folded, expected)
    assert folded.body.data.dtype == np.dtype(dtype)


def test_fold_ndarray_size():
    x = relay.var("x", shape=(2, 3, 4))
    folded = run_opt_pass(relay.Function([x], relay.ndarray_size(x, dtype="int64")), transform.FoldConstant())
    assert (
        isinstance(folded.body, relay.Constant) and int(folded.body.data) == 24 and folded.body.data.dtype == np.int64
    )


def test_fold_full_is_left_alone():
    before = relay.Function([], relay.full(relay.const(1.0, "float32"), (8, 9, 10), dtype="float32"))
    assert_same(run_opt_pass(before, transform.FoldConstant()), before)


def test_calls_without_arguments_are_not_folded():
    before = relay.Function([], relay.zeros((2, 3), "float32") + relay.ones((2, 3), "float32"))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert_same(folded, before)


def test_broadcast_blow_up_is_not_folded():
    small = relay.const(np.arange(100, dtype="float32").reshape(100, 1))
    row = relay.const(np.arange(100, dtype="float32").reshape(1, 100))
    before = relay.Function([], relay.add(small, row))  # 200 numbers in, 10 000 out
    assert_same(run_opt_pass(before, transform.FoldConstant()), before)
    tiny = relay.Function(
        [], relay.add(relay.const(np.ones((3, 1), "float32")), relay.const(np.ones((1, 3), "float32")))
    )
    assert isinstance(run_opt_pass(tiny, transform.FoldConstant()).body, relay.Constant)


def test_fold_batch_norm():
    """conv2d + batch_norm with constant weights and statistics: one conv with new weights plus a bias."""
    rng = np.random.default_rng(0)
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    weight = relay.const(rng.standard_normal((16, 3, 3, 3)).astype("float32"))
    gamma, beta, mean = (relay.const(rng.standard_normal(16).astype("float32")) for _ in range(3))
    var = relay.const(rng.uniform(0.5, 2, 16).astype("float32"))
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=16, padding=(1, 1))
    before = run_infer_type(relay.Function([data], relay.nn.batch_norm(conv, gamma, beta, mean, var)[0]))
    remove_bn_pass = transform.Sequential(
        [transform.InferType(), transform.SimplifyInference(), transform.FoldConstant(), transform.FoldScaleAxis()]
    )
    with transform.PassContext(opt_level=3):
        after = remove_bn_pass(relay.IRModule.from_expr(before))["main"]
    body = after.body
    assert body.op.name == "add" and body.args[0].op.name == "nn.conv2d"
    assert isinstance(body.args[1], relay.Constant) and body.args[1].data.shape == (16, 1, 1)
    assert isinstance(body.args[0].args[1], relay.Constant)
    assert_same_results(before, after, rng.standard_normal((1, 3, 8, 8)).astype("float32"), rtol=1e-4, atol=1e-4)


def test_if_on_a_constant_condition_takes_the_branch():
    x = relay.var("x", shape=(2,))
    before = relay.Function([x], relay.If(relay.const(True), x + relay.const(1.0), x - relay.const(1.0)))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert folded.body.op.name == "add"


@pytest.mark.parametrize(
    "dtype, a, b",
    [("int8", 100, 100), ("uint8", 200, 100), ("float16", 0.1, 0.2), ("int64", 2**40, 3), ("bool", True, False)],
)
def test_folding_keeps_the_exact_dtype(dtype, a, b):
    op = relay.logical_or if dtype == "bool" else relay.add
    before = relay.Function([], op(relay.const(a, dtype), relay.const(b, dtype)))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert isinstance(folded.body, relay.Constant)
    assert folded.body.data.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(folded.body.data, relay.evaluate(relay.IRModule.from_expr(before)))


def test_tuples_of_constants_fold_through_projection():
    c = relay.const(np.arange(6, dtype="float32").reshape(2, 3))
    parts = relay.split(c, 3, axis=1)
    before = relay.Function([], relay.add(parts[0], parts[2]))
    folded = run_opt_pass(before, transform.FoldConstant())
    np.testing.assert_array_equal(folded.body.data, [[2.0], [8.0]])


def test_effects_and_calls_are_never_folded():
    src = HEADER + """
def @twice(%a: float32) -> float32 { %a * 2f }
def @main() -> (float32, float32, float32) {
  let %r = ref(1f);
  let %w = ref_write(%r, 2f + 3f);
  let %f = fn (%b: float32) -> float32 { %b + 1f };
  (ref_read(%r), @twice(4f), %f(5f))
}
"""
    mod = relay.parse(src)
    out = transform.FoldConstant()(mod)
    text = untyped_text(out["main"])
    assert "ref_write(%r, 5f" in text and "ref_read(%r)" in text and "@twice(4f)" in text and "%f(5f)" in text
    assert relay.evaluate(out) == relay.evaluate(mod)


def test_projection_of_a_tuple_with_effects_is_kept():
    src = HEADER + """
def @main(%r: ref(float32)) -> float32 {
  (1f, ref_write(%r, 7f)).0
}
"""
    out = transform.FoldConstant()(relay.parse(src))
    assert "ref_write" in untyped_text(out["main"])


def test_evaluation_errors_are_left_for_run_time(monkeypatch):
    from transpile.relay.op.registry import get

    def broken(args, attrs, out_type):
        raise FloatingPointError("boom")

    monkeypatch.setattr(get("sqrt"), "numpy_impl", broken)
    before = relay.Function([], relay.sqrt(relay.const(np.arange(3, dtype="float32"))))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert isinstance(folded.body, relay.Call) and folded.body.op.name == "sqrt"


def test_fused_kernels_are_not_folded():
    p = relay.var("p", shape=(2,))
    kernel = relay.Function([p], relay.add(p, relay.add(relay.const(1.0), relay.const(2.0))), attrs={"Primitive": 1})
    x = relay.var("x", shape=(2,))
    before = relay.Function([x], relay.Call(kernel, [x]))
    folded = run_opt_pass(before, transform.FoldConstant())
    assert folded.body.op is kernel


def test_inside_closures_branches_matches_and_polymorphic_functions():
    src = HEADER + """
type Box[A] { Box(A) }
def @id[A](%v: A) -> A { %v }
def @main(%x: Tensor[(2), float32], %flag: bool) -> Tensor[(2), float32] {
  let %k = fn (%y: Tensor[(2), float32]) -> Tensor[(2), float32] { %y * (1f + 1f) };
  let %b = Box(%k);
  let %z = match (%b) { Box(%g) => %g(%x) };
  if (%flag) { @id(%z + (2f * 3f)) } else { %z }
}
"""
    mod = relay.parse(src)
    out = transform.FoldConstant()(mod)
    text = untyped_text(out["main"])
    assert "multiply(%y, 2f)" in text and "add(%z, 6f)" in text
    x = np.array([1.0, -2.0], "float32")
    for flag in (True, False):
        np.testing.assert_array_equal(relay.evaluate(out, x, flag), relay.evaluate(mod, x, flag))
