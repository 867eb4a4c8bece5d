"""Grouping a block's dataflow graph into kernels: TVM's GraphPartitioner (three phases over post-dominators).

Every node starts in its own group (a union-find set). In order, each node tries to join the group
of its immediate post-dominator; all nodes on the paths between them join too (CommitFuse):

- phase 0: an out_elemwise_fusable node (dense, conv2d, pools) fuses into its post-dominator when the
  edge pattern to it is elementwise and every node in between is at most broadcast;
  an elementwise/broadcast node fuses into a post-dominator reached through injective or reduction
  edges when the nodes in between are at most injective (the sink may be a reduction or an
  out_elemwise_fusable group);
- phase 1: injective nodes and tuples fuse when every path to the post-dominator is injective;
- phase 2: injective nodes fuse into an intermediate tuple that itself fused into an injective consumer.
A reduction never fuses forward (it ends its group); opaque nodes stay alone; nothing fuses into a
tuple in phases 0 and 1. Because a node only joins the group of a post-dominator, every member but
the group's root has all its consumers inside the group: a group has exactly one output (its root),
which may be a tuple value (split). `max_group_size` plays TVM's kMaxFusedOps; `max_function_args`
(0: no limit) is the target's limit on a kernel's arguments (see arg_count.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...relay.op.registry import OpPattern
from .arg_count import ArgCounter
from .graph import DomNode, Graph, Node

__all__ = ["Group", "partition"]

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE


@dataclass(eq=False)
class Group:
    """A union-find set; the root's `root_node` is the group's single output, `pattern` its master kind."""

    root_node: Node
    pattern: OpPattern
    has_anchor: bool
    num_nodes: int = 1
    parent: "Group | None" = None
    args_num: int = 0  # kernel arguments counted so far (only with a max_function_args limit)

    def find_root(self) -> "Group":
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:  # path compression
            node.parent, node = root, node.parent
        return root


def _merge(child: Group, parent: Group) -> None:
    child, parent = child.find_root(), parent.find_root()
    if child is parent:
        return
    parent.num_nodes += child.num_nodes
    parent.args_num += child.args_num
    child.parent = parent
    if child.has_anchor:
        # Two out_elemwise_fusable masters never meet: the phase-0 conditions forbid it.
        assert not parent.has_anchor, "two out_elemwise_fusable ops in one group"
        parent.has_anchor = True
        parent.pattern = max(child.pattern, parent.pattern)


class _Partitioner:
    def __init__(self, graph: Graph, dom: list[DomNode], max_group_size: int, max_function_args: int = 0):
        self.graph = graph
        self.dom = dom
        self.max_group_size = max_group_size
        self.groups = [Group(node, node.pattern, node.pattern == OUT_ELEMWISE_FUSABLE) for node in graph.nodes]
        self.args = ArgCounter(graph, self.groups, max_function_args) if max_function_args > 0 else None
        if self.args is not None:
            for node, group in zip(graph.nodes, self.groups):
                group.args_num = self.args.initial_args(node)
        self.postponed: dict[int, list[Node]] = {}  # consumer index -> producers whose fusion waits for it

    def _try_fuse(self, src: Node, sink: Node, condition) -> None:
        """Fuse src and every node on a path to sink into sink's group, if `condition` holds on the way.

        condition(kind of the node's group, node is sink) is TVM's CheckPath; the size limit is
        kMaxFusedOps. Traversal stops as soon as either fails, so a node whose post-dominator is far
        away (a long ladder of diamonds) costs at most max_group_size steps, not the whole block.
        """
        target = self.groups[sink.index].find_root()
        roots = {id(target)}
        size = target.num_nodes
        src_root = self.groups[src.index].find_root()
        if id(src_root) not in roots:
            roots.add(id(src_root))
            size += src_root.num_nodes
        if size > self.max_group_size:
            return
        if self.args is not None and self.args.postpone_node is not None:
            self._postpone(src, sink, condition)
            return
        between: list[Node] = []
        seen: set[int] = set()
        stack = [consumer for consumer, _ in reversed(src.outputs)]
        while stack:
            node = stack.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            root = self.groups[node.index].find_root()
            if not condition(root.pattern, node is sink):
                return
            if node is sink:
                continue
            if id(root) not in roots:
                roots.add(id(root))
                size += root.num_nodes
            if size > self.max_group_size:
                return
            between.append(node)
            stack.extend(consumer for consumer, _ in reversed(node.outputs))
        _merge(self.groups[src.index], target)
        for node in between:
            _merge(self.groups[node.index], target)

    def _postpone(self, src: Node, sink: Node, condition) -> None:
        """Leave src's fusion to the visit of the consumer with an uncounted producer (TVM's CommitFuse_).

        The paths are checked now, as TVM's CheckPath ran before it postponed the commit.
        """
        consumer = self.args.postpone_node
        self.args.postpone_node = None
        stack, seen = [c for c, _ in src.outputs], set()
        while stack:
            node = stack.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            if not condition(self.groups[node.index].find_root().pattern, node is sink):
                return
            if node is not sink:
                stack.extend(c for c, _ in node.outputs)
        self.postponed.setdefault(consumer.index, []).append(src)

    def _run_postponed(self, node: Node) -> None:
        for src in self.postponed.pop(node.index, ()):
            if self.args.count_args(node, update_postpone=False) > self.args.args_limit(node):
                continue
            sink = self.dom[src.index].parent.node
            if self.groups[sink.index].has_anchor:
                continue
            self._try_fuse(src, sink, lambda kind, is_sink: True)

    def _too_many_args(self, node: Node) -> bool:
        """TVM's max_function_args check; leaves `postpone_node` set when a producer is uncounted."""
        self.args.postpone_node = None
        limit = self.args.args_limit(node)
        return limit > 0 and self.args.fused_args(node) > limit

    def run(self, phase: int) -> None:
        for node in self.graph.nodes:
            group = self.groups[node.index]
            dom = self.dom[node.index]
            if self.args is not None:
                self.args.postpone_node = None
                self._run_postponed(node)
            if group.pattern == OPAQUE or dom.parent is None:
                continue
            if self.args is not None and self._too_many_args(node):
                continue
            sink = dom.parent.node
            sink_group = self.groups[sink.index]
            if phase == 2:
                self._phase2(node, group, sink, sink_group)
                continue
            if group.find_root() is sink_group.find_root():
                continue
            if sink_group.pattern == TUPLE:
                continue
            if group.pattern == OUT_ELEMWISE_FUSABLE:
                if phase == 0 and dom.pattern == ELEMWISE:
                    self._try_fuse(node, sink, lambda kind, is_sink: kind <= BROADCAST)
            elif group.pattern <= BROADCAST:
                if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:
                    self._try_fuse(node, sink, _broadcast_path)
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase == 1:
                    self._try_fuse(node, sink, lambda kind, is_sink: kind <= INJECTIVE)
            # COMM_REDUCE: a reduction never fuses into its consumers.

    def _phase2(self, node: Node, group: Group, sink: Node, sink_group: Group) -> None:
        if group.pattern > INJECTIVE:
            return
        sink_root = sink_group.find_root()
        if sink_root.pattern == TUPLE:
            return
        if sink_group.pattern == TUPLE and sink_root.pattern <= INJECTIVE:
            self._try_fuse(node, sink, lambda kind, is_sink: kind <= INJECTIVE)


def _broadcast_path(kind: OpPattern, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= BROADCAST or kind in (COMM_REDUCE, INJECTIVE, OUT_ELEMWISE_FUSABLE)


def partition(
    graph: Graph, dom: list[DomNode], max_group_size: int = 256, fuse_opt_level: int = 2, max_function_args: int = 0
) -> list[Group]:
    """The group (union-find root) of every graph node, indexed like graph.nodes.

    At fuse_opt_level 0 every node stays a group of its own (TVM's GraphPartitioner at opt_level 0).
    """
    partitioner = _Partitioner(graph, dom, max_group_size, max_function_args)
    if fuse_opt_level == 0:
        return partitioner.groups
    for phase in range(3):
        partitioner.run(phase)
    return [group.find_root() for group in partitioner.groups]
