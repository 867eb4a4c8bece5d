"""The VM Executable API: save/load_exec, export_library/load_module, late-bound constants, the
runtime-module view (`exe.mod`), the VM's benchmark, and the in-process RPC session."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest

import transpile.tvm_compat as tvm
from transpile.errors import TranspileError
from transpile.relay.backend.vm_serialize import LateBoundConstantsError
from transpile.tvm_compat import relay, rpc, runtime

BACKEND_ENV = "TRANSPILE_TVM_BACKEND"


@pytest.fixture(autouse=True)
def interpreter_backend(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")


def add_constant_module(data: np.ndarray):
    x = relay.var("x", shape=data.shape, dtype=str(data.dtype))
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(data))))


def run_main(executable, x):
    return runtime.vm.VirtualMachine(executable, tvm.cpu()).invoke("main", x).numpy()


def test_save_and_load_exec_round_trip_the_program():
    weight = np.arange(12, dtype="float32").reshape(3, 4)
    exe = relay.vm.compile(add_constant_module(weight), target="llvm")
    code, lib = exe.save()
    loaded = runtime.vm.Executable.load_exec(code, lib)
    x = np.ones((3, 4), dtype="float32")
    np.testing.assert_array_equal(run_main(loaded, x), x + weight)
    assert loaded.get_function_params("main") == ["x"]
    with pytest.raises(TranspileError, match="not a VM executable"):
        runtime.vm.Executable.load_exec(b"something else", lib)


def test_params_are_bound_and_saved_with_the_code():
    x = relay.var("x", shape=(2,))
    w = relay.var("w", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.multiply(x, w)))
    exe = relay.vm.compile(mod, target="llvm", params={"w": np.array([2.0, 3.0], dtype="float32")})
    loaded = runtime.vm.Executable.load_exec(*exe.save())
    np.testing.assert_array_equal(run_main(loaded, np.ones(2, dtype="float32")), [2.0, 3.0])


def test_late_bound_constants_move_to_a_file_and_load_back(tmp_path):
    big = np.random.rand(16, 16).astype("float32")
    exe = relay.vm.compile(add_constant_module(big), target="llvm")
    exe.move_late_bound_consts(str(tmp_path / "consts"), byte_limit=256)
    exe.mod.export_library(str(tmp_path / "exe.so"))
    full_size = len(relay.vm.compile(add_constant_module(big), target="llvm").save()[0])
    assert (tmp_path / "exe.so").stat().st_size < full_size - big.nbytes // 2  # the data is not in the code

    module = runtime.load_module(str(tmp_path / "exe.so"))
    with pytest.raises(LateBoundConstantsError, match="not loaded"):
        runtime.vm.VirtualMachine(module, tvm.cpu()).invoke("main", big)
    module["load_late_bound_consts"](str(tmp_path / "consts"))
    np.testing.assert_allclose(run_main(module, big), big + big)


def test_late_bound_constants_through_a_map_and_the_wrapper():
    big = np.random.rand(8, 8).astype("float32")
    exe = relay.vm.compile(add_constant_module(big), target="llvm")
    consts = exe.get_late_bound_consts(byte_limit=64)
    assert list(consts) == ["const_0"] and isinstance(consts["const_0"], tvm.nd.NDArray)
    code, lib = exe.save()
    loaded = runtime.vm.Executable.load_exec(code, lib)
    with pytest.raises(LateBoundConstantsError, match="const_7"):
        loaded.load_late_bound_consts_from_map({"const_7": big})
    runtime.vm.Executable(loaded.mod).load_late_bound_consts_from_map(consts)  # the same executable
    np.testing.assert_allclose(run_main(loaded, big), 2 * big)


def test_small_constants_stay_in_the_code(tmp_path):
    small = np.array([0.5], dtype="float64")
    exe = relay.vm.compile(add_constant_module(small), target="llvm")
    assert exe.get_late_bound_consts(byte_limit=small.nbytes + 1) == {}
    exe.move_late_bound_consts(str(tmp_path / "none"), byte_limit=small.nbytes + 1)
    loaded = runtime.vm.Executable.load_exec(*exe.save())
    loaded.load_late_bound_consts(str(tmp_path / "none"))  # an empty file is fine
    np.testing.assert_allclose(run_main(loaded, np.zeros(1)), small)


def test_load_module_rejects_foreign_files(tmp_path):
    path = tmp_path / "lib.so"
    path.write_bytes(b"\x7fELF not ours")
    with pytest.raises(TranspileError, match="export_library"):
        runtime.load_module(str(path))


def test_bytecode_lists_each_function():
    x = relay.var("x", shape=(2,))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], relay.negative(x))), target="llvm")
    listing = exe.bytecode
    assert "VM Function[main]: 1 parameter(s) %x" in listing and "negative(%x" in listing


def test_benchmark_times_invoke_through_the_module_time_evaluator():
    x = relay.var("x", shape=(2,))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], relay.exp(x))), target="llvm")
    machine = runtime.vm.VirtualMachine(exe, tvm.cpu())
    data = np.zeros(2, dtype="float32")
    result = machine.benchmark(tvm.cpu(), data, repeat=3, number=2)
    assert len(result.results) == 3 and result.mean > 0
    fixed = runtime.module.BenchmarkResult([1.0, 3.0])
    with patch.object(runtime.module.Module, "time_evaluator", return_value=lambda name: fixed) as evaluator:
        assert machine.benchmark(tvm.cpu(), data, repeat=2, number=1).mean == 2.0
    assert evaluator.call_args.args[0] == "invoke"


def test_local_rpc_session_uploads_and_loads_an_exported_executable(tmp_path):
    x = relay.var("x", shape=(3,))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x))), target="llvm")
    exe.mod.export_library(str(tmp_path / "vm.so"))
    server = rpc.Server("127.0.0.1")
    remote = rpc.connect(server.host, server.port, session_timeout=10)
    remote.upload(str(tmp_path / "vm.so"))
    machine = runtime.vm.VirtualMachine(remote.load_module("vm.so"), remote.cpu())
    out = tvm.nd.array(np.zeros(3, dtype="float32"))
    machine.invoke_with_outputs("main", input_args={"x": np.ones(3, dtype="float32")}, output_args=[out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(rpc.RPCNotAvailableError):
        rpc.connect("10.0.0.1", server.port)
