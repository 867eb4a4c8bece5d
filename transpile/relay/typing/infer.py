"""The type inference visitor: walks expressions, emits unifications and defers operator relations."""

from __future__ import annotations

from ...errors import RelayTypeError
from .. import expr as E
from ..ty import FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, Type, TypeCall
from .match import MatchTyping
from .relations import DeferredConstraints, Projection
from .show import callee_name, describe_expr, show_type
from .subst import instantiate
from .text import join, plural, were
from .unify import UNIT, Mismatch, Unifier, adt_form

__all__ = ["TypeInferencer"]

BOOL_SCALAR = TensorType((), "bool")


class TypeInferencer(DeferredConstraints, MatchTyping):
    """One inference run over a module (or an expression) with a single shared solver.

    Types of nodes are collected in `memo` (by node identity) while walking, with unknowns as
    IncompleteTypes; `finish()` resolves them and stores them on the nodes (`checked_type_`).
    """

    def __init__(self, mod=None):
        self.mod = mod
        self.solver = Unifier()
        self.memo: dict[int, Type] = {}
        self.order: list = []  # typed nodes in visiting order (binders before uses)
        self.call_type_args: list[tuple[E.Call, tuple]] = []
        self.operator_calls: list[tuple[E.Call, list]] = []  # with their argument types
        self.references: list[tuple[E.Expr, Type, Type]] = []  # (GlobalVar/Constructor, instance, generic)
        self.pending: list = []
        self.globals: dict[str, FuncType] = {}
        self.signatures: dict[int, FuncType] = {}
        self.fn_names: dict[int, str] = {}
        self.functions: list[E.Function] = []  # enclosing functions, innermost last
        self.unannotated_params = False  # some function has a parameter typed only by inference
        self.defining: dict[int, E.Let] = {}  # vars of non-function lets whose value is being typed
        self._canon_memo: dict[int, Type] = {}
        self._ctor_types: dict[tuple[str, str], FuncType] = {}
        self._opdefs: dict = {}
        self._constant_types: dict = {}
        self._dispatch = {
            E.Var: self._visit_var,
            E.GlobalVar: self._visit_global_var,
            E.Constant: self._visit_constant,
            E.Tuple: self._visit_tuple,
            E.TupleGetItem: self._visit_tuple_get_item,
            E.Call: self._visit_call,
            E.Let: self._visit_let,
            E.If: self._visit_if,
            E.Function: self._visit_function,
            E.Op: self._visit_op,
            E.Constructor: self._visit_constructor,
            E.Match: self._visit_match,
            E.RefCreate: self._visit_ref_create,
            E.RefRead: self._visit_ref_read,
            E.RefWrite: self._visit_ref_write,
        }

    # ----- errors ------------------------------------------------------------------------------
    def span_of(self, *nodes):
        candidates = [n for n in nodes if n is not None and getattr(n, "span", None) is not None]
        for i, node in enumerate(candidates):
            # A Var node is shared by all its uses and its span is the binder: prefer the
            # enclosing expression (the call, the let...) when one is given.
            if not isinstance(node, E.Var) or i == len(candidates) - 1:
                return node.span
        for fn in reversed(self.functions):
            if fn.span is not None:
                return fn.span
        return None

    def fail(self, message: str, *nodes):
        raise RelayTypeError(message, self.span_of(*nodes))

    def show(self, ty: Type) -> str:
        return show_type(self.solver.resolve(ty))

    def expect(self, expected: Type, found: Type, where: str, *nodes) -> Type:
        """Unify, reporting 'type mismatch: expected E but found F <where>' at the first node with a span."""
        try:
            return self.solver.unify(expected, found)
        except Mismatch as exc:
            head = f"type mismatch: expected {self.show(expected)} but found {self.show(found)}"
            self.fail(join(head, where, self._detail(exc, expected, found)), *nodes)

    def _detail(self, exc: Mismatch, expected: Type, found: Type) -> str:
        """Names the innermost conflict when it is not the whole pair of types."""
        outer = {self.show(expected), self.show(found)}
        inner_left, inner_right = self.show(exc.left), self.show(exc.right)
        parts = []
        whole = {inner_left, inner_right} == outer
        if not whole:
            parts.append(f"{inner_left} vs {inner_right}")
        if exc.reason and not (whole and exc.reason.startswith("dtype")):  # a dtype clash is visible as is
            parts.append(exc.reason)
        return "(" + "; ".join(parts) + ")" if parts else ""

    # ----- annotations -------------------------------------------------------------------------
    def canon(self, ty: Type | None, node=None) -> Type | None:
        """An annotation in canonical form (ADT types as TypeCall), with ADT arity checked."""
        if ty is None:
            return None
        cached = self._canon_memo.get(id(ty))
        if cached is None:
            cached = self._canon(ty, node)
            self._canon_memo[id(ty)] = cached
        return cached

    def _canon(self, ty, node):
        if isinstance(ty, GlobalTypeVar):
            self._check_adt_arity(ty, 0, ty, node)
            return adt_form(ty)
        if isinstance(ty, TypeCall):
            if isinstance(ty.func, GlobalTypeVar):
                self._check_adt_arity(ty.func, len(ty.args), ty, node)
            args = [self._canon(a, node) for a in ty.args]
            return TypeCall(ty.func, args, ty.span)
        if isinstance(ty, TupleType):
            return TupleType([self._canon(f, node) for f in ty.fields], ty.span)
        if isinstance(ty, FuncType):
            return FuncType(
                [self._canon(a, node) for a in ty.arg_types],
                self._canon(ty.ret_type, node),
                ty.type_params,
                ty.type_constraints,
                ty.span,
            )
        if isinstance(ty, RefType):
            return RefType(self._canon(ty.value, node), ty.span)
        return ty

    def _check_adt_arity(self, gtv: GlobalTypeVar, given: int, ty, node) -> None:
        data = self.mod.type_definitions.get(gtv) if self.mod is not None else None
        if data is None:
            return  # extern or unknown types: nothing to check against
        wanted = len(data.type_vars)
        if wanted != given:
            self.fail(
                f"type {gtv.name_hint} expects {wanted} type argument{plural(wanted)} but {given} {were(given)} given",
                ty,
                node,
            )

    def signature(self, fn: E.Function) -> FuncType:
        """The type of a function from its annotations, unknown parts as fresh IncompleteTypes."""
        sig = self.signatures.get(id(fn))
        if sig is None:
            params = [self.canon(p.type_annotation, p) or IncompleteType() for p in fn.params]
            ret = self.canon(fn.ret_type, fn) or IncompleteType()
            sig = FuncType(params, ret, fn.type_params)
            self.signatures[id(fn)] = sig
        return sig

    # ----- ADTs --------------------------------------------------------------------------------
    def type_data(self, ctor: E.Constructor, node):
        data = self.mod.type_definitions.get(ctor.belong_to) if self.mod is not None else None
        if data is None:
            self.fail(
                f"constructor {ctor.name_hint} belongs to type {ctor.belong_to.name_hint}, "
                "which is not defined in the module",
                node,
            )
        return data

    def constructor_type(self, ctor: E.Constructor, node) -> FuncType:
        """fn[type vars](inputs) -> T[type vars], as in TVM."""
        key = (ctor.belong_to.name_hint, ctor.name_hint)
        ty = self._ctor_types.get(key)
        if ty is None:
            data = self.type_data(ctor, node)
            inputs = [self.canon(t, ctor) for t in ctor.inputs]
            ty = FuncType(inputs, TypeCall(data.header, data.type_vars), data.type_vars)
            self._ctor_types[key] = ty
        return ty

    # ----- traversal ---------------------------------------------------------------------------
    def infer(self, expr) -> Type:
        ty = self.memo.get(id(expr))
        if ty is not None:
            return ty
        try:
            visit = self._dispatch[type(expr)]
        except KeyError:
            self.fail(f"cannot type-check a {type(expr).__name__} node: it is not a Relay expression", expr)
        try:
            ty = visit(expr)
        except RelayTypeError as exc:
            # Shared nodes (operators, constructors) have no location of their own: an error
            # about one is reported at the innermost enclosing node that has one.
            raise exc.locate(getattr(expr, "span", None))
        if not isinstance(expr, (E.GlobalVar, E.Constructor, E.Op)):
            self.memo[id(expr)] = ty
            self.order.append(expr)
        return ty

    def bind_var(self, var: E.Var, ty: Type) -> Type:
        previous = self.memo.get(id(var))
        if previous is not None:  # the same Var object bound twice: both bindings must agree
            return self.expect(previous, ty, f"in the second binding of %{var.name_hint}", var)
        self.memo[id(var)] = ty
        self.order.append(var)
        return ty

    def _visit_var(self, var: E.Var) -> Type:
        # Only free variables get here: bound ones are typed at their binder.
        let = self.defining.get(id(var))
        if let is not None:
            # As in TVM, only a function may refer to itself (a recursive closure); any other
            # value would read its own binder before it exists.
            self.fail(
                f"let %{var.name_hint} refers to itself in its own value: only a function may be "
                "defined recursively",
                let,
                var,
            )
        return self.canon(var.type_annotation, var) or IncompleteType()

    def _visit_constant(self, const: E.Constant) -> Type:
        key = (const.data.shape, const.data.dtype)
        ty = self._constant_types.get(key)
        if ty is None:
            ty = self._constant_types[key] = TensorType(const.data.shape, const.data.dtype.name)
        return ty

    def _visit_tuple(self, tup: E.Tuple) -> Type:
        return TupleType([self.infer(f) for f in tup.fields])

    def _visit_op(self, op: E.Op) -> Type:
        # Located by `infer` at the innermost enclosing node (an Op is shared and has no span).
        raise RelayTypeError(f"operator {op.name} can only be called, not used as a value")

    def _visit_global_var(self, gv: E.GlobalVar) -> Type:
        generic = self.global_type(gv)
        inst, _ = instantiate(self.solver.resolve(generic))
        self.references.append((gv, inst, generic))
        return inst

    def _visit_constructor(self, ctor: E.Constructor) -> Type:
        generic = self.constructor_type(ctor, ctor)
        inst, _ = instantiate(generic)
        self.references.append((ctor, inst, generic))
        return inst

    def global_type(self, gv: E.GlobalVar) -> FuncType:
        ty = self.globals.get(gv.name_hint)
        if ty is None:
            where = "the module" if self.mod is not None else "scope (no module was given)"
            self.fail(f"global function @{gv.name_hint} is not defined in {where}", gv)
        return ty

    def _visit_function(self, fn: E.Function) -> Type:
        sig = self.signature(fn)
        if not self.unannotated_params:
            self.unannotated_params = any(p.type_annotation is None for p in fn.params)
        if fn.attrs is not None and fn.attrs.get("Primitive", 0):
            self._check_closed_primitive(fn)
        self.functions.append(fn)
        try:
            for param, ty in zip(fn.params, sig.arg_types):
                self.bind_var(param, ty)
            body = self.infer(fn.body)
            found = self.solver.find(body)
            if isinstance(found, FuncType) and found.type_params:
                body, _ = instantiate(self.solver.resolve(found))  # as TVM: returned generics are instantiated
            try:
                self.solver.unify(sig.ret_type, body)
            except Mismatch as exc:
                name = self.fn_names.get(id(fn))
                who = f"function {name}" if name else "the function"
                message = f"{who} returns {self.show(body)} but is annotated to return {self.show(sig.ret_type)}"
                self.fail(join(message, self._detail(exc, sig.ret_type, body)), _result_site(fn.body), fn)
        finally:
            self.functions.pop()
        return sig

    def _check_closed_primitive(self, fn: E.Function) -> None:
        # A primitive function is a fused kernel: it sees only its parameters (TVM lowers it
        # to a TE compute over them), so a variable of an enclosing scope cannot reach it.
        from ..analysis import free_vars

        outer = free_vars(fn)
        if outer:
            names = ", ".join(f"%{v.name_hint}" for v in outer)
            self.fail(
                f"primitive function (Primitive=1) uses {names} from an enclosing scope: a primitive "
                "function may use only its own parameters (pass the value as an argument)",
                fn,
            )

    def _visit_let(self, let: E.Let) -> Type:
        chain = []
        node = let
        # Iterative over let chains: graph-style programs nest thousands of bindings.
        while isinstance(node, E.Let) and id(node) not in self.memo:
            self._let_binding(node)
            chain.append(node)
            node = node.body
        ty = self.infer(node)
        for inner in chain[1:]:
            self.memo[id(inner)] = ty
            self.order.append(inner)
        return ty

    def _let_binding(self, let: E.Let) -> None:
        var, value = let.var, let.value
        annotation = self.canon(var.type_annotation, var)
        if isinstance(value, E.Function):
            # The bound name is visible inside its own value: let-bound recursive closures.
            sig = self.signature(value)
            if annotation is not None:
                self._expect_let(annotation, sig, var, value)
            self.bind_var(var, sig)
            self.fn_names.setdefault(id(value), f"%{var.name_hint}")
            self.infer(value)
            return
        self.defining[id(var)] = let
        try:
            ty = self.infer(value)
        finally:
            del self.defining[id(var)]
        if annotation is not None:
            ty = self._expect_let(annotation, ty, var, value)
        self.bind_var(var, ty)

    def _expect_let(self, annotation: Type, found: Type, var: E.Var, value) -> Type:
        try:
            return self.solver.unify(annotation, found)
        except Mismatch as exc:
            message = (
                f"type mismatch: let %{var.name_hint} is annotated {self.show(annotation)} "
                f"but its value has type {self.show(found)}"
            )
            self.fail(join(message, self._detail(exc, annotation, found)), value, var)

    def _visit_if(self, node: E.If) -> Type:
        cond = self.infer(node.cond)
        self.expect(BOOL_SCALAR, cond, "in the condition of if", node.cond, node)
        then_type = self.infer(node.true_branch)
        else_type = self.infer(node.false_branch)
        try:
            return self.solver.unify(then_type, else_type)
        except Mismatch as exc:
            message = (
                f"type mismatch: the branches of if differ: the true branch has type {self.show(then_type)} "
                f"but the false branch has type {self.show(else_type)}"
            )
            self.fail(join(message, self._detail(exc, then_type, else_type)), node.false_branch, node)

    def _visit_tuple_get_item(self, node: E.TupleGetItem) -> Type:
        tuple_type = self.infer(node.tuple_value)
        out = IncompleteType()
        job = Projection(node, tuple_type, out)
        if not self._try_projection(job):
            self.pending.append(job)
        return out

    def _visit_ref_create(self, node: E.RefCreate) -> Type:
        return RefType(self.infer(node.value))

    def _visit_ref_read(self, node: E.RefRead) -> Type:
        ref = self.infer(node.ref)
        found = self.solver.find(ref)
        if isinstance(found, RefType):
            return found.value
        inner = IncompleteType()
        self.expect(RefType(inner), ref, "in the argument of ref_read", node.ref, node)
        return inner

    def _visit_ref_write(self, node: E.RefWrite) -> Type:
        ref = self.infer(node.ref)
        inner = IncompleteType()
        self.expect(RefType(inner), ref, "in the reference of ref_write", node.ref, node)
        value = self.infer(node.value)
        self.expect(inner, value, "in the value stored by ref_write", node.value, node)
        return UNIT

    # ----- calls -------------------------------------------------------------------------------
    def _visit_call(self, call: E.Call) -> Type:
        op = call.op
        if isinstance(op, E.Op):
            return self._operator_call(call)
        name = callee_name(op)
        type_args = [self.canon(t, call) for t in call.explicit_type_args]
        if isinstance(op, (E.GlobalVar, E.Constructor)):
            generic = self.global_type(op) if isinstance(op, E.GlobalVar) else self.constructor_type(op, call)
            fn_type, inferred = self._instantiate(self.solver.resolve(generic), type_args, name, call)
            self.references.append((op, fn_type, generic))
        else:
            callee = self.solver.find(self.infer(op))
            if isinstance(callee, FuncType):
                fn_type, inferred = self._instantiate(callee, type_args, name, call)
            elif isinstance(callee, IncompleteType):
                fn_type = FuncType([IncompleteType() for _ in call.args], IncompleteType())
                self.solver.unify(callee, fn_type)
                fn_type, inferred = self._instantiate(fn_type, type_args, name, call)
            else:
                self.fail(
                    f"cannot call {name}: it has type {self.show(callee)}, which is not a function type", op, call
                )
        expected = len(fn_type.arg_types)
        if expected != len(call.args):
            self.fail(
                f"{name} expects {expected} argument{plural(expected)} but {len(call.args)} "
                f"{were(len(call.args))} given",
                call,
            )
        for i, (param, arg) in enumerate(zip(fn_type.arg_types, call.args)):
            self.expect(param, self.infer(arg), f"in argument {i + 1} of {name}", arg, call)
        self.call_type_args.append((call, inferred))
        return fn_type.ret_type

    def _instantiate(self, fn_type: FuncType, type_args, name, call):
        if len(type_args) > len(fn_type.type_params):
            self.fail(
                f"{name} takes {len(fn_type.type_params)} type argument{plural(len(fn_type.type_params))} "
                f"but {len(type_args)} {were(len(type_args))} given",
                call,
            )
        return instantiate(fn_type, type_args)

    # ----- solving and results -----------------------------------------------------------------
    def finish(self) -> None:
        """Solve what is left, reject what stays unknown, and store types on the nodes."""
        self.solve_pending()
        for job in self.pending:
            self._report_blocked(job)
        solver = self.solver
        resolved = []
        memo = self.memo
        for node in self.order:
            ty = memo[id(node)]
            if type(ty) is not TensorType:
                ty = solver.resolve(ty)
            if isinstance(ty, IncompleteType):
                self.fail(f"cannot infer the type of {describe_expr(node)}", node)
            resolved.append(ty)
        for node, ty in zip(self.order, resolved):
            node._set_checked_type(self._close(ty))
        for call, args in self.call_type_args:
            inferred = tuple(self._close(a) for a in args)
            object.__setattr__(call, "inferred_type_args_", inferred)
            if not call.explicit_type_args:
                object.__setattr__(call, "type_args", E.InferredTypeArgs(inferred))
        for call, arg_types in self.operator_calls:
            # TVM instantiated an operator's type with one type parameter per argument.
            if not call.explicit_type_args:
                object.__setattr__(call, "type_args", E.InferredTypeArgs(self._close(t) for t in arg_types))
        self._type_references()

    def _close(self, ty: Type) -> Type:
        """Unknowns left inside a type sit in positions no value ever fills (like the element
        type of a `Nil` that nothing constrains): they become the unit type."""
        if type(ty) is TensorType:
            return ty
        ty = self.solver.resolve(ty)
        if self.solver.is_complete(ty):
            return ty
        for hole in self.solver.holes(ty):
            if isinstance(self.solver.find(hole), IncompleteType):
                self.solver.bind(hole, UNIT)
        return self.solver.resolve(ty)

    def _type_references(self) -> None:
        # A GlobalVar node that occurs once carries its instantiated type; a node shared by
        # several occurrences carries the generic (declared) type. Constructors are shared by
        # their TypeData, so they always carry the generic type.
        counts: dict[int, int] = {}
        keys = {id(gv) for gv in (self.mod.functions if self.mod is not None else ())}
        for node, _, _ in self.references:
            counts[id(node)] = counts.get(id(node), 0) + 1
        for node, inst, generic in self.references:
            if isinstance(node, E.GlobalVar) and counts[id(node)] == 1 and id(node) not in keys:
                node._set_checked_type(self._close(inst))
            else:
                node._set_checked_type(self._close(generic))


def _result_site(expr):
    """Where a function's result comes from: the last expression of its let chain, or the value
    bound to it when that expression is a variable of the chain (`let %y = ...; %y`)."""
    values = {}
    while isinstance(expr, E.Let):
        values[expr.var] = expr.value
        expr = expr.body
    while isinstance(expr, E.Var) and expr in values:
        expr = values.pop(expr)
    return expr
