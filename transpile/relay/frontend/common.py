"""What every importer shares: a typed, constant-folding graph builder over the operator registry, and its errors.

Importers (ONNX, PyTorch) translate one source node at a time into calls of *registered* Relay
operators through `GraphBuilder.call`. Each call is typed on the spot by the operator's type
relation (so a converter can ask the shape and dtype of anything it built, in O(1)), and a call
whose arguments are all constants is evaluated by the operator's numpy implementation and becomes
a constant. That is how shape computations (`Shape`, `Gather` on shapes, `ConstantOfShape`,
`aten.sym_size`…) fold away at import, as they did in TVM's frontends.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from ...errors import TranspileError
from .. import expr as E
from ..module import IRModule
from ..op.registry import RelationError, lookup, make_call, normalize_attrs
from ..ty import AnyDim, TensorType, TupleType

__all__ = [
    "FrontendError",
    "UnsupportedOperatorsError",
    "GraphBuilder",
    "UnsupportedOp",
    "FOLD_LIMIT",
]

# Largest result (elements) folded at import when it is larger than the inputs it comes from:
# shape arithmetic and weight transforms fold, a big broadcast of a scalar stays a call.
FOLD_LIMIT = 1 << 22


class FrontendError(TranspileError):
    """A model cannot be imported: malformed, ill-typed, or using what Relay cannot express."""


@dataclass(frozen=True)
class UnsupportedOp:
    """One node the importer has no conversion for."""

    op: str
    node: str
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.op} (node {self.node!r})"
        return f"{text}: {self.detail}" if self.detail else text


class UnsupportedOperatorsError(FrontendError):
    """The model uses operators the importer cannot convert; `unsupported` lists every one of them."""

    def __init__(self, source: str, unsupported: list[UnsupportedOp]):
        self.source = source
        self.unsupported = list(unsupported)
        kinds = sorted({u.op for u in unsupported})
        lines = "\n".join(f"  - {u}" for u in unsupported)
        super().__init__(
            f"{source} model uses {len(kinds)} unsupported operator kind(s) ({', '.join(kinds)}) "
            f"in {len(unsupported)} node(s):\n{lines}"
        )


class GraphBuilder:
    """Builds a typed Relay dataflow graph node by node; see the module docstring."""

    def __init__(self, source: str, fold_constants: bool = True):
        self.source = source
        self.fold_constants = fold_constants
        self._where: list[str] = []

    # ------------------------------------------------------------------ context for errors
    @contextlib.contextmanager
    def at(self, where: str):
        """Errors raised inside name `where` (e.g. "node 'conv1' (Conv)")."""
        self._where.append(where)
        try:
            yield
        finally:
            self._where.pop()

    def error(self, message: str) -> FrontendError:
        prefix = f"{self.source}: " + (f"{self._where[-1]}: " if self._where else "")
        return FrontendError(prefix + message)

    # ------------------------------------------------------------------ leaves
    def input(self, name: str, shape, dtype: str) -> E.Var:
        shape = [AnyDim() if d is None or isinstance(d, AnyDim) else int(d) for d in shape]
        return E.var(name, TensorType(shape, dtype))

    def const(self, value, dtype: str | None = None) -> E.Constant:
        array = np.asarray(value)
        if dtype is not None:
            array = array.astype(dtype)
        elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
            array = array.astype("float32")
        # np.require keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
        constant = E.Constant(np.require(array, requirements="C"))
        constant._set_checked_type(TensorType(array.shape, array.dtype.name))
        return constant

    # ------------------------------------------------------------------ operator calls
    def call(self, op_name: str, *args, **attrs) -> E.Expr:
        """A call of registered operator `op_name`, typed now; folded to a constant when every argument is one."""
        opdef = lookup(op_name)
        if opdef is None:
            raise self.error(f"operator {op_name} is not in the registry (importer bug)")
        inputs = list(args)
        if opdef.tuple_input and inputs and isinstance(inputs[0], (list, tuple)):
            inputs[0] = self.tuple(inputs[0])
        inputs = [a if isinstance(a, E.Expr) else self.const(a) for a in inputs]
        try:
            call = make_call(op_name, inputs, attrs)
        except (TypeError, ValueError) as exc:
            raise self.error(f"{op_name}: {exc}") from None
        arg_types = [self.type_of(a) for a in inputs]
        try:
            out_type = opdef.type_rel(arg_types, call.attrs)
        except RelationError as exc:
            raise self.error(str(exc)) from None
        call._set_checked_type(out_type)
        if self.fold_constants:
            folded = self._fold(opdef, call, out_type)
            if folded is not None:
                return folded
        return call

    def tuple(self, fields) -> E.Expr:
        fields = [f if isinstance(f, E.Expr) else self.const(f) for f in fields]
        node = E.Tuple(fields)
        node._set_checked_type(TupleType([self.type_of(f) for f in fields]))
        return node

    def get(self, value: E.Expr, index: int) -> E.Expr:
        """Field `index` of a tuple value (the field itself when the tuple is literal)."""
        if isinstance(value, E.Tuple):
            return value.fields[index]
        ty = self.type_of(value)
        if not isinstance(ty, TupleType):
            raise self.error(f"cannot take field {index} of a non-tuple value")
        node = E.TupleGetItem(value, index)
        node._set_checked_type(ty.fields[index])
        return node

    # ------------------------------------------------------------------ questions about built values
    def type_of(self, value: E.Expr):
        ty = getattr(value, "checked_type_", None)
        if ty is None:
            if isinstance(value, E.Var):
                ty = value.type_annotation
            elif isinstance(value, E.Constant):
                ty = TensorType(value.data.shape, value.data.dtype.name)
        if ty is None:
            raise self.error("internal: a value without a type reached the builder")
        return ty

    def shape_of(self, value: E.Expr) -> list:
        """The static shape: ints, with AnyDim for unknown dimensions."""
        ty = self.type_of(value)
        if not isinstance(ty, TensorType):
            raise self.error("expected a tensor, got a tuple")
        return list(ty.shape)

    def static_shape(self, value: E.Expr, what: str = "input") -> list[int]:
        shape = self.shape_of(value)
        if any(isinstance(d, AnyDim) for d in shape):
            raise self.error(f"the shape of {what} must be known at import, got {self.type_of(value)}")
        return [int(d) for d in shape]

    def dtype_of(self, value: E.Expr) -> str:
        return self.type_of(value).dtype

    def ndim_of(self, value: E.Expr) -> int:
        return len(self.shape_of(value))

    @staticmethod
    def value_of(value: E.Expr) -> np.ndarray | None:
        """The constant value of `value`, or None when it is only known at run time."""
        return value.data if isinstance(value, E.Constant) else None

    def require_value(self, value: E.Expr, what: str) -> np.ndarray:
        """The constant value of `value`; an error naming `what` when it depends on run-time data."""
        data = self.value_of(value)
        if data is None:
            raise self.error(
                f"{what} must be a constant at import (it depends on run-time values; "
                "fix the input shapes with shape=... so it folds)"
            )
        return data

    # ------------------------------------------------------------------ folding
    def _fold(self, opdef, call: E.Call, out_type):
        if opdef.name in _NEVER_FOLD:
            return None
        args = []
        for a in call.args:
            if isinstance(a, E.Constant):
                args.append(a.data)
            elif isinstance(a, E.Tuple) and all(isinstance(f, E.Constant) for f in a.fields):
                args.append(tuple(f.data for f in a.fields))
            else:
                return self._fold_shape_query(opdef, call, out_type)
        out_size = _type_size(out_type)
        in_size = sum(np.size(x) if not isinstance(x, tuple) else sum(np.size(y) for y in x) for x in args)
        if out_size is None or out_size > max(FOLD_LIMIT, in_size):
            return None
        with np.errstate(all="ignore"):
            result = opdef.numpy_impl(args, call.attrs, out_type)
        return self._as_constant(result, out_type)

    def _fold_shape_query(self, opdef, call, out_type):
        """shape_of / ndarray_size of a statically shaped tensor is a constant."""
        if opdef.name not in ("shape_of", "ndarray_size"):
            return None
        ty = self.type_of(call.args[0])
        if not isinstance(ty, TensorType) or ty.concrete_shape is None:
            return None
        shape = ty.concrete_shape
        if opdef.name == "shape_of":
            return self.const(np.array(shape, dtype=call.attrs.dtype))
        return self.const(np.array(int(np.prod(shape, dtype=np.int64)), dtype=call.attrs.dtype))

    def _as_constant(self, result, ty):
        if isinstance(ty, TupleType):
            return self.tuple([self._as_constant(r, t) for r, t in zip(result, ty.fields)])
        array = np.asarray(result)
        if array.dtype != np.dtype(ty.dtype):
            array = array.astype(ty.dtype)
        return self.const(array)

    # ------------------------------------------------------------------ the result
    def module(self, params: list[E.Var], outputs: list[E.Expr]) -> IRModule:
        """`def @main(params) { outputs }` (a tuple when there are several), type-checked."""
        from ..typing import infer_type

        body = outputs[0] if len(outputs) == 1 else E.Tuple(list(outputs))
        func = E.Function(list(params), body)
        mod = IRModule.from_expr(func)
        try:
            return infer_type(mod)
        except TranspileError as exc:
            raise FrontendError(f"{self.source}: the imported program does not type-check: {exc}") from None


# Operators whose value must not be computed at import even on constant inputs.
_NEVER_FOLD = frozenset({"nn.dropout"})


def _type_size(ty) -> int | None:
    if isinstance(ty, TupleType):
        sizes = [_type_size(f) for f in ty.fields]
        return None if any(s is None for s in sizes) else sum(sizes)
    if not isinstance(ty, TensorType) or ty.concrete_shape is None:
        return None
    return int(np.prod(ty.concrete_shape, dtype=np.int64))

