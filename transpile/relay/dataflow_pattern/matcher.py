"""Matching a dataflow pattern against an expression, with TVM's semantics.

A pattern node matched once is bound to that expression for the rest of the match (so a
pattern used twice must meet the very same expression twice); a failed alternative forgets the
bindings it made. `add` and `multiply` calls also match with their two arguments swapped.
"""

from __future__ import annotations

from .. import expr as E
from ..attrs import Attrs
from ..ty import TensorType
from . import patterns as P

__all__ = ["match", "PatternMatcher"]


def _types_equal(a, b) -> bool:
    from ..structural import structural_equal

    return structural_equal(a, b)


def _attr_values_equal(expected, actual) -> bool:
    if isinstance(expected, (tuple, list)) or isinstance(actual, (tuple, list)):
        if not (isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list))):
            return False
        return len(expected) == len(actual) and all(_attr_values_equal(e, a) for e, a in zip(expected, actual))
    if hasattr(expected, "span") or hasattr(actual, "span"):  # IR nodes: types, expressions
        return _types_equal(expected, actual)
    try:
        return bool(expected == actual)
    except (TypeError, ValueError):
        return False


def _type_of(expr):
    """The expression's checked type, inferring it (free variables as parameters) if not yet known."""
    ty = getattr(expr, "checked_type_", None)
    if ty is not None:
        return ty
    from ..typing import infer_type_expr

    return infer_type_expr(expr).checked_type


class PatternMatcher:
    """One matching session; `memo` maps each matched pattern node to the expression it matched."""

    def __init__(self):
        self.memo: dict[int, tuple[P.DFPattern, E.Expr]] = {}
        self._matched: list[P.DFPattern] = []

    def match(self, pattern: P.DFPattern, expr) -> bool:
        self.memo.clear()
        self._matched.clear()
        return self.visit(pattern, expr)

    def _forget_since(self, watermark: int) -> None:
        for pattern in self._matched[watermark:]:
            self.memo.pop(id(pattern), None)
        del self._matched[watermark:]

    def visit(self, pattern: P.DFPattern, expr) -> bool:
        bound = self.memo.get(id(pattern))
        if bound is not None:
            return bound[1] is expr
        watermark = len(self._matched)
        visitor = getattr(self, "visit_" + type(pattern).__name__, None)
        if visitor is None:
            raise P.DFPatternError(f"no matcher for pattern kind {type(pattern).__name__}")
        matched = visitor(pattern, expr)
        if matched:
            self.memo[id(pattern)] = (pattern, expr)
            self._matched.append(pattern)
        else:
            self._forget_since(watermark)
        return matched

    def _visit_all(self, patterns, exprs) -> bool:
        if patterns is None:
            return True
        if len(patterns) != len(exprs):
            return False
        return all(self.visit(p, e) for p, e in zip(patterns, exprs))

    # ------------------------------------------------------------------ leaves

    def visit_WildcardPattern(self, pattern, expr) -> bool:
        return True if pattern.pattern is None else self.visit(pattern.pattern, expr)

    def visit_ExprPattern(self, pattern, expr) -> bool:
        from ..structural import structural_equal

        return pattern.expr is expr or structural_equal(pattern.expr, expr)

    def visit_VarPattern(self, pattern, expr) -> bool:
        return isinstance(expr, E.Var) and (not pattern.name_hint or pattern.name_hint == expr.name_hint)

    def visit_ConstantPattern(self, pattern, expr) -> bool:
        return isinstance(expr, E.Constant)

    # ------------------------------------------------------------------ structure

    def visit_AltPattern(self, pattern, expr) -> bool:
        return self.visit(pattern.left, expr) or self.visit(pattern.right, expr)

    def visit_CallPattern(self, pattern, expr) -> bool:
        if not isinstance(expr, E.Call):
            return False
        watermark = len(self._matched)
        if not self.visit(pattern.op, expr.op):
            self._forget_since(watermark)
            return False
        after_op = len(self._matched)
        if self._visit_all(pattern.args, expr.args):
            return True
        self._forget_since(after_op)
        if _pattern_op_name(pattern) in ("add", "multiply") and pattern.args is not None:
            if self._visit_all(tuple(reversed(pattern.args)), expr.args):
                return True
            self._forget_since(after_op)
        return False

    def visit_FunctionPattern(self, pattern, expr) -> bool:
        if not isinstance(expr, E.Function):
            return False
        return self._visit_all(pattern.params, expr.params) and self.visit(pattern.body, expr.body)

    def visit_TuplePattern(self, pattern, expr) -> bool:
        return isinstance(expr, E.Tuple) and self._visit_all(pattern.fields, expr.fields)

    def visit_TupleGetItemPattern(self, pattern, expr) -> bool:
        if not isinstance(expr, E.TupleGetItem):
            return False
        return pattern.index in (-1, expr.index) and self.visit(pattern.tuple_value, expr.tuple_value)

    def visit_IfPattern(self, pattern, expr) -> bool:
        return (
            isinstance(expr, E.If)
            and self.visit(pattern.cond, expr.cond)
            and self.visit(pattern.true_branch, expr.true_branch)
            and self.visit(pattern.false_branch, expr.false_branch)
        )

    def visit_LetPattern(self, pattern, expr) -> bool:
        return (
            isinstance(expr, E.Let)
            and self.visit(pattern.var, expr.var)
            and self.visit(pattern.value, expr.value)
            and self.visit(pattern.body, expr.body)
        )

    # ------------------------------------------------------------------ types and attributes

    def visit_TypePattern(self, pattern, expr) -> bool:
        return _types_equal(pattern.type, _type_of(expr)) and self.visit(pattern.pattern, expr)

    def visit_DataTypePattern(self, pattern, expr) -> bool:
        ty = _type_of(expr)
        return isinstance(ty, TensorType) and ty.dtype == pattern.dtype and self.visit(pattern.pattern, expr)

    def visit_ShapePattern(self, pattern, expr) -> bool:
        ty = _type_of(expr)
        if not isinstance(ty, TensorType) or len(ty.shape) != len(pattern.shape):
            return False
        same = all(_attr_values_equal(e, a) for e, a in zip(pattern.shape, ty.shape))
        return same and self.visit(pattern.pattern, expr)

    def visit_AttrPattern(self, pattern, expr) -> bool:
        if not self.visit(pattern.pattern, expr):
            return False
        wanted = pattern.attrs.items()
        if isinstance(expr, E.Op):
            return all(expr.has_attr(k) and _attr_values_equal(v, expr.get_attr(k)) for k, v in wanted)
        if isinstance(expr, (E.Call, E.Function)):
            present = expr.attrs if isinstance(expr.attrs, Attrs) else Attrs()
            return all(k in present and _attr_values_equal(v, present[k]) for k, v in wanted)
        return False


def _pattern_op_name(pattern: P.CallPattern) -> str | None:
    if isinstance(pattern.op, P.ExprPattern) and isinstance(pattern.op.expr, E.Op):
        return pattern.op.expr.name
    return None


def match(pattern: P.DFPattern, expr) -> bool:
    """Whether `expr` (its root) matches `pattern`."""
    if not isinstance(pattern, P.DFPattern):
        raise P.DFPatternError(f"match: expected a pattern, got {type(pattern).__name__}")
    return PatternMatcher().match(pattern, expr)
