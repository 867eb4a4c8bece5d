"""What `python -m bench models` runs: one subject per model, the same weights and input for every system.

A torchvision model is made once (torchvision's initialisation, batch-norm statistics calibrated),
exported to ONNX once, and that file is what transpile imports (`from_onnx`) and ONNX Runtime loads,
while PyTorch eager and torch.compile run the module itself: every system computes the same
function with the same weights. The reference is the module evaluated in float64 by PyTorch.
The corpus models (MNIST, and the corpus variants of MobileNet v2 / ResNet-50) keep their Relay
graph for transpile and a torch module written after it for the peers (see PEER_ARCHITECTURES).
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import model_peers as peers

# Models of torchvision, imported from their ONNX export; their titles.
TORCHVISION = {"resnet50": "ResNet-50", "mobilenet_v2": "MobileNet v2", "resnet18": "ResNet-18"}
# Corpus graphs (transpile.testing.models names); their titles.
CORPUS = {"mnist": "MNIST", "mobilenet_v2_corpus": "MobileNet v2 (corpus graph)", "resnet50_v2_corpus": "ResNet-50 v2 (corpus graph)"}
CORPUS_NAMES = {"mnist": "mnist", "mobilenet_v2_corpus": "mobilenet_v2", "resnet50_v2_corpus": "resnet50_v2"}
IMAGE_SHAPE = (1, 3, 224, 224)
ONNX_OPSET = 17


@dataclass
class Subject:
    """One model as every system sees it."""

    name: str
    relay_module: object  # what transpile builds
    inputs: list  # numpy arrays
    reference: np.ndarray  # float64
    reference_name: str
    torch_module: object = None  # built on first use (peer_module)
    onnx_path: Path | None = None  # what ONNX Runtime loads; exported on first use for corpus models
    import_seconds: float | None = None  # torch.onnx.export + from_onnx, for torchvision models
    notes: dict = field(default_factory=dict)


def title(model: str) -> str:
    return TORCHVISION.get(model) or CORPUS.get(model) or model


def export_onnx(module, x: np.ndarray, path: Path) -> Path:
    """`module` exported to ONNX at `path` (TorchScript exporter: the dynamo one needs onnxscript)."""
    torch = peers.import_torch()
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except Exception as exc:
        raise peers.NotAvailable(f"import onnx failed ({type(exc).__name__}); {peers.INSTALL_HINT}") from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            module,
            (torch.from_numpy(np.ascontiguousarray(x)),),
            str(path),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=["input"],
            output_names=["output"],
        )
    return path


def _float64_reference(module, x: np.ndarray) -> np.ndarray:
    torch = peers.import_torch()
    double = copy.deepcopy(module).double().eval()
    with torch.inference_mode():
        return double(torch.from_numpy(x.astype(np.float64))).numpy()


def load_subject(model: str, workdir: Path) -> Subject:
    if model in TORCHVISION:
        return _torchvision_subject(model, workdir)
    return _corpus_subject(model)


def _torchvision_subject(model: str, workdir: Path) -> Subject:
    from transpile.relay.frontend import from_onnx

    module = peers.peer_module(model, None, IMAGE_SHAPE)
    x = np.random.default_rng(1).standard_normal(IMAGE_SHAPE).astype(np.float32)
    start = time.perf_counter()
    path = export_onnx(module, x, workdir / f"{model}.onnx")
    exported = time.perf_counter() - start
    start = time.perf_counter()
    relay_module, _ = from_onnx(str(path))
    imported = time.perf_counter() - start
    subject = Subject(
        model, relay_module, [x], _float64_reference(module, x), "PyTorch float64", module, path, exported + imported
    )
    subject.notes["import"] = f"torch.onnx.export {exported:.2f} s + from_onnx {imported:.2f} s"
    return subject


def _corpus_subject(model: str) -> Subject:
    from transpile.testing.models import load_model
    from transpile.testing.numpy_reference import reference_evaluate

    loaded = load_model(CORPUS_NAMES[model], seed=0)
    inputs = loaded.inputs(seed=1)
    reference = np.asarray(reference_evaluate(loaded.module, inputs[0]), dtype=np.float64)
    subject = Subject(model, loaded.module, inputs, reference, "numpy float64 reference")
    subject.notes["constants"] = loaded.constants
    return subject


def peer_module(subject: Subject):
    """The torch module the peers run (the subject's own for torchvision models)."""
    if subject.torch_module is None:
        corpus = CORPUS_NAMES[subject.name]
        subject.torch_module = peers.peer_module(corpus, subject.notes["constants"], subject.inputs[0].shape)
    return subject.torch_module


def onnx_file(subject: Subject, workdir: Path) -> tuple[Path, float]:
    """The ONNX file ONNX Runtime loads and the seconds spent exporting it now (0 when it already existed)."""
    if subject.onnx_path is not None:
        return subject.onnx_path, 0.0
    start = time.perf_counter()
    subject.onnx_path = export_onnx(peer_module(subject), subject.inputs[0], workdir / f"{subject.name}.onnx")
    return subject.onnx_path, time.perf_counter() - start


def same_function_as_transpile(subject: Subject) -> bool:
    """Whether the peers compute exactly transpile's function (same graph and weights): then one reference judges all."""
    return subject.name in TORCHVISION or subject.name == "mnist"
