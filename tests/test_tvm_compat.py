"""The TVM <= 0.19 facade (transpile.tvm_compat) and the executor adapters of transpile.relay.backend.

Programs here are written TVM-style, as user code redirected to transpile would be: executors
from relay.create_executor / relay.vm / relay.build, values as NDArray / ADT / ConstructorValue /
RefValue, the tvm.testing helpers, and the alias that makes transpile.tvm_compat.relay.X resolve.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import transpile
import transpile.tvm_compat as tvm
from transpile.errors import TranspileError
from transpile.tvm_compat import relay

BACKEND_ENV = "TRANSPILE_TVM_BACKEND"


@pytest.fixture(params=["interpreter", "python", "cpp"])
def backend(request, monkeypatch):
    """Runs the test with every executor on one transpile backend (read when executors are created)."""
    monkeypatch.setenv(BACKEND_ENV, request.param)
    return request.param


def float_var(name, shape):
    return relay.var(name, shape=shape, dtype="float32")


# ----- the alias finder and the facade's modules --------------------------------------------------


def test_relay_alias_is_the_same_module_object():
    import transpile.tvm_compat.relay.testing as aliased_testing
    from transpile.tvm_compat.relay.backend.interpreter import ConstructorValue

    import transpile.relay.testing as real_testing
    from transpile.relay.backend import values

    assert tvm.relay is transpile.relay
    assert aliased_testing is real_testing
    assert ConstructorValue is values.ConstructorValue
    # The real module keeps its own import identity (reload and pickling go by it).
    assert real_testing.__spec__.name == "transpile.relay.testing"


def test_alias_of_a_missing_module_is_not_found():
    with pytest.raises(ModuleNotFoundError):
        import transpile.tvm_compat.relay.no_such_module  # noqa: F401


def test_nd_array_copies_and_exposes_numpy():
    source = np.arange(6, dtype="float32").reshape(2, 3)
    array = tvm.nd.array(source)
    source[0, 0] = 100.0
    assert isinstance(array, tvm.nd.NDArray) and array[0, 0] == 0.0
    plain = array.numpy()
    assert type(plain) is np.ndarray and plain.shape == (2, 3) and plain.dtype == "float32"
    plain[0, 0] = 7.0
    assert array[0, 0] == 0.0  # numpy() is a copy, as TVM's was
    np.testing.assert_array_equal(array.asnumpy(), np.arange(6).reshape(2, 3))
    assert tvm.nd.empty((4,), "int8").shape == (4,)
    target = tvm.nd.empty((2, 3))
    array.copyto(target)
    np.testing.assert_array_equal(target.numpy(), array.numpy())
    with pytest.raises(TranspileError, match="shape"):
        target.copyfrom(np.zeros((3, 2), "float32"))
    with pytest.raises(TranspileError, match="host memory"):
        tvm.nd.array(source, device=tvm.cuda(0))


def test_devices_targets_and_errors():
    assert tvm.device("llvm", 0) == tvm.cpu(0) and tvm.cpu().device_type == 1
    assert tvm.cpu().exist and not tvm.cuda().exist
    target = tvm.target.Target("llvm -mcpu=skylake --host=llvm")
    assert target.kind.name == "llvm" and target.attrs["mcpu"] == "skylake" and target.host.kind.name == "llvm"
    assert tvm.runtime.convert([1, [2, 3]]) == (1, (2, 3))
    assert isinstance(tvm.tir.Any(), type(relay.Any()))
    assert str(tvm.te.size_var("n")) == "n"
    assert issubclass(transpile.RelayTypeError, tvm.error.TVMError)
    assert tvm._ffi.base.TVMError is tvm.error.TVMError
    x = float_var("x", (2,))
    with pytest.raises(tvm.error.TVMError):
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.nn.dense(x, x))))


# ----- create_executor ----------------------------------------------------------------------------


def test_debug_executor_on_each_backend(backend):
    x, y = float_var("x", (3,)), float_var("y", (3,))
    mod = tvm.IRModule()
    mod["main"] = relay.Function([x, y], relay.Tuple([x + y, x * y]))
    main_before = mod["main"]
    executor = relay.create_executor("debug", mod=mod, device=tvm.cpu(0), target="llvm")
    a, b = np.array([1, 2, 3], "float32"), tvm.nd.array(np.array([4, 5, 6], "float32"))
    result = executor.evaluate()(a, y=b)
    assert isinstance(result, tvm.runtime.container.ADT) and len(result) == 2 and result.tag == 0
    np.testing.assert_allclose(result[0].numpy(), [5, 7, 9])
    np.testing.assert_allclose(result[1].numpy(), [4, 10, 18])
    # A non-function expression is evaluated to its value against the module, which keeps its @main.
    call_main = relay.TupleGetItem(relay.GlobalVar("main")(relay.const(a), relay.const(a)), 1)
    value = executor.evaluate(call_main)
    assert isinstance(value, tvm.nd.NDArray)
    np.testing.assert_allclose(value.numpy(), [1, 4, 9])
    assert mod["main"] is main_before and set(gv.name_hint for gv in mod.get_global_vars()) == {"main"}


@pytest.mark.parametrize("kind", ["debug", "vm", "graph", "aot"])
def test_executor_kinds_shape_results(kind, monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    x = float_var("x", (2,))
    func = relay.Function([x], relay.Tuple([x, relay.Tuple([x + x])]))
    result = relay.create_executor(kind).evaluate(func)(np.ones(2, "float32"))
    if kind in ("graph", "aot"):  # TVM's graph executor returned the tuple as lists
        assert isinstance(result, list) and isinstance(result[1], list)
    else:
        assert isinstance(result, tvm.runtime.container.ADT) and isinstance(result[1], tvm.runtime.container.ADT)
    np.testing.assert_allclose(result[1][0].numpy(), [2, 2])


def test_evaluate_binds_free_variables(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "python")
    x, y = float_var("x", (2,)), float_var("y", (2,))
    executor = relay.create_executor()
    value = executor.evaluate(
        x * y, binds={x: tvm.nd.array(np.array([2, 3], "float32")), y: np.array([4, 5], "float32")}
    )
    np.testing.assert_allclose(value.numpy(), [8, 15])
    with pytest.raises(TranspileError, match="free variables"):
        executor.evaluate(x * y)


def test_create_executor_binds_params_and_rejects_bad_input(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    x, w = float_var("x", (2,)), float_var("w", (2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], x - w))
    run = relay.create_executor("vm", mod=mod, params={"w": np.array([1, 1], "float32")}).evaluate()
    np.testing.assert_allclose(run(np.array([5, 6], "float32")).numpy(), [4, 5])
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]  # the user's module is untouched
    with pytest.raises(TranspileError, match="unknown executor kind"):
        relay.create_executor("jit")
    with pytest.raises(TranspileError, match="host CPU"):
        relay.create_executor("debug", target="cuda")
    monkeypatch.setenv(BACKEND_ENV, "no-such-backend")
    with pytest.raises(TranspileError, match=BACKEND_ENV):
        relay.create_executor("debug")


# ----- ADT values, references and closures ---------------------------------------------------------


def _list_module():
    mod = tvm.IRModule()
    prelude = relay.Prelude(mod)
    return mod, prelude


def test_constructor_values_round_trip(backend):
    mod, prelude = _list_module()
    rlist, cons, nil = mod.get_type("List")
    items = cons(relay.const(3), cons(relay.const(4), nil()))
    executor = relay.create_executor("debug", mod=mod)
    value = executor.evaluate(items)
    assert isinstance(value, relay.backend.interpreter.ConstructorValue)
    assert value.tag == cons.tag and value.constructor.name_hint == "Cons" and len(value.fields) == 2
    assert value.fields[0].numpy() == 3 and value.fields[1].fields[1].constructor.name_hint == "Nil"
    # The value goes back in unchanged, and so does one built in Python. (@length is polymorphic:
    # compiled backends take an instance of it.)
    int_list = relay.var("items", type_annotation=relay.TypeCall(rlist, [relay.scalar_type("int32")]))
    length = executor.evaluate(relay.Function([int_list], mod.get_global_var("length")(int_list)))
    assert length(value).numpy() == 2
    built = relay.backend.interpreter.ConstructorValue(cons.tag, [tvm.nd.array(np.int32(9)), value], cons)
    assert length(built).numpy() == 3


def test_vm_returns_constructor_values_as_adt_containers(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    mod, prelude = _list_module()
    _, cons, nil = mod.get_type("List")
    mod["main"] = relay.Function([], cons(relay.const(1), cons(relay.const(2), nil())))
    vm = tvm.runtime.vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    result = vm.invoke("main")
    assert isinstance(result, tvm.runtime.container.ADT) and result.tag == cons.tag and len(result) == 2
    assert result[0].numpy() == 1 and result[1][1].tag == nil.tag and len(result[1][1]) == 0
    # An ADT container from the VM passes back as the constructor value it stands for.
    length = mod.get_global_var("length")
    assert vm.invoke("length", result).numpy() == 2
    assert length.name_hint in relay.vm.compile(mod).globals


def test_references_share_their_cell(backend):
    r = relay.var("r", type_annotation=relay.RefType(relay.scalar_type("float32")))
    cell = relay.Var("cell")
    v = float_var("v", ())
    setter = relay.Function([v], relay.RefWrite(cell, v))
    body = relay.Let(cell, relay.RefCreate(relay.const(1.0)), relay.Tuple([cell, setter]))
    ref, set_value = relay.create_executor().evaluate(body)
    assert isinstance(ref, relay.backend.interpreter.RefValue) and ref.value.numpy() == 1.0
    set_value(np.float32(5.0))
    assert ref.value.numpy() == 5.0  # the program's write shows through the returned reference
    read = relay.Function([r], relay.RefRead(r))
    assert relay.create_executor().evaluate(read)(relay.backend.interpreter.RefValue(np.float32(2.5))).numpy() == 2.5


def test_closures_take_and_return_tvm_values(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "python")
    x, y = float_var("x", (2,)), float_var("y", (2,))
    make_adder = relay.Function([x], relay.Function([y], x + y))
    adder = relay.create_executor().evaluate(make_adder)(np.array([1, 2], "float32"))
    result = adder(tvm.nd.array(np.array([10, 20], "float32")))
    assert isinstance(result, tvm.nd.NDArray)
    np.testing.assert_allclose(result.numpy(), [11, 22])


# ----- relay.vm and relay.build ----------------------------------------------------------------


@pytest.mark.parametrize("backend_name", ["interpreter", "cpp"])
def test_vm_compile_and_virtual_machine(backend_name, monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, backend_name)
    a, b, c = float_var("a", (3,)), float_var("b", (3,)), float_var("c", (3,))
    mod = tvm.IRModule.from_expr(relay.Function([a, b, c], relay.Tuple([a * b + c, c])))
    exe = relay.vm.compile(mod, target="llvm", params={"c": np.full(3, 0.5, "float32")})
    vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
    assert exe.get_function_params("main") == ["a", "b"] and vm.get_input_index("b") == 1
    assert vm.get_input_index("nothing") == -1
    ones, twos = np.ones(3, "float32"), np.full(3, 2.0, "float32")
    np.testing.assert_allclose(vm.invoke("main", ones, twos)[0].numpy(), 2.5)
    vm.set_input("main", twos, a=ones * 3)  # a by name, b fills the remaining slot
    np.testing.assert_allclose(vm.invoke("main")[0].numpy(), 6.5)
    vm.set_one_input("main", "b", ones)
    vm.invoke_stateful("main")
    outputs = vm.get_outputs()
    assert len(outputs) == 2
    np.testing.assert_allclose(outputs[0].numpy(), 3.5)
    np.testing.assert_allclose(vm.run(ones, ones)[1].numpy(), 0.5)


def test_virtual_machine_reports_missing_inputs(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    a = float_var("a", (1,))
    vm = relay.vm.VirtualMachine(relay.vm.compile(tvm.IRModule.from_expr(relay.Function([a], a))))
    with pytest.raises(TranspileError, match="missing arguments"):
        vm.invoke("main")
    with pytest.raises(TranspileError, match="no function @other"):
        vm.invoke("other")


@pytest.mark.parametrize("backend_name", ["interpreter", "cpp"])
def test_relay_build_and_graph_module(backend_name, monkeypatch):
    from transpile.tvm_compat.contrib import graph_executor

    monkeypatch.setenv(BACKEND_ENV, backend_name)
    x, w = float_var("x", (2, 2)), float_var("w", (2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.Tuple([relay.nn.dense(x, w), relay.Tuple([x + w])])))
    weight = np.array([[1, 0], [0, 2]], "float32")
    lib = relay.build(mod, target="llvm", params={"w": weight})
    module = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    data = np.array([[1, 2], [3, 4]], "float32")
    module.set_input("x", data)
    module.run()
    assert module.get_num_outputs() == 2  # the nested tuple's tensors, flattened
    np.testing.assert_allclose(module.get_output(0).numpy(), data @ weight.T)
    np.testing.assert_allclose(module.get_output(1).numpy(), data + weight)
    module.run(x=np.zeros((2, 2), "float32"))
    np.testing.assert_allclose(module.get_output(1).numpy(), weight)
    np.testing.assert_allclose(lib.get_params()["w"].numpy(), weight)
    with pytest.raises(TranspileError, match="Could not find 'y'"):
        module.set_input("y", data)


def test_relay_build_unpacks_to_the_legacy_triple(monkeypatch):
    """TVM <= 0.19 code: `graph, lib, params = relay.build(...)`, then graph_executor.create(graph, lib, dev)."""
    import json

    from transpile.tvm_compat.contrib import graph_executor

    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    x, w = float_var("x", (2,)), float_var("w", (2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], x * w))
    with pytest.warns(DeprecationWarning, match="legacy"):
        graph, lib, params = relay.build(mod, target="llvm", params={"w": np.array([2, 3], "float32")})
    assert json.loads(graph)["inputs"] == ["x"] and set(params) == {"w"}
    module = graph_executor.create(graph, lib, tvm.cpu(0))
    module.set_input("x", np.array([1, 1], "float32"))
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), [2, 3])
    with pytest.raises(TranspileError, match="the lib that relay.build returned"):
        graph_executor.create(graph, "not a lib", tvm.cpu(0))


def test_relay_aot_compile(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    mod, prelude = _list_module()
    double = mod.get_global_var("nat_double")
    compiled = tvm.aot.compile(double, mod, ctx=tvm.context("llvm", 0), tgt=tvm.target.create("llvm"))
    _, zero, succ = mod.get_type("nat")
    # relay-aot took literal constructor expressions as arguments.
    result = compiled(succ(succ(zero())))
    from transpile.relay.testing import count  # a submodule: imported explicitly, as in TVM

    assert count(prelude, result) == 4


# ----- tvm.testing and relay.testing -----------------------------------------------------------


def test_testing_helpers():
    tvm.testing.assert_allclose(tvm.nd.array(np.array([1.0, 2.0])), np.array([1.0, 2.0 + 1e-9]))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(tvm.nd.array(np.array([1.0])), np.array([1.1]))
    assert tvm.testing.enabled_targets() == [("llvm", tvm.cpu(0))]
    assert tvm.testing.device_enabled("llvm") and not tvm.testing.device_enabled("cuda")

    def probe():
        return "ran"

    def cuda_probe():
        return "ran"

    def targets_probe():
        return "ran"

    assert tvm.testing.uses_gpu(probe) is probe
    assert tvm.testing.requires_llvm(probe) is probe and not hasattr(probe, "pytestmark")
    assert [m.name for m in tvm.testing.requires_cuda(cuda_probe).pytestmark] == ["skip"]
    [mark] = tvm.testing.parametrize_targets("llvm", "cuda")(targets_probe).pytestmark
    cuda_case = mark.args[1][1]
    assert mark.args[1][0] == "llvm" and cuda_case.values == ("cuda",) and cuda_case.marks[0].name == "skip"


def test_pytest_plugin_parametrizes_targets(tmp_path):
    test_file = tmp_path / "test_tvm_style.py"
    test_file.write_text(textwrap.dedent("""
            import transpile.tvm_compat as tvm
            import transpile.tvm_compat.testing

            size, name = tvm.testing.parameters((1, "one"), (2, "two"))

            def test_on_targets(target, dev):
                assert target == "llvm" and dev == tvm.cpu(0)

            @tvm.testing.parametrize_targets("llvm", "cuda")
            def test_explicit(target, dev):
                assert target == "llvm"

            @tvm.testing.known_failing_targets("llvm")
            def test_known_failing(target):
                assert False

            def test_correlated(size, name):
                assert (size, name) in [(1, "one"), (2, "two")]
            """))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "transpile.tvm_compat.testing.plugin",
            "-p",
            "no:cacheprovider",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    summary = run.stdout.strip().splitlines()[-1]
    assert "4 passed, 1 skipped, 1 xfailed" in summary, run.stdout + run.stderr


def test_relay_testing_helpers(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    from transpile.tvm_compat.relay.testing import (
        count,
        count_ops,
        make_nat_expr,
        make_nat_value,
        run_infer_type,
        run_opt_pass,
    )

    x = float_var("x", (2, 3))
    typed = run_infer_type(relay.sum(x, axis=1))
    assert typed.checked_type == relay.TensorType((2,), "float32")
    folded = run_opt_pass(relay.add(relay.const(1.0), relay.const(2.0)), relay.transform.FoldConstant())
    assert isinstance(folded, relay.Constant) and float(folded.data) == 3.0
    assert count_ops(relay.Function([x], relay.exp(relay.exp(x)) + x)) == {"exp": 2, "add": 1}
    mod, prelude = _list_module()
    double = mod.get_global_var("nat_double")
    executor = relay.create_executor(mod=mod)
    assert count(prelude, executor.evaluate(double(make_nat_expr(prelude, 3)))) == 6
    assert count(prelude, executor.evaluate(double)(make_nat_value(prelude, 2))) == 4
    with pytest.raises(TranspileError, match="never negative"):
        make_nat_value(prelude, -1)


def test_check_grad_compares_analytic_and_numeric_gradients(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    from transpile.tvm_compat.relay.testing import check_grad

    x = relay.var("x", shape=(3,), dtype="float64")
    square = relay.Function([x], x * x)
    check_grad(square, inputs=[np.array([1.0, -2.0, 0.5])], mode="first_order", eps=1e-4, atol=1e-6)


def test_run_as_python_returns_tvm_values(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    from transpile.tvm_compat.relay.testing import run_as_python, to_python

    pair = relay.Tuple([relay.const(1), relay.Tuple([])])
    value = run_as_python(pair)
    assert isinstance(value, tvm.runtime.container.ADT) and len(value) == 2 and len(value[1]) == 0
    assert value[0].numpy() == 1
    assert "def " in __import__("ast").unparse(to_python(pair))


def test_create_workload_initializes_parameters_by_name():
    from transpile.tvm_compat.relay.testing import create_workload, init, mlp

    data, weight = float_var("data", (2, 4)), float_var("fc_weight", (3, 4))
    bias, gamma = float_var("fc_bias", (3,)), float_var("bn_gamma", (3,))
    net = relay.Function([data, weight, bias, gamma], relay.nn.bias_add(relay.nn.dense(data, weight), bias) * gamma)
    mod, params = create_workload(net)
    assert sorted(params) == ["bn_gamma", "fc_bias", "fc_weight"] and "main" in mod
    bound = np.sqrt(3 / 3.5)  # Xavier: magnitude 3 over the mean of fan-in 4 and fan-out 3
    assert params["fc_weight"].shape == (3, 4) and np.all(np.abs(params["fc_weight"].numpy()) <= bound)
    assert np.all(params["fc_bias"].numpy() == 0) and np.all(params["bn_gamma"].numpy() == 1)
    _, constant = create_workload(net, init.Constant())
    np.testing.assert_allclose(constant["fc_weight"].numpy(), np.full((3, 4), 1 / 12))
    assert [p.name_hint for p in mlp.get_net(1).params] == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "fc3_weight",
        "fc3_bias",
    ]


# ----- autotvm (default schedules only), TVMScript, contrib.cudnn, topi.cuda -------------------


def test_autotvm_dispatch_contexts_nest_and_fall_back():
    from transpile.tvm_compat import autotvm

    outer = autotvm.DispatchContext.current
    assert outer.query("llvm", ("conv2d", 1)).is_fallback
    assert outer.query("llvm", ("conv2d", 1)) is outer.query("llvm", ("conv2d", 1))  # memoized per workload

    class TunedFallback(autotvm.FallbackContext):
        def _query_inside(self, target, workload):
            cfg = autotvm.task.space.FallbackConfigEntity()
            cfg.is_fallback = False
            cfg["tile_x"] = autotvm.task.space.SplitEntity([-1, 4])
            cfg["unroll"] = autotvm.task.space.OtherOptionEntity(16)
            return cfg

    with TunedFallback() as tuned:
        assert autotvm.DispatchContext.current is tuned
        cfg = tuned.query("llvm", ("dense", 2))
        assert cfg["tile_x"].size == [-1, 4] and cfg.get_other_option() == {"unroll": 16}
        with pytest.raises(KeyError, match="no knob 'tile_y'"):
            cfg["tile_y"]
        with pytest.raises(autotvm.AutoTVMUnavailableError, match="SplitEntity.apply"):
            cfg["tile_x"].apply(None, None, None)
    assert autotvm.DispatchContext.current is outer


def test_autotvm_history_reads_records_and_keeps_default_schedules(tmp_path, monkeypatch):
    from transpile.tvm_compat import autotvm

    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    log = tmp_path / "tuning.log"
    log.write_text('{"input": ["llvm", "dense.x86", [], {}], "config": {}, "result": [[0.1], 0, 1, 0]}\n'
                   '{"i": ["llvm"], "v": 0.1}\n')
    x = float_var("x", (2, 3))
    with autotvm.apply_history_best(str(log)) as history, autotvm.tophub.context("llvm"):
        assert len(history.records) == 1  # log format 0.1 is skipped, as TVM did
        assert autotvm.DispatchContext.current.query("llvm", ("dense", 1)).is_fallback
        out = relay.create_executor().evaluate(relay.Function([x], relay.nn.relu(x)))(-np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3), "float32"))

    log.write_text("not json\n")
    with pytest.raises(TranspileError, match="tuning.log:1: not an AutoTVM JSON record"):
        autotvm.apply_history_best(str(log))
    with pytest.raises(TranspileError, match="cannot read AutoTVM tuning records"):
        autotvm.apply_history_best(str(tmp_path / "missing.log"))


@pytest.mark.parametrize(
    "needs_tuning",
    [
        lambda autotvm: autotvm.task.extract_from_program(None, {}, "llvm"),
        lambda autotvm: autotvm.task.create("conv2d_nchw.x86", (), "llvm"),
        lambda autotvm: autotvm.measure_option(None, None),
        lambda autotvm: autotvm.task.space.FallbackConfigEntity().define_split("tile", 8, num_outputs=2),
    ],
)
def test_autotvm_tuning_features_raise_naming_the_feature(needs_tuning):
    from transpile.tvm_compat import autotvm

    with pytest.raises(TranspileError, match=r"tvm\.autotvm\.\S+ needs AutoTVM"):
        needs_tuning(autotvm)


def test_tvmscript_tir_is_apache_tvms_parser():
    from transpile.tvm_compat.script import tir as T

    @T.prim_func
    def add_one(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            b[i] = a[i] + T.float32(1)

    assert type(add_one).__name__ == "PrimFunc"
    assert T.int64(3).value == 3 and str(T.int64(3).ty) == "int64"
    with pytest.raises(AttributeError, match="tvm.script.tirx"):
        T.no_such_construct


def test_cudnn_is_never_available_and_topi_cuda_tile_size():
    from transpile.tvm_compat.contrib import cudnn
    from transpile.tvm_compat.topi.cuda.conv3d_winograd import _infer_tile_size

    assert cudnn.exists() is False
    assert _infer_tile_size(np.zeros((1, 2, 4, 16, 8)), None) == 4
    assert _infer_tile_size(np.zeros((1, 2, 4, 12, 8)), None) == 2
    with pytest.raises(TranspileError, match="expected NCDHW"):
        _infer_tile_size(np.zeros((1, 2, 16, 8)), None)


def test_readme_migration_example_runs_as_printed(monkeypatch, capsys):
    """The README's TVM <= 0.19 example: only its imports differ from TVM code, and it prints what its comments say."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### Code written for TVM ≤ 0.19", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    expected = [line.split("# ")[-1].strip() for line in code.splitlines() if line.startswith("print(")]
    assert printed == expected


def test_make_node_builds_attributes_that_print_and_parse_back():
    call_attrs = tvm.ir.make_node("attrs.TestAttrs", name="func_call_attrs")
    assert dict(call_attrs) == {"name": "func_call_attrs", "attrs_type_key": "attrs.TestAttrs"}
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    inner = relay.Function([x], relay.negative(x))
    mod = tvm.IRModule.from_expr(relay.Function([y], relay.Call(inner, [y], attrs=call_attrs)))
    text = mod.astext()
    assert 'name="func_call_attrs", attrs_type_key="attrs.TestAttrs"' in text
    tvm.ir.assert_structural_equal(relay.parse(text), mod)

    primitive = tvm.ir.make_node("DictAttrs", Primitive=1)
    func = relay.Function([x], relay.negative(x), attrs=primitive)
    assert func.attrs["Primitive"] == 1
    with pytest.raises(TypeError, match="only attribute nodes"):
        tvm.ir.make_node("relay.Var", name_hint="v")


def test_te_compiler_is_one_process_wide_object_whose_clear_keeps_builds_working(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    compiler = relay.backend.te_compiler.get()
    assert compiler is relay.backend.te_compiler.get()
    x = relay.var("x", shape=(3,))
    func = relay.Function([x], relay.add(x, x))
    before = relay.create_executor(kind="vm").evaluate(func)(np.arange(3, dtype="float32"))
    compiler.clear()
    after = relay.create_executor(kind="vm").evaluate(func)(np.arange(3, dtype="float32"))
    np.testing.assert_array_equal(before.numpy(), after.numpy())


def test_uint1_is_tvms_spelling_of_bool():
    cond = relay.var("c", shape=(), dtype="uint1")
    assert cond.type_annotation == relay.TensorType((), "bool")
    func = relay.Function([cond], relay.If(cond, relay.const(1), relay.const(2)))
    assert int(relay.create_executor().evaluate(func)(False).numpy()) == 2


def test_graph_executor_converts_inputs_to_the_graph_dtype_and_debug_stays_strict(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "interpreter")
    x = float_var("x", (3,))
    func = relay.Function([x], relay.add(x, x))
    data = np.array([1.5, 2.0, 3.0], dtype="float64")
    result = relay.create_executor(kind="graph").evaluate(func)(data)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result.numpy(), [3.0, 4.0, 6.0])
    lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    module = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    module.set_input("x", np.array([1, 2, 3], dtype="int32"))
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(TranspileError):
        relay.create_executor(kind="debug").evaluate(func)(data)
