"""Depthwise conv2d in NCHW (groups == channels): one channel plane per parallel task, output rows x
columns accumulated in vector registers, the padded plane produced right before it is read.

topi's depthwise_conv2d_nchw names its blocks `DepthwiseConv2d` (reduction over kh, kw) and
`PaddedInput`. Each output needs only kh*kw multiply-adds, so the schedule is about memory: the
padded copy of a channel is made inside the channel's task (it is still in cache when read), a
tile of rows x one vector of columns is accumulated in registers, and the unrolled taps let LLVM
load overlapping input vectors once.
"""

from __future__ import annotations

from .common import PARALLEL_MIN_WORK, Ctx, block_dtype, iter_kinds, largest_divisor, loop_extents, product
from .common import reverse_inline_consumers

DEPTHWISE_BLOCK = "DepthwiseConv2d"
DEPTHWISE_PAD_BLOCK = "PaddedInput"
# Rows of one tile (each one vector of accumulators): 7-8 rows ran 1.3-3.9x faster than 1-2 on
# MobileNet's stride-1 planes (more independent multiply-add chains, input rows reused across
# taps); with stride 2 the gathered loads dominate and taller tiles did not help.
TILE_ROWS = {1: 8, 2: 2}


def is_depthwise_nchw(ctx: Ctx, block, kernel) -> bool:
    if ctx.name(block) != DEPTHWISE_BLOCK or iter_kinds(ctx.sch, block) != "SSSSRR":
        return False
    return _depthwise_convs_are_nchw(kernel)


def _depthwise_convs_are_nchw(kernel) -> bool:
    from ..flops import operator_calls

    convs = [c for c in operator_calls(kernel.body) if getattr(c.op, "name", "") == "nn.conv2d"]
    return bool(convs) and all(c.attrs.data_layout == "NCHW" and c.attrs.groups > 1 for c in convs)


def row_tile(out_h: int, out_w: int, lanes: int, stride: int = 1) -> tuple[int, int]:
    """(rows, columns) of the register tile: columns the largest divisor of the row up to one
    vector (a tile that does not divide the row puts a bounds test into the vector loop, which
    LLVM compiles to branches: 3x slower, measured), rows the largest divisor of the height up to
    TILE_ROWS."""
    cols = largest_divisor(out_w, range(min(out_w, lanes), 0, -1))
    if cols < 4 <= lanes <= out_w:
        cols = lanes
    rows = largest_divisor(out_h, range(TILE_ROWS.get(stride, 2), 0, -1))
    return rows, cols


def schedule_depthwise_nchw(ctx: Ctx, block) -> str:
    sch = ctx.sch
    n, c, oh, ow, kh, kw = sch.get_loops(block)
    extents = loop_extents(sch, [n, c, oh, ow, kh, kw])
    rows, cols = row_tile(extents[2], extents[3], ctx.lanes(block_dtype(sch, block)), _stride(sch, block, extents))
    oh_o, oh_i = sch.split(oh, [None, rows])
    ow_o, ow_i = sch.split(ow, [None, cols])
    sch.reorder(n, c, oh_o, ow_o, kh, kw, oh_i, ow_i)
    write_back = sch.cache_write(block, 0, "local")
    reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, ow_o)
    sch.unroll(kh)
    sch.unroll(kw)
    if rows > 1:
        sch.unroll(oh_i)
    ctx.vectorize(ow_i)
    ctx.vectorize(sch.get_loops(write_back)[-1])
    plane = sch.fuse(n, c)
    if product(extents) >= PARALLEL_MIN_WORK // 4 and extents[0] * extents[1] > 1:
        ctx.parallel(plane)
    _pad_per_plane(ctx, plane)
    sch.decompose_reduction(block, kh)
    return ctx.name(write_back)


def _stride(sch, block, extents) -> int:
    """The conv's horizontal stride, from the widths of the data it reads (first read) and of its output."""
    data = sch.get(block).reads[0]
    buffer = getattr(data, "buffer", None) or data.source
    width, out_w, taps = int(buffer.shape[3]), extents[3], extents[5]
    return max(1, (width - taps) // (out_w - 1)) if out_w > 1 else 1


def _pad_per_plane(ctx: Ctx, plane) -> None:
    """Make the channel's padded plane inside its task, row by row with vectorized columns."""
    sch = ctx.sch
    try:
        pad = sch.get_sblock(DEPTHWISE_PAD_BLOCK)
    except Exception:  # noqa: BLE001 - no padding
        return
    sch.compute_at(pad, plane)
    ctx.vectorize(sch.get_loops(pad)[-1])
