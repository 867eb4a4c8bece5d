"""The shared kernel compiler: LIR kernels lowered through the registry's te_impls, compiled for the host
CPU into one object file, and run through the TVM runtime module against the numpy interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import transpile.relay as relay  # noqa: E402
from transpile.errors import UnsupportedFeatureError  # noqa: E402
from transpile.kernels.build import KernelLibrary, build_kernels, symbol_of  # noqa: E402
from transpile.kernels.lower import KernelLoweringError, kernel_to_te, lower_kernel  # noqa: E402
from transpile.kernels.target import c_target, host_target, target_key  # noqa: E402
from transpile.kernels.threads import configure_threads  # noqa: E402
from transpile.lir.kernels import kernel_from_function  # noqa: E402

T = relay.TensorType
F32 = "float32"


def make_kernel(name, build, *types):
    """(LIR Kernel, typed Relay function) for `build(*params)` over params a, b, c... of `types`."""
    params = [relay.var(n, t) for n, t in zip("abcdefgh", types)]
    function = relay.infer_type_expr(relay.Function(params, build(*params)))
    return kernel_from_function(name, function), function


def _elementwise_chain(a, b):
    shared = a * b  # one node used twice: computed once
    return relay.nn.relu(shared + relay.const(1.5)) - shared / relay.const(2.0)


# name -> (builder, param types); each is a kernel the fusion pass can produce.
CASES = {
    "fused_dense_bias_add_relu": (  # 40 columns: not a multiple of the vector width, padded
        lambda a, b, c: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(a, b, units=40), c)),
        (T((24, 36), F32), T((40, 36), F32), T((40,), F32)),
    ),
    "fused_dense": (lambda a, b: relay.nn.dense(a, b, units=64), (T((12, 20), F32), T((64, 20), F32))),
    "fused_dense_bias_add_relu_row": (  # one row: the dot-product (GEMV) schedule
        lambda a, b, c: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(a, b, units=40), c)),
        (T((1, 64), F32), T((40, 64), F32), T((40,), F32)),
    ),
    "fused_conv2d_add_relu": (
        lambda a, b, c: relay.nn.relu(relay.add(relay.nn.conv2d(a, b, padding=(1, 1)), c)),
        (T((1, 3, 20, 20), F32), T((8, 3, 3, 3), F32), T((8, 1, 1), F32)),
    ),
    "fused_multiply_add_relu_subtract": (_elementwise_chain, (T((3, 1, 20), F32), T((5, 1), F32))),
    "fused_sum_keepdims": (lambda a: relay.sum(a, axis=[1], keepdims=True), (T((6, 10, 7), F32),)),
    "fused_mean": (lambda a: relay.mean(a, axis=[0, 2]), (T((6, 10, 7), F32),)),
    "fused_softmax": (lambda a: relay.nn.softmax(a), (T((5, 33), F32),)),
    "fused_split": (lambda a: relay.split(a, (3, 7), axis=1).astuple(), (T((4, 10), F32),)),
    "fused_max_pool2d": (
        lambda a: relay.nn.max_pool2d(a, pool_size=(2, 2), strides=(2, 2)),
        (T((1, 4, 10, 10), F32),),
    ),
    "fused_batch_matmul": (
        lambda a, b: relay.nn.batch_matmul(a, b),
        (T((2, 8, 16), F32), T((2, 24, 16), F32)),
    ),
    "fused_identity_pair": (lambda a: relay.Tuple([a, a]), (T((3,), F32),)),
    "fused_int_add": (lambda a, b: a + b, (T((7,), "int32"), T((), "int32"))),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every case in ONE build (one tvm.compile), as kernels and their Relay functions."""
    cases = {name: make_kernel(name, build, *types) for name, (build, types) in CASES.items()}
    out_dir = tmp_path_factory.mktemp("kernels")
    library = build_kernels([k for k, _ in cases.values()], out_dir)
    return library, cases


def run_kernel(library: KernelLibrary, kernel, args):
    """Runs a compiled kernel on numpy arrays; returns its outputs (inputs first, then outputs)."""
    from transpile.kernels.lower import result_types

    outputs = [tvm.runtime.empty(t.shape, t.dtype) for t in result_types(kernel)]
    library.module[kernel.name](*[tvm.runtime.tensor(a) for a in args], *outputs)
    return [o.numpy() for o in outputs]


def random_args(kernel, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in kernel.params:
        shape, dtype = p.type.shape, p.type.dtype
        if dtype.startswith("int"):
            out.append(rng.integers(-50, 50, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_kernel_matches_interpreter(compiled, name):
    library, cases = compiled
    kernel, function = cases[name]
    args = random_args(kernel)
    expected = relay.evaluate(function, *args)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    got = run_kernel(library, kernel, args)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_library_object_file_and_symbols(compiled):
    library, cases = compiled
    assert library.object_path.name == "kernels.o" and library.object_path.stat().st_size > 0
    assert library.symbols == {name: f"__tvm_ffi_{name}" for name in cases}
    assert symbol_of("k") == "__tvm_ffi_k"
    if shutil.which("nm"):
        defined = subprocess.run(["nm", "--defined-only", str(library.object_path)], capture_output=True, text=True)
        names = {line.split()[-1] for line in defined.stdout.splitlines() if line.strip()}
        assert set(library.symbols.values()) <= names


def test_schedule_kinds_recorded(compiled):
    library, _ = compiled
    assert library.schedules["fused_dense_bias_add_relu"] == "matmul"
    assert library.schedules["fused_dense_bias_add_relu_row"] == "matmul"
    assert library.schedules["fused_dense"] == "matmul"
    assert library.schedules["fused_batch_matmul"] == "matmul"
    assert library.schedules["fused_conv2d_add_relu"] == "conv2d_nchw"
    assert library.schedules["fused_softmax"] == "dlight.Reduction"
    assert library.schedules["fused_split"] == "default"


def test_kernel_to_te_flattens_tuples_and_copies_passthrough_outputs():
    kernel, _ = make_kernel("k_pair", lambda a: relay.Tuple([a, a]), T((3,), F32))
    inputs, outputs = kernel_to_te(kernel)
    assert [t.name for t in inputs] == ["a"]
    assert len(outputs) == 2 and outputs[0] is not outputs[1]
    assert all(o is not inputs[0] for o in outputs)


def test_lower_kernel_signature_is_inputs_then_outputs():
    kernel, _ = make_kernel("k_split", lambda a: relay.split(a, 2, axis=0).astuple(), T((4, 3), F32))
    func = lower_kernel(kernel, schedule=False)
    assert str(func.attrs["global_symbol"]) == "k_split"
    assert len(func.params) == 3


def test_shared_subexpression_is_computed_once():
    def build(a):
        shared = relay.exp(a)
        return shared * shared

    kernel, _ = make_kernel("k_shared", build, T((4,), F32))
    script = lower_kernel(kernel, schedule=False).script()
    assert script.count("T.exp(") == 1


def test_duplicate_and_invalid_kernel_names_are_rejected(tmp_path):
    k1, _ = make_kernel("same", lambda a: relay.nn.relu(a), T((2,), F32))
    k2, _ = make_kernel("same", lambda a: relay.exp(a), T((2,), F32))
    with pytest.raises(KernelLoweringError, match="two kernels are named same"):
        build_kernels([k1, k2], tmp_path)
    bad, _ = make_kernel("not-an-identifier", lambda a: relay.nn.relu(a), T((2,), F32))
    with pytest.raises(KernelLoweringError, match="'not-an-identifier' is not a C identifier"):
        build_kernels([bad], tmp_path)


def test_dynamic_dimensions_are_shape_vars():
    from transpile.kernels.lower import kernel_shapes

    kernel, _ = make_kernel("k_dyn", lambda a: relay.nn.relu(a), T((relay.Any(), 4), F32))
    shapes = kernel_shapes(kernel)
    ((var, param, axis),) = shapes.dims
    assert (var.name, param, axis) == ("a_dim0", 0, 0)
    assert len(shapes.outputs) == 1 and shapes.outputs[0][0].same_as(var) and shapes.outputs[0][1] == 4
    assert shapes.requirements == []


def test_dynamic_kernel_runs_at_several_sizes_and_states_its_requirements(tmp_path):
    from transpile.kernels.lower import kernel_shapes

    any_dim = relay.Any()
    kernel, _ = make_kernel(
        "k_dyn_bcast",
        lambda a, b: relay.sum(a * b, axis=[0]) + relay.const(1.0),
        T((any_dim, 4), F32),
        T((any_dim, 1), F32),
    )
    shapes = kernel_shapes(kernel)
    assert shapes.outputs == [[4]]
    ((condition, message),) = shapes.requirements
    assert "do not broadcast" in message and {v.name for v in tvm.tirx.analysis.undefined_vars(condition, [])} == {
        "a_dim0",
        "b_dim0",
    }
    library = build_kernels([kernel], tmp_path)
    rng = np.random.default_rng(0)
    for rows_a, rows_b in ((3, 3), (5, 1), (1, 6), (0, 1)):
        a, b = rng.standard_normal((rows_a, 4)).astype(F32), rng.standard_normal((rows_b, 1)).astype(F32)
        (found,) = run_kernel(library, kernel, [a, b])
        np.testing.assert_allclose(found, (a * b).sum(axis=0) + 1, rtol=1e-5, atol=1e-6)


def test_dynamic_kernel_rejects_a_wrong_output_buffer_cleanly(tmp_path):
    kernel, _ = make_kernel("k_dyn_out", lambda a: relay.nn.relu(a), T((relay.Any(), 4), F32))
    library = build_kernels([kernel], tmp_path)
    a = np.ones((3, 4), F32)
    with pytest.raises(Exception, match="shape"):  # TVM's own argument check, raised in Python
        library.module[kernel.name](tvm.runtime.tensor(a), tvm.runtime.empty((2, 4), F32))


def test_missing_te_impl_is_an_unsupported_feature(monkeypatch):
    from transpile.relay.op.registry import get

    monkeypatch.setattr(get("nn.relu"), "te_impl", None)
    kernel, _ = make_kernel("k_relu", lambda a: relay.nn.relu(a), T((2,), F32))
    with pytest.raises(UnsupportedFeatureError, match="operator nn.relu.*no TE lowering"):
        kernel_to_te(kernel)


def test_wrong_te_impl_result_is_reported(monkeypatch):
    from tvm import te

    from transpile.relay.op.registry import get

    monkeypatch.setattr(get("nn.relu"), "te_impl", lambda args, attrs, ty: te.compute((5,), lambda i: args[0][0]))
    kernel, _ = make_kernel("k_relu", lambda a: relay.nn.relu(a), T((2,), F32))
    with pytest.raises(
        KernelLoweringError, match=r"nn.relu produced Tensor\[\(5,\), float32\].*Tensor\[\(2,\), float32\]"
    ):
        kernel_to_te(kernel)


def test_empty_kernel_list_gives_no_object(tmp_path):
    library = build_kernels([], tmp_path)
    assert library.object_path is None and library.symbols == {}


def test_host_target_has_cpu_and_stable_key():
    target = host_target()
    assert target.kind.name == "llvm"
    assert str(target.attrs["mcpu"]) and str(target.attrs["mtriple"])
    assert target_key() == target_key(host_target())
    assert str(target.attrs["mcpu"]) in target_key()
    assert c_target().kind.name == "c"


def test_configure_threads_honours_environment(monkeypatch):
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    assert configure_threads() == 3
    monkeypatch.delenv("TVM_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert configure_threads() == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    count = configure_threads()
    import os

    assert count >= 1 and os.environ["TVM_NUM_THREADS"] == str(count)


def test_c_source_bundle_compiles_with_gcc(tmp_path):
    cases = [
        make_kernel(
            "c_dense_relu", lambda a, b: relay.nn.relu(relay.nn.dense(a, b, units=16)), T((4, 8), F32), T((16, 8), F32)
        ),
        make_kernel("c_softmax", lambda a: relay.nn.softmax(a), T((3, 5), F32)),
    ]
    library = build_kernels([k for k, _ in cases], tmp_path, c_source=True)
    source = library.c_source_path.read_text()
    assert library.c_source_path == tmp_path / "kernels.c"
    for kernel, _ in cases:
        assert f"__tvm_ffi_{kernel.name}(" in source
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    site = Path(sysconfig.get_paths()["purelib"])
    includes = [f"-I{site / 'tvm_ffi' / 'include'}", f"-I{site / 'tvm' / 'include'}"]
    result = subprocess.run(
        ["gcc", "-O2", "-c", "-o", str(tmp_path / "kernels_c.o"), str(library.c_source_path), *includes],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_kernel_compiler_digest_covers_schedules_and_te_lowerings():
    from pathlib import Path

    import transpile
    from transpile.kernels import digest

    package = Path(transpile.__file__).parent
    covered = [package / "kernels" / "schedules" / "matmul.py", package / "relay" / "op" / "families" / "nn" / "dense.py"]
    everything = digest._python_sources(package / "kernels") + digest._python_sources(package / "relay" / "op")
    assert all(p.resolve() in [q.resolve() for q in everything] for p in covered)
    assert digest.source_files_digest(everything) == digest.kernel_compiler_digest()
    assert digest.source_files_digest(everything[:-1]) != digest.kernel_compiler_digest()
