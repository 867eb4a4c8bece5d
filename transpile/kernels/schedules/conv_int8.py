"""int8 conv2d (NCHW data, OIHW weights, int32 result) on x86 dot-product instructions.

The compute (`conv2d_nchw_int8_te`, nn.conv2d's TE lowering for uint8/int8 data x int8 weights
-> int32, groups 1) packs inside the kernel, as TVM's conv2d_NCHWc_int8 did:

    data_pad_int8[n, c/4, h, w, 4]              (spatially padded, channels padded to 4, as uint8)
    weight_int8_packed[k/16, c/4, r, s, 16, 4]  (16 output channels x 4 input channels, int8)
    conv2d_NCHWc_int8[n, k/16, oh, ow, 16]      (int32; innermost reduction: the 4 input channels)
    conv2d_int8_unpack[n, k, oh, ow]            (the NCHW result, minus the int8 compensation)

int8 data is legalized as TVM's x86 conv2d_legalize did: the padded data plus 128 is uint8, and
128 * sum(weights of the output channel) (`int8_compensation`) is subtracted from each result:
exact in integer arithmetic, and the padding (0 before the shift) is compensated like any pixel.
Padded channels have zero weights. uint8 x uint8 has no dot instruction and keeps the plain conv.

The schedule (`schedule_conv2d_int8`) tiles output pixels x the 16 output channels in registers
and tensorizes the (output channels x 4 input channels) step with the target's instruction
(x86_dot_intrin.py: vpdpbusd with VNNI, exact pmaddubsw/pmaddwd with AVX-512BW/AVX2/SSSE3); on
other targets the same loops are plain vector code.
"""

from __future__ import annotations

from .common import PARALLEL_MIN_WORK, Ctx, inline_intermediates, loop_extents, product, schedule_remaining
from .common import schedule_spatial_block
from .x86_dot_intrin import DOT_REDUCTION, dot_intrinsic_for

__all__ = ["conv2d_nchw_int8_te", "takes_int8_dot", "is_conv2d_int8", "schedule_conv2d_int8"]

CONV_BLOCK = "conv2d_NCHWc_int8"
PAD_BLOCK = "data_pad_int8"
WEIGHT_BLOCK = "weight_int8_packed"
COMPENSATION_BLOCK = "int8_compensation"
OUTPUT_BLOCK = "conv2d_int8_unpack"
CHANNEL_BLOCK = 16  # output channels per packed block (the widest dot instruction's int32 lanes)
ACCUMULATOR_REGISTERS = 24  # of AVX-512's 32 vector registers (fewer lanes: several per block)
MAX_PIXEL_TILE = 8


def takes_int8_dot(data_dtype: str, weight_dtype: str, out_dtype: str, groups: int, layouts) -> bool:
    """Whether nn.conv2d lowers through the packed int8 compute (static shapes checked by the caller)."""
    data_layout, kernel_layout, out_layout = layouts
    return (
        groups == 1
        and str(data_dtype) in ("uint8", "int8")
        and str(weight_dtype) == "int8"
        and str(out_dtype) == "int32"
        and data_layout == "NCHW"
        and kernel_layout == "OIHW"
        and out_layout in ("", "NCHW", None)
    )


def conv2d_nchw_int8_te(data, weight, strides, padding, dilation):
    """The packed int8 conv2d -> int32 (see the module docstring); padding is (top, left, bottom, right)."""
    from tvm import te, tirx

    batch, channels, height, width = (int(d) for d in data.shape)
    out_channels, _, taps_h, taps_w = (int(d) for d in weight.shape)
    top, left, bottom, right = padding
    stride_h, stride_w = strides
    dil_h, dil_w = dilation
    in_blocks = -(-channels // DOT_REDUCTION)
    out_blocks = -(-out_channels // CHANNEL_BLOCK)
    padded_h, padded_w = height + top + bottom, width + left + right
    out_h = (padded_h - (taps_h - 1) * dil_h - 1) // stride_h + 1
    out_w = (padded_w - (taps_w - 1) * dil_w - 1) // stride_w + 1
    signed = str(data.dtype) == "int8"

    def as_unsigned(value):
        # int8 x + 128 as uint8: the bits of x with the sign bit flipped
        return (value.astype("int32") + 128).astype("uint8") if signed else value

    def padded(n, cb, h, w, ci):
        c = cb * DOT_REDUCTION + ci
        inside = tirx.all(c < channels, h >= top, h < height + top, w >= left, w < width + left)
        value = tirx.if_then_else(inside, data[n, tirx.min(c, channels - 1), h - top, w - left], tirx.const(0, data.dtype))
        return as_unsigned(value)

    data_pad = te.compute((batch, in_blocks, padded_h, padded_w, DOT_REDUCTION), padded, name=PAD_BLOCK)

    def packed_weight(kb, cb, r, s, ki, ci):
        k, c = kb * CHANNEL_BLOCK + ki, cb * DOT_REDUCTION + ci
        inside = tirx.all(k < out_channels, c < channels)
        return tirx.if_then_else(
            inside, weight[tirx.min(k, out_channels - 1), tirx.min(c, channels - 1), r, s], tirx.const(0, "int8")
        )

    weight_pack = te.compute(
        (out_blocks, in_blocks, taps_h, taps_w, CHANNEL_BLOCK, DOT_REDUCTION), packed_weight, name=WEIGHT_BLOCK
    )
    rc = te.reduce_axis((0, in_blocks), name="rc")
    rr = te.reduce_axis((0, taps_h), name="rr")
    rs = te.reduce_axis((0, taps_w), name="rs")
    ri = te.reduce_axis((0, DOT_REDUCTION), name="ri")
    conv = te.compute(
        (batch, out_blocks, out_h, out_w, CHANNEL_BLOCK),
        lambda n, kb, oh, ow, ki: te.sum(
            data_pad[n, rc, oh * stride_h + rr * dil_h, ow * stride_w + rs * dil_w, ri].astype("int32")
            * weight_pack[kb, rc, rr, rs, ki, ri].astype("int32"),
            axis=[rc, rr, rs, ri],
        ),
        name=CONV_BLOCK,
    )
    if signed:
        wc = te.reduce_axis((0, channels), name="wc")
        wr = te.reduce_axis((0, taps_h), name="wr")
        ws = te.reduce_axis((0, taps_w), name="ws")
        compensation = te.compute(
            (out_channels,),
            lambda k: te.sum(weight[k, wc, wr, ws].astype("int32") * 128, axis=[wc, wr, ws]),
            name=COMPENSATION_BLOCK,
        )

        def unpack(n, k, oh, ow):
            return conv[n, k // CHANNEL_BLOCK, oh, ow, k % CHANNEL_BLOCK] - compensation[k]
    else:

        def unpack(n, k, oh, ow):
            return conv[n, k // CHANNEL_BLOCK, oh, ow, k % CHANNEL_BLOCK]

    return te.compute((batch, out_channels, out_h, out_w), unpack, name=OUTPUT_BLOCK)


def is_conv2d_int8(sch) -> bool:
    try:
        sch.get_sblock(CONV_BLOCK)
    except Exception:  # noqa: BLE001 - not this kernel
        return False
    return True


def _pixel_tile(out_w: int, budget: int) -> int:
    """Output columns per register tile: the widest divisor of the row within the budget."""
    limit = max(1, min(budget, MAX_PIXEL_TILE, out_w))
    return max(d for d in range(1, limit + 1) if out_w % d == 0)


def schedule_conv2d_int8(ctx: Ctx) -> str:
    """Schedules the whole int8 conv kernel; returns the schedule kind ("conv2d_int8_<intrinsic>")."""
    sch = ctx.sch
    conv = sch.get_sblock(CONV_BLOCK)
    inline_intermediates(ctx, keep={PAD_BLOCK, WEIGHT_BLOCK, COMPENSATION_BLOCK})
    others = {ctx.name(b) for b in _all_blocks(sch)} - {CONV_BLOCK}
    intrinsic = dot_intrinsic_for(ctx.target) if ctx.native else None
    lanes = intrinsic[1] if intrinsic else max(1, min(CHANNEL_BLOCK, ctx.lanes("int32")))
    n, kb, oh, ow, ki, rc, rr, rs, ri = sch.get_loops(conv)
    extents = loop_extents(sch, [n, kb, oh, ow, ki, rc, rr, rs, ri])
    cols = _pixel_tile(extents[3], ACCUMULATOR_REGISTERS // max(1, CHANNEL_BLOCK // lanes))
    ow_o, ow_i = sch.split(ow, [None, cols])
    ki_o, ki_i = sch.split(ki, [None, lanes])
    if intrinsic:  # the instruction's step: (lanes output channels) x (4 input channels)
        sch.reorder(n, kb, oh, ow_o, rc, rr, rs, ow_i, ki_o, ki_i, ri)
    else:  # plain vectors: the output channels are the lanes, the reduction stays outside them
        sch.reorder(n, kb, oh, ow_o, rc, rr, rs, ri, ow_i, ki_o, ki_i)
    write_back = sch.cache_write(conv, 0, "local")
    sch.reverse_compute_at(write_back, ow_o)
    outer = sch.fuse(n, kb, oh)
    if product(extents) >= PARALLEL_MIN_WORK:  # before tensorize: its block is opaque to `parallel`
        ctx.parallel(outer)
    if not intrinsic:  # (vectorize needs the reduction block whole, tensorize its update part)
        ctx.vectorize(ki_i)
        sch.unroll(ri)
    init = sch.decompose_reduction(conv, rc)
    if intrinsic:
        sch.tensorize(ki_i, intrinsic[0])
    sch.unroll(ow_i)
    sch.unroll(ki_o)
    ctx.vectorize(sch.get_loops(init)[-1])
    ctx.vectorize(sch.get_loops(write_back)[-1])
    for name in (PAD_BLOCK, WEIGHT_BLOCK):
        schedule_spatial_block(ctx, sch.get_sblock(name))
    schedule_remaining(ctx, only=others - {PAD_BLOCK, WEIGHT_BLOCK, ctx.name(write_back), ctx.name(init)})
    return f"conv2d_int8_{intrinsic[0] if intrinsic else 'vector'}"


def _all_blocks(sch):
    from .common import blocks

    return blocks(sch)
