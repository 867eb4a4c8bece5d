"""Real models exported from PyTorch to ONNX, imported with from_onnx, built on cpp, compared with onnxruntime.

Models and their export live in transpile.testing.onnx_models (random seeded weights, calibrated
so outputs have unit scale). ResNet-18 and a tiny BERT run in CI; the others are `slow`.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import transpile  # noqa: E402
from transpile.relay.frontend import from_onnx  # noqa: E402
from transpile.testing import onnx_models  # noqa: E402

IN_CI = {"resnet18", "bert_tiny"}
TRANSFORMERS = {"bert_tiny", "gpt2_tiny"}
RTOL, ATOL = 1e-4, 1e-5
# ResNet-50's 53 float32 layers: onnxruntime is 2.8e-5 and torch 3.2e-5 away from the float64
# result (cpp 3.9e-5), so outputs near zero cannot agree within 1e-5 absolute.
TOLERANCES = {"resnet50": (1e-4, 1e-4)}


def _exported(name):
    """The exported model; a skip when torchvision or transformers cannot be imported here."""
    try:
        if name in TRANSFORMERS:
            onnx_models.import_transformers()
        else:
            onnx_models.import_torchvision()
    except ImportError as exc:
        pytest.skip(f"{name} needs {exc.name}: {exc}")
    return onnx_models.export_model(name)


@pytest.mark.parametrize(
    "name", [n if n in IN_CI else pytest.param(n, marks=pytest.mark.slow) for n in onnx_models.MODEL_NAMES]
)
def test_exported_model_on_cpp_matches_onnxruntime(name):
    exported = _exported(name)
    session = ort.InferenceSession(exported.onnx_bytes, providers=["CPUExecutionProvider"])
    expected = session.run(None, exported.inputs)
    assert all(np.std(e) > 1e-3 for e in expected if e.dtype.kind == "f"), "outputs too small to compare"

    shapes = {key: value.shape for key, value in exported.inputs.items()}
    mod, params = from_onnx(exported.onnx_bytes, shape=shapes)
    function = transpile.compile(mod, backend="cpp", params=params or None)
    result = function(*exported.inputs.values())
    got = list(result) if isinstance(result, tuple) else [result]

    rtol, atol = TOLERANCES.get(name, (RTOL, ATOL))
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape and g.dtype == e.dtype, (i, g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"{name} output {i}")


def test_export_gives_the_torch_modules_outputs():
    """onnxruntime on the export agrees with the torch module the benchmark times (ResNet-18)."""
    exported = _exported("resnet18")
    session = ort.InferenceSession(exported.onnx_bytes, providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, exported.inputs)
    (reference,) = onnx_models.torch_outputs(exported)
    np.testing.assert_allclose(expected, reference, rtol=1e-4, atol=1e-5)
    assert list(exported.inputs) == ["input"] and exported.inputs["input"].shape == (1, 3, 224, 224)
