"""TVM's `tvm.ir` as Relay code used it: IRModule, structural equality, spans and the type nodes."""

from ...relay.source import SourceName, Span
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
from ...relay.attrs import Attrs
from .. import transform

RelayRefType = RefType


def make_node(type_key: str, **fields):
    """TVM's generic node constructor, for the node kinds Relay code built with it: attributes.

    "DictAttrs" gives plain attributes (a function's `Primitive=1`, …); any other "…Attrs" key gives
    attributes that remember their type key as the field `attrs_type_key`, which is how TVM's text
    format printed and parsed the attributes of a call to a non-operator.
    """
    if type_key == "DictAttrs":
        return Attrs(fields)
    if type_key.endswith("Attrs"):
        return Attrs(fields, attrs_type_key=type_key)
    raise TypeError(f"tvm.ir.make_node: transpile builds only attribute nodes, not {type_key!r}")

__all__ = [
    "IRModule",
    "Span",
    "SourceName",
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
    "make_node",
    "Attrs",
]

from . import diagnostics  # noqa: E402
