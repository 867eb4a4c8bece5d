"""Issue 12, item 20: W0 executors, TVM's graph-executor convention: `lib["default"](dev)`.

Each executor owns its inputs and outputs, so several executors (and threads) run at once; the
module-level `set_input`/`run`/`get_output` keep working on one process-wide executor per library.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

tvm_ffi = pytest.importorskip("tvm_ffi")

import transpile  # noqa: E402
from transpile import relay  # noqa: E402

BACKENDS = ["cpp", "tir"]

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> (Tensor[(4), float32], Tensor[(4), float32]) {
  (add(%x, %y), multiply(%x, %y))
}
"""

# Another library in the same process: its module-level executor must be its own.
OTHER = """#[version = "0.0.5"]
def @main(%a: Tensor[(4), float32]) -> Tensor[(4), float32] { negative(%a) }
"""

_modules: dict = {}


def module(text: str, backend: str):
    key = (text, backend)
    if key not in _modules:
        _modules[key] = transpile.build(relay.parse(text), backend=backend).module
    return _modules[key]


def cpu():
    return tvm_ffi.device("cpu", 0)


def outputs(executor) -> list[np.ndarray]:
    return [np.from_dlpack(executor["get_output"](i)).copy() for i in range(executor["get_num_outputs"]())]


@pytest.mark.parametrize("backend", BACKENDS)
def test_executors_have_their_own_inputs_and_outputs(backend):
    lib = module(PROGRAM, backend)
    first, second = lib["default"](cpu()), lib["default"](cpu())
    x, y = np.arange(4, dtype="float32"), np.full(4, 2, "float32")
    first["set_input"]("x", x)
    first["set_input"](1, y)
    second["set_input"](0, y)
    second["set_input"]("y", y)
    first["run"]()
    second["run"]()
    np.testing.assert_array_equal(outputs(first)[0], x + y)
    np.testing.assert_array_equal(outputs(second)[1], y * y)
    first["set_input"]("y", x)  # changing one executor leaves the other's outputs alone
    first["run"]()
    np.testing.assert_array_equal(outputs(first)[1], x * x)
    np.testing.assert_array_equal(outputs(second)[1], y * y)
    assert first["get_num_inputs"]() == 2 and first["get_num_outputs"]() == 2
    assert first["get_input_index"]("y") == 1
    np.testing.assert_array_equal(np.from_dlpack(first["get_input"]("x")), x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_executor_errors_are_clean(backend):
    lib = module(PROGRAM, backend)
    executor = lib["default"](cpu())
    with pytest.raises(IndexError, match="run\\(\\) first"):
        executor["get_output"](0)
    with pytest.raises(ValueError, match="input 0 \\(x\\) was not set"):
        executor["run"]()
    with pytest.raises(KeyError, match="no input named z"):
        executor["set_input"]("z", np.zeros(4, "float32"))
    with pytest.raises(IndexError, match="input index 2 out of range"):
        executor["set_input"](2, np.zeros(4, "float32"))
    with pytest.raises(ValueError, match="CPU only"):
        lib["default"](tvm_ffi.device("cuda", 0))
    executor["set_input"](0, np.zeros(3, "float32"))
    executor["set_input"](1, np.zeros(4, "float32"))
    with pytest.raises(Exception, match="4"):  # the wrong shape is refused by the run, not a crash
        executor["run"]()


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_level_functions_still_work_per_library(backend):
    lib, other = module(PROGRAM, backend), module(OTHER, backend)
    x, y = np.arange(4, dtype="float32"), np.ones(4, "float32")
    lib["set_input"]("x", x)
    lib["set_input"]("y", y)
    other["set_input"](0, y)
    lib["run"]()
    other["run"]()
    np.testing.assert_array_equal(np.from_dlpack(lib["get_output"](0)), x + y)
    np.testing.assert_array_equal(np.from_dlpack(other["get_output"](0)), -y)
    assert lib["get_num_inputs"]() == 2 and other["get_num_inputs"]() == 1
    assert lib["get_input_index"]("y") == 1
    executor = lib["default"](cpu())  # a new executor starts empty, whatever the module-level one holds
    with pytest.raises(ValueError, match="was not set"):
        executor["run"]()


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_executor_per_thread_runs_at_once(backend):
    lib = module(PROGRAM, backend)
    failures: list = []

    def work(seed: int):
        executor = lib["default"](cpu())
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x, y = rng.standard_normal(4).astype("float32"), rng.standard_normal(4).astype("float32")
            executor["set_input"]("x", x)
            executor["set_input"]("y", y)
            executor["run"]()
            got = outputs(executor)
            if not (np.array_equal(got[0], x + y) and np.array_equal(got[1], x * y)):
                failures.append(seed)
                return

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_executor_shared_by_threads_stays_consistent(backend):
    lib = module(PROGRAM, backend)
    executor = lib["default"](cpu())
    x = np.arange(4, dtype="float32")
    executor["set_input"]("x", x)
    errors: list = []

    def work(k: int):
        try:
            for _ in range(200):
                executor["set_input"]("y", np.full(4, k, "float32"))
                executor["run"]()
                total = np.from_dlpack(executor["get_output"](0))
                # Whichever run ended last: some thread's y, never a torn or missing output.
                if total.shape != (4,) or not np.all(total - x == (total - x)[0]):
                    errors.append(total)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
