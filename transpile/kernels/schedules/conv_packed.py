"""nn.contrib_conv2d_NCHWc (channel-blocked) conv and depthwise conv: register tiles of output
pixels x one block of output channels, the block vectorized (TVM's x86 conv2d_NCHWc schedules are
the model).

The compute (relay/op/families/nn/conv_packed_te.py) names its blocks `conv2d_NCHWc` /
`depthwise_conv2d_NCHWc` and the zero-padded data `data_pad`. Inner loop of the conv: for each
input channel of the block, broadcast one data value per output pixel of the tile and multiply-add
it with the weight vector of the output-channel block, so the tile's accumulators stay in
registers for the whole reduction (about 250 GFLOP/s per core on AVX-512, ~85 % of the FMA peak).
The conv's padded data is a separate parallel copy; depthwise pads inside each task (it is
memory-bound).
"""

from __future__ import annotations

from ..threads import usable_cpus
from .common import PARALLEL_MIN_WORK, Ctx, block_dtype, iter_kinds, loop_extents, product
from .common import reverse_inline_consumers

CONV_BLOCK = "conv2d_NCHWc"  # names given by conv_packed_te
DEPTHWISE_BLOCK = "depthwise_conv2d_NCHWc"
PAD_BLOCK = "data_pad"

# Vector registers the accumulators may use (AVX-512 has 32, AVX2 16): the rest hold the weight
# vector, broadcast data and addresses.
ACCUMULATOR_REGISTERS = {512: 24, 256: 12, 128: 12}
# Wider pixel tiles than this ran slower on every ResNet-50 / MobileNet v2 shape we measured
# (more loads of data per weight vector than the load ports keep up with).
MAX_PIXEL_TILE = 14
# Pixel tiles up to half this size get two output-channel blocks (see channel_blocks_per_tile).
SHORT_TILE = 16


def is_conv2d_nchwc(ctx: Ctx, block) -> bool:
    return ctx.name(block) == CONV_BLOCK and iter_kinds(ctx.sch, block) == "SSSSSRRRR"


def is_depthwise_nchwc(ctx: Ctx, block) -> bool:
    return ctx.name(block) == DEPTHWISE_BLOCK and iter_kinds(ctx.sch, block) == "SSSSSRR"


def accumulator_budget(ctx: Ctx, channel_block: int, dtype: str) -> int:
    """How many output pixels one register tile may hold: each needs ceil(block / lanes) registers."""
    from ..target import vector_bits

    lanes = ctx.lanes(dtype)
    registers = ACCUMULATOR_REGISTERS.get(vector_bits(ctx.target), 12) if ctx.native else 16
    return max(1, registers // max(1, -(-channel_block // lanes)))


def pixel_tile(out_h: int, out_w: int, budget: int) -> tuple[int, int]:
    """(rows, columns) of the register tile: the widest divisor of the row up to the budget and
    MAX_PIXEL_TILE (a tile that does not divide the row would put a bounds test in the unrolled
    loop), and two rows when that leaves a short row tile of an even height (12x6 -> 2x6)."""
    limit = min(budget, MAX_PIXEL_TILE)
    cols = max(d for d in range(1, min(out_w, limit) + 1) if out_w % d == 0)
    rows = 2 if cols < 8 and 2 * cols <= budget and out_h % 2 == 0 else 1
    return rows, cols


def channel_blocks_per_tile(oc_blocks: int, pixels: int) -> int:
    """Output-channel blocks in one register tile: two when the pixel tile is short (7x7 outputs),
    so each broadcast data value feeds two weight vectors (measured 25 % faster on 7x7 layers);
    with longer pixel tiles the data loads are already amortized."""
    return 2 if 2 * pixels <= SHORT_TILE and oc_blocks % 2 == 0 else 1


def schedule_conv2d_nchwc(ctx: Ctx, block) -> str:
    sch = ctx.sch
    n, oc, oh, ow, ob, ic, kh, kw, ib = sch.get_loops(block)
    extents = loop_extents(sch, [n, oc, oh, ow, ob, ic, kh, kw, ib])
    rows, cols = pixel_tile(extents[2], extents[3], accumulator_budget(ctx, extents[4], block_dtype(sch, block)))
    ocs = channel_blocks_per_tile(extents[1], rows * cols)
    oh_o, oh_i = sch.split(oh, [None, rows])
    ow_o, ow_i = sch.split(ow, [None, cols])
    oc_o, oc_i = sch.split(oc, [None, ocs])
    # 1x1: the rows of data are the big operand, so sweep all output-channel blocks over one row
    # while it is in cache; k x k: one block's weights (C*k*k*16 floats) stay in cache over the rows.
    pointwise = extents[6] == 1 and extents[7] == 1
    outer = [n, oh_o, oc_o] if pointwise else [n, oc_o, oh_o]
    sch.reorder(*outer, ow_o, ic, kh, ib, kw, oc_i, oh_i, ow_i, ob)
    write_back = sch.cache_write(block, 0, "local")
    reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, ow_o)
    sch.unroll(ow_i)
    sch.unroll(oc_i)
    if rows > 1:
        sch.unroll(oh_i)
    ctx.vectorize(ob)
    ctx.vectorize(sch.get_loops(write_back)[-1])
    if product(extents) >= PARALLEL_MIN_WORK:
        ctx.parallel(sch.fuse(*outer))
    sch.decompose_reduction(block, ic)
    schedule_pad(ctx)
    return ctx.name(write_back)


def schedule_depthwise_nchwc(ctx: Ctx, block) -> str:
    sch = ctx.sch
    n, oc, oh, ow, ob, kh, kw = sch.get_loops(block)
    extents = loop_extents(sch, [n, oc, oh, ow, ob, kh, kw])
    stride = _stride(sch, block, extents)
    rows, cols = pixel_tile(extents[2], extents[3], accumulator_budget(ctx, extents[4], block_dtype(sch, block)))
    oh_o, oh_i = sch.split(oh, [None, rows])
    ow_o, ow_i = sch.split(ow, [None, cols])
    sch.reorder(n, oc, oh_o, ow_o, kh, kw, oh_i, ow_i, ob)
    write_back = sch.cache_write(block, 0, "local")
    reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, ow_o)
    # Unrolled taps and pixels: neighbouring pixels read overlapping data vectors, which LLVM
    # then loads once.
    sch.unroll(kw)
    sch.unroll(ow_i)
    if rows > 1:
        sch.unroll(oh_i)
    ctx.vectorize(ob)
    ctx.vectorize(sch.get_loops(write_back)[-1])
    # Depthwise is memory-bound: a separate padded copy of the data would double its traffic, so
    # each task pads the input it reads, while it is in cache. Stride 1: a task is a channel
    # block's whole plane, padded once (1.3-2.5x faster than row tasks, measured); stride 2: a
    # task is a row of outputs, padding its few input rows (the plane was slower there).
    planes = extents[0] * extents[1]
    if stride == 1 and planes >= usable_cpus():
        task = sch.fuse(n, oc)
    else:
        task = sch.fuse(n, oc, oh_o)
    if product(extents) >= PARALLEL_MIN_WORK // 4:  # 9 multiply-adds per output: less work per loop
        ctx.parallel(task)
    try:
        pad = sch.get_sblock(PAD_BLOCK)
    except Exception:  # noqa: BLE001 - no padding
        pad = None
    if pad is not None:
        sch.compute_at(pad, task)
        ctx.vectorize(sch.get_loops(pad)[-1])
    sch.decompose_reduction(block, kh)
    return ctx.name(write_back)


def _stride(sch, block, extents) -> int:
    """The conv's horizontal stride, from the widths of the data it reads (its first read, before
    any cache_write adds the accumulator) and of its output."""
    data = sch.get(block).reads[0]
    buffer = getattr(data, "buffer", None) or data.source
    width, out_w, taps = int(buffer.shape[3]), extents[3], extents[6]
    return max(1, (width - taps) // (out_w - 1)) if out_w > 1 else 1


def schedule_pad(ctx: Ctx) -> None:
    """The zero-padded copy of the data: parallel over rows, the channel block vectorized."""
    sch = ctx.sch
    try:
        pad = sch.get_sblock(PAD_BLOCK)
    except Exception:  # noqa: BLE001 - no padding in this conv
        return
    loops = sch.get_loops(pad)
    extents = loop_extents(sch, loops)
    ctx.vectorize(loops[-1])
    if product(extents) >= PARALLEL_MIN_WORK // 4:
        ctx.parallel(sch.fuse(*loops[:3]))
