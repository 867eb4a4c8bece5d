"""Token kinds and the Token record produced by the Relay text lexer."""

from __future__ import annotations

__all__ = [
    "Token",
    "describe",
    "KEYWORDS",
    "EOF",
    "INT",
    "FLOAT",
    "BOOL",
    "STRING",
    "LOCAL",
    "GRAPH",
    "GLOBAL",
    "IDENT",
    "META",
    "VERSION",
    "METADATA",
    "UNDERSCORE",
]

# Value-carrying token kinds; keywords and punctuation use their own text as kind.
EOF = "end of input"
INT = "integer literal"
FLOAT = "float literal"
BOOL = "boolean literal"
STRING = "string literal"
LOCAL = "local variable"
GRAPH = "graph variable"
GLOBAL = "global variable"
IDENT = "identifier"
META = "meta reference"
VERSION = "version header"
METADATA = "metadata section"
UNDERSCORE = "_"

KEYWORDS = frozenset(
    ["let", "fn", "def", "if", "else", "type", "match", "extern", "free_var", "ref", "ref_read", "ref_write"]
)


class Token:
    """One lexeme: `kind`, source `text`, decoded `value`, and its 1-based start/end position (end exclusive)."""

    __slots__ = ("kind", "text", "value", "line", "col", "end_line", "end_col")

    def __init__(self, kind, text, value, line, col, end_line, end_col):
        self.kind = kind
        self.text = text
        self.value = value
        self.line = line
        self.col = col
        self.end_line = end_line
        self.end_col = end_col

    def __repr__(self):
        return f"Token({self.kind!r}, {self.text!r}, {self.line}:{self.col})"


def describe(token: Token) -> str:
    """How an error message names a token: its text in backticks, or `end of input`."""
    if token.kind == EOF:
        return "end of input"
    if token.kind == METADATA:
        return "the `#[metadata]` section"
    text = token.text
    if len(text) > 40:
        text = text[:37] + "..."
    return f"`{text}`"
