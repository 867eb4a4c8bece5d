"""Thread-pool defaults: all usable cores, passive waits, no pinning; whatever the user set wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from transpile.kernels.threads import THREAD_DEFAULTS, configure_threads, thread_settings, usable_cpus

pytest.importorskip("tvm_ffi")

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(64, 64), float32]) -> Tensor[(64, 64), float32] { nn.relu(%x) }
"""

# A fresh process loads a built library, then prints the pool settings its C environment holds.
LOAD_AND_REPORT = """
import json, sys
import transpile
from transpile.kernels.threads import thread_settings
transpile.load(sys.argv[1])
print(json.dumps(thread_settings()))
"""


def test_configure_threads_sets_passive_unpinned_defaults(monkeypatch):
    for name in [*THREAD_DEFAULTS, "TVM_NUM_THREADS", "OMP_NUM_THREADS"]:
        monkeypatch.delenv(name, raising=False)
    assert configure_threads() == usable_cpus()
    assert os.environ["TVM_THREAD_POOL_SPIN_COUNT"] == "0" and os.environ["TVM_BIND_THREADS"] == "0"
    assert thread_settings()["TVM_NUM_THREADS"] == str(usable_cpus())  # the C environment sees them


def test_configure_threads_keeps_the_users_settings(monkeypatch):
    monkeypatch.setenv("TVM_THREAD_POOL_SPIN_COUNT", "1000")
    monkeypatch.setenv("TVM_BIND_THREADS", "1")
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    assert configure_threads() == 3
    assert os.environ["TVM_THREAD_POOL_SPIN_COUNT"] == "1000" and os.environ["TVM_BIND_THREADS"] == "1"


@pytest.fixture(scope="module")
def exported_library(tmp_path_factory):
    pytest.importorskip("tvm")
    import transpile
    from transpile import relay

    directory = tmp_path_factory.mktemp("relu")
    transpile.build(relay.parse(PROGRAM), backend="cpp").export(directory)
    return directory


def _settings_after_loading(directory, **env) -> dict:
    import json

    clean = {k: v for k, v in os.environ.items() if k not in (*THREAD_DEFAULTS, "TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_REPORT, str(directory)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cpp_library_sets_the_defaults_when_loaded(exported_library):
    settings = _settings_after_loading(exported_library)
    assert settings["TVM_THREAD_POOL_SPIN_COUNT"] == "0" and settings["TVM_BIND_THREADS"] == "0"
    assert settings["TVM_NUM_THREADS"] == str(usable_cpus())


def test_cpp_library_leaves_the_users_settings(exported_library):
    settings = _settings_after_loading(
        exported_library, TVM_THREAD_POOL_SPIN_COUNT="300000", TVM_BIND_THREADS="1", OMP_NUM_THREADS="1"
    )
    assert settings["TVM_THREAD_POOL_SPIN_COUNT"] == "300000" and settings["TVM_BIND_THREADS"] == "1"
    assert "TVM_NUM_THREADS" not in settings  # OMP_NUM_THREADS already says how many
