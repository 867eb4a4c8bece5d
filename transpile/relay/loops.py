"""Loops as recursive local functions: tvm.relay.loops.while_loop."""

from __future__ import annotations

from typing import Callable, Sequence

from ..errors import TranspileError
from .expr import Expr, Function, Let, Tuple, Var, var
from .scope_builder import ScopeBuilder

__all__ = ["while_loop", "LoopError"]


class LoopError(TranspileError, ValueError):
    """A while_loop whose body does not produce one value per loop variable."""


def while_loop(cond: Callable[..., Expr], loop_vars: Sequence[Expr], loop_bodies: Callable[..., Sequence[Expr]]) -> Expr:
    """`let %while_loop = fn (vars) { if (cond(vars)) { %while_loop(body(vars)) } else { (vars) } }; %while_loop`.

    The result is the loop function itself: call it with the initial values to get the tuple of
    final values. `loop_vars` give each loop variable its name and type (a Var's annotation, or
    the type inferred for any other expression).
    """
    builder = ScopeBuilder()
    loop = Var("while_loop")
    fresh_vars = []
    for index, loop_var in enumerate(loop_vars):
        name = loop_var.name_hint if isinstance(loop_var, Var) else f"arg{index}"
        fresh_vars.append(var(name, builder.type_of(loop_var), span=getattr(loop_var, "span", None)))

    condition = cond(*fresh_vars)
    next_values = loop_bodies(*fresh_vars)
    if isinstance(next_values, Expr) and not isinstance(next_values, Tuple):
        next_values = [next_values]
    elif isinstance(next_values, Tuple):
        next_values = list(next_values.fields)
    else:
        next_values = list(next_values)
    if len(next_values) != len(fresh_vars):
        raise LoopError(
            f"while_loop: the body returned {len(next_values)} value(s) for {len(fresh_vars)} loop variable(s)"
        )

    with builder.if_scope(condition):
        builder.ret(loop(*next_values))
    with builder.else_scope():
        builder.ret(Tuple(fresh_vars))
    return Let(loop, Function(fresh_vars, builder.get()), loop)
