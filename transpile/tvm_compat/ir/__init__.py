"""TVM's `tvm.ir` as Relay code used it: IRModule, structural equality, spans and the type nodes."""

from ...errors import Span
from ...relay.expr import Op
from ...relay.module import IRModule
from ...relay.structural import assert_structural_equal, structural_equal, structural_hash
from ...relay.ty import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeKind,
    TypeVar,
)
from .. import transform

RelayRefType = RefType

__all__ = [
    "IRModule",
    "Span",
    "Op",
    "structural_equal",
    "assert_structural_equal",
    "structural_hash",
    "transform",
    "Type",
    "TypeKind",
    "TypeVar",
    "GlobalTypeVar",
    "TypeCall",
    "TupleType",
    "TensorType",
    "FuncType",
    "IncompleteType",
    "RelayRefType",
]

from . import diagnostics  # noqa: E402
