"""relay.transform passes under TVM's names, used on their own: FuseOps, normal forms, InferTypeLocal, AnnotateSpans."""

import numpy as np
import pytest

from transpile import relay
from transpile.passes.anf import to_anf
from transpile.passes.fusion import fuse, kernels_of
from transpile.relay.structural import assert_structural_equal
from transpile.relay.transform import (
    AnnotateSpans,
    FuseOps,
    InferType,
    InferTypeLocal,
    PassContext,
    Sequential,
    ToANormalForm,
    ToGraphNormalForm,
)

SHAPE = (4, 6)


def _mod(func):
    return InferType()(relay.IRModule.from_expr(func))


def _kernel(params, body):
    return relay.Function(params, body).with_attr("Primitive", 1)


def _call_kernels(mod):
    """The Primitive functions called in @main's graph-form body, outermost call first."""
    found = []

    def walk(expr):
        if isinstance(expr, relay.Call):
            if isinstance(expr.op, relay.Function) and expr.op.attrs and expr.op.attrs.get("Primitive"):
                found.append(expr.op)
            for arg in expr.args:
                walk(arg)
        elif isinstance(expr, relay.Tuple):
            for field in expr.fields:
                walk(field)
        elif isinstance(expr, relay.Let):
            walk(expr.value)
            walk(expr.body)

    walk(mod["main"].body)
    return found


def _count_calls(expr):
    count = 0
    while isinstance(expr, relay.Call):
        count += 1
        expr = expr.args[0]
    return count


def _exp_chain(n):
    x = relay.var("x", shape=SHAPE)
    y = x
    for _ in range(n):
        y = relay.exp(y)
    return relay.Function([x], y)


def test_fuse_ops_groups_a_chain_into_one_primitive_call():
    x = relay.var("x", shape=SHAPE)
    before = relay.Function([x], relay.negative(relay.exp(relay.add(x, relay.const(2.0)))))
    fused = FuseOps(fuse_opt_level=2)(_mod(before))

    p = relay.var("p0", shape=SHAPE)
    kernel = _kernel([p], relay.negative(relay.exp(relay.add(p, relay.const(2.0)))))
    x2 = relay.var("x", shape=SHAPE)
    expected = _mod(relay.Function([x2], relay.Call(kernel, [x2])))
    assert_structural_equal(fused["main"], expected["main"])


def test_fuse_opt_level_zero_leaves_every_operator_alone_and_minus_one_reads_the_context():
    mod = _mod(_exp_chain(3))
    assert len(_call_kernels(FuseOps(fuse_opt_level=0)(mod))) == 3
    with PassContext(opt_level=0):
        assert len(_call_kernels(FuseOps()(mod))) == 3
    with PassContext(opt_level=3):
        assert len(_call_kernels(FuseOps()(mod))) == 1


def test_max_depth_from_the_pass_context_splits_long_chains():
    mod = _mod(_exp_chain(7))
    with PassContext(config={"relay.FuseOps.max_depth": 3}):
        kernels = _call_kernels(FuseOps()(mod))
    sizes = sorted(_count_calls(kernel.body) for kernel in kernels)
    assert sizes == [1, 3, 3]


def test_link_params_keeps_tensor_constants_in_the_kernel_body():
    x = relay.var("x", shape=SHAPE)
    weights = relay.const(np.arange(24, dtype="float32").reshape(SHAPE))
    mod = _mod(relay.Function([x], relay.exp(relay.multiply(x, weights))))
    passed = _call_kernels(FuseOps(fuse_opt_level=2)(mod))[0]
    assert len(passed.params) == 2
    with PassContext(config={"relay.FuseOps.link_params": True}):
        linked = _call_kernels(FuseOps(fuse_opt_level=2)(mod))[0]
    assert len(linked.params) == 1


def test_a_user_let_is_kept_and_fusion_does_not_run_through_it():
    x = relay.var("x", shape=SHAPE)
    y = relay.var("y", shape=SHAPE)
    before = relay.Function([x], relay.Let(y, relay.add(x, x), relay.exp(relay.negative(y))))
    fused = FuseOps(fuse_opt_level=2)(_mod(before))
    body = fused["main"].body
    assert isinstance(body, relay.Let) and body.var is y
    assert len(_call_kernels(fused)) == 2


def test_softmax_takes_its_epilogue_in_fuse_ops_but_stays_alone_in_the_compiler_pipeline():
    x = relay.var("x", shape=SHAPE)
    mod = _mod(relay.Function([x], relay.cast(relay.nn.softmax(x), "float16")))
    assert len(_call_kernels(FuseOps(fuse_opt_level=2)(mod))) == 1
    pipeline = [ops for _, ops, _ in kernels_of(fuse(to_anf(mod)))]
    assert pipeline == [("nn.softmax",), ("cast",)]


def test_fused_program_computes_what_the_original_did_and_the_input_is_unchanged():
    x = relay.var("x", shape=SHAPE)
    parts = relay.split(relay.exp(x), 2, axis=1)
    before = relay.Function([x], relay.add(relay.sigmoid(parts[0]), relay.tanh(parts[1])))
    mod = _mod(before)
    snapshot = mod["main"].astext()
    fused = FuseOps(fuse_opt_level=2)(mod)
    assert mod["main"].astext() == snapshot
    data = np.random.default_rng(0).standard_normal(SHAPE).astype("float32")
    want = relay.create_executor(mod=mod).evaluate()(data).numpy()
    got = relay.create_executor(mod=fused).evaluate()(data).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fuse_ops_in_a_sequential_runs_its_required_infer_type():
    mod = relay.IRModule.from_expr(_exp_chain(2))  # not yet typed
    with PassContext(opt_level=2):
        fused = Sequential([FuseOps()])(mod)
    assert len(_call_kernels(fused)) == 1
    assert FuseOps().info.required == ("InferType",)


def test_fuse_ops_rejects_bad_settings():
    with pytest.raises(ValueError, match="fuse_opt_level"):
        FuseOps(fuse_opt_level=-2)
    with PassContext(config={"relay.FuseOps.max_depth": 0}):
        with pytest.raises(ValueError, match="max_depth"):
            FuseOps()(_mod(_exp_chain(2)))


def test_a_normal_form_and_back_to_graph_form():
    x = relay.var("x", shape=SHAPE)
    shared = relay.exp(x)
    mod = _mod(relay.Function([x], relay.add(shared, shared)))
    anf = ToANormalForm()(mod)
    assert isinstance(anf["main"].body, relay.Let)
    graph = ToGraphNormalForm()(anf)
    assert_structural_equal(graph["main"], mod["main"])
    body = graph["main"].body
    assert body.args[0] is body.args[1]  # the shared value is one node again


def test_graph_normal_form_keeps_a_recursive_closure_let():
    n = relay.var("n", shape=(), dtype="int32")
    loop = relay.var("loop")
    one = relay.const(1, "int32")
    closure = relay.Function([n], relay.If(relay.less(n, one), n, relay.Call(loop, [relay.subtract(n, one)])))
    m = relay.var("m", shape=(), dtype="int32")
    mod = _mod(relay.Function([m], relay.Let(loop, closure, relay.Call(loop, [m]))))
    body = ToGraphNormalForm()(mod)["main"].body
    assert isinstance(body, relay.Let) and body.var is loop


def test_infer_type_local_returns_the_type_and_annotates_the_expression():
    x = relay.var("x", shape=(2, 3))
    expr = relay.sum(relay.exp(x), axis=1)
    ty = InferTypeLocal(expr)
    assert str(ty) == "Tensor[(2), float32]"
    assert expr.checked_type == ty
    with pytest.raises(TypeError, match="InferTypeLocal"):
        InferTypeLocal("x")


def test_annotate_spans_gives_every_call_a_span_in_the_generated_text():
    x = relay.var("x", shape=SHAPE)
    mod = relay.IRModule.from_expr(relay.Function([x], relay.exp(relay.negative(x))))
    assert mod["main"].body.span is None
    annotated = AnnotateSpans()(mod)
    span = annotated["main"].body.span
    assert span is not None and span.source_name == "GeneratedSource"
    assert span.line > 1
    assert_structural_equal(annotated["main"], mod["main"], map_free_vars=True)
