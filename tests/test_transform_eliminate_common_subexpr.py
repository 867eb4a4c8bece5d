"""EliminateCommonSubexpr (cases from TVM's tests/python/relay/test_pass_eliminate_common_subexpr.py,
plus let-bound calls, scoping across branches and closures, and effects)."""

from __future__ import annotations

import numpy as np

from transpile import relay
from transpile.relay import transform

from transform_support import HEADER, assert_same, assert_same_results, random_inputs, run_infer_type, run_opt_pass


def test_simple():
    x = relay.var("x", shape=(1, 16))
    y1 = relay.add(relay.nn.relu(x), relay.const(1.0, "float32"))
    y2 = relay.add(relay.nn.relu(x), relay.const(1.0, "float32"))
    before = relay.Function([x], relay.add(y1, y2))
    y = relay.add(relay.nn.relu(x), relay.const(1.0, "float32"))
    expected = relay.Function([x], relay.add(y, y))
    after = run_opt_pass(before, transform.EliminateCommonSubexpr())
    assert_same(after, expected)
    assert after.body.args[0] is after.body.args[1]


def test_callback():
    x = relay.var("x", shape=(1, 16))
    y1 = relay.add(relay.nn.relu(x), relay.const(1.0, "float32"))
    y2 = relay.add(relay.nn.relu(x), relay.const(1.0, "float32"))
    before = relay.Function([x], relay.add(y1, y2))

    def fskip(expr):
        return isinstance(expr, relay.Call) and expr.op.name == "add"

    after = run_opt_pass(before, transform.EliminateCommonSubexpr(fskip))
    y = relay.nn.relu(x)
    expected = relay.Function([x], relay.add(relay.add(y, relay.const(1.0)), relay.add(y, relay.const(1.0))))
    assert_same(after, expected)
    assert after.body.args[0] is not after.body.args[1]
    assert after.body.args[0].args[0] is after.body.args[1].args[0]


def test_different_attributes_or_constants_are_not_merged():
    x = relay.var("x", shape=(2, 3))
    before = relay.Function(
        [x],
        relay.Tuple([relay.sum(x, axis=[0]), relay.sum(x, axis=[1]), x + relay.const(1.0), x + relay.const(2.0)]),
    )
    assert_same(run_opt_pass(before, transform.EliminateCommonSubexpr()), before)


def test_tuple_projections_merge():
    x = relay.var("x", shape=(4, 6))
    parts = relay.split(x, 2, axis=1)
    before = relay.Function([x], relay.add(relay.TupleGetItem(parts, 0), relay.TupleGetItem(parts, 0)))
    after = run_opt_pass(before, transform.EliminateCommonSubexpr())
    assert after.body.args[0] is after.body.args[1]


def test_let_bound_calls_are_reused():
    src = HEADER + """
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %a = add(%x, 1f);
  let %b = add(%x, 1f);
  let %c = multiply(%a, %b);
  multiply(%a, %b)
}
"""
    mod = relay.parse(src)
    out = transform.EliminateCommonSubexpr()(mod)
    expected = relay.parse(
        src.replace("  let %b = add(%x, 1f);\n", "")
        .replace("%b", "%a")
        .replace("  let %c = multiply(%a, %a);\n  multiply(%a, %a)", "  let %c = multiply(%a, %a);\n  %c")
    )
    relay.assert_structural_equal(out["main"], transform.InferType()(expected)["main"])
    x = np.array([1.0, 2.0, 3.0], "float32")
    np.testing.assert_array_equal(relay.evaluate(out, x), relay.evaluate(mod, x))


def test_scopes_are_respected():
    src = HEADER + """
def @main(%x: Tensor[(3), float32], %flag: bool) -> (Tensor[(3), float32], Tensor[(3), float32], Tensor[(3), float32]) {
  let %in_branch = if (%flag) { let %p = exp(%x); %p * 2f } else { let %q = exp(%x); %q * 3f };
  let %f = fn (%y: Tensor[(3), float32]) -> Tensor[(3), float32] { let %r = exp(%x); %r + %y };
  let %outer = exp(%x);
  (%in_branch, %f(%outer), %outer)
}
"""
    mod = relay.parse(src)
    out = transform.EliminateCommonSubexpr()(mod)
    text = str(out["main"])
    # exp(%x) inside each branch and inside the closure is computed there, not borrowed from a sibling.
    assert text.count("exp(%x)") == 4
    x = np.array([0.5, 1.0, 2.0], "float32")
    for flag in (True, False):
        for got, want in zip(relay.evaluate(out, x, flag), relay.evaluate(mod, x, flag)):
            np.testing.assert_allclose(got, want)


def test_outer_value_is_reused_inside_nested_scopes():
    src = HEADER + """
def @main(%x: Tensor[(3), float32], %flag: bool) -> Tensor[(3), float32] {
  let %e = exp(%x);
  if (%flag) { let %p = exp(%x); %p + %e } else { %e }
}
"""
    out = transform.EliminateCommonSubexpr()(relay.parse(src))
    assert str(out["main"]).count("exp(%x)") == 1


def test_effects_are_not_merged():
    src = HEADER + """
def @main(%x: float32) -> (float32, float32) {
  let %r1 = ref(%x);
  let %r2 = ref(%x);
  let %w = ref_write(%r1, 5f);
  (ref_read(%r1), ref_read(%r2))
}
"""
    mod = relay.parse(src)
    out = transform.EliminateCommonSubexpr()(mod)
    assert relay.evaluate(out, np.float32(1)) == relay.evaluate(mod, np.float32(1)) == (5.0, 1.0)


def test_large_graph_numerics():
    x = relay.var("x", shape=(4, 4))
    a = relay.nn.relu(x) * relay.nn.relu(x)
    b = relay.nn.relu(x) * relay.nn.relu(x)
    before = run_infer_type(relay.Function([x], relay.concatenate([a, b, relay.exp(a), relay.exp(b)], axis=0)))
    after = run_opt_pass(before, transform.EliminateCommonSubexpr())
    assert str(after).count("exp(") == 1 and str(after).count("nn.relu(") == 1
    assert_same_results(before, after, *random_inputs(before))
