"""Converter of ONNX Det: closed form for 1x1 and 2x2 matrices, unrolled LU elimination with partial pivoting beyond.

The matrices' size is static, so the elimination unrolls into M - 1 steps over shrinking
submatrices: pick the row with the largest magnitude in the first column (a row exchange flips
the sign), multiply the determinant by the pivot, and eliminate the column from the other rows.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter


def _scalar(b, value, dtype):
    return b.const(np.array(value, dtype=dtype))


def _entry(b, x, row: int, col: int):
    return b.call(
        "squeeze",
        b.call("strided_slice", x, begin=[row, col], end=[row + 1, col + 1], strides=[1, 1], axes=[-2, -1]),
        axis=[-2, -1],
    )


def _rows(b, x, begin: int, end: int):
    return b.call("strided_slice", x, begin=[begin], end=[end], strides=[1], axes=[-2])


def _cols(b, x, begin: int, end: int):
    return b.call("strided_slice", x, begin=[begin], end=[end], strides=[1], axes=[-1])


def _eliminate(b, x, size: int, dtype: str):
    """det of (..., size, size) matrices by Gaussian elimination with partial pivoting."""
    batch_rank = b.ndim_of(x) - 2
    det = None
    sub = x
    for m in range(size, 1, -1):
        first_column = b.call("squeeze", _cols(b, sub, 0, 1), axis=[-1])
        pivot_index = b.call("argmax", b.call("abs", first_column), axis=[-1])
        pivot_row = b.call("take", sub, pivot_index, axis=batch_rank, batch_dims=batch_rank)  # (..., m)
        pivot = b.call(
            "squeeze", b.call("strided_slice", pivot_row, begin=[0], end=[1], strides=[1], axes=[-1]), axis=[-1]
        )
        exchanged = b.call("not_equal", pivot_index, _scalar(b, 0, b.dtype_of(pivot_index)))
        signed = b.call("where", exchanged, b.call("negative", pivot), pivot)
        det = signed if det is None else b.call("multiply", det, signed)
        # The other rows: row 0 takes the pivot row's place.
        positions = b.const(np.arange(1, m).reshape(-1, 1).astype(b.dtype_of(pivot_index)))
        moved = b.call(
            "equal", positions, b.call("reshape", pivot_index, newshape=list(b.shape_of(pivot_index)) + [1, 1])
        )
        others = b.call("where", moved, _rows(b, sub, 0, 1), _rows(b, sub, 1, m))
        # A zero pivot means a zero column: the determinant is 0 and the factors stay finite.
        safe = b.call("where", b.call("equal", pivot, _scalar(b, 0, dtype)), _scalar(b, 1, dtype), pivot)
        factors = b.call(
            "divide", _cols(b, others, 0, 1), b.call("reshape", safe, newshape=list(b.shape_of(safe)) + [1, 1])
        )
        trailing = b.call("expand_dims", _cols(b, pivot_row, 1, m), axis=-2)
        sub = b.call("subtract", _cols(b, others, 1, m), b.call("multiply", factors, trailing))
    last = b.call("squeeze", sub, axis=[-2, -1])
    return b.call("multiply", det, last)


@converter("Det")
def det(ctx):
    b = ctx.b
    x = ctx.input(0)
    shape = b.shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2] or not isinstance(shape[-1], int):
        raise b.error(f"Det takes (..., M, M) matrices of a known size M, got {b.type_of(x)}")
    dtype = b.dtype_of(x)
    if np.dtype(dtype).kind != "f":
        raise b.error(f"Det takes floating-point matrices, got {b.type_of(x)}")
    size = shape[-1]
    if size == 0:
        return b.const(np.ones(b.static_shape(x, "a batch of empty matrices")[:-2], dtype=dtype))  # det of 0 x 0 is 1
    if size == 1:
        return b.call("squeeze", x, axis=[-2, -1])
    if size == 2:
        ad = b.call("multiply", _entry(b, x, 0, 0), _entry(b, x, 1, 1))
        bc = b.call("multiply", _entry(b, x, 0, 1), _entry(b, x, 1, 0))
        return b.call("subtract", ad, bc)
    return _eliminate(b, x, size, dtype)
