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
    "backends",
    "compile",
    "emit",
    "build",
    "load",
    "get_backend",
    "register_backend",
    "__version__",
]

# Public API names served lazily from submodules (keeps `import transpile` cheap for the CLI).
_LAZY_API = {
    "compile": "transpile.backends",
    "emit": "transpile.backends",
    "build": "transpile.backends",
    "load": "transpile.backends",
    "get_backend": "transpile.backends",
    "register_backend": "transpile.backends",
    "unregister_backend": "transpile.backends",
}


def __getattr__(name):
    # `transpile.relay` loads lazily so `import transpile` stays cheap for the CLI.
    import importlib

    if name in ("relay", "backends", "lir", "passes", "pipeline", "runtime", "testing"):
        # `transpile.backends` is a callable module: transpile.backends() lists the backend names.
        return importlib.import_module(f"transpile.{name}")
    if name in _LAZY_API:
        return getattr(importlib.import_module(_LAZY_API[name]), name)
    raise AttributeError(f"module 'transpile' has no attribute {name!r}")
