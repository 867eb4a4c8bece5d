"""Importers into Relay: ONNX (`from_onnx`) and PyTorch (`from_exported_program`, `from_pytorch`).

As TVM's `relay.frontend`. onnx and torch are optional extras: each importer imports its package
only when called, and says how to install it when it is missing.
"""

from .common import FrontendError, UnsupportedOp, UnsupportedOperatorsError
from .onnx import from_onnx

__all__ = [
    "from_onnx",
    "from_exported_program",
    "from_pytorch",
    "FrontendError",
    "UnsupportedOp",
    "UnsupportedOperatorsError",
]


def from_exported_program(exported_program, freeze_params=True):
    """A `torch.export.ExportedProgram` into `(IRModule, params)`; see `frontend.pytorch.from_exported_program`."""
    from .pytorch import from_exported_program as convert

    return convert(exported_program, freeze_params=freeze_params)


def from_pytorch(module, example_inputs, freeze_params=True):
    """A `torch.nn.Module` into `(IRModule, params)` through torch.export; see `frontend.pytorch.from_pytorch`."""
    from .pytorch import from_pytorch as convert

    return convert(module, example_inputs, freeze_params=freeze_params)
