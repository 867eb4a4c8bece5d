"""Which expressions may be dropped or duplicated: evaluation without observable effects.

An expression is *pure* here when evaluating it can only produce a value: operator and constructor
calls, tuples, projections, closures (making one runs nothing), control flow over pure parts, and
reading or creating references. Writing a reference is an effect; so is calling a global or a
closure, which may write references or never return, and an incomplete `match?`, which may fail. Operators are pure: the registry has no
stateful operator (no random numbers), and `STATEFUL_OPS` lists any that would be.
"""

from __future__ import annotations

from .. import expr as E

__all__ = ["STATEFUL_OPS", "is_stateful_op", "PurityAnalysis", "is_pure"]

# Operators whose result is not a function of their arguments, or that act on the world.
# TVM marks these with TOpIsStateful; none is in our registry today, names are kept for importers.
STATEFUL_OPS = frozenset({"random.threefry_generate", "random.threefry_split", "random.uniform", "random.normal"})


def is_stateful_op(name: str) -> bool:
    return name in STATEFUL_OPS or name.startswith("random.")


class PurityAnalysis:
    """Memoized purity of sub-expressions (shared DAG nodes are analysed once)."""

    def __init__(self):
        self.memo: dict[int, bool] = {}

    def __call__(self, expr) -> bool:
        key = id(expr)
        known = self.memo.get(key)
        if known is None:
            known = self.memo[key] = self._pure(expr)
        return known

    def _pure(self, expr) -> bool:
        kind = type(expr)
        if kind in (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor, E.Function):
            return True
        if kind is E.Call:
            callee = expr.op
            if type(callee) is E.Op:
                if is_stateful_op(callee.name):
                    return False
            elif type(callee) is not E.Constructor:
                return False
            return all(self(a) for a in expr.args)
        if kind is E.Tuple:
            return all(self(f) for f in expr.fields)
        if kind is E.TupleGetItem:
            return self(expr.tuple_value)
        if kind is E.Let:
            node = expr
            while type(node) is E.Let:  # iterative over long let chains
                if not self(node.value):
                    return False
                node = node.body
            return self(node)
        if kind is E.If:
            return self(expr.cond) and self(expr.true_branch) and self(expr.false_branch)
        if kind is E.Match:
            # `match?` fails at run time when no clause matches: that error must not disappear.
            return expr.complete and self(expr.data) and all(self(c.rhs) for c in expr.clauses)
        if kind is E.RefCreate:
            return self(expr.value)
        if kind is E.RefRead:
            return self(expr.ref)
        return False  # RefWrite and anything unknown


def is_pure(expr) -> bool:
    return PurityAnalysis()(expr)
