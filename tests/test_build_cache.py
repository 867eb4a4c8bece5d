"""The build cache is keyed from the typed Relay module before lowering: a hit lowers and compiles nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends.buildkey import module_fingerprint

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 4), float32] {
  nn.relu(nn.dense(%x, meta[relay.Constant][0], units=4))
}
"""


def _module(seed: int = 0):
    weight = np.random.default_rng(seed).standard_normal((4, 3)).astype("float32")
    return relay.parse(PROGRAM, init_meta_table={"relay.Constant": [relay.Constant(weight)]})


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_fingerprint_follows_text_constants_and_entry():
    assert module_fingerprint(_module(0), "main") == module_fingerprint(_module(0), "main")
    assert module_fingerprint(_module(0), "main") != module_fingerprint(_module(1), "main")
    assert module_fingerprint(_module(0), "main") != module_fingerprint(_module(0), "other")
    reparsed = relay.parse(_module(0).astext(show_meta_data=True))
    assert module_fingerprint(reparsed, "main") == module_fingerprint(_module(0), "main")


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_a_hit_lowers_nothing(backend, cache_dir, monkeypatch):
    from transpile import pipeline

    first = transpile.build(_module(), backend=backend)

    def no_lowering(*args, **kwargs):
        raise AssertionError("a cache hit must not lower the program")

    monkeypatch.setattr(pipeline, "lower_to_lir", no_lowering)
    second = transpile.build(_module(), backend=backend)
    assert second.directory == first.directory
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(second.load()(x), relay.evaluate(_module(), x), rtol=1e-5)


def test_constants_and_options_change_the_key(cache_dir):
    base = transpile.build(_module(0), backend="cpp").directory
    assert transpile.build(_module(1), backend="cpp").directory != base
    assert transpile.build(_module(0), backend="cpp", schedule=False).directory != base
    assert transpile.build(_module(0), backend="cpp").directory == base


def test_an_enclosing_pass_context_changes_the_key(cache_dir):
    from transpile.backends.api import _source_key, prepare

    backend, typed, entry = prepare(_module(0), backend="cpp")
    plain = _source_key(backend, typed, entry, {})
    with relay.transform.PassContext(disabled_pass=["FoldConstant"]):
        disabled = _source_key(backend, typed, entry, {})
    with relay.transform.PassContext(opt_level=3):
        assert _source_key(backend, typed, entry, {}) == plain
    assert disabled != plain


def test_a_hit_in_a_fresh_process_imports_no_compiler(cache_dir):
    transpile.build(_module(), backend="cpp")
    script = textwrap.dedent(
        f"""
        import sys, numpy as np
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
        from test_build_cache import _module
        import transpile
        artifact = transpile.build(_module(), backend="cpp")
        artifact.load()(np.ones((2, 3), "float32"))
        heavy = [m for m in ("transpile.pipeline", "transpile.passes.fuse", "transpile.kernels.build",
                             "transpile.backends.cpp.codegen") if m in sys.modules]
        print("HEAVY", heavy)
        """
    )
    env = {**__import__("os").environ, "TRANSPILE_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "HEAVY []" in proc.stdout


def test_loading_imports_tvm_ffi_without_torch():
    """apache-tvm-ffi 0.1.14 imports torch (~0.8 s) when it is installed; a cache hit must not pay for it."""
    script = (
        "import sys\n"
        "from transpile.backends.runtime_libs import import_tvm_ffi\n"
        "import_tvm_ffi()\n"
        "print('TORCH', 'torch' in sys.modules)\n"
        "try:\n    import torch\n    print('LATER', torch is not None)\n"
        "except ImportError:\n    print('LATER', 'absent')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "TORCH False" in proc.stdout
    assert "LATER True" in proc.stdout or "LATER absent" in proc.stdout  # still importable when installed
