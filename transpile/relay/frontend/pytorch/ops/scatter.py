"""Converters of ATen scatters: scatter/scatter_add/scatter_reduce (`scatter_elements`), index_put (`scatter_nd`, `where`).

`x[mask] = v` exports as index_put with a boolean mask; with one value for every masked element
it is a `where`. Integer index tensors over the leading dimensions become a `scatter_nd`.
"""

from __future__ import annotations

from ..converters import converter
from .support import cast, is_tensor, normalize_axis, operand

_REDUCTIONS = {
    "add": "add",
    "sum": "add",
    "multiply": "mul",
    "prod": "mul",
    "amax": "max",
    "amin": "min",
    "mean": "mean",
}


def _updates(ctx, x, index):
    """The `src` tensor, or the scalar `value` broadcast to the index's shape, in x's dtype."""
    b = ctx.b
    dtype = b.dtype_of(x)
    if ctx.has_arg("src"):
        return cast(b, ctx.tensor("src"), dtype)
    value = operand(b, ctx.arg("value"), dtype)
    return b.call("broadcast_to", value, shape=b.static_shape(index, "the scatter index"))


@converter(
    "aten.scatter.src",
    "aten.scatter.value",
    "aten.scatter.reduce",
    "aten.scatter.value_reduce",
    "aten.scatter_add.default",
    "aten.scatter_reduce.two",
)
def scatter(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    index = cast(b, ctx.tensor("index"), "int64")
    if ctx.target == "aten.scatter_add.default":
        reduction = "add"
    elif ctx.has_arg("reduce"):
        reduction = _REDUCTIONS.get(ctx.arg("reduce"))
        if reduction is None:
            raise ctx.unsupported(f"reduce={ctx.arg('reduce')!r}")
        if not ctx.arg("include_self", True):
            raise ctx.unsupported("include_self=False")
    else:
        reduction = "update"
    axis = normalize_axis(ctx, ctx.arg("dim"), b.ndim_of(x))
    return b.call("scatter_elements", x, index, _updates(ctx, x, index), axis=axis, reduction=reduction)


@converter("aten.index_put.default")
def index_put(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    dtype = b.dtype_of(x)
    indices = ctx.arg("indices")
    values = cast(b, ctx.tensor("values"), dtype)
    accumulate = bool(ctx.arg("accumulate", False))
    shape = b.shape_of(x)
    if len(indices) == 1 and is_tensor(indices[0]) and b.dtype_of(indices[0]) in ("bool", "uint8"):
        mask = cast(b, indices[0], "bool")
        mask_shape = b.shape_of(mask)
        if mask_shape != shape[: len(mask_shape)] or b.static_shape(values, "the assigned values") not in ([], [1]):
            raise ctx.unsupported("a boolean mask assignment of several values (its layout depends on the data)")
        mask = b.call("reshape", mask, newshape=[int(d) for d in mask_shape] + [1] * (len(shape) - len(mask_shape)))
        values = b.call("reshape", values, newshape=[])
        if accumulate:
            values = b.call("add", x, values)
        return b.call("where", mask, values, x)
    if any(i is None for i in indices) or any(b.dtype_of(i) in ("bool", "uint8") for i in indices):
        raise ctx.unsupported("index_put with sliced dimensions or several boolean masks")
    # scatter_nd: indices (M, *B), updates (*B, *rest) for data (X_0..X_{M-1}, *rest).
    import numpy as np

    index_shapes = [b.static_shape(i, "an index tensor") for i in indices]
    batch = list(np.broadcast_shapes(*[tuple(s) for s in index_shapes]))
    stacked = b.call("stack", [b.call("broadcast_to", cast(b, i, "int64"), shape=batch) for i in indices], axis=0)
    rest = b.static_shape(x, "the indexed tensor")[len(indices) :]
    updates = b.call("broadcast_to", values, shape=batch + rest)
    return b.call("scatter_nd", x, stacked, updates, mode="add" if accumulate else "update")
