"""Hand-written lexer for the Relay 0.0.5 text format (one compiled regex, nested block comments)."""

from __future__ import annotations

import re

from ...errors import ParseError, Span
from .literals import LiteralError, decode_number
from .tokens import (
    BOOL,
    EOF,
    FLOAT,
    GLOBAL,
    GRAPH,
    IDENT,
    INT,
    KEYWORDS,
    LOCAL,
    META,
    METADATA,
    STRING,
    UNDERSCORE,
    VERSION,
    Token,
)

__all__ = ["tokenize"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# TVM's lexer let local names contain `/` (frontends named variables after scoped layer names,
# `%base/x`); a `/` that starts a comment (`//`, `/*`) still ends the name.
_LOCAL_NAME = r"[A-Za-z_](?:[A-Za-z0-9_]|/(?=[A-Za-z0-9_]))*"
_MASTER = re.compile(
    r"(?P<ws>[ \t\r\n\f\v]+)"
    r"|(?P<line_comment>//[^\n]*)"
    r"|(?P<block_comment>/\*)"
    r"|(?P<meta>meta\[)"
    r"|(?P<attr>\#)"
    r"|(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:[fi]\d*)?)"
    r"|(?P<minus>-+)"
    r"|(?P<percent>%(?:(?P<graph>\d+)|(?P<local>" + _LOCAL_NAME + r"))?)"
    r'|(?P<quoted_global>@"(?:[^"\\\n]|\\.)*")'
    r"|(?P<at>@(?P<global>" + _NAME + r")?)"
    r"|(?P<ident>" + _NAME + r"(?:\." + _NAME + r")*)"
    r"|(?P<quoted_name>`(?:[^`\\\n]|\\.)*`)"
    r'|(?P<string>"(?:[^"\\\n]|\\.)*")'
    r'|(?P<bad_string>")'
    r"|(?P<punct>->|=>|==|!=|<=|>=|[()\[\]{},;:.=<>+*/?])"
)
_DIGITS = re.compile(r"\d+")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
_META_REF = re.compile(r"meta\[(?P<kind>[^\[\]\s]+)\]\[(?P<index>\d+)\]")
_VERSION = re.compile(r'\#\[\s*version\s*=\s*"(?P<version>[^"]*)"\s*\]')
_METADATA = re.compile(r"\#\[\s*metadata\s*\]")
_SPECIAL_FLOAT = re.compile(r"(?:inf|nan)f\d*\Z")
_SPECIAL_WORDS = KEYWORDS | {"True", "False", "_"}
_COMMENT_DELIM = re.compile(r"/\*|\*/")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "`": "`", "\\": "\\", "0": "\0"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}  # `\u00e9`: what the printer writes for unprintable characters
_HEX = re.compile(r"[0-9A-Fa-f]+\Z")

# After one of these a `-` is the subtraction operator, otherwise it starts a negative literal.
_ENDS_EXPRESSION = frozenset([")", "]", "}", INT, FLOAT, BOOL, STRING, LOCAL, GRAPH, GLOBAL, IDENT, META])


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            width = _HEX_ESCAPES.get(nxt)
            digits = body[i + 2 : i + 2 + width] if width else ""
            if width and len(digits) == width and _HEX.match(digits) and int(digits, 16) <= 0x10FFFF:
                out.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class _Lexer:
    def __init__(self, text: str, source_name: str):
        self.text = text
        self.source_name = source_name
        self.line = 1
        self.line_start = 0
        self.tokens: list[Token] = []

    def col(self, pos: int) -> int:
        return pos - self.line_start + 1

    def error(self, message: str, pos: int, end: int | None = None):
        col = self.col(pos)
        end_col = col + max(1, (end or pos + 1) - pos)
        raise ParseError(message, Span(self.source_name, self.line, col, self.line, end_col, self.text))

    def advance_lines(self, start: int, end: int) -> None:
        newlines = self.text.count("\n", start, end)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", start, end) + 1

    def emit(self, kind, text, value, start, end) -> Token:
        col = self.col(start)
        token = Token(kind, text, value, self.line, col, self.line, col + (end - start))
        self.tokens.append(token)
        return token

    def prev_kind(self):
        return self.tokens[-1].kind if self.tokens else None

    def skip_block_comment(self, start: int) -> int:
        depth = 0
        for delim in _COMMENT_DELIM.finditer(self.text, start):
            depth += 1 if delim.group() == "/*" else -1
            if depth == 0:
                return delim.end()
        self.error("unterminated block comment `/*`", start, start + 2)

    def number(self, start: int, end: int, negative: bool, token_start: int) -> None:
        text = self.text[start:end]
        if end < len(self.text) and _IDENT_CHAR.match(self.text, end):
            tail = re.match(r"[A-Za-z0-9_.]*", self.text[end:]).group()
            self.error(
                f"invalid numeric literal {self.text[token_start:end + len(tail)]}", token_start, end + len(tail)
            )
        try:
            kind, value, dtype = decode_number(text, negative)
        except LiteralError as exc:
            self.error(str(exc), token_start, end)
        self.emit(INT if kind == "int" else FLOAT, self.text[token_start:end], (value, dtype), token_start, end)

    def run(self) -> list[Token]:
        text = self.text
        size = len(text)
        pos = 0
        master = _MASTER.match
        append = self.tokens.append
        while pos < size:
            m = master(text, pos)
            if m is None:
                self.error(f"unexpected character `{text[pos]}`", pos)
            group = m.lastgroup
            end = m.end()
            # The most frequent lexemes are handled inline; the rest go through `emit`.
            if group == "ws":
                if "\n" in m.group():
                    self.advance_lines(pos, end)
                pos = end
                continue
            if group == "punct" or group == "ident" or group == "percent":
                word = m.group()
                col = pos - self.line_start + 1
                line = self.line
                if group == "punct":
                    append(Token(word, word, None, line, col, line, col + end - pos))
                    pos = end
                    continue
                if group == "percent":
                    local = m.group("local")
                    if local is not None:
                        append(Token(LOCAL, word, local, line, col, line, col + end - pos))
                        pos = end
                        continue
                    graph = m.group("graph")
                    if graph is None:
                        self.error("expected a variable name after `%`", pos)
                    append(Token(GRAPH, word, int(graph), line, col, line, col + end - pos))
                    pos = end
                    continue
                if word not in _SPECIAL_WORDS and not (word[:3] in ("inf", "nan") and _SPECIAL_FLOAT.match(word)):
                    append(Token(IDENT, word, word, line, col, line, col + end - pos))
                    pos = end
                    continue
            if group == "line_comment":
                pos = end
            elif group == "block_comment":
                end = self.skip_block_comment(pos)
                self.advance_lines(pos, end)
                pos = end
            elif group == "ident":
                word = m.group()
                if word in KEYWORDS:
                    if word == "match" and text.startswith("?", end):
                        end += 1
                        word = "match?"
                    self.emit(word, word, None, pos, end)
                elif word == "True" or word == "False":
                    self.emit(BOOL, word, word == "True", pos, end)
                elif word == "_":
                    self.emit(UNDERSCORE, word, None, pos, end)
                elif _SPECIAL_FLOAT.match(word):
                    self.number(pos, end, False, pos)
                else:
                    self.emit(IDENT, word, word, pos, end)
                pos = end
            elif group == "number":
                if self.prev_kind() == ".":
                    # A projection index: `%t.0.1` is two projections, not the float `0.1`.
                    end = _DIGITS.match(text, pos).end()
                    self.emit(INT, text[pos:end], (int(text[pos:end]), "int32"), pos, end)
                else:
                    self.number(pos, end, False, pos)
                pos = end
            elif group == "at":
                if m.group("global") is None:
                    self.error("expected a global name after `@`", pos)
                self.emit(GLOBAL, m.group(), m.group("global"), pos, end)
                pos = end
            elif group == "minus":
                pos = self.minus(pos, end)
            elif group == "quoted_global":
                raw = m.group()
                self.emit(GLOBAL, raw, _unescape(raw[2:-1]), pos, end)
                pos = end
            elif group == "quoted_name":
                # A constructor or type name the printer quoted (`let`, `1abc`, `a b`): an IDENT
                # whose text keeps the quotes, so it is never mistaken for a keyword or a dtype.
                raw = m.group()
                self.emit(IDENT, raw, _unescape(raw[1:-1]), pos, end)
                pos = end
            elif group == "string":
                raw = m.group()
                self.emit(STRING, raw, _unescape(raw[1:-1]), pos, end)
                pos = end
            elif group == "bad_string":
                self.error("unterminated string literal (strings end on the same line)", pos)
            elif group == "meta":
                ref = _META_REF.match(text, pos)
                if ref is None:
                    self.error("malformed meta reference: expected `meta[<kind>][<index>]`", pos, end)
                end = ref.end()
                self.emit(META, ref.group(), (ref.group("kind"), int(ref.group("index"))), pos, end)
                pos = end
            elif group == "attr":
                pos = self.attribute(pos)
            else:  # pragma: no cover - every group is handled above
                self.error(f"unexpected character `{text[pos]}`", pos)
        self.emit(EOF, "", None, pos, pos)
        return self.tokens

    def minus(self, pos: int, end: int) -> int:
        text = self.text
        if self.prev_kind() in _ENDS_EXPRESSION:
            # Binary minus; any further dashes lex again (e.g. `1 --1` is 1 - (-1)).
            if text.startswith("->", pos):
                self.emit("->", "->", None, pos, pos + 2)
                return pos + 2
            self.emit("-", "-", None, pos, pos + 1)
            return pos + 1
        negative = (end - pos) % 2 == 1
        number = _MASTER.match(text, end)
        if number is not None and number.lastgroup == "number":
            self.number(end, number.end(), negative, pos)
            return number.end()
        if number is not None and number.lastgroup == "ident" and _SPECIAL_FLOAT.match(number.group()):
            self.number(end, number.end(), negative, pos)
            return number.end()
        if text.startswith(">", pos + 1):
            self.emit("->", "->", None, pos, pos + 2)
            return pos + 2
        self.emit("-", "-", None, pos, pos + 1)
        return pos + 1

    def attribute(self, pos: int) -> int:
        text = self.text
        version = _VERSION.match(text, pos)
        if version is not None:
            self.emit(VERSION, version.group(), version.group("version"), pos, version.end())
            self.advance_lines(pos, version.end())
            return version.end()
        metadata = _METADATA.match(text, pos)
        if metadata is not None:
            self.emit(METADATA, metadata.group(), text[metadata.end() :], pos, metadata.end())
            # The metadata section runs to the end of the source.
            self.advance_lines(pos, len(text))
            return len(text)
        close = text.find("]", pos)
        shown = text[pos : close + 1] if close != -1 and text.startswith("#[", pos) else "#"
        if shown == "#":
            self.error('`#` must start an attribute such as `#[version = "0.0.5"]`', pos)
        self.error(f"unsupported attribute {shown}", pos, pos + len(shown))


def tokenize(text: str, source_name: str = "from_string") -> list[Token]:
    """The tokens of `text` (comments and whitespace dropped), ending with an EOF token."""
    return _Lexer(text, source_name).run()
