"""Small analyses over expressions: free and bound variables and type variables, called globals."""

from __future__ import annotations

from . import expr as E
from . import ty as T
from .visitor import ExprVisitor

__all__ = [
    "free_vars",
    "bound_vars",
    "all_vars",
    "free_type_vars",
    "bound_type_vars",
    "all_type_vars",
    "called_globals",
    "pattern_vars",
]


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


class _TypeVarCollector(ExprVisitor):
    """Type variables of the types written in an expression, and those its functions bind."""

    def __init__(self):
        super().__init__()
        self.bound: dict[T.TypeVar, None] = {}
        self.used: dict[T.TypeVar, None] = {}

    def add_type(self, ty) -> None:
        if ty is None:
            return
        if isinstance(ty, T.TypeVar):
            self.used.setdefault(ty)
        elif isinstance(ty, T.TupleType):
            for field in ty.fields:
                self.add_type(field)
        elif isinstance(ty, T.FuncType):
            for param in ty.type_params:
                self.bound.setdefault(param)
            for arg in ty.arg_types:
                self.add_type(arg)
            self.add_type(ty.ret_type)
        elif isinstance(ty, T.TypeCall):
            self.add_type(ty.func)
            for arg in ty.args:
                self.add_type(arg)
        elif isinstance(ty, T.RefType):
            self.add_type(ty.value)

    def visit_var(self, v):
        self.add_type(v.type_annotation)

    def visit_let(self, let):
        node = let
        while isinstance(node, E.Let):
            self.add_type(node.var.type_annotation)
            node = node.body
        super().visit_let(let)

    def visit_function(self, f):
        for param in f.type_params:
            self.bound.setdefault(param)
        for param in f.params:
            self.add_type(param.type_annotation)
        self.add_type(f.ret_type)
        super().visit_function(f)

    def visit_call(self, call):
        for arg in call.type_args or ():
            self.add_type(arg)
        super().visit_call(call)

    def visit_match(self, m):
        for clause in m.clauses:
            for v in pattern_vars(clause.lhs):
                self.add_type(v.type_annotation)
        super().visit_match(m)


def _type_vars(expr_or_type) -> _TypeVarCollector:
    collector = _TypeVarCollector()
    if isinstance(expr_or_type, T.Type):
        collector.add_type(expr_or_type)
    else:
        collector.visit(expr_or_type)
    return collector


def free_type_vars(expr_or_type, mod=None) -> list[T.TypeVar]:
    """Type variables used in an expression or type that no enclosing function (type) binds (TVM's name).

    `mod` is accepted for TVM's signature; global definitions are not followed.
    """
    c = _type_vars(expr_or_type)
    return [tv for tv in c.used if tv not in c.bound]


def bound_type_vars(expr_or_type, mod=None) -> list[T.TypeVar]:
    """Type variables bound by the type parameters of functions (or function types) inside."""
    return list(_type_vars(expr_or_type).bound)


def all_type_vars(expr_or_type, mod=None) -> list[T.TypeVar]:
    """Bound and free type variables, bound first."""
    c = _type_vars(expr_or_type)
    return list(dict.fromkeys([*c.bound, *c.used]))
