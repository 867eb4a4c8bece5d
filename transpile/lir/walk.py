"""Traversal and rewriting helpers for LIR passes: sub-blocks, atoms, statements, tail positions."""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from ..relay.deep import deep_recursion
from .nodes import (
    AdtField,
    AtomValue,
    Block,
    Call,
    Case,
    ClosureCall,
    FunctionDef,
    If,
    KernelCall,
    Let,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Program,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
)

__all__ = [
    "sub_blocks",
    "replace_sub_blocks",
    "atoms_of",
    "map_atoms",
    "iter_lets",
    "map_blocks",
    "transform_blocks",
    "map_functions",
    "tail_lets",
    "kernel_ops",
    "fresh_name",
]


def sub_blocks(value) -> tuple[Block, ...]:
    """The blocks nested directly in a value (If branches, Match case bodies then default)."""
    if isinstance(value, If):
        return (value.then, value.else_)
    if isinstance(value, Match):
        blocks = tuple(case.body for case in value.cases)
        return blocks + ((value.default,) if value.default is not None else ())
    return ()


def replace_sub_blocks(value, blocks) -> object:
    """`value` with its nested blocks replaced, in the order `sub_blocks` returns them."""
    blocks = tuple(blocks)
    if isinstance(value, If):
        then, else_ = blocks
        return If(value.cond, then, else_)
    if isinstance(value, Match):
        n = len(value.cases)
        cases = tuple(Case(c.ctor, c.binders, b) for c, b in zip(value.cases, blocks[:n]))
        default = blocks[n] if value.default is not None else None
        return Match(value.scrutinee, cases, default)
    if blocks:
        raise ValueError(f"{type(value).__name__} has no nested blocks")
    return value


_ATOM_FIELDS = {
    AtomValue: ("atom",),
    KernelCall: ("*args",),
    Call: ("*args",),
    ClosureCall: ("closure", "*args"),
    MakeClosure: ("*captured",),
    MakeTuple: ("*fields",),
    Proj: ("tuple_value",),
    MakeAdt: ("*fields",),
    AdtField: ("value",),
    RefNew: ("value",),
    RefGet: ("ref",),
    RefSet: ("ref", "value"),
    If: ("cond",),
    Match: ("scrutinee",),
}


def atoms_of(value) -> tuple:
    """The atoms a value uses directly (not those inside its nested blocks), in field order."""
    out = []
    for name in _ATOM_FIELDS.get(type(value), ()):
        if name.startswith("*"):
            out.extend(getattr(value, name[1:]))
        else:
            out.append(getattr(value, name))
    return tuple(out)


def map_atoms(value, fn: Callable) -> object:
    """`value` with each directly used atom replaced by fn(atom); nested blocks are left alone."""
    changes = {}
    for name in _ATOM_FIELDS.get(type(value), ()):
        if name.startswith("*"):
            changes[name[1:]] = tuple(fn(a) for a in getattr(value, name[1:]))
        else:
            changes[name] = fn(getattr(value, name))
    return dataclasses.replace(value, **changes) if changes else value


def iter_lets(block: Block) -> Iterator[Let]:
    """Every Let of a block and of its nested blocks, in program order (a Let before its sub-blocks)."""
    stack = [iter(block.stmts)]
    while stack:
        stmt = next(stack[-1], None)
        if stmt is None:
            stack.pop()
            continue
        yield stmt
        nested = sub_blocks(stmt.value)
        if nested:
            stack.append(s for b in nested for s in b.stmts)


def map_blocks(block: Block, fn: Callable[[Block], Block]) -> Block:
    """Rebuild bottom-up: nested blocks first, then fn(block) on the block holding them."""
    stmts = []
    for stmt in block.stmts:
        nested = sub_blocks(stmt.value)
        if nested:
            value = replace_sub_blocks(stmt.value, (map_blocks(b, fn) for b in nested))
            stmt = Let(stmt.var, value, stmt.span)
        stmts.append(stmt)
    return fn(Block(tuple(stmts), block.result))


def map_functions(program: Program, fn: Callable[[FunctionDef], FunctionDef]) -> Program:
    return dataclasses.replace(program, functions=tuple(fn(f) for f in program.functions))


@deep_recursion
def transform_blocks(program: Program, fn: Callable[[Block], Block]) -> Program:
    """Apply `fn` to every block of every function, innermost first."""
    return map_functions(program, lambda f: dataclasses.replace(f, body=map_blocks(f.body, fn)))


def _is_tail_stmt(block: Block, index: int) -> bool:
    stmt = block.stmts[index]
    result = block.result
    return index == len(block.stmts) - 1 and isinstance(result, Var) and result.name == stmt.var.name


def tail_lets(block: Block) -> Iterator[Let]:
    """The Lets in tail position of a function body `block`.

    The function body is in tail position. A block's last Let is in tail position when the block
    is and the block's result is that Let's variable. The branches of an If and the case bodies
    and default of a Match bound by a Let in tail position are in tail position. Only a `Call` or
    `ClosureCall` bound by such a Let may carry `tail=True`.
    """
    pending = [block]
    while pending:
        current = pending.pop()
        if current.stmts and _is_tail_stmt(current, len(current.stmts) - 1):
            stmt = current.stmts[-1]
            yield stmt
            pending.extend(reversed(sub_blocks(stmt.value)))


def kernel_ops(function) -> tuple[str, ...]:
    """The operator names a kernel body calls, in evaluation (post-)order, duplicates kept."""
    from ..relay.expr import Call as RelayCall
    from ..relay.expr import Op, Tuple, TupleGetItem

    names: list[str] = []
    seen: set[int] = set()
    stack = [(function.body, False)]
    while stack:
        expr, children_done = stack.pop()
        if id(expr) in seen:
            continue
        if children_done:
            seen.add(id(expr))
            if isinstance(expr, RelayCall) and isinstance(expr.op, Op):
                names.append(expr.op.name)
            continue
        stack.append((expr, True))
        if isinstance(expr, RelayCall):
            children = expr.args
        elif isinstance(expr, Tuple):
            children = expr.fields
        elif isinstance(expr, TupleGetItem):
            children = (expr.tuple_value,)
        else:
            children = ()
        stack.extend((child, False) for child in reversed(children))
    return tuple(names)


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_1`, `base_2`... whichever is not in `taken`; the result is added to `taken`."""
    name, suffix = base, 0
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    taken.add(name)
    return name
