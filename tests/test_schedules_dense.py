"""Dense on pre-packed weights: the nn.contrib_dense_pack operator, the AlterDenseLayout pass that
packs constant weights at compile time, and the matmul schedules on packed and re-packed operands."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import transpile  # noqa: E402
import transpile.relay as relay  # noqa: E402
from transpile.kernels.build import build_kernels  # noqa: E402
from transpile.relay import transform  # noqa: E402
from transpile.relay.op.families.nn.dense_pack import pack_dense_weight, unpack_dense_weight  # noqa: E402
from transpile.relay.op.registry import RelationError  # noqa: E402
from transpile.relay.transform.alter_dense_layout import alter_dense_layout, dense_block  # noqa: E402

from test_kernels import make_kernel, random_args, run_kernel  # noqa: E402
from test_schedules import scheduled  # noqa: E402

T = relay.TensorType
F32 = "float32"
rng = np.random.default_rng(0)


def calls_of(expr) -> list[str]:
    names = []

    class Visitor(relay.ExprVisitor):
        def visit_call(self, call):
            names.append(getattr(call.op, "name", ""))
            super().visit_call(call)

    Visitor().visit(expr)
    return names


# ----- the operator ---------------------------------------------------------------------------


def test_packing_matches_layout_transform_and_unpacks():
    weight = rng.standard_normal((48, 5)).astype(F32)
    w = relay.var("w", T((48, 5), F32))
    func = relay.infer_type_expr(relay.Function([w], relay.layout_transform(w, "NC", "NC16n")))
    packed = pack_dense_weight(weight, 16)
    np.testing.assert_array_equal(relay.evaluate(func, weight), packed)
    assert packed.shape == (3, 5, 16) and packed[1, 2, 3] == weight[16 + 3, 2]
    np.testing.assert_array_equal(unpack_dense_weight(packed), weight)


def test_type_relation_reads_units_from_the_packed_weight():
    x, w = relay.var("x", T((2, 7, 8), F32)), relay.var("w", T((3, 8, 16), F32))
    func = relay.infer_type_expr(relay.Function([x, w], relay.nn.contrib_dense_pack(x, w, weight_layout="NC16n")))
    assert func.body.checked_type == T((2, 7, 48), F32)
    with pytest.raises(Exception, match="reduction dimension"):
        bad = relay.var("w", T((3, 9, 16), F32))
        relay.infer_type_expr(relay.Function([x, bad], relay.nn.contrib_dense_pack(x, bad, weight_layout="NC16n")))
    with pytest.raises(Exception, match="NC<n>n"):
        relay.infer_type_expr(relay.Function([x, w], relay.nn.contrib_dense_pack(x, w, weight_layout="NK16k")))


def test_text_format_round_trips():
    src = (
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(1, 8, 16), float32]) {\n"
        '  nn.contrib_dense_pack(%x, %w, weight_layout="NC16n")\n'
        "}\n"
    )
    mod = relay.parse(src)
    assert relay.parse(mod.astext()).astext() == mod.astext()
    x, w = rng.standard_normal((4, 8)).astype(F32), rng.standard_normal((16, 8)).astype(F32)
    np.testing.assert_allclose(relay.evaluate(mod, x, pack_dense_weight(w, 16)), x @ w.T, rtol=1e-5, atol=1e-5)


# ----- the pass ---------------------------------------------------------------------------------


def test_block_is_two_vectors_one_vector_or_all_few_columns():
    assert dense_block(256, 16) == 32 and dense_block(48, 16) == 16 and dense_block(10, 16) == 10
    assert dense_block(40, 16) is None and dense_block(3, 16) is None  # padded / too narrow: unpacked
    assert dense_block(256, 16, rows=1) == 32  # a GEMV gains from packed blocks when it has many
    assert dense_block(32, 16, rows=1) is None and dense_block(10, 16, rows=4) is None  # its dot products win


def mlp(batch, weight_of=lambda shape: relay.const(rng.standard_normal(shape).astype(F32))):
    x = relay.var("x", T((batch, 64), F32))
    hidden = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, weight_of((64, 64))), relay.const(np.ones(64, F32))))
    return relay.IRModule.from_expr(relay.Function([x], relay.nn.dense(hidden, weight_of((10, 64)))))


def test_constant_weights_are_packed_at_compile_time_and_results_stay():
    mod = relay.transform.InferType()(mlp(8))
    packed = transform.optimize(mod, alter_layout=True)
    body = packed["main"].body
    assert calls_of(body).count("nn.contrib_dense_pack") == 2 and "nn.dense" not in calls_of(body)
    assert "layout_transform" not in calls_of(body)  # folded: the packed weights are constants
    x = rng.standard_normal((8, 64)).astype(F32)
    np.testing.assert_allclose(relay.evaluate(packed, x), relay.evaluate(mod, x), rtol=1e-5, atol=1e-5)
    assert "nn.contrib_dense_pack" not in calls_of(transform.optimize(mod)["main"].body)  # only when asked


def test_runtime_weights_and_narrow_gemvs_keep_dense():
    x, w = relay.var("x", T((8, 64), F32)), relay.var("w", T((32, 64), F32))
    func = relay.infer_type_expr(relay.Function([x, w], relay.nn.dense(x, w)))
    assert calls_of(alter_dense_layout(func, lanes=16).body) == ["nn.dense"]
    one_row = transform.optimize(relay.transform.InferType()(mlp(1)), alter_layout=True)["main"].body
    # 1 row: 64 columns (4 vectors) are packed blocks; 10 columns stay dot products over rows of W
    assert sorted(c for c in calls_of(one_row) if "dense" in c) == ["nn.contrib_dense_pack", "nn.dense"]


# ----- schedules and numerics -------------------------------------------------------------------


def packed_dense(rows, k, units, block, epilogue):
    def build(a, b, *rest):
        y = relay.nn.contrib_dense_pack(a, b, weight_layout=f"NC{block}n")
        if epilogue:
            y = relay.nn.relu(relay.nn.bias_add(y, rest[0], axis=-1))
        return y

    data = T(rows if isinstance(rows, tuple) else (rows, k), F32)
    types = (data, T((units // block, k, block), F32)) + ((T((units,), F32),) if epilogue else ())
    return make_kernel(f"packed_{units}_{block}", build, *types)[0]


@pytest.mark.parametrize(
    "rows, k, units, block, epilogue",
    [(64, 784, 256, 32, True), (64, 256, 10, 10, True), (1, 784, 256, 32, True), (3, 40, 96, 16, False), ((2, 5, 24), 24, 64, 32, True)],
)
def test_packed_weights_are_streamed_as_they_are(tmp_path, rows, k, units, block, epilogue):
    kernel = packed_dense(rows, k, units, block, epilogue)
    script, kind = scheduled(kernel)
    assert kind == "matmul" and "T.vectorized" in script
    assert "_global" not in script  # no copy of the weight inside the kernel
    assert "T.where" not in script  # whole blocks: no tail predicate
    library = build_kernels([kernel], tmp_path)
    args = random_args(kernel)
    expected = relay.evaluate(kernel.body, *args)
    np.testing.assert_allclose(run_kernel(library, kernel, args)[0], expected, rtol=1e-4, atol=1e-4)


def test_batch_matmul_repacks_one_batch_at_a_time(tmp_path):
    kernel = make_kernel("bmm", lambda a, b: relay.nn.batch_matmul(a, b), T((12, 32, 64), F32), T((12, 32, 64), F32))[0]
    script, kind = scheduled(kernel)
    assert kind == "matmul"
    # the operand is re-packed inside the (parallel) batch loop, one batch at a time, not in a pass
    # of its own over the whole tensor
    assert script.count("T.parallel") == 1 and script.index("T.parallel") < script.index('T.sblock("b_global")')
    library = build_kernels([kernel], tmp_path)
    args = random_args(kernel)
    np.testing.assert_allclose(run_kernel(library, kernel, args)[0], args[0] @ args[1].transpose(0, 2, 1), rtol=1e-4, atol=1e-4)


def test_cpp_mlp_with_packed_weights_matches_numpy():
    mod = relay.transform.InferType()(mlp(16))
    x = rng.standard_normal((16, 64)).astype(F32)
    expected = relay.evaluate(mod, x)
    from transpile.pipeline import PipelineOptions, lower_to_lir

    program = lower_to_lir(mod, options=PipelineOptions(alter_layout=True))
    assert all("nn.contrib_dense_pack" in k.ops for k in program.kernels)
    np.testing.assert_allclose(transpile.compile(mod, backend="cpp")(x), expected, rtol=1e-4, atol=1e-4)
