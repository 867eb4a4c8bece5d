"""conv2d NCHW (direct): a tile of up to 16 output channels x one vector of output columns accumulated in
registers over the whole reduction (input channels, kernel rows, kernel columns), vectorized over
the columns, parallel over channel tiles x rows."""

from __future__ import annotations

from .common import PARALLEL_MIN_WORK, Ctx, block_dtype, iter_kinds, largest_divisor, loop_extents, product
from .common import reverse_inline_consumers

CONV2D_KINDS = "SSSSRRR"
# Vector registers for the accumulators of one tile (of 32 on AVX-512; LLVM spills beyond).
ACCUMULATORS = 24


def is_conv2d_nchw(ctx: Ctx, block, kernel) -> bool:
    sch = ctx.sch
    if iter_kinds(sch, block) != CONV2D_KINDS or len(sch.get(block).reads) != 2:
        return False
    return "nn.conv2d" in kernel.ops and _conv_layouts_are_nchw(kernel)


def _conv_layouts_are_nchw(kernel) -> bool:
    from ...relay import expr as rx

    found = []

    def visit(node):
        if isinstance(node, rx.Call):
            if getattr(node.op, "name", None) == "nn.conv2d":
                found.append(node.attrs)
            for a in node.args:
                visit(a)
        elif isinstance(node, rx.Tuple):
            for f in node.fields:
                visit(f)
        elif isinstance(node, rx.TupleGetItem):
            visit(node.tuple_value)

    visit(kernel.body.body)
    return bool(found) and all(a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and a.groups == 1 for a in found)


def native_tile(out_channels: int, width: int, lanes: int) -> tuple[int, int]:
    """(output channels, output columns) of the register tile on a vector target.

    Columns: the largest divisor of the row up to one vector (56 -> 14, 112 -> 16, 7 -> 7). A tile
    that does not divide the row puts a bounds test into the vectorized loop, which LLVM turns
    into branches and accumulators spilled to memory (5x slower, measured); a wider odd tile
    (28 = 1.75 vectors) is as bad. Rows without a divisor of at least 4 keep one vector per tile.
    Channels: up to 16 (each output channel is one accumulator per vector of columns; 16 of them
    cover the multiply-add latency and leave registers for the data vector and broadcasts).
    """
    cols = largest_divisor(width, range(min(width, lanes), 0, -1))
    if cols < 4 <= lanes <= width:
        cols = lanes
    vectors = -(-cols // lanes)
    channels = largest_divisor(out_channels, [c for c in (16, 12, 8, 4, 2) if c * vectors <= ACCUMULATORS])
    return channels, cols


def schedule_conv2d_nchw(ctx: Ctx, block) -> str:
    sch = ctx.sch
    loops = sch.get_loops(block)
    n, oc, oh, ow, ic, kh, kw = loops
    extents = loop_extents(sch, loops)
    lanes = ctx.lanes(block_dtype(sch, block))
    width = extents[3]
    if ctx.native:
        toc, tow = native_tile(extents[1], width, lanes)
    else:
        toc, tow = largest_divisor(extents[1], [4, 2]), c_width_tile(width, lanes)
    oco, oci = sch.split(oc, [None, toc])
    owo, owi = sch.split(ow, [None, tow])
    sch.reorder(n, oco, oh, owo, ic, kh, kw, oci, owi)
    write_back = sch.cache_write(block, 0, "local")
    reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, owo)
    if toc > 1:
        sch.unroll(oci)
    if tow > 1:
        ctx.vectorize(owi)
        ctx.vectorize(sch.get_loops(write_back)[-1])
    if product(extents) >= PARALLEL_MIN_WORK:
        ctx.parallel(sch.fuse(n, oco, oh))
    sch.decompose_reduction(block, ic)
    return ctx.name(write_back)


def c_width_tile(width: int, lanes: int) -> int:
    """The `c` target's output-width tile. It divides the width: a tail becomes an `if` in the
    innermost loop, which stops gcc from vectorizing it (bench CNN, width 14 by 8: 3x slower).
    A multiple of the vector width when one divides the width, else the whole row when it fits in
    two vectors (gcc vectorizes its multiple-of-4 part), else the largest divisor up to a vector."""
    for tile in (lanes, 2 * lanes, lanes // 2):
        if tile > 1 and width % tile == 0:
            return tile
    if width <= 2 * lanes:
        return width
    return largest_divisor(width, range(lanes, 1, -1))
