"""Smoke test of bench/: every workload type-checks, and the harness's correctness check works (no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

# bench/ lives at the repository root and is not an installed package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import runner  # noqa: E402
from bench.workloads import all_workloads  # noqa: E402
from transpile.relay.ty import FuncType  # noqa: E402

WORKLOADS = {w.name: w for w in all_workloads()}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_program_type_checks(name):
    from transpile import relay

    mod = relay.transform.InferType()(WORKLOADS[name].build_module())
    main_type = mod["main"].checked_type
    assert isinstance(main_type, FuncType)
    assert len(main_type.arg_types) == len(WORKLOADS[name].full.args)


@pytest.mark.parametrize("name", ["nat_add", "mlp_b1"])
def test_python_backend_passes_the_harness_check(name):
    workload = WORKLOADS[name]
    instance = workload.small or workload.full
    native = runner.make_native(workload, "python")
    result = native.convert_out(native.call(*native.convert_in(instance.args)))
    runner.check(result, instance.expected, workload, "python", instance.label)


def test_plain_python_peer_agrees_with_the_closed_form():
    workload = WORKLOADS["fib"]
    native = workload.natives["numpy"]()
    assert native.convert_out(native.call(*native.convert_in(workload.small.args))) == 610


def test_check_rejects_wrong_values_shapes_and_dtypes():
    mlp = WORKLOADS["mlp_b1"]
    expected = mlp.full.expected
    with pytest.raises(runner.Mismatch, match="max abs error"):
        runner.check(expected + 0.01, expected, mlp, "peer", "batch=1")
    with pytest.raises(runner.Mismatch, match=r"expected float32\[1, 10\]"):
        runner.check(expected[0], expected, mlp, "peer", "batch=1")
    fib = WORKLOADS["fib"]
    with pytest.raises(runner.Mismatch, match="got 609, expected 610"):
        runner.check(np.int32(609), fib.small.expected, fib, "peer", "n=15")
    with pytest.raises(runner.Mismatch, match="got int64"):
        runner.check(np.int64(610), fib.small.expected, fib, "peer", "n=15")


def test_a_peer_without_a_version_is_reported_not_applicable():
    with pytest.raises(runner.NotApplicable, match="ADTs"):
        runner.make_native(WORKLOADS["treelstm"], "relax")


def test_a_backend_lacking_a_feature_is_reported_not_applicable_with_the_feature():
    with pytest.raises(runner.NotApplicable, match=r"needs (adts|closures), which backend tir lacks"):
        runner.make_native(WORKLOADS["foldl_sum"], "tir")


def test_builds_benchmark_on_mnist_writes_a_table_with_times_sizes_and_load(tmp_path, corpus_dir, capsys):
    from bench import builds

    out = tmp_path / "BUILDS.md"
    status = builds.main(["--models", "mnist", "--repeats", "1", "--out", str(out)])
    text = out.read_text()
    assert status == 0, text
    assert "load average (1/5/15 min) at the start" in text
    rows = [line for line in text.splitlines() if line.startswith("| MNIST |")]
    assert [row.split("|")[2].strip() for row in rows] == ["cpp", "tir"]
    for row in rows:
        cells = [c.strip() for c in row.split("|")[1:-1]]
        first_build, hit = (float(c.split()[0]) for c in cells[2:4])
        assert first_build > 0 and 0 < hit < first_build
        assert cells[6].endswith("B") and cells[8] == "24.0 kB"  # library, weights
    assert "python -m bench builds --models mnist" in capsys.readouterr().out
