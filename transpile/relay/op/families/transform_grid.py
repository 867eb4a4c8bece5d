"""Grid-shaped transforms: trilu (triangular part of the last two axes) and meshgrid (coordinate grids)."""

from __future__ import annotations

import numpy as np

from ...ty import TensorType, TupleType
from ..common import expect_tuple_of_tensors, fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, register
from .support import as_out, is_integral, tensor_args, to_bool

__all__ = []


# ---------------------------------------------------------------- trilu


def _trilu_rel(arg_types, attrs):
    data, k = tensor_args(arg_types, 2, "trilu", ["data", "k"])
    if k.ndim != 0 or not is_integral(k.dtype):
        raise RelationError(f"trilu: k must be a 0-d integer tensor, got {fmt_type(k)}")
    if data.ndim < 2:
        raise RelationError(
            f"trilu: data must have rank 2 or more (matrices on the last two axes), got {fmt_type(data)}"
        )
    return TensorType(data.shape, data.dtype)


def _trilu_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    k = int(np.asarray(args[1]))
    return as_out(np.triu(x, k) if attrs.upper else np.tril(x, k), out_type)


def _te_trilu(inputs, attrs, out_type):
    from tvm import topi

    data, k = inputs
    return topi.trilu(data, k(), bool(attrs.upper))


class TriluOpDef(OpDef):
    """relay.trilu(data, k, upper=True): a Python int k becomes an int32 constant, as in TVM."""

    def __call__(self, data, k, upper=True):
        from ...expr import Expr, const

        if not isinstance(k, Expr):
            k = const(np.asarray(k, dtype="int32"))
        return super().__call__(data, k, upper=upper)


# ---------------------------------------------------------------- meshgrid


def _meshgrid_rel(arg_types, attrs):
    if len(arg_types) != 1:
        raise RelationError(f"meshgrid: expected 1 argument (a tuple of tensors), got {len(arg_types)}")
    fields = expect_tuple_of_tensors(arg_types[0], "meshgrid")
    if not fields:
        raise RelationError("meshgrid: expects a non-empty tuple of tensors")
    if attrs.indexing not in ("ij", "xy"):
        raise RelationError(f"meshgrid: indexing must be ij or xy, got {attrs.indexing!r}")
    dtype = fields[0].dtype
    shape = []
    for f in fields:
        if f.dtype != dtype:
            raise RelationError(
                f"meshgrid: all tensors must have the same dtype, got {fmt_type(fields[0])} and {fmt_type(f)}"
            )
        if f.ndim > 1:
            raise RelationError(f"meshgrid: every tensor must be a scalar or a 1-D vector, got {fmt_type(f)}")
        shape.append(f.shape[0] if f.ndim == 1 else 1)
    if attrs.indexing == "xy" and len(shape) >= 2:  # cartesian: the first two axes swap
        shape[0], shape[1] = shape[1], shape[0]
    return TupleType([TensorType(shape, dtype) for _ in fields])


def _meshgrid_impl(args, attrs, out_type):
    vectors = [np.asarray(a).reshape(-1) for a in args[0]]
    grids = np.meshgrid(*vectors, indexing=attrs.indexing)
    return tuple(as_out(g, t) for g, t in zip(grids, out_type.fields))


def _te_meshgrid(inputs, attrs, out_type):
    from tvm import topi

    return list(topi.meshgrid(list(inputs[0]), attrs.indexing))


register(
    TriluOpDef(
        "trilu",
        2,
        _trilu_rel,
        OpPattern.ELEMWISE,  # as TVM registered it
        _trilu_impl,
        attrs=(AttrField("upper", True, to_bool),),
        te_impl=_te_trilu,
    )
)
register(
    OpDef(
        "meshgrid",
        1,
        _meshgrid_rel,
        OpPattern.INJECTIVE,
        _meshgrid_impl,
        attrs=(AttrField("indexing", "ij", str),),
        tuple_input=True,
        te_impl=_te_meshgrid,
    )
)
