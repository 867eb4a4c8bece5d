"""Structural hashing, consistent with structural equality and independent of the process."""

from __future__ import annotations

import zlib

from ..attrs import Attrs, MetaRef
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
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from .common import attr_items, bare_constructor, norm_type, op_defaults

__all__ = ["hash_of"]


_str_hashes: dict[str, int] = {}


def _s(text: str) -> int:
    """A process-independent hash of a string (Python's str hash is salted per process)."""
    value = _str_hashes.get(text)
    if value is None:
        value = _str_hashes[text] = zlib.crc32(text.encode("utf-8"))
    return value


class _Hasher:
    """Bound variables hash by where they are bound (binder kind and position), never by identity,
    so alpha-equivalent terms hash alike and a shared sub-term hashes the same in every context."""

    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.binders: dict = {}
        self.tbinders: dict = {}
        self.memo: dict[int, int] = {}
        self.undo: list = []  # (mapping, key, previous value) to restore when a scope ends

    def _set(self, mapping: dict, key, value) -> None:
        self.undo.append((mapping, key, mapping.get(key)))
        mapping[key] = value

    def end_scope(self, mark: int) -> None:
        while len(self.undo) > mark:
            mapping, key, previous = self.undo.pop()
            if previous is None:
                del mapping[key]
            else:
                mapping[key] = previous

    def bind(self, var: Var, kind: str, position: int) -> int:
        self._set(self.binders, var, hash((_s(kind), position)))
        # Annotations are left out: equality lets a missing one stand for the inferred type.
        return hash((_s("binder"), self.binders[var]))

    def bind_types(self, tvs, kind: str) -> int:
        for i, tv in enumerate(tvs):
            self._set(self.tbinders, tv, hash((_s(kind), i, tv.kind)))
        return hash((_s("type_params"), len(tvs)))

    def type(self, ty) -> int:
        ty = norm_type(ty)
        tag = _s(type(ty).__name__)
        if isinstance(ty, TensorType):
            dims = tuple(-1 if isinstance(d, AnyDim) else d for d in ty.shape)
            return hash((tag, dims, _s(ty.dtype)))
        if isinstance(ty, TupleType):
            return hash((tag, tuple(self.type(f) for f in ty.fields)))
        if isinstance(ty, FuncType):
            mark = len(self.undo)
            params = self.bind_types(ty.type_params, "functype")
            value = hash((tag, params, tuple(self.type(a) for a in ty.arg_types), self.type(ty.ret_type)))
            self.end_scope(mark)
            return value
        if isinstance(ty, TypeVar):
            bound = self.tbinders.get(ty)
            if bound is not None:
                return bound
            return hash((tag, ty.kind)) if self.map_free_vars else hash((tag, id(ty)))
        if isinstance(ty, GlobalTypeVar):
            return hash((tag, _s(ty.name_hint)))
        if isinstance(ty, TypeCall):
            return hash((tag, self.type(ty.func), tuple(self.type(a) for a in ty.args)))
        if isinstance(ty, RefType):
            return hash((tag, self.type(ty.value)))
        if isinstance(ty, IncompleteType):
            return hash((tag, ty.kind))
        return hash((tag, _s(str(ty))))

    def attr_value(self, v) -> int:
        if isinstance(v, (tuple, list)):
            return hash((_s("list"), tuple(self.attr_value(x) for x in v)))
        if isinstance(v, str):
            return _s(v)
        if isinstance(v, float) and v != v:
            return _s("nan")
        if isinstance(v, (bool, int, float)):
            return hash((isinstance(v, bool), v))
        if v is None:
            return _s("None")
        if isinstance(v, Constant):
            return self.expr(v)
        if isinstance(v, Type):
            return self.type(v)
        if isinstance(v, MetaRef):
            return hash((_s(v.kind), v.index))
        return _s(type(v).__name__)

    def attrs(self, attrs, op=None) -> int:
        if not attrs:
            return 0
        items = attr_items(attrs, op_defaults(op))
        return hash(tuple(sorted((_s(k), self.attr_value(v)) for k, v in items.items())))

    def constructor(self, c: Constructor) -> int:
        return hash((_s("Constructor"), _s(c.name_hint), _s(c.belong_to.name_hint)))

    def expr(self, e) -> int:
        ctor = bare_constructor(e)
        if ctor is not None:
            return self.constructor(ctor)
        if isinstance(e, Var):
            bound = self.binders.get(e)
            if bound is not None:
                return bound
            if self.map_free_vars:
                return hash(_s("free"))
            return hash((_s("free"), id(e)))
        if isinstance(e, GlobalVar):
            return hash((_s("GlobalVar"), _s(e.name_hint)))
        if isinstance(e, Op):
            return hash((_s("Op"), _s(e.name)))
        if isinstance(e, Constructor):
            return self.constructor(e)
        known = self.memo.get(id(e))
        if known is not None:
            return known
        value = self._compound(e)
        self.memo[id(e)] = value
        return value

    def _compound(self, e) -> int:
        tag = _s(type(e).__name__)
        if isinstance(e, Constant):
            data = e.data
            return hash((tag, _s(data.dtype.name), data.shape, zlib.crc32(data.tobytes())))
        if isinstance(e, Call):
            return hash(
                (
                    tag,
                    self.expr(e.op),
                    tuple(self.expr(a) for a in e.args),
                    self.attrs(e.attrs, e.op),
                    tuple(self.type(t) for t in e.explicit_type_args),
                )
            )
        if isinstance(e, Tuple):
            return hash((tag, tuple(self.expr(f) for f in e.fields)))
        if isinstance(e, TupleGetItem):
            return hash((tag, e.index, self.expr(e.tuple_value)))
        if isinstance(e, Let):
            mark, parts = len(self.undo), []
            while isinstance(e, Let):
                parts.append((self.bind(e.var, "let", 0), self.expr(e.value)))
                e = e.body
            value = hash((tag, tuple(parts), self.expr(e)))
            self.end_scope(mark)
            return value
        if isinstance(e, If):
            return hash((tag, self.expr(e.cond), self.expr(e.true_branch), self.expr(e.false_branch)))
        if isinstance(e, Function):
            mark = len(self.undo)
            type_params = self.bind_types(e.type_params, "fn")
            params = tuple(self.bind(p, "param", i) for i, p in enumerate(e.params))
            value = hash((tag, type_params, params, self.attrs(e.attrs), self.expr(e.body)))
            self.end_scope(mark)
            return value
        if isinstance(e, Match):
            data = self.expr(e.data)
            clauses = []
            for clause in e.clauses:
                mark = len(self.undo)
                clauses.append((self.pattern(clause.lhs, [0]), self.expr(clause.rhs)))
                self.end_scope(mark)
            return hash((tag, e.complete, data, tuple(clauses)))
        if isinstance(e, RefCreate):
            return hash((tag, self.expr(e.value)))
        if isinstance(e, RefRead):
            return hash((tag, self.expr(e.ref)))
        if isinstance(e, RefWrite):
            return hash((tag, self.expr(e.ref), self.expr(e.value)))
        return hash((tag, id(e)))

    def pattern(self, p, counter: list) -> int:
        tag = _s(type(p).__name__)
        if isinstance(p, PatternVar):
            counter[0] += 1
            return hash((tag, self.bind(p.var, "pattern", counter[0])))
        if isinstance(p, PatternConstructor):
            return hash((tag, self.constructor(p.constructor), tuple(self.pattern(q, counter) for q in p.patterns)))
        if isinstance(p, PatternTuple):
            return hash((tag, tuple(self.pattern(q, counter) for q in p.patterns)))
        return tag

    def type_data(self, data: TypeData) -> int:
        mark = len(self.undo)
        params = self.bind_types(data.type_vars, "adt")
        ctors = tuple((self.constructor(c), tuple(self.type(t) for t in c.inputs)) for c in data.constructors)
        self.end_scope(mark)
        return hash((_s("TypeData"), _s(data.header.name_hint), params, ctors))

    def any(self, x) -> int:
        if isinstance(x, IRModule):
            types = sorted((_s(g.name_hint), self.type_data(d)) for g, d in x.type_definitions.items())
            funcs = sorted((_s(g.name_hint), self.expr(f)) for g, f in x.functions.items())
            return hash((_s("IRModule"), tuple(types), tuple(funcs)))
        if isinstance(x, Expr):
            return self.expr(x)
        if isinstance(x, Type):
            return self.type(x)
        if isinstance(x, Pattern):
            return self.pattern(x, [0])
        if isinstance(x, TypeData):
            return self.type_data(x)
        if isinstance(x, Clause):
            return hash((self.pattern(x.lhs, [0]), self.expr(x.rhs)))
        if isinstance(x, Attrs) or x is None:
            return self.attrs(x)
        return self.attr_value(x)


def hash_of(x, map_free_vars: bool) -> int:
    return _Hasher(map_free_vars).any(x)
