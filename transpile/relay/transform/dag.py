"""The expression DAG as the graph passes see it: operands of a node, parent counts, post-order.

Fused kernels (`Primitive=1` function literals) count as leaves: no graph pass looks inside them.
Everything is iterative, since real models are chains of hundreds of nested calls.
"""

from __future__ import annotations

from .. import expr as E
from .patterns import is_primitive

__all__ = ["children", "ReferenceCounts", "post_order"]


def children(expr) -> tuple:
    """The sub-expressions `expr` uses (binders excluded: let variables, parameters, pattern variables)."""
    kind = type(expr)
    if kind is E.Call:
        return (expr.op, *expr.args)
    if kind is E.Tuple:
        return expr.fields
    if kind is E.TupleGetItem:
        return (expr.tuple_value,)
    if kind is E.Let:
        return (expr.value, expr.body)
    if kind is E.If:
        return (expr.cond, expr.true_branch, expr.false_branch)
    if kind is E.Function:
        return () if is_primitive(expr) else (expr.body,)
    if kind is E.Match:
        return (expr.data, *(c.rhs for c in expr.clauses))
    if kind is E.RefCreate:
        return (expr.value,)
    if kind is E.RefRead:
        return (expr.ref,)
    if kind is E.RefWrite:
        return (expr.ref, expr.value)
    return ()


class ReferenceCounts:
    """How many parent edges of the live DAG point at each node (by id); the root counts as used once."""

    def __init__(self, root):
        self.count: dict[int, int] = {id(root): 1}
        seen = {id(root)}
        stack = [root]
        while stack:
            node = stack.pop()
            for child in children(node):
                key = id(child)
                self.count[key] = self.count.get(key, 0) + 1
                if key not in seen:
                    seen.add(key)
                    stack.append(child)

    def uses(self, node) -> int:
        return self.count.get(id(node), 0)

    def release(self, node) -> None:
        """Drop one edge to `node`; a node left without parents releases its own children."""
        stack = [node]
        while stack:
            current = stack.pop()
            key = id(current)
            left = self.count.get(key, 0) - 1
            self.count[key] = left
            if left == 0:
                stack.extend(children(current))


def post_order(root, operands=None) -> list:
    """Every node once, operands before their users (`operands(node)`, default: its expression children)."""
    operands = operands or children
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(operands(node)):
            if id(child) not in seen:
                stack.append((child, False))
    return order
