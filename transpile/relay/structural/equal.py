"""Structural equality: a simultaneous walk that maps binders on the left to binders on the right."""

from __future__ import annotations

from ..attrs import Attrs
from ..expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    TypeData,
    Var,
)
from ..module import IRModule
from ..ty import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from .common import attr_items, bare_constructor, constant_equal, norm_type, op_defaults

__all__ = ["Mismatch", "compare"]

_UNSET = object()


class Mismatch(Exception):
    def __init__(self, path: str, lhs, rhs, reason: str):
        super().__init__(reason)
        self.path, self.lhs, self.rhs, self.reason = path, lhs, rhs, reason


# ----- equality ----------------------------------------------------------------------------------
class _Equal:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.vars: dict = {}
        self.rvars: dict = {}
        self.tvars: dict = {}
        self.rtvars: dict = {}
        self.dims: dict = {}  # symbolic dims, left to right and right to left
        self.rdims: dict = {}
        self.proven: set = set()
        self.path: list[str] = []
        self.undo: list = []  # (mapping, key, previous value) to restore when a scope ends

    def fail(self, a, b, reason: str):
        raise Mismatch("".join(self.path) or "<root>", a, b, reason)

    def at(self, step: str, fn, a, b):
        self.path.append(step)
        fn(a, b)
        self.path.pop()

    def each(self, name: str, fn, xs, ys):
        if len(xs) != len(ys):
            self.fail(xs, ys, f"{name} has {len(xs)} element(s) on the left and {len(ys)} on the right")
        for i, (x, y) in enumerate(zip(xs, ys)):
            self.at(f".{name}[{i}]", fn, x, y)

    # -- variables --
    def _set(self, mapping: dict, key, value) -> None:
        self.undo.append((mapping, key, mapping.get(key, _UNSET)))
        mapping[key] = value

    def end_scope(self, mark: int) -> None:
        """Forget the bindings made since `mark` (restoring any they shadowed)."""
        while len(self.undo) > mark:
            mapping, key, previous = self.undo.pop()
            if previous is _UNSET:
                del mapping[key]
            else:
                mapping[key] = previous

    def bind_var(self, a: Var, b: Var):
        if not isinstance(a, Var) or not isinstance(b, Var):
            self.fail(a, b, "expected variables")
        self.annotation(a, b)
        # Binding the same Var object again (builders reuse vars; a shared sub-term may be
        # compared against two copies) shadows the outer binding until the scope ends.
        self._set(self.vars, a, b)
        self._set(self.rvars, b, a)

    def var_ref(self, a: Var, b: Var):
        if a in self.vars or b in self.rvars:
            if self.vars.get(a) is not b or self.rvars.get(b) is not a:
                self.fail(a, b, "different variables")
            return
        if not self.map_free_vars:
            if a is not b:
                self.fail(a, b, "different free variables")
            return
        # Free variables correspond for the whole comparison, so this mapping is never undone.
        self.annotation(a, b)
        self.vars[a], self.rvars[b] = b, a

    def annotation(self, a: Var, b: Var):
        # TVM's InferType filled a missing annotation with the checked type: against an annotated
        # variable, an unannotated one stands for its inferred type (when it has one).
        left, right = a.type_annotation, b.type_annotation
        # `%x : _` (an IncompleteType annotation) leaves the type to inference, as no annotation does.
        left = None if isinstance(left, IncompleteType) else left
        right = None if isinstance(right, IncompleteType) else right
        if (left is None) != (right is None):
            left = left if left is not None else getattr(a, "checked_type_", None)
            right = right if right is not None else getattr(b, "checked_type_", None)
        self.at(".type_annotation", self.opt_type, left, right)

    def bind_type_vars(self, xs, ys):
        if len(xs) != len(ys):
            self.fail(xs, ys, f"{len(xs)} type parameter(s) on the left, {len(ys)} on the right")
        for a, b in zip(xs, ys):
            if a.kind != b.kind:
                self.fail(a, b, "type parameters of different kinds")
            self._set(self.tvars, a, b)
            self._set(self.rtvars, b, a)

    # -- types --
    def opt_type(self, a, b):
        if a is None or b is None:
            if a is not b:
                self.fail(a, b, "a type annotation on one side only")
            return
        self.type(a, b)

    def type(self, a, b):
        a, b = norm_type(a), norm_type(b)
        if type(a) is not type(b):
            self.fail(a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, TensorType):
            if a.dtype != b.dtype or len(a.shape) != len(b.shape) or not all(map(self.dim, a.shape, b.shape)):
                self.fail(a, b, "different tensor types")
        elif isinstance(a, TupleType):
            self.each("fields", self.type, a.fields, b.fields)
        elif isinstance(a, FuncType):
            mark = len(self.undo)
            self.bind_type_vars(a.type_params, b.type_params)
            self.each("arg_types", self.type, a.arg_types, b.arg_types)
            self.at(".ret_type", self.type, a.ret_type, b.ret_type)
            self.end_scope(mark)
        elif isinstance(a, TypeVar):
            if a in self.tvars or b in self.rtvars:
                ok = self.tvars.get(a) is b and self.rtvars.get(b) is a
            elif self.map_free_vars:
                self.tvars[a], self.rtvars[b] = b, a
                ok = True
            else:
                ok = a is b
            if not ok:
                self.fail(a, b, "different type variables")
        elif isinstance(a, GlobalTypeVar):
            if a.name_hint != b.name_hint:
                self.fail(a, b, "different type names")
        elif isinstance(a, TypeCall):
            self.at(".func", self.type, a.func, b.func)
            self.each("args", self.type, a.args, b.args)
        elif isinstance(a, RefType):
            self.at(".value", self.type, a.value, b.value)
        elif isinstance(a, IncompleteType):
            if a.kind != b.kind:
                self.fail(a, b, "incomplete types of different kinds")
        elif a != b:
            self.fail(a, b, "different types")

    def dim(self, a, b) -> bool:
        """Dims are equal; symbolic dims (SymbolicDim) correspond one to one across the whole comparison.

        A symbol has no binder in Relay (TVM's shape variables are free in the program), so the
        first place two symbols meet pairs them; this keeps print -> parse (which makes new
        symbols with the printed names) structurally equal to the original.
        """
        if not isinstance(a, SymbolicDim) or not isinstance(b, SymbolicDim):
            return a == b
        dims, rdims = self.dims, self.rdims
        if a in dims or b in rdims:
            return dims.get(a) == b and rdims.get(b) == a
        dims[a], rdims[b] = b, a
        return True

    # -- attributes --
    def attr_value(self, a, b):
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            self.each("items", self.attr_value, a, b)
        elif isinstance(a, Constant) and isinstance(b, Constant):
            self.expr(a, b)
        elif isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b)
        elif isinstance(a, float) and isinstance(b, float) and a != a and b != b:
            return  # NaN == NaN
        elif isinstance(a, bool) != isinstance(b, bool) or a != b:
            self.fail(a, b, "different attribute values")

    def attrs(self, a, b, op=None):
        if not a and not b:
            return
        defaults = op_defaults(op)
        left, right = attr_items(a, defaults), attr_items(b, defaults)
        if set(left) != set(right):
            only = sorted(set(left) ^ set(right))
            self.fail(a, b, f"attribute(s) {', '.join(only)} on one side only")
        for key in left:
            self.at(f".attrs[{key}]", self.attr_value, left[key], right[key])

    # -- expressions --
    def expr(self, a, b):
        ctor_a, ctor_b = bare_constructor(a), bare_constructor(b)
        if ctor_a is not None or ctor_b is not None:
            if ctor_a is None or ctor_b is None:
                self.fail(a, b, "a constructor value on one side only")
            self.constructor(ctor_a, ctor_b)
            return
        if type(a) is not type(b):
            self.fail(a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Var):
            self.var_ref(a, b)
            return
        if isinstance(a, GlobalVar):
            if a.name_hint != b.name_hint:
                self.fail(a, b, "different globals")
            return
        if isinstance(a, Op):
            if a.name != b.name:
                self.fail(a, b, "different operators")
            return
        if isinstance(a, Constructor):
            self.constructor(a, b)
            return
        if isinstance(a, Constant):
            if not constant_equal(a.data, b.data):
                self.fail(a, b, "different constants")
            return
        key = (id(a), id(b))
        if key in self.proven:
            return
        self._compound(a, b)
        self.proven.add(key)

    def constructor(self, a: Constructor, b: Constructor):
        if a.name_hint != b.name_hint or a.belong_to.name_hint != b.belong_to.name_hint:
            self.fail(a, b, "different constructors")

    def _compound(self, a, b):
        if isinstance(a, Call):
            self.at(".op", self.expr, a.op, b.op)
            self.each("args", self.expr, a.args, b.args)
            self.attrs(a.attrs, b.attrs, a.op)
            # Type arguments inference filled in are derived, like checked types: not compared.
            self.each("type_args", self.type, a.explicit_type_args, b.explicit_type_args)
        elif isinstance(a, Tuple):
            self.each("fields", self.expr, a.fields, b.fields)
        elif isinstance(a, TupleGetItem):
            if a.index != b.index:
                self.fail(a, b, f"projection .{a.index} vs .{b.index}")
            self.at(".tuple_value", self.expr, a.tuple_value, b.tuple_value)
        elif isinstance(a, Let):
            self.let_chain(a, b)
        elif isinstance(a, If):
            self.at(".cond", self.expr, a.cond, b.cond)
            self.at(".true_branch", self.expr, a.true_branch, b.true_branch)
            self.at(".false_branch", self.expr, a.false_branch, b.false_branch)
        elif isinstance(a, Function):
            self.function(a, b)
        elif isinstance(a, Match):
            if a.complete != b.complete:
                self.fail(a, b, "match vs match?")
            self.at(".data", self.expr, a.data, b.data)
            self.each("clauses", self.clause, a.clauses, b.clauses)
        elif isinstance(a, RefCreate):
            self.at(".value", self.expr, a.value, b.value)
        elif isinstance(a, RefRead):
            self.at(".ref", self.expr, a.ref, b.ref)
        elif isinstance(a, RefWrite):
            self.at(".ref", self.expr, a.ref, b.ref)
            self.at(".value", self.expr, a.value, b.value)
        else:
            self.fail(a, b, f"cannot compare {type(a).__name__}")

    def let_chain(self, a: Let, b: Let):
        depth, mark = len(self.path), len(self.undo)
        while isinstance(a, Let) and isinstance(b, Let):
            self.at(".var", self.bind_var, a.var, b.var)
            self.at(".value", self.expr, a.value, b.value)
            self.path.append(".body")
            a, b = a.body, b.body
        self.expr(a, b)
        del self.path[depth:]
        self.end_scope(mark)

    def function(self, a: Function, b: Function):
        mark = len(self.undo)
        self.bind_type_vars(a.type_params, b.type_params)
        self.each("params", self.bind_var, a.params, b.params)
        left, right = a.ret_type, b.ret_type
        if (left is None) != (right is None):  # as for variables: InferType filled it in
            left = left if left is not None else _inferred_result(a)
            right = right if right is not None else _inferred_result(b)
        self.at(".ret_type", self.opt_type, left, right)
        self.attrs(a.attrs, b.attrs)
        self.at(".body", self.expr, a.body, b.body)
        self.end_scope(mark)

    def clause(self, a: Clause, b: Clause):
        mark = len(self.undo)
        self.at(".lhs", self.pattern, a.lhs, b.lhs)
        self.at(".rhs", self.expr, a.rhs, b.rhs)
        self.end_scope(mark)

    def pattern(self, a, b):
        if type(a) is not type(b):
            self.fail(a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, PatternVar):
            self.bind_var(a.var, b.var)
        elif isinstance(a, PatternConstructor):
            self.constructor(a.constructor, b.constructor)
            self.each("patterns", self.pattern, a.patterns, b.patterns)
        elif isinstance(a, PatternTuple):
            self.each("patterns", self.pattern, a.patterns, b.patterns)

    # -- definitions and modules --
    def type_data(self, a: TypeData, b: TypeData):
        if a.header.name_hint != b.header.name_hint:
            self.fail(a, b, "different type names")
        mark = len(self.undo)
        self.bind_type_vars(a.type_vars, b.type_vars)
        for i, (x, y) in enumerate(zip(a.constructors, b.constructors)):
            self.path.append(f".constructors[{i}]")
            self.constructor(x, y)
            self.each("inputs", self.type, x.inputs, y.inputs)
            self.path.pop()
        if len(a.constructors) != len(b.constructors):
            self.fail(a, b, "different numbers of constructors")
        self.end_scope(mark)

    def module(self, a: IRModule, b: IRModule):
        types_a = {g.name_hint: d for g, d in a.type_definitions.items()}
        types_b = {g.name_hint: d for g, d in b.type_definitions.items()}

        def opaque(types, mod, name):
            # `extern type T` is declared by name alone or (as TVM's parser made it) by a TypeData
            # without constructors; either form declares the same type.
            return name in mod.extern_types and (name not in types or not types[name].constructors)

        differ = {n for n in set(types_a) ^ set(types_b) if not (opaque(types_a, a, n) and opaque(types_b, b, n))}
        if differ:
            self.fail(a, b, f"type definitions differ: {sorted(differ)}")
        for name in [n for n in types_a if n in types_b]:
            self.at(f"type_definitions[{name}]", self.type_data, types_a[name], types_b[name])
        funcs_a = {g.name_hint: f for g, f in a.functions.items()}
        funcs_b = {g.name_hint: f for g, f in b.functions.items()}
        if set(funcs_a) != set(funcs_b):
            self.fail(a, b, f"global functions differ: {sorted('@' + n for n in set(funcs_a) ^ set(funcs_b))}")
        for name in funcs_a:
            self.at(f"functions[@{name}]", self.expr, funcs_a[name], funcs_b[name])

    def any(self, a, b):
        if isinstance(a, IRModule) and isinstance(b, IRModule):
            self.module(a, b)
        elif isinstance(a, Expr) and isinstance(b, Expr):
            self.expr(a, b)
        elif isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b)
        elif isinstance(a, Pattern) and isinstance(b, Pattern):
            self.pattern(a, b)
        elif isinstance(a, TypeData) and isinstance(b, TypeData):
            self.type_data(a, b)
        elif isinstance(a, Clause) and isinstance(b, Clause):
            self.clause(a, b)
        elif isinstance(a, Attrs) or isinstance(b, Attrs) or a is None or b is None:
            self.attrs(a, b)
        elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            self.each("items", self.any, a, b)  # both are TVM's Array (a node's type_args, fields...)
        elif type(a) is not type(b) or a != b:
            self.fail(a, b, f"{type(a).__name__} vs {type(b).__name__}")


def _inferred_result(fn: Function):
    checked = getattr(fn, "checked_type_", None)
    return checked.ret_type if isinstance(checked, FuncType) else None


def compare(a, b, map_free_vars: bool):
    checker = _Equal(map_free_vars)
    try:
        checker.any(a, b)
    except Mismatch as mismatch:
        return mismatch
    return None
