"""Reading fused modules back: the kernels of each function, and a one-line-per-kernel debug view."""

from __future__ import annotations

from ...relay import expr as E
from ...relay.visitor import ExprVisitor

__all__ = ["kernels_of", "fusion_groups_text"]


def _op_names(function) -> tuple[str, ...]:
    """The operators of a kernel body, in evaluation order (shared nodes once)."""
    names: list[str] = []
    seen: set[int] = set()
    stack = [(function.body, False)]
    while stack:
        expr, done = stack.pop()
        if id(expr) in seen:
            continue
        if done:
            seen.add(id(expr))
            if isinstance(expr, E.Call) and isinstance(expr.op, E.Op):
                names.append(expr.op.name)
            continue
        stack.append((expr, True))
        if isinstance(expr, E.Call):
            children = expr.args
        elif isinstance(expr, E.Tuple):
            children = expr.fields
        elif isinstance(expr, E.TupleGetItem):
            children = (expr.tuple_value,)
        else:
            children = ()
        stack.extend((child, False) for child in reversed(children))
    return tuple(names)


class _KernelCalls(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.calls: list = []

    def visit_call(self, call):
        from .rewrite import is_primitive_function

        if is_primitive_function(call.op):
            self.calls.append(call)
            for arg in call.args:
                self.visit(arg)
            return
        super().visit_call(call)


def kernels_of(mod) -> list[tuple[str, tuple[str, ...], int]]:
    """(global function name, operator names, number of arguments) of every kernel call, in program order."""
    from ...relay.deep import run_deep

    def collect():
        out = []
        for gv, func in mod.functions.items():
            finder = _KernelCalls()
            finder.visit(func)
            out.extend((gv.name_hint, _op_names(call.op), len(call.args)) for call in finder.calls)
        return out

    return run_deep(collect)


def fusion_groups_text(mod) -> str:
    """`@main: fused_nn.conv2d_add_nn.relu(3 args)` lines, one per kernel call, for debugging and reports."""
    lines = [f"@{name}: fused_{'_'.join(ops)}({nargs} args)" for name, ops, nargs in kernels_of(mod)]
    return "\n".join(lines)
