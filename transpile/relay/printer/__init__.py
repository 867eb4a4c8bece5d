"""Relay text printer: modules and expressions in text format 0.0.5, as TVM's `astext()` wrote them.

`astext(obj)` prints a module (header, type definitions, `def`s, then a `#[metadata]` section holding
non-scalar constants in TVM's SaveJSON format, see metadata.py) or a standalone expression (`free_var`
declarations first); the result re-parses to a structurally equal object. As TVM's printer did, it
shows known types (`/* ty=T */`, set by type inference) and takes an `annotate` callback.
`pretty_print` is TVM's str() form (no header, no metadata section), `astext_node` the short form
used by repr(), `type_to_text` the form used in error messages.
"""

from __future__ import annotations

from ..deep import run_deep
from ..expr import Clause, Constructor, Expr, GlobalVar, Op, Pattern, TypeData, Var
from ..module import IRModule
from ..ty import Type
from .exprs import Printer, flatten
from .names import bare_name, global_name
from .types import TypePrinter

__all__ = ["astext", "pretty_print", "astext_node", "type_to_text", "VERSION_HEADER"]

VERSION_HEADER = '#[version = "0.0.5"]'

_META_OMITTED = (
    "/* For debugging purposes the metadata section has been omitted.\n"
    " * If you would like to see the full metadata section you can set the \n"
    " * option to `True` when invoking `astext`. \n"
    " */"
)


def _body_text(printer: Printer, obj, free_var_lines: bool = True) -> str:
    if isinstance(obj, IRModule):
        return printer.module(obj)
    if isinstance(obj, Expr):
        return printer.root_expr(obj, free_var_lines)
    if isinstance(obj, TypeData):
        return printer.type_data(obj)
    if isinstance(obj, Type):
        return printer.types(obj)
    if isinstance(obj, Pattern):
        return printer.pattern(obj)
    if isinstance(obj, Clause):
        pattern = printer.pattern(obj.lhs)
        return flatten([pattern, " => ", printer.braced(obj.rhs)])
    raise TypeError(f"cannot print a {type(obj).__name__} as Relay text")


def _astext(obj, show_meta_data: bool, annotate, show_types: bool, header: bool = True, warning: bool = True) -> str:
    printer = Printer(show_types=show_types, annotate=annotate, show_spans=show_types)
    body = _body_text(printer, obj)
    head = [VERSION_HEADER, "\n"] if header else []
    if not printer.meta or not (show_meta_data or warning):
        return "".join([*head, body])
    separator = "\n" if body.endswith("\n") else "\n\n"
    tail = ["#[metadata]\n", *printer.meta.section_parts()] if show_meta_data else [_META_OMITTED]
    return "".join([*head, body, separator, *tail])


def astext(obj, show_meta_data: bool = True, annotate=None, *, show_types: bool = True) -> str:
    """Relay text of a module, expression, type, pattern or type definition (with header), as tvm's astext.

    Known types are shown as `/* ty=T */` comments (with `span=` for spans a frontend or user set)
    unless `show_types=False`; an `annotate` callback (node -> str) replaces those comments with its
    own text, written as a comment after each node. Comments do not change what the text parses to.
    """
    return run_deep(_astext, obj, show_meta_data, annotate, show_types)


def pretty_print(obj) -> str:
    """tvm's str() of a module or expression: astext without header and metadata section."""
    return run_deep(_astext, obj, False, None, True, False, False)


def _short(obj) -> str:
    printer = Printer()
    text = _body_text(printer, obj, free_var_lines=False)
    if isinstance(obj, IRModule) and printer.meta:
        text += "\n" + _META_OMITTED
    return text


def astext_node(node) -> str:
    """Short text of any node for repr(): no header, no free_var lines, no metadata section."""
    if isinstance(node, Var):
        return "%" + (node.name_hint or "v")
    if isinstance(node, GlobalVar):
        return global_name(node.name_hint)
    if isinstance(node, Op):
        return node.name
    if isinstance(node, Constructor):
        return bare_name(node.name_hint)
    if isinstance(node, IRModule):
        return VERSION_HEADER + "\n" + run_deep(_short, node)
    return run_deep(_short, node)


def type_to_text(ty) -> str:
    """A type as written in Relay text (`Tensor[(1, 2), float32]`, `fn (A) -> A`), for messages."""
    try:
        return TypePrinter()(ty)
    except RecursionError:
        return run_deep(lambda: TypePrinter()(ty))
