"""Importers into Relay: ONNX (`from_onnx`) and PyTorch (`from_exported_program`, `from_pytorch`).

As TVM's `relay.frontend`. onnx and torch are optional extras: each importer imports its package
only when called, and says how to install it when it is missing.
"""

from .common import FrontendError, UnsupportedOp, UnsupportedOperatorsError
from .onnx import from_onnx

__all__ = ["from_onnx", "FrontendError", "UnsupportedOp", "UnsupportedOperatorsError"]
