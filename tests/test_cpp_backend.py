"""The cpp backend: generated C++, the native library's interfaces, boundary checks, recursion, the build cache."""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
import pytest

pytest.importorskip("tvm")
if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
    pytest.skip("the cpp backend needs g++", allow_module_level=True)

import transpile
from transpile import relay
from transpile.backends.cpp import CppBackend
from transpile.backends.cpp import build as cpp_build
from transpile.errors import EvaluationError
from transpile.runtime import ADTValue

BACKEND = CppBackend()


@pytest.fixture(scope="module", autouse=True)
def cpp_registered():
    """`transpile.load` finds backends by name: register "cpp" unless setup.cfg's entry point already does."""
    from transpile.backends import backends, register_backend, unregister_backend

    added = "cpp" not in backends()
    if added:
        register_backend("cpp", CppBackend)
    yield
    if added:
        unregister_backend("cpp")


FIB = """
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @main(%n: int32) -> int32 { @fib(%n) }
"""

LOOP = """
def @loop(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) { %acc } else { @loop(%n - 1, %acc + 3) }
}
def @main(%n: int32) -> int32 { @loop(%n, 0) }
"""

DEEP = """
def @depth(%n: int32) -> int32 {
  if (%n == 0) { 0 } else {
    let %r = @depth(%n - 1);
    if (%r > 5) { %r - 4 } else { %r + 3 }
  }
}
def @main(%n: int32) -> int32 { @depth(%n) }
"""

MLP = """
def @main(%x: Tensor[(4, 8), float32], %w1: Tensor[(16, 8), float32], %b1: Tensor[(16), float32],
          %w2: Tensor[(3, 16), float32]) -> (Tensor[(4, 3), float32], Tensor[(4, 16), float32]) {
  %0 = nn.dense(%x, %w1, units=16);
  %1 = add(%0, %b1);
  %2 = nn.relu(%1);
  (nn.dense(%2, %w2, units=3), %2)
}
"""

CLOSURES_AND_REFS = """
def @main(%k: Tensor[(3), float32], %x: Tensor[(3), float32]) -> (Tensor[(3), float32], float32) {
  let %scale = fn (%v: Tensor[(3), float32]) -> Tensor[(3), float32] { %v * %k };
  let %r = ref(1f);
  let %ignored = ref_write(%r, ref_read(%r) + 2.5f);
  (%scale(%scale(%x)), ref_read(%r))
}
"""

LIST_SUM = """
def @main(%xs: List[int32]) -> int32 { @sum(%xs) }
"""


def _module(text: str, prelude: bool = False):
    init = None
    if prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    return relay.parse('#[version = "0.0.5"]\n' + text, init_module=init)


_artifacts: dict = {}


def artifact(text: str, prelude: bool = False):
    """One build per program for the whole module (the cache makes re-runs cheap too)."""
    key = (text, prelude)
    if key not in _artifacts:
        _artifacts[key] = transpile.build(_module(text, prelude), backend=BACKEND)
    return _artifacts[key]


def i32(v):
    return np.asarray(v, dtype="int32")


def py_list(values):
    out = ADTValue("Nil", ())
    for v in reversed(values):
        out = ADTValue("Cons", (i32(v), out))
    return out


# ---------------------------------------------------------------- generated code


def test_scalar_kernels_become_inline_cpp_and_tail_calls_loops():
    source = transpile.emit(_module(LOOP), backend=BACKEND)
    assert "while (true) {" in source and "continue;" in source
    assert "__tvm_ffi_" not in source  # every kernel is scalar arithmetic, inlined
    assert "return p0 == 0;" in source or "p0 == 0" in source
    assert source == transpile.emit(_module(LOOP), backend=BACKEND)  # deterministic


def test_fib_runs_natively():
    fib = artifact(FIB).load()
    result = fib(20)
    assert isinstance(result, np.ndarray) and result.dtype == np.int32 and result.shape == ()
    assert int(result) == 6765


def test_ten_million_step_tail_loop_runs_in_constant_stack():
    loop = artifact(LOOP).load()
    start = time.perf_counter()
    assert int(loop(10_000_000)) == 30_000_000
    assert time.perf_counter() - start < 5.0


def test_deep_non_tail_recursion_and_a_clear_error_when_too_deep(monkeypatch):
    # A 16 MiB budget (default 256 MiB) keeps the unwinding after the error quick; 100 000 levels still fit.
    monkeypatch.setenv("TRANSPILE_STACK_MIB", "16")
    depth = artifact(DEEP).load()
    expected = 0
    for _ in range(100_000):
        expected = expected - 4 if expected > 5 else expected + 3
    assert int(depth(100_000)) == expected
    with pytest.raises(EvaluationError, match="recursion deeper than the stack allows"):
        depth(2_000_000_000)
    assert int(depth(3)) == 2  # the library still works afterwards


def test_mlp_matches_numpy():
    rng = np.random.default_rng(0)
    x, w1, b1, w2 = (rng.standard_normal(s).astype("float32") for s in [(4, 8), (16, 8), (16,), (3, 16)])
    out, hidden = artifact(MLP).load()(x, w1, b1, w2)
    expected_hidden = np.maximum(x @ w1.T + b1, 0)
    np.testing.assert_allclose(hidden, expected_hidden, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, expected_hidden @ w2.T, rtol=1e-5, atol=1e-5)


def test_unaligned_and_strided_inputs_are_copied_not_misread():
    rng = np.random.default_rng(1)
    x, w1, b1, w2 = (rng.standard_normal(s).astype("float32") for s in [(4, 8), (16, 8), (16,), (3, 16)])
    big = np.zeros((4, 17), dtype="float32")
    big[:, 1:9] = x  # a strided, unaligned view
    out, _ = artifact(MLP).load()(big[:, 1:9], w1, b1, w2)
    np.testing.assert_allclose(out, np.maximum(x @ w1.T + b1, 0) @ w2.T, rtol=1e-5, atol=1e-5)


def test_closures_capturing_tensors_refs_and_tuples():
    k = np.asarray([1.0, 2.0, -1.0], dtype="float32")
    x = np.asarray([0.5, 1.5, 3.0], dtype="float32")
    scaled, cell = artifact(CLOSURES_AND_REFS).load()(k, x)
    np.testing.assert_allclose(scaled, x * k * k)
    assert cell.dtype == np.float32 and float(cell) == 3.5


def test_list_sum_with_match():
    total = artifact(LIST_SUM, prelude=True).load()
    assert int(total(py_list([1, 2, 3, 4]))) == 10
    assert int(total(py_list(list(range(10_000))))) == sum(range(10_000))
    assert int(total(ADTValue("Nil", ()))) == 0


def test_adt_results_and_python_callables_cross_the_boundary():
    text = """
def @main(%f: fn (int32) -> int32, %n: int32) -> List[int32] {
  @map(%f, Cons(%n, Cons(%n + 1, Nil)))
}
"""
    build = artifact(text, prelude=True).load()
    assert build(lambda v: v * 10, 4) == py_list([40, 50])


def test_argument_errors_raise_before_native_code():
    mlp = artifact(MLP).load()
    good = [np.zeros(s, dtype="float32") for s in [(4, 8), (16, 8), (16,), (3, 16)]]
    with pytest.raises(EvaluationError, match="expects 4 argument"):
        mlp(*good[:3])
    with pytest.raises(EvaluationError, match=r"argument 1 .*Tensor\[\(4, 8\), float32\]"):
        mlp(np.zeros((4, 9), dtype="float32"), *good[1:])
    with pytest.raises(EvaluationError, match="argument 2"):
        mlp(good[0], good[1].astype("float64"), *good[2:])
    total = artifact(LIST_SUM, prelude=True).load()
    with pytest.raises(EvaluationError, match="constructor Leaf is not one of"):
        total(ADTValue("Leaf", ()))
    with pytest.raises(EvaluationError, match="argument 1"):
        total(py_list([1]).fields)  # a tuple, not a List


# ---------------------------------------------------------------- library interfaces


def test_load_module_main_and_w0_interface():
    import tvm

    art = artifact(MLP)
    mod = tvm.runtime.load_module(str(art.library_path))
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype("float32") for s in [(4, 8), (16, 8), (16,), (3, 16)]]
    expected_hidden = np.maximum(arrays[0] @ arrays[1].T + arrays[2], 0)
    out = mod["main"](*[tvm.runtime.tensor(a) for a in arrays])
    np.testing.assert_allclose(out[0].numpy(), expected_hidden @ arrays[3].T, rtol=1e-5, atol=1e-5)
    for index, a in enumerate(arrays[:2]):
        mod["set_input"](index, tvm.runtime.tensor(a))
    mod["set_input"]("b1", tvm.runtime.tensor(arrays[2]))
    mod["set_input"]("w2", tvm.runtime.tensor(arrays[3]))
    mod["run"]()
    assert mod["get_num_outputs"]() == 2
    np.testing.assert_allclose(mod["get_output"](1).numpy(), expected_hidden, rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="Tensor\\[\\(4, 8\\), float32\\]"):
        mod["main"](*[tvm.runtime.tensor(np.zeros((2, 2), "float32"))] + [tvm.runtime.tensor(a) for a in arrays[1:]])


def test_c_header_compiles_and_the_c_api_runs(tmp_path):
    art = artifact(FIB)
    header = art.header_path
    assert (
        header is not None
        and "int transpile_main_run(const DLTensor* const* inputs, DLTensor** outputs);" in header.read_text()
    )
    program = tmp_path / "use.c"
    program.write_text(f"""
#include <stdio.h>
#include "{header}"
int main(void) {{
  int n = 12, result = -1;
  DLTensor in = {{&n, {{kDLCPU, 0}}, 0, {{kDLInt, 32, 1}}, NULL, NULL, 0}};
  DLTensor out = {{&result, {{kDLCPU, 0}}, 0, {{kDLInt, 32, 1}}, NULL, NULL, 0}};
  const DLTensor* inputs[] = {{&in}};
  DLTensor* outputs[] = {{&out}};
  if (transpile_main_run(inputs, outputs) != 0) {{ printf("error: %s\\n", transpile_last_error()); return 1; }}
  printf("%d\\n", result);
  return 0;
}}
""")
    exe = tmp_path / "use"
    includes = [f"-I{d}" for d in cpp_build.include_dirs()]
    rpaths = [f"-Wl,-rpath,{d}" for d in cpp_build.library_dirs()]
    subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-Wall",
            "-Werror",
            str(program),
            "-o",
            str(exe),
            *includes,
            str(art.library_path),
            f"-Wl,-rpath,{art.library_path.parent}",
            *rpaths,
        ],
        check=True,
        capture_output=True,
    )
    assert subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.strip() == "144"


def test_export_and_load(tmp_path):
    art = artifact(FIB)
    art.export(tmp_path / "fib")
    assert (tmp_path / "fib" / "transpile-artifact.json").is_file()
    assert (tmp_path / "fib" / "main.h").is_file()
    fib = transpile.load(tmp_path / "fib")
    assert int(fib(10)) == 55


def test_cache_hit_runs_no_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path))
    mod = _module(FIB)
    first = transpile.build(mod, backend=BACKEND)
    count = cpp_build.compile_count
    start = time.perf_counter()
    second = transpile.build(mod, backend=BACKEND)
    elapsed = time.perf_counter() - start
    assert cpp_build.compile_count == count
    assert second.library_path == first.library_path
    assert elapsed < 1.0
    assert int(second.load()(7)) == 13
