"""Rewrites of a kernel's PrimFunc right after create_prim_func: reductions that may run over
nothing get their initialization before their loops, value checks become asserts.

Both work on create_prim_func's form: a root block whose body is one loop nest per TE operation.
"""

from __future__ import annotations

from .lower import KernelLoweringError

__all__ = ["initialize_reductions_before_their_loops", "assert_value_checks"]


def initialize_reductions_before_their_loops(func, name: str):
    """The PrimFunc with every reduction that may run over zero elements initialized before its loops.

    create_prim_func puts a reduction's initialization inside the reduction loops (`T.init()`,
    run at the first iteration), so a reduction over an empty axis (`nn.dense` with k = 0, a
    conv with no input channels, a `?` axis empty at run time) never writes its result and the
    kernel returns whatever memory held. Such reductions are split (decompose_reduction) at their
    outermost reduction loop: the result is set to the reduction's identity before the loop runs
    (zero times or not). Reductions whose extents are positive constants keep their form, which
    the hand schedules recognize (dlight's too), as do those whose result is never read over an
    empty axis (see _unread_when_empty); a schedule only ever moves an initialization, it stays
    before the reduction loops."""
    import tvm

    if not _has_root_block(func):  # one extern (hand-written TIR) op: no TE reduction
        return func
    blocks = [block for _, block in _top_level_blocks(func)]
    needed = {b.name_hint for b in blocks if _may_reduce_nothing(b) and not _unread_when_empty(b, blocks)}
    if not needed:
        return func
    sch = tvm.s_tir.Schedule(tvm.IRModule({name: func}))
    sch.work_on(name)
    changed = False
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        stmt = sch.get(block)
        if stmt.init is None:
            continue
        loops = sch.get_loops(block)
        kinds = [int(iv.iter_type) for iv in stmt.iter_vars]
        if len(loops) != len(kinds):  # create_prim_func makes one loop per block iter var
            raise KernelLoweringError(f"kernel {name}: reduction block {stmt.name_hint} is not a plain loop nest")
        if stmt.name_hint not in needed:
            continue
        reduce_loops = [loop for loop, kind in zip(loops, kinds) if kind == _REDUCE_ITER]
        sch.decompose_reduction(block, reduce_loops[0])
        changed = True
    return sch.mod[name] if changed else func


_REDUCE_ITER = 2  # tvm IterVar.CommReduce


def _may_reduce_nothing(block) -> bool:
    """Whether a block is a reduction with an extent that is not a positive constant."""
    if block.init is None:
        return False
    extents = [iv.dom.extent for iv in block.iter_vars if int(iv.iter_type) == _REDUCE_ITER]
    return bool(extents) and not all(_positive_constant(e) for e in extents)


def _unread_when_empty(block, blocks) -> bool:
    """Whether an empty reduction's result is never read: its lowering guards it (te_support's
    EMPTY_GUARDED_ATTR), or every block reading it iterates over each of the reduction's
    possibly-empty extents too, so none runs when one is 0 (softmax's max and sum over its axis)."""
    from tvm import sym

    from ..relay.op.families.te_support import EMPTY_GUARDED_ATTR, VALUE_CHECK_ATTR

    if EMPTY_GUARDED_ATTR in block.annotations:
        return True
    if VALUE_CHECK_ATTR in block.annotations:  # its assert reads it, outside any block
        return False
    empties = [
        iv.dom.extent
        for iv in block.iter_vars
        if int(iv.iter_type) == _REDUCE_ITER and not _positive_constant(iv.dom.extent)
    ]
    results = [region.source for region in block.writes]
    readers = [
        other
        for other in blocks
        if not other.same_as(block) and any(r.source.same_as(b) for r in other.reads for b in results)
    ]
    if not readers:  # a kernel output (or a dead block): it must hold the identity
        return False
    analyzer = sym.Analyzer()
    for reader in readers:
        extents = [iv.dom.extent for iv in reader.iter_vars]
        for empty in empties:
            if not any(_provably_equal(analyzer, empty, extent) for extent in extents):
                return False
    return True


def _provably_equal(analyzer, a, b) -> bool:
    try:
        return _is_zero_constant(analyzer.simplify(a - b))
    except Exception:  # noqa: BLE001 - e.g. extents of different integer types: not provably equal
        return False


def _is_zero_constant(expr) -> bool:
    return getattr(expr, "value", None) == 0


def _top_level_blocks(func):
    """(index of the root block's top-level statement, block) for every block of the function."""
    from tvm import s_tir, tirx

    body = func.body.block.body
    statements = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    for index, top in enumerate(statements):
        stack = [top]
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, tirx.SeqStmt):
                stack.extend(stmt.seq)
            elif isinstance(stmt, tirx.For):
                stack.append(stmt.body)
            elif isinstance(stmt, s_tir.SBlockRealize):
                yield index, stmt.block
                stack.append(stmt.block.body)


def _positive_constant(extent) -> bool:
    value = getattr(extent, "value", extent)
    return isinstance(value, int) and value > 0


def assert_value_checks(func, name: str):
    """The PrimFunc with an assert after each value check block (te_support.require_values).

    A check is a reduction block computing a 0-d bool; the assert follows its loop nest at the
    top level of the function, and what the check guards reads the check's result, so it comes
    later. Schedules never inline a reduction nor move a block ahead of its producers."""
    import tvm
    from tvm import s_tir, tirx

    from ..relay.op.families.te_support import VALUE_CHECK_ATTR

    if not _has_root_block(func):  # one extern (hand-written TIR) op: no value check
        return func
    realize = func.body
    root = realize.block
    body = list(root.body.seq) if isinstance(root.body, tirx.SeqStmt) else [root.body]
    checks = []  # [check buffer, its assert, position of the last top-level statement writing it]
    for position, block in _top_level_blocks(func):
        if VALUE_CHECK_ATTR not in block.annotations:
            continue
        buffer = block.writes[0].source
        known = [entry for entry in checks if entry[0].same_as(buffer)]
        if known:  # a decomposed check has an init block and an update block: assert after both
            known[0][2] = max(known[0][2], position)
            continue
        message = f"kernel {name}: {block.annotations[VALUE_CHECK_ATTR]}"
        # tvm 0.27's Python AssertStmt documents (kind, condition, ...) but passes its arguments
        # on unchanged to a constructor taking (condition, kind, ...): hence this order.
        check = tirx.AssertStmt(tirx.BufferLoad(buffer, []), tvm.ir.StringImm("ValueError"), [tvm.ir.StringImm(message)])
        checks.append([buffer, check, position])
    if not checks:
        return func
    placed = []
    for index, stmt in enumerate(body):
        placed.append(stmt)
        placed.extend(check for _, check, position in checks if position == index)
    new_root = s_tir.SBlock(
        root.iter_vars,
        root.reads,
        root.writes,
        root.name_hint,
        tirx.SeqStmt(placed),
        root.init,
        root.alloc_buffers,
        root.match_buffers,
        root.annotations,
    )
    return func.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, new_root))


def _has_root_block(func) -> bool:
    """Whether create_prim_func wrapped the kernel's blocks in a root block (it does not for a lone extern op)."""
    block = getattr(func.body, "block", None)
    return block is not None and block.name_hint == "root"
