"""Shared pieces of the nn TE lowerings: dtypes, layout permutations, casts (tvm is imported lazily)."""

from __future__ import annotations

from ._common import compute_dtype


def accumulate_dtype(out_dtype: str) -> str:
    """Dtype a reduction runs in: float16 sums in float32 like the numpy reference.

    Integers accumulate in the output dtype itself: two's-complement wrap-around gives the same
    bits as the reference's int64 sum cast back.
    """
    out_dtype = str(out_dtype)  # te tensors carry a tvm DataType, not a str
    acc = compute_dtype(out_dtype)
    return str(acc) if acc.kind == "f" else out_dtype


def cast(tensor, dtype: str):
    """`tensor` as `dtype` in a stage named T_cast (a schedule inlines it); no stage when it already is."""
    from tvm import te

    dtype = str(dtype)
    if str(tensor.dtype) == dtype:
        return tensor
    return te.compute(tensor.shape, lambda *i: tensor(*i).astype(dtype), name="T_cast", tag="elemwise")


def permute(tensor, src: str, dst: str):
    """Reorder the axes of `tensor` from layout `src` to layout `dst` (both permutations of the same letters)."""
    from tvm import topi

    if src == dst:
        return tensor
    return topi.transpose(tensor, [src.index(axis) for axis in dst])


def ints(values) -> list[int]:
    return [int(v) for v in values]


def dims(tensor) -> list:
    """Shape of a te.Tensor: Python ints for static dims, the symbolic PrimExpr otherwise."""
    from tvm import tirx

    return [int(d) if isinstance(d, tirx.IntImm) else d for d in tensor.shape]


def identity(tensor, name: str):
    """A copy of `tensor` as its own stage (an output may not be an input buffer of the PrimFunc)."""
    from tvm import te

    return te.compute(tensor.shape, lambda *i: tensor(*i), name=name)


def blocked_axes(layout: str) -> list[str]:
    """'NCHW4c' -> ['N', 'C', 'H', 'W', '4c'] (layouts were validated by the type relation)."""
    axes, digits = [], ""
    for char in layout:
        if char.isdigit():
            digits += char
        else:
            axes.append(digits + char)
            digits = ""
    return axes


def static_extent(dim, op_name: str, what: str) -> int:
    """A dimension the lowering needs as a number (e.g. an interpolated axis); `?` ones are unsupported."""
    from tvm import tirx

    value = dim.value if isinstance(dim, tirx.IntImm) else dim
    if not isinstance(value, int):
        from ..te_support import dynamic_shape_error

        raise dynamic_shape_error(op_name, f"the lowering needs a static {what}")
    return value


def output_shape(out_type, known: dict, op_name: str) -> list:
    """The output shape for te.compute: the type's static dims, and for each `?` dim at position i the
    symbolic input extent known[i] it equals (batch, channels); any other `?` dim is unsupported."""
    from ....ty import AnyDim

    shape = []
    for i, dim in enumerate(out_type.shape):
        if not isinstance(dim, AnyDim):
            shape.append(int(dim))
        elif i in known:
            shape.append(known[i])
        else:
            from ..te_support import dynamic_shape_error

            raise dynamic_shape_error(op_name, f"output dimension {i} is unknown")
    return shape
