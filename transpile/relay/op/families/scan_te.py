"""The TE lowering of running reductions (cumsum, cumprod): hand-written TIR, safe on empty axes.

topi.scan.scanop writes the first element of every line before looking at the axis length, so an
empty scan axis (static: a division by zero while lowering; `?` at run time: a write past the
output) breaks it; this is its loop with that guard. tvm is imported inside the functions.
"""

from __future__ import annotations

__all__ = ["scan"]


def _prod(dims):
    total = 1
    for dim in dims:
        total = total * dim
    return total


def scan(x, binop, identity, name: str, axis: int | None, dtype: str, exclusive: bool):
    """Running `binop` along `axis` of `x` (None: of the flattened tensor), starting from `identity`."""
    from tvm import te, tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    if axis is None:
        shape, axis = [_prod(x.shape)], 0
    else:
        shape = list(x.shape)
        axis = axis % len(shape)
    length = shape[axis]
    before, after = _prod(shape[:axis]), _prod(shape[axis + 1 :])

    def element(value):
        return value if str(x.dtype) == dtype else tirx.Cast(dtype, value)

    def ir(data, out):
        with IRBuilder() as builder:
            src, dst = T.buffer_proxy(data), T.buffer_proxy(out)
            with T.parallel(0, before * after) as line:
                # (`line` only runs when `after` > 0: the divisions below never see a zero)
                base = tirx.floordiv(line, tirx.max(after, 1)) * length * after + tirx.floormod(line, tirx.max(after, 1))
                with T.If(length > 0):
                    with T.Then():
                        dst[base] = tirx.const(identity, dtype) if exclusive else element(src[base])
                        with T.serial(0, length - 1) as step:
                            here = base + (step + 1) * after
                            previous = base + step * after
                            dst[here] = binop(dst[previous], element(src[previous] if exclusive else src[here]))
        return builder.get()

    if any(_is_zero(dim) for dim in x.shape):  # nothing to compute (and TVM would divide by the 0)
        return te.compute(shape, lambda *index: tirx.const(0, dtype), name=name)
    # (the loop indexes both buffers by flat offsets, as topi's does; only reached when non-empty)
    return te.extern([shape], [x], lambda ins, outs: ir(ins[0], outs[0]), dtype=dtype, name=name)


def _is_zero(dim) -> bool:
    return getattr(dim, "value", dim) == 0
