"""ToANormalForm / ToGraphNormalForm under TVM's names: between let chains and dataflow graphs.

ToANormalForm is the compiler's own A-normal form conversion (transpile.passes.anf). ToGraphNormalForm
is TVM's GNF: every `let %v = value; body` becomes body with %v replaced by value itself (a value used
twice is one shared node), except a let whose value mentions its own variable (a recursive closure).
`graph_form(expr, inline)` does the same for only the lets whose variable `inline` accepts, which is
how FuseOps hands back the graph-form program it was given.
"""

from __future__ import annotations

from typing import Callable

from .. import expr as E
from ..analysis import free_vars
from ..deep import deep_recursion
from ..module import IRModule
from ..visitor import ExprMutator
from .infra import Pass, PassInfo

__all__ = ["ToANormalForm", "ToANormalFormExpr", "ToGraphNormalForm", "graph_form"]


def _copy_type(new, old):
    ty = getattr(old, "checked_type_", None)
    if ty is not None and new is not old:
        new._set_checked_type(ty)
        if isinstance(old, E.Call):
            object.__setattr__(new, "inferred_type_args_", getattr(old, "inferred_type_args_", ()))
    return new


class _GraphForm(ExprMutator):
    """Substitutes the values of the selected let variables for their uses; keeps every other let."""

    def __init__(self, inline: Callable[[E.Var], bool]):
        super().__init__()
        self.inline = inline
        self.value_of: dict = {}

    def visit(self, expr):
        return _copy_type(super().visit(expr), expr)

    def visit_var(self, v):
        return self.value_of.get(v, v)

    def visit_let(self, let):
        kept = []
        node = let
        while isinstance(node, E.Let):
            value = self.visit(node.value)
            if self.inline(node.var) and node.var not in free_vars(node.value):
                self.value_of[node.var] = value
            else:
                kept.append((node, value))
            node = node.body
        body = self.visit(node)
        for original, value in reversed(kept):
            if value is original.value and body is original.body:
                body = original
            else:
                body = _copy_type(E.Let(original.var, value, body, original.span), original)
        return body


@deep_recursion
def graph_form(expr: E.Expr, inline: Callable[[E.Var], bool] = lambda var: True) -> E.Expr:
    """`expr` with the lets whose variable `inline` accepts replaced by dataflow sharing."""
    return _GraphForm(inline).visit(expr)


class ToGraphNormalForm(Pass):
    """TVM's ToGraphNormalForm: let bindings become shared dataflow nodes (recursive closures stay lets)."""

    info = PassInfo(1, "ToGraphNormalForm")

    def transform_module(self, mod: IRModule) -> IRModule:
        out = mod.copy()
        for gv, func in mod.functions.items():
            if isinstance(func, E.Function):
                out.functions[gv] = graph_form(func)
        return out


class ToANormalForm(Pass):
    """TVM's ToANormalForm: every function body becomes a let chain whose values take only atoms."""

    info = PassInfo(1, "ToANormalForm")

    def transform_module(self, mod: IRModule) -> IRModule:
        from ...passes.anf import to_anf

        return to_anf(mod)


def ToANormalFormExpr(expr: E.Expr) -> E.Expr:  # noqa: N802 - TVM's name
    """TVM's ToANormalFormExpr: one expression in A-normal form."""
    from ...passes.anf import to_anf_expr

    return to_anf_expr(expr)
