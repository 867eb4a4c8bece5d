"""Token-stream navigation, error reporting and lexical scopes shared by the parser's parts."""

from __future__ import annotations

from ...errors import ParseError, Span
from .tokens import EOF, IDENT, Token, describe

__all__ = ["TokenStream"]


class TokenStream:
    """Cursor over the token list; `self.tok` is the next unconsumed token."""

    def __init__(self, tokens: list[Token], source_name: str, source_text: str | None = None):
        self.tokens = tokens
        self.source_name = source_name
        self.source_text = source_text  # stored on every span: errors quote this parse's text
        self.pos = 0
        self.tok = tokens[0]
        self.last = tokens[0]  # the most recently consumed token (span ends)
        self.scopes: list[dict] = [{}]  # local names (str) and graph numbers (int) -> Expr
        self.type_scopes: list[dict] = [{}]

    # ----- cursor ---------------------------------------------------------------------------
    def peek(self, offset: int = 1) -> Token:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else self.tokens[-1]

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind != EOF:
            self.pos += 1
            self.tok = self.tokens[self.pos]
        self.last = tok
        return tok

    def seek(self, pos: int) -> None:
        self.pos = pos
        self.tok = self.tokens[pos]

    def accept(self, kind: str) -> Token | None:
        if self.tok.kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, expected: str | None = None) -> Token:
        if self.tok.kind == kind:
            return self.advance()
        self.fail(f"expected {expected or '`' + kind + '`'} but found {describe(self.tok)}")

    def skip_commas(self) -> None:
        # Printers emit trailing and doubled commas (`f(%x, , )`), so extra commas are allowed.
        while self.tok.kind == ",":
            self.advance()

    def list_separator(self, close: str) -> bool:
        """After an item of a comma list: True when the list is closed (consumed `close`)."""
        if self.accept(close):
            return True
        self.expect(",", f"`,` or `{close}`")
        self.skip_commas()
        return self.accept(close) is not None

    def at_attribute(self) -> bool:
        """`name=` starts an attribute (keyword names such as `type=` included)."""
        tok = self.tok
        if tok.kind == IDENT:
            return self.peek().kind == "=" and tok.text == tok.value  # a quoted name is never a key
        return self.peek().kind == "=" and tok.text.isidentifier()

    # ----- spans and errors -------------------------------------------------------------------
    def span_of(self, tok: Token) -> Span:
        return Span(self.source_name, tok.line, tok.col, tok.end_line, tok.end_col, self.source_text)

    def span_from(self, start: Token) -> Span:
        end = self.last
        return Span(self.source_name, start.line, start.col, end.end_line, end.end_col, self.source_text)

    def fail(self, message: str, tok: Token | None = None):
        raise ParseError(message, self.span_of(tok or self.tok))

    # ----- scopes -----------------------------------------------------------------------------
    def push_scope(self) -> None:
        self.scopes.append({})

    def pop_scope(self) -> None:
        self.scopes.pop()

    def lookup(self, key):
        for scope in reversed(self.scopes):
            found = scope.get(key)
            if found is not None:
                return found
        return None

    def lookup_type_var(self, name: str):
        for scope in reversed(self.type_scopes):
            found = scope.get(name)
            if found is not None:
                return found
        return None
