"""ONNX operator converters, one module per family; importing the package registers them all."""

from . import elementwise  # noqa: F401
