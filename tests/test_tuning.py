"""Tuning with meta_schedule: the `tune` option, which kernels are tuned, the database kept in the
build cache and reused, the faster of hand and tuned schedule kept, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import transpile  # noqa: E402
import transpile.relay as relay  # noqa: E402
from transpile.errors import TranspileError  # noqa: E402
from transpile.kernels import tuning  # noqa: E402
from transpile.kernels.build import build_kernels  # noqa: E402
from transpile.kernels.lower import lower_kernel  # noqa: E402
from transpile.kernels.schedules import choose_schedule  # noqa: E402
from transpile.kernels.target import host_target  # noqa: E402

from test_kernels import make_kernel, random_args, run_kernel  # noqa: E402

T = relay.TensorType
F32 = "float32"


def small_dense():
    return make_kernel("tuned_dense", lambda a, b: relay.nn.dense(a, b, units=32), T((16, 64), F32), T((32, 64), F32))[0]


def test_tune_option_values():
    assert tuning.trials_of(None) == 0 and tuning.trials_of(False) == 0
    assert tuning.trials_of(True) == tuning.DEFAULT_TRIALS and tuning.trials_of(8) == 8
    for bad in (0, -3, "many", 2.5):
        with pytest.raises(TranspileError, match="tune"):
            tuning.trials_of(bad)


def test_only_multiply_accumulate_kernels_with_float_static_inputs_are_tuned():
    assert tuning.is_tunable(small_dense())
    add = make_kernel("add", lambda a, b: a + b, T((16,), F32), T((16,), F32))[0]
    assert not tuning.is_tunable(add)  # elementwise: nothing for a search to find
    ints = make_kernel("idense", lambda a, b: relay.nn.dense(a, b, out_dtype="int32"), T((4, 8), "int8"), T((4, 8), "int8"))[0]
    assert not tuning.is_tunable(ints)  # random inputs could not be trusted to be valid
    dynamic = make_kernel("ddense", lambda a, b: relay.nn.dense(a, b), T((relay.Any(), 8), F32), T((4, 8), F32))[0]
    assert not tuning.is_tunable(dynamic)


def test_the_faster_schedule_is_kept():
    kernel = small_dense()
    unscheduled = lower_kernel(kernel, schedule=False)
    hand, _ = choose_schedule(unscheduled, kernel, host_target())
    # the hand schedule against an unscheduled "tuned" candidate: the hand one must win ...
    choice = tuning._measure(kernel, hand[kernel.name], unscheduled, host_target(), trials=1)
    assert choice.schedule == "hand" and choice.tuned_us > choice.hand_us
    # ... and a faster candidate is taken
    choice = tuning._measure(kernel, unscheduled, hand[kernel.name], host_target(), trials=1)
    assert choice.schedule == "tuned" and choice.speedup > 1


def test_a_crashing_serializer_is_reported_not_run(monkeypatch):
    class Crashed:
        returncode = -11

    tuning.check_tuning_works.cache_clear()
    monkeypatch.setattr(tuning, "_ffi_version", lambda: "0.1.15.post2")
    monkeypatch.setattr(tuning.subprocess, "run", lambda *a, **k: Crashed())
    try:
        with pytest.raises(TranspileError, match="apache-tvm-ffi 0.1.14"):
            tuning.check_tuning_works()
    finally:
        tuning.check_tuning_works.cache_clear()


def test_backends_check_the_option(tmp_path):
    x = relay.var("x", T((4, 8), F32))
    mod = relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    with pytest.raises(TranspileError, match="tune must be"):
        transpile.build(mod, backend="cpp", tune="lots")
    with pytest.raises(TranspileError, match="tune"):
        transpile.build(mod, backend="python", tune=True)


def test_cli_rejects_bad_trials(capsys, tmp_path):
    from transpile.cli import main

    source = tmp_path / "m.rly"
    source.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(4), float32]) { nn.relu(%x) }\n')
    assert main(["build", "-b", "cpp", "--trials", "0", str(source), "-o", str(tmp_path / "out")]) != 0
    assert "--trials" in capsys.readouterr().err


def test_tuning_is_cached_and_reused(tmp_path, monkeypatch):
    """A few trials on a small dense (about 15-30 s): database and verdict in the cache, reused."""
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    kernel = small_dense()
    library = build_kernels([kernel], tmp_path / "first", tune=2)
    assert library.schedules[kernel.name] in ("matmul", "meta_schedule")
    (folder,) = (tmp_path / "cache" / "tuning").glob("*/*")
    assert {"database_workload.json", "database_tuning_record.json", "tuned.json"} <= {p.name for p in folder.iterdir()}
    (verdict,) = folder.glob("choice-*.json")
    choice = json.loads(verdict.read_text())
    assert choice["schedule"] in ("hand", "tuned") and choice["hand_us"] > 0
    assert (choice["schedule"] == "tuned") == (library.schedules[kernel.name] == "meta_schedule")

    def no_search(*args, **kwargs):
        raise AssertionError("a later build must reuse the tuning database")

    from tvm.s_tir import meta_schedule

    monkeypatch.setattr(meta_schedule.tir_integration, "tune_tir", no_search)
    monkeypatch.setattr(tuning, "_measure", no_search)
    again = build_kernels([kernel], tmp_path / "second", tune=2)
    assert again.schedules == library.schedules
    args = random_args(kernel)
    np.testing.assert_allclose(run_kernel(again, kernel, args)[0], args[0] @ args[1].T, rtol=1e-4, atol=1e-4)
