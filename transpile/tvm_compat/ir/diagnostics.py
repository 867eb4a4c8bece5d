"""TVM's `tvm.ir.diagnostics`: diagnostics (level, span, message) and the renderer that shows them.

`override_renderer(func)` makes `func(context)` receive every rendered DiagnosticContext (None
restores the default, which prints to stderr). `report(error)` renders a TranspileError as one
error diagnostic: code that turns transpile's errors into TVM-style diagnostics calls it.
"""

from __future__ import annotations

import enum
import sys
import threading

__all__ = [
    "DiagnosticLevel",
    "Diagnostic",
    "DiagnosticContext",
    "DiagnosticRenderer",
    "get_renderer",
    "override_renderer",
    "report",
]


class DiagnosticLevel(enum.IntEnum):
    BUG = 10
    ERROR = 20
    WARNING = 30
    NOTE = 40
    HELP = 50


class Diagnostic:
    """One message about a place in the program."""

    def __init__(self, level, span, message: str):
        self.level = DiagnosticLevel(level)
        self.span = span
        self.message = message

    def __repr__(self):
        return f"Diagnostic({self.level.name}, {self.span}, {self.message!r})"


class DiagnosticRenderer:
    """Shows a DiagnosticContext: `render_func(context)`."""

    def __init__(self, render_func):
        self.render_func = render_func

    def render(self, context: "DiagnosticContext") -> None:
        self.render_func(context)


class DiagnosticContext:
    """The diagnostics of one run over `module`, rendered together."""

    def __init__(self, module=None, renderer: DiagnosticRenderer | None = None):
        self.module = module
        self.renderer = renderer or get_renderer()
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def render(self) -> None:
        self.renderer.render(self)


def _print_to_stderr(context: DiagnosticContext) -> None:
    for diagnostic in context.diagnostics:
        where = f"{diagnostic.span}: " if diagnostic.span is not None else ""
        print(f"{where}{diagnostic.level.name.lower()}: {diagnostic.message}", file=sys.stderr)


_DEFAULT = DiagnosticRenderer(_print_to_stderr)
_state = threading.local()


def get_renderer() -> DiagnosticRenderer:
    return getattr(_state, "renderer", None) or _DEFAULT


def override_renderer(render_func) -> None:
    """Routes rendering to `render_func(context)`; None restores the default renderer."""
    _state.renderer = DiagnosticRenderer(render_func) if render_func is not None else None


def report(error, module=None) -> None:
    """Renders `error` (a TranspileError, with its span) as one error diagnostic."""
    context = DiagnosticContext(module)
    context.emit(Diagnostic(DiagnosticLevel.ERROR, getattr(error, "span", None), getattr(error, "message", str(error))))
    context.render()
