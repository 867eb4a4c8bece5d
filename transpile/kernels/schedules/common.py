"""Helpers shared by the schedules: block analysis, inlining, factor choice, target-aware primitives."""

from __future__ import annotations

import logging

from ..target import vector_lanes
from .inline_cost import inlining_costs_too_much, inlining_everything_costs_too_much

log = logging.getLogger("transpile.kernels.schedules")

# Work (loop iterations, i.e. multiply-adds for matmul/conv) below which a parallel launch costs
# more than it saves: a launch costs microseconds, far more when the machine is oversubscribed.
PARALLEL_MIN_WORK = 1 << 18


class Ctx:
    """A schedule plus what the target allows: vector lanes, `vectorize` and `parallel` (not in the `c` target)."""

    def __init__(self, sch, target):
        self.sch = sch
        self.target = target
        self.native = target.kind.name == "llvm"

    def lanes(self, dtype: str) -> int:
        # The `c` target cannot vectorize, but gcc auto-vectorizes loops tiled for 8 float lanes.
        return vector_lanes(dtype, self.target) if self.native else max(32 // _bytes(dtype), 1)

    def vectorize(self, loop) -> None:
        if self.native and not touches_bool_intermediate(self.sch, self.sch.get(loop)):
            self.sch.vectorize(loop)

    def parallel(self, loop) -> None:
        # TVM's `c` target emits parallel loops serially; LLVM launches TVM's thread pool.
        if self.native:
            self.sch.parallel(loop)

    def name(self, block) -> str:
        return self.sch.get(block).name_hint


def touches_bool_intermediate(sch, stmt) -> bool:
    """Whether `stmt` loads or stores a bool buffer the kernel allocates. TVM stores such buffers as
    int8, and a vectorized Select on a loaded vector then fails in lowering (`Not` of an int8 vector:
    "a_ty.MatchesCode(kDLBool)", fuzz seed 115155); kernels' bool parameters vectorize fine."""
    return _touches(stmt, _bool_intermediates(sch.mod[sch.func_working_on]))


def vectorizes_bool_intermediate(func) -> bool:
    """Whether a scheduled PrimFunc (dlight's) has a vectorized loop over a bool intermediate."""
    from tvm.tirx import For, ForKind

    intermediates = _bool_intermediates(func)
    return bool(intermediates) and any(
        isinstance(node, For) and node.kind == ForKind.VECTORIZED and _touches(node.body, intermediates)
        for node in walk(func.body)
    )


def _bool_intermediates(func) -> list:
    from tvm.s_tir import SBlock

    nodes = walk(func.body)
    return [b for node in nodes if isinstance(node, SBlock) for b in node.alloc_buffers if str(b.dtype) == "bool"]


def _touches(stmt, buffers) -> bool:
    from tvm.ir.expr import TensorLoad
    from tvm.tirx import BufferStore

    if not buffers:
        return False
    for node in walk(stmt):
        buffer = node.source if isinstance(node, TensorLoad) else node.buffer if isinstance(node, BufferStore) else None
        if buffer is not None and any(buffer.same_as(b) for b in buffers):
            return True
    return False


def _bytes(dtype: str) -> int:
    import tvm

    return max(tvm.runtime.DataType(dtype).bits // 8, 1)


def blocks(sch):
    return list(sch.get_child_blocks(sch.get_sblock("root")))


def iter_kinds(sch, block) -> str:
    """'S'/'R'/'O' per block iter var, e.g. 'SSR' for dense (valid before loops are transformed)."""
    kinds = []
    for iv in sch.get(block).iter_vars:
        kinds.append({0: "S", 2: "R"}.get(int(iv.iter_type), "O"))
    return "".join(kinds)


def is_reduction(sch, block) -> bool:
    return "R" in iter_kinds(sch, block)


def output_blocks(sch) -> set:
    """Names of the blocks that write the function's output buffers."""
    return {sch.get(b).name_hint for b in sch.get_output_blocks(sch.get_sblock("root"))}


def block_dtype(sch, block) -> str:
    region = sch.get(block).writes[0]
    buffer = getattr(region, "buffer", None) or region.source
    return str(buffer.dtype)


def loop_extents(sch, loops) -> list[int]:
    extents = []
    for loop in loops:
        ext = sch.get(loop).extent
        extents.append(int(ext) if hasattr(ext, "value") or isinstance(ext, int) else 0)
    return extents


def product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def largest_divisor(n: int, candidates) -> int:
    """The first candidate that divides n (candidates in preference order), else 1."""
    for c in candidates:
        if c >= 1 and n % c == 0:
            return c
    return 1


def inline_intermediates(ctx: Ctx, keep=()) -> None:
    """compute_inline every spatial non-output block (elementwise chains, broadcasts, constants).

    Blocks named in `keep` stay (e.g. a conv's padding). Inlining may fail (e.g. a block read
    with a non-trivial pattern by a reduction); such blocks simply stay.
    """
    sch = ctx.sch
    outputs = output_blocks(sch)
    changed = True
    while changed:
        changed = False
        for block in blocks(sch):
            name = ctx.name(block)
            if name in keep or name in outputs or is_reduction(sch, block):
                continue
            if inlining_duplicates_too_much(sch, block):
                log.debug("%s stays a block: inlining would copy its expression too often", name)
                continue
            try:
                sch.compute_inline(block)
                changed = True
            except Exception as exc:  # noqa: BLE001 - a schedule primitive's precondition failed
                log.debug("compute_inline(%s) failed: %s", name, exc)


# An inlined producer is copied into its consumer once per load. NaN-propagating forms read an
# operand two or three times (maximum: select(isnan(a), a, select(isnan(b), b, max(a, b)))), so a
# fused chain of them grows exponentially once inlined: a 9-operator chain made 68 KB of TIR and
# 30 s in TVM's simplifier, longer ones never finished building. Past this size a producer read
# more than once stays a block of its own (an intermediate buffer) instead.
MAX_INLINED_NODES = 256


def inlining_duplicates_too_much(sch, block) -> bool:
    """Whether inlining `block` would make a consumer reading it more than once exceed MAX_INLINED_NODES."""
    from tvm import tirx

    store = sch.get(block).body
    if not isinstance(store, tirx.BufferStore):
        return False
    if inlining_costs_too_much(sch, block):  # nested Select conditions: see inline_cost.py
        return True
    size, _ = expression_stats(store.value)
    for consumer in sch.get_consumers(block):
        consumer_size, loads = expression_stats(sch.get(consumer).body, store.buffer)
        if loads > 1 and consumer_size + (size - 1) * loads > MAX_INLINED_NODES:
            return True
    return False


def any_inlining_duplicates_too_much(sch) -> bool:
    """Also whether inlining every producer at once (dlight does) costs too much, see inline_cost.py."""
    if inlining_everything_costs_too_much(sch):
        return True
    return any(inlining_duplicates_too_much(sch, block) for block in blocks(sch))


_CHILD_FIELDS = (
    "a", "b", "condition", "true_value", "false_value", "value", "body", "args", "indices", "vectors",
    "seq", "then_case", "else_case", "block",
)  # fmt: skip


def walk(node):
    """Every TIR node under `node` (itself included). TVM 0.27's Python API has no TIR visitor:
    this walks the nodes' fields."""
    from tvm.ir.expr import Expr
    from tvm.tirx.stmt import Stmt

    pending = [node]
    while pending:
        node = pending.pop()
        yield node
        for field in _CHILD_FIELDS:
            child = getattr(node, field, None)
            if child is None or isinstance(child, (int, float, str)):
                continue
            if isinstance(child, (Expr, Stmt)):
                pending.append(child)
            else:
                try:
                    pending.extend(c for c in child if isinstance(c, (Expr, Stmt)))
                except TypeError:  # a field of that name that holds no nodes
                    pass


def expression_stats(node, buffer=None) -> tuple[int, int]:
    """(nodes in a TIR expression or statement, loads of `buffer` in it)."""
    from tvm.ir.expr import TensorLoad  # a BufferLoad, whose buffer is `source`

    nodes = loads = 0
    for child in walk(node):
        nodes += 1
        if isinstance(child, TensorLoad) and buffer is not None and child.source.same_as(buffer):
            loads += 1
    return nodes, loads


def reverse_inline_consumers(ctx: Ctx, producer) -> None:
    """Fold the elementwise epilogue (bias_add, relu, ...) into `producer`, a complete block."""
    sch = ctx.sch
    while True:
        consumers = list(sch.get_consumers(producer))
        if len(consumers) != 1:
            return
        try:
            sch.reverse_compute_inline(consumers[0])
        except Exception as exc:  # noqa: BLE001
            log.debug("reverse_compute_inline(%s) failed: %s", ctx.name(consumers[0]), exc)
            return


def schedule_spatial_block(ctx: Ctx, block) -> None:
    """Fuse all loops, split off vector lanes, vectorize the inner part and parallelize the outer."""
    sch = ctx.sch
    loops = sch.get_loops(block)
    if not loops:
        return
    if not all(is_static_loop(sch, loop) for loop in loops):
        schedule_symbolic_spatial_block(ctx, block)
        return
    extents = loop_extents(sch, loops)
    if 0 in extents:
        return
    total = product(extents)
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    lanes = ctx.lanes(block_dtype(sch, block))
    vec = largest_divisor(total, [lanes * 2, lanes, lanes // 2, lanes // 4]) if total >= lanes else 1
    if vec > 1:
        outer, inner = sch.split(fused, [None, vec])
        ctx.vectorize(inner)
    else:
        outer = fused
    if total >= PARALLEL_MIN_WORK:
        ctx.parallel(outer)


def is_static_loop(sch, loop) -> bool:
    """Whether the loop's extent is a constant (not a `?` dimension's var)."""
    return isinstance(getattr(sch.get(loop).extent, "value", None), int)


def has_symbolic_loops(sch) -> bool:
    """Whether some block's loop runs to a `?` dimension (a run-time extent)."""
    return any(not is_static_loop(sch, loop) for block in blocks(sch) for loop in sch.get_loops(block))


def schedule_symbolic_spatial_block(ctx: Ctx, block) -> None:
    """A block with `?` extents: fuse and vectorize the trailing static loops; the symbolic outer
    loops stay as they are (splitting them would need a tail) and run serially unless the static
    part alone is worth a parallel launch."""
    sch = ctx.sch
    loops = sch.get_loops(block)
    static = []
    for loop in reversed(loops):
        if not is_static_loop(sch, loop):
            break
        static.insert(0, loop)
    extents = loop_extents(sch, static)
    total = product(extents)
    if not static or total == 0:
        return
    fused = sch.fuse(*static) if len(static) > 1 else static[0]
    lanes = ctx.lanes(block_dtype(sch, block))
    vec = largest_divisor(total, [lanes * 2, lanes, lanes // 2, lanes // 4]) if total >= lanes else 1
    if vec > 1:
        outer, inner = sch.split(fused, [None, vec])
        ctx.vectorize(inner)
    if total >= PARALLEL_MIN_WORK:
        ctx.parallel(sch.get_loops(block)[0])


def schedule_reduction_block(ctx: Ctx, block) -> None:
    """Parallelize the fused leading spatial loops of a reduction block when there is enough work."""
    sch = ctx.sch
    kinds = iter_kinds(sch, block)
    loops = sch.get_loops(block)
    if len(loops) != len(kinds):
        return
    extents = loop_extents(sch, loops)
    lead = len(kinds) - len(kinds.lstrip("S"))
    if lead == 0 or 0 in extents:
        return
    spatial = sch.fuse(*loops[:lead]) if lead > 1 else loops[0]
    if product(extents) >= PARALLEL_MIN_WORK and product(extents[:lead]) > 1:
        ctx.parallel(spatial)


def schedule_remaining(ctx: Ctx, only=None) -> None:
    """The default schedule for every block, or for the still existing blocks named in `only`."""
    sch = ctx.sch
    for block in blocks(sch):
        name = ctx.name(block)
        if only is not None and name not in only:
            continue
        try:
            if is_reduction(sch, block):
                schedule_reduction_block(ctx, block)
            else:
                schedule_spatial_block(ctx, block)
        except Exception as exc:  # noqa: BLE001
            log.debug("default schedule of block %s failed: %s", name, exc)
