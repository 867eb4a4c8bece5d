"""The dataflow graph of one let-chain block and its post-dominator tree (TVM's IndexedForwardGraph, DominatorTree).

In A-normal form a block is a chain of `let %v = value;` ending in an atom. Its graph nodes are the
bindings whose value is a primitive operator call, a tuple of tensors or a projection of a tuple of
tensors; an edge runs from a binding to each graph binding of the same block that uses its variable
as an operand. A variable used anywhere else (by the block's result, a global or closure call, an
`If`, a `Match`, a nested function, a ref, a constructor, an alias `let`) is an *external reference*:
TVM's `extern_ref`, so its node has no post-dominator and ends every group it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...relay import expr as E
from ...relay.analysis import free_vars
from ...relay.op.registry import OpPattern, lookup
from ...relay.ty import TensorType, TupleType

__all__ = ["Node", "Graph", "DomNode", "split_block", "build_graph", "post_dominators", "is_atom", "is_tensor_tuple"]

ATOM_TYPES = (E.Var, E.GlobalVar, E.Constant, E.Constructor)


def is_atom(expr) -> bool:
    return isinstance(expr, ATOM_TYPES)


def is_tensor_tuple(ty) -> bool:
    """A (possibly nested) tuple whose leaves are all tensors: what a kernel may consume or produce."""
    return isinstance(ty, TupleType) and all(isinstance(f, TensorType) or is_tensor_tuple(f) for f in ty.fields)


@dataclass(eq=False)
class Node:
    """One graph binding: `let var = value` at position `index` of the block's graph nodes."""

    index: int
    var: E.Var
    value: E.Expr
    pattern: OpPattern
    extern_ref: bool = False
    # (consumer, edge pattern) pairs, one per operand occurrence, in block order.
    outputs: list = field(default_factory=list)

    @property
    def is_op_call(self) -> bool:
        return isinstance(self.value, E.Call)


@dataclass
class Graph:
    nodes: list  # in block (hence topological) order
    node_of: dict  # Var -> Node


@dataclass(eq=False)
class DomNode:
    """A node of the post-dominator tree: `parent` is the immediate post-dominator (None: none in the block)."""

    node: Node
    parent: "DomNode | None"
    depth: int
    # The strongest edge pattern on the paths from the node to its post-dominator.
    pattern: OpPattern


def split_block(expr):
    """([(var, value), ...], result) of a let chain, iteratively (chains can be thousands long)."""
    bindings = []
    while isinstance(expr, E.Let):
        bindings.append((expr.var, expr.value))
        expr = expr.body
    return bindings, expr


def _operands(value) -> tuple:
    if isinstance(value, E.Call):
        return value.args
    if isinstance(value, E.Tuple):
        return value.fields
    if isinstance(value, E.TupleGetItem):
        return (value.tuple_value,)
    return ()


def _is_graph_value(value) -> bool:
    if isinstance(value, E.Call) and isinstance(value.op, E.Op):
        return True
    if isinstance(value, E.Tuple):
        return all(isinstance(getattr(f, "checked_type_", None), TensorType) for f in value.fields)
    if isinstance(value, E.TupleGetItem):
        return is_tensor_tuple(getattr(value.tuple_value, "checked_type_", None))
    return False


def _node_pattern(value, pattern_overrides) -> OpPattern:
    if isinstance(value, E.Call):
        override = pattern_overrides.get(value.op.name)
        if override is not None:
            return OpPattern(override)
        definition = lookup(value.op.name)
        return OpPattern(definition.pattern) if definition is not None else OpPattern.OPAQUE
    if isinstance(value, E.Tuple):
        return OpPattern.TUPLE
    return OpPattern.INJECTIVE


def _edge_pattern(consumer: Node, operand) -> OpPattern:
    """TVM's rule: a broadcast op whose operand already has the output's shape is elementwise on that edge."""
    if not consumer.is_op_call:
        return OpPattern.INJECTIVE
    pattern = consumer.pattern
    if pattern == OpPattern.BROADCAST:
        arg_type = getattr(operand, "checked_type_", None)
        out_type = getattr(consumer.value, "checked_type_", None)
        if isinstance(arg_type, TensorType) and isinstance(out_type, TensorType) and arg_type.shape == out_type.shape:
            return OpPattern.ELEMWISE
    return pattern


def build_graph(bindings, result, barrier_vars=frozenset(), pattern_overrides=None) -> Graph:
    """The dataflow graph of a block's bindings; `result` is the block's final atom.

    `pattern_overrides` maps operator names to the fusion pattern to use instead of the registry's.
    A binding of a variable in `barrier_vars` is an external reference (a group output), as TVM's
    graph treats every value a user `let` binds: fusion never runs through it.
    """
    nodes: list[Node] = []
    node_of: dict = {}
    pattern_overrides = pattern_overrides or {}
    for var, value in bindings:
        if not _is_graph_value(value):
            for used in free_vars(value):
                if used in node_of:
                    node_of[used].extern_ref = True
            continue
        node = Node(len(nodes), var, value, _node_pattern(value, pattern_overrides))
        for operand in _operands(value):
            if not is_atom(operand):
                raise ValueError(
                    f"fuse expects A-normal form: operand of `let %{var.name_hint}` is a {type(operand).__name__}"
                )
            producer = node_of.get(operand) if isinstance(operand, E.Var) else None
            if producer is not None:
                producer.outputs.append((node, _edge_pattern(node, operand)))
        nodes.append(node)
        node_of[var] = node
    for var in barrier_vars:
        if var in node_of:
            node_of[var].extern_ref = True
    if isinstance(result, E.Var) and result in node_of:
        node_of[result].extern_ref = True
    elif not is_atom(result):
        for used in free_vars(result):
            if used in node_of:
                node_of[used].extern_ref = True
    return Graph(nodes, node_of)


def _combine(lhs: OpPattern, rhs: OpPattern) -> OpPattern:
    return lhs if lhs > rhs else rhs


def _lca(lhs: DomNode | None, rhs: DomNode | None, pattern: list) -> DomNode | None:
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None
        if lhs.depth < rhs.depth:
            pattern[0] = _combine(pattern[0], rhs.pattern)
            rhs = rhs.parent
        elif rhs.depth < lhs.depth:
            pattern[0] = _combine(pattern[0], lhs.pattern)
            lhs = lhs.parent
        else:
            pattern[0] = _combine(_combine(pattern[0], lhs.pattern), rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs


def post_dominators(graph: Graph) -> list[DomNode]:
    """The immediate post-dominator of every node, by LCA over its consumers in reverse topological order."""
    tree: list = [None] * len(graph.nodes)
    for node in reversed(graph.nodes):
        if node.extern_ref or not node.outputs:
            pattern = OpPattern.OPAQUE if node.extern_ref else OpPattern.ELEMWISE
            tree[node.index] = DomNode(node, None, 1, pattern)
            continue
        pattern = [OpPattern.ELEMWISE]
        consumer, edge = node.outputs[0]
        parent = tree[consumer.index]
        pattern[0] = _combine(pattern[0], edge)
        for consumer, edge in node.outputs[1:]:
            parent = _lca(parent, tree[consumer.index], pattern)
            pattern[0] = _combine(pattern[0], edge)
        depth = parent.depth + 1 if parent is not None else 1
        tree[node.index] = DomNode(node, parent, depth, pattern[0])
    return tree
