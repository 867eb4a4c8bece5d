"""dense / matmul / batch_matmul: a register-tiled micro-kernel, or a dot-product (GEMV) schedule for few rows.

Both fold the elementwise epilogue (bias_add, relu, ...) into the block that writes the result.
"""

from __future__ import annotations

from .common import PARALLEL_MIN_WORK, Ctx, block_dtype, iter_kinds, largest_divisor, log, loop_extents, product
from .common import reverse_inline_consumers

MATMUL_KINDS = ("SSR", "SSSR")
# Up to this many output rows a matmul is scheduled as dot products over contiguous rows of k.
GEMV_MAX_ROWS = 4
# From this many batches on, a batch_matmul parallelizes over batches and re-packs its operand per
# batch (fewer would leave cores idle).
PER_BATCH_PACK_MIN = 8


def is_matmul(ctx: Ctx, block) -> bool:
    """A multiply-accumulate of two inputs over one reduction axis with one or two spatial axes after batch."""
    sch = ctx.sch
    return iter_kinds(sch, block) in MATMUL_KINDS and len(sch.get(block).reads) == 2


def _index_vars(region):
    """For each dimension of a read region: the set of variable names in its start index."""
    import tvm

    return [{v.name for v in tvm.tirx.analysis.undefined_vars(rng.min, [])} for rng in region.region]


def _operand_roles(sch, block):
    """(index of the operand read as [.., j, k], whether the other operand is read as [.., i, k]), or None.

    The "NT" layouts: dense reads W[j, k] and batch_matmul(transpose_b) reads B[b, j, k]; vectorizing
    over j then gathers with stride k, so such an operand is repacked into [j // tile, k, j % tile].
    """
    stmt = sch.get(block)
    iv = [v.var.name for v in stmt.iter_vars]
    vi, vj, vk = iv[-3], iv[-2], iv[-1]
    nt_index, a_row_major = None, False
    for index, region in enumerate(stmt.reads):
        dims = _index_vars(region)
        if len(dims) < 2:
            continue
        if dims[-1] == {vk} and dims[-2] == {vj}:
            nt_index = index
        if dims[-1] == {vk} and dims[-2] == {vi}:
            a_row_major = True
    return nt_index, a_row_major


def packed_block(sch, block) -> int | None:
    """The column block n of an operand read as [.., j // n, k, j % n] (a weight pre-packed in layout
    NC{n}n by AlterDenseLayout), else None."""
    stmt = sch.get(block)
    iv = [v.var.name for v in stmt.iter_vars]
    vj, vk = iv[-2], iv[-1]
    for region in stmt.reads:
        dims = _index_vars(region)
        if len(dims) >= 3 and dims[-1] == {vj} and dims[-2] == {vk} and dims[-3] == {vj}:
            buffer = getattr(region, "buffer", None) or region.source
            return int(buffer.shape[-1])
    return None


def schedule_matmul(ctx: Ctx, block) -> str:
    sch = ctx.sch
    extents = loop_extents(sch, sch.get_loops(block))
    m, n, k = extents[-3:]
    if not n or not k:  # a `?` column or reduction extent (0 here): tiles would need tails
        raise ValueError("matmul with a symbolic column or reduction extent: left to the default schedule")
    nt_index, a_row_major = _operand_roles(sch, block)
    lanes = ctx.lanes(block_dtype(sch, block))
    block_width = packed_block(sch, block)
    if block_width is not None:  # pre-packed weights: one tile per block, nothing to re-pack
        return schedule_tiled(ctx, block, None, lanes, tj=block_width)
    if m <= GEMV_MAX_ROWS and nt_index is not None and a_row_major:  # m == 0 also: a `?` row count
        vec = gemv_lanes(k, lanes)
        if vec >= 4:
            return schedule_gemv(ctx, block, vec)
    return schedule_tiled(ctx, block, nt_index, lanes)


def gemv_lanes(k: int, lanes: int) -> int:
    """Width of the GEMV's vector partial sums: a divisor of k (so no tail loop, which would
    scalarize the vector loop), the one filling whole vector registers best, the larger on ties.
    Widths that are not a power of two (30 for k = 150 or 300) are split by LLVM into registers."""
    if k % lanes == 0:
        return lanes
    best, best_fill = 1, 0.0
    for width in range(max(lanes // 4, 1), 2 * lanes + 1):
        if k % width:
            continue
        fill = width / (-(-width // lanes) * lanes)
        if fill > best_fill or (fill == best_fill and width > best):
            best, best_fill = width, fill
    return best


def schedule_tiled(ctx: Ctx, block, nt_index, lanes, tj: int | None = None) -> str:
    """Tile i by 8 (or 4, 2), j by two vectors and k by 4; accumulate in registers; vectorize j;
    parallel outer tiles.

    An operand read as [j, k] is first repacked inside the kernel so vector loads are contiguous.
    When j is not a multiple of the vector width, the computation is padded (pad_einsum) instead
    of masking the inner loop, which would scalarize it.
    A given `tj` (the block of pre-packed weights) is taken as it is: no padding, no re-packing.
    Returns the name of the write-back block (which also computes the inlined epilogue).
    """
    sch = ctx.sch
    loops = sch.get_loops(block)
    extents = loop_extents(sch, loops)
    n_batch = len(loops) - 3
    m, n, kk = extents[-3:]
    given = tj is not None
    if not given:
        tj = largest_divisor(n, [2 * lanes, lanes])
        if tj == 1 and 4 <= n < lanes:
            tj = n  # few columns: one vector of them (LLVM handles the odd width) instead of pairs
    packed = None
    padded = not given and tj == 1 and n >= lanes
    if padded:
        tj = lanes
        sch.pad_einsum(block, [1] * (n_batch + 1) + [tj, 1])
        _inline_unpad(ctx, block)
        if nt_index is not None:
            packed = _producer_of_read(ctx, block, nt_index)
            sch.transform_layout(block, ("read", nt_index), lambda *ax: (*ax[:-2], ax[-2] // tj, ax[-1], ax[-2] % tj))
    elif tj == 1 and not given:
        tj = largest_divisor(n, [lanes // 2, lanes // 4, 2])
    if nt_index is not None and tj > 1 and packed is None:
        packed = sch.cache_read(block, nt_index, "global")
        sch.transform_layout(block, ("read", nt_index), lambda *ax: (*ax[:-2], ax[-2] // tj, ax[-1], ax[-2] % tj))
    ti = largest_divisor(m, [8, 4, 2]) if m else 1  # m == 0: a `?` row count (a tail would break the build)
    tk = largest_divisor(kk, [4, 2])
    wide = _blocks_per_tile(n, ti, tj, lanes) if given else 1
    loops = sch.get_loops(block)
    batch, (i, j, k) = loops[:-3], loops[-3:]
    i0, i1 = sch.split(i, [None, ti])
    j0, jb, j1 = sch.split(j, [None, wide, tj])
    k0, k1 = sch.split(k, [None, tk])
    sch.reorder(*batch, j0, i0, k0, k1, i1, jb, j1)
    if wide > 1:
        sch.unroll(jb)
    write_back = sch.cache_write(block, 0, "local")
    if not padded:
        reverse_inline_consumers(ctx, write_back)
    sch.reverse_compute_at(write_back, i0)
    if padded:
        # reverse_compute_inline into the padded write-back drops the bound check (out-of-bounds
        # writes, seen in TVM 0.27); computing the epilogue per tile keeps it correct and local.
        consumers = list(sch.get_consumers(write_back))
        while len(consumers) == 1:
            sch.reverse_compute_at(consumers[0], i0)
            consumers = list(sch.get_consumers(consumers[0]))
    if tk > 1:
        sch.unroll(k1)
    if ti > 1:
        sch.unroll(i1)
    if tj > 1:
        ctx.vectorize(j1)
        ctx.vectorize(sch.get_loops(write_back)[-1])
    # With many batches, a re-packed operand that differs per batch is packed one batch at a time,
    # just before its use: it stays in cache, instead of a pass of its own over the whole tensor.
    per_batch = (
        packed is not None
        and not padded
        and product(extents[:n_batch]) >= PER_BATCH_PACK_MIN
        and _read_varies_with_batch(sch, block, nt_index, n_batch)
    )
    parallel = product(extents) >= PARALLEL_MIN_WORK
    if per_batch:
        outer = sch.fuse(*batch) if len(batch) > 1 else batch[0]
        if parallel:
            ctx.parallel(outer)
    elif parallel:
        ctx.parallel(sch.fuse(*batch, j0, i0))
    sch.decompose_reduction(block, k0)
    if per_batch:
        sch.compute_at(packed, outer)
        _schedule_pack(ctx, packed, tj, nested=True)
    elif packed is not None:
        _schedule_pack(ctx, packed, tj)
    return ctx.name(write_back)


def _read_varies_with_batch(sch, block, index, n_batch: int) -> bool:
    """Whether operand `index` is read at a different place for each batch (not a broadcast batch of 1)."""
    stmt = sch.get(block)
    batch_vars = {v.var.name for v in stmt.iter_vars[:n_batch]}
    dims = _index_vars(stmt.reads[index])
    return any(d & batch_vars for d in dims)


def _blocks_per_tile(n: int, ti: int, tj: int, lanes: int) -> int:
    """Blocks of pre-packed columns one tile computes: few rows get several blocks, so that about
    8 vector accumulators hide the multiply-add latency (a row and one block would chain on 2)."""
    for wide in (4, 2):
        if (n // tj) % wide == 0 and ti * tj * wide <= 8 * lanes:
            return wide
    return 1


def _inline_unpad(ctx: Ctx, block) -> None:
    """pad_einsum adds a copy from the padded result; fold it into the epilogue when there is one."""
    sch = ctx.sch
    for consumer in sch.get_consumers(block):
        try:
            sch.compute_inline(consumer)
        except Exception as exc:  # noqa: BLE001 - the copy writes the kernel output: it stays
            log.debug("inlining %s failed: %s", ctx.name(consumer), exc)


def _producer_of_read(ctx: Ctx, block, index):
    sch = ctx.sch
    source = sch.get(block).reads[index]
    buffer = getattr(source, "buffer", None) or source.source
    for producer in sch.get_producers(block):
        for region in sch.get(producer).writes:
            if (getattr(region, "buffer", None) or region.source).same_as(buffer):
                return producer
    raise ValueError("no producer block for the padded operand")


def _schedule_pack(ctx: Ctx, packed, tj: int, nested: bool = False) -> None:
    """The repacking copy, walked in packed order ([j // tj, k, j % tj]) so its writes are contiguous;
    `nested`: computed inside the (parallel) batch loop, so not parallel itself."""
    sch = ctx.sch
    loops = sch.get_loops(packed)
    extents = loop_extents(sch, loops)
    *batch, j, k = loops
    j0, j1 = sch.split(j, [None, tj])
    sch.reorder(j0, k, j1)
    ctx.vectorize(j1)
    if not nested and product(extents) >= PARALLEL_MIN_WORK // 4:  # a copy: memory-bound, each element costs more
        ctx.parallel(sch.fuse(*batch, j0))


def schedule_gemv(ctx: Ctx, block, lanes) -> str:
    """Few rows: each output is a dot product over contiguous k; vector partial sums (rfactor) for
    4-8 outputs at a time, reduced and passed through the epilogue right after."""
    sch = ctx.sch
    name = ctx.name(block)
    loops = sch.get_loops(block)
    extents = loop_extents(sch, loops)
    n = extents[-2]
    k0, k1 = sch.split(loops[-1], [None, lanes])
    partial = sch.rfactor(k1, len(loops) - 1)
    rf_loops = sch.get_loops(partial)
    outer, (j, rk0, rk1) = rf_loops[:-3], rf_loops[-3:]
    tj = largest_divisor(n, [8, 4, 3, 6, 5, 2])  # dividing n: a tail would put a predicate in the vector loop
    j0, j1 = sch.split(j, [None, tj])
    sch.reorder(*outer, j0, rk0, j1, rk1)
    final = sch.get_sblock(name)
    sch.reverse_compute_at(final, j0)
    consumers = list(sch.get_consumers(final))
    while len(consumers) == 1:
        # The epilogue runs per tile of outputs; intermediate epilogue blocks are already inlined.
        sch.reverse_compute_at(consumers[0], j0)
        consumers = list(sch.get_consumers(consumers[0]))
    sch.set_scope(partial, 0, "local")
    if tj > 1:
        sch.unroll(j1)
    ctx.vectorize(rk1)
    if product(extents) >= PARALLEL_MIN_WORK:
        ctx.parallel(sch.fuse(*outer, j0))
    sch.decompose_reduction(partial, rk0)
    return name
