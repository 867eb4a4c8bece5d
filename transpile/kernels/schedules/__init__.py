"""Schedules for kernels on the host CPU, chosen by the kernel's pattern kind and master operator.

- dense / matmul / batch_matmul (a two-input multiply-accumulate block): register-tiled
  micro-kernel, vectorized over output columns, parallel over tiles, epilogue inlined; weights
  pre-packed by AlterDenseLayout (contrib_dense_pack, NC{n}n) are streamed as they are, an [N, K]
  operand is re-packed inside the kernel (per batch for batch_matmul). meta_schedule tuning, when
  asked for, competes with these per kernel (../tuning.py).
- conv2d NCHW: output-channel x output-width register tile, vectorized, parallel over rows.
- conv2d / depthwise conv2d on channel-blocked NCHW[x]c (contrib_conv2d_NCHWc, from AlterOpLayout):
  output pixels x channel block in registers, the block vectorized (conv_packed).
- int8 conv2d (u8/s8 x s8 -> int32, packed inside the kernel): the x86 dot-product instructions
  (VNNI vpdpbusd, exact pmaddubsw) tensorize its inner step (conv_int8).
- depthwise conv2d NCHW: rows x columns register tile per channel plane (depthwise).
- pooling on channel-blocked layouts: window outside, channel block vectorized (pool).
- reductions with several blocks (softmax, normalizations): `tvm.s_tir.dlight.cpu.Reduction`.
- everything else (elementwise, broadcast, injective, simple reductions, pooling): intermediates
  inlined, loops fused, vectorized and parallelized (reductions: parallel over the kept axes).

A schedule never fails a build: if the specific schedule fails, the default one is tried, and if
that fails too the kernel stays unscheduled (logged at debug level).
"""

from __future__ import annotations

from ...relay.op.registry import OpPattern
from .common import (
    Ctx,
    any_inlining_duplicates_too_much,
    blocks,
    has_symbolic_loops,
    inline_intermediates,
    is_reduction,
    log,
    schedule_remaining,
    vectorizes_bool_intermediate,
)
from .conv import is_conv2d_nchw, schedule_conv2d_nchw
from .conv_int8 import is_conv2d_int8, schedule_conv2d_int8
from .conv_packed import PAD_BLOCK, is_conv2d_nchwc, is_depthwise_nchwc, schedule_conv2d_nchwc, schedule_depthwise_nchwc
from .depthwise import DEPTHWISE_PAD_BLOCK, is_depthwise_nchw, schedule_depthwise_nchw
from .matmul import is_matmul, schedule_matmul
from .pool import is_blocked_pool, schedule_blocked_pool

__all__ = ["schedule_kernel", "choose_schedule", "STRATEGIES"]


def _master_schedule(ctx: Ctx, kernel) -> str:
    """Schedules the kernel's one reduction block as matmul or conv2d; returns what was done."""
    sch = ctx.sch
    reductions = [b for b in blocks(sch) if is_reduction(sch, b)]
    if len(reductions) != 1:
        return ""
    master = reductions[0]
    own = set()  # producer blocks the master's schedule places itself (no default schedule after)
    if is_matmul(ctx, master):
        kind, schedule = "matmul", schedule_matmul
    elif is_conv2d_nchwc(ctx, master):
        kind, schedule, own = "conv2d_NCHWc", schedule_conv2d_nchwc, {PAD_BLOCK}
    elif is_depthwise_nchwc(ctx, master):
        kind, schedule, own = "depthwise_NCHWc", schedule_depthwise_nchwc, {PAD_BLOCK}
    elif is_depthwise_nchw(ctx, master, kernel):
        kind, schedule, own = "depthwise_nchw", schedule_depthwise_nchw, {DEPTHWISE_PAD_BLOCK}
    elif is_conv2d_nchw(ctx, master, kernel):
        kind, schedule = "conv2d_nchw", schedule_conv2d_nchw
    elif is_blocked_pool(ctx, master, kernel):
        kind, schedule = "pool_NCHWc", schedule_blocked_pool
    else:
        return ""
    # Producers of the master (a conv's padding) stay separate: inlining them would put a
    # bounds check into the innermost loop. A pool's padding is inlined: its bounds test is the
    # same for the whole vector of channels.
    keep = set() if kind == "pool_NCHWc" else {ctx.name(p) for p in sch.get_producers(master)}
    master_name = ctx.name(master)
    inline_intermediates(ctx, keep=keep)
    others = {ctx.name(b) for b in blocks(sch)} - {master_name} - own
    schedule(ctx, sch.get_sblock(master_name))
    # Epilogue blocks that could not be folded into the write-back get the default schedule.
    schedule_remaining(ctx, only=others)
    return kind


def _new_schedule(func, name):
    import tvm

    sch = tvm.s_tir.Schedule(tvm.IRModule({name: func}))
    sch.work_on(name)
    return sch


def _dlight_reduction(func, target):
    """dlight's CPU Reduction rule (softmax-like block chains sharing leading spatial axes), or None."""
    if target.kind.name != "llvm":
        return None
    from tvm.s_tir import dlight

    with target:
        result = dlight.cpu.Reduction().apply(func, target, False)
    if result is None:
        return None
    return result[0] if isinstance(result, list) else result


def _specific(func, kernel, target):
    import tvm

    name = kernel.name
    unscheduled = _new_schedule(func, name)
    # dlight inlines every producer: when that would blow up, our own inlining keeps some blocks. With
    # run-time extents its splits built an int32 literal out of range (fuzz seed 117627): ours then too.
    if (
        kernel.pattern in (OpPattern.COMM_REDUCE, OpPattern.OPAQUE)
        and not any_inlining_duplicates_too_much(unscheduled)
        and not has_symbolic_loops(unscheduled)
    ):
        sch = _dlight_reduction(func, target)
        if sch is not None:
            (scheduled,) = sch.mod.functions.values()
            if vectorizes_bool_intermediate(scheduled):  # fails in TVM's lowering; ours leaves those scalar
                log.debug("kernel %s: dlight vectorized a bool intermediate; own schedule instead", name)
                sch = None
        if sch is not None:
            return tvm.IRModule({name: scheduled.with_attr("global_symbol", name)}), "dlight.Reduction"
    sch = _new_schedule(func, name)
    ctx = Ctx(sch, target)
    if is_conv2d_int8(sch):
        kind = schedule_conv2d_int8(ctx)
        return sch.mod, kind
    kind = _master_schedule(ctx, kernel)
    if not kind:
        inline_intermediates(ctx)
        schedule_remaining(ctx)
        kind = "default"
    return sch.mod, kind


def _default(func, kernel, target):
    sch = _new_schedule(func, kernel.name)
    ctx = Ctx(sch, target)
    inline_intermediates(ctx)
    schedule_remaining(ctx)
    return sch.mod, "default"


STRATEGIES = (_specific, _default)


def choose_schedule(primfunc, kernel, target):
    """(IRModule {kernel.name: scheduled PrimFunc}, schedule kind): "matmul", "conv2d_nchw",
    "dlight.Reduction", "default" or "none" (unscheduled). Never raises."""
    import tvm

    for strategy in STRATEGIES:
        try:
            mod, kind = strategy(primfunc, kernel, target)
            log.debug("kernel %s: %s schedule", kernel.name, kind)
            return mod, kind
        except Exception as exc:  # noqa: BLE001 - any failure means: try the next, simpler schedule
            log.debug("kernel %s: schedule %s failed: %s", kernel.name, strategy.__name__, exc)
    return tvm.IRModule({kernel.name: primfunc}), "none"


def schedule_kernel(primfunc, kernel, target):
    """An IRModule {kernel.name: scheduled PrimFunc}; falls back to simpler schedules, never raises."""
    return choose_schedule(primfunc, kernel, target)[0]
