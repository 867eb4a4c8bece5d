"""InferTypeLocal and AnnotateSpans under TVM's names: one expression's type, and spans for every node.

InferTypeLocal(expr) type-checks a standalone expression in place (its nodes get `checked_type`)
and returns its type, as TVM's did for passes that build expressions piece by piece.
AnnotateSpans prints the module and parses the text back, so every node carries a span into that
text (source name "GeneratedSource"), which later error messages point at.
"""

from __future__ import annotations

from .. import expr as E
from ..module import IRModule
from .infra import Pass, PassInfo

__all__ = ["InferTypeLocal", "AnnotateSpans"]


def InferTypeLocal(expr: E.Expr):  # noqa: N802 - TVM's name
    """The type of `expr`, inferred on the expression itself (no module needed)."""
    from ..typing import infer_type_expr

    if not isinstance(expr, E.Expr):
        raise TypeError(f"InferTypeLocal takes a Relay expression, got {type(expr).__name__}")
    return infer_type_expr(expr).checked_type


class AnnotateSpans(Pass):
    """TVM's AnnotateSpans: the module re-parsed from its own text, every node with a span."""

    info = PassInfo(0, "AnnotateSpans")

    def transform_module(self, mod: IRModule) -> IRModule:
        from ..parser import parse

        return parse(mod.astext(), source_name="GeneratedSource")
