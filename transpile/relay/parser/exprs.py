"""Parsing Relay expressions: sequences and bindings, operators, calls with attributes, atoms."""

from __future__ import annotations

import numpy as np

from ...errors import ParseError
from ..attrs import Attrs
from ..expr import (
    Call,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from .tokens import BOOL, FLOAT, GLOBAL, GRAPH, IDENT, INT, LOCAL, META, STRING, describe

__all__ = ["ExprParser"]

# Relay's infix sugar: (precedence, operator); all left associative, as in TVM's op table.
BINARY_OPS = {
    "*": (12, "multiply"),
    "/": (12, "divide"),
    "+": (10, "add"),
    "-": (10, "subtract"),
    "<": (8, "less"),
    "<=": (8, "less_equal"),
    ">": (8, "greater"),
    ">=": (8, "greater_equal"),
    "==": (7, "equal"),
    "!=": (7, "not_equal"),
}

_DEFINITION_KEYWORDS = {
    "def": "function definitions (`def`)",
    "type": "type definitions (`type`)",
    "extern": "extern type declarations",
}


class ExprParser:
    """Mixin: expression grammar. Needs `constructors`, `meta`, `global_refs`, `free_vars`, `op_def`."""

    # ----- sequences: `let`, `%N =`, `free_var`, `e1; e2` ----------------------------------------
    def parse_sequence(self):
        """`item (; item)*` where items are bindings, free_var declarations or expressions.

        Iterative so chains of thousands of bindings do not recurse.
        """
        frames = []  # (var or None, value, first token)
        pushed = 0
        try:
            while True:
                tok = self.tok
                kind = tok.kind
                if kind == "free_var":
                    self.parse_free_var()
                    self.expect(";", "`;` after a free_var declaration")
                    continue
                if kind == "let":
                    self.advance()
                    var, key = self.parse_let_binder()
                    self.push_scope()
                    pushed += 1
                    # Bound before its value is read, so a `let` may define a recursive closure.
                    self.scopes[-1][key] = var
                    self.expect("=", "`=` in a let binding")
                    value = self.parse_binop()
                    self.expect(";", "`;` after a let binding")
                    frames.append((var, value, tok))
                    continue
                if kind == GRAPH and self.peek().kind == "=":
                    self.advance()
                    self.advance()
                    value = self.parse_binop()
                    self.expect(";", "`;` after a graph binding")
                    self.scopes[-1][tok.value] = value
                    self.all_graph_bindings[tok.value] = value
                    continue
                expr = self.parse_binop()
                if self.accept(";"):
                    frames.append((None, expr, tok))
                    continue
                break
        finally:
            for _ in range(pushed):
                self.pop_scope()
        body = expr
        for var, value, start in reversed(frames):
            if var is None:
                var = Var("_", None, span=value.span)
            span = self.span_from(start)
            body = Let(var, value, body, span=span)
        return body

    def parse_let_binder(self):
        """The bound Var and its scope key: the name, or the number of a `%0`-style binder."""
        tok = self.tok
        if tok.kind != LOCAL and tok.kind != GRAPH:
            found = tok.text if tok.text else describe(tok)
            self.fail(f"let binder must be a local variable (%name), found {found}")
        self.advance()
        ty = self.parse_type() if self.accept(":") else None
        name = tok.value if tok.kind == LOCAL else str(tok.value)
        return Var(name, ty, span=self.span_of(tok)), tok.value

    def parse_free_var(self):
        self.advance()  # `free_var`
        tok = self.tok
        if tok.kind != LOCAL:
            self.fail(f"expected a local variable (%name) after `free_var` but found {describe(tok)}")
        self.advance()
        ty = self.parse_type() if self.accept(":") else None
        self.free_vars[tok.value] = Var(tok.value, ty, span=self.span_of(tok))

    # ----- infix operators ------------------------------------------------------------------------
    def parse_binop(self, min_prec: int = 0):
        start = self.tok
        left = self.parse_postfix()
        while True:
            entry = BINARY_OPS.get(self.tok.kind)
            if entry is None or entry[0] < min_prec:
                return left
            self.advance()
            right = self.parse_binop(entry[0] + 1)
            left = Call(
                Op.get(entry[1]), [left, right], self.op_attrs(entry[1], {}, start, {}), span=self.span_from(start)
            )

    # ----- calls and projections ------------------------------------------------------------------
    def parse_postfix(self, op_value_ok: bool = False):
        start = self.tok
        expr = self.parse_atomic()
        if isinstance(expr, Op) and self.tok.kind != "(" and not op_value_ok:
            self.fail(self._op_value_message(expr.name), start)
        while True:
            kind = self.tok.kind
            if kind == "(":
                expr = self.parse_call(expr, start)
            elif kind == ".":
                self.advance()
                index_tok = self.expect(INT, "a tuple index after `.`")
                expr = TupleGetItem(expr, index_tok.value[0], span=self.span_from(start))
            else:
                break
        if isinstance(expr, Constructor) and not expr.inputs:
            # A nullary constructor written bare denotes its value, as in TVM: `Nil` is `Nil()`.
            expr = Call(expr, [], span=self.span_from(start))
        return expr

    def parse_call(self, callee, start):
        self.advance()  # `(`
        args = []
        raw_attrs = {}
        key_tokens = {}
        if not self.accept(")"):
            while True:
                if self.at_attribute():
                    self.parse_attrs(raw_attrs, key_tokens)
                    self.expect(")", "`)` closing the call (attributes come after all arguments)")
                    break
                args.append(self.parse_sequence())
                if self.list_separator(")"):
                    break
        if isinstance(callee, Op):
            attrs = self.op_attrs(callee.name, raw_attrs, start, key_tokens)
        else:
            attrs = Attrs(raw_attrs) if raw_attrs else None
        return Call(callee, args, attrs, span=self.span_from(start))

    def _op_value_message(self, name: str) -> str:
        # Type inference rejects an operator used as a value too, but an Op is a shared node
        # without a location: say it here, where the name is.
        if self.op_def(name) is not None:
            return f"operator {name} can only be called, not used as a value"
        return (
            f"unknown name {name}: not a constructor, a type or a registered operator "
            f"(local variables are written %{name}, globals @{name}, operators are called: {name}(...))"
        )

    def op_attrs(self, name: str, raw: dict, op_tok, key_tokens: dict):
        """Registered operators get normalized attributes (defaults filled); others keep them raw."""
        opdef = self.op_def(name)
        if opdef is None:
            return Attrs(raw) if raw else None
        if not raw:
            # Attrs are immutable, so calls without attributes can share the defaults.
            cached = self.default_attrs.get(name)
            if cached is not None:
                return cached
        from ..op.registry import normalize_attrs

        try:
            attrs = normalize_attrs(opdef, raw)
            if not raw:
                self.default_attrs[name] = attrs
            return attrs
        except Exception as exc:  # converters may raise anything on a bad value
            unknown = [key for key in raw if key not in opdef.attr_names]
            tok = key_tokens.get(unknown[0]) if unknown else op_tok
            message = str(exc) if isinstance(exc, ValueError) else f"invalid attributes for operator {name}: {exc}"
            raise ParseError(message, self.span_of(tok or op_tok)) from None

    # ----- attributes -----------------------------------------------------------------------------
    def parse_attrs(self, into: dict, key_tokens: dict) -> dict:
        """`key=value` pairs separated by commas, stopping before anything that is not `name=`."""
        while self.at_attribute():
            key_tok = self.advance()
            key = key_tok.text
            if key in into:
                self.fail(f"duplicate attribute {key}", key_tok)
            self.advance()  # `=`
            into[key] = self.parse_attr_value()
            key_tokens[key] = key_tok
            if self.tok.kind != ",":
                break
            self.skip_commas()
        return into

    def parse_attr_value(self):
        tok = self.tok
        kind = tok.kind
        if kind == INT or kind == FLOAT:
            self.advance()
            value, dtype = tok.value
            return value
        if kind == BOOL or kind == STRING:
            self.advance()
            return tok.value
        if kind == META:
            self.advance()
            return self.meta.attr(tok.value[0], tok.value[1], self.span_of(tok))
        if kind == "[" or kind == "(":
            close = "]" if kind == "[" else ")"
            self.advance()
            items = []
            if self.accept(close):
                return tuple(items)
            while True:
                items.append(self.parse_attr_value())
                if kind == "(" and not items[1:] and self.accept(")"):
                    return items[0]  # `(v)` is just v, as in TVM
                if self.list_separator(close):
                    return tuple(items)
        if kind == IDENT and tok.text in ("None", "nullptr"):
            self.advance()
            return None
        return self.parse_postfix(op_value_ok=True)

    # ----- atoms ----------------------------------------------------------------------------------
    def parse_atomic(self):
        tok = self.tok
        kind = tok.kind
        if kind == LOCAL:
            self.advance()
            var = self.lookup(tok.value)
            if var is None:
                var = self.free_vars.get(tok.value)
                if var is None:
                    self.fail(f"unbound variable {tok.text}", tok)
            return var
        if kind == GRAPH:
            self.advance()
            value = self.lookup(tok.value)
            if value is None:
                # TVM kept graph bindings in one table for the whole text; accept such references.
                value = self.all_graph_bindings.get(tok.value)
                if value is None:
                    self.fail(f"unbound variable {tok.text}", tok)
            return value
        if kind == INT or kind == FLOAT or kind == BOOL:
            self.advance()
            if kind == BOOL:
                data = np.array(tok.value, dtype="bool")
            else:
                data = np.array(tok.value[0], dtype=tok.value[1])
            return Constant(data, span=self.span_of(tok))
        if kind == IDENT:
            return self.parse_name()
        if kind == GLOBAL:
            self.advance()
            self.global_refs.setdefault(tok.value, tok)
            return GlobalVar(tok.value, span=self.span_of(tok))
        if kind == "(":
            return self.parse_tuple()
        if kind == "fn":
            self.advance()
            return self.parse_function(tok)
        if kind == "if":
            return self.parse_if()
        if kind == "match" or kind == "match?":
            return self.parse_match()
        if kind == META:
            self.advance()
            return self.meta.expr(tok.value[0], tok.value[1], self.span_of(tok))
        if kind == "{":
            self.advance()
            self.push_scope()
            try:
                body = self.parse_sequence()
            finally:
                self.pop_scope()
            self.expect("}")
            return body
        if kind == "ref" or kind == "ref_read" or kind == "ref_write":
            return self.parse_ref()
        if kind in _DEFINITION_KEYWORDS:
            if self.in_module:
                self.fail(f"{_DEFINITION_KEYWORDS[kind]} must be at the top level of a module")
            self.fail(f"{_DEFINITION_KEYWORDS[kind]} are not allowed in an expression; use relay.parse for modules")
        if kind == "let":
            self.fail("a `let` cannot appear here; put parentheses around it: `(let %x = ...; body)`")
        self.fail(f"expected an expression but found {describe(tok)}")

    def parse_name(self):
        tok = self.advance()
        name = tok.value
        ctor = self.constructors.get(name)
        if ctor is not None:
            return ctor
        if name in self.type_globals:
            self.fail(f"type {tok.text} cannot be used as an expression", tok)
        if tok.text != name:  # quoted: only constructor and type names are ever quoted
            self.fail(f"unknown constructor {tok.text}", tok)
        # Any other name is an operator, registered or not (on_device, qnn.*, memory.*, ...).
        return Op.get(name)

    def parse_tuple(self):
        start = self.advance()  # `(`
        if self.accept(")"):
            return Tuple([], span=self.span_from(start))
        first = self.parse_sequence()
        if self.accept(")"):
            return first
        self.expect(",", "`,` or `)`")
        self.skip_commas()
        fields = [first]
        if not self.accept(")"):
            while True:
                fields.append(self.parse_sequence())
                if self.list_separator(")"):
                    break
        return Tuple(fields, span=self.span_from(start))

    def parse_ref(self):
        tok = self.advance()
        self.expect("(", f"`(` after `{tok.kind}`")
        first = self.parse_sequence()
        if tok.kind == "ref_write":
            self.expect(",", "`,` between the reference and the new value")
            value = self.parse_sequence()
            self.skip_commas()
            self.expect(")")
            return RefWrite(first, value, span=self.span_from(tok))
        self.skip_commas()
        self.expect(")")
        if tok.kind == "ref":
            return RefCreate(first, span=self.span_from(tok))
        return RefRead(first, span=self.span_from(tok))

    def parse_if(self):
        start = self.advance()  # `if`
        self.expect("(", "`(` around the condition of `if`")
        cond = self.parse_sequence()
        self.expect(")", "`)` closing the condition of `if`")
        true_branch = self.parse_block("`{` starting the then-branch")
        self.expect("else", "`else`")
        if self.tok.kind == "if":
            false_branch = self.parse_if()
        else:
            false_branch = self.parse_block("`{` starting the else-branch")
        return If(cond, true_branch, false_branch, span=self.span_from(start))

    def parse_block(self, expected: str):
        self.expect("{", expected)
        self.push_scope()
        try:
            body = self.parse_sequence()
        finally:
            self.pop_scope()
        self.expect("}")
        return body

    # ----- functions ------------------------------------------------------------------------------
    def parse_function(self, start) -> Function:
        """`[A, ...](%x: T, ..., attr=v) -> R { body }`, after `fn` or `def @name`."""
        self.push_scope()
        self.type_scopes.append({})
        try:
            type_params = self.parse_type_params() if self.tok.kind == "[" else []
            self.expect("(", "`(` starting the parameter list")
            params = []
            attrs = {}
            if not self.accept(")"):
                while True:
                    if self.at_attribute():
                        self.parse_attrs(attrs, {})
                        self.expect(")", "`)` closing the parameter list (attributes come after all parameters)")
                        break
                    params.append(self.parse_param())
                    if self.list_separator(")"):
                        break
            ret_type = self.parse_type() if self.accept("->") else None
            body = self.parse_block("`{` starting the function body")
        finally:
            self.pop_scope()
            self.type_scopes.pop()
        return Function(
            params, body, ret_type, type_params, Attrs(attrs) if attrs else None, span=self.span_from(start)
        )

    def parse_param(self) -> Var:
        tok = self.tok
        if tok.kind != LOCAL:
            self.fail(f"expected a parameter (%name) but found {describe(tok)}")
        self.advance()
        if tok.value in self.scopes[-1]:
            self.fail(f"duplicate parameter {tok.text}", tok)
        if self.accept("{"):
            # Parameter attributes (`%x {virtual_device=...}: T`) have no home on a Var: read and dropped.
            self.parse_attrs({}, {})
            self.expect("}", "`}` closing the parameter attributes")
        ty = self.parse_type() if self.accept(":") else None
        var = Var(tok.value, ty, span=self.span_of(tok))
        self.scopes[-1][tok.value] = var
        return var
