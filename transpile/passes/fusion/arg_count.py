"""Kernel argument counting for targets that limit a function's arguments (TVM's max_function_args).

OpenCL and Metal kernels take at most 128 and 31 arguments; TVM's GraphPartitioner counts the
arguments a group would take and refuses a fusion that would pass the target's limit. The rules
are TVM's: a group's count starts from its members' variable operands (each tensor with `Any`
dimensions also passes its shape and strides), a fusion is refused when the consumer's group and
the groups feeding it would together exceed the limit less the outputs (an output with `Any`
dimensions also passes its shape), and when a group feeding the consumer has not been counted yet
(it has no variable operands so far) the decision is postponed until the consumer itself is
visited. Our graph holds only operator calls and tuples: function parameters and other non-graph
values are the variable operands; constants count as nothing (TVM's scalar constants fuse into
their consumer, and in graph form large ones reach the kernel through a variable).
"""

from __future__ import annotations

from ...relay import expr as E
from ...relay.ty import AnyDim, SymbolicDim, TensorType
from .graph import Graph, Node

__all__ = ["ArgCounter"]


def _any_dims(ty, with_strides: bool) -> int:
    """The extra arguments a tensor of this type passes: one per `Any` dimension, plus strides."""
    if not isinstance(ty, TensorType):
        return 0
    count = sum(1 for dim in ty.shape if isinstance(dim, AnyDim) and not isinstance(dim, SymbolicDim))
    if with_strides and count:
        count += len(ty.shape)
    return count


def _operands(value) -> tuple:
    if isinstance(value, E.Call):
        return tuple(value.args)
    if isinstance(value, E.Tuple):
        return tuple(value.fields)
    return ()


class ArgCounter:
    """Counts kernel arguments over the partitioner's groups (`groups[i]` is graph node i's group)."""

    def __init__(self, graph: Graph, groups: list, max_function_args: int):
        self.graph = graph
        self.groups = groups
        self.max_function_args = max_function_args
        # The consumer whose fusion decision waits for an uncounted producer group (TVM's postpone_node_).
        self.postpone_node: Node | None = None

    def _is_variable_operand(self, atom) -> bool:
        if not isinstance(atom, E.Var):
            return False
        producer = self.graph.node_of.get(atom)
        return producer is None or isinstance(producer.value, E.TupleGetItem)

    def initial_args(self, node: Node) -> int:
        """The arguments a group holding only this node takes (TVM's InitGroups args_counter)."""
        count = 0
        for atom in _operands(node.value):
            if self._is_variable_operand(atom):
                count += 1 + _any_dims(getattr(atom, "checked_type_", None), with_strides=True)
        return count

    def count_args(self, src: Node, update_postpone: bool = True) -> int:
        """The arguments of src's group together with every other group feeding src (TVM's CountArgs_)."""
        total = self.groups[src.index].args_num
        visited = {id(self.groups[src.index].find_root())}
        for atom in _operands(src.value):
            producer = self.graph.node_of.get(atom) if isinstance(atom, E.Var) else None
            if producer is None:
                continue
            group = self.groups[producer.index].find_root()
            if id(group) in visited:
                continue
            visited.add(id(group))
            if group.args_num > 0:
                total += group.args_num
            elif update_postpone:
                self.postpone_node = src
            else:
                total += self.count_args(producer, update_postpone)
        return total

    def args_limit(self, child: Node) -> int:
        """The argument budget left for the group child would join: the limit less its outputs."""
        output_args = 0
        for consumer, _ in child.outputs:
            output_args += 1
            if isinstance(consumer.value, E.Call):
                output_args += _any_dims(getattr(consumer.value, "checked_type_", None), with_strides=False)
        return max(self.max_function_args - output_args, 0)

    def fused_args(self, child: Node) -> int:
        """The largest argument count over child's consumers (TVM's CountFusedArgs)."""
        return max((self.count_args(consumer) for consumer, _ in child.outputs), default=0)
