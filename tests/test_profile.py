"""The profiler: profiling builds (cpp, tir) time every kernel call inside real runs; `transpile profile`."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("tvm")

import transpile  # noqa: E402
from transpile import relay  # noqa: E402
from transpile.cli import main  # noqa: E402
from transpile.errors import TranspileError  # noqa: E402
from transpile.profiling import OUTSIDE, random_arguments  # noqa: E402

CONV_DENSE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 16, 16), float32], %w: Tensor[(8, 3, 3, 3), float32], %b: Tensor[(8), float32],
          %w2: Tensor[(10, 2048), float32]) -> Tensor[(1, 10), float32] {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.batch_flatten(%2);
  nn.dense(%3, %w2, units=10)
}
"""

# A kernel called a data-dependent number of times: once per step of the loop.
LOOP = """#[version = "0.0.5"]
def @step(%n: int32, %x: Tensor[(4, 4), float32]) -> Tensor[(4, 4), float32] {
  if (%n == 0) { %x } else { @step(%n - 1, nn.relu(%x) * 0.5f) }
}
def @main(%n: int32, %x: Tensor[(4, 4), float32]) -> Tensor[(4, 4), float32] {
  @step(%n, %x)
}
"""

CONV_FLOPS = 2 * 8 * 16 * 16 * 3 * 3 * 3  # 2 · outputs · (C·KH·KW)
DENSE_FLOPS = 2 * 10 * 2048


def conv_dense_module():
    return relay.parse(CONV_DENSE, source_name="convdense.rly")


def conv_dense_args():
    rng = np.random.default_rng(0)
    shapes = [(1, 3, 16, 16), (8, 3, 3, 3), (8,), (10, 2048)]
    return [rng.standard_normal(s).astype("float32") for s in shapes]


def lir_kernel_calls(mod):
    """How often one run of the (straight-line) LIR main calls each kernel."""
    from transpile.lir.nodes import KernelCall
    from transpile.lir.walk import iter_lets
    from transpile.pipeline import lower_to_lir

    program = lower_to_lir(relay.transform.InferType()(mod), options={"alter_layout": True})
    main_fn = next(f for f in program.functions if f.name == program.entry)
    return Counter(let.value.kernel for let in iter_lets(main_fn.body) if isinstance(let.value, KernelCall))


@pytest.fixture(scope="module", params=["cpp", "tir"])
def conv_dense_profile(request):
    artifact = transpile.build(conv_dense_module(), backend=request.param, profile=True)
    return request.param, artifact, artifact.profile(*conv_dense_args(), runs=4)


def test_every_kernel_appears_with_its_call_count(conv_dense_profile):
    backend, artifact, report = conv_dense_profile
    expected = lir_kernel_calls(conv_dense_module())
    untimed = set(artifact.info.get("profile_untimed", []))
    timed = {r.name: r for r in report.kernels}
    assert set(timed) == set(expected) - untimed
    assert backend == "tir" or not untimed  # cpp times every TVM kernel
    for name, row in timed.items():
        assert row.calls == expected[name] * report.runs and row.calls_per_run == expected[name]
        assert row.seconds > 0
    assert report.runs == 4 and len(report.run_seconds) == 4


def test_shares_sum_to_one_with_the_outside_row(conv_dense_profile):
    _, _, report = conv_dense_profile
    rows = report.rows()
    assert rows[-1].name == OUTSIDE
    assert sum(report.share(r) for r in rows) == pytest.approx(1.0, abs=1e-6)
    assert report.kernel_seconds <= report.total_seconds
    assert [r.seconds for r in report.kernels] == sorted((r.seconds for r in report.kernels), reverse=True)


def test_flops_and_gflops_for_conv_and_dense(conv_dense_profile):
    _, _, report = conv_dense_profile
    by_op = {}
    for r in report.kernels:
        for op in ("conv2d", "dense"):
            if any(op in o for o in r.info.ops):
                by_op[op] = r
    assert by_op["conv2d"].info.flops == CONV_FLOPS and by_op["dense"].info.flops == DENSE_FLOPS
    assert by_op["conv2d"].gflops > 0 and by_op["dense"].gflops > 0
    assert by_op["conv2d"].info.signature == "conv 3x3/1 3->8 16x16"
    assert by_op["conv2d"].info.source == "convdense.rly:4-6"  # conv2d, bias_add and relu's lines
    assert all(r.gflops is None for r in report.kernels if r.info.flops is None)


def test_report_table(conv_dense_profile):
    backend, _, report = conv_dense_profile
    text = report.format()
    assert text.startswith(f"{backend}: 4 runs")
    for column in ("kernel", "calls", "share", "GFLOP/s", "operators", "source"):
        assert column in text
    assert OUTSIDE in text and "convdense.rly:8" in text  # the dense
    assert "(1 more kernels)" in report.format(top=len(report.kernels) - 1)
    data = json.loads(json.dumps(report.to_json()))
    assert data["kernels"][-1]["name"] == OUTSIDE and data["runs"] == 4


def test_profiling_build_is_its_own_cache_entry_and_normal_builds_have_no_timing():
    mod = conv_dense_module()
    normal = transpile.build(mod, backend="cpp")
    profiled = transpile.build(mod, backend="cpp", profile=True)
    assert normal.directory != profiled.directory
    assert "call_timed" not in normal.source and "transpile_profile_read" not in normal.source
    assert "trt::call_timed(" in profiled.source and "profile_kernels" not in normal.info
    with pytest.raises(TranspileError, match="profile=True"):
        normal.profile(*conv_dense_args())
    # The profiled program computes what the normal one does.
    np.testing.assert_allclose(profiled.load()(*conv_dense_args()), normal.load()(*conv_dense_args()), rtol=1e-5)


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_calls_counted_through_recursion(backend):
    artifact = transpile.build(relay.parse(LOOP, source_name="loop.rly"), backend=backend, profile=True)
    report = artifact.profile(np.int32(5), np.ones((4, 4), "float32"), runs=3)
    tensor_kernels = [r for r in report.kernels if "nn.relu" in r.info.ops]
    if backend == "tir" and not tensor_kernels:  # compiled into its caller: listed as untimed
        assert any("relu" in name for name in report.untimed)
        return
    assert len(tensor_kernels) == 1 and tensor_kernels[0].calls_per_run == 5


def test_random_arguments_follow_the_parameter_types():
    mod = relay.transform.InferType()(conv_dense_module())
    args = random_arguments(mod["main"])
    assert [a.shape for a in args] == [(1, 3, 16, 16), (8, 3, 3, 3), (8,), (10, 2048)]
    assert all(a.dtype == np.float32 for a in args)


def test_profile_function_makes_up_arguments():
    report = transpile.profiling.profile(conv_dense_module(), backend="cpp", runs=2)
    assert report.runs == 2 and any("dense" in r.name for r in report.kernels)


def test_cli_profile(tmp_path, capsys):
    source = tmp_path / "convdense.rly"
    source.write_text(CONV_DENSE)
    out_json = tmp_path / "profile.json"
    code = main(["profile", str(source), "--runs", "3", "-q", "--json", str(out_json)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("cpp: 3 runs") and "fused_dense" in out and OUTSIDE in out and "GFLOP/s" in out
    assert json.loads(out_json.read_text())["runs"] == 3
    # Arguments as for `run` (.npy files), the tir backend, --top.
    paths = []
    for i, array in enumerate(conv_dense_args()):
        paths.append(str(tmp_path / f"a{i}.npy"))
        np.save(paths[-1], array)
    code = main(["profile", str(source), "-b", "tir", "--runs", "2", "--top", "1", "-q", *paths])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("tir: 2 runs") and out.count("fused_") >= 1


def test_cli_profile_rejects_other_backends(tmp_path, capsys):
    source = tmp_path / "convdense.rly"
    source.write_text(CONV_DENSE)
    code = main(["profile", str(source), "-b", "python", "-q"])
    _, err = capsys.readouterr()
    assert code == 1 and "native backend" in err
