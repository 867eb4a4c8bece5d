"""ScopeBuilder: build nested let/if expressions imperatively, as tvm.relay.ScopeBuilder did."""

from __future__ import annotations

from ..errors import TranspileError
from .expr import Expr, If, Let, Var, to_expr, var
from .ty import IncompleteType, Type

__all__ = ["ScopeBuilder", "ScopeBuilderError", "WithScope"]


class ScopeBuilderError(TranspileError, RuntimeError):
    """A ScopeBuilder used out of order (TVM raised RuntimeError for these, hence the second base)."""


class WithScope:
    """The context manager a scope-opening builder method returns; closing it folds the scope."""

    def __init__(self, enter_value, on_exit):
        self._enter_value = enter_value
        self._on_exit = on_exit

    def __enter__(self):
        return self._enter_value

    def __exit__(self, exc_type, exc, traceback):
        if exc is None:
            self._on_exit()
        return False  # an exception inside the block propagates unchanged


class _PendingIf:
    """An `if` whose then-branch is closed and whose else-branch has not been given yet."""

    __slots__ = ("cond", "true_branch")

    def __init__(self, cond: Expr, true_branch: Expr):
        self.cond, self.true_branch = cond, true_branch


class _Scope:
    """One level of nesting: its let bindings in order and its result (None until `ret`)."""

    __slots__ = ("bindings", "result")

    def __init__(self):
        self.bindings: list[tuple[Var, Expr]] = []
        self.result = None


def _close(scope: _Scope, where: str) -> Expr:
    """The scope as one expression: its bindings as nested lets around its result."""
    if scope.result is None:
        raise ScopeBuilderError(f"ScopeBuilder: ret was not called in the {where}")
    if isinstance(scope.result, _PendingIf):
        raise ScopeBuilderError(f"ScopeBuilder: an if scope in the {where} has no else scope")
    body = scope.result
    for variable, value in reversed(scope.bindings):
        body = Let(variable, value, body)
    return body


class ScopeBuilder:
    """Builds `let x = v; ...; if (c) {...} else {...}` chains.

        sb = ScopeBuilder()
        t = sb.let("t", relay.add(x, y))
        with sb.if_scope(relay.less(t, limit)):
            sb.ret(t)
        with sb.else_scope():
            sb.ret(y)
        expr = sb.get()
    """

    def __init__(self):
        self._scopes = [_Scope()]

    @property
    def _current(self) -> _Scope:
        return self._scopes[-1]

    def let(self, variable, value) -> Var:
        """Bind `value` in the current scope; `variable` is a Var, a name, or (name, type). Returns the Var."""
        if isinstance(variable, (tuple, list)):
            if not 1 <= len(variable) <= 2:
                raise ScopeBuilderError(f"ScopeBuilder.let: expected a (name, type) pair, got {variable!r}")
            variable = var(*variable)
        elif isinstance(variable, str):
            variable = var(variable)
        elif not isinstance(variable, Var):
            raise ScopeBuilderError(
                f"ScopeBuilder.let: the variable must be a Var, a name or (name, type), got {type(variable).__name__}"
            )
        self._current.bindings.append((variable, to_expr(value)))
        return variable

    def if_scope(self, cond) -> WithScope:
        """Open the then-branch of an `if`; an else_scope must follow it."""
        cond = to_expr(cond)
        self._scopes.append(_Scope())

        def close_then():
            true_branch = _close(self._scopes.pop(), "if scope")
            if self._current.result is not None:
                raise ScopeBuilderError("ScopeBuilder: a result was already returned before this if scope")
            self._current.result = _PendingIf(cond, true_branch)

        return WithScope(None, close_then)

    def else_scope(self) -> WithScope:
        """Open the else-branch of the `if` just closed in this scope."""
        if not isinstance(self._current.result, _PendingIf):
            raise ScopeBuilderError("ScopeBuilder: else_scope must directly follow an if_scope")
        self._scopes.append(_Scope())

        def close_else():
            false_branch = _close(self._scopes.pop(), "else scope")
            pending = self._current.result
            self._current.result = If(pending.cond, pending.true_branch, false_branch)

        return WithScope(None, close_else)

    def type_of(self, expr) -> Type:
        """The type of `expr` as a placeholder type inference will solve (a Var's own annotation)."""
        if isinstance(expr, Var):
            return expr.type_annotation
        placeholder = IncompleteType()
        # Binding the expression to a variable of that type is what ties the placeholder to it.
        self.let(var("unify", placeholder), expr)
        return placeholder

    def ret(self, value) -> None:
        """Set the result of the current scope (once)."""
        if self._current.result is not None:
            raise ScopeBuilderError("ScopeBuilder: ret was already called in this scope")
        self._current.result = to_expr(value)

    def get(self) -> Expr:
        """The built expression; only at the outermost scope."""
        if len(self._scopes) != 1:
            raise ScopeBuilderError("ScopeBuilder: get can only be called at the outermost scope")
        return _close(self._current, "outermost scope")
