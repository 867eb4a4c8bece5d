"""transpile: an ahead-of-time compiler framework for TVM's Relay language."""

from __future__ import annotations

from .errors import (
    EvaluationError,
    ParseError,
    RelayTypeError,
    Span,
    TranspileError,
    UnsupportedFeatureError,
)

__version__ = "0.1.0"

__all__ = [
    "TranspileError",
    "ParseError",
    "RelayTypeError",
    "UnsupportedFeatureError",
    "EvaluationError",
    "Span",
    "relay",
    "__version__",
]


def __getattr__(name):
    # `transpile.relay` loads lazily so `import transpile` stays cheap for the CLI.
    if name == "relay":
        import importlib

        return importlib.import_module("transpile.relay")
    raise AttributeError(f"module 'transpile' has no attribute {name!r}")
