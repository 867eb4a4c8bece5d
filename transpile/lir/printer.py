"""Readable, stable text of LIR programs (`transpile emit -b lir`) and one-line statement text for messages."""

from __future__ import annotations

import json
import math

from .nodes import (
    AdtDef,
    AdtField,
    AtomValue,
    Block,
    Call,
    ClosureCall,
    ConstDef,
    ConstRef,
    Fail,
    FunctionDef,
    If,
    Kernel,
    KernelCall,
    Let,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Param,
    Program,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
)
from ..relay.deep import deep_recursion
from .types import type_text

__all__ = ["print_program", "atom_text", "value_text", "stmt_text", "literal_text", "kernel_text", "function_text"]

_INDENT = "  "


def _dtype_suffix(dtype: str) -> str:
    for prefix, short in (("uint", "u"), ("int", "i"), ("float", "f")):
        if dtype.startswith(prefix) and dtype[len(prefix) :].isdigit():
            return short + dtype[len(prefix) :]
    return ":" + dtype


def literal_text(lit: Literal) -> str:
    """`3i32`, `2u8`, `1.5f32`, `1e-05f64`, `True`: the dtype always shows, so text is unambiguous."""
    value, dtype = lit.value, getattr(lit.type, "dtype", "?")
    if dtype == "bool" or isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float) or dtype.startswith(("float", "bfloat")):
        value = float(value)
        body = repr(value) if math.isfinite(value) else str(value)
        return body + _dtype_suffix(dtype)
    return f"{value}{_dtype_suffix(dtype)}"


def atom_text(atom) -> str:
    if isinstance(atom, Var):
        return f"%{atom.name}"
    if isinstance(atom, ConstRef):
        return f"const {atom.name}"
    if isinstance(atom, Literal):
        return literal_text(atom)
    return f"<not an atom: {atom!r}>"


def _args(atoms) -> str:
    return ", ".join(atom_text(a) for a in atoms)


def _param(p: Param) -> str:
    return f"%{p.name}: {type_text(p.type)}"


def _params(params) -> str:
    return ", ".join(_param(p) for p in params)


def value_text(value, elide_blocks: bool = True) -> str:
    """One-line text of a value; the blocks of If/Match show as `{...}`."""
    if isinstance(value, AtomValue):
        return atom_text(value.atom)
    if isinstance(value, KernelCall):
        return f"kernel {value.kernel}({_args(value.args)})"
    if isinstance(value, Call):
        return f"{'tailcall' if value.tail else 'call'} @{value.func}({_args(value.args)})"
    if isinstance(value, ClosureCall):
        keyword = "tailcall_closure" if value.tail else "call_closure"
        return f"{keyword} {atom_text(value.closure)}({_args(value.args)})"
    if isinstance(value, MakeClosure):
        return f"make_closure @{value.func}({_args(value.captured)})"
    if isinstance(value, MakeTuple):
        if len(value.fields) == 1:
            return f"({atom_text(value.fields[0])},)"
        return f"({_args(value.fields)})"
    if isinstance(value, Proj):
        return f"{atom_text(value.tuple_value)}.{value.index}"
    if isinstance(value, MakeAdt):
        head = f"{value.adt}::{value.ctor}"
        return f"{head}({_args(value.fields)})" if value.fields else head
    if isinstance(value, AdtField):
        return f"field {atom_text(value.value)} as {value.ctor}.{value.index}"
    if isinstance(value, RefNew):
        return f"ref_new({atom_text(value.value)})"
    if isinstance(value, RefGet):
        return f"ref_get({atom_text(value.ref)})"
    if isinstance(value, RefSet):
        return f"ref_set({atom_text(value.ref)}, {atom_text(value.value)})"
    if isinstance(value, If):
        return f"if {atom_text(value.cond)} {{...}} else {{...}}"
    if isinstance(value, Match):
        return f"match {atom_text(value.scrutinee)} {{...}}"
    if isinstance(value, Fail):
        return f"fail {json.dumps(value.message)}"
    return f"<not a value: {value!r}>"


def _binder(var, show_types: bool) -> str:
    if var is None:
        return "_"
    if show_types:
        return f"%{var.name}: {type_text(var.type)}"
    return f"%{var.name}"


def stmt_text(stmt, show_types: bool = False) -> str:
    """One-line text of a statement (nested blocks elided), as used in verifier messages."""
    if not isinstance(stmt, Let):
        return f"<not a statement: {stmt!r}>"
    return f"{_binder(stmt.var, show_types)} = {value_text(stmt.value)}"


class _Writer:
    def __init__(self, show_types: bool, show_spans: bool):
        self.show_types = show_types
        self.show_spans = show_spans
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def block_body(self, block: Block, depth: int) -> None:
        if not isinstance(block, Block):
            self.emit(depth, f"<not a block: {block!r}>")
            return
        for stmt in block.stmts:
            self.stmt(stmt, depth)
        self.emit(depth, f"return {atom_text(block.result)}")

    def stmt(self, stmt, depth: int) -> None:
        if not isinstance(stmt, Let):
            self.emit(depth, f"<not a statement: {stmt!r}>")
            return
        head = f"{_binder(stmt.var, self.show_types)} = "
        note = f"  // {stmt.span}" if self.show_spans and stmt.span is not None else ""
        value = stmt.value
        if isinstance(value, If):
            self.emit(depth, f"{head}if {atom_text(value.cond)} {{{note}")
            self.block_body(value.then, depth + 1)
            self.emit(depth, "} else {")
            self.block_body(value.else_, depth + 1)
            self.emit(depth, "}")
        elif isinstance(value, Match):
            self.emit(depth, f"{head}match {atom_text(value.scrutinee)} {{{note}")
            for case in value.cases:
                binders = ", ".join(_binder(b, self.show_types) for b in case.binders)
                pattern = f"{case.ctor}({binders})" if case.binders else case.ctor
                self.emit(depth + 1, f"{pattern} => {{")
                self.block_body(case.body, depth + 2)
                self.emit(depth + 1, "}")
            if value.default is not None:
                self.emit(depth + 1, "_ => {")
                self.block_body(value.default, depth + 2)
                self.emit(depth + 1, "}")
            self.emit(depth, "}")
        else:
            self.emit(depth, head + value_text(value) + note)


def _adt_text(adt: AdtDef) -> str:
    ctors = []
    for ctor in adt.constructors:
        text = ctor.name
        if ctor.fields:
            text += "(" + ", ".join(type_text(t) for t in ctor.fields) + ")"
        text += f" = {ctor.tag}"
        if ctor.relay_name != ctor.name:
            text += f" as {json.dumps(ctor.relay_name)}"
        ctors.append(text)
    return f"adt {adt.name} {{ {', '.join(ctors)} }}"


def _const_text(const: ConstDef) -> str:
    size = getattr(const.value, "size", "?")
    return f"const {const.name}: {type_text(const.type)}  /* {size} value{'' if size == 1 else 's'} */"


def _relay_body_text(kernel: Kernel) -> str:
    body = getattr(kernel.body, "body", kernel.body)
    try:
        from ..relay.printer import astext_node

        return astext_node(body)
    except Exception as err:  # printing must not fail on a malformed kernel; the verifier reports it
        return f"<unprintable kernel body: {type(err).__name__}: {err}>"


def kernel_text(kernel: Kernel) -> str:
    pattern = getattr(kernel.pattern, "name", str(kernel.pattern)).lower()
    head = f"kernel {kernel.name}({_params(kernel.params)}) -> {type_text(kernel.result)} [{pattern}]"
    body = _relay_body_text(kernel)
    lines = body.splitlines()
    if len(lines) <= 1:
        return f"{head} {{ {body} }}"
    return head + " {\n" + "\n".join(_INDENT + line for line in lines) + "\n}"


def _one_line(name: str) -> str:
    """A user's name as it can sit in a `//` comment: control characters escaped (a newline would end it)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in name)


def function_text(func: FunctionDef, show_types: bool = False, show_spans: bool = False) -> str:
    writer = _Writer(show_types, show_spans)
    env = f" env({_params(func.env)})" if func.env is not None else ""
    sep = " " if env else ""
    head = f"fn @{func.name}{env}{sep}({_params(func.params)}) -> {type_text(func.ret)} {{"
    if func.relay_name and func.relay_name != func.name:
        head += f"  // from @{_one_line(func.relay_name)}"
    if show_spans and func.span is not None:
        head += f"  // {func.span}"
    writer.emit(0, head)
    writer.block_body(func.body, 1)
    writer.emit(0, "}")
    return "\n".join(writer.lines)


@deep_recursion
def print_program(program: Program, show_types: bool = False, show_spans: bool = False) -> str:
    """The whole program: entry, ADTs, constants, kernels, then functions, in definition order.

    show_types adds each binder's type; show_spans adds the Relay source position of statements.
    """
    sections = [f"entry @{program.entry}"]
    if program.adts:
        sections.append("\n".join(_adt_text(a) for a in program.adts))
    if program.constants:
        sections.append("\n".join(_const_text(c) for c in program.constants))
    if program.kernels:
        sections.append("\n".join(kernel_text(k) for k in program.kernels))
    sections.extend(function_text(f, show_types, show_spans) for f in program.functions)
    return "\n\n".join(sections) + "\n"
