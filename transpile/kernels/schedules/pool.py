"""Pooling on channel-blocked layouts (NCHW16c, from AlterOpLayout): the window loops outside, the
channel block vectorized inside, the result (and its elementwise epilogue) written from registers.

topi's pool2d names its reduction block `pool_max` / `pool_sum`; in a blocked layout the last
output axis is the channel block, contiguous in memory, so one vector covers it at every window tap.
"""

from __future__ import annotations

from .common import PARALLEL_MIN_WORK, Ctx, iter_kinds, loop_extents, product, reverse_inline_consumers

POOL_BLOCKS = ("pool_max", "pool_sum")


def is_blocked_pool(ctx: Ctx, block, kernel) -> bool:
    """A pooling window reduction over a blocked layout (NCHW[x]c with x > 1)."""
    if ctx.name(block) not in POOL_BLOCKS or iter_kinds(ctx.sch, block) != "SSSSSRR":
        return False
    from ..flops import operator_calls

    pools = [c for c in operator_calls(kernel.body) if getattr(c.op, "name", "").endswith("pool2d")]
    return bool(pools) and all(c.attrs.layout[-1:] == "c" and c.attrs.layout[:4] == "NCHW" for c in pools)


def schedule_blocked_pool(ctx: Ctx, block) -> str:
    sch = ctx.sch
    n, c, h, w, cb, kh, kw = sch.get_loops(block)
    extents = loop_extents(sch, [n, c, h, w, cb, kh, kw])
    sch.reorder(n, c, h, w, kh, kw, cb)
    write_back = sch.cache_write(block, 0, "local")
    reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, w)
    sch.unroll(kh)
    sch.unroll(kw)
    ctx.vectorize(cb)
    ctx.vectorize(sch.get_loops(write_back)[-1])
    # A pool is memory-bound: parallel from a quarter of the work that pays for a conv's launch.
    if product(extents) >= PARALLEL_MIN_WORK // 4:
        ctx.parallel(sch.fuse(n, c, h))
    sch.decompose_reduction(block, kh)
    return ctx.name(write_back)
