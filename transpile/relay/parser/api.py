"""Public entry points: parse (modules), parse_expr (expressions), fromtext (either)."""

from __future__ import annotations

from ...errors import ParseError, SourceRegistry
from ..deep import deep_recursion
from .lexer import tokenize
from .parser import Parser

__all__ = ["parse", "parse_expr", "fromtext"]

_DEFINITION_KINDS = frozenset(["def", "type", "extern"])


def _check_source(src, source_name: str) -> None:
    if not isinstance(src, str):
        raise TypeError(f"Relay source must be a str, got {type(src).__name__}")
    SourceRegistry.add(source_name, src)


def _run(parse_method: str, src: str, source_name: str, init_module, init_meta_table):
    tokens = tokenize(src, source_name)
    parser = Parser(tokens, source_name, init_module, init_meta_table, source_text=src)
    try:
        return getattr(parser, parse_method)()
    except RecursionError:
        # Only reachable for absurd nesting even on the big-stack thread.
        raise ParseError("the program is nested too deeply to parse", parser.span_of(parser.tok)) from None


@deep_recursion
def parse(src: str, source_name: str = "from_string", init_module=None, init_meta_table=None):
    """Parse a Relay module (`def`, `type`, `extern type`; version header optional) into an IRModule.

    With `init_module`, the result is a new module holding the initial module's functions, types and
    constructors plus the new definitions, which may reference them. The caller's module is not changed.
    A trailing `#[metadata]` section (TVM's SaveJSON meta table, as `astext(show_meta_data=True)` writes
    it) provides the values of `meta[kind][i]` references. `init_meta_table` maps kinds to lists
    (`{"relay.Constant": [Constant or array, ...]}`); as in TVM, its entries follow the section's.
    """
    _check_source(src, source_name)
    return _run("parse_module_text", src, source_name, init_module, init_meta_table)


@deep_recursion
def parse_expr(src: str, source_name: str = "from_string", init_module=None, init_meta_table=None):
    """Parse a Relay expression; `free_var %x: T;` declarations may precede it. Definitions are rejected."""
    _check_source(src, source_name)
    return _run("parse_expression_text", src, source_name, init_module, init_meta_table)


def fromtext(src: str, source_name: str = "from_string", init_module=None, init_meta_table=None):
    """Like the old tvm.relay.fromtext: a module if the text has definitions, else an expression."""
    _check_source(src, source_name)
    tokens = tokenize(src, source_name)
    if any(tok.kind in _DEFINITION_KINDS for tok in tokens):
        return parse(src, source_name, init_module, init_meta_table)
    return parse_expr(src, source_name, init_module, init_meta_table)
