"""The post-order rewriting mutator the graph-level passes build on (TVM's MixedModeMutator + Rewrite_)."""

from __future__ import annotations

from .. import expr as E
from ..visitor import ExprMutator
from .patterns import is_primitive

__all__ = ["Rewriter"]


class Rewriter(ExprMutator):
    """Rebuilds bottom-up and offers each call / projection to `rewrite_call` / `rewrite_tuple_get_item`.

    The hooks receive the original node (still carrying its checked type) and the node rebuilt
    from the rewritten operands. Fused kernels (`Primitive=1` function literals) are left as they are.
    """

    def visit_call(self, call):
        return self.rewrite_call(call, super().visit_call(call))

    def visit_tuple_get_item(self, t):
        return self.rewrite_tuple_get_item(t, super().visit_tuple_get_item(t))

    def visit_function(self, f):
        if is_primitive(f):
            return f
        return super().visit_function(f)

    def rewrite_call(self, original: E.Call, new: E.Expr) -> E.Expr:
        return new

    def rewrite_tuple_get_item(self, original: E.TupleGetItem, new: E.Expr) -> E.Expr:
        return new
