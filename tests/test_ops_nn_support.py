"""Support for the nn operator tests (no tests here): run a registered operator's relation and numpy impl."""

from __future__ import annotations

import numpy as np

from transpile.relay.op import registry
from transpile.relay.ty import Any, TensorType, TupleType

__all__ = ["T", "Any", "TupleType", "infer", "run", "attrs_of"]


def T(*shape, dtype="float32"):
    return TensorType(shape, dtype)


def attrs_of(op_name, **given):
    return registry.normalize_attrs(registry.get(op_name), given)


def infer(op_name, arg_types, **given):
    opdef = registry.get(op_name)
    return opdef.type_rel(list(arg_types), registry.normalize_attrs(opdef, given))


def run(op_name, *arrays, **given):
    """Infer the output type from the arrays, then evaluate the numpy implementation."""
    opdef = registry.get(op_name)
    attrs = registry.normalize_attrs(opdef, given)
    arrays = [np.asarray(a) for a in arrays]
    out_type = opdef.type_rel([TensorType(a.shape, a.dtype.name) for a in arrays], attrs)
    result = opdef.numpy_impl(arrays, attrs, out_type)
    fields = out_type.fields if isinstance(out_type, TupleType) else [out_type]
    values = result if isinstance(out_type, TupleType) else [result]
    for field, value in zip(fields, values):
        assert value.shape == field.shape, (value.shape, field.shape)
        assert value.dtype.name == field.dtype, (value.dtype, field.dtype)
    return result
