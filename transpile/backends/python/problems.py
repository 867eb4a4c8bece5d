"""The python backend's compile-time errors: features it cannot express, and ill-formed LIR it was handed."""

from __future__ import annotations

from ...errors import Span, UnsupportedFeatureError
from ...lir.nodes import LIRError

__all__ = ["BACKEND", "unsupported", "ill_formed"]

BACKEND = "python"


def unsupported(feature: str, span: Span | None = None, detail: str = "") -> UnsupportedFeatureError:
    """`backend 'python' does not support <feature>: <detail>`, at `span` when known."""
    return UnsupportedFeatureError(feature, BACKEND, span, detail)


def ill_formed(problem: str, span: Span | None = None) -> LIRError:
    """A program breaking an LIR rule the verifier checks (it reached the backend with verify=False)."""
    return LIRError([problem], span)
