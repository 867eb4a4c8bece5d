"""Dataflow-graph rewriting for AD: let bindings inlined into a DAG, and nodes replaced by others.

Both rebuild iteratively (A-normal-form bodies nest thousands of lets), keep every node whose
operands did not change (with its type), and refuse anything beyond dataflow, naming it.
"""

from __future__ import annotations

from ... import expr as E
from ...op.gradients import GradientError
from .typed import annotate_types

__all__ = ["inline_lets", "replace_nodes", "dataflow_operands"]


def inline_lets(body: E.Expr) -> E.Expr:
    """`body` with every let-bound variable replaced by its (shared) value."""
    env: dict[int, E.Expr] = {}
    done: dict[int, E.Expr] = {}
    stack = [(body, 0)]
    while stack:
        node, phase = stack.pop()
        key = id(node)
        if phase == 0 and key in done:
            continue
        kind = type(node)
        if kind is E.Let:
            if phase == 0:
                stack += [(node, 1), (node.value, 0)]
            elif phase == 1:
                env[id(node.var)] = done[id(node.value)]
                stack += [(node, 2), (node.body, 0)]
            else:
                done[key] = done[id(node.body)]
            continue
        if kind is E.Var:
            done[key] = env.get(key, node)
            continue
        _rebuild_step(node, phase, stack, done)
    return done[id(body)]


def replace_nodes(roots, mapping: dict) -> list:
    """`roots` with each node `n` (by identity) for which `id(n) in mapping` replaced by `mapping[id(n)]`; typed."""
    done: dict[int, E.Expr] = {}
    for root in roots:
        stack = [(root, 0)]
        while stack:
            node, phase = stack.pop()
            key = id(node)
            if phase == 0 and key in done:
                continue
            if key in mapping:
                done[key] = mapping[key]
                continue
            if type(node) is E.Var:
                done[key] = node
                continue
            _rebuild_step(node, phase, stack, done)
    return [annotate_types(done[id(root)], "replacing inputs") for root in roots]


def _rebuild_step(node, phase: int, stack: list, done: dict) -> None:
    """Visit the operands of `node` (phase 0), then rebuild it from theirs (phase 1)."""
    key = id(node)
    if type(node) in (E.Constant, E.Op):
        done[key] = node
        return
    operands = dataflow_operands(node)
    if phase == 0:
        stack.append((node, 1))
        stack.extend((child, 0) for child in operands)
        return
    rebuilt = [done[id(child)] for child in operands]
    done[key] = node if all(a is b for a, b in zip(rebuilt, operands)) else _rebuild(node, rebuilt)


def dataflow_operands(node) -> tuple:
    """The operands of a dataflow node; a GradientError naming anything else."""
    kind = type(node)
    if kind is E.Call:
        if not isinstance(node.op, E.Op):
            callee = f"@{node.op.name_hint}" if isinstance(node.op, (E.GlobalVar, E.Constructor)) else "a closure"
            raise GradientError(
                f"first-order AD differentiates operator calls only; found a call of {callee}", node.span
            )
        return node.args
    if kind is E.Tuple:
        return node.fields
    if kind is E.TupleGetItem:
        return (node.tuple_value,)
    if kind in (E.Var, E.Constant):
        return ()
    what = {
        E.Let: "a let binding (inline_lets first)",
        E.If: "an if expression",
        E.Match: "a match expression",
        E.Function: "a function literal",
        E.GlobalVar: "a global",
    }
    raise GradientError(
        f"first-order AD supports dataflow functions only; found {what.get(kind, 'a ' + kind.__name__ + ' expression')} "
        "(mode='higher_order' is for control flow, closures and references)",
        getattr(node, "span", None),
    )


def _rebuild(node, operands):
    kind = type(node)
    if kind is E.Call:
        return E.Call(node.op, operands, node.attrs, node.type_args, node.span)
    if kind is E.Tuple:
        return E.Tuple(operands, node.span)
    return E.TupleGetItem(operands[0], node.index, node.span)
