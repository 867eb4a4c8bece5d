"""Parsing `match` / `match?` expressions and their patterns."""

from __future__ import annotations

from ..expr import Clause, Match, PatternConstructor, PatternTuple, PatternVar, PatternWildcard, Var
from .tokens import IDENT, LOCAL, UNDERSCORE, describe

__all__ = ["PatternParser"]


class PatternParser:
    """Mixin: `match (e) { pattern => e, ... }`; pattern variables are scoped to their clause."""

    def parse_match(self):
        start = self.advance()  # `match` or `match?`
        data = self.parse_postfix()
        self.expect("{", "`{` starting the match clauses")
        clauses = []
        if not self.accept("}"):
            while True:
                clauses.append(self.parse_clause())
                if self.list_separator("}"):
                    break
        return Match(data, clauses, complete=start.kind == "match", span=self.span_from(start))

    def parse_clause(self) -> Clause:
        start = self.tok
        self.push_scope()
        try:
            lhs = self.parse_pattern()
            self.expect("=>", "`=>` after the pattern")
            rhs = self.parse_sequence()
        finally:
            self.pop_scope()
        return Clause(lhs, rhs, span=self.span_from(start))

    def parse_pattern(self):
        tok = self.tok
        kind = tok.kind
        if kind == UNDERSCORE:
            self.advance()
            return PatternWildcard(span=self.span_of(tok))
        if kind == LOCAL:
            self.advance()
            if tok.value in self.scopes[-1]:
                self.fail(f"pattern variable {tok.text} is bound twice in the same pattern", tok)
            ty = self.parse_type() if self.accept(":") else None
            var = Var(tok.value, ty, span=self.span_of(tok))
            self.scopes[-1][tok.value] = var
            return PatternVar(var, span=self.span_from(tok))
        if kind == IDENT:
            self.advance()
            ctor = self.constructors.get(tok.value)
            if ctor is None:
                self.fail(f"unknown constructor {tok.text}", tok)
            fields = self.parse_pattern_list() if self.tok.kind == "(" else []
            return PatternConstructor(ctor, fields, span=self.span_from(tok))
        if kind == "(":
            return PatternTuple(self.parse_pattern_list(), span=self.span_from(tok))
        self.fail(f"expected a pattern (`_`, %name, a constructor or a tuple) but found {describe(tok)}")

    def parse_pattern_list(self) -> list:
        self.advance()  # `(`
        patterns = []
        if self.accept(")"):
            return patterns
        while True:
            patterns.append(self.parse_pattern())
            if self.list_separator(")"):
                return patterns
