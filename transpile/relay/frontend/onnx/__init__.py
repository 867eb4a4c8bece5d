"""ONNX models into Relay (TVM's `relay.frontend.from_onnx`)."""

from .converters import supported_ops
from .importer import from_onnx, load_model

__all__ = ["from_onnx", "load_model", "supported_ops"]
