"""Tail-call marking (LIR → LIR): `tail=True` exactly on the calls bound by Lets in tail position."""

from __future__ import annotations

import dataclasses

from ..lir import Block, Call, ClosureCall, Let, Program, Var
from ..lir.walk import replace_sub_blocks, sub_blocks
from ..relay.deep import deep_recursion

__all__ = ["mark_tail_calls"]


def _mark(block: Block, tail: bool) -> Block:
    stmts = list(block.stmts)
    last = len(stmts) - 1
    for index, stmt in enumerate(stmts):
        in_tail = tail and index == last and isinstance(block.result, Var) and block.result.name == stmt.var.name
        value = stmt.value
        if isinstance(value, (Call, ClosureCall)):
            if value.tail != in_tail:
                value = dataclasses.replace(value, tail=in_tail)
        else:
            nested = sub_blocks(value)
            if nested:
                value = replace_sub_blocks(value, [_mark(b, in_tail) for b in nested])
        if value is not stmt.value:
            stmts[index] = Let(stmt.var, value, stmt.span)
    return Block(tuple(stmts), block.result)


@deep_recursion
def mark_tail_calls(program: Program) -> Program:
    """`program` with every Call/ClosureCall in tail position (see lir.walk.tail_lets) marked, and
    every other one unmarked; the rest is unchanged."""
    functions = tuple(dataclasses.replace(f, body=_mark(f.body, True)) for f in program.functions)
    return dataclasses.replace(program, functions=functions)
