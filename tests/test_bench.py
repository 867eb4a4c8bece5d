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


# ----- python -m bench models ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def restored_environment():
    """`bench models` sets threads, waits and cache folders in os.environ for its process: undo that here."""
    import os

    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _table_rows(text: str, model: str) -> dict[str, list[str]]:
    """The Times table's rows of one model, by system title: their cells."""
    rows = {}
    for line in text.splitlines():
        if line.startswith(f"| {model} |"):
            cells = [c.strip() for c in line.split("|")[1:-1]]
            rows[cells[1]] = cells
    return rows


@pytest.fixture(scope="module")
def mnist_models_run(tmp_path_factory, corpus_dir, restored_environment):
    """One quick `bench models` run on MNIST: cpp and the peers installed here (ONNX Runtime, PyTorch eager)."""
    from bench import models

    out = tmp_path_factory.mktemp("models") / "MODELS.md"
    status = models.main(["--models", "mnist", "--peers", "cpp,ort,torch", "--rounds", "1", "--out", str(out)])
    return status, out.read_text()


def test_models_benchmark_on_mnist_checks_cpp_and_writes_the_table(mnist_models_run):
    status, text = mnist_models_run
    assert status == 0, text
    assert "| model | system | median | p10 | p90 | × best | build | output check |" in text
    assert "Load average (1/5/15 min) at the start" in text
    rows = _table_rows(text, "MNIST")
    assert list(rows) == ["transpile cpp", "ONNX Runtime", "PyTorch eager"]
    assert all(len(cells) == 8 for cells in rows.values())
    cpp = rows["transpile cpp"]
    assert cpp[2].endswith("s") and cpp[5].endswith("×") and cpp[6].endswith(" s")  # median, ratio, build
    assert cpp[7].startswith("numpy float64 reference") and cpp[7].endswith("same after timing")
    for title in ("ONNX Runtime", "PyTorch eager"):  # measured, or n/a with a numbered reason
        assert rows[title][2].endswith("s") or rows[title][2].startswith("n/a ["), rows[title]


def test_models_benchmark_checks_the_peers_against_the_same_reference_on_mnist(mnist_models_run):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    status, text = mnist_models_run
    rows = _table_rows(text, "MNIST")
    for title in ("ONNX Runtime", "PyTorch eager"):
        assert rows[title][7].startswith("numpy float64 reference"), rows[title]  # same weights as cpp
    assert "export)" in rows["ONNX Runtime"][6]


def test_models_benchmark_reports_a_missing_peer_as_not_applicable(
    tmp_path, corpus_dir, restored_environment, monkeypatch
):
    from bench import models

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    out = tmp_path / "MODELS.md"
    assert models.main(["--models", "mnist", "--peers", "ort", "--rounds", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert _table_rows(text, "MNIST")["ONNX Runtime"][2] == "n/a [1]"
    assert "1. MNIST, ONNX Runtime: import" in text and 'pip install -e ".[bench]"' in text
