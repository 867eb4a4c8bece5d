"""Converters of ONNX matrix products: MatMul (numpy semantics, any ranks), Gemm, MatMulInteger, QLinearMatMul."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .conv import requantize


def matmul(ctx, a, b, out_dtype: str = ""):
    """numpy.matmul of `a` and `b`: 1-D operands promoted and squeezed back, batch dimensions broadcast."""
    g = ctx.b
    a_rank, b_rank = g.ndim_of(a), g.ndim_of(b)
    if a_rank == 0 or b_rank == 0:
        raise g.error("MatMul operands must have rank >= 1")
    if a_rank == 1:
        a = g.call("expand_dims", a, axis=0)
    if b_rank == 1:
        b = g.call("expand_dims", b, axis=1)
    a_shape, b_shape = g.shape_of(a), g.shape_of(b)
    if len(b_shape) == 2:
        # (..., M, K) x (K, N): one dense over all leading dimensions.
        out = g.call("nn.dense", a, g.call("transpose", b, axes=(1, 0)), units=b_shape[1], out_dtype=out_dtype)
    else:
        out = _batched(ctx, a, b, a_shape, b_shape, out_dtype)
    if b_rank == 1:
        out = g.call("squeeze", out, axis=(g.ndim_of(out) - 1,))
    if a_rank == 1:
        out = g.call("squeeze", out, axis=(g.ndim_of(out) - 2,))
    return out


def _batched(ctx, a, b, a_shape, b_shape, out_dtype):
    g = ctx.b
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    static = all(isinstance(d, int) for d in a_batch + b_batch)
    if static:
        batch = list(np.broadcast_shapes(tuple(a_batch), tuple(b_batch)))
        a3 = _as_batch3(ctx, a, a_batch, batch, a_shape[-2:])
        b3 = _as_batch3(ctx, b, b_batch, batch, b_shape[-2:])
        out = g.call("nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=False, out_dtype=out_dtype)
        return g.call("reshape", out, newshape=tuple(batch) + tuple(g.shape_of(out)[-2:]))
    # Unknown batch sizes (b, rank >= 3, has some). With none in a, b's batch is the result's; with
    # as many in a, the unknown ones are taken to be equal (all that batch_matmul can pair up).
    if not a_batch:
        template = b
    elif len(a_batch) == len(b_batch) and all(
        isinstance(x, AnyDim) or isinstance(y, AnyDim) or x == y for x, y in zip(a_batch, b_batch)
    ):
        template = (
            a if sum(isinstance(d, AnyDim) for d in a_batch) <= sum(isinstance(d, AnyDim) for d in b_batch) else b
        )
    else:
        raise g.error(
            f"MatMul of {g.type_of(a)} and {g.type_of(b)}: broadcasting batch dimensions needs them known at import"
        )
    a3 = g.call("reshape", a, newshape=(-1,) + tuple(a_shape[-2:]))
    b3 = g.call("reshape", b, newshape=(-1,) + tuple(b_shape[-2:]))
    out = g.call("nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=False, out_dtype=out_dtype)
    return g.call("reshape_like", out, template, lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=-2)


def _as_batch3(ctx, x, own_batch, batch, matrix):
    """x as (B, rows, cols): broadcast to the common batch unless it has none (batch_matmul broadcasts 1)."""
    g = ctx.b
    if int(np.prod(own_batch, dtype=np.int64)) == 1:
        return g.call("reshape", x, newshape=(1,) + tuple(matrix))
    if list(own_batch) != list(batch):
        x = g.call("broadcast_to", x, shape=tuple(batch) + tuple(matrix))
    return g.call("reshape", x, newshape=(-1,) + tuple(matrix))


@converter("MatMul")
def mat_mul(ctx):
    return matmul(ctx, ctx.input(0), ctx.input(1))


@converter("Gemm")
def gemm(ctx):
    g = ctx.b
    a, b, c = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    if g.ndim_of(a) != 2 or g.ndim_of(b) != 2:
        raise g.error(f"Gemm takes matrices, got {g.type_of(a)} and {g.type_of(b)}")
    dtype = g.dtype_of(a)
    if ctx.attr("transA", 0):
        a = g.call("transpose", a, axes=(1, 0))
    # nn.dense multiplies by the transposed weight: a transB=1 operand is already in that form.
    if not ctx.attr("transB", 0):
        b = g.call("transpose", b, axes=(1, 0))
    out = g.call("nn.dense", a, b, units=g.shape_of(b)[0])
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        out = g.call("multiply", out, g.const(np.array(alpha, dtype=dtype)))
    if c is None or beta == 0.0:
        return out
    if ctx.opset < 7 and not ctx.attr("broadcast", 0) and g.shape_of(c) != g.shape_of(out):
        raise g.error(f"C {g.type_of(c)} must have the output's shape without broadcast=1")
    if beta != 1.0:
        c = g.call("multiply", c, g.const(np.array(beta, dtype=g.dtype_of(c))))
    return g.call("add", out, c)


def _zero_point_shifted(ctx, value, zero_point, per_row: bool):
    """`value - zero_point` in int32; a 1-D zero point of A runs along its rows (axis -2)."""
    g = ctx.b
    value = g.call("cast", value, dtype="int32")
    if zero_point is None:
        return value
    zero_point = g.call("cast", zero_point, dtype="int32")
    if per_row and g.ndim_of(zero_point) == 1 and g.ndim_of(value) >= 2:
        zero_point = g.call("expand_dims", zero_point, axis=1)
    return g.call("subtract", value, zero_point)


@converter("MatMulInteger")
def mat_mul_integer(ctx):
    a = _zero_point_shifted(ctx, ctx.input(0), ctx.input(2, required=False), per_row=True)
    b = _zero_point_shifted(ctx, ctx.input(1), ctx.input(3, required=False), per_row=False)
    return matmul(ctx, a, b, out_dtype="int32")


@converter("QLinearMatMul")
def qlinear_mat_mul(ctx):
    g = ctx.b
    a, a_scale, a_zero = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    b, b_scale, b_zero = ctx.input(3), ctx.input(4), ctx.input(5, required=False)
    out_scale, out_zero = ctx.input(6), ctx.input(7, required=False)
    accumulator = matmul(
        ctx,
        _zero_point_shifted(ctx, a, a_zero, per_row=True),
        _zero_point_shifted(ctx, b, b_zero, per_row=False),
        out_dtype="int32",
    )
    a_scale = g.call("cast", a_scale, dtype="float32")
    if g.ndim_of(a_scale) == 1 and g.shape_of(a_scale)[0] != 1:
        a_scale = g.call("expand_dims", a_scale, axis=1)
    scale = g.call(
        "divide",
        g.call("multiply", a_scale, g.call("cast", b_scale, dtype="float32")),
        g.call("cast", out_scale, dtype="float32"),
    )
    return requantize(ctx, accumulator, scale, out_zero)
