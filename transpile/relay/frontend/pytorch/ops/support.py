"""Helpers shared by the ATen converter modules: dtypes and type promotion, axes, scalars as tensors."""

from __future__ import annotations

import numpy as np

from .... import expr as E
from ....ty import AnyDim


def is_tensor(value) -> bool:
    return isinstance(value, E.Expr)


def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def _torch_operand(b, value):
    """A stand-in PyTorch operand for `torch.result_type`: only dtype and 0-d-ness matter to promotion."""
    import torch

    if is_tensor(value):
        shape = () if b.ndim_of(value) == 0 else (1,)
        return torch.empty(shape, dtype=getattr(torch, b.dtype_of(value)))
    return value


def promoted_dtype(ctx, *operands) -> str:
    """The dtype PyTorch computes `operands` (tensors and Python scalars) in, by its type promotion rules."""
    import torch

    torch_operands = [_torch_operand(ctx.b, v) for v in operands if v is not None]
    if not torch_operands:
        raise ctx.b.error("no operands to promote")
    result = torch_operands[0]
    if len(torch_operands) == 1:
        dtype = result.dtype if isinstance(result, torch.Tensor) else torch.tensor(result).dtype
    else:
        dtype = torch.result_type(torch_operands[0], torch_operands[1])
        for other in torch_operands[2:]:
            dtype = torch.result_type(torch.empty((1,), dtype=dtype), other)
    return str(dtype).replace("torch.", "")


def cast(b, value: E.Expr, dtype: str) -> E.Expr:
    return value if b.dtype_of(value) == dtype else b.call("cast", value, dtype=dtype)


def operand(b, value, dtype: str) -> E.Expr:
    """A tensor argument cast to `dtype`, or a Python scalar as a 0-d constant of `dtype`."""
    if is_tensor(value):
        return cast(b, value, dtype)
    if isinstance(value, (list, tuple)):
        raise b.error(f"expected a tensor or a scalar, got a list {value!r}")
    return scalar(b, value, dtype)


def scalar(b, value, dtype: str) -> E.Constant:
    if isinstance(value, E.Expr):
        raise b.error("expected a Python scalar, got a tensor")
    with np.errstate(all="ignore"):
        return b.const(np.array(value).astype(dtype))


def normalize_axis(ctx, axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ctx.b.error(f"dimension {axis} is out of range for a {ndim}-d tensor")
    return axis + ndim if axis < 0 else axis


def normalize_axes(ctx, axes, ndim: int) -> list[int]:
    return [normalize_axis(ctx, a, ndim) for a in axes]


def reduce_axes(ctx, dims, ndim: int):
    """ATen reductions: None or [] reduce every dimension (Relay's axis=None)."""
    if dims is None:
        return None
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        return None
    return normalize_axes(ctx, dims, ndim)


def static_dim(ctx, value: E.Expr, axis: int, what: str = "this dimension") -> int:
    dim = ctx.b.shape_of(value)[axis]
    if isinstance(dim, AnyDim):
        raise ctx.unsupported(f"{what} (dimension {axis}) must be static, it is dynamic")
    return int(dim)


def transposed_2d(b, matrix: E.Expr) -> E.Expr:
    """`matrix` transposed, undoing a transpose already in the graph (linear layers export W as permute(W, [1, 0]))."""
    if isinstance(matrix, E.Call) and getattr(matrix.op, "name", None) == "transpose":
        axes = matrix.attrs["axes"]
        if axes is not None and [int(a) for a in axes] == [1, 0]:
            return matrix.args[0]
    return b.call("transpose", matrix, axes=[1, 0])
