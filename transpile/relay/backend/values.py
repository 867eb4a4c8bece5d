"""Run-time values as TVM's executors presented them, and their conversion to and from transpile's.

transpile's backends exchange plain values (numpy arrays, tuples, `runtime.ADTValue`,
`runtime.RefValue`, Python callables). Code written for TVM <= 0.19 expects instead:

    tensor      -> NDArray (a numpy array with .numpy() / .asnumpy())
    tuple       -> ADT, a read-only sequence with .tag == 0 (graph executor: a list)
    ADT value   -> ConstructorValue(tag, fields, constructor) from the interpreter ("debug"),
                   ADT(tag, fields) from the VM
    reference   -> RefValue (.value)
    closure     -> a callable taking and returning these values

Conversion of results is lazy: a ConstructorValue or ADT converts its fields when they are read,
so a long list costs nothing until it is walked and deep values never recurse here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import TranspileError
from ...runtime import ADTValue
from ..expr import Call, Constant, Constructor, Expr, Tuple
from ...runtime import RefValue as RuntimeRef

__all__ = [
    "NDArray",
    "ADT",
    "ConstructorValue",
    "RefValue",
    "FunctionValue",
    "ResultStyle",
    "ValueConversionError",
    "to_runtime",
    "to_ndarray",
]


class ValueConversionError(TranspileError):
    """A Python value cannot stand for a Relay value (or a result names an unknown constructor)."""


class NDArray(np.ndarray):
    """A tensor as TVM's runtime.NDArray showed it: a numpy array with TVM's accessors."""

    def numpy(self) -> np.ndarray:
        """A plain numpy copy of the data (TVM copied to host memory)."""
        return np.array(self.view(np.ndarray), copy=True)

    asnumpy = numpy

    @property
    def device(self):
        from ...tvm_compat.device import cpu

        return cpu(0)

    def copyto(self, target):
        """A copy on `target` (a device: every transpile tensor lives in host memory) or into an NDArray."""
        if isinstance(target, np.ndarray):
            _copy_into(target, self)
            return target
        return to_ndarray(np.array(self.view(np.ndarray), copy=True))

    def copyfrom(self, source):
        """Overwrites the data with `source` (same shape; converted to this array's dtype)."""
        _copy_into(self, source)
        return self

    def same_as(self, other) -> bool:
        return self is other


def _copy_into(target: np.ndarray, source) -> None:
    source = np.asarray(source)
    if source.shape != target.shape:
        raise ValueConversionError(f"cannot copy an array of shape {source.shape} into one of shape {target.shape}")
    target[...] = source


def to_ndarray(value) -> NDArray:
    """`value` (an array, numpy scalar or anything np.asarray takes) as an NDArray, without copying arrays."""
    array = np.asarray(value)
    return array.view(NDArray)


class ADT(Sequence):
    """TVM's runtime.container.ADT: a tuple (tag 0) or, from the VM, a constructor's fields with its tag."""

    __slots__ = ("tag", "constructor", "_raw", "_style", "_converted")

    def __init__(self, tag, fields):
        self.tag = int(tag)
        self.constructor = None
        self._raw = tuple(fields)
        self._style = None  # fields given by the user are returned as given
        self._converted = None

    @classmethod
    def _of_result(cls, tag: int, raw_fields: tuple, style: "ResultStyle", constructor=None) -> "ADT":
        adt = cls.__new__(cls)
        adt.tag = tag
        adt.constructor = constructor
        adt._raw = raw_fields
        adt._style = style
        adt._converted = None
        return adt

    def _fields(self) -> list:
        if self._converted is None:
            if self._style is None:
                self._converted = list(self._raw)
            else:
                self._converted = [self._style.convert(field) for field in self._raw]
        return self._converted

    def __len__(self):
        return len(self._raw)

    def __getitem__(self, index):
        return self._fields()[index]

    def __iter__(self):
        return iter(self._fields())

    def __repr__(self):
        name = self.constructor.name_hint if self.constructor is not None else "tuple"
        return f"ADT({name}, tag={self.tag}, {self._fields()!r})"

    def _as_runtime(self):
        if self._style is not None:
            if self.constructor is not None:
                return ADTValue(self.constructor.name_hint, self._raw)
            return self._raw
        fields = tuple(to_runtime(field) for field in self._raw)
        if self.constructor is not None:
            return ADTValue(self.constructor.name_hint, fields)
        return fields


def tuple_object(fields=None) -> ADT:
    """TVM's runtime.container.tuple_object: a tuple value from its fields."""
    return ADT(0, fields or [])


class ConstructorValue:
    """A value of an algebraic data type as TVM's interpreter returned it: tag, fields, constructor."""

    __slots__ = ("tag", "constructor", "_fields", "_raw", "_style")

    def __init__(self, tag, fields, constructor):
        self.tag = int(tag)
        self.constructor = constructor
        self._fields = tuple(fields)
        self._raw = None
        self._style = None

    @classmethod
    def _of_result(cls, raw: ADTValue, constructor, style: "ResultStyle") -> "ConstructorValue":
        value = cls.__new__(cls)
        value.tag = constructor.tag
        value.constructor = constructor
        value._fields = None
        value._raw = raw
        value._style = style
        return value

    @property
    def fields(self) -> tuple:
        if self._fields is None:
            self._fields = tuple(self._style.convert(field) for field in self._raw.fields)
        return self._fields

    def __repr__(self):
        name = getattr(self.constructor, "name_hint", "?")
        return f"ConstructorValue({name}, tag={self.tag}, fields={list(self.fields)!r})"

    def _as_runtime(self) -> ADTValue:
        if self._raw is not None:
            return self._raw
        name = getattr(self.constructor, "name_hint", None)
        if not isinstance(name, str):
            raise ValueConversionError(
                f"ConstructorValue needs a relay.Constructor as its constructor, got {type(self.constructor).__name__}"
            )
        return ADTValue(name, tuple(to_runtime(field) for field in self._fields))


class RefValue:
    """A mutable reference cell as TVM's interpreter returned it (`.value`).

    One returned by a program shares its cell with the program (a later write through another
    alias shows here); one made in Python becomes a fresh cell holding its value when passed in.
    """

    __slots__ = ("_cell", "_style", "_value")

    def __init__(self, value):
        self._cell = None
        self._style = None
        self._value = value

    @classmethod
    def _of_result(cls, cell: RuntimeRef, style: "ResultStyle") -> "RefValue":
        ref = cls.__new__(cls)
        ref._cell = cell
        ref._style = style
        ref._value = None
        return ref

    @property
    def value(self):
        if self._cell is None:
            return self._value
        return self._style.convert(self._cell.value)

    def __repr__(self):
        return f"RefValue({self.value!r})"

    def _as_runtime(self) -> RuntimeRef:
        if self._cell is not None:
            return self._cell
        return RuntimeRef(to_runtime(self._value))


class FunctionValue:
    """A closure returned by a program: called with TVM-style values, it returns TVM-style values."""

    __slots__ = ("_function", "_style", "__weakref__")

    def __init__(self, function, style: "ResultStyle"):
        self._function = function
        self._style = style

    def __call__(self, *args):
        return self._style.convert(self._function(*(to_runtime(arg, self._style.lists) for arg in args)))

    def __repr__(self):
        return f"<Relay closure {self._function!r}>"


def to_runtime(value, lists: str = "tensor"):
    """The transpile value for a TVM-style argument (NDArray, numpy, number, ADT, ConstructorValue…).

    `lists` says what a Python list stands for: "tensor" (TVM's interpreter made a constant of
    it) or "tuple" (TVM's VM made a tuple of it).
    """
    if isinstance(value, np.ndarray):
        return value.view(np.ndarray) if type(value) is not np.ndarray else value
    if isinstance(value, (ConstructorValue, ADT, RefValue)):
        return value._as_runtime()
    if isinstance(value, FunctionValue):
        return value._function
    if isinstance(value, tuple):
        return tuple(to_runtime(field, lists) for field in value)
    if isinstance(value, list):
        if lists == "tuple":
            return tuple(to_runtime(field, lists) for field in value)
        return np.asarray([to_runtime(field, lists) for field in value])
    if isinstance(value, Expr):
        return _literal_value(value)
    return value


def _literal_value(expr):
    """The value of a literal expression: constants, tuples of them and constructor applications
    (relay-aot accepted `s(s(z()))` as an argument)."""
    if isinstance(expr, Constant):
        return np.array(expr.data, copy=True)
    if isinstance(expr, Tuple):
        return tuple(_literal_value(field) for field in expr.fields)
    if isinstance(expr, Call) and isinstance(expr.op, Constructor):
        return ADTValue(expr.op.name_hint, tuple(_literal_value(arg) for arg in expr.args))
    raise ValueConversionError(
        f"a {type(expr).__name__} expression is not a value: pass arrays, numbers, tuples, ConstructorValue, "
        "or literal expressions (constants, tuples, constructor applications)"
    )


class ResultStyle:
    """How one executor kind shows results; resolves constructor names against the program's module."""

    __slots__ = ("module", "kind", "lists", "_constructors")

    def __init__(self, module, kind: str):
        if kind not in ("debug", "vm", "graph"):
            raise ValueConversionError(f"unknown result style {kind!r} (expected debug, vm or graph)")
        self.module = module
        self.kind = kind
        self.lists = "tensor" if kind == "debug" else "tuple"
        self._constructors = None

    def constructor(self, name: str):
        if self._constructors is None:
            self._constructors = {ctor.name_hint: ctor for ctor in self.module.constructors()}
        found = self._constructors.get(name)
        if found is None:
            raise ValueConversionError(
                f"the program returned a value of constructor {name}, which its module does not define"
            )
        return found

    def convert(self, value):
        """The TVM-style value for a transpile result (lazy below the top level)."""
        if isinstance(value, np.ndarray):
            return value if type(value) is NDArray else value.view(NDArray)
        if isinstance(value, np.generic):
            return to_ndarray(value)
        if isinstance(value, tuple):
            if self.kind == "graph":
                return [self.convert(field) for field in value]
            return ADT._of_result(0, value, self)
        if isinstance(value, ADTValue):
            constructor = self.constructor(value.constructor)
            if self.kind == "debug":
                return ConstructorValue._of_result(value, constructor, self)
            return ADT._of_result(constructor.tag, value.fields, self, constructor)
        if isinstance(value, RuntimeRef):
            return RefValue._of_result(value, self)
        if callable(value):
            return FunctionValue(value, self)
        return value
