"""The ONNX wheel's backend test data through transpile (an adapter over testing.onnx_suites); the backend itself.

Every case is one test: it passes, fails, or is an expected failure (xfail) whose reason is the
importer's list of unsupported operators, a type Relay has no tensors of or a non-tensor graph
input (`onnx_suites.limitation`), or the case's entry in `onnx_suites.KNOWN_FAILURES`. An expected
failure that passes fails its test. `python -m transpile.testing.onnx_suites` prints the same
results as a table.

CI runs every kind on the interpreter (~30 s) and the model kinds on cpp (149 TVM builds, ~520 s
of test time from a cold TRANSPILE_CACHE_DIR; ~5 min wall with -n 2 on the loaded 2-core machine,
both files); the ~1900 node cases on cpp (~40 min) are `slow`.
"""

from __future__ import annotations

import unittest

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from transpile.relay.frontend import FrontendError, UnsupportedOperatorsError  # noqa: E402
from transpile.relay.frontend.onnx.backend import TranspileBackend  # noqa: E402
from transpile.testing import onnx_suites  # noqa: E402

MODEL_KINDS = ("light", "simple", "pytorch-converted", "pytorch-operator")
# (backend, kind) -> whether CI runs it (False: marked slow).
RUNS = {
    **{("interpreter", kind): True for kind in onnx_suites.KINDS},
    **{("cpp", kind): True for kind in MODEL_KINDS},
    ("cpp", "node"): False,
}


def _suite_params():
    params = []
    for (backend, kind), in_ci in RUNS.items():
        marks = () if in_ci else (pytest.mark.slow,)
        for case in onnx_suites.suite_cases(kind):
            params.append(pytest.param(backend, case, id=f"{backend}-{kind}-{case.name}", marks=marks))
    return params


@pytest.mark.parametrize("backend, case", _suite_params())
def test_onnx_backend_case(backend, case):
    result = onnx_suites.run_case(case, backend)
    if result.status in ("unsupported", "expected"):
        pytest.xfail(result.reason)
    if result.status == "xpassed":
        pytest.fail(f"{case.id} passes on {backend}: update onnx_suites.KNOWN_FAILURES or limitation ({result.reason})")
    assert result.status == "passed", f"{result.reason}\n{result.detail}"


# ----- the backend itself ------------------------------------------------------------------------


def _model(nodes, inputs, outputs, opset=17, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _add_relu_model(shape=(2, 3)):
    return _model(
        [helper.make_node("Add", ["x", "y"], ["sum"]), helper.make_node("Relu", ["sum"], ["relu"])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("x", "y")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("relu", "sum")],
    )


def test_prepared_model_returns_outputs_in_graph_order_from_list_or_dict_inputs():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2, 3)).astype("float32")
    rep = TranspileBackend.prepare(_add_relu_model(), backend="interpreter")
    relu, total = rep.run([x, y])
    np.testing.assert_allclose(total, x + y, rtol=1e-6)
    np.testing.assert_allclose(relu, np.maximum(x + y, 0), rtol=1e-6)
    again = rep.run({"y": y, "x": x})
    assert all(np.array_equal(a, b) for a, b in zip(again, (relu, total)))
    assert rep.specializations == 1  # compiled once, in prepare
    with pytest.raises(FrontendError, match="takes 2 input"):
        rep.run([x])
    with pytest.raises(FrontendError, match="no input"):
        rep.run({"x": x, "y": y, "z": x})


def test_unknown_dimensions_compile_once_per_input_shape():
    rep = TranspileBackend.prepare(_add_relu_model(("batch", 3)), backend="interpreter")
    assert rep.specializations == 0  # nothing to compile before the shapes are known
    for batch in (2, 5, 2):
        x = np.arange(batch * 3, dtype="float32").reshape(batch, 3) - 4
        relu, total = rep.run([x, x])
        np.testing.assert_array_equal(total, 2 * x)
        assert relu.shape == (batch, 3)
    assert rep.specializations == 2
    fixed = TranspileBackend.prepare(
        _add_relu_model(("batch", 3)), backend="interpreter", shape={"x": (4, 3), "y": (4, 3)}
    )
    assert fixed.specializations == 1  # shape= fixes the shapes: compiled in prepare


def test_values_that_must_be_constant_at_import_are_bound_per_value():
    if not TranspileBackend.is_compatible(_expand_model()):
        pytest.skip("no Expand converter yet")
    rep = TranspileBackend.prepare(_expand_model(), backend="interpreter")
    x = np.array([[1.0], [2.0], [3.0]], "float32")
    for target in ([3, 4], [2, 3, 2], [3, 4]):
        (out,) = rep.run([x, np.array(target, "int64")])
        np.testing.assert_array_equal(out, x * np.ones(target, "float32"))
    assert rep.bound_inputs == {"shape"} and rep.specializations == 2
    with pytest.raises(FrontendError, match="must be a constant"):
        TranspileBackend.prepare(_expand_model(), backend="interpreter", specialize_values=False).run(
            [x, np.array([3, 4], "int64")]
        )


def test_only_the_shape_like_input_is_bound_not_the_data():
    model = _model(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"])],
        [
            helper.make_tensor_value_info("x", TensorProto.INT64, (6,)),
            helper.make_tensor_value_info("k", TensorProto.INT64, (1,)),
        ],
        [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ("values", "indices")],
    )
    rep = TranspileBackend.prepare(model, backend="interpreter")
    x = np.array([3, 9, 1, 7, 5, 8], "int64")
    values, indices = rep.run([x, np.array([2], "int64")])
    np.testing.assert_array_equal(values, [9, 8])
    np.testing.assert_array_equal(indices, [1, 5])
    assert rep.bound_inputs == {"k"}  # x is as small, but data: it stays a parameter
    values, _ = rep.run([x[::-1].copy(), np.array([2], "int64")])
    np.testing.assert_array_equal(values, [9, 8])
    assert rep.specializations == 1


def test_backends_without_data_dependent_shapes_get_the_values_bound():
    """Range(0, n, 1) imports as a dynamic arange: the interpreter runs it, cpp compiles it per value of n."""
    graph = helper.make_graph(
        [helper.make_node("Range", ["zero", "n", "one"], ["r"]), helper.make_node("Cast", ["r"], ["y"], to=1)],
        "g",
        [helper.make_tensor_value_info("n", TensorProto.INT64, ())],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[onnx.numpy_helper.from_array(np.array(v, "int64"), name) for name, v in (("zero", 0), ("one", 1))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for backend, bound in (("interpreter", set()), ("cpp", {"n"})):
        rep = TranspileBackend.prepare(model, backend=backend)
        for n in (4, 2):
            (out,) = rep.run([np.array(n, "int64")])
            np.testing.assert_array_equal(out, np.arange(n, dtype="float32"))
        assert rep.bound_inputs == bound, backend


def _expand_model():
    return _model(
        [helper.make_node("Expand", ["x", "shape"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 1)),
            helper.make_tensor_value_info("shape", TensorProto.INT64, (None,)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )


def test_unsupported_models_are_refused_listing_every_unsupported_node():
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Frobnicate", ["r"], ["y"], domain="example.org")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2,))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2,))],
    )
    model.opset_import.append(helper.make_opsetid("example.org", 1))
    assert TranspileBackend.is_compatible(_add_relu_model())
    assert not TranspileBackend.is_compatible(model)
    with pytest.raises(UnsupportedOperatorsError, match="example.org::Frobnicate") as info:
        TranspileBackend.prepare(model)
    assert [u.op for u in info.value.unsupported] == ["example.org::Frobnicate"]


def test_run_node_and_devices():
    x = np.array([[-1.0, 2.0]], "float32")
    (out,) = TranspileBackend.run_node(helper.make_node("Add", ["a", "b"], ["c"]), [x, x])
    np.testing.assert_array_equal(out, 2 * x)
    (out,) = TranspileBackend.run_node(helper.make_node("Relu", ["a"], ["c"]), {"a": x}, opset_version=13)
    np.testing.assert_array_equal(out, [[0.0, 2.0]])
    assert TranspileBackend.supports_device("CPU")
    assert not TranspileBackend.supports_device("CUDA") and not TranspileBackend.supports_device("TPU")
    with pytest.raises(Exception, match="CPU only"):
        TranspileBackend.prepare(_add_relu_model(), device="CUDA")


def test_onnx_backend_test_runner_drives_the_backend(tmp_path, monkeypatch):
    """onnx's own BackendTest (which writes light-model data under ONNX_HOME) accepts the backend class."""
    monkeypatch.setenv("ONNX_HOME", str(tmp_path))
    from onnx.backend.test import BackendTest

    runner = BackendTest(TranspileBackend.for_backend("interpreter"), __name__)
    runner.include(r"^test_(relu|add|single_relu_model)_cpu$")
    outcome = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(runner.test_suite)
    assert outcome.testsRun > 0
    ran = outcome.testsRun - len(outcome.skipped)
    assert ran == 3 and not outcome.failures and not outcome.errors, outcome.failures + outcome.errors


def test_the_suite_report_counts_and_groups():
    results = [
        onnx_suites.CaseResult("test_a", "node", "cpp", "passed"),
        onnx_suites.CaseResult("test_b", "node", "cpp", "unsupported", "unsupported: Foo", missing_ops=("Foo",)),
        onnx_suites.CaseResult(
            "test_c", "node", "cpp", "unsupported", "unsupported: Foo; Bar", missing_ops=("Bar", "Foo")
        ),
        onnx_suites.CaseResult("test_d", "node", "cpp", "failed", "wrong result: values"),
    ]
    table = onnx_suites.summary_table(results)
    assert table.splitlines()[2].split()[:8] == ["node", "cpp", "4", "1", "1", "2", "0", "0"]
    report = onnx_suites.failure_report(results)
    assert "[2] Foo\n      test_b, test_c" in report and "[1] Bar" in report
    assert "== failed: 1 case(s)\n  [1] wrong result: values\n      test_d" in report
