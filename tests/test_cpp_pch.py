"""The cpp backend's precompiled runtime header: used by g++ when valid, harmless when not."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("tvm")
if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
    pytest.skip("the cpp backend needs g++", allow_module_level=True)

import transpile
from transpile import relay
from transpile.backends.cpp import CppBackend
from transpile.backends.cpp import build

if not build._is_gcc():  # pragma: no cover - another compiler: builds go without a precompiled header
    pytest.skip("precompiled headers are used with GCC only", allow_module_level=True)


def test_g_plus_plus_takes_the_precompiled_header(tmp_path):
    directory = build.precompiled_header_dir()
    assert directory is not None
    source = tmp_path / "use.cpp"
    source.write_text("#include <transpile_rt.h>\nint main() { return trt::data_size(DLTensor{}) == 0 ? 0 : 1; }\n")
    includes = [f"-I{d}" for d in [directory, *build.include_dirs()]]
    proc = subprocess.run(
        ["g++", *build.CXX_FLAGS, "-H", "-fsyntax-only", *includes, str(source)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # -H marks a precompiled header it used with "!" (and lists every header it parsed otherwise)
    assert f"! {directory}/transpile_rt.h.gch" in proc.stderr
    assert "tvm/ffi/function.h" not in proc.stderr


def test_a_damaged_precompiled_header_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path))

    def damaged(root, final):
        final.mkdir()
        for header in build.RUNTIME_DIR.glob("*.h"):
            shutil.copy(header, final / header.name)
        (final / "transpile_rt.h.gch").write_bytes(b"not a precompiled header" * 100)

    monkeypatch.setattr(build, "_build_precompiled_header", damaged)
    commands = []
    real = build.start_compiler
    monkeypatch.setattr(build, "start_compiler", lambda args, what: (commands.append(args), real(args, what))[1])
    mod = relay.parse('#[version = "0.0.5"]\ndef @main(%x: int32) -> int32 { %x * 7 + 1 }')
    run = transpile.compile(mod, backend=CppBackend())
    assert int(run(np.int32(6))) == 43
    (library_build,) = commands  # the program's C++ (compiled apart from the link)
    assert f"-I{build.precompiled_header_dir()}" in library_build  # offered to g++, which declined it
