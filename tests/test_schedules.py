"""The schedule library: which schedule each kernel kind gets, that it really transforms the loops
(vectorized/parallel, epilogue folded into the write-back), and that failures fall back safely."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import transpile.relay as relay  # noqa: E402
from transpile.kernels import schedules  # noqa: E402
from transpile.kernels.build import build_kernels  # noqa: E402
from transpile.kernels.lower import lower_kernel  # noqa: E402
from transpile.kernels.schedules import choose_schedule  # noqa: E402
from transpile.kernels.target import c_target, host_target, vector_lanes  # noqa: E402

from test_kernels import make_kernel, random_args, run_kernel  # noqa: E402

T = relay.TensorType
F32 = "float32"


def scheduled(kernel, target=None):
    target = host_target() if target is None else target
    mod, kind = choose_schedule(lower_kernel(kernel, schedule=False), kernel, target)
    return mod[kernel.name].script(), kind


def dense_bias_relu(rows, units=128, k=256):
    return make_kernel(
        f"dense_{rows}",
        lambda a, b, c: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(a, b, units=units), c)),
        T((rows, k), F32),
        T((units, k), F32),
        T((units,), F32),
    )[0]


def test_dense_is_register_tiled_vectorized_parallel_with_epilogue_folded():
    script, kind = scheduled(dense_bias_relu(64))
    assert kind == "matmul"
    assert "T.vectorized" in script and "T.parallel" in script and "T.unroll" in script
    assert 'scope="local"' in script  # accumulators in registers
    # bias_add and relu are computed by the write-back block, not by blocks of their own
    assert 'T.sblock("T_add")' not in script and 'T.sblock("compute")' not in script
    assert "T.Select(" in script  # the relu (nan-propagating: a select, not T.max) in the write-back
    # the [j, k] weight is repacked so vector loads are contiguous
    assert "_global" in script


def test_single_row_dense_uses_vector_dot_products():
    script, kind = scheduled(dense_bias_relu(1))
    assert kind == "matmul"
    assert "_rf" in script and "T.vectorized" in script


def test_small_kernels_are_not_parallel():
    script, kind = scheduled(dense_bias_relu(2, units=16, k=16))
    assert "T.parallel" not in script
    script, kind = scheduled(make_kernel("tiny", lambda a: relay.nn.relu(a), T((4, 8), F32))[0])
    assert kind == "default" and "T.parallel" not in script and "T.vectorized" in script


def test_elementwise_chain_is_fused_into_one_vectorized_parallel_loop():
    kernel = make_kernel(
        "chain", lambda a, b: relay.exp(relay.nn.relu(a + b) * relay.const(2.0)), T((512, 1024), F32), T((1024,), F32)
    )[0]
    script, kind = scheduled(kernel)
    assert kind == "default"
    # every intermediate inlined into the output block
    assert script.count('T.sblock("') - script.count('T.sblock("root")') == 1
    assert "T.vectorized(%d)" % (2 * vector_lanes(F32)) in script and "T.parallel" in script


def test_conv2d_schedule():
    kernel = make_kernel(
        "conv",
        lambda a, b: relay.nn.relu(relay.nn.conv2d(a, b, padding=(1, 1))),
        T((1, 16, 32, 32), F32),
        T((32, 16, 3, 3), F32),
    )[0]
    script, kind = scheduled(kernel)
    assert kind == "conv2d_nchw"
    assert "T.vectorized" in script and "T.parallel" in script and 'scope="local"' in script
    assert 'T.sblock("compute")' not in script  # relu folded into the write-back


def test_reductions_and_softmax():
    script, kind = scheduled(make_kernel("sm", lambda a: relay.nn.softmax(a), T((64, 1000), F32))[0])
    assert kind == "dlight.Reduction" and "T.parallel" in script
    script, kind = scheduled(make_kernel("rs", lambda a: relay.sum(a, axis=[1]), T((1024, 512), F32))[0])
    assert kind == "default" and "T.parallel" in script


def test_c_target_schedules_neither_vectorize_nor_parallel():
    script, kind = scheduled(dense_bias_relu(64), c_target())
    assert kind == "matmul"
    assert "T.vectorized" not in script and "T.parallel" not in script
    script, _ = scheduled(make_kernel("chain", lambda a: relay.nn.relu(a), T((512, 512), F32))[0], c_target())
    assert "T.vectorized" not in script and "T.parallel" not in script


def test_failing_schedules_fall_back_to_default_then_unscheduled(monkeypatch, tmp_path):
    kernel = dense_bias_relu(8, units=32, k=32)

    def broken(func, kernel, target):
        raise RuntimeError("schedule bug")

    monkeypatch.setattr(schedules, "STRATEGIES", (broken, schedules._default))
    _, kind = scheduled(kernel)
    assert kind == "default"
    monkeypatch.setattr(schedules, "STRATEGIES", (broken, broken))
    script, kind = scheduled(kernel)
    assert kind == "none" and "T.vectorized" not in script
    # the unscheduled kernel still builds and computes the right thing
    library = build_kernels([kernel], tmp_path)
    args = random_args(kernel)
    expected = relay.evaluate(kernel.body, *args)
    np.testing.assert_allclose(run_kernel(library, kernel, args)[0], expected, rtol=1e-4, atol=1e-5)


def test_gemv_partial_sums_divide_the_reduction_so_no_tail_scalarizes_it():
    from transpile.kernels.schedules.matmul import gemv_lanes

    assert gemv_lanes(128, 16) == 16 and gemv_lanes(784, 16) == 16
    assert gemv_lanes(150, 16) == 30 and gemv_lanes(300, 16) == 30  # 2 registers, 30 of 32 lanes used
    assert gemv_lanes(100, 16) == 25 and gemv_lanes(7, 16) == 7


@pytest.mark.parametrize("rows, k, units", [(1, 150, 450), (2, 300, 150), (64, 256, 10)])
def test_odd_sizes_get_whole_vectors_and_compute_right(tmp_path, rows, k, units):
    kernel = dense_bias_relu(rows, units=units, k=k)
    script, kind = scheduled(kernel)
    assert kind == "matmul" and "T.vectorized" in script
    if rows <= 4:
        assert "T.vectorized(30)" in script  # the reduction's partial sums
    else:
        assert "T.vectorized(10)" in script  # all 10 columns in one vector
    assert "T.where" not in script  # no tail predicate anywhere
    library = build_kernels([kernel], tmp_path)
    args = random_args(kernel)
    expected = relay.evaluate(kernel.body, *args)
    np.testing.assert_allclose(run_kernel(library, kernel, args)[0], expected, rtol=1e-4, atol=1e-4)


def _nan_propagating_chain(a, b, depth=14):
    x = a
    for i in range(depth):
        x = relay.maximum(relay.minimum(x, b), relay.const(0.1 * i, F32)) if i % 2 else relay.nn.relu(relay.maximum(x, b))
    return x


@pytest.mark.parametrize("reduce", [False, True], ids=["elementwise", "argmax"])
def test_inlining_never_grows_expressions_exponentially(reduce, tmp_path):
    """maximum/minimum/relu read each operand 2-3 times (NaN propagation): fully inlined, a chain of
    14 made ~3**14 copies of the input. Intermediates past MAX_INLINED_NODES stay blocks; the
    result is still scheduled (vectorized) and computes the same."""
    def build(a, b):
        chain = _nan_propagating_chain(a, b)
        return relay.argmax(chain, axis=[1]) if reduce else chain

    kernel, function = make_kernel("fused_chain", build, T((4, 64), F32), T((4, 64), F32))
    mod, kind = choose_schedule(lower_kernel(kernel, schedule=False), kernel, host_target())
    assert kind != "none"
    # 10 KB of TIR script for 7 levels with the limit, 73 MB without; 14 levels here
    assert len(mod[kernel.name].script()) < 100_000
    library = build_kernels([kernel], tmp_path)
    args = random_args(kernel)
    args[0][0, :3] = [np.nan, -0.0, np.inf]
    expected = relay.evaluate(function, *args)
    [got] = run_kernel(library, kernel, args)
    np.testing.assert_array_equal(got, expected)


def _where_chain_in_conditions(a, b, c, depth=11):
    x = a
    for level in range(depth):
        x = relay.where(relay.greater(x, relay.const(float(level), F32)), b, c)
    return x


def test_inlining_cost_weights_nodes_by_select_condition_depth():
    """TVM's simplifier re-simplifies a Select's condition per enclosing condition (~5x a level):
    a Select in a condition costs its nodes 5x, in a branch 1x; a load's weight is its node's."""
    from tvm import tirx

    from transpile.kernels.schedules.inline_cost import CONDITION_COST_FACTOR as F
    from transpile.kernels.schedules.inline_cost import expression_cost

    inner, x = (tirx.decl_buffer((8,), F32, name=name) for name in ("inner", "x"))
    i = tirx.Var("i", "int32")
    zero = tirx.const(0.0, F32)
    in_branch = in_condition = inner[i]
    for _ in range(3):
        in_branch = tirx.Select(x[i + 1] > zero, in_branch, x[i + 2])
        in_condition = tirx.Select(in_condition > zero, x[i + 1], x[i + 2])
    assert expression_cost(in_branch, inner)[1] == 1  # never inside a condition
    assert expression_cost(in_condition, inner)[1] == F**3
    assert expression_cost(in_condition)[0] > F**3 > expression_cost(in_branch)[0]
    assert expression_cost(tirx.if_then_else(inner[i] > zero, inner[i], zero), inner)[1] == F + 1


@pytest.mark.parametrize("reduce", [False, True], ids=["elementwise", "argmax"])
def test_inlining_never_nests_select_conditions_too_deep(reduce, tmp_path):
    """`where(greater(x, k), y, z)` 11 levels deep, each level read once: fully inlined it is linear
    in size, but building it never finished (9 levels: 70-80 s). Every block of the scheduled
    kernel stays within MAX_INLINED_COST (some intermediates stay blocks); results unchanged."""
    from transpile.kernels.schedules.common import blocks
    from transpile.kernels.schedules.inline_cost import MAX_INLINED_COST, expression_cost

    def build(a, b, c):
        chain = _where_chain_in_conditions(a, b, c)
        return relay.argmax(chain, axis=[1]) if reduce else chain

    kernel, function = make_kernel("fused_where_chain", build, *[T((4, 8), F32)] * 3)
    mod, kind = choose_schedule(lower_kernel(kernel, schedule=False), kernel, host_target())
    assert kind != "none"
    sch = tvm.s_tir.Schedule(mod)
    sch.work_on(kernel.name)
    costs = {sch.get(block).name_hint: expression_cost(sch.get(block).body)[0] for block in blocks(sch)}
    assert max(costs.values()) <= MAX_INLINED_COST, costs
    # unbounded, the last level alone would cost ~5**11; with the limit 2-3 blocks of a few levels
    assert 2 <= len(costs) <= 4, costs
    library = build_kernels([kernel], tmp_path)
    args = [6 * arg for arg in random_args(kernel)]  # values around the levels' thresholds 0..10
    args[0][0, :4] = [np.nan, np.inf, 0.0, 10.5]
    expected = relay.evaluate(function, *args)
    [got] = run_kernel(library, kernel, args)
    np.testing.assert_array_equal(got, expected)


def _mean_of_where_on_a_computed_bool(n, x):
    condition = relay.cast(relay.broadcast_to(n, [64]), "bool")
    chosen = relay.where(condition, x, relay.zeros([1], "float64"))
    return relay.mean(relay.maximum(chosen, x), axis=[0], keepdims=True)


def test_bool_intermediates_are_never_vectorized(tmp_path):
    """TVM stores a kernel's own bool buffers as int8; a vectorized Select loading one failed in
    lowering (`Not` of an int8 vector, fuzz seed 115155). dlight's schedule vectorized it (replaced
    by ours then), and a kept bool block of ours stays scalar."""
    from transpile.kernels.schedules.common import vectorizes_bool_intermediate

    kernel, function = make_kernel(
        "fused_mean_where_bool", _mean_of_where_on_a_computed_bool, T((), "int32"), T((64,), "float64")
    )
    mod, kind = choose_schedule(lower_kernel(kernel, schedule=False), kernel, host_target())
    func = mod[kernel.name]
    assert kind != "none" and not vectorizes_bool_intermediate(func)
    library = build_kernels([kernel], tmp_path)
    for n in (0, 7):
        args = [np.int32(n), np.linspace(-3, 3, 64)]
        args[1][:3] = [np.nan, -0.0, np.inf]
        np.testing.assert_array_equal(run_kernel(library, kernel, args)[0], relay.evaluate(function, *args))
