"""SpanCheck: TVM's debugging pass that warns about expressions carrying no source span."""

from __future__ import annotations

import warnings

from . import expr as E
from .module import IRModule
from .transform.infra import Pass, PassInfo
from .visitor import ExprVisitor

__all__ = ["SpanCheck", "MissingSpanWarning"]


class MissingSpanWarning(UserWarning):
    """An expression node without a span (TVM emitted these as diagnostic warnings)."""


class _SpanlessFinder(ExprVisitor):
    """Collects compound nodes without a span; leaves (vars, constants, ops) are exempt, as in TVM."""

    _EXEMPT = (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor)

    def __init__(self):
        super().__init__()
        self.spanless: list[E.Expr] = []

    def visit(self, expr):
        if not isinstance(expr, self._EXEMPT) and getattr(expr, "span", None) is None:
            self.spanless.append(expr)
        return super().visit(expr)


class SpanCheck(Pass):
    """Warn (MissingSpanWarning) once per function that has nodes without spans; the module is unchanged."""

    info = PassInfo(0, "SpanCheck")

    def transform_module(self, mod: IRModule) -> IRModule:
        for global_var, func in mod.functions.items():
            if not isinstance(func, E.Function):
                continue
            finder = _SpanlessFinder()
            finder.visit(func)
            if finder.spanless:
                first = type(finder.spanless[0]).__name__
                warnings.warn(
                    f"@{global_var.name_hint}: {len(finder.spanless)} expression node(s) have no span "
                    f"(the first is a {first})",
                    MissingSpanWarning,
                    stacklevel=2,
                )
        return mod
