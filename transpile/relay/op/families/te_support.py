"""Helpers for the TE lowerings (`te_impl`) of the elementwise, reduction and transform operators.

tvm is imported inside the functions: `import transpile.relay` must not import tvm.
Semantics follow the registry's numpy_impl (the reference), not TVM's own quirks.
"""

from __future__ import annotations

from ...ty import AnyDim

__all__ = [
    "dynamic_shape_error",
    "dtype_of",
    "static_shape",
    "out_shape",
    "const",
    "cast",
    "is_float_dtype",
    "is_signed_dtype",
    "bits_of",
    "broadcast_index",
    "broadcast_compute",
    "map_compute",
    "reduce_compute",
    "comm_reducer",
    "has_zero_extent",
]


def dynamic_shape_error(op_name: str, detail: str = ""):
    from ....errors import UnsupportedFeatureError

    return UnsupportedFeatureError(
        f"{op_name} with a data-dependent output shape", "te", detail=detail or "the TE lowering needs static shapes"
    )


def static_shape(ty, op_name: str) -> tuple[int, ...]:
    """The shape of a tensor type, which must be fully static."""
    if any(isinstance(d, AnyDim) for d in ty.shape):
        raise dynamic_shape_error(op_name)
    return tuple(int(d) for d in ty.shape)


def out_shape(ty, like_tensors=()):
    """The output shape: static dims from the type, unknown ones taken from the inputs (symbolic shapes)."""
    shape = []
    rank = len(ty.shape)
    for i, dim in enumerate(ty.shape):
        if not isinstance(dim, AnyDim):
            shape.append(int(dim))
            continue
        found = None
        for t in like_tensors:
            k = i - (rank - len(t.shape))
            if k >= 0 and not _is_one(t.shape[k]):
                found = t.shape[k]
                break
        if found is None:
            raise dynamic_shape_error("operator", f"dimension {i} of the output is unknown")
        shape.append(found)
    return shape


def _is_one(dim) -> bool:
    value = getattr(dim, "value", dim)
    return isinstance(value, int) and value == 1


def dtype_of(expr) -> str:
    """The dtype of a PrimExpr (tvm 0.27 exprs carry it as `.ty`, a PrimType; comparisons are lazy objects)."""
    if not hasattr(expr, "ty") and hasattr(expr, "asobject"):
        expr = expr.asobject()
    ty = getattr(expr, "ty", None)
    return str(ty.dtype) if ty is not None else str(expr.dtype)


def is_float_dtype(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_signed_dtype(dtype: str) -> bool:
    return dtype.startswith("int")


def bits_of(dtype: str) -> int:
    if dtype == "bool":
        return 8
    return int("".join(ch for ch in dtype if ch.isdigit()))


def const(value, dtype: str):
    from tvm import tirx

    if dtype == "bool":
        return tirx.const(bool(value), "bool")
    if is_float_dtype(dtype):
        return tirx.const(float(value), dtype)
    return tirx.const(int(value), dtype)


def cast(value, dtype: str):
    """numpy's astype: to bool means `!= 0` (nan is True), float to int truncates like C on x86."""
    from tvm import tirx

    source = dtype_of(value)
    if source == dtype:
        return value
    if dtype == "bool":
        if is_float_dtype(source):
            # LLVM's ordered `!=` (and simplified Not(x == 0)) would turn nan into False.
            return tirx.Or(value != const(0, source), tirx.isnan(value))
        return value != const(0, source)
    if is_float_dtype(source) and not is_float_dtype(dtype) and bits_of(dtype) < 64:
        # numpy converts through a 32-bit (64-bit for uint32) register and keeps the low bits:
        # 1000.0 -> int8 is -24 and nan -> int8/int16 is 0, where LLVM's fptosi would be poison.
        wide = "int64" if dtype == "uint32" else "int32"
        return value.astype(wide).astype(dtype)
    return value.astype(dtype)


def broadcast_index(tensor, indices):
    """Numpy broadcasting: the index into `tensor` for an output index (dims of size 1 read 0)."""
    offset = len(indices) - len(tensor.shape)
    return [0 if _is_one(dim) else indices[offset + k] for k, dim in enumerate(tensor.shape)]


def broadcast_compute(inputs, out_type, fn, name: str):
    """out[i] = fn(*[x[broadcast i] for x in inputs]) over the output type's shape."""
    from tvm import te

    shape = out_shape(out_type, inputs)

    def body(*indices):
        return fn(*[t(*broadcast_index(t, indices)) for t in inputs])

    return te.compute(shape, body, name=name)


def map_compute(x, fn, name: str):
    """An elementwise compute of one tensor."""
    from tvm import te

    return te.compute(x.shape, lambda *i: fn(x(*i)), name=name)


def comm_reducer(combine, identity_of, name: str):
    from tvm import te

    return te.comm_reducer(combine, lambda dtype: identity_of(dtype), name=name)


def has_zero_extent(x, axes) -> bool:
    return any(_is_zero(x.shape[a]) for a in axes)


def _is_zero(dim) -> bool:
    value = getattr(dim, "value", dim)
    return isinstance(value, int) and value == 0


def reduce_compute(x, axes, keepdims: bool, reducer, name: str, value_fn=None, empty=0):
    """reducer(value_fn(x[...])) over `axes` (sorted, normalized) with or without kept dims.

    `reducer` is te.sum / te.max / te.min or a te.comm_reducer. `empty` is the result of a reduction
    over zero elements (a TIR reduction over an empty loop would never run its init).
    """
    from tvm import te

    axes = tuple(axes)
    rvars = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    if keepdims:
        shape = [1 if i in axes else x.shape[i] for i in range(len(x.shape))]
    else:
        shape = [x.shape[i] for i in range(len(x.shape)) if i not in axes]

    def element(full):
        value = x(*full)
        return value_fn(value) if value_fn is not None else value

    if has_zero_extent(x, axes):
        fill = const(empty, dtype_of(element([0] * len(x.shape))))
        return te.compute(shape, lambda *indices: fill, name=name)

    def body(*indices):
        full, pos = [], 0
        for i in range(len(x.shape)):
            if i in rvars:
                full.append(rvars[i])
                pos += 1 if keepdims else 0
            else:
                full.append(indices[pos])
                pos += 1
        return reducer(element(full), axis=[rvars[a] for a in axes])

    return te.compute(shape, body, name=name)
