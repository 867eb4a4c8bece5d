"""Relay expressions, ADT constructors and patterns: immutable nodes with spans."""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

from .attrs import Attrs
from .node import Node
from .op.op_entry import OpEntryMixin
from .ty import GlobalTypeVar, TensorType, Type, TypeVar

__all__ = [
    "Expr",
    "Var",
    "GlobalVar",
    "Constant",
    "Tuple",
    "TupleGetItem",
    "Call",
    "Let",
    "If",
    "Function",
    "Op",
    "Constructor",
    "TypeData",
    "Match",
    "Clause",
    "Pattern",
    "PatternWildcard",
    "PatternVar",
    "PatternConstructor",
    "PatternTuple",
    "RefCreate",
    "RefRead",
    "RefWrite",
    "TupleWrapper",
    "InferredTypeArgs",
    "const",
    "var",
    "to_expr",
]


class Expr(Node):
    """Base of all expressions. `checked_type` is filled in by type inference."""

    __slots__ = ("checked_type_",)

    @property
    def checked_type(self) -> Type:
        ty = getattr(self, "checked_type_", None)
        if ty is None:
            raise ValueError("the type of this expression is not inferred yet: run relay.transform.InferType()")
        return ty

    def _set_checked_type(self, ty: Type) -> None:
        object.__setattr__(self, "checked_type_", ty)

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        """Relay text with version header (and metadata section), as tvm's Expr.astext printed it."""
        from .printer import astext

        return astext(self, show_meta_data, annotate)

    def __str__(self) -> str:
        # tvm's str(): the text without header or metadata; repr() stays the short form.
        from .printer import pretty_print

        try:
            return pretty_print(self)
        except Exception:  # like repr, str must not fail on an ill-formed node (error messages use it)
            return repr(self)

    # Python operators build calls of the corresponding Relay operators, as in tvm.relay.
    def __neg__(self):
        return _op_call("negative", self)

    def __add__(self, other):
        return _op_call("add", self, other)

    def __radd__(self, other):
        return _op_call("add", other, self)

    def __sub__(self, other):
        return _op_call("subtract", self, other)

    def __rsub__(self, other):
        return _op_call("subtract", other, self)

    def __mul__(self, other):
        return _op_call("multiply", self, other)

    def __rmul__(self, other):
        return _op_call("multiply", other, self)

    def __truediv__(self, other):
        return _op_call("divide", self, other)

    def __rtruediv__(self, other):
        return _op_call("divide", other, self)

    def __floordiv__(self, other):
        return _op_call("floor_divide", self, other)

    def __mod__(self, other):
        return _op_call("floor_mod", self, other)

    def __lt__(self, other):
        return _op_call("less", self, other)

    def __le__(self, other):
        return _op_call("less_equal", self, other)

    def __gt__(self, other):
        return _op_call("greater", self, other)

    def __ge__(self, other):
        return _op_call("greater_equal", self, other)

    # Identity semantics for == and hashing, as for tvm ObjectRefs; use relay.structural_equal.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __call__(self, *args):
        return Call(self, [to_expr(a) for a in args])

    def __getitem__(self, index: int):
        return TupleGetItem(self, index)

    def astuple(self):
        """Like tvm's TupleWrapper.astuple: the tuple-typed expression itself."""
        return self

    def astype(self, dtype: str):
        return _op_call("cast", self, dtype=dtype)


def _op_call(name: str, *args, **attrs):
    from .op.registry import make_call

    return make_call(name, [to_expr(a) for a in args], attrs)


def to_expr(value) -> Expr:
    """Convert Python numbers, numpy values and tuples into Relay expressions."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, TupleWrapper):
        return value.tuple_value
    if isinstance(value, tuple):
        return Tuple([to_expr(v) for v in value])
    return const(value)


_var_ids = itertools.count()


class Var(Expr):
    """A local variable; identity (not name) distinguishes variables."""

    __slots__ = ("name_hint", "type_annotation", "uid")

    def __init__(self, name_hint: str, type_annotation: Type | None = None, span=None):
        self._init(name_hint=name_hint, type_annotation=type_annotation, uid=next(_var_ids), span=span)

    @property
    def vid(self):
        return self


class GlobalVar(Expr):
    """A reference to a module-level function; equal when the names are equal."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str, type_annot=None, span=None):
        self._init(name_hint=name_hint, span=span)

    def __eq__(self, other):
        return isinstance(other, GlobalVar) and self.name_hint == other.name_hint

    def __hash__(self):
        return hash(("GlobalVar", self.name_hint))


class Constant(Expr):
    """A tensor literal; `data` is a read-only numpy array (an NDArray, so tvm's `.numpy()` works)."""

    __slots__ = ("data",)

    def __init__(self, data, span=None):
        array = np.array(data, copy=True).view(_ndarray_class())
        array.setflags(write=False)
        self._init(data=array, span=span)

    @property
    def dtype(self) -> str:
        return self.data.dtype.name


def _ndarray_class() -> type:
    # Imported late: the runtime value classes import this module.
    from .backend.values import NDArray

    return NDArray


class Tuple(Expr):
    __slots__ = ("fields",)

    def __init__(self, fields: Iterable[Expr], span=None):
        self._init(fields=tuple(_unwrap(f) for f in fields), span=span)

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, index):
        return self.fields[index]

    def astuple(self):
        return self


class TupleGetItem(Expr):
    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int, span=None):
        self._init(tuple_value=_unwrap(tuple_value), index=int(index), span=span)


class InferredTypeArgs(tuple):
    """Call.type_args filled in by type inference, as TVM's InferType did (an operator call's argument
    types; a polymorphic callee's instantiation). Like checked_type they only report: inference derives
    them anew and structural equality ignores them; type arguments given by the user constrain."""

    __slots__ = ()


class Call(Expr):
    """Application of an operator, global, constructor or closure to arguments.

    `type_args` are the user's explicit type arguments, or after type inference (when none were
    given) an InferredTypeArgs. `inferred_type_args_` is filled by type inference for calls of
    polymorphic globals and constructors: the type arguments of that instantiation, in
    type-parameter order.
    """

    __slots__ = ("op", "args", "attrs", "type_args", "inferred_type_args_")

    def __init__(self, op: Expr, args: Sequence[Expr], attrs=None, type_args=None, span=None):
        if attrs is not None and not isinstance(attrs, Attrs):
            attrs = Attrs(attrs)
        args = tuple(_unwrap(a) for a in args)
        if not isinstance(type_args, InferredTypeArgs):  # a rebuilt call keeps them informational
            type_args = tuple(type_args or ())
        self._init(op=op, args=args, attrs=attrs, type_args=type_args, span=span)

    @property
    def explicit_type_args(self) -> tuple:
        """The type arguments the user gave (empty when there were none or inference filled them)."""
        type_args = self.type_args
        return () if isinstance(type_args, InferredTypeArgs) else type_args


class Let(Expr):
    __slots__ = ("var", "value", "body")

    def __init__(self, variable: Var, value: Expr, body: Expr, span=None):
        self._init(var=variable, value=_unwrap(value), body=_unwrap(body), span=span)


class If(Expr):
    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: Expr, true_branch: Expr, false_branch: Expr, span=None):
        self._init(cond=cond, true_branch=true_branch, false_branch=false_branch, span=span)


class Function(Expr):
    __slots__ = ("params", "body", "ret_type", "type_params", "attrs")

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None, span=None):
        if attrs is not None and not isinstance(attrs, Attrs):
            attrs = Attrs(attrs)
        self._init(
            params=tuple(params),
            body=_unwrap(body),
            ret_type=ret_type,
            type_params=tuple(type_params or ()),
            attrs=attrs,
            span=span,
        )

    def with_attr(self, key: str, value) -> "Function":
        attrs = (self.attrs or Attrs()).with_changes(**{key: value})
        return Function(self.params, self.body, self.ret_type, self.type_params, attrs, self.span)


class Op(OpEntryMixin, Expr):
    """A primitive operator, interned by name: `Op.get("add") is Op.get("add")`; reads its registry entry."""

    __slots__ = ("name",)
    _interned: dict[str, "Op"] = {}

    def __init__(self, name: str, span=None):
        self._init(name=name, span=span)

    @classmethod
    def get(cls, name: str) -> "Op":
        op = cls._interned.get(name)
        if op is None:
            op = cls._interned[name] = cls(name)
        return op

    @property
    def definition(self):
        """The registry entry (OpDef) or None for operators outside the registry."""
        from .op.registry import lookup

        return lookup(self.name)


class Constructor(Expr):
    """An ADT constructor; `tag` is its index within the type definition."""

    __slots__ = ("name_hint", "inputs", "belong_to", "tag")

    def __init__(self, name_hint: str, inputs: Sequence[Type], belong_to: GlobalTypeVar, tag: int = -1, span=None):
        self._init(name_hint=name_hint, inputs=tuple(inputs), belong_to=belong_to, tag=tag, span=span)

    def __call__(self, *args):
        return Call(self, [to_expr(a) for a in args])


class TypeData(Node):
    """An ADT definition: `type header[type_vars] { constructors }`."""

    __slots__ = ("header", "type_vars", "constructors")
    astext = Expr.astext
    __str__ = Expr.__str__

    def __init__(self, header: GlobalTypeVar, type_vars: Sequence[TypeVar], constructors: Sequence[Constructor], span=None):
        self._init(header=header, type_vars=tuple(type_vars), constructors=tuple(constructors), span=span)
        self.assign_tags()

    def assign_tags(self) -> None:
        """Numbers the constructors 0, 1, … in place.

        As in tvm, the user's own Constructor objects get their tags (a constructor built with
        `relay.Constructor(...)` has none until its type is defined), so the objects used to build
        calls and patterns are the ones the definition holds.
        """
        for tag, ctor in enumerate(self.constructors):
            if ctor.tag != tag:
                object.__setattr__(ctor, "tag", tag)


class Pattern(Node):
    __slots__ = ()
    astext = Expr.astext
    __str__ = Expr.__str__


class PatternWildcard(Pattern):
    __slots__ = ()

    def __init__(self, span=None):
        self._init(span=span)


class PatternVar(Pattern):
    __slots__ = ("var",)

    def __init__(self, variable: Var, span=None):
        self._init(var=variable, span=span)


class PatternConstructor(Pattern):
    __slots__ = ("constructor", "patterns")

    def __init__(self, constructor: Constructor, patterns: Sequence[Pattern] | None = None, span=None):
        self._init(constructor=constructor, patterns=tuple(patterns or ()), span=span)


class PatternTuple(Pattern):
    __slots__ = ("patterns",)

    def __init__(self, patterns: Sequence[Pattern] | None = None, span=None):
        self._init(patterns=tuple(patterns or ()), span=span)


class Clause(Node):
    __slots__ = ("lhs", "rhs")
    astext = Expr.astext
    __str__ = Expr.__str__

    def __init__(self, lhs: Pattern, rhs: Expr, span=None):
        self._init(lhs=lhs, rhs=rhs, span=span)


class Match(Expr):
    """`match` (complete=True) or `match?` (complete=False)."""

    __slots__ = ("data", "clauses", "complete")

    def __init__(self, data: Expr, clauses: Sequence[Clause], complete: bool = True, span=None):
        self._init(data=data, clauses=tuple(clauses), complete=bool(complete), span=span)


class RefCreate(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Expr, span=None):
        self._init(value=value, span=span)


class RefRead(Expr):
    __slots__ = ("ref",)

    def __init__(self, ref: Expr, span=None):
        self._init(ref=ref, span=span)


class RefWrite(Expr):
    __slots__ = ("ref", "value")

    def __init__(self, ref: Expr, value: Expr, span=None):
        self._init(ref=ref, value=value, span=span)


class TupleWrapper:
    """What tvm's multi-output builders (relay.split, relay.nn.batch_norm) returned: a tuple-valued
    expression together with its size, indexable (`[i]` is a TupleGetItem) and sized (`len`).

    It is not an expression itself; `astuple()` gives the expression (builders and `to_expr`
    accept the wrapper where an expression is expected).
    """

    __slots__ = ("tuple_value", "size")

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value = tuple_value
        self.size = int(size)

    def astuple(self) -> Expr:
        return self.tuple_value

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        return self.tuple_value.astext(show_meta_data, annotate)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if not -self.size <= index < self.size:
            raise IndexError(f"tuple index {index} out of range for a tuple of {self.size}")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __repr__(self) -> str:
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


def _unwrap(value):
    # tvm converted a TupleWrapper to its tuple expression wherever a node took an expression.
    return value.tuple_value if isinstance(value, TupleWrapper) else value


def const(value, dtype: str | None = None, span=None) -> Constant:
    """Like tvm.relay.const: Python floats default to float32 and ints to int32."""
    if isinstance(value, Constant):
        return value
    if isinstance(dtype, TensorType):  # TVM code passes scalar types: numpy < 2 read their `.dtype`
        dtype = dtype.dtype
    if dtype is None:
        if isinstance(value, bool) or (isinstance(value, np.ndarray) and value.dtype == np.bool_):
            dtype = "bool"
        elif isinstance(value, (np.ndarray, np.generic)):
            dtype = value.dtype.name
            if dtype == "float64" and not isinstance(value, np.ndarray):
                dtype = "float32"
        elif isinstance(value, float):
            dtype = "float32"
        elif isinstance(value, int):
            dtype = "int32"
        else:
            arr = np.asarray(value)
            dtype = {"float64": "float32", "int64": "int32"}.get(arr.dtype.name, arr.dtype.name)
    return Constant(np.asarray(value, dtype=dtype), span=span)


def var(name_hint: str, type_annotation=None, shape=None, dtype: str = "float32", span=None) -> Var:
    """Like tvm.relay.var: `var("x", shape=(2, 3))` or `var("x", TensorType(...))` or a dtype string."""
    if isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(shape, dtype)
    return Var(name_hint, type_annotation, span=span)
