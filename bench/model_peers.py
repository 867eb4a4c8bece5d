"""The systems `python -m bench models` times: transpile cpp/tir on the corpus graphs, ONNX Runtime, PyTorch eager, torch.compile.

Each builder returns a `System`: a no-argument call on a prepared input (conversions done once,
outside the timed call), its build time, and what it runs. A peer whose package is missing raises
`NotAvailable` with the reason. Nothing here reads the clock during timing; `bench/models.py` does.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

# Command-line names, in table order, and their titles.
SYSTEMS = ("cpp", "tir", "ort", "torch", "compile")
TITLES = {
    "cpp": "transpile cpp",
    "tir": "transpile tir",
    "ort": "ONNX Runtime",
    "torch": "PyTorch eager",
    "compile": "torch.compile",
}
INSTALL_HINT = 'pip install -e ".[bench]"'

_IMPORTED = (
    " with torchvision's initialisation and batch-norm statistics calibrated on random images; exported once to"
    " ONNX (opset 17), which transpile imports (`from_onnx`) and ONNX Runtime loads, while PyTorch eager and"
    " torch.compile run the module: every system computes the same function with the same weights"
)
# What each model is, for every system; for a corpus graph, what the peers run instead and how it differs.
PEER_ARCHITECTURES = {
    "resnet50": "torchvision `resnet50` (ResNet-50 v1.5)" + _IMPORTED,
    "resnet18": "torchvision `resnet18`" + _IMPORTED,
    "mobilenet_v2": "torchvision `mobilenet_v2` (width 1.0)" + _IMPORTED,
    "mnist": "a torch module written op for op after the corpus graph (pad, conv 5x5 8, relu, maxpool 2, pad,"
    " conv 5x5 16, relu, maxpool 3, reshape, dense) with the corpus model's weights: every system computes"
    " the same function",
    "mobilenet_v2_corpus": "the corpus graph for transpile; the peers run torchvision `mobilenet_v2` (width 1.0),"
    " torchvision's initialisation with batch-norm statistics calibrated on random images. The corpus graph (ONNX model zoo variant) differs slightly: ReLU instead of"
    " ReLU6, an extra 1x1 expansion conv (32→32 channels at 112x112) in the first bottleneck, and a 1x1-conv"
    " classifier without bias instead of dropout + linear (54 vs 52 convolutions + 1 linear; the extra conv adds ~4 % of the ~300 M multiply-adds)",
    "resnet50_v2_corpus": "the corpus graph for transpile; the peers run torchvision `resnet50`, which is ResNet-50 **v1** (conv → batch norm → relu, the add after the"
    " block) while the corpus graph is **v2** (pre-activation: batch norm → relu → conv, an identity add, a final"
    " batch norm + relu): the same convolutions and FLOPs (~4.1 GMAC), a different block order and a few more"
    " batch norms in v2. torchvision's initialisation with batch-norm statistics calibrated on random images",
}


class NotAvailable(Exception):
    """A system that cannot run here (package missing); the message says why."""


@dataclass
class System:
    """One system ready to time: `run()` does one inference on the prepared input."""

    name: str
    run: Callable[[], object]
    to_numpy: Callable[[object], np.ndarray]
    build_seconds: float | None  # None: nothing is built (PyTorch eager)
    build_note: str = ""  # shown beside the build time (ONNX Runtime: the export before the session)

    def output(self) -> np.ndarray:
        return np.asarray(self.to_numpy(self.run()), dtype=np.float64)


# ----- transpile ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _environment(**values):
    """Set environment variables for the duration of a block (transpile reads its cache folder per build)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def transpile_system(backend: str, module, inputs: list[np.ndarray], cache_dir: Path) -> System:
    """The corpus model built by transpile's `backend` in an empty cache folder (a true first build), loaded."""
    import transpile

    cache_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with _environment(TRANSPILE_CACHE_DIR=str(cache_dir)):
        function = transpile.build(module, backend=backend).load()
    seconds = time.perf_counter() - start
    args = tuple(np.ascontiguousarray(a) for a in inputs)
    return System(
        backend,
        lambda: function(*args),
        np.asarray,
        seconds,
    )


# ----- PyTorch and torchvision -------------------------------------------------------------------


def import_torch():
    """torch, or NotAvailable with the reason."""
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install
        raise NotAvailable(f"import torch failed ({type(exc).__name__}); {INSTALL_HINT}") from exc
    return torch


def import_torchvision_models():
    """torchvision.models (see transpile.testing.torch_support for the ops-library workaround)."""
    import_torch()
    from transpile.testing.torch_support import import_torchvision

    try:
        return import_torchvision().models
    except ModuleNotFoundError as exc:
        raise NotAvailable(f"import torchvision failed ({exc}); {INSTALL_HINT}") from exc
    except RuntimeError as exc:
        raise NotAvailable(f"import torchvision failed: {exc}") from exc


def _mnist_module(constants: list[np.ndarray]):
    """The corpus MNIST graph (menangerie__1) as a torch module, with its weights."""
    torch = import_torch()
    F = torch.nn.functional
    w1, b1, w2, b2, wd, bd = constants
    assert w1.shape == (8, 1, 5, 5) and w2.shape == (16, 8, 5, 5) and wd.shape == (10, 256), "unexpected MNIST weights"

    class CorpusMnist(torch.nn.Module):
        """pad 2, conv 5x5 8 + bias, relu, maxpool 2, pad 2, conv 5x5 16 + bias, relu, maxpool 3, reshape, dense + bias."""

        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 8, 5)
            self.conv2 = torch.nn.Conv2d(8, 16, 5)
            self.dense = torch.nn.Linear(256, 10)
            with torch.no_grad():
                for layer, weight, bias in ((self.conv1, w1, b1), (self.conv2, w2, b2), (self.dense, wd, bd)):
                    layer.weight.copy_(torch.from_numpy(np.array(weight)))
                    layer.bias.copy_(torch.from_numpy(np.array(bias).reshape(-1)))

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(F.pad(x, (2, 2, 2, 2)))), 2)
            x = F.max_pool2d(F.relu(self.conv2(F.pad(x, (2, 2, 2, 2)))), 3)
            return self.dense(x.reshape(x.shape[0], 256))

    return CorpusMnist().eval()


def _calibrate_batch_norm(module, image_shape: tuple) -> None:
    """Set every batch norm's running statistics to those of its input on random images.

    torchvision's initialisation (running mean 0, variance 1, fan-out He weights) shrinks MobileNet's
    activations ~20x per stage (its logits come out ~1e-9); calibrated statistics keep every layer's
    output near unit scale, as a trained network's are.
    """
    torch = import_torch()
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a plain average over the calibration batches
    generator = torch.Generator().manual_seed(2)
    module.train()
    with torch.no_grad():
        module(torch.randn((2, *image_shape[1:]), generator=generator))
    module.eval()


def peer_module(model: str, constants: list[np.ndarray], input_shape: tuple):
    """The torch module the peers run for a corpus model (see PEER_ARCHITECTURES), in eval mode."""
    torch = import_torch()
    if model == "mnist":
        return _mnist_module(constants)
    models = import_torchvision_models()
    constructor = {
        "mobilenet_v2": models.mobilenet_v2,
        "resnet50_v2": models.resnet50,
        "resnet50": models.resnet50,
        "resnet18": models.resnet18,
    }.get(model)
    if constructor is None:
        raise NotAvailable(f"no peer architecture for {model}")
    torch.manual_seed(0)
    module = constructor()  # weights=None: torchvision's random initialisation, nothing downloaded
    _calibrate_batch_norm(module, input_shape)
    return module


def eager_system(module, x: np.ndarray) -> System:
    """PyTorch eager under inference_mode."""
    torch = import_torch()
    tensor = torch.from_numpy(np.ascontiguousarray(x))

    def run():
        with torch.inference_mode():
            return module(tensor)

    return System("torch", run, lambda t: t.numpy(), None)


def compiled_system(module, x: np.ndarray) -> System:
    """torch.compile (inductor, default mode); its build time is the first call, which compiles."""
    torch = import_torch()
    tensor = torch.from_numpy(np.ascontiguousarray(x))
    compiled = torch.compile(module)

    def run():
        with torch.inference_mode():
            return compiled(tensor)

    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    return System("compile", run, lambda t: t.numpy(), seconds)


def onnxruntime_system(onnx_path: Path, x: np.ndarray, threads: int, exported_seconds: float) -> System:
    """ONNX Runtime's CPU provider on an ONNX file; its build time is the session's creation."""
    try:
        import onnxruntime as ort
    except Exception as exc:
        raise NotAvailable(f"import onnxruntime failed ({type(exc).__name__}); {INSTALL_HINT}") from exc
    exported = exported_seconds
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Passive waits: a spinning pool steals the core that another system's (or its own) thread needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    start = time.perf_counter()
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    seconds = time.perf_counter() - start
    feed = {"input": np.ascontiguousarray(x)}
    return System(
        "ort",
        lambda: session.run(None, feed)[0],
        np.asarray,
        seconds,
        f"+ {exported:.2f} s export" if exported else "",
    )
