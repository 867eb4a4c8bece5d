"""Small analyses over expressions: free and bound variables, called globals."""

from __future__ import annotations

from . import expr as E
from .visitor import ExprVisitor

__all__ = ["free_vars", "bound_vars", "all_vars", "called_globals", "pattern_vars"]


def pattern_vars(pattern) -> list[E.Var]:
    if isinstance(pattern, E.PatternVar):
        return [pattern.var]
    if isinstance(pattern, (E.PatternConstructor, E.PatternTuple)):
        return [v for sub in pattern.patterns for v in pattern_vars(sub)]
    return []


class _VarCollector(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.bound: dict[E.Var, None] = {}
        self.used: dict[E.Var, None] = {}

    def visit_var(self, v):
        self.used.setdefault(v)

    def visit_let(self, let):
        node = let
        while isinstance(node, E.Let):
            self.bound.setdefault(node.var)
            node = node.body
        super().visit_let(let)

    def visit_function(self, f):
        for p in f.params:
            self.bound.setdefault(p)
        super().visit_function(f)

    def visit_match(self, m):
        for clause in m.clauses:
            for v in pattern_vars(clause.lhs):
                self.bound.setdefault(v)
        super().visit_match(m)


def _collect(expr) -> _VarCollector:
    collector = _VarCollector()
    collector.visit(expr)
    return collector


def free_vars(expr) -> list[E.Var]:
    """Variables used but not bound in `expr`, in order of first appearance."""
    c = _collect(expr)
    return [v for v in c.used if v not in c.bound]


def bound_vars(expr) -> list[E.Var]:
    return list(_collect(expr).bound)


def all_vars(expr) -> list[E.Var]:
    c = _collect(expr)
    return list(dict.fromkeys([*c.bound, *c.used]))


class _GlobalCollector(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.found: dict[E.GlobalVar, None] = {}

    def visit_global_var(self, gv):
        self.found.setdefault(gv)


def called_globals(expr) -> list[E.GlobalVar]:
    collector = _GlobalCollector()
    collector.visit(expr)
    return list(collector.found)
