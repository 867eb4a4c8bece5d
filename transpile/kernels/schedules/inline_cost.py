"""What inlining costs TVM's simplifier: TIR nodes weighted by how deep they sit in Select conditions.

TVM's RewriteSimplifier simplifies a Select's (or if_then_else's) condition, then enters it and
its negation as constraints for the two branches, simplifying it again each time: a node inside
the condition of a Select nested inside another Select's condition is simplified ~5x per level
(measured with `analyzer.simplify`: 0.18 s at 6 levels, 4.3 s at 8, 104 s at 10; tvm.compile runs
the simplifier in several passes). A where/greater chain read once per level is linear in size
but builds in time exponential in its depth once inlined, so the node count alone
(common.MAX_INLINED_NODES) cannot bound it. Nodes in branches are simplified once.

Cost of an expression: the sum over its nodes of CONDITION_COST_FACTOR ** (number of enclosing
Select / if_then_else conditions). Inlining a producer of cost p into a consumer puts a copy of it
at each load, so the consumer's cost grows by (p - 1) * (the load's weight) per load: copies
(NaN-propagating forms read an operand 2-3 times) and condition depth compose.
"""

from __future__ import annotations

CONDITION_COST_FACTOR = 5

# tvm.compile takes ~4 us per unit of cost (where/greater chain of 5 levels: cost 27 000, 0.11 s;
# 6 levels: 137 000, 0.5 s; 7: 680 000, 2.4 s; 9: 70 s). Past this a producer stays a block of its
# own (an intermediate buffer). Real models' kernels stay far below (a conv's padding: one
# condition level, a few dozen nodes).
MAX_INLINED_COST = 100_000

_CONDITIONAL_CALLS = ("prim.if_then_else", "tirx.if_then_else")

_CHILD_FIELDS = (
    "a", "b", "true_value", "false_value", "value", "body", "args", "indices", "vectors",
    "seq", "then_case", "else_case",
)  # fmt: skip  (a Select's `condition` is walked apart: it is the weighted one)


def expression_cost(node, buffer=None) -> tuple[int, int]:
    """(cost of a TIR expression or statement, summed weight of its loads of `buffer`).
    TVM 0.27's Python API has no TIR visitor: this walks the nodes' fields."""
    from tvm.ir.expr import Call, Expr, TensorLoad  # a BufferLoad, whose buffer is `source`
    from tvm.tirx.stmt import Stmt

    def nodes(value):
        if isinstance(value, (Expr, Stmt)):
            return [value]
        if value is None or isinstance(value, (int, float, str)):
            return []
        try:
            return [v for v in value if isinstance(v, (Expr, Stmt))]
        except TypeError:  # a field of that name that holds no nodes
            return []

    cost = load_weight = 0
    pending = [(node, 1)]
    while pending:
        node, weight = pending.pop()
        cost += weight
        if isinstance(node, TensorLoad) and buffer is not None and node.source.same_as(buffer):
            load_weight += weight
        condition = getattr(node, "condition", None)
        if isinstance(node, Call) and getattr(node.op, "name", "") in _CONDITIONAL_CALLS:
            condition, *branches = node.args
            pending.append((condition, weight * CONDITION_COST_FACTOR))
            pending.extend((branch, weight) for branch in branches)
            continue
        if condition is not None and hasattr(node, "true_value"):  # a Select
            pending.extend((child, weight * CONDITION_COST_FACTOR) for child in nodes(condition))
        elif condition is not None:  # IfThenElse / Assert statements, a block's predicate: once
            pending.extend((child, weight) for child in nodes(condition))
        for field in _CHILD_FIELDS:
            pending.extend((child, weight) for child in nodes(getattr(node, field, None)))
    return cost, load_weight


def _stored_value(sch, block):
    from tvm import tirx

    store = sch.get(block).body
    return store if isinstance(store, tirx.BufferStore) else None


def inlining_costs_too_much(sch, block) -> bool:
    """Whether inlining `block` would make a consumer's cost exceed MAX_INLINED_COST."""
    store = _stored_value(sch, block)
    if store is None:
        return False
    cost, _ = expression_cost(store.value)
    for consumer in sch.get_consumers(block):
        consumer_cost, load_weight = expression_cost(sch.get(consumer).body, store.buffer)
        if consumer_cost + (cost - 1) * load_weight > MAX_INLINED_COST:
            return True
    return False


def inlining_everything_costs_too_much(sch) -> bool:
    """Whether inlining every spatial non-output block (as dlight's rules do, all at once) would
    make some block's cost exceed MAX_INLINED_COST: each block's cost with its producers' inlined
    costs substituted at their loads, producers first (create_prim_func's block order)."""
    from .common import blocks, is_reduction, output_blocks

    outputs = output_blocks(sch)
    inlined_cost = {}  # block name -> (buffer it writes, its cost with its producers inlined)
    for block in blocks(sch):
        stmt = sch.get(block)
        store = _stored_value(sch, block)
        own_cost, _ = expression_cost(stmt.body)
        cost = own_cost
        for producer in sch.get_producers(block):
            name = sch.get(producer).name_hint
            if name not in inlined_cost:
                continue
            buffer, producer_cost = inlined_cost[name]
            _, load_weight = expression_cost(stmt.body, buffer)
            cost += (producer_cost - 1) * load_weight
        if cost > MAX_INLINED_COST:
            return True
        inlinable = store is not None and stmt.name_hint not in outputs and not is_reduction(sch, block)
        if inlinable:
            value_cost, _ = expression_cost(store.value)
            inlined_cost[stmt.name_hint] = (store.buffer, value_cost + (cost - own_cost))
    return False
