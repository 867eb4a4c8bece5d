"""TVM's `relay.SourceName` and `relay.Span` constructors (TVM's argument order) over transpile's spans."""

from __future__ import annotations

from ..errors import Span as _Span

__all__ = ["SourceName", "Span"]


class SourceName:
    """The name of a source (a file, or any label such as a layer name) that spans point into."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = str(name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"SourceName({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, SourceName) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


def Span(source_name, line: int, end_line: int, column: int, end_column: int) -> _Span:  # noqa: N802 (TVM's name)
    """A span as TVM built it: `Span(SourceName("x.py"), line, end_line, column, end_column)`.

    transpile's own `transpile.errors.Span` orders its fields (line, column, end_line, end_column);
    this keeps TVM's order for ported code. `source_name` may be a SourceName or a string.
    """
    name = source_name.name if isinstance(source_name, SourceName) else str(source_name)
    return _Span(name, int(line), int(column), int(end_line), int(end_column))
