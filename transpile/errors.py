"""User-facing error hierarchy and source locations (spans) with caret excerpts."""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

__all__ = [
    "Span",
    "SourceRegistry",
    "TranspileError",
    "ParseError",
    "RelayTypeError",
    "UnsupportedFeatureError",
    "EvaluationError",
]


class SourceRegistry:
    """Remembers the latest text parsed under each source name so errors can quote it.

    Several parses may share a name (`from_string`): spans made by the parser therefore carry
    their own text, and the registry is only the fallback for spans made elsewhere.
    """

    _texts: dict[str, str] = {}

    @classmethod
    def add(cls, name: str, text: str) -> None:
        cls._texts[name] = text

    @classmethod
    def line(cls, name: str, line: int) -> str | None:
        text = cls._texts.get(name)
        if text is None:
            fetched = linecache.getline(name, line)
            return fetched.rstrip("\n") if fetched else None
        lines = text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return None


@dataclass(frozen=True)
class Span:
    """A region of source text; lines and columns are 1-based."""

    source_name: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None
    # The whole source text the position refers to (shared by every span of one parse).
    source_text: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"

    def source_line(self) -> str | None:
        """The text of the span's first line, from its own source text or else the registry."""
        if self.source_text is None:
            return SourceRegistry.line(self.source_name, self.line)
        # Lines as the lexer counts them: only "\n" ends a line.
        lines = self.source_text.split("\n")
        return lines[self.line - 1].rstrip("\r") if 1 <= self.line <= len(lines) else None

    def excerpt(self) -> str:
        """The source line followed by a caret line under the span's start."""
        text = self.source_line()
        if text is None:
            return ""
        width = 1
        if self.end_line == self.line and self.end_column and self.end_column > self.column:
            width = self.end_column - self.column
        prefix = "".join(ch if ch == "\t" else " " for ch in text[: self.column - 1])
        return f"  {text}\n  {prefix}{'^' * width}"


class TranspileError(Exception):
    """Base of every error a user of transpile can cause."""

    def __init__(self, message: str, span: Span | None = None):
        self.message = message
        self.span = span
        super().__init__(self._render())

    def locate(self, span: Span | None) -> "TranspileError":
        """Gives a location-less error the location `span` (an enclosing construct); returns self."""
        if self.span is None and span is not None:
            self.span = span
            self.args = (self._render(),)
        return self

    @property
    def source_name(self) -> str | None:
        return self.span.source_name if self.span else None

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.column if self.span else None

    def _render(self) -> str:
        if self.span is None:
            return self.message
        excerpt = self.span.excerpt()
        head = f"{self.span}: {self.message}"
        return f"{head}\n{excerpt}" if excerpt else head


class ParseError(TranspileError):
    """Malformed Relay text: lexing, grammar, scoping or literal range errors."""


class RelayTypeError(TranspileError):
    """A Relay program is ill-typed."""


class UnsupportedFeatureError(TranspileError):
    """A backend cannot handle a feature the program needs."""

    def __init__(self, feature: str, backend: str, span: Span | None = None, detail: str = ""):
        self.feature = feature
        self.backend = backend
        message = f"backend '{backend}' does not support {feature}"
        if detail:
            message += f": {detail}"
        super().__init__(message, span)


class EvaluationError(TranspileError):
    """A program failed at run time (bad arguments, incomplete match, recursion too deep)."""
