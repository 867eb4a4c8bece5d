"""TVM's `tvm.contrib.graph_executor`: GraphModule over what `relay.build(...)["default"](dev)` returns."""

from ...relay.backend.graph_executor import GraphModule

__all__ = ["GraphModule"]
