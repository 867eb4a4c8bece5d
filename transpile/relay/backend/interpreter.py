"""TVM's `relay.backend.interpreter`: the Executor interface, the "debug" executor and its value classes.

    ex = relay.create_executor("debug", mod=mod)
    ex.evaluate()(x)                   # @main of mod, called
    ex.evaluate(func)(x)               # a closed relay.Function, called
    ex.evaluate(expr)                  # any other expression: its value
    ex.evaluate(expr, binds={v: val})  # with free variables bound to values

Every executor kind compiles with the transpile backend chosen by TRANSPILE_TVM_BACKEND when the
executor is created (see runner.py); kinds differ only in how results look.
"""

from __future__ import annotations

import numpy as np

from ...errors import TranspileError
from .runner import compile_callable, host_target, selected_backend
from .values import ADT, ConstructorValue, FunctionValue, NDArray, RefValue

__all__ = ["Executor", "Interpreter", "ConstructorValue", "RefValue", "value_to_expr"]


class Executor:
    """What every executor kind shares: `evaluate`, compiling on one transpile backend."""

    kind = "debug"

    def __init__(self, mod=None, device=None, target="llvm"):
        from ..module import IRModule

        host_target(target)
        self.mod = mod if mod is not None else IRModule()
        self.device = device
        self.target = target
        self.backend = selected_backend()

    def _make_executor(self, expr=None):
        """A callable for `expr` (None = @main, a GlobalVar or a closed Function)."""
        return compile_callable(expr, self.mod, kind=self.kind, backend=self.backend)

    def evaluate(self, expr=None, binds=None):
        """A callable for None (@main), a Function or a GlobalVar; the value of any other expression.

        `binds` ({relay.Var: value}) binds free variables of `expr` to values (arrays, numbers,
        ConstructorValue, tuples, RefValue) by `let`, as TVM did.
        """
        from ..analysis import free_vars
        from ..expr import Expr, Function, GlobalVar, Let

        if binds:
            if expr is None:
                raise TranspileError("evaluate(binds=...) needs an expression to bind the variables in")
            for var, value in binds.items():
                expr = Let(var, value_to_expr(value, self.mod), expr)
        if expr is None or isinstance(expr, (Function, GlobalVar)):
            return self._make_executor(expr)
        if not isinstance(expr, Expr):
            raise TranspileError(f"evaluate expects a relay expression, got {type(expr).__name__}")
        unbound = free_vars(expr)
        if unbound:
            names = ", ".join(f"%{v.name_hint}" for v in unbound)
            raise TranspileError(
                f"cannot evaluate an expression with free variables ({names}); pass binds={{var: value}}"
            )
        return self._make_executor(Function([], expr))()


class Interpreter(Executor):
    """The "debug" executor: ADT values come back as ConstructorValue, tuples as ADT."""

    kind = "debug"


def value_to_expr(value, mod):
    """A Relay expression evaluating to `value` (TVM's _arg_to_ast), for binding it with `let`."""
    from ..expr import Call, Constant, Expr, RefCreate, Tuple, const

    if isinstance(value, Expr):
        return value
    if isinstance(value, (NDArray, np.ndarray, np.generic)):
        return Constant(np.asarray(value))
    if isinstance(value, ConstructorValue):
        return Call(value.constructor, [value_to_expr(field, mod) for field in value.fields])
    if isinstance(value, ADT):
        fields = [value_to_expr(field, mod) for field in value]
        return Call(value.constructor, fields) if value.constructor is not None else Tuple(fields)
    if isinstance(value, tuple):
        return Tuple([value_to_expr(field, mod) for field in value])
    if isinstance(value, RefValue):
        return RefCreate(value_to_expr(value.value, mod))
    if isinstance(value, FunctionValue):
        raise TranspileError(
            "a closure returned by a program cannot be bound into an expression; pass it as an argument"
        )
    try:
        return const(value)
    except (TypeError, ValueError) as exc:
        raise TranspileError(f"cannot bind a {type(value).__name__} as a Relay value: {exc}") from None
