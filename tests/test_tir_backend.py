"""The tir backend: TVMScript round trip, W0 and load_module, export/load, loops, ifs, rejections, an MLP vs numpy."""

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import UnsupportedFeatureError

LOOP = """#[version = "0.0.5"]
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + 3) }
}
def @main(%n: int32) -> int32 { @loop(%n, 0) }
"""

SWAP = """#[version = "0.0.5"]
def @swap(%i: int32, %a: Tensor[(3), float32], %b: Tensor[(3), float32]) -> (Tensor[(3), float32], Tensor[(3), float32]) {
  if (%i == 0) { (%a, %b) } else { @swap(%i - 1, %b, %a + %b) }
}
def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) { @swap(5, %a, %b) }
"""

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w1: Tensor[(16, 8), float32], %w2: Tensor[(4, 16), float32]) {
  %0 = nn.relu(nn.dense(%x, %w1, units=16));
  nn.dense(%0, %w2, units=4)
}
"""


@pytest.fixture(scope="module")
def mlp_artifact():
    return transpile.build(relay.parse(MLP), backend="tir")


def _mlp_inputs():
    rng = np.random.default_rng(5)
    return [rng.standard_normal(s).astype("float32") for s in ((2, 8), (16, 8), (4, 16))]


@pytest.mark.parametrize(
    "src, names",
    [
        (LOOP, {"main", "fn_loop", "fused_equal", "fused_subtract", "fused_add"}),
        (MLP, {"main", "fused_dense_relu", "fused_dense"}),
    ],
)
def test_emit_is_tvmscript_that_reparses_structurally_equal(src, names):
    import tvm

    text = transpile.emit(relay.parse(src), backend="tir")
    assert "def main(" in text
    module = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(module, tvm.script.from_source(module.script()))
    assert {gv.name_hint for gv in module.functions} == names


def test_loop_lowering_is_a_while_loop_over_state_buffers():
    text = transpile.emit(relay.parse(LOOP), backend="tir")
    assert "while again[()]:" in text and "s_acc[()] = t_" in text
    assert "T.call_cpacked" not in text  # scalar kernels and the loop are direct calls


def test_self_tail_recursion_is_a_loop():
    f = transpile.compile(relay.parse(LOOP), backend="tir")
    assert int(f(1_000_000)) == 3_000_000
    assert int(f(np.int32(0))) == 0


def test_tail_call_swapping_tensor_state_and_tuple_results():
    f = transpile.compile(relay.parse(SWAP), backend="tir")
    a, b = np.array([1, 2, 3], "float32"), np.array([0.5, 0, -1], "float32")
    for _ in range(5):
        a, b = b, a + b
    got = f(np.array([1, 2, 3], "float32"), np.array([0.5, 0, -1], "float32"))
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_allclose(got[0], a)
    np.testing.assert_allclose(got[1], b)


def test_if_on_a_scalar_condition():
    src = """#[version = "0.0.5"]
def @main(%c: bool, %x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  if (%c) { %x * 2f } else { %x - 1f }
}"""
    f = transpile.compile(relay.parse(src), backend="tir")
    x = np.arange(4, dtype="float32")
    np.testing.assert_allclose(f(True, x), x * 2)
    np.testing.assert_allclose(f(False, x), x - 1)


def test_mlp_against_numpy_and_argument_checks(mlp_artifact):
    x, w1, w2 = _mlp_inputs()
    expected = np.maximum(x @ w1.T, 0) @ w2.T
    f = mlp_artifact.load()
    np.testing.assert_allclose(f(x, w1, w2), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(transpile.TranspileError, match="argument 1"):
        f(np.zeros((3, 8), "float32"), w1, w2)


def test_w0_and_main_through_load_module(mlp_artifact):
    import tvm

    x, w1, w2 = _mlp_inputs()
    expected = np.maximum(x @ w1.T, 0) @ w2.T
    lib = tvm.runtime.load_module(str(mlp_artifact.library_path))
    np.testing.assert_allclose(
        lib["main"](*[tvm.runtime.tensor(a) for a in (x, w1, w2)]).numpy(), expected, rtol=1e-5, atol=1e-5
    )
    lib["set_input"](0, tvm.runtime.tensor(x))
    lib["set_input"]("w1", tvm.runtime.tensor(w1))
    lib["set_input"]("w2", tvm.runtime.tensor(w2))
    lib["run"]()
    assert lib["get_num_inputs"]() == 3 and lib["get_num_outputs"]() == 1
    assert lib["get_input_index"]("w2") == 2
    np.testing.assert_allclose(lib["get_output"](0).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_export_and_load(tmp_path, mlp_artifact):
    x, w1, w2 = _mlp_inputs()
    mlp_artifact.export(tmp_path / "mlp")
    assert (tmp_path / "mlp" / "main.tir.py").is_file()
    g = transpile.load(tmp_path / "mlp")
    np.testing.assert_allclose(g(x, w1, w2), np.maximum(x @ w1.T, 0) @ w2.T, rtol=1e-5, atol=1e-5)


def test_constants_live_in_the_library():
    w = np.arange(12, dtype="float32").reshape(3, 4)
    mod = relay.parse(
        '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 4), float32]) { nn.dense(%x, meta[relay.Constant][0], units=3) }',
        init_meta_table={"relay.Constant": [relay.const(w)]},
    )
    f = transpile.compile(mod, backend="tir")
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(f(x), x @ w.T)


@pytest.mark.parametrize(
    "src, feature",
    [
        ("def @main(%x: int32) { let %f = fn (%y: int32) { %y + %x }; %f(1) }", "closures"),
        ("def @main(%x: int32) { let %r = ref(%x); ref_read(%r) }", "refs"),
        ("def @main(%x: Tensor[(?), float32]) { %x }", "dynamic_shapes"),
    ],
)
def test_unsupported_features_are_rejected_naming_them(src, feature):
    with pytest.raises(UnsupportedFeatureError) as info:
        transpile.compile(relay.parse('#[version = "0.0.5"]\n' + src), backend="tir")
    assert info.value.feature == feature and info.value.backend == "tir"
    assert "tir" in str(info.value)


def test_non_tail_recursion_on_scalars_is_a_direct_call():
    src = """#[version = "0.0.5"]
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @main(%n: int32) -> int32 { @fib(%n) }
"""
    mod = relay.parse(src)
    assert "Module.fn_fib(" in transpile.emit(mod, backend="tir")
    assert int(transpile.compile(mod, backend="tir")(20)) == 6765


def _conv_nchw_same(x, w, b):
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), "float32")
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", padded[:, :, i : i + h, j : j + wd], w[:, :, i, j])
    return out + b[None, :, None, None]


def test_cnn_against_numpy_with_planned_intermediates():
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((4, 1, 3, 3)).astype("float32")
    b1 = rng.standard_normal(4).astype("float32")
    wd = rng.standard_normal((3, 4 * 4 * 4)).astype("float32")
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1, 8, 8), float32]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.relu(nn.bias_add(%0, meta[relay.Constant][1]));
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
  nn.dense(nn.batch_flatten(%2), meta[relay.Constant][2], units=3)
}"""
    mod = relay.parse(src, init_meta_table={"relay.Constant": [relay.const(w1), relay.const(b1), relay.const(wd)]})
    text = transpile.emit(mod, backend="tir")
    assert "arena" in text and "handle_add_byte_offset" in text  # intermediates share one planned arena
    x = rng.standard_normal((1, 1, 8, 8)).astype("float32")
    y = np.maximum(_conv_nchw_same(x, w1, b1), 0).reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    expected = y.reshape(1, -1) @ wd.T
    np.testing.assert_allclose(transpile.compile(mod, backend="tir")(x), expected, rtol=1e-4, atol=1e-4)


def test_a_second_build_is_a_cache_hit():
    from transpile.backends.tir import build as tir_build

    mod = relay.parse(LOOP)
    transpile.build(mod, backend="tir")
    before = tir_build.compile_count
    artifact = transpile.build(relay.parse(LOOP), backend="tir")
    assert tir_build.compile_count == before
    assert int(artifact.load()(7)) == 21


def test_programs_differing_only_in_constant_values_get_their_own_libraries():
    text = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 4), float32]) { nn.dense(%x, meta[relay.Constant][0], units=3) }'
    x = np.ones((2, 4), "float32")
    for scale in (1.0, 2.0):
        w = np.full((3, 4), scale, "float32")
        mod = relay.parse(text, init_meta_table={"relay.Constant": [relay.const(w)]})
        np.testing.assert_allclose(transpile.compile(mod, backend="tir")(x), x @ w.T)


def test_deep_non_tail_recursion_runs_on_the_library_big_stack():
    src = """#[version = "0.0.5"]
def @sum(%n: int64) -> int64 {
  if (%n == 0i64) { 0i64 } else { %n + @sum(%n - 1i64) }
}
def @main(%n: int64) -> int64 { @sum(%n) }
"""
    n = 1_000_000  # far deeper than an 8 MiB thread stack allows
    assert int(transpile.compile(relay.parse(src), backend="tir")(n)) == n * (n + 1) // 2


# ----- kernels called more than once (issue 9) --------------------------------------------------

TWICE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 4), float32], %w1: Tensor[(4, 4), float32], %w2: Tensor[(4, 4), float32]) {
  nn.relu(nn.dense(nn.relu(nn.dense(%x, %w1, units=4)), %w2, units=4))
}
"""


def test_one_kernel_called_twice():
    mod = relay.parse(TWICE)
    text = transpile.emit(mod, backend="tir")
    assert text.count('T.call_cpacked("fused_dense_relu"') == 2  # both layers share one kernel
    rng = np.random.default_rng(3)
    x, w1, w2 = (rng.standard_normal(s).astype("float32") for s in ((2, 4), (4, 4), (4, 4)))
    expected = np.maximum(np.maximum(x @ w1.T, 0) @ w2.T, 0)
    np.testing.assert_allclose(transpile.compile(mod, backend="tir")(x, w1, w2), expected, rtol=1e-5, atol=1e-6)


def test_kernel_calls_take_every_name_llvm_gave_a_repeated_declaration():
    from transpile.backends.tir.symbols import kernel_calls

    symbols = {"fused_add", "fused_add.49", "fused_add.1.2", "fused_add_1", "TVMBackendAllocWorkspace"}
    assert kernel_calls(symbols, {"fused_add", "fused_mul"}) == {
        "fused_add": "fused_add",
        "fused_add.1.2": "fused_add",
        "fused_add.49": "fused_add",
    }


def test_undefined_symbols_of_an_object(tmp_path):
    from transpile.backends import native
    from transpile.backends.tir.symbols import undefined_symbols

    (tmp_path / "a.c").write_text("int k(int); int g(int x) { return k(x) + 1; }\n")
    native.run_compiler([native.cxx(), "-x", "c", "-c", str(tmp_path / "a.c"), "-o", str(tmp_path / "a.o")], "cc")
    assert undefined_symbols(tmp_path / "a.o") == {"k"}
    with pytest.raises(transpile.TranspileError, match="not an ELF object"):
        undefined_symbols(tmp_path / "a.c")


def test_an_unresolved_kernel_call_fails_the_build_not_the_process(tmp_path, monkeypatch):
    from transpile.backends.tir import symbols

    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(symbols, "kernel_calls", lambda names, kernels: {})  # forwarders forgotten
    with pytest.raises(transpile.TranspileError, match="fused_dense_relu"):
        transpile.build(relay.parse(TWICE), backend="tir")


def test_a_library_missing_a_symbol_fails_to_load_with_a_transpile_error(tmp_path):
    from transpile.backends import native
    from transpile.backends.tir.build import LINK_CHECKS

    # Linked like a tir library minus -z defs: without -z now, loading would succeed and the
    # first call of the missing function would kill the process (the dynamic linker's exit 127).
    (tmp_path / "m.c").write_text(
        "int transpile_test_missing(void); int f(void) { return transpile_test_missing(); }\n"
    )
    lib = tmp_path / "libm_test.so"
    flags = [f for f in LINK_CHECKS if "defs" not in f]
    native.run_compiler(
        [native.cxx(), "-x", "c", "-shared", "-fPIC", str(tmp_path / "m.c"), "-o", str(lib), *flags], "cc"
    )
    with pytest.raises(transpile.TranspileError, match="transpile_test_missing"):
        native.load_library(lib)


# ----- weights: one blob, linked from binary data ------------------------------------------------

CONSTANTS = """#[version = "0.0.5"]
def @layer(%x: Tensor[(2, 4), float32]) -> Tensor[(2, 3), float32] {
  nn.bias_add(nn.dense(%x, meta[relay.Constant][0], units=3), meta[relay.Constant][1])
}
def @main(%x: Tensor[(2, 4), float32]) {
  (@layer(%x), meta[relay.Constant][1])
}
"""


def _constants_module():
    w = np.arange(12, dtype="float32").reshape(3, 4) / 7
    b = np.array([0.5, -1.0, 2.0], "float32")
    mod = relay.parse(CONSTANTS, init_meta_table={"relay.Constant": [relay.const(w), relay.const(b)]})
    return mod, w, b


def test_constants_are_one_blob_passed_as_one_buffer(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    import tvm

    mod, w, b = _constants_module()
    text = transpile.emit(mod, backend="tir")
    module = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(module, tvm.script.from_source(module.script()))
    assert text.count('weights: T.Buffer((128,), "uint8")') == 2  # @layer and main; 48 + 12 bytes, 64-aligned
    assert "T.handle_add_byte_offset(weights.data, 64)" in text
    artifact = transpile.build(mod, backend="tir")
    assert artifact.info["weights_bytes"] == 128
    files = sorted(p.name for p in artifact.directory.iterdir())
    assert not [name for name in files if name.endswith((".bin", ".s", ".o"))], files
    program = (artifact.directory / "program.c").read_text()
    assert ".incbin" not in program and str(tmp_path) not in program
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
    got = artifact.load()(x)
    np.testing.assert_allclose(got[0], x @ w.T + b, rtol=1e-5)
    np.testing.assert_array_equal(got[1], b)  # a constant copied out of the blob


def test_builds_in_a_cache_dir_whose_path_has_quotes_and_spaces(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "we\"ird \\ dir's cache"))
    mod, w, b = _constants_module()
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(transpile.compile(mod, backend="tir")(x)[0], x @ w.T + b, rtol=1e-5)


# ----- cache and progress ---------------------------------------------------------------------------


def test_a_build_reports_its_stages(tmp_path, monkeypatch):
    from transpile import progress

    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    ended = []
    with progress.listen(lambda event: ended.append(event.name) if event.kind == "end" else None):
        transpile.build(relay.parse(TWICE), backend="tir")
    assert {"pipeline", "lower to TIR", "kernels: lower and schedule", "tvm.compile", "link"} <= set(ended)


def test_a_hit_in_a_fresh_process_lowers_nothing_and_imports_no_tvm(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    from transpile.kernels.digest import compiler_digest

    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    compiler_digest.cache_clear()  # the key hashes the package's code as it is now, as the child's will
    mod, _, _ = _constants_module()
    first = transpile.build(mod, backend="tir")
    script = f"""
import sys, numpy as np
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_tir_backend import _constants_module
import transpile
artifact = transpile.build(_constants_module()[0], backend="tir")
heavy = [m for m in ("tvm", "transpile.pipeline", "transpile.backends.tir.lowering", "transpile.backends.tir.build")
         if m in sys.modules]
print("DIR", artifact.directory)
print("HEAVY", heavy)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"DIR {first.directory}" in proc.stdout
    assert "HEAVY []" in proc.stdout, proc.stdout
