"""Monomorphization: one copy of every polymorphic function per type instantiation it is used at.

Input: a type-checked module (`checked_type_` on every node, `inferred_type_args_` on calls).
Output: a new module holding only the functions reachable from `entry`, in discovery order
(entry first), none with type parameters:
- a polymorphic global @f used at type arguments T1..Tn becomes `@f__<T1>__...__<Tn>` (see
  `type_name`: `map__int32__int32`, `length__List_float32_2x2`, `id__fn_int32_to_int32`); a name
  taken by another function gets a `_1`, `_2`... suffix. Names are deterministic.
- calls and value uses (`@map(@id, ...)`, `let %f = @id`) of a polymorphic global are redirected
  to the specialization for their instance type; call type arguments are dropped.
- a let-bound polymorphic function literal (`let %f = fn [A](%x: A) { ... }`) gets one let
  binding per instantiation used in the let body (`%f__int32`, ...); an unused one is dropped. A
  local polymorphic function that calls itself at another type raises TranspileError. Any other
  polymorphic function literal (a graph binding `%0 = fn [A] ...` passed as an argument) is
  copied, specialized, at each use.
- in specialized bodies every type is substituted: parameter annotations, return types, let and
  pattern variable annotations, `checked_type_` of every node, `inferred_type_args_` of
  constructor calls. Specialized bodies get fresh Vars; monomorphic functions that refer to no
  polymorphic function are kept as they are.
- ADT definitions are kept, polymorphic; their uses carry concrete TypeCall arguments.
Polymorphic recursion whose instantiations grow without bound raises TranspileError once a type
argument nests deeper than MAX_TYPE_DEPTH or a function gets more than MAX_INSTANCES copies.
"""

from __future__ import annotations

import re

from ..errors import TranspileError
from ..relay import expr as E
from ..relay.deep import deep_recursion
from ..relay.module import IRModule
from ..relay.ty import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from ..relay.typing.subst import substitute
from ..relay.visitor import ExprVisitor

__all__ = ["monomorphize", "type_name", "MAX_TYPE_DEPTH", "MAX_INSTANCES"]

MAX_TYPE_DEPTH = 16
MAX_INSTANCES = 256


def type_name(ty) -> str:
    """A readable identifier fragment for a type (injective enough; collisions get suffixes)."""
    if isinstance(ty, TensorType):
        if not ty.shape:
            return ty.dtype
        dims = "x".join("any" if isinstance(d, AnyDim) else str(d) for d in ty.shape)
        return f"{ty.dtype}_{dims}"
    if isinstance(ty, TupleType):
        if not ty.fields:
            return "unit"
        return "tuple_" + "_".join(type_name(f) for f in ty.fields) + "_end"
    if isinstance(ty, TypeCall):
        head = type_name(ty.func)
        return head + "".join("_" + type_name(a) for a in ty.args)
    if isinstance(ty, GlobalTypeVar):
        return _sanitize(ty.name_hint)
    if isinstance(ty, FuncType):
        return "fn_" + "_".join(type_name(a) for a in ty.arg_types) + "_to_" + type_name(ty.ret_type)
    if isinstance(ty, RefType):
        return "ref_" + type_name(ty.value)
    if isinstance(ty, TypeVar):
        return _sanitize(ty.name_hint)
    return "t"


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "t"


def _depth(ty, memo=None) -> int:
    """Nesting depth of a type (memoized: instantiations may share sub-types exponentially)."""
    memo = {} if memo is None else memo
    known = memo.get(id(ty))
    if known is not None:
        return known
    if isinstance(ty, TupleType):
        parts = ty.fields
    elif isinstance(ty, TypeCall):
        parts = ty.args
    elif isinstance(ty, FuncType):
        parts = (*ty.arg_types, ty.ret_type)
    elif isinstance(ty, RefType):
        parts = (ty.value,)
    else:
        return 0
    depth = 1 + max((_depth(p, memo) for p in parts), default=0)
    memo[id(ty)] = depth
    return depth


def _key(types) -> tuple:
    """A hashable, structural key for a tuple of closed types (TypeVar identity included)."""
    return tuple(_type_key(t) for t in types)


def _type_key(ty):
    if isinstance(ty, TensorType):
        return ("T", ty.shape, ty.dtype)
    if isinstance(ty, TupleType):
        return ("U",) + tuple(_type_key(f) for f in ty.fields)
    if isinstance(ty, TypeCall):
        return ("C", _type_key(ty.func)) + tuple(_type_key(a) for a in ty.args)
    if isinstance(ty, GlobalTypeVar):
        return ("G", ty.name_hint)
    if isinstance(ty, FuncType):
        return ("F", tuple(_type_key(a) for a in ty.arg_types), _type_key(ty.ret_type), len(ty.type_params))
    if isinstance(ty, RefType):
        return ("R", _type_key(ty.value))
    return ("V", id(ty))


def _match_types(pattern, concrete, mapping) -> None:
    """Binds the TypeVars of `pattern` (a generic type) from `concrete` (an instance of it)."""
    if isinstance(pattern, TypeVar):
        mapping.setdefault(pattern, concrete)
    elif isinstance(pattern, TupleType) and isinstance(concrete, TupleType):
        for p, c in zip(pattern.fields, concrete.fields):
            _match_types(p, c, mapping)
    elif isinstance(pattern, FuncType) and isinstance(concrete, FuncType):
        for p, c in zip(pattern.arg_types, concrete.arg_types):
            _match_types(p, c, mapping)
        _match_types(pattern.ret_type, concrete.ret_type, mapping)
    elif isinstance(pattern, TypeCall) and isinstance(concrete, TypeCall):
        for p, c in zip(pattern.args, concrete.args):
            _match_types(p, c, mapping)
    elif isinstance(pattern, RefType) and isinstance(concrete, RefType):
        _match_types(pattern.value, concrete.value, mapping)


def _is_poly_function(value) -> bool:
    return isinstance(value, E.Function) and bool(value.type_params)


class _NeedsRewrite(ExprVisitor):
    """Does a monomorphic function refer to a polymorphic global or hold a polymorphic local?"""

    def __init__(self, poly_globals):
        super().__init__()
        self.poly_globals = poly_globals
        self.found = False
        self.globals: dict = {}

    def visit_global_var(self, gv):
        self.globals.setdefault(gv.name_hint)
        if gv.name_hint in self.poly_globals:
            self.found = True

    def visit_function(self, f):
        if f.type_params:
            self.found = True
        super().visit_function(f)


@deep_recursion
def monomorphize(mod: IRModule, entry: str = "main") -> IRModule:
    """The module of functions reachable from `entry`, every polymorphic one specialized per use."""
    return _Monomorphizer(mod).run(entry)


class _Monomorphizer:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.functions = {gv.name_hint: func for gv, func in mod.functions.items()}
        self.poly = {name for name, f in self.functions.items() if f.type_params}
        self.taken = set(self.functions)
        self.instances: dict[tuple, E.GlobalVar] = {}  # (name, type key) -> GlobalVar
        self.counts: dict[str, int] = {}
        self.queue: list = []
        self.out_order: list = []

    def run(self, entry: str) -> IRModule:
        if entry not in self.functions:
            raise TranspileError(f"monomorphize: the module has no function @{entry}")
        if self.functions[entry].type_params:
            raise TranspileError(
                f"monomorphize: the entry function @{entry} is polymorphic; " "give its type parameters concrete types",
                self.functions[entry].span,
            )
        self.global_ref(entry, ())
        results = {}
        while self.queue:
            name, args, gv = self.queue.pop(0)
            results[gv.name_hint] = (gv, self.specialize(name, args, gv))
        out = IRModule()
        out.type_definitions = dict(self.mod.type_definitions)
        out._constructors = dict(self.mod._constructors)
        out.extern_types = dict(self.mod.extern_types)
        out.attrs = dict(self.mod.attrs)
        for gv in self.out_order:
            key_gv, func = results[gv.name_hint]
            out.functions[key_gv] = func
        return out

    # ----- globals -----------------------------------------------------------------------------
    def global_ref(self, name: str, args: tuple) -> E.GlobalVar:
        """The GlobalVar naming @name at type arguments `args` (queued for specialization)."""
        func = self.functions[name]
        if args and any(_depth(a) > MAX_TYPE_DEPTH for a in args):
            raise TranspileError(
                f"monomorphize: @{name} is instantiated at ever larger types (polymorphic recursion): "
                f"a type argument nests more than {MAX_TYPE_DEPTH} levels deep; it cannot be specialized",
                func.span,
            )
        key = (name, _key(args))
        gv = self.instances.get(key)
        if gv is not None:
            return gv
        if args:
            count = self.counts.get(name, 0) + 1
            self.counts[name] = count
            if count > MAX_INSTANCES:
                raise TranspileError(
                    f"monomorphize: @{name} is instantiated at more than {MAX_INSTANCES} types "
                    "(polymorphic recursion?); it cannot be specialized",
                    func.span,
                )
            new_name = self.unique("__".join([name, *(type_name(a) for a in args)]))
        else:
            new_name = name
        gv = E.GlobalVar(new_name)
        if args:
            mapping = dict(zip(func.type_params, args))
            gv._set_checked_type(self.func_type(func, mapping))
        else:
            original = next(g for g in self.mod.functions if g.name_hint == name)
            ty = getattr(original, "checked_type_", None) or getattr(func, "checked_type_", None)
            if ty is not None:
                gv._set_checked_type(ty)
        self.instances[key] = gv
        self.queue.append((name, args, gv))
        self.out_order.append(gv)
        return gv

    def unique(self, name: str) -> str:
        candidate, n = name, 0
        while candidate in self.taken:
            n += 1
            candidate = f"{name}_{n}"
        self.taken.add(candidate)
        return candidate

    @staticmethod
    def func_type(func, mapping) -> FuncType:
        ty = func.checked_type
        return FuncType(
            [substitute(a, mapping) for a in ty.arg_types], substitute(ty.ret_type, mapping), (), ty.type_constraints
        )

    def specialize(self, name, args, gv) -> E.Function:
        func = self.functions[name]
        if not args:
            scan = _NeedsRewrite(self.poly)
            scan.visit(func)
            if not scan.found:
                for callee in scan.globals:
                    if callee in self.functions:
                        self.global_ref(callee, ())
                return func
        mapping = dict(zip(func.type_params, args))
        rewriter = _Rewriter(self, mapping)
        return rewriter.function(func, drop_type_params=True)


class _LocalPoly:
    """A let-bound polymorphic function and the instantiations its scope uses."""

    __slots__ = ("var", "func", "mapping", "instances", "pending", "active")

    def __init__(self, var, func, mapping):
        self.var = var
        self.func = func
        self.mapping = mapping
        self.instances: dict[tuple, E.Var] = {}
        self.pending: list = []
        self.active = None  # the instantiation key being specialized


class _Rewriter:
    """Copies expressions under a type substitution, redirecting polymorphic references."""

    def __init__(self, mono: _Monomorphizer, mapping):
        self.mono = mono
        self.mapping = dict(mapping)
        self.vars: dict = {}  # old Var -> new Var
        self.locals: dict = {}  # old Var -> _LocalPoly
        self.memo: dict[int, E.Expr] = {}
        self.type_memo: dict[int, object] = {}

    # ----- types -------------------------------------------------------------------------------
    def ty(self, ty):
        if ty is None or not self.mapping:
            return ty
        cached = self.type_memo.get(id(ty))
        if cached is None:
            cached = self.type_memo[id(ty)] = (ty, substitute(ty, self.mapping))
        elif cached[0] is not ty:
            cached = self.type_memo[id(ty)] = (ty, substitute(ty, self.mapping))
        return cached[1]

    def typed(self, new, old):
        ty = getattr(old, "checked_type_", None)
        if ty is not None:
            new._set_checked_type(self.ty(ty))
        return new

    def bind(self, var: E.Var) -> E.Var:
        new = E.Var(var.name_hint, self.ty(var.type_annotation), var.span)
        self.typed(new, var)
        self.vars[var] = new
        return new

    # ----- expressions -------------------------------------------------------------------------
    def function(self, func: E.Function, drop_type_params=False) -> E.Function:
        if func.type_params and not drop_type_params:
            raise TranspileError(
                "monomorphize: a polymorphic function literal must be bound by `let` to be specialized", func.span
            )
        params = [self.bind(p) for p in func.params]
        fn_type = getattr(func, "checked_type_", None)
        body = self.expr(func.body, self.ty(fn_type.ret_type) if isinstance(fn_type, FuncType) else None)
        new = E.Function(params, body, self.ty(func.ret_type), (), func.attrs, func.span)
        ty = getattr(func, "checked_type_", None)
        if isinstance(ty, FuncType):
            new._set_checked_type(
                FuncType([self.ty(a) for a in ty.arg_types], self.ty(ty.ret_type), (), ty.type_constraints)
            )
        return new

    def expr(self, node, expected=None):
        """The rewritten `node`; `expected` is its instance type where a generic global may appear."""
        kind = type(node)
        if kind is E.GlobalVar:
            return self.global_value(node, expected)
        if kind is E.Var:
            local = self.locals.get(node)
            if local is not None:
                return self.local_instance(local, None, expected if expected is not None else node, node)
            return self.vars.get(node, node)
        if kind in (E.Constant, E.Op, E.Constructor):
            return node
        if kind is E.Function and node.type_params:
            return self.poly_literal(node, None, expected)
        key = id(node)
        done = self.memo.get(key)
        if done is not None:
            return done
        new = getattr(self, "_" + kind.__name__)(node)
        self.memo[key] = new
        return new

    def global_value(self, gv, expected):
        name = gv.name_hint
        if name not in self.mono.functions:
            return gv
        if name not in self.mono.poly:
            return self.mono.global_ref(name, ())
        func = self.mono.functions[name]
        if expected is None:
            raise TranspileError(f"monomorphize: cannot tell at which types @{name} is used here", gv.span)
        mapping = {}
        _match_types(func.checked_type, expected, mapping)
        return self.mono.global_ref(name, tuple(mapping.get(p, _unit()) for p in func.type_params))

    def _Call(self, call):
        op = call.op
        type_args = tuple(self.ty(t) for t in getattr(call, "inferred_type_args_", ()) or ())
        drop_type_args = False
        if isinstance(op, E.GlobalVar) and op.name_hint in self.mono.poly:
            new_op = self.mono.global_ref(op.name_hint, type_args)
            callee_type = new_op.checked_type
            drop_type_args = True
        elif isinstance(op, E.Var) and op in self.locals:
            new_op = self.local_instance(self.locals[op], type_args, None, op)
            callee_type = new_op.checked_type
            drop_type_args = True
        elif isinstance(op, E.Function) and op.type_params:
            new_op = self.poly_literal(op, type_args, None)
            callee_type = new_op.checked_type
            drop_type_args = True
        elif isinstance(op, E.Constructor):
            new_op = op
            callee_type = None
        else:
            new_op = self.expr(op)
            callee_type = getattr(new_op, "checked_type_", None)
        arg_types = callee_type.arg_types if isinstance(callee_type, FuncType) else [None] * len(call.args)
        if isinstance(op, E.Constructor) and type_args:
            data = self.mono.mod.type_definitions.get(op.belong_to)
            if data is not None:
                inner = dict(zip(data.type_vars, type_args))
                arg_types = [substitute(t, inner) for t in op.inputs]
        args = [self.expr(a, t) for a, t in zip(call.args, arg_types)]
        explicit = () if drop_type_args else tuple(self.ty(t) for t in call.explicit_type_args)
        new = self.typed(E.Call(new_op, args, call.attrs, explicit, call.span), call)
        object.__setattr__(new, "inferred_type_args_", () if drop_type_args else type_args)
        return new

    def _Tuple(self, node):
        ty = self.ty(getattr(node, "checked_type_", None))
        fields = ty.fields if isinstance(ty, TupleType) else [None] * len(node.fields)
        return self.typed(E.Tuple([self.expr(f, t) for f, t in zip(node.fields, fields)], node.span), node)

    def _TupleGetItem(self, node):
        return self.typed(E.TupleGetItem(self.expr(node.tuple_value), node.index, node.span), node)

    def _If(self, node):
        ty = self.ty(getattr(node, "checked_type_", None))
        return self.typed(
            E.If(self.expr(node.cond), self.expr(node.true_branch, ty), self.expr(node.false_branch, ty), node.span),
            node,
        )

    def _Function(self, node):
        return self.function(node)

    def _RefCreate(self, node):
        ty = self.ty(getattr(node, "checked_type_", None))
        inner = ty.value if isinstance(ty, RefType) else None
        return self.typed(E.RefCreate(self.expr(node.value, inner), node.span), node)

    def _RefRead(self, node):
        return self.typed(E.RefRead(self.expr(node.ref), node.span), node)

    def _RefWrite(self, node):
        ref = self.expr(node.ref)
        ref_ty = getattr(ref, "checked_type_", None)
        inner = ref_ty.value if isinstance(ref_ty, RefType) else None
        return self.typed(E.RefWrite(ref, self.expr(node.value, inner), node.span), node)

    def _Match(self, node):
        data = self.expr(node.data)
        ty = self.ty(getattr(node, "checked_type_", None))
        clauses = [E.Clause(self.pattern(c.lhs), self.expr(c.rhs, ty), c.span) for c in node.clauses]
        return self.typed(E.Match(data, clauses, node.complete, node.span), node)

    def pattern(self, p):
        if isinstance(p, E.PatternVar):
            return E.PatternVar(self.bind(p.var), p.span)
        if isinstance(p, E.PatternConstructor):
            return E.PatternConstructor(p.constructor, [self.pattern(s) for s in p.patterns], p.span)
        if isinstance(p, E.PatternTuple):
            return E.PatternTuple([self.pattern(s) for s in p.patterns], p.span)
        return p

    def _Let(self, let):
        # Iterative over the chain; polymorphic local functions are specialized after their body.
        chain = []
        node = let
        while type(node) is E.Let and id(node) not in self.memo:
            if _is_poly_function(node.value):
                self.locals[node.var] = _LocalPoly(node.var, node.value, dict(self.mapping))
                chain.append((node, None, None))
            else:
                new_var = self.bind(node.var)
                var_ty = new_var.checked_type_ if hasattr(new_var, "checked_type_") else None
                chain.append((node, new_var, self.expr(node.value, var_ty)))
            node = node.body
        body = self.expr(node, self.ty(getattr(node, "checked_type_", None)))
        for original, new_var, new_value in reversed(chain):
            if new_var is None:
                body = self.local_bindings(self.locals[original.var], body, original)
            else:
                body = self.typed(E.Let(new_var, new_value, body, original.span), original)
            self.memo[id(original)] = body
        return body

    # ----- polymorphic local functions ---------------------------------------------------------
    def poly_literal(self, func: E.Function, type_args, expected) -> E.Function:
        """A polymorphic function literal not bound by `let`: one specialized copy per use."""
        if type_args is None:
            mapping = {}
            generic = getattr(func, "checked_type_", None)
            if isinstance(expected, FuncType) and isinstance(generic, FuncType):
                _match_types(FuncType(generic.arg_types, generic.ret_type), expected, mapping)
            if not all(p in mapping for p in func.type_params):
                raise TranspileError(
                    "monomorphize: cannot tell at which types this polymorphic function literal is used", func.span
                )
            type_args = tuple(mapping[p] for p in func.type_params)
        inner = _Rewriter(self.mono, {**self.mapping, **dict(zip(func.type_params, type_args))})
        inner.vars = dict(self.vars)
        inner.locals = dict(self.locals)
        return inner.function(func, drop_type_params=True)

    def local_instance(self, local: _LocalPoly, type_args, expected, node) -> E.Var:
        func = local.func
        if type_args is None:
            if not isinstance(expected, FuncType):
                expected = self.ty(getattr(expected, "checked_type_", None))
            mapping = {}
            generic = getattr(local.var, "checked_type_", None) or getattr(func, "checked_type_", None)
            if isinstance(expected, FuncType) and isinstance(generic, FuncType):
                _match_types(FuncType(generic.arg_types, generic.ret_type), expected, mapping)
            type_args = tuple(mapping.get(p, _unit()) for p in func.type_params)
        key = _key(type_args)
        var = local.instances.get(key)
        if var is None:
            if local.active is not None and local.active != key:
                raise TranspileError(
                    f"monomorphize: the local function %{local.var.name_hint} calls itself at other types "
                    "(polymorphic recursion); make it a global function",
                    func.span,
                )
            name = "__".join([local.var.name_hint, *(type_name(a) for a in type_args)])
            mapping = dict(zip(func.type_params, type_args))
            ty = func.checked_type
            var = E.Var(name, None, local.var.span)
            var._set_checked_type(
                FuncType([substitute(a, mapping) for a in ty.arg_types], substitute(ty.ret_type, mapping))
            )
            local.instances[key] = var
            local.pending.append((key, type_args, var))
        return var

    def local_bindings(self, local: _LocalPoly, body, original_let):
        bindings = []
        while local.pending:
            key, type_args, var = local.pending.pop(0)
            inner = _Rewriter(self.mono, {**local.mapping, **dict(zip(local.func.type_params, type_args))})
            inner.vars = dict(self.vars)
            inner.locals = dict(self.locals)
            local.active = key
            try:
                value = inner.function(local.func, drop_type_params=True)
            finally:
                local.active = None
            bindings.append((var, value))
        for var, value in reversed(bindings):
            body = E.Let(var, value, body, original_let.span)
            body._set_checked_type(
                self.ty(original_let.checked_type_) if hasattr(original_let, "checked_type_") else None
            )
        return body


def _unit():
    return TupleType(())
