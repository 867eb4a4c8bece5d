"""Types the program generator reasons with: tensors with static or symbolic (`?`) dims, tuples, functions, refs, Lists, Options."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

__all__ = [
    "Dim",
    "TensorT",
    "TupleT",
    "FuncT",
    "RefT",
    "ListT",
    "OptionT",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "DTYPES",
    "scalar",
    "is_static",
    "type_dims",
    "mentions_adt",
]

FLOAT_DTYPES = ("float32", "float64")
INT_DTYPES = ("int32", "int64")
DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)

_dim_ids = itertools.count()


class Dim:
    """A dimension printed as `?`. Two tensors share a Dim object exactly when their sizes agree at run
    time, which is what lets the generator combine them elementwise without a run-time shape error."""

    __slots__ = ("ident", "size")

    def __init__(self, size: int | None = None):
        self.ident = next(_dim_ids)
        self.size = size  # the run-time size, known for the dims of the entry's parameters

    def __repr__(self):
        return f"Dim#{self.ident}"


@dataclass(frozen=True, eq=True)
class TensorT:
    dtype: str
    shape: tuple  # of int | Dim

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    @property
    def is_int(self) -> bool:
        return self.dtype in INT_DTYPES

    def with_dtype(self, dtype: str) -> "TensorT":
        return TensorT(dtype, self.shape)

    def with_shape(self, shape) -> "TensorT":
        return TensorT(self.dtype, tuple(shape))

    def size(self) -> int | None:
        """Element count when every dim is static."""
        return math.prod(self.shape) if is_static(self) else None

    def text(self) -> str:
        if not self.shape:
            return self.dtype
        dims = ", ".join("?" if isinstance(d, Dim) else str(d) for d in self.shape)
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True, eq=True)
class TupleT:
    fields: tuple

    def text(self) -> str:
        if len(self.fields) == 1:
            return f"({self.fields[0].text()},)"
        return "(" + ", ".join(f.text() for f in self.fields) + ")"


@dataclass(frozen=True, eq=True)
class FuncT:
    params: tuple
    ret: object

    def text(self) -> str:
        return "fn (" + ", ".join(p.text() for p in self.params) + f") -> {self.ret.text()}"


@dataclass(frozen=True, eq=True)
class RefT:
    inner: object

    def text(self) -> str:
        return f"ref({self.inner.text()})"


@dataclass(frozen=True, eq=True)
class ListT:
    elem: object

    def text(self) -> str:
        return f"List[{self.elem.text()}]"


@dataclass(frozen=True, eq=True)
class OptionT:
    elem: object

    def text(self) -> str:
        return f"Option[{self.elem.text()}]"


def scalar(dtype: str) -> TensorT:
    return TensorT(dtype, ())


def is_static(t: TensorT) -> bool:
    return not any(isinstance(d, Dim) for d in t.shape)


def type_dims(t) -> list:
    """Every symbolic Dim mentioned by a type."""
    if isinstance(t, TensorT):
        return [d for d in t.shape if isinstance(d, Dim)]
    if isinstance(t, TupleT):
        return [d for f in t.fields for d in type_dims(f)]
    if isinstance(t, FuncT):
        return [d for p in (*t.params, t.ret) for d in type_dims(p)]
    if isinstance(t, (RefT,)):
        return type_dims(t.inner)
    if isinstance(t, (ListT, OptionT)):
        return type_dims(t.elem)
    return []


def mentions_adt(t) -> bool:
    if isinstance(t, (ListT, OptionT)):
        return True
    if isinstance(t, TupleT):
        return any(mentions_adt(f) for f in t.fields)
    if isinstance(t, FuncT):
        return any(mentions_adt(p) for p in (*t.params, t.ret))
    if isinstance(t, RefT):
        return mentions_adt(t.inner)
    return False
