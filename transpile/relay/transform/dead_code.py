"""DeadCodeElimination (unused pure let bindings) and RemoveUnusedFunctions (unreachable globals).

Dead bindings are found with reference counts over the expression DAG: a binding whose variable
has no use left and whose value is pure (see effects.py) is dropped, and dropping it releases the
uses inside its value, so a whole chain of dead bindings goes in one backward sweep.
"""

from __future__ import annotations

from .. import expr as E
from ..analysis import called_globals
from ..module import IRModule
from ..visitor import ExprMutator
from .dag import ReferenceCounts
from .effects import PurityAnalysis
from .infra import FunctionPass, ModulePass
from .patterns import is_primitive

__all__ = ["DeadCodeElimination", "dead_code_elimination", "RemoveUnusedFunctions", "remove_unused_functions"]


class _Eliminator(ExprMutator):
    def __init__(self, root, ignore_impurity: bool):
        super().__init__()
        self.refs = ReferenceCounts(root)
        self.pure = (lambda e: True) if ignore_impurity else PurityAnalysis()

    def visit_function(self, f):
        if is_primitive(f):
            return f
        return super().visit_function(f)

    def visit_let(self, let):
        chain = []
        node = let
        while type(node) is E.Let:
            chain.append(node)
            node = node.body
        body = self.visit(node)
        for original in reversed(chain):
            if self.refs.uses(original.var) == 0 and self.pure(original.value):
                self.refs.release(original.value)
                self.memo[id(original)] = body
                continue
            value = self.visit(original.value)
            if value is original.value and body is original.body:
                rebuilt = original
            else:
                rebuilt = E.Let(original.var, value, body, original.span)
            self.memo[id(original)] = rebuilt
            body = rebuilt
        return body


def dead_code_elimination(func, mod=None, ctx=None, ignore_impurity: bool = False):
    """`func` without its unused pure let bindings."""
    return _Eliminator(func, ignore_impurity).visit(func)


def DeadCodeElimination(inline_once: bool = False, ignore_impurity: bool = False):
    """TVM's DeadCodeElimination pass (opt_level 1). `inline_once` is not supported (kept for the signature)."""
    if inline_once:
        raise NotImplementedError("DeadCodeElimination(inline_once=True) is not implemented")

    def run(func, mod, ctx):
        return dead_code_elimination(func, mod, ctx, ignore_impurity)

    return FunctionPass(run, 1, "DeadCodeElimination")


def remove_unused_functions(mod: IRModule, entry_functions=("main",)) -> IRModule:
    """A copy of `mod` keeping only the globals reachable from `entry_functions`."""
    reachable: dict[E.GlobalVar, None] = {}
    stack = [gv for gv in mod.functions if gv.name_hint in set(entry_functions)]
    while stack:
        gv = stack.pop()
        if gv in reachable:
            continue
        reachable[gv] = None
        stack.extend(g for g in called_globals(mod.functions[gv]) if g in mod.functions)
    out = mod.copy()
    out.functions = {gv: f for gv, f in mod.functions.items() if gv in reachable}
    return out


def RemoveUnusedFunctions(entry_functions=None):
    """TVM's RemoveUnusedFunctions pass (opt_level 1): globals unreachable from the entries are dropped."""
    entries = tuple(entry_functions or ("main",))
    return ModulePass(lambda mod: remove_unused_functions(mod, entries), 1, "RemoveUnusedFunctions")
