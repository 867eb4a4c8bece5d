"""Typing of `match`: clause patterns against the matched value, clause bodies, exhaustiveness."""

from __future__ import annotations

from .. import expr as E
from ..ty import IncompleteType, TupleType, Type
from .exhaustive import missing_case, pattern_text
from .subst import instantiate
from .text import join, plural
from .unify import Mismatch

__all__ = ["MatchTyping"]


class MatchTyping:
    """Mixin of TypeInferencer for `match` expressions and patterns."""

    def _visit_match(self, node: E.Match) -> Type:
        data = self.infer(node.data)
        result = None
        for i, clause in enumerate(node.clauses):
            self._check_pattern(clause.lhs, data, clause)
            body = self.infer(clause.rhs)
            if result is None:
                result = body
                continue
            try:
                result = self.solver.unify(result, body)
            except Mismatch as exc:
                message = (
                    f"type mismatch: clause {i + 1} of match has type {self.show(body)} "
                    f"but the earlier clauses have type {self.show(result)}"
                )
                self.fail(join(message, self._detail(exc, result, body)), clause.rhs, clause, node)
        if node.complete:
            missing = missing_case(node.clauses, self.mod)
            if missing is not None:
                self.fail(
                    f"match is not exhaustive: no clause matches {pattern_text(missing)} "
                    "(write `match?` for a partial match)",
                    node,
                )
        return result if result is not None else IncompleteType()

    def _check_pattern(self, pattern, expected: Type, clause) -> None:
        if isinstance(pattern, E.PatternWildcard):
            return
        if isinstance(pattern, E.PatternVar):
            var = pattern.var
            annotation = self.canon(var.type_annotation, var)
            ty = expected
            if annotation is not None:
                ty = self.expect(annotation, expected, f"in the pattern variable %{var.name_hint}", var, pattern)
            self.bind_var(var, ty)
            return
        if isinstance(pattern, E.PatternConstructor):
            ctor = pattern.constructor
            generic = self.constructor_type(ctor, pattern)
            inst, _ = instantiate(generic)
            self.expect(expected, inst.ret_type, f"in the pattern {ctor.name_hint}", pattern, clause)
            if len(pattern.patterns) != len(inst.arg_types):
                n = len(inst.arg_types)
                self.fail(
                    f"constructor {ctor.name_hint} has {n} field{plural(n)} but the pattern has {len(pattern.patterns)}",
                    pattern,
                    clause,
                )
            for sub, field_type in zip(pattern.patterns, inst.arg_types):
                self._check_pattern(sub, field_type, clause)
            return
        if isinstance(pattern, E.PatternTuple):
            found = self.solver.find(expected)
            n = len(pattern.patterns)
            if isinstance(found, TupleType) and len(found.fields) == n:
                fields = found.fields
            else:
                fields = [IncompleteType() for _ in range(n)]
                self.expect(expected, TupleType(fields), "in a tuple pattern", pattern, clause)
            for sub, field_type in zip(pattern.patterns, fields):
                self._check_pattern(sub, field_type, clause)
            return
        self.fail(f"unknown pattern kind {type(pattern).__name__}", pattern, clause)
