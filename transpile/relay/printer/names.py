"""How global, constructor and type names are written: plain when they lex as one name, quoted otherwise.

TVM's text format has no quoting: it printed any name verbatim, so a name with a space, a quote,
a leading digit or a keyword (`let`) gave text that does not parse back. Names that lex as they
are keep TVM's spelling; the others are quoted, `@"a b"` for globals and `` `a b` `` for
constructors and types, with the escapes string literals use (\\n, \\t, \\", \\\\, \\0, \\uXXXX).
"""

from __future__ import annotations

import re

from ..parser.tokens import KEYWORDS
from ..parser.types import DTYPE

__all__ = ["global_name", "bare_name", "escape_name"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FLOAT_WORD = re.compile(r"(?:inf|nan)f\d*\Z")
# Words that lex as something other than a name, or that the type grammar reads specially.
_RESERVED = frozenset(KEYWORDS) | {"True", "False", "_", "Tensor", "None", "nullptr", "meta"}
_SIMPLE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def escape_name(name: str, quote: str) -> str:
    """`name` between `quote` characters, escaped so the lexer reads back exactly `name`."""
    out = []
    for ch in name:
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif ch == quote:
            out.append("\\" + ch)
        elif not ch.isprintable():  # also every character str.splitlines treats as a line break
            code = ord(ch)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def global_name(name: str) -> str:
    """`@name`, quoted (`@"1 b"`) unless the name lexes as a plain global."""
    return "@" + (name if _PLAIN.match(name) else escape_name(name, '"'))


def bare_name(name: str) -> str:
    """A constructor or type name, quoted (`` `let` ``) unless it lexes as a plain, non-reserved name."""
    if _PLAIN.match(name) and name not in _RESERVED and not DTYPE.match(name) and not _FLOAT_WORD.match(name):
        return name
    return escape_name(name, "`")
