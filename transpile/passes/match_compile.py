"""Match compilation: nested constructor and tuple patterns become trees of one-level matches.

Input: a typed module in A-normal form (see anf.py). Output: the same, where every `Match` has
clauses of the forms `Ctor(p1, ..., pn)` with each pi a PatternVar or PatternWildcard, or a single
top-level PatternVar/PatternWildcard, and every generated Match is complete: it covers every
constructor of the type or ends with a default (`_`/`%v`) clause. Tuple patterns are replaced by
TupleGetItem projections (let-bound fresh vars); nested patterns by nested matches on the bound
sub-values.

Strategy: a decision tree per match (Maranget, "Compiling pattern matching to good decision
trees"): the clause matrix is split on the first column where the first remaining row has a
constructor or tuple pattern; each constructor present in that column gets one clause with its
specialized matrix, and a default clause takes the rows with a variable/wildcard there when not
every constructor appears. First-match-wins holds because rows keep their order in every
sub-matrix. A clause body reached on several paths of the tree is duplicated; copies after the
first get fresh binders (let vars, pattern vars, parameters) so every Var is bound once in a
function. Guard: a match whose tree would hold more than MAX_LEAVES leaves raises TranspileError.

Match failure (`match?` with no matching clause, and any path of the tree no row covers) is the
clause body `let %t = transpile.match_fail(); %t`, where
    Call(Op.get("transpile.match_fail"), [], Attrs({"message": "no clause of match at
         file:line:col matched"}), type_args=[T])
with checked_type_ T = the type of the match. The operator is deliberately not in the registry:
the LIR lowering turns it into `Fail(message)`. Type inference and the interpreter reject it
(unknown operator), so a compiled module containing it cannot be re-checked or evaluated as Relay.
"""

from __future__ import annotations

from ..errors import TranspileError
from ..relay import expr as E
from ..relay.analysis import bound_vars
from ..relay.attrs import Attrs
from ..relay.deep import deep_recursion
from ..relay.module import IRModule
from ..relay.ty import TupleType, TypeCall
from ..relay.typing.subst import substitute
from ..relay.visitor import ExprMutator
from .anf import make_let_chain

__all__ = ["compile_matches", "MATCH_FAIL_OP", "match_fail", "is_match_fail", "MAX_LEAVES"]

MATCH_FAIL_OP = "transpile.match_fail"
MAX_LEAVES = 4096


def match_fail(message: str, ty) -> E.Call:
    """The failure marker of a match no clause matches, typed `ty`."""
    call = E.Call(E.Op.get(MATCH_FAIL_OP), [], Attrs({"message": message}), [ty] if ty is not None else None)
    if ty is not None:
        call._set_checked_type(ty)
    object.__setattr__(call, "inferred_type_args_", ())
    return call


def is_match_fail(expr) -> bool:
    return isinstance(expr, E.Call) and isinstance(expr.op, E.Op) and expr.op.name == MATCH_FAIL_OP


@deep_recursion
def compile_matches(mod: IRModule) -> IRModule:
    """A copy of the ANF module `mod` with every match compiled to one-level matches."""
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.functions[gv] = _FunctionCompiler(mod).function(func)
    return out


def _typed(node, like):
    ty = getattr(like, "checked_type_", None)
    if ty is not None:
        node._set_checked_type(ty)
    return node


def _fresh_like(var: E.Var, name=None) -> E.Var:
    return _typed(E.Var(name or var.name_hint, var.type_annotation), var)


class _Copier(ExprMutator):
    """Copies a clause body: substitutes pattern variables, optionally renames every binder."""

    def __init__(self, subst, binders, fresh_nodes):
        super().__init__()
        self.subst = subst
        self.binders = binders
        self.fresh_nodes = fresh_nodes  # a second copy: share no value node with the first

    def visit(self, expr):
        result = super().visit(expr)
        if result is expr and self.fresh_nodes and not isinstance(expr, _ATOMS):
            result = _shallow_copy(expr)
            self.memo[id(expr)] = result
        if result is not expr and getattr(result, "checked_type_", None) is None:
            _typed(result, expr)
            if hasattr(expr, "inferred_type_args_"):
                object.__setattr__(result, "inferred_type_args_", expr.inferred_type_args_)
        return result

    def visit_let(self, let):
        chain = []
        node = let
        while isinstance(node, E.Let) and id(node) not in self.memo:
            chain.append((node, self.visit(node.var), self.visit(node.value)))
            node = node.body
        body = self.visit(node)
        for original, new_var, new_value in reversed(chain):
            if new_var is original.var and new_value is original.value and body is original.body:
                rebuilt = original
            else:
                rebuilt = _typed(E.Let(new_var, new_value, body, original.span), original)
            self.memo[id(original)] = rebuilt
            body = rebuilt
        return body

    def visit_var(self, v):
        found = self.subst.get(v)
        if found is not None:
            return found
        if v in self.binders:
            new = self.subst[v] = _fresh_like(v)
            return new
        return v

    def visit_pattern(self, p):
        if isinstance(p, E.PatternVar):
            new = self.visit(p.var)
            return p if new is p.var else E.PatternVar(new, p.span)
        if isinstance(p, E.PatternConstructor):
            subs = [self.visit_pattern(s) for s in p.patterns]
            return E.PatternConstructor(p.constructor, subs, p.span)
        if isinstance(p, E.PatternTuple):
            return E.PatternTuple([self.visit_pattern(s) for s in p.patterns], p.span)
        return p


class _Row:
    __slots__ = ("patterns", "subst", "clause")

    def __init__(self, patterns, subst, clause):
        self.patterns = patterns
        self.subst = subst
        self.clause = clause


class _FunctionCompiler:
    def __init__(self, mod):
        self.mod = mod
        self.counter = 0
        self.bound: set = set()  # vars already bound by generated patterns

    def fresh(self, hint, ty) -> E.Var:
        var = E.Var(f"{hint}{self.counter}")
        self.counter += 1
        if ty is not None:
            var._set_checked_type(ty)
        return var

    # ----- walking ANF -------------------------------------------------------------------------
    def function(self, func: E.Function) -> E.Function:
        body = self.body(func.body)
        if body is func.body:
            return func
        return _typed(E.Function(func.params, body, func.ret_type, func.type_params, func.attrs, func.span), func)

    def body(self, expr):
        """A body (let chain ending in an atom, or a value) with its matches compiled."""
        bindings = []
        changed = False
        node = expr
        while isinstance(node, E.Let):
            value = node.value
            if isinstance(value, E.Match):
                pre, new_value = self.match(value)
                bindings.extend(pre)
                changed = True
            else:
                new_value = self.value(value)
                changed |= new_value is not value
            bindings.append((node.var, new_value))
            node = node.body
        if isinstance(node, E.Match):
            pre, new_value = self.match(node)
            var = self.fresh("m", getattr(node, "checked_type_", None))
            bindings.extend(pre)
            bindings.append((var, new_value))
            return make_let_chain(bindings, var, expr)
        tail = self.value(node)
        if not changed and tail is node:
            return expr
        return make_let_chain(bindings, tail, expr)

    def value(self, value):
        if isinstance(value, E.If):
            then, other = self.body(value.true_branch), self.body(value.false_branch)
            if then is value.true_branch and other is value.false_branch:
                return value
            return _typed(E.If(value.cond, then, other, value.span), value)
        if isinstance(value, E.Function):
            return self.function(value)
        return value

    # ----- one match ---------------------------------------------------------------------------
    def match(self, match: E.Match):
        """(bindings, value) replacing `match`: projections to bind first, then a one-level Match."""
        clauses = [E.Clause(c.lhs, self.body(c.rhs), c.span) for c in match.clauses]
        self.leaves = 0
        self.uses: dict[int, int] = {}
        self.match_type = getattr(match, "checked_type_", None)
        span = match.span
        where = f" at {span.source_name}:{span.line}:{span.column}" if span is not None else ""
        self.fail_message = f"no clause of match{where} matched"
        rows = [_Row([c.lhs], {}, c) for c in clauses]
        bindings, tail = self.compile(rows, [match.data])
        if isinstance(tail, E.Match):
            return bindings, tail
        # the first row matches without a test: keep a one-clause match so a value remains
        wrapped = _typed(E.Match(match.data, [E.Clause(E.PatternWildcard(), tail)], True, match.span), match)
        return bindings, wrapped

    def compile(self, rows, occurrences):
        """(bindings, tail): tail is a one-level Match value or an ANF body (a leaf)."""
        if not rows:
            self.count_leaf()
            var = self.fresh("fail", self.match_type)
            return [], make_let_chain([(var, match_fail(self.fail_message, self.match_type))], var)
        rows, occurrences = self._drop_wildcard_columns(rows, occurrences)
        first = rows[0]
        column = next(
            (j for j, p in enumerate(first.patterns) if isinstance(p, (E.PatternConstructor, E.PatternTuple))), None
        )
        if column is None:
            self.count_leaf()
            subst = dict(first.subst)
            for p, occ in zip(first.patterns, occurrences):
                if isinstance(p, E.PatternVar):
                    subst[p.var] = occ
            return [], self.leaf(first.clause, subst)
        if isinstance(first.patterns[column], E.PatternTuple):
            return self.split_tuple(rows, occurrences, column)
        return [], self.split_constructor(rows, occurrences, column)

    def _drop_wildcard_columns(self, rows, occurrences):
        keep = [
            j for j in range(len(occurrences)) if any(not isinstance(r.patterns[j], E.PatternWildcard) for r in rows)
        ]
        if len(keep) == len(occurrences):
            return rows, occurrences
        rows = [_Row([r.patterns[j] for j in keep], r.subst, r.clause) for r in rows]
        return rows, [occurrences[j] for j in keep]

    def count_leaf(self):
        self.leaves += 1
        if self.leaves > MAX_LEAVES:
            raise TranspileError(
                f"match compilation: the decision tree of this match exceeds {MAX_LEAVES} leaves; "
                "split the match into smaller ones",
                None,
            )

    def leaf(self, clause, subst):
        """The clause body with pattern variables replaced by the atoms they stand for."""
        uses = self.uses.get(id(clause), 0)
        self.uses[id(clause)] = uses + 1
        subst = {v: a for v, a in subst.items() if a is not v}
        if uses == 0 and not subst:
            return clause.rhs
        binders = set(bound_vars(clause.rhs)) if uses else set()
        return _Copier(subst, binders, fresh_nodes=uses > 0).visit(clause.rhs)

    # ----- splitting a column ------------------------------------------------------------------
    def split_tuple(self, rows, occurrences, column):
        occ = occurrences[column]
        ty = getattr(occ, "checked_type_", None)
        width = len(next(r.patterns[column] for r in rows if isinstance(r.patterns[column], E.PatternTuple)).patterns)
        field_types = ty.fields if isinstance(ty, TupleType) else [None] * width
        needed = [
            any(
                isinstance(r.patterns[column], E.PatternTuple)
                and not isinstance(r.patterns[column].patterns[i], E.PatternWildcard)
                for r in rows
            )
            for i in range(width)
        ]
        bindings, fields = [], []
        for i in range(width):
            if not needed[i]:
                fields.append(occ)  # a column of wildcards only: dropped before any use
                continue
            var = self.fresh("p", field_types[i])
            proj = E.TupleGetItem(occ, i)
            if field_types[i] is not None:
                proj._set_checked_type(field_types[i])
            bindings.append((var, proj))
            fields.append(var)
        new_rows = []
        for r in rows:
            p = r.patterns[column]
            subst = r.subst
            if isinstance(p, E.PatternTuple):
                subs = list(p.patterns)
            else:
                if isinstance(p, E.PatternVar):
                    subst = {**subst, p.var: occ}
                subs = [E.PatternWildcard()] * width
            new_rows.append(_Row(r.patterns[:column] + subs + r.patterns[column + 1 :], subst, r.clause))
        occs = occurrences[:column] + fields + occurrences[column + 1 :]
        more, tail = self.compile(new_rows, occs)
        return bindings + more, tail

    def split_constructor(self, rows, occurrences, column):
        occ = occurrences[column]
        occ_type = getattr(occ, "checked_type_", None)
        first_ctor = next(
            r.patterns[column].constructor for r in rows if isinstance(r.patterns[column], E.PatternConstructor)
        )
        data = self.mod.type_definitions.get(first_ctor.belong_to)
        all_ctors = list(data.constructors) if data is not None else []
        present = {}
        for r in rows:
            p = r.patterns[column]
            if isinstance(p, E.PatternConstructor):
                present.setdefault(p.constructor.name_hint, p.constructor)
        ordered = [c for c in all_ctors if c.name_hint in present] or list(present.values())
        mapping = {}
        if data is not None and isinstance(occ_type, TypeCall):
            mapping = dict(zip(data.type_vars, occ_type.args))
        clauses = []
        for ctor in ordered:
            clauses.append(self.constructor_clause(rows, occurrences, column, ctor, mapping))
        if len(ordered) < len(all_ctors) or not all_ctors:
            default_rows = []
            binder = None
            for r in rows:
                p = r.patterns[column]
                if isinstance(p, E.PatternConstructor):
                    continue
                subst = r.subst
                if isinstance(p, E.PatternVar):
                    if binder is None and not default_rows and p.var not in self.bound:
                        binder = p.var
                        self.bound.add(binder)
                    subst = {**subst, p.var: binder if binder is not None else occ}
                default_rows.append(
                    _Row(r.patterns[:column] + [E.PatternWildcard()] + r.patterns[column + 1 :], subst, r.clause)
                )
            body = self.as_body(*self.compile(default_rows, occurrences))
            lhs = E.PatternVar(binder) if binder is not None else E.PatternWildcard()
            clauses.append(E.Clause(lhs, body))
        result = E.Match(occ, clauses, True)
        if self.match_type is not None:
            result._set_checked_type(self.match_type)
        return result

    def constructor_clause(self, rows, occurrences, column, ctor, mapping):
        arity = len(ctor.inputs)
        field_types = [substitute(t, mapping) if mapping else t for t in ctor.inputs]
        specialized = []
        for r in rows:
            p = r.patterns[column]
            if isinstance(p, E.PatternConstructor):
                if p.constructor.name_hint != ctor.name_hint:
                    continue
                subs = list(p.patterns)
                subst = r.subst
            else:
                subs = [E.PatternWildcard()] * arity
                subst = {**r.subst, p.var: occurrences[column]} if isinstance(p, E.PatternVar) else r.subst
            specialized.append(_Row(r.patterns[:column] + subs + r.patterns[column + 1 :], subst, r.clause))
        field_vars, sub_patterns = [], []
        for i in range(arity):
            at = [r.patterns[column + i] for r in specialized]
            if all(isinstance(p, E.PatternWildcard) for p in at):
                field_vars.append(None)
                sub_patterns.append(E.PatternWildcard())
                continue
            # reuse the user's variable of the first row binding this field, when still free
            first = next(p for p in at if not isinstance(p, E.PatternWildcard))
            var = first.var if isinstance(first, E.PatternVar) else None
            if var is None or var in self.bound:
                hint = var.name_hint if var is not None else ctor.name_hint.lower()
                var = self.fresh(hint, field_types[i] if not _has_type_vars(field_types[i]) else None)
            self.bound.add(var)
            field_vars.append(var)
            sub_patterns.append(E.PatternVar(var))
        occs = occurrences[:column] + [v if v is not None else occurrences[column] for v in field_vars]
        occs += occurrences[column + 1 :]
        body = self.as_body(*self.compile(specialized, occs))
        return E.Clause(E.PatternConstructor(ctor, sub_patterns), body)

    def as_body(self, bindings, tail):
        if isinstance(tail, E.Match):
            var = self.fresh("m", getattr(tail, "checked_type_", None))
            return make_let_chain([*bindings, (var, tail)], var)
        return make_let_chain(bindings, tail, tail)


_ATOMS = (E.Var, E.GlobalVar, E.Constant, E.Constructor, E.Op)


def _shallow_copy(node):
    kind = type(node)
    if kind is E.Call:
        return E.Call(node.op, node.args, node.attrs, node.type_args, node.span)
    if kind is E.Tuple:
        return E.Tuple(node.fields, node.span)
    if kind is E.TupleGetItem:
        return E.TupleGetItem(node.tuple_value, node.index, node.span)
    if kind is E.Let:
        return E.Let(node.var, node.value, node.body, node.span)
    if kind is E.If:
        return E.If(node.cond, node.true_branch, node.false_branch, node.span)
    if kind is E.Match:
        return E.Match(node.data, node.clauses, node.complete, node.span)
    if kind is E.Function:
        return E.Function(node.params, node.body, node.ret_type, node.type_params, node.attrs, node.span)
    if kind is E.RefCreate:
        return E.RefCreate(node.value, node.span)
    if kind is E.RefRead:
        return E.RefRead(node.ref, node.span)
    if kind is E.RefWrite:
        return E.RefWrite(node.ref, node.value, node.span)
    return node


def _has_type_vars(ty) -> bool:
    from ..relay.typing.subst import free_type_vars

    return bool(free_type_vars(ty))
