"""The graph-level pipeline (relay.transform.optimize) and its hook in the shared pipeline: pass order
and opt_levels, semantics kept on every conformance program, and the fused kernels of the corpus's
MobileNet v2 and ResNet-50 v2 (conv + bias + relu (+ residual add) in one kernel)."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

import transpile
from transpile import TranspileError, relay
from transpile.lir.nodes import KernelCall
from transpile.lir.walk import iter_lets
from transpile.pipeline import PipelineOptions, lower_to_lir, pipeline_stages
from transpile.relay import transform
from transpile.testing.cases import ALL_CASES
from transpile.testing.compare import assert_values_close
from transpile.testing.runner import typed_case_module

from transform_support import HEADER


def test_pass_order_and_levels():
    passes = transform.optimization_passes().passes
    assert [(p.name, p.opt_level) for p in passes] == [
        ("SimplifyInference", 0),
        ("EliminateCommonSubexpr", 3),
        ("FoldConstant", 2),
        ("FoldScaleAxis", 0),  # a Sequential; its Backward / Forward parts are opt_level 3
        ("CanonicalizeOps", 3),
        ("SimplifyExpr", 0),
        ("FoldConstant", 2),
        ("DeadCodeElimination", 1),
    ]
    assert transform.DEFAULT_OPT_LEVEL == 3 and PipelineOptions().opt_level == 3


BN_PROGRAM = HEADER + """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32]) -> Tensor[(1, 3, 4, 4), float32] {
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=3, kernel_size=[1, 1]);
  %1 = nn.batch_norm(%0, meta[relay.Constant][0], meta[relay.Constant][1], meta[relay.Constant][2], meta[relay.Constant][3]);
  %2 = nn.bias_add(%1.0, meta[relay.Constant][4]);
  nn.relu(%2)
}
"""


def _bn_module():
    rng = np.random.default_rng(0)
    constants = [relay.const(rng.uniform(0.5, 1.5, 3).astype("float32")) for _ in range(5)]
    return relay.parse(BN_PROGRAM, init_meta_table={"relay.Constant": constants})


def _ops(mod):
    return [n.op.name for n in _calls(mod["main"].body)]


def _calls(expr):
    out, stack, seen = [], [expr], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, relay.Call):
            if isinstance(node.op, relay.Op):
                out.append(node)
            stack.extend(node.args)
        elif isinstance(node, relay.TupleGetItem):
            stack.append(node.tuple_value)
    return out


def test_optimize_by_opt_level():
    mod = _bn_module()
    assert transform.optimize(mod, 0) is mod
    levels = {level: set(_ops(transform.optimize(mod, level))) for level in (1, 2, 3)}
    # 1: SimplifyInference, SimplifyExpr, DCE: batch_norm is arithmetic on constants, still unfolded.
    assert "nn.batch_norm" not in levels[1] and {"sqrt", "nn.bias_add"} <= levels[1]
    # 2: + FoldConstant: scale and shift are constants.
    assert levels[2] == {"nn.conv2d", "multiply", "add", "nn.bias_add", "nn.relu"}
    # 3: + FoldScaleAxis, CanonicalizeOps, CSE: the scale moved onto the weight, one add.
    assert levels[3] == {"nn.conv2d", "multiply", "add", "nn.relu"}
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype("float32")
    w = np.random.default_rng(2).standard_normal((3, 2, 1, 1)).astype("float32")
    for level in (1, 2, 3):
        out = relay.evaluate(transform.optimize(mod, level), x, w)
        np.testing.assert_allclose(out, relay.evaluate(mod, x, w), rtol=1e-5, atol=1e-5)


def test_opt_level_3_folds_the_batch_norm_into_a_weight_multiply_and_a_shift():
    out = transform.optimize(_bn_module(), 3)
    body = out["main"].body
    assert body.op.name == "nn.relu"
    shift = body.args[0]
    assert shift.op.name == "add" and isinstance(shift.args[1], relay.Constant)
    # the conv's bias and the batch norm's shift stay two adds: float constants are not
    # reassociated ((x + c1) + c2 overflows where x + (c1 + c2) does not); both fuse into the conv
    bias = shift.args[0]
    assert bias.op.name == "add" and isinstance(bias.args[1], relay.Constant)
    conv = bias.args[0]
    assert conv.op.name == "nn.conv2d" and conv.args[1].op.name == "multiply"  # %w is a parameter


def test_disabled_passes_stay_disabled():
    with transform.PassContext(disabled_pass=["SimplifyInference"]):
        out = transform.optimize(_bn_module(), 3)
    assert "nn.batch_norm" in _ops(out)
    out = transform.optimize(_bn_module(), 3, disabled_pass=["CanonicalizeOps"])
    assert "nn.bias_add" in _ops(out)


def test_pipeline_and_build_options():
    mod = _bn_module()
    stages = pipeline_stages(mod)
    assert list(stages)[:3] == ["input", "optimized", "typed"]
    assert "optimized" not in pipeline_stages(mod, options={"opt_level": 0})
    unoptimized = lower_to_lir(mod, options={"opt_level": 0})
    assert ("nn.batch_norm",) in [k.ops for k in unoptimized.kernels]
    optimized = lower_to_lir(mod)
    assert sorted(k.ops for k in optimized.kernels) == [("multiply",), ("nn.conv2d", "add", "add", "nn.relu")]
    with pytest.raises(TranspileError, match="opt_level"):
        PipelineOptions(opt_level=-1)
    with pytest.raises(TranspileError, match="opt_level"):
        transpile.build(mod, backend="python", opt_level="3")
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype("float32")
    w = np.random.default_rng(2).standard_normal((3, 2, 1, 1)).astype("float32")
    want = relay.evaluate(mod, x, w)
    for level in (0, 1, 2, 3):
        got = transpile.build(mod, backend="python", opt_level=level).load()(x, w)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    source = transpile.emit(mod, backend="python", opt_level=0)
    optimized_code = [line for line in transpile.emit(mod, backend="python").splitlines() if "#" not in line]
    assert "batch_norm" in source and not any("batch_norm" in line for line in optimized_code)


# ----- every conformance program keeps its meaning ------------------------------------------------


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_conformance_programs_keep_their_results(case):
    typed = typed_case_module(case)
    optimized = transform.optimize(typed, 3)
    inputs = case.fresh_inputs()
    if case.raises is not None:
        exc_type, pattern = case.raises
        with pytest.raises(exc_type, match=pattern):
            relay.evaluate(optimized, *inputs, entry=case.entry)
        return
    result = relay.evaluate(optimized, *inputs, entry=case.entry)
    if case.apply is not None:
        result = result(*case.fresh_apply_args())
    assert_values_close(result, case.expected_value(), case.rtol, case.atol)
    if case.inputs_after is not None:
        assert_values_close(inputs, tuple(case.inputs_after), case.rtol, case.atol, "the inputs after the call")


SINGLE_PASSES = {
    "SimplifyInference": transform.SimplifyInference,
    "FoldConstant": transform.FoldConstant,
    "BackwardFoldScaleAxis": transform.BackwardFoldScaleAxis,
    "ForwardFoldScaleAxis": transform.ForwardFoldScaleAxis,
    "CanonicalizeOps": transform.CanonicalizeOps,
    "SimplifyExpr": transform.SimplifyExpr,
    "EliminateCommonSubexpr": transform.EliminateCommonSubexpr,
    "DeadCodeElimination": transform.DeadCodeElimination,
}


@pytest.mark.parametrize("name", list(SINGLE_PASSES))
def test_each_pass_alone_keeps_every_conformance_result(name):
    """Each pass by itself, on every conformance program it changes: same results, still well typed."""
    changed = 0
    for case in ALL_CASES:
        typed = typed_case_module(case)
        out = SINGLE_PASSES[name]()(typed)
        if all(relay.structural_equal(out[gv], func) for gv, func in typed.functions.items()):
            continue
        changed += 1
        inputs = case.fresh_inputs()
        if case.raises is not None:
            with pytest.raises(case.raises[0], match=case.raises[1]):
                relay.evaluate(out, *inputs, entry=case.entry)
            continue
        result = relay.evaluate(out, *inputs, entry=case.entry)
        if case.apply is not None:
            result = result(*case.fresh_apply_args())
        assert_values_close(result, case.expected_value(), case.rtol, case.atol, f"{case.name} after {name}")
    if name in ("SimplifyInference", "CanonicalizeOps"):
        assert changed > 0  # the suite has batch_norm / layer_norm / bias_add programs


# ----- real models --------------------------------------------------------------------------------


def _load_model(corpus_dir, name):
    """A corpus model with sensible random weights: He-scaled kernels, per-channel vectors in [0.5, 1.5]
    (positive batch-norm variances and scales)."""
    meta = json.loads((corpus_dir / f"{name}.meta.json").read_text())
    rng = np.random.default_rng(0)
    constants = []
    for entry in meta["tables"]["relay.Constant"]:
        shape, dtype = tuple(entry["shape"]), entry["dtype"]
        if len(shape) > 1:
            fan_in = int(np.prod(shape[1:]))
            data = rng.standard_normal(shape) * np.sqrt(1.0 / fan_in)
        else:
            data = rng.uniform(0.5, 1.5, shape)
        constants.append(relay.Constant(data.astype(dtype)))
    text = (corpus_dir / f"{name}.relay").read_text()
    return relay.parse(text, source_name=name, init_meta_table={"relay.Constant": constants})


def _kernel_calls(program):
    kernels = {k.name: k for k in program.kernels}
    return [
        kernels[let.value.kernel]
        for function in program.functions
        for let in iter_lets(function.body)
        if isinstance(let.value, KernelCall)
    ]


def _fused(mod, **options):
    return collections.Counter("+".join(k.ops) for k in _kernel_calls(lower_to_lir(mod, options=options or None)))


def _check_numerics(mod, seed=1):
    image = np.random.default_rng(seed).standard_normal((1, 3, 224, 224)).astype("float32")
    want = relay.evaluate(mod, image)
    got = relay.evaluate(transform.optimize(mod, 3), image)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert got.argmax() == want.argmax()


def test_mobilenet_v2_fuses_conv_bias_relu_and_residual_adds(corpus_dir):
    mod = _load_model(corpus_dir, "menangerie__9")
    before, after = _fused(mod, opt_level=0), _fused(mod)
    assert sum(before.values()) == 155 and before["nn.batch_norm"] == 53
    assert sum(after.values()) == 56
    assert after == {
        "nn.conv2d+add+nn.relu": 36,  # conv + folded batch norm + relu (pointwise and depthwise)
        "nn.conv2d+add+add": 10,  # linear bottleneck + residual
        "nn.conv2d+add": 7,
        "nn.conv2d": 1,  # the classifier (no batch norm), then reshape
        "nn.global_avg_pool2d": 1,
        "reshape": 1,
    }
    _check_numerics(mod)


def test_resnet50_v2_fuses_conv_bias_relu_and_residual_adds(corpus_dir):
    mod = _load_model(corpus_dir, "menangerie__7")
    before, after = _fused(mod, opt_level=0), _fused(mod)
    assert sum(before.values()) == 158 and before["nn.batch_norm"] == 51
    assert sum(after.values()) == 70
    assert "nn.batch_norm" not in after and "multiply" not in "".join(
        k for k in after if k != "nn.conv2d+add+multiply+add+nn.relu"
    )
    assert after["nn.conv2d+add+nn.relu"] == 33  # conv + folded batch norm + relu
    assert after["nn.conv2d+add+add+nn.relu"] == 3  # conv + residual + pre-activation shift + relu
    assert after["nn.conv2d+add"] == 12  # conv + residual add whose sum also feeds the next block
    # The pre-activation batch norm of a residual sum used twice: its scale went into the next
    # convolutions, its shift and relu stay one elementwise kernel (as with TVM's FuseOps).
    assert after["add+nn.relu"] == 12
    _check_numerics(mod)
