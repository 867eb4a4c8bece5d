"""Lowering one Relay function body (let chains over atoms) into an LIR block tree."""

from __future__ import annotations

from collections import ChainMap

from ...errors import UnsupportedFeatureError
from ...lir import (
    AtomValue,
    Block,
    Call,
    Case,
    ClosureCall,
    Fail,
    If,
    KernelCall,
    Let,
    MakeAdt,
    MakeTuple,
    Match,
    Param,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
    fresh_name,
)
from ...lir.types import AdtT, ClosureT, RefT, TupleT, bool_scalar
from ...relay import expr as rx
from .names import sanitize
from .narrow import narrow, needs_narrowing
from .program import LoweringError, ProgramBuilder, is_primitive

__all__ = ["FunctionLowerer", "SELF", "MATCH_FAIL_OP"]

MATCH_FAIL_OP = "transpile.match_fail"


class _SelfReference:
    """Scope marker: this Relay var is the closure being lowered (a letrec self-reference)."""

    def __repr__(self):
        return "SELF"


SELF = _SelfReference()


class _PrimitiveBinding:
    """Scope entry of a let var bound to a primitive function: calls of the var are kernel calls."""

    __slots__ = ("function",)

    def __init__(self, function):
        self.function = function


def _readable(name: str) -> bool:
    return bool(name) and not name[0].isdigit()


class FunctionLowerer:
    """Lowers the body of one LIR function (a Relay global or a lifted closure).

    Relay vars map to LIR atoms by identity (`scope`); every binder gets a fresh name unique in
    the function, so code duplicated by earlier passes (sibling branches binding the same Relay
    var) still yields distinct LIR binders. Non-atomic operands (input not fully in ANF) are
    bound to temporaries, shared per enclosing block so a shared sub-expression runs once.
    """

    def __init__(self, builder: ProgramBuilder, name: str, relay_name: str):
        self.b = builder
        self.name = name
        self.relay_name = relay_name
        self.taken: set[str] = set()
        self.scope: dict = {}
        self.env: tuple = ()  # LIR vars of a closure body's env, to rebuild its own closure
        self.stmts: list | None = None
        self.memo: ChainMap = ChainMap()

    # ------------------------------------------------------------ binders and blocks

    def new_var(self, base: str, ty) -> Var:
        return Var(fresh_name(sanitize(base, "v"), self.taken), ty)

    def bind_param(self, relay_var) -> Param:
        var = self.new_var(relay_var.name_hint, self.b.type_of(relay_var))
        self.scope[relay_var] = var
        return Param(var.name, var.type)

    def emit(self, base: str, ty, value, span=None) -> Var:
        var = self.new_var(base, ty)
        self.stmts.append(Let(var, value, span))
        return var

    def block(self, expr, expected) -> Block:
        outer_stmts, outer_memo = self.stmts, self.memo
        self.stmts, self.memo = [], outer_memo.new_child()
        try:
            result = self.expr_atom(expr, expected)
            return Block(tuple(self.stmts), result)
        finally:
            self.stmts, self.memo = outer_stmts, outer_memo

    def expr_atom(self, expr, expected=None):
        while isinstance(expr, rx.Let):
            self.let(expr)
            expr = expr.body
        return self.atom(expr, expected)

    def let(self, let: rx.Let) -> None:
        from ..closure import make_closure

        var, value = let.var, let.value
        span = value.span or let.span
        ty = self.b.type_of(var)
        if isinstance(value, (rx.Var, rx.Constant, rx.GlobalVar, rx.Constructor)):
            self.scope[var] = self.atom(value, ty, var.name_hint)  # a copy: no statement of its own
            return
        if isinstance(value, rx.Function) and is_primitive(value):
            self.scope[var] = _PrimitiveBinding(value)  # no value at run time: each call is a kernel call
            return
        if isinstance(value, rx.Function):
            lir_value = make_closure(self, value, span, self_var=var)
        else:
            own = self.b.type_of(value) if getattr(value, "checked_type_", None) is not None else ty
            if needs_narrowing(own, ty):  # `let %v: Tensor[(3)] = <a Tensor[(?)] value>`
                computed = self.emit(var.name_hint, own, self.value(value, own), span)
                self.scope[var] = narrow(self, computed, ty, span)
                return
            lir_value = self.value(value, ty)
        self.scope[var] = self.emit(var.name_hint, ty, lir_value, span)

    # ------------------------------------------------------------ atoms

    def atom(self, expr, expected=None, name: str | None = None):
        """The LIR atom of a Relay expression; `name` names the statement an atom may need.
        A value with a `?` where `expected` has a size is checked at run time and cast."""
        atom = self._atom(expr, expected, name)
        if expected is not None and needs_narrowing(atom.type, expected):
            return narrow(self, atom, expected, getattr(expr, "span", None))
        return atom

    def _atom(self, expr, expected=None, name: str | None = None):
        from ..closure import constructor_value, global_closure, make_closure, self_closure

        if isinstance(expr, rx.Var):
            bound = self.scope.get(expr)
            if bound is None:
                raise LoweringError(f"%{expr.name_hint} is not bound in @{self.relay_name}", expr.span)
            if bound is SELF:
                return self.emit(name or expr.name_hint, self.b.type_of(expr), self_closure(self), expr.span)
            if isinstance(bound, _PrimitiveBinding):
                raise UnsupportedFeatureError("a primitive (fused) function used as a value", expr.span)
            return bound
        if isinstance(expr, rx.Constant):
            return self.b.constant_atom(expr)
        if isinstance(expr, rx.GlobalVar):
            value = global_closure(self, expr)
            func = self.b.signatures[value.func]
            return self.emit(name or expr.name_hint, ClosureT(*func), value, expr.span)
        if isinstance(expr, rx.Constructor):
            value, ty = constructor_value(self, expr, expected)
            return self.emit(name or expr.name_hint, ty, value, expr.span)
        if isinstance(expr, rx.Function) and not is_primitive(expr):
            ty = self.b.type_of(expr)
            return self.emit("lambda", ty, make_closure(self, expr, expr.span), expr.span)
        known = self.memo.get(id(expr))
        if known is not None:
            return known[1]
        ty = self.b.type_of(expr) if getattr(expr, "checked_type_", None) is not None else expected
        if ty is None:
            raise LoweringError(f"{type(expr).__name__} has no inferred type", expr.span)
        var = self.emit("t", ty, self.value(expr, ty), expr.span)
        self.memo[id(expr)] = (expr, var)
        return var

    def project(self, atom, path):
        for index in path:
            atom = self.emit("t", atom.type.fields[index], Proj(atom, index))
        return atom

    # ------------------------------------------------------------ values

    def value(self, expr, ty):
        """The LIR value of a Relay let value of LIR type `ty` (statements it needs are emitted first)."""
        from ..closure import make_closure

        if isinstance(expr, rx.Call):
            return self.call(expr, ty)
        if isinstance(expr, rx.Tuple):
            field_types = ty.fields if isinstance(ty, TupleT) else (None,) * len(expr.fields)
            return MakeTuple(tuple(self.atom(f, t) for f, t in zip(expr.fields, field_types)))
        if isinstance(expr, rx.TupleGetItem):
            return Proj(self.atom(expr.tuple_value), expr.index)
        if isinstance(expr, rx.If):
            cond = self.atom(expr.cond, bool_scalar())
            return If(cond, self.block(expr.true_branch, ty), self.block(expr.false_branch, ty))
        if isinstance(expr, rx.Match):
            return self.match(expr, ty)
        if isinstance(expr, rx.RefCreate):
            return RefNew(self.atom(expr.value, ty.value if isinstance(ty, RefT) else None))
        if isinstance(expr, rx.RefRead):
            return RefGet(self.atom(expr.ref))
        if isinstance(expr, rx.RefWrite):
            ref = self.atom(expr.ref)
            return RefSet(ref, self.atom(expr.value, ref.type.value if isinstance(ref.type, RefT) else None))
        if isinstance(expr, rx.Function):
            if is_primitive(expr):
                raise UnsupportedFeatureError("a primitive (fused) function used as a value", expr.span)
            return make_closure(self, expr, expr.span)
        if isinstance(expr, rx.Let):
            return AtomValue(self.expr_atom(expr, ty))
        if isinstance(expr, (rx.Var, rx.Constant, rx.GlobalVar, rx.Constructor)):
            return AtomValue(self.atom(expr, ty))
        if isinstance(expr, rx.Op):
            raise UnsupportedFeatureError(f"operator {expr.name} used as a value", expr.span)
        raise LoweringError(f"cannot lower a {type(expr).__name__}", getattr(expr, "span", None))

    def call(self, call: rx.Call, ty):
        callee = call.op
        if isinstance(callee, rx.Op):
            if callee.name == MATCH_FAIL_OP:
                return _fail(callee_call=call, ty=ty)
            if callee.definition is None:
                raise UnsupportedFeatureError(f"operator {callee.name} is not in the operator registry", call.span)
            arg_types = [a.checked_type for a in call.args]
            fn, args = self.b.kernels.wrap_op_call(call, arg_types)
            return self.kernel_call(fn, args, ty)
        if isinstance(callee, rx.Function) and is_primitive(callee):
            if _is_match_fail(callee.body):  # a failure marker wrapped like an operator call
                return _fail(callee_call=callee.body, ty=ty)
            return self.kernel_call(callee, call.args, ty)
        if isinstance(callee, rx.GlobalVar):
            kernel_fn = self.b.kernel_globals.get(callee.name_hint)
            if kernel_fn is not None:
                return self.kernel_call(kernel_fn, call.args, ty)
            name = self.b.global_names.get(callee.name_hint)
            if name is None:
                raise LoweringError(f"call of unknown global @{callee.name_hint}", call.span)
            params, _ = self.b.signatures[name]
            return Call(name, self.args(call, params))
        if isinstance(callee, rx.Constructor):
            if not isinstance(ty, AdtT):
                raise LoweringError(f"constructor {callee.name_hint} builds a value of a non-ADT type", call.span)
            ctor = self.b.adt(ty.name).constructor_of(callee.name_hint)
            if ctor is None:
                raise LoweringError(f"{ty.name} has no constructor {callee.name_hint}", call.span)
            return MakeAdt(ty.name, ctor.name, self.args(call, ctor.fields))
        if isinstance(callee, rx.Var) and self.scope.get(callee) is SELF:
            params, _ = self.b.signatures[self.name]
            return Call(self.name, self.args(call, params))  # a closure body calling itself reuses its env
        if isinstance(callee, rx.Var) and isinstance(self.scope.get(callee), _PrimitiveBinding):
            return self.call(rx.Call(self.scope[callee].function, call.args, span=call.span), ty)
        closure = self.atom(callee)
        if not isinstance(closure.type, ClosureT):
            raise LoweringError("call of a value that is not a function", call.span)
        return ClosureCall(closure, self.args(call, closure.type.params))

    def args(self, call, types):
        if len(types) != len(call.args):
            raise LoweringError(f"call passes {len(call.args)} argument(s) where {len(types)} are expected", call.span)
        return tuple(self.atom(a, t) for a, t in zip(call.args, types))

    def kernel_call(self, fn, args, ty):
        arg_atoms = [self.atom(arg) for arg in args]  # first, so kernels are numbered in evaluation order
        use = self.b.kernels.use(fn)
        if use is None:  # no operator inside: the "kernel" is plain data plumbing, inline it
            for param, atom in zip(fn.params, arg_atoms):
                self.scope[param] = atom
            outer_memo = self.memo
            self.memo = outer_memo.new_child()  # another call inlines the same nodes with other args
            try:
                return AtomValue(self.expr_atom(fn.body, ty))
            finally:
                self.memo = outer_memo
        atoms = []
        for atom, paths in zip(arg_atoms, use.paths):
            atoms.extend(self.project(atom, path) for path in paths)
        atoms.extend(use.extra)
        return KernelCall(use.kernel.name, tuple(atoms))

    # ------------------------------------------------------------ match

    def match(self, m: rx.Match, ty):
        scrutinee = self.atom(m.data)
        first = m.clauses[0].lhs if m.clauses else None
        if first is not None and _irrefutable(first):
            self.bind_pattern(first, scrutinee)
            return AtomValue(self.expr_atom(m.clauses[0].rhs, ty))
        if not isinstance(scrutinee.type, AdtT):
            raise LoweringError("match with refutable patterns on a value that is not an ADT", m.span)
        adt = self.b.adt(scrutinee.type.name)
        cases, seen, default = [], set(), None
        for clause in m.clauses:
            pattern = clause.lhs
            if _irrefutable(pattern):
                default = self.default_block(pattern, scrutinee, clause.rhs, ty)
                break
            if not isinstance(pattern, rx.PatternConstructor):
                raise LoweringError(f"unexpected {type(pattern).__name__} in a match clause", clause.span)
            ctor = adt.constructor_of(pattern.constructor.name_hint)
            if ctor is None:
                raise LoweringError(f"{adt.name} has no constructor {pattern.constructor.name_hint}", clause.span)
            if ctor.name in seen:
                continue  # an earlier clause already takes every value built by this constructor
            if not all(isinstance(p, (rx.PatternVar, rx.PatternWildcard)) for p in pattern.patterns):
                raise LoweringError(
                    "nested patterns must be compiled away before lowering (run compile_matches)", clause.span
                )
            binders = []
            for sub, field_ty in zip(pattern.patterns, ctor.fields):
                if isinstance(sub, rx.PatternVar):
                    var = self.new_var(sub.var.name_hint, field_ty)
                    self.scope[sub.var] = var
                    binders.append(var)
                else:
                    binders.append(None)
            seen.add(ctor.name)
            cases.append(Case(ctor.name, tuple(binders), self.block(clause.rhs, ty)))
        if len(seen) == len(adt.constructors):
            default = None
        elif default is None:
            missing = ", ".join(c.relay_name for c in adt.constructors if c.name not in seen)
            fail = Fail(f"match failed: no clause for {missing}", ty)
            fail_var = self.new_var("fail", ty)
            default = Block((Let(fail_var, fail, m.span),), fail_var)
        return Match(scrutinee, tuple(cases), default)

    def default_block(self, pattern, scrutinee, rhs, ty) -> Block:
        outer_stmts, outer_memo = self.stmts, self.memo
        self.stmts, self.memo = [], outer_memo.new_child()
        try:
            self.bind_pattern(pattern, scrutinee)
            result = self.expr_atom(rhs, ty)
            return Block(tuple(self.stmts), result)
        finally:
            self.stmts, self.memo = outer_stmts, outer_memo

    def bind_pattern(self, pattern, atom) -> None:
        """Bind the vars of an irrefutable pattern (var, wildcard, tuple of those) to parts of `atom`."""
        if isinstance(pattern, rx.PatternVar):
            self.scope[pattern.var] = atom
        elif isinstance(pattern, rx.PatternTuple):
            for index, sub in enumerate(pattern.patterns):
                if not isinstance(sub, rx.PatternWildcard):
                    self.bind_pattern(sub, self.emit("t", atom.type.fields[index], Proj(atom, index)))


def _is_match_fail(expr) -> bool:
    return isinstance(expr, rx.Call) and isinstance(expr.op, rx.Op) and expr.op.name == MATCH_FAIL_OP


def _fail(callee_call, ty) -> Fail:
    attrs = callee_call.attrs
    message = attrs.get("message", "match failed") if attrs is not None else "match failed"
    return Fail(str(message), ty)


def _irrefutable(pattern) -> bool:
    if isinstance(pattern, (rx.PatternWildcard, rx.PatternVar)):
        return True
    if isinstance(pattern, rx.PatternTuple):
        return all(_irrefutable(p) for p in pattern.patterns)
    return False
