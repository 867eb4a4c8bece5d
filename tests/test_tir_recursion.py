"""The tir backend's stack guard: deep non-tail recursion works, too deep a one raises a clean error, never a crash."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError

SUM = """#[version = "0.0.5"]
def @sum(%n: int64) -> int64 {
  if (%n == 0i64) { 0i64 } else { %n + @sum(%n - 1i64) }
}
def @main(%n: int64) -> int64 { @sum(%n) }
"""

# Tensors in the recursion: public PrimFuncs calling themselves with T.call_cpacked, intermediates
# from TVM's workspace (what an overflow abandons there stays in the per-thread pool).
SCALE = """#[version = "0.0.5"]
def @scale(%n: int32, %x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  if (%n == 0) { %x } else { @scale(%n - 1, %x) + %x }
}
def @main(%n: int32, %x: Tensor[(3), float32]) -> Tensor[(3), float32] { @scale(%n, %x) }
"""

# Mutual recursion that is never a self tail call: both functions are on the cycle.
PARITY = """#[version = "0.0.5"]
def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
def @main(%n: int32) -> bool { @even(%n) }
"""

LOOP = """#[version = "0.0.5"]
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + 3) }
}
def @main(%n: int32) -> int32 { @loop(%n, 0) }
"""

TOO_DEEP = "recursion deeper than the stack allows: 16 MiB of call stack used by nested calls in @main"
X = np.array([1.0, 2.0, -3.0], "float32")


@pytest.fixture
def small_stack(monkeypatch):
    # A 16 MiB budget (default: the whole 1 GiB big stack) makes the error quick; 100 000 levels still fit.
    monkeypatch.setenv("TRANSPILE_STACK_MIB", "16")


def _checked_functions(src: str) -> set:
    """Names of the PrimFuncs whose body calls the stack check, from the emitted TVMScript."""
    checked, current = set(), None
    for line in transpile.emit(relay.parse(src), backend="tir").splitlines():
        if line.strip().startswith("def "):
            current = line.strip()[4:].split("(")[0]
        elif "transpile_tir_stack_check" in line:
            checked.add(current)
    return checked


@pytest.mark.parametrize(
    "src, checked",
    [(SUM, {"fn_sum"}), (SCALE, {"fn_scale"}), (PARITY, {"fn_even", "fn_odd"}), (LOOP, set())],
)
def test_exactly_the_recursive_functions_check_the_stack(src, checked):
    assert _checked_functions(src) == checked


def test_the_checked_script_reparses():
    import tvm

    text = transpile.emit(relay.parse(SCALE), backend="tir")
    assert "transpile_tir_stack_check" in tvm.script.from_source(text).script()


def test_direct_scalar_recursion_too_deep_is_a_clean_error(small_stack):
    total = transpile.compile(relay.parse(SUM), backend="tir")
    assert int(total(100_000)) == 100_000 * 100_001 // 2
    with pytest.raises(EvaluationError, match=TOO_DEEP):
        total(10**12)
    assert int(total(1000)) == 500_500  # the library still works afterwards
    with pytest.raises(EvaluationError, match=TOO_DEEP):
        total(10**12)  # and raises again


def test_mutual_recursion_too_deep_is_a_clean_error(small_stack):
    even = transpile.compile(relay.parse(PARITY), backend="tir")
    assert bool(even(100_000)) is True and bool(even(100_001)) is False
    with pytest.raises(EvaluationError, match=TOO_DEEP):
        even(2_000_000_000)
    assert bool(even(7)) is False


def test_packed_tensor_recursion_through_main_w0_and_load_module(small_stack):
    import tvm
    import tvm_ffi

    artifact = transpile.build(relay.parse(SCALE), backend="tir")
    scale = artifact.load()
    np.testing.assert_allclose(scale(40_000, X), X * 40_001)  # packed frames are ~340 bytes, scalar ones ~50
    with pytest.raises(EvaluationError, match=TOO_DEEP):
        scale(2_000_000_000, X)
    np.testing.assert_allclose(scale(4, X), X * 5)

    module = tvm.runtime.load_module(str(artifact.library_path))
    deep, shallow, x = (tvm_ffi.from_dlpack(v) for v in (np.array(2_000_000_000, "int32"), np.array(2, "int32"), X))
    with pytest.raises(Exception, match=TOO_DEEP):
        module["main"](deep, x)
    np.testing.assert_allclose(np.from_dlpack(module["main"](shallow, x)), X * 3)

    module["set_input"]("n", deep)
    module["set_input"]("x", x)
    with pytest.raises(Exception, match=TOO_DEEP):
        module["run"]()
    module["set_input"]("n", shallow)
    module["run"]()
    np.testing.assert_allclose(np.from_dlpack(module["get_output"](0)), X * 3)


def test_past_the_whole_big_stack_the_process_survives():
    # The default budget is the whole 1 GiB big stack (about 10^7 frames here); before the guard,
    # recursing past it was a segfault. In a subprocess, so a crash cannot take the test run down.
    script = textwrap.dedent(
        f"""
        import transpile
        from transpile import relay
        from transpile.errors import EvaluationError
        total = transpile.compile(relay.parse({SUM!r}), backend="tir")
        try:
            total(10**12)
        except EvaluationError as exc:
            print("raised:", exc)
        print("after:", int(total(10)))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TRANSPILE_STACK_MIB"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "raised: recursion deeper than the stack allows: 1024 MiB" in proc.stdout
    assert "after: 55" in proc.stdout
