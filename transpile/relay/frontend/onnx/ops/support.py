"""Helpers shared by the ONNX converter modules."""

from __future__ import annotations


def broadcast_legacy(ctx, a, b):
    """Opset < 7 binary ops: with `broadcast=1` and `axis`, align b's dims starting at `axis` of a."""
    if not ctx.attr("broadcast", 0):
        return b
    rank_a, rank_b = ctx.b.ndim_of(a), ctx.b.ndim_of(b)
    axis = ctx.attr("axis", rank_a - rank_b)
    if axis < 0:
        axis += rank_a
    trailing = rank_a - axis - rank_b
    if trailing > 0:
        b = ctx.b.call("expand_dims", b, axis=rank_b, num_newaxis=trailing)
    return b
