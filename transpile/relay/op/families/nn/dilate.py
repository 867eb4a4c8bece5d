"""nn.dilate: spread the elements of a tensor `strides[i]` apart along each axis (TVM's DilateRel / topi.nn.dilate).

out[i * strides] = data[i]; every other element is dilation_value (cast to the data's dtype as
`cast` does). An axis of extent n becomes (n - 1) * stride + 1 long (0 stays 0, where TVM's
formula gave 1 - stride).
"""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..support import as_out
from ._common import NNOpDef, is_any, to_float, to_ints


def _dilated(extent, stride):
    return (extent - 1) * stride + 1 if extent > 0 else 0


def _dilate_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.dilate", "data")
    if len(attrs.strides) != data.ndim:
        raise RelationError(
            f"nn.dilate: strides {list(attrs.strides)} must have one entry per axis of data {fmt_type(data)}"
        )
    if any(s is None or s < 1 for s in attrs.strides):
        raise RelationError(f"nn.dilate: strides must be positive, got {list(attrs.strides)}")
    shape = [AnyDim() if is_any(d) else _dilated(d, s) for d, s in zip(data.shape, attrs.strides)]
    return TensorType(shape, data.dtype)


def _dilate_impl(args, attrs, out_type):
    data = np.asarray(args[0])
    fill = as_out(np.float64(attrs.dilation_value), out_type)
    out = np.full([_dilated(d, s) for d, s in zip(data.shape, attrs.strides)], fill, dtype=fill.dtype)
    out[tuple(slice(None, None, s) for s in attrs.strides)] = data
    return out


def _dilate_te(inputs, attrs, out_type):
    from tvm import te, tirx

    from ..te_support import cast, const, is_static

    data = inputs[0]
    fill = cast(const(attrs.dilation_value, "float64"), str(data.dtype))
    shape = [
        _dilated(int(d), s) if is_static(d) else tirx.Select(d > 0, (d - 1) * s + 1, 0)
        for d, s in zip(data.shape, attrs.strides)
    ]

    def body(*index):
        on_grid = [tirx.floormod(i, s) == 0 for i, s in zip(index, attrs.strides) if s != 1]
        source = [i if s == 1 else tirx.floordiv(i, s) for i, s in zip(index, attrs.strides)]
        if not on_grid:
            return data(*source)
        return tirx.if_then_else(tirx.all(*on_grid), data(*source), fill)

    return te.compute(shape, body, name="T_dilate", tag="injective")


register(
    NNOpDef(
        "nn.dilate",
        1,
        _dilate_rel,
        OpPattern.INJECTIVE,
        _dilate_impl,
        te_impl=_dilate_te,
        attrs=(
            AttrField("strides", (1, 1), to_ints, "the spacing of the elements along each axis (1: unchanged)"),
            AttrField("dilation_value", 0.0, to_float, "the value between the spread elements"),
        ),
        extras={"support_level": 10},
        description="Spread the elements strides[i] apart along each axis, filling the gaps with dilation_value.",
    )
)
