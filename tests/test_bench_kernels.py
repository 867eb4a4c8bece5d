"""`python -m bench kernels`: per-kernel timings of a corpus model (MNIST: small enough for a test)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tvm")

from bench import kernels as bench_kernels  # noqa: E402


@pytest.fixture(scope="module")
def mnist_profile(corpus_dir, monkeypatch_module):
    monkeypatch_module.setenv("TRANSPILE_CORPUS", str(corpus_dir))
    return bench_kernels.profile_model("mnist", rounds=1)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_every_kernel_is_timed_with_calls_and_flops(mnist_profile):
    rows, facts = mnist_profile
    assert facts["model"] == "menangerie__1" and facts["calls"] == sum(r.calls for r in rows)
    assert all(r.seconds > 0 for r in rows)
    convs = [r for r in rows if r.signature.startswith("conv")]
    assert len(convs) == 2 and all(r.flops and r.gflops > 0 for r in convs)
    # conv 5x5 on 1x28x28 padded by 2 to 8 channels: 2 * 8 * 28 * 28 * 1 * 25
    assert any(r.flops == 2 * 8 * 28 * 28 * 25 for r in convs)
    assert [r.total for r in rows] == sorted((r.total for r in rows), reverse=True)


def test_report_and_comparison_by_signature(mnist_profile, tmp_path):
    rows, facts = mnist_profile
    text = bench_kernels.report(rows, facts, top=3)
    assert "| 1 |" in text and "GFLOP/s" in text and "sum of kernels" in text
    saved = {"facts": facts, "summary": bench_kernels.summary(rows), "rows": [r.__dict__ for r in rows]}
    before = json.loads(json.dumps(saved))
    table = bench_kernels.compare_report(rows, before, top=5)
    assert "1.0×" in table  # a run compared with itself
