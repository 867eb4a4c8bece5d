"""Types for the expressions gradient rules build, computed on the spot from the operators' type relations.

The forward graph is already typed; a rule's result is a small DAG of new calls over typed nodes.
Typing each new call as soon as it exists (as the importers' GraphBuilder does) lets the next
rule ask its gradient's shape, and gives importers typed gradients without a whole-program pass.
"""

from __future__ import annotations

from ... import expr as E
from ...op.gradients import GradientError
from ...op.registry import RelationError, get
from ...ty import TensorType, TupleType

__all__ = ["annotate_types", "type_of"]


def type_of(expr: E.Expr):
    ty = getattr(expr, "checked_type_", None)
    if ty is None and isinstance(expr, E.Var):
        ty = expr.type_annotation
    return ty


def _children(node) -> tuple:
    kind = type(node)
    if kind is E.Call:
        return node.args
    if kind is E.Tuple:
        return node.fields
    if kind is E.TupleGetItem:
        return (node.tuple_value,)
    return ()


def annotate_types(root: E.Expr, context: str) -> E.Expr:
    """Give every untyped node under `root` its type; `context` names who built them (for errors)."""
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if type_of(node) is not None:
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if type_of(child) is None)
            continue
        node._set_checked_type(_type_here(node, context))
    return root


def _type_here(node, context: str):
    kind = type(node)
    if kind is E.Constant:
        return TensorType(node.data.shape, node.data.dtype.name)
    if kind is E.Var:
        if node.type_annotation is None:
            raise GradientError(f"{context}: variable %{node.name_hint} has no type")
        return node.type_annotation
    if kind is E.Tuple:
        return TupleType([type_of(f) for f in node.fields])
    if kind is E.TupleGetItem:
        tuple_type = type_of(node.tuple_value)
        if not isinstance(tuple_type, TupleType) or not 0 <= node.index < len(tuple_type.fields):
            raise GradientError(f"{context}: field {node.index} of a value of type {tuple_type}")
        return tuple_type.fields[node.index]
    if kind is E.Call and isinstance(node.op, E.Op):
        opdef = get(node.op.name)
        try:
            return opdef.type_rel([type_of(a) for a in node.args], node.attrs)
        except RelationError as exc:
            raise GradientError(f"{context} built an ill-typed call: {exc}") from None
    raise GradientError(f"{context} built a {kind.__name__}, which first-order gradients do not use")
