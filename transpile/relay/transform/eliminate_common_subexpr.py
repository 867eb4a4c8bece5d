"""EliminateCommonSubexpr: one computation per distinct operator call (TVM's eliminate_common_subexpr.cc).

Two operator calls are the same when they call the same operator with equal attributes on the
same (already deduplicated) arguments; small constants compare by value. The later call becomes
the earlier one: the shared graph node, or the variable a `let` bound it to (a binding that then
just renames a variable is dropped). Operators are pure, so only scoping limits this: a call seen
inside an `if` branch, `match` clause, closure or `let` expression is reused only within it, never
after it or in a sibling, and results rewritten inside a scope are not reused outside it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import expr as E
from .effects import is_stateful_op
from .infra import FunctionPass
from .patterns import op_name
from .rewriter import Rewriter

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]

# Constants up to this many elements are compared by value; larger ones by identity.
_VALUE_COMPARED = 64


class _Scope:
    __slots__ = ("known", "memo_keys")

    def __init__(self):
        self.known: dict = {}  # call key -> the expression computing it (a node or a let variable)
        self.memo_keys: list[int] = []  # memo entries made while this scope was open


class _Eliminator(Rewriter):
    def __init__(self, fskip: Callable | None):
        super().__init__()
        self.fskip = fskip
        self.scopes = [_Scope()]

    # ----- scopes ------------------------------------------------------------------------------
    def visit(self, expr):
        key = id(expr)
        if key not in self.memo:
            result = super().visit(expr)
            self.scopes[-1].memo_keys.append(key)
            return result
        return self.memo[key]

    def _in_scope(self, visit, expr):
        self.scopes.append(_Scope())
        try:
            return visit(expr)
        finally:
            closed = self.scopes.pop()
            for key in closed.memo_keys:  # rewritten with this scope's bindings: invalid outside it
                self.memo.pop(key, None)

    def _lookup(self, key):
        for scope in reversed(self.scopes):
            found = scope.known.get(key)
            if found is not None:
                return found
        return None

    def visit_if(self, i):
        cond = self.visit(i.cond)
        true_branch = self._in_scope(self.visit, i.true_branch)
        false_branch = self._in_scope(self.visit, i.false_branch)
        if cond is i.cond and true_branch is i.true_branch and false_branch is i.false_branch:
            return i
        return E.If(cond, true_branch, false_branch, i.span)

    def visit_match(self, m):
        data = self.visit(m.data)
        clauses = []
        changed = data is not m.data
        for clause in m.clauses:
            rhs = self._in_scope(self.visit, clause.rhs)
            changed |= rhs is not clause.rhs
            clauses.append(clause if rhs is clause.rhs else E.Clause(clause.lhs, rhs, clause.span))
        return E.Match(data, clauses, m.complete, m.span) if changed else m

    def visit_function(self, f):
        return self._in_scope(super().visit_function, f)

    def visit_let(self, let):
        return self._in_scope(self._let_chain, let)

    def _let_chain(self, let):
        chain = []
        node = let
        while type(node) is E.Let:
            value = self.visit(node.value)
            if type(value) is E.Var and value is not node.value:
                self.memo[id(node.var)] = value  # `let %y = %x` after deduplication: use %x
                chain.append((node, None))
            else:
                self._bind(value, node.var)
                chain.append((node, value))
            node = node.body
        body = self.visit(node)
        for original, value in reversed(chain):
            if value is None:
                continue
            if value is not original.value or body is not original.body:
                body = E.Let(original.var, value, body, original.span)
            else:
                body = original
        return body

    def _bind(self, value, var) -> None:
        """Later equal calls in this scope read the let variable instead of recomputing."""
        key = self._key(value)
        if key is not None and self.scopes[-1].known.get(key) is value:
            self.scopes[-1].known[key] = var

    # ----- deduplication -----------------------------------------------------------------------
    def _key(self, call):
        name = op_name(call)
        if name is None or not call.args or is_stateful_op(name):
            return None
        if self.fskip is not None and self.fskip(call):
            return None
        try:
            key = (name, call.attrs, tuple(_operand_key(a) for a in call.args))
            hash(key)
        except TypeError:  # an attribute value without a hash: leave the call alone
            return None
        return key

    def rewrite_call(self, original, new):
        key = self._key(new)
        if key is None:
            return new
        found = self._lookup(key)
        if found is not None:
            return found
        self.scopes[-1].known[key] = new
        return new

    def rewrite_tuple_get_item(self, original, new):
        if type(new) is not E.TupleGetItem:
            return new
        key = ("TupleGetItem", id(new.tuple_value), new.index)
        found = self._lookup(key)
        if found is not None:
            return found
        self.scopes[-1].known[key] = new
        return new


def _operand_key(arg):
    if type(arg) is E.Constant and arg.data.size <= _VALUE_COMPARED:
        data = np.ascontiguousarray(arg.data)
        return ("Constant", data.dtype.str, data.shape, data.tobytes())
    return id(arg)


def eliminate_common_subexpr(func, mod=None, ctx=None, fskip: Callable | None = None):
    return _Eliminator(fskip).visit(func)


def EliminateCommonSubexpr(fskip: Callable | None = None):
    """TVM's EliminateCommonSubexpr pass (opt_level 3); `fskip(call)` -> True keeps a call as it is."""

    def run(func, mod, ctx):
        return eliminate_common_subexpr(func, mod, ctx, fskip)

    return FunctionPass(run, 3, "EliminateCommonSubexpr")
